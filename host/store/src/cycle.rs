//! The session's cycle, kept by the host beside the guardrails' keyspaces: the span
//! of events since the read mark, the contexts' states, the content hash of each
//! file the agent wrote, and the count of Stops refused in a row.
//!
//! A cycle runs from one accepted Stop to the next. Every recorded event takes the
//! next sequence number; the read mark is the last number an accepted Stop covered.
//! Advancing the mark drops the span it covers, so the span holds one cycle.

use redb::{ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::{Deserialize, Serialize};

use super::{StateReader, StateTxn, StoreError};

/// "cycle" → [`CycleRecord`]; "context:<name>" → [`ContextRecord`], as JSON.
const CYCLE: TableDefinition<&str, &str> = TableDefinition::new("cycle");
/// seq → [`SpanEvent`] as JSON: the events since the read mark.
const SPAN: TableDefinition<u64, &str> = TableDefinition::new("span");
/// File path (absolute) → sha256 of the content the host last recorded.
const FILES: TableDefinition<&str, &str> = TableDefinition::new("files");

const CYCLE_KEY: &str = "cycle";
const CONTEXT_PREFIX: &str = "context:";

/// The most events a span keeps; past it the oldest are dropped.
pub const MAX_SPAN_EVENTS: u64 = 10_000;

/// Where the session stands in its cycle.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CycleRecord {
    /// The last sequence number handed out (0: none yet).
    pub seq: u64,
    /// The last sequence number an accepted Stop covered.
    pub mark: u64,
    /// Stops refused in a row, and the turn they were refused in.
    #[serde(default)]
    pub refused: RefusedStops,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedStops {
    pub turn: Option<String>,
    pub count: u32,
    /// The transcript's size at the last refusal counted.
    #[serde(default)]
    pub transcript_len: Option<u64>,
}

/// What the host keeps about one context in a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextRecord {
    pub active: bool,
    /// The payload of its last enter, JSON text.
    pub payload: Option<String>,
    /// The turn it last entered in, when known.
    pub entered_turn: Option<String>,
    /// The sequence number of its last enter: after the mark, it entered this cycle.
    pub entered_seq: u64,
    /// Its last failure (trap, fuel, timeout) on an event: what it should have
    /// recorded then is lost, so after the mark the gates requiring it refuse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<ContextFailure>,
}

/// A context's failure on an event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextFailure {
    /// Where in the span it failed: after the mark, during this cycle.
    pub seq: u64,
    pub why: String,
}

/// One recorded event of the span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanEvent {
    pub seq: u64,
    /// The event's name (`PostToolUse`).
    pub event: String,
    pub tool: Option<String>,
    pub turn: Option<String>,
    /// Seconds since the epoch.
    pub time: u64,
    /// The call's `tool` facts.
    pub facts: serde_json::Value,
    pub files: Vec<FileChange>,
}

/// A file whose content changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Relative to the project when inside it, else absolute.
    pub path: String,
    /// Its content's sha256 now; `None`: gone.
    pub sha256: Option<String>,
    /// What the host last recorded; `None`: never seen.
    pub before: Option<String>,
}

/// A context as a gate sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextView {
    pub name: String,
    pub active: bool,
    pub payload: Option<String>,
    pub entered_turn: Option<String>,
    pub entered_this_turn: bool,
    pub entered_this_cycle: bool,
}

impl ContextView {
    pub fn new(name: &str, record: ContextRecord, cycle: &CycleRecord, turn: Option<&str>) -> Self {
        let entered_this_cycle = record.entered_seq > cycle.mark;
        ContextView {
            name: name.to_owned(),
            active: record.active,
            payload: record.payload.filter(|_| record.active),
            entered_this_turn: entered_this_cycle
                && turn.is_some()
                && record.entered_turn.as_deref() == turn,
            entered_turn: record.entered_turn,
            entered_this_cycle,
        }
    }
}

/// Opens a table for reading; a table never written reads as empty.
macro_rules! readable {
    ($txn:expr, $table:expr) => {
        match $txn.open_table($table) {
            Ok(table) => Some(table),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(e.into()),
        }
    };
}

fn cycle_in(
    table: Option<&impl ReadableTable<&'static str, &'static str>>,
) -> Result<CycleRecord, StoreError> {
    let Some(table) = table else {
        return Ok(CycleRecord::default());
    };
    Ok(match table.get(CYCLE_KEY)? {
        // A record this version cannot read starts the cycle afresh rather than
        // failing every Stop of the session.
        Some(json) => serde_json::from_str(json.value()).unwrap_or_default(),
        None => CycleRecord::default(),
    })
}

fn context_in(
    table: Option<&impl ReadableTable<&'static str, &'static str>>,
    name: &str,
) -> Result<ContextRecord, StoreError> {
    let Some(table) = table else {
        return Ok(ContextRecord::default());
    };
    let key = format!("{CONTEXT_PREFIX}{name}");
    Ok(match table.get(key.as_str())? {
        Some(json) => serde_json::from_str(json.value()).unwrap_or_default(),
        None => ContextRecord::default(),
    })
}

fn span_in(
    table: Option<&impl ReadableTable<u64, &'static str>>,
    after: u64,
) -> Result<Vec<SpanEvent>, StoreError> {
    let Some(table) = table else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for item in table.range(after.saturating_add(1)..)? {
        let (_, v) = item?;
        if let Ok(event) = serde_json::from_str(v.value()) {
            out.push(event);
        }
    }
    Ok(out)
}

impl StateTxn {
    /// Where the session stands in its cycle.
    pub fn cycle(&self) -> Result<CycleRecord, StoreError> {
        cycle_in(readable!(self.txn, CYCLE).as_ref())
    }

    pub fn set_cycle(&mut self, record: &CycleRecord) -> Result<(), StoreError> {
        self.put_cycle(CYCLE_KEY, record)
    }

    fn put_cycle(&mut self, key: &str, value: &impl Serialize) -> Result<(), StoreError> {
        let json = serde_json::to_string(value).map_err(StoreError::Encode)?;
        self.txn.open_table(CYCLE)?.insert(key, json.as_str())?;
        self.dirty = true;
        Ok(())
    }

    /// Hands out the next sequence number.
    pub fn next_seq(&mut self) -> Result<u64, StoreError> {
        let mut cycle = self.cycle()?;
        cycle.seq += 1;
        self.set_cycle(&cycle)?;
        Ok(cycle.seq)
    }

    pub fn context(&self, name: &str) -> Result<ContextRecord, StoreError> {
        context_in(readable!(self.txn, CYCLE).as_ref(), name)
    }

    pub fn set_context(&mut self, name: &str, record: &ContextRecord) -> Result<(), StoreError> {
        self.put_cycle(&format!("{CONTEXT_PREFIX}{name}"), record)
    }

    /// The span: the events after the read mark, oldest first.
    pub fn span(&self) -> Result<Vec<SpanEvent>, StoreError> {
        let mark = self.cycle()?.mark;
        span_in(readable!(self.txn, SPAN).as_ref(), mark)
    }

    /// Whether anything was recorded after the read mark: a span event or a
    /// context's enter.
    pub fn anything_since_mark(&self) -> Result<bool, StoreError> {
        let cycle = self.cycle()?;
        Ok(cycle.seq > cycle.mark)
    }

    /// Records an event of the span, giving it the next sequence number; drops the
    /// oldest past [`MAX_SPAN_EVENTS`].
    pub fn record_span(&mut self, mut event: SpanEvent) -> Result<u64, StoreError> {
        event.seq = self.next_seq()?;
        let json = serde_json::to_string(&event).map_err(StoreError::Encode)?;
        let mut table = self.txn.open_table(SPAN)?;
        table.insert(event.seq, json.as_str())?;
        if table.len()? > MAX_SPAN_EVENTS {
            let oldest = table.first()?.map(|(k, _)| k.value());
            if let Some(oldest) = oldest {
                table.remove(oldest)?;
            }
        }
        Ok(event.seq)
    }

    /// Accepts the cycle: the mark moves past everything recorded, the span it
    /// covered is dropped, and the count of refused Stops starts again.
    pub fn advance_mark(&mut self) -> Result<(), StoreError> {
        let mut cycle = self.cycle()?;
        cycle.mark = cycle.seq;
        cycle.refused = RefusedStops::default();
        self.set_cycle(&cycle)?;
        let mut table = self.txn.open_table(SPAN)?;
        table.retain_in(..=cycle.mark, |_, _| false)?;
        Ok(())
    }

    /// The sha256 the host last recorded for a file.
    pub fn file_hash(&self, path: &str) -> Result<Option<String>, StoreError> {
        let Some(table) = readable!(self.txn, FILES) else {
            return Ok(None);
        };
        Ok(table.get(path)?.map(|v| v.value().to_owned()))
    }

    /// Records a file's content hash; `None`: the file is gone.
    pub fn set_file_hash(&mut self, path: &str, sha256: Option<&str>) -> Result<(), StoreError> {
        let mut table = self.txn.open_table(FILES)?;
        match sha256 {
            Some(hash) => {
                table.insert(path, hash)?;
            }
            None => {
                table.remove(path)?;
            }
        }
        self.dirty = true;
        Ok(())
    }

    /// The named contexts as a gate sees them, in the order given.
    pub fn context_views(
        &self,
        names: &[String],
        turn: Option<&str>,
    ) -> Result<Vec<ContextView>, StoreError> {
        let cycle = self.cycle()?;
        let table = readable!(self.txn, CYCLE);
        names
            .iter()
            .map(|name| {
                Ok(ContextView::new(
                    name,
                    context_in(table.as_ref(), name)?,
                    &cycle,
                    turn,
                ))
            })
            .collect()
    }
}

/// The cycle as `sandrail cycle` shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CycleSnapshot {
    pub seq: u64,
    pub mark: u64,
    pub refused: RefusedStops,
    pub contexts: Vec<(String, ContextRecord)>,
    pub span: Vec<SpanEvent>,
}

impl StateReader {
    /// The session's cycle: mark, refused Stops, every context and the span.
    pub fn cycle(&self) -> Result<CycleSnapshot, StoreError> {
        let table = readable!(self.txn, CYCLE);
        let cycle = cycle_in(table.as_ref())?;
        let mut contexts = Vec::new();
        if let Some(table) = &table {
            for item in table.range(CONTEXT_PREFIX..)? {
                let (k, v) = item?;
                let Some(name) = k.value().strip_prefix(CONTEXT_PREFIX) else {
                    break;
                };
                let record = serde_json::from_str(v.value()).unwrap_or_default();
                contexts.push((name.to_owned(), record));
            }
        }
        let span = span_in(readable!(self.txn, SPAN).as_ref(), cycle.mark)?;
        Ok(CycleSnapshot {
            seq: cycle.seq,
            mark: cycle.mark,
            refused: cycle.refused,
            contexts,
            span,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::SessionStore;

    fn txn(dir: &std::path::Path) -> StateTxn {
        SessionStore::open(dir, "s", Duration::from_secs(1))
            .and_then(SessionStore::begin)
            .expect("a transaction")
    }

    fn event(tool: &str) -> SpanEvent {
        SpanEvent {
            seq: 0,
            event: "PostToolUse".into(),
            tool: Some(tool.into()),
            turn: Some("1:u".into()),
            time: 0,
            facts: serde_json::json!({}),
            files: Vec::new(),
        }
    }

    #[test]
    fn the_mark_drops_the_span_it_covers_and_contexts_enter_after_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut t = txn(dir.path());
        assert_eq!(t.record_span(event("Write")).expect("record"), 1);
        assert_eq!(t.record_span(event("Bash")).expect("record"), 2);
        assert_eq!(t.span().expect("span").len(), 2);
        t.advance_mark().expect("advance");
        assert!(t.span().expect("span").is_empty());
        assert!(!t.anything_since_mark().expect("since"));
        let entered = t.next_seq().expect("seq");
        t.set_context(
            "ctx",
            &ContextRecord {
                active: true,
                payload: Some("{}".into()),
                entered_turn: Some("2:v".into()),
                entered_seq: entered,
                failed: None,
            },
        )
        .expect("set");
        t.commit().expect("commit");

        let t = txn(dir.path());
        let views = t
            .context_views(&["ctx".to_owned(), "never".to_owned()], Some("2:v"))
            .expect("views");
        assert!(views[0].active && views[0].entered_this_cycle && views[0].entered_this_turn);
        assert!(!views[1].active && !views[1].entered_this_cycle);
        // Another turn: still this cycle, not this turn; an unknown turn is never "this turn".
        let later = t
            .context_views(&["ctx".to_owned()], Some("3:w"))
            .expect("views");
        assert!(later[0].entered_this_cycle && !later[0].entered_this_turn);
        let unknown = t.context_views(&["ctx".to_owned()], None).expect("views");
        assert!(!unknown[0].entered_this_turn);
    }

    #[test]
    fn the_span_keeps_its_newest_events() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut t = txn(dir.path());
        for _ in 0..MAX_SPAN_EVENTS + 5 {
            t.record_span(event("Read")).expect("record");
        }
        let span = t.span().expect("span");
        assert_eq!(span.len() as u64, MAX_SPAN_EVENTS);
        assert_eq!(span[0].seq, 6);
        assert_eq!(span.last().map(|e| e.seq), Some(MAX_SPAN_EVENTS + 5));
    }
}
