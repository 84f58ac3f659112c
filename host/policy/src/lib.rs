//! The policy layer: what a project's sandrail.toml says, and which policy an
//! event is judged by.
//!
//! - [`config`]: `sandrail.toml` read and checked, and the embedded default;
//! - [`lock`]: `sandrail.lock`, the pins and their drift;
//! - [`locations`]: where a process keeps its state and compiled code and
//!   finds its policy, each project bound to its places;
//! - [`managed`]: a managed server's places, and root's policy checked to be
//!   root's alone;
//! - [`policy`]: the policy in force: per-session snapshots and the project's
//!   ratchet;
//! - [`timeouts`]: what one event may cost under a policy, against the
//!   harness's hook timeout;
//! - [`receipts`]: what the config says about receipts (the gate, the
//!   collector).
//!
//! It sits on the bundled guardrails (their names, `sandrail-builtins`), the store (a session's policy record lives beside its
//! database), the facts (a config's patterns and mandate) and the file
//! helpers, and imports nothing of the runtime or the engine: whether a
//! component loads, which the ratchet asks, comes in through
//! [`policy::ratchet::Loads`], which the runtime implements.

pub mod config;
pub mod locations;
pub mod lock;
pub mod managed;
pub mod policy;
pub mod receipts;
pub mod timeouts;

/// The largest component file loaded.
pub const MAX_COMPONENT_BYTES: u64 = 64 << 20;

/// The largest file a data grant reads.
pub const MAX_DATA_BYTES: u64 = 1 << 20;
