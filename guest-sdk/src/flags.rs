//! Flags: session-scoped markers shared between guardrails. A guardrail may touch
//! only the flags its entry in sandrail.toml grants (`[guardrail.flags]`).

use crate::imports::flags as wit;

pub use wit::FlagError;

impl FlagError {
    /// A sentence saying what the host refused and why.
    pub fn message(&self) -> String {
        match self {
            FlagError::NotGranted(what) => {
                format!("this guardrail's entry does not grant it to {what}")
            }
            FlagError::Unavailable(why) => format!("state unavailable: {why}"),
        }
    }

    /// The flags could not be had for this event (the session's state is busy or
    /// kept from sandrail): nothing was read or changed.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, FlagError::Unavailable(_))
    }
}

impl From<FlagError> for crate::Error {
    fn from(e: FlagError) -> Self {
        let message = format!("flags: {}", e.message());
        if e.is_unavailable() {
            crate::Error::unavailable(message)
        } else {
            crate::Error::msg(message)
        }
    }
}

/// Sets `name` (again).
pub fn set(name: &str) -> Result<(), FlagError> {
    wit::set(name)
}

/// Whether `name` is set, leaving it set.
pub fn check(name: &str) -> Result<bool, FlagError> {
    wit::check(name)
}

/// Whether `name` was set; if it was, it is cleared. Of two hooks consuming the
/// same flag at once, exactly one sees it.
pub fn consume(name: &str) -> Result<bool, FlagError> {
    wit::consume(name)
}
