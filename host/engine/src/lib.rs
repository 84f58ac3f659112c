//! sandrail's engine: one event from the harness's bytes to its answer.
//!
//! Above the runtime and the policy, below the server, the forwarding hook
//! and the commands (the `sandrail` crate), none of which it may import. Its
//! modules import one another in one direction, lowest first:
//!
//! - [`protocol`]: Claude Code's hook payloads and answers, the host's event
//!   model; [`receipts`]: decision receipts, their chain and collector
//! - [`deadline`]: the hook's own deadline and watchdog; [`cycle`]: the span,
//!   contexts, file changes by content, the read mark; [`audit`]: the override
//!   trail in the project
//! - [`engine`]: a runtime per event (the hook) or one resident runtime (the
//!   server)
//! - [`harness`]: the other harnesses' payloads, answers and settings files
//! - [`os_sandbox`]: the harness's OS sandbox settings that keep sandrail's
//!   paths from the agent; [`protect`]: self-protection, ConfigChange
//! - [`evaluate`]: running the guardrails and combining their verdicts, stage
//!   by stage
//! - [`hook`]: one event end to end, from bytes to the answer
//!
//! The crates below are re-exported under the names the modules use.

pub mod audit;
pub mod cycle;
pub mod deadline;
pub mod engine;
pub mod evaluate;
pub mod harness;
pub mod hook;
pub mod os_sandbox;
pub mod protect;
pub mod protocol;
pub mod receipts;

pub use sandrail_event as event;
pub use sandrail_event::clock;
pub use sandrail_event::text as guest_text;
pub use sandrail_event::{debug_logging, hex, sha256_hex};
pub use sandrail_facts as facts;
pub use sandrail_facts::{mandate, system_programs, transcript};
pub use sandrail_files as files;
pub use sandrail_policy::{config, locations, lock, policy};
pub use sandrail_runtime as runtime;
pub use sandrail_shell as shell;
pub use sandrail_store as store;
pub use sandrail_store::{escalation, holders};
