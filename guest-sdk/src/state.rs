//! State that survives between events, in this guardrail's own keyspace for the
//! current session.
//!
//! The typed helpers store values as JSON text, so what a guardrail writes is what
//! `sandrail state list` shows.

use std::cell::RefCell;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::imports::state as wit;

pub use wit::Entry;
pub use wit::StateError;

impl StateError {
    /// A sentence saying what the host refused and why.
    pub fn message(&self) -> String {
        let f = &mut String::new();
        use std::fmt::Write;
        let _ = match self {
            StateError::KeyTooLong(max) => write!(f, "key is longer than {max} bytes"),
            StateError::ValueTooLarge(max) => write!(f, "value is larger than {max} bytes"),
            StateError::KeyspaceFull(max) => write!(f, "the keyspace already holds {max} keys"),
            StateError::OwnerNotRequired(owner) => {
                write!(f, "'{owner}' is not listed in this guardrail's `requires`")
            }
            StateError::Unavailable(why) => write!(f, "state unavailable: {why}"),
        };
        std::mem::take(f)
    }

    /// The state could not be had for this event (not a limit this guardrail
    /// reached): nothing was read or written.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StateError::Unavailable(_))
    }
}

thread_local! {
    static CURRENT_TURN: RefCell<Option<String>> = const { RefCell::new(None) };
}

pub(crate) fn set_current_turn(turn: Option<String>) {
    CURRENT_TURN.with(|t| *t.borrow_mut() = turn);
}

fn current_turn() -> Option<String> {
    CURRENT_TURN.with(|t| t.borrow().clone())
}

/// The raw text stored under `key`.
pub fn get_raw(key: &str) -> Result<Option<String>, StateError> {
    wit::get(key)
}

/// Stores raw text under `key`.
pub fn set_raw(key: &str, value: &str) -> Result<(), StateError> {
    wit::set(key, value)
}

/// The value stored under `key`, parsed from JSON.
pub fn get<T: DeserializeOwned>(key: &str) -> crate::Result<Option<T>> {
    match wit::get(key)? {
        Some(text) => Ok(Some(serde_json::from_str(&text)?)),
        None => Ok(None),
    }
}

/// Stores `value` under `key` as JSON.
pub fn set<T: Serialize + ?Sized>(key: &str, value: &T) -> crate::Result<()> {
    wit::set(key, &serde_json::to_string(value)?)?;
    Ok(())
}

/// Removes `key`; true when it was there.
pub fn delete(key: &str) -> Result<bool, StateError> {
    wit::delete(key)
}

/// Every entry of this keyspace whose key starts with `prefix`, in key order.
pub fn list(prefix: &str) -> Result<Vec<Entry>, StateError> {
    wit::list(prefix)
}

/// Read-only: entries of guardrail `owner` (which this guardrail's config must list
/// in `requires`), as one list rather than a stream to reassemble.
pub fn list_owner(owner: &str, prefix: &str) -> Result<Vec<Entry>, StateError> {
    wit::list_owner(owner, prefix)
}

/// Whether a stamped subject belongs to the current turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    /// Stamped during the current turn.
    ThisTurn,
    /// Stamped, but during an earlier turn: stale evidence.
    EarlierTurn,
    /// Never stamped.
    Never,
    /// The current turn is not known (no transcript), so nothing can be said.
    /// Not the same as "no": a gate should not refuse on this.
    Unknown,
}

/// Records that `subject` was seen in the current turn: the value is the turn id,
/// one key per subject, so the keyspace stays bounded and stale stamps are inert.
/// Returns false, storing nothing, when the current turn is unknown.
pub fn stamp(subject: &str) -> crate::Result<bool> {
    match current_turn() {
        Some(turn) => {
            set(subject, &turn)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Whether `subject` was stamped in the current turn.
pub fn stamped_this_turn(subject: &str) -> crate::Result<Stamp> {
    let Some(turn) = current_turn() else {
        return Ok(Stamp::Unknown);
    };
    Ok(match get::<String>(subject)? {
        Some(stamped) if stamped == turn => Stamp::ThisTurn,
        Some(_) => Stamp::EarlierTurn,
        None => Stamp::Never,
    })
}

/// Whether `owner` (a guardrail this one lists in `requires`, typically a context)
/// stamped `subject` in the current turn, read through `list-owner`.
pub fn stamped_this_turn_by(owner: &str, subject: &str) -> crate::Result<Stamp> {
    let Some(turn) = current_turn() else {
        return Ok(Stamp::Unknown);
    };
    let entry = list_owner(owner, subject)?
        .into_iter()
        .find(|e| e.key == subject);
    Ok(match entry {
        Some(e) if serde_json::from_str::<String>(&e.value).ok().as_deref() == Some(&turn) => {
            Stamp::ThisTurn
        }
        Some(_) => Stamp::EarlierTurn,
        None => Stamp::Never,
    })
}

/// Another guardrail's entries under `prefix` (it must be in `requires`), each value
/// parsed from JSON: one typed list, never a stream to reassemble.
pub fn list_owner_as<T: DeserializeOwned>(
    owner: &str,
    prefix: &str,
) -> crate::Result<Vec<(String, T)>> {
    list_owner(owner, prefix)?
        .into_iter()
        .map(|e| Ok((e.key, serde_json::from_str(&e.value)?)))
        .collect()
}
