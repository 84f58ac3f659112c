//! The session's cycle (contract 0.1.3): the span of events since the read mark,
//! and the states of the contexts this guardrail lists in `requires`.
//!
//! A Stop gate reads the span to judge what the cycle did; the host keeps it, so
//! there is nothing to reassemble. Each call reads it afresh from the session.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::EventKind;
use crate::imports::cycle as wit;

pub use wit::{ContextState, FileChange};

/// One event of the span, its facts parsed.
#[derive(Debug, Clone)]
pub struct SpanEvent {
    /// Its place in the session: strictly increasing.
    pub seq: u64,
    pub kind: EventKind,
    pub tool_name: Option<String>,
    /// The id of the turn it happened in (`<count>:<uuid>`), when known.
    pub turn: Option<String>,
    /// The call's `tool` facts (an empty object when there are none).
    pub facts: Value,
    /// The files whose content it changed.
    pub files: Vec<FileChange>,
}

impl SpanEvent {
    /// The count part of its turn id.
    pub fn turn_count(&self) -> Option<u32> {
        self.turn.as_deref().and_then(turn_count)
    }
}

/// The count part of a turn id (`<count>:<uuid>`).
pub fn turn_count(turn_id: &str) -> Option<u32> {
    turn_id.split_once(':')?.0.parse().ok()
}

/// The span: the events since the read mark, oldest first.
pub fn span() -> crate::Result<Vec<SpanEvent>> {
    let events = wit::span().map_err(|why| crate::Error::msg(format!("span: {why}")))?;
    Ok(events
        .into_iter()
        .map(|e| SpanEvent {
            seq: e.seq,
            kind: e.kind,
            tool_name: e.tool_name,
            turn: e.turn,
            facts: serde_json::from_str(&e.facts).unwrap_or(Value::Null),
            files: e.files,
        })
        .collect())
}

/// The states of the contexts this guardrail requires, in `requires` order.
pub fn contexts() -> crate::Result<Vec<ContextState>> {
    wit::contexts().map_err(|why| crate::Error::msg(format!("contexts: {why}")))
}

/// The state of one context this guardrail requires.
pub fn context(name: &str) -> crate::Result<Option<ContextState>> {
    Ok(contexts()?.into_iter().find(|c| c.name == name))
}

impl ContextState {
    /// Its payload while it is active, parsed.
    pub fn payload_as<T: DeserializeOwned>(&self) -> crate::Result<Option<T>> {
        match &self.payload {
            Some(text) => Ok(Some(serde_json::from_str(text)?)),
            None => Ok(None),
        }
    }

    /// The count part of the turn it last entered in.
    pub fn entered_turn_count(&self) -> Option<u32> {
        self.entered_turn.as_deref().and_then(turn_count)
    }
}

/// The files the span changed that still exist, in turns no earlier than
/// `from_turn` (every turn when `None`). An event whose turn could not be read
/// (the transcript was missing for it) counts for any turn of the cycle: a write
/// the host could not place must not make correct work look absent.
pub fn changed_files(span: &[SpanEvent], from_turn: Option<u32>) -> Vec<&FileChange> {
    span.iter()
        .filter(|e| match from_turn {
            None => true,
            Some(from) => e.turn_count().is_none_or(|t| t >= from),
        })
        .flat_map(|e| &e.files)
        .filter(|f| f.sha256.is_some())
        .collect()
}
