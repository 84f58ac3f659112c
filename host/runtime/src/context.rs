//! The `context` export (contract 0.1.3): a guardrail that records a mode of the
//! session. Its `observe` runs on the events it subscribed to and says whether it
//! enters, stays or exits; its `leave` runs at Stop while it is active and may
//! hold the Stop. The host keeps what it says in the session's cycle
//! ([`sandrail_store::cycle`]).

/// Bindings for the `context-guardrail` world. Its imports are the `guardrail`
/// world's, shared with [`super::wit`]; only the `context` export is its own.
pub mod wit {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "context-guardrail",
        exports: { default: async },
        with: {
            "sandrail:guardrail/types": crate::wit::sandrail::guardrail::types,
            "sandrail:guardrail/state": crate::wit::sandrail::guardrail::state,
            "sandrail:guardrail/flags": crate::wit::sandrail::guardrail::flags,
            "sandrail:guardrail/data": crate::wit::sandrail::guardrail::data,
            "sandrail:guardrail/log": crate::wit::sandrail::guardrail::log,
            "sandrail:guardrail/cycle": crate::wit::sandrail::guardrail::cycle,
        },
    });

    pub use self::exports::sandrail::guardrail::context::{
        GuestIndices as ContextIndices, Transition,
    };
}

/// The export's name, any 0.1 version: what [`super::prepare`] looks for.
pub(super) const EXPORT_PREFIX: &str = "sandrail:guardrail/context@0.1.";

/// The interface a gate reads the cycle through, without its version.
pub(super) const CYCLE_INTERFACE: &str = "sandrail:guardrail/cycle";
