//! Where the SDK's calls to the host go: the component's imports in a guardrail,
//! and the in-memory host of [`crate::testing`] in native unit tests, where the
//! imports do not exist (calling one there would abort the whole test binary).

#[cfg(target_family = "wasm")]
pub(crate) use crate::bindings::sandrail::guardrail::{cycle, data, escalation, flags, log, state};

#[cfg(not(target_family = "wasm"))]
pub(crate) use crate::testing::host::{cycle, data, escalation, flags, log, state};
