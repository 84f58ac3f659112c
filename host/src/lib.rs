//! sandrail: a guardrail engine for AI coding agents.
//!
//! A harness runs `sandrail hook` on every event; sandrail runs each configured
//! guardrail — a sandboxed WebAssembly component — on it and answers in the
//! harness's JSON. One module per concern:
//!
//! - [`protocol`]: Claude Code's hook payloads and answers, the host's event model
//! - [`harness`]: the other harnesses' payloads, answers and settings, read into it
//! - [`event`]: the event kinds sandrail judges
//! - [`config`]: `sandrail.toml` and the embedded default
//! - [`facts`]: what the host derives about an event for every guardrail
//!   (`sandrail-facts`)
//! - [`mandate`]: the mandate file: limits, case layout (`sandrail-facts`)
//! - [`policy`]: the policy in force: per-session snapshots, the ratchet
//! - [`os_sandbox`]: the harness's OS sandbox settings that keep sandrail's paths
//!   from the agent
//! - [`shell`]: what a shell command line runs, for the facts (the
//!   `sandrail-shell` crate)
//! - [`transcript`]: reading the transcript, for the current turn
//!   (`sandrail-facts`)
//! - [`replay`]: a transcript read back into the events it caused
//! - [`files`]: reading files named from outside, safely (`sandrail-files`)
//! - [`guest_text`]: a guardrail's text made safe to show (`sandrail-event`)
//! - [`store`]: guardrail state in redb (`sandrail-store`)
//! - [`runtime`]: wasmtime, the component cache and the sandbox
//!   (`sandrail-runtime`)
//! - [`escalation`]: levels, counters' thresholds and messages
//!   (`sandrail-store`)
//! - [`audit`]: the override trail in the project
//! - [`clock`]: the current time (`SANDRAIL_NOW` in tests)
//! - [`evaluate`]: running the guardrails and combining their verdicts
//! - [`holders`]: who holds a file lock, and whether it is sandrail at work
//!   (`sandrail-store`)
//! - [`hook`]: the `sandrail hook` command end to end
//! - [`checkpoint`]: the project kept before each call that can change it,
//!   listed, compared and restored (`sandrail-checkpoint`)
//!
//! The protocol, the harnesses, the pipeline, self-protection and the hook
//! are the `sandrail-engine` crate (`host/engine`), re-exported here under
//! their module names; this crate adds the server, the forwarding hook,
//! managed mode, the reviewer's views and the commands.

/// The bundled guardrails (the `sandrail-builtins` crate, `host/builtins`).
pub use sandrail_builtins as builtins;
pub mod cases;
/// The project's checkpoints (the `sandrail-checkpoint` crate, `host/checkpoint`).
pub use sandrail_checkpoint as checkpoint;
/// The engine: the protocol, the harnesses, the pipeline, self-protection and
/// the hook (the `sandrail-engine` crate, `host/engine`).
pub use sandrail_engine::{
    audit, cycle, deadline, engine, evaluate, harness, hook, os_sandbox, protect, protocol,
    receipts,
};
/// The event kinds (the `sandrail-event` crate, `host/event`).
pub use sandrail_event as event;
pub use sandrail_event::clock;
/// The fact namespaces (the `sandrail-facts` crate, `host/facts`), with the
/// transcript's turn, the mandate and the system programs they use.
pub use sandrail_facts as facts;
pub use sandrail_facts::{mandate, system_programs, transcript};
/// Reading and writing files safely (the `sandrail-files` crate, `host/files`).
pub use sandrail_files as files;
pub mod forward;
pub use sandrail_event::text as guest_text;
pub mod inspect;
pub mod managed;
/// The config and the policy in force (the `sandrail-policy` crate,
/// `host/policy`): sandrail.toml and its lock, the places a process uses,
/// per-session snapshots and the ratchet.
pub use sandrail_policy::{config, locations, lock, policy};
pub mod replay;
/// wasmtime, the component cache and the sandbox (the `sandrail-runtime`
/// crate, `host/runtime`).
pub use sandrail_runtime as runtime;
pub mod serve;
/// The shell analysis, a crate of its own (`host/shell`).
pub use sandrail_shell as shell;
/// Guardrail state in redb (the `sandrail-store` crate, `host/store`), with
/// the escalation ladder and the lock holders.
pub use sandrail_store as store;
pub use sandrail_store::{escalation, holders};

pub use sandrail_event::{debug_logging, hex, sha256_hex};
