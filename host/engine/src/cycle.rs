//! Cycles, as the evaluation runs them: the span each tool call adds to, file
//! changes keyed on content, the contexts' transitions, which Stop gates are held,
//! and what a Stop's outcome does to the read mark.
//!
//! The records themselves live in the session's state ([`crate::store::cycle`]);
//! this module decides what goes into them. Everything here is plumbing: when it
//! fails it says so on stderr and the event is judged without it.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::config::{Config, Guardrail};
use crate::facts::Facts;
use crate::protocol::HookInput;
use crate::runtime::Transition;
use crate::store::StateTxn;
use crate::store::cycle::{ContextRecord, CycleRecord, FileChange, SpanEvent};
use crate::transcript::Turn;

/// The most files one call's changes are looked at for.
const MAX_FILES_PER_CALL: usize = 100;
/// The largest file hashed; a larger one is not recorded.
const MAX_HASHED_BYTES: u64 = 256 << 20;
/// The largest `tool` facts a span event keeps, in bytes of JSON: a call with a
/// megabyte command line is recorded by its name alone.
const MAX_SPAN_FACTS_BYTES: usize = 16 * 1024;
/// The largest payload a context may enter with, in bytes.
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;

/// A file a call may have changed, looked at after the call (before the session
/// is held: hashing is the costly part).
#[derive(Debug)]
pub struct Looked {
    /// Absolute, as the state keys it.
    absolute: String,
    /// Relative to the project when inside it.
    shown: String,
    /// Its content's sha256; `None`: it is gone.
    sha256: Option<String>,
}

/// Hashes the files a finished call changed: those a write tool names and those the
/// facts layer recognises a shell command writing, moving or deleting.
pub fn look_at_changes(input: &HookInput, facts: &Facts, project: Option<&Path>) -> Vec<Looked> {
    let cwd = input.cwd.as_deref().map(Path::new);
    let mut seen = std::collections::BTreeSet::new();
    let mut looked = Vec::new();
    for changed in facts.changes.paths.iter().take(MAX_FILES_PER_CALL) {
        let absolute = crate::facts::absolute(&changed.path, cwd);
        if !seen.insert(absolute.clone()) {
            continue;
        }
        let sha256 = match hash_file(&absolute) {
            Ok(Some(hash)) => Some(hash),
            Ok(None) => None,
            // A directory, a device, or unreadable: not a file whose content counts.
            Err(why) => {
                if crate::debug_logging() {
                    eprintln!("sandrail: {} not recorded: {why}", absolute.display());
                }
                continue;
            }
        };
        looked.push(Looked {
            shown: shown_path(&absolute, project),
            absolute: absolute.to_string_lossy().into_owned(),
            sha256,
        });
    }
    looked
}

/// The sha256 of a regular file's content; `Ok(None)`: there is no file.
fn hash_file(path: &Path) -> Result<Option<String>, String> {
    use sha2::Digest;
    let (mut file, size) = match crate::files::open_regular(path, MAX_HASHED_BYTES) {
        Ok(opened) => opened,
        Err(crate::files::FileError::Missing { .. }) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    // No more than it measured: a file still growing is hashed as it was.
    let mut reader = (&mut file).take(size);
    loop {
        let n = reader.read(&mut buffer).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(Some(crate::hex(&hasher.finalize())))
}

fn shown_path(absolute: &Path, project: Option<&Path>) -> String {
    project
        .and_then(|p| absolute.strip_prefix(p).ok())
        .filter(|rel| !rel.as_os_str().is_empty())
        .unwrap_or(absolute)
        .to_string_lossy()
        .into_owned()
}

/// Records a finished tool call in the span: its `tool` facts and each file whose
/// content differs from what the host last recorded for it. A rewrite that leaves
/// a file as it was is no change.
pub fn record_call(
    txn: &mut StateTxn,
    input: &HookInput,
    facts: &Facts,
    turn: Option<&Turn>,
    looked: Vec<Looked>,
    now: u64,
) -> Result<(), crate::store::StoreError> {
    let mut files = Vec::new();
    for file in looked {
        let before = txn.file_hash(&file.absolute)?;
        if before == file.sha256 {
            continue;
        }
        txn.set_file_hash(&file.absolute, file.sha256.as_deref())?;
        files.push(FileChange {
            path: file.shown,
            sha256: file.sha256,
            before,
        });
    }
    txn.record_span(SpanEvent {
        seq: 0,
        event: input.kind.name().to_owned(),
        tool: input.tool_name.clone(),
        turn: turn.map(Turn::id),
        time: now,
        facts: span_facts(facts),
        files,
    })?;
    Ok(())
}

/// The call's `tool` facts as the span keeps them: whole up to
/// [`MAX_SPAN_FACTS_BYTES`], else the tool's name and a note of what was left out.
fn span_facts(facts: &Facts) -> serde_json::Value {
    let Some(tool) = facts.tool() else {
        return serde_json::json!({});
    };
    let whole = serde_json::Value::Object(tool.clone());
    if whole.to_string().len() <= MAX_SPAN_FACTS_BYTES {
        return whole;
    }
    serde_json::json!({
        "name": tool.get("name"),
        "omitted": format!("the call's facts are larger than {} KiB", MAX_SPAN_FACTS_BYTES >> 10),
    })
}

/// Applies a context's transition to its record; `Err` names what was wrong with
/// the payload (nothing is recorded then).
pub fn apply_transition(
    txn: &mut StateTxn,
    name: &str,
    transition: Transition,
    turn: Option<&Turn>,
) -> Result<&'static str, String> {
    let mut record = txn.context(name).map_err(|e| e.to_string())?;
    let verdict = match transition {
        Transition::Stay => return Ok("stay"),
        Transition::Exit => {
            if !record.active {
                return Ok("exit");
            }
            record.active = false;
            record.payload = None;
            "exit"
        }
        Transition::Enter(payload) => {
            if payload.len() > MAX_PAYLOAD_BYTES {
                return Err(format!(
                    "its enter payload is {} bytes; the limit is {MAX_PAYLOAD_BYTES}",
                    payload.len()
                ));
            }
            if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&payload) {
                return Err(format!("its enter payload is not JSON: {e}"));
            }
            record = ContextRecord {
                active: true,
                payload: Some(payload),
                entered_turn: turn.map(Turn::id),
                entered_seq: txn.next_seq().map_err(|e| e.to_string())?,
                // An earlier failure this cycle still lost what it should have
                // recorded.
                failed: record.failed.take(),
            };
            "enter"
        }
    };
    txn.set_context(name, &record).map_err(|e| e.to_string())?;
    Ok(verdict)
}

/// Notes that context `name` failed on this event (`why`): what it should have
/// recorded is lost, and the gates that require it refuse this cycle's Stop.
pub fn record_context_failure(
    txn: &mut StateTxn,
    name: &str,
    why: &str,
) -> Result<(), crate::store::StoreError> {
    let mut record = txn.context(name)?;
    record.failed = Some(crate::store::cycle::ContextFailure {
        seq: txn.next_seq()?,
        why: why.to_owned(),
    });
    txn.set_context(name, &record)
}

/// Why a gate must refuse this Stop without running: a context it requires failed
/// during this cycle ("the judge then refuses a claim it cannot corroborate").
/// The failure is then spent: it refuses this one Stop, and the next is judged
/// by the gate on what the context recorded since.
pub fn failed_requirement(
    txn: &mut StateTxn,
    config: &Config,
    guardrail: &Guardrail,
) -> Result<Option<String>, crate::store::StoreError> {
    let mark = txn.cycle()?.mark;
    for context in config.required_contexts(guardrail) {
        let mut record = txn.context(&context)?;
        if let Some(failure) = record.failed.take()
            && failure.seq > mark
        {
            txn.set_context(&context, &record)?;
            return Ok(Some(format!(
                "the context '{context}' failed during this cycle ({}), so what it should have recorded is lost and this Stop cannot be corroborated. Check the work it tracks (`sandrail cycle` shows the span), then stop again.",
                failure.why
            )));
        }
    }
    Ok(None)
}

/// Why a gate does not run at this Stop, if it does not.
pub fn held_at_stop(
    txn: &StateTxn,
    config: &Config,
    guardrail: &Guardrail,
    reads_cycle: bool,
) -> Result<Option<String>, crate::store::StoreError> {
    let cycle = txn.cycle()?;
    for context in config.required_contexts(guardrail) {
        if txn.context(&context)?.entered_seq <= cycle.mark {
            return Ok(Some(format!(
                "held: '{context}', which it requires, has not entered during this cycle"
            )));
        }
    }
    if reads_cycle && cycle.seq <= cycle.mark {
        return Ok(Some(
            "quiet: nothing happened since the last accepted Stop".to_owned(),
        ));
    }
    Ok(None)
}

/// What a Stop's outcome does to the cycle.
pub enum StopOutcome {
    /// Accepted: the mark moves past the span.
    Accepted,
    /// Refused; the mark stays, and this is the `count`th refusal in a row.
    Refused { count: u32 },
    /// Refused, and not counted: the transcript has not grown since the last
    /// refused Stop (or cannot be read), so this is not the harness coming back
    /// after the agent answered a refusal.
    NotCounted { count: u32 },
    /// Refused more times in a row than the config allows: let through, the mark
    /// staying where it is.
    Released { count: u32 },
}

/// What the host knows of a Stop when it settles the cycle.
#[derive(Debug, Clone, Copy)]
pub struct StopSeen<'a> {
    pub turn: Option<&'a Turn>,
    /// The harness marks it as following a refused Stop (`stop_hook_active`).
    pub chained: bool,
    /// The size of the session's transcript; `None` when it cannot be read.
    pub transcript_len: Option<u64>,
    /// The transcript ends inside a tool call: the Stop comes from within it.
    pub in_a_tool_call: bool,
}

/// Settles the cycle after a Stop was judged: an accepted Stop advances the read
/// mark; a refused one counts, and past `max_refused_stops` in a row is released.
/// Refusals in a row are those of one turn, or of a chain the harness marks as
/// such. A refusal counts toward the cap only if the transcript grew since the
/// one before it and no tool call is open in it: between two real Stops the
/// agent answers the refusal, and the harness stops only once the agent's calls
/// are done, so Stops sent from within tool calls use nothing up.
pub fn settle_stop(
    txn: &mut StateTxn,
    refused: bool,
    seen: StopSeen,
    max_refused_stops: u32,
) -> Result<StopOutcome, crate::store::StoreError> {
    let mut cycle: CycleRecord = txn.cycle()?;
    if !refused {
        if cycle.seq > cycle.mark || cycle.refused.count > 0 {
            txn.advance_mark()?;
        }
        return Ok(StopOutcome::Accepted);
    }
    let turn = seen.turn.map(Turn::id);
    let continuing = cycle.refused.count > 0 && (seen.chained || cycle.refused.turn == turn);
    if seen.in_a_tool_call {
        return Ok(StopOutcome::NotCounted {
            count: cycle.refused.count,
        });
    }
    if continuing {
        let grown = match (seen.transcript_len, cycle.refused.transcript_len) {
            (Some(now), Some(then)) => now > then,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !grown {
            return Ok(StopOutcome::NotCounted {
                count: cycle.refused.count,
            });
        }
    }
    cycle.refused.count = if continuing {
        cycle.refused.count.saturating_add(1)
    } else {
        1
    };
    cycle.refused.turn = turn;
    cycle.refused.transcript_len = seen.transcript_len;
    txn.set_cycle(&cycle)?;
    let count = cycle.refused.count;
    Ok(if count > max_refused_stops {
        StopOutcome::Released { count }
    } else {
        StopOutcome::Refused { count }
    })
}

/// Where the project is, for paths shown relative to it.
pub fn project_of(dirs_project: Option<&Path>, input: &HookInput) -> Option<PathBuf> {
    dirs_project
        .map(Path::to_path_buf)
        .or_else(|| input.cwd.as_deref().map(PathBuf::from))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::SessionStore;

    fn turn(count: u32) -> Turn {
        Turn {
            count,
            uuid: format!("u{count}"),
        }
    }

    /// Settles a Stop of turn `turn_count` with a transcript of `len` bytes.
    fn outcome(dir: &Path, refused: bool, turn_count: u32, continuing: bool, len: u64) -> String {
        let mut txn = SessionStore::open(dir, "s", Duration::from_secs(1))
            .and_then(SessionStore::begin)
            .expect("a transaction");
        let seen = StopSeen {
            turn: Some(&turn(turn_count)),
            chained: continuing,
            transcript_len: Some(len),
            in_a_tool_call: false,
        };
        let out = settle_stop(&mut txn, refused, seen, 2).expect("settled");
        txn.commit().expect("commit");
        match out {
            StopOutcome::Accepted => "accepted".into(),
            StopOutcome::Refused { count } => format!("refused {count}"),
            StopOutcome::NotCounted { count } => format!("not counted {count}"),
            StopOutcome::Released { count } => format!("released {count}"),
        }
    }

    #[test]
    fn refusals_in_a_row_are_counted_per_turn_or_per_chain_and_capped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        assert_eq!(outcome(dir, true, 1, false, 100), "refused 1");
        assert_eq!(outcome(dir, true, 1, false, 200), "refused 2");
        assert_eq!(outcome(dir, true, 1, false, 300), "released 3");
        // A new turn that the harness does not mark as continuing starts again.
        assert_eq!(outcome(dir, true, 2, false, 400), "refused 1");
        // A refusal handed back as a new user message is a new turn, but the chain
        // goes on (`stop_hook_active`).
        assert_eq!(outcome(dir, true, 3, true, 500), "refused 2");
        assert_eq!(outcome(dir, true, 4, true, 600), "released 3");
        // Accepting starts the count again.
        assert_eq!(outcome(dir, false, 4, true, 700), "accepted");
        assert_eq!(outcome(dir, true, 4, true, 800), "refused 1");
    }

    #[test]
    fn a_refused_stop_counts_only_once_the_transcript_grew() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        assert_eq!(outcome(dir, true, 1, false, 100), "refused 1");
        // Sent again from within one tool call: the transcript is as it was.
        for _ in 0..5 {
            assert_eq!(outcome(dir, true, 1, true, 100), "not counted 1");
        }
        assert_eq!(outcome(dir, true, 1, true, 180), "refused 2");
        assert_eq!(outcome(dir, true, 1, true, 150), "not counted 2");
        assert_eq!(outcome(dir, true, 1, true, 260), "released 3");
    }
}
