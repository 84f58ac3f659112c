//! Evaluation: runs the guardrails an event matches and combines their verdicts.
//!
//! Guardrails run in config order (after `requires`), each in its own sandbox, all
//! inside one state transaction that is committed once at the end. The first
//! refusal ends the chain: later guardrails do not see (or count) an event that is
//! not going to happen. A guardrail that fails (trap, timeout, memory, malformed
//! verdict) is plumbing: it is reported on stderr by name and the event proceeds.
//! When the state cannot be had (another process held it past the lock timeout,
//! the directory is unusable), the guardrails that import state are skipped with
//! one stderr line, and the stateless ones still judge: a force push is refused
//! even while the database is busy.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::{Config, Guardrail};
use crate::protocol::{self, Decision, HookInput};
use crate::runtime::{Captured, Loaded, RunError, Runtime, wit};
use crate::store::{Keyspace, StateStore, StateTxn};
use crate::transcript;

/// The longest message a verdict may carry, in characters (Claude Code's own cap).
const MAX_MESSAGE_CHARS: usize = protocol::MAX_ANSWER_CHARS;
/// The longest rule name a violation may carry, in bytes.
const MAX_RULE_BYTES: usize = 128;

/// Where evaluation keeps its files.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub state: Option<PathBuf>,
    pub cache: Option<PathBuf>,
}

/// Judges one event. Every problem on the way is written to stderr and costs only
/// the guardrail it concerns; the answer is whatever the others decided.
pub fn evaluate(input: &HookInput, config: &Config, dirs: &Dirs) -> Decision {
    let mut decision = Decision::default();
    let matching = config.matching(input.kind, input.tool_name.as_deref());
    if matching.is_empty() {
        return decision;
    }

    let runtime = match Runtime::new(dirs.cache.clone()) {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sandrail: cannot start the WebAssembly runtime: {e:#}");
            return decision;
        }
    };
    let loaded: Vec<(&Guardrail, Loaded)> = matching
        .into_iter()
        .filter_map(|g| match runtime.load(&g.source, g.sha256.as_deref()) {
            Ok(loaded) => Some((g, loaded)),
            Err(e) => {
                eprintln!("sandrail: guardrail '{}' not run: {e}", g.name);
                None
            }
        })
        .collect();
    if loaded.is_empty() {
        return decision;
    }

    let base_event = base_event(input);
    let stateful: Vec<&str> = loaded
        .iter()
        .filter(|(_, l)| l.uses_state)
        .map(|(g, _)| g.name.as_str())
        .collect();
    let mut unavailable = String::from("no guardrail of this event imports state");
    let mut txn = None;
    if !stateful.is_empty() {
        match begin_state(dirs.state.as_deref(), config.lock_timeout) {
            Ok(begun) => txn = Some(begun),
            Err(why) => {
                // Without their state these guardrails cannot judge; the others can.
                eprintln!(
                    "sandrail: {why}; skipping the guardrails that keep state ({}) for this event",
                    stateful.join(", ")
                );
                unavailable = why;
            }
        }
    }
    let state_lost = txn.is_none();

    for (guardrail, component) in &loaded {
        if component.uses_state && state_lost {
            continue;
        }
        let mut keyspace = Keyspace::new(
            &input.session_id,
            &guardrail.name,
            guardrail.requires.clone(),
        );
        match txn.take() {
            Some(t) => keyspace = keyspace.with_txn(t),
            None => keyspace.set_unavailable(unavailable.clone()),
        }
        let mut event = base_event.clone();
        event.config = guardrail.config.to_string();

        let outcome = runtime.run(
            component,
            &guardrail.name,
            &event,
            keyspace,
            guardrail.limits,
        );
        forward_output(&guardrail.name, "stdout", &outcome.stdout);
        forward_output(&guardrail.name, "stderr", &outcome.stderr);
        let verdict = outcome
            .result
            .map_err(Failure::Run)
            .and_then(|v| check_verdict(v).map_err(Failure::Malformed));
        match outcome.keyspace.finish(verdict.is_ok()) {
            Ok(t) => txn = t,
            Err(e) => {
                eprintln!(
                    "sandrail: the state of this event could not be saved (at guardrail '{}'): {e}",
                    guardrail.name
                );
                unavailable = format!("the state store failed during this event: {e}");
            }
        }
        match verdict {
            Ok(verdict) => {
                if record(&mut decision, &guardrail.name, verdict)
                    && protocol::can_refuse(input.kind)
                {
                    break;
                }
            }
            Err(failure) => eprintln!(
                "sandrail: guardrail '{}' failed and was skipped (the event proceeds): {failure}",
                guardrail.name
            ),
        }
    }

    if let Some(txn) = txn
        && let Err(e) = txn.commit()
    {
        eprintln!("sandrail: the state of this event could not be saved: {e}");
    }
    decision
}

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    Run(RunError),
    #[error("malformed verdict: {0}")]
    Malformed(String),
}

/// Opens the store and begins the event's transaction, or says why it cannot.
fn begin_state(dir: Option<&Path>, lock_timeout: Duration) -> Result<StateTxn, String> {
    let dir = dir.ok_or("no state directory (set SANDRAIL_STATE_DIR or HOME)")?;
    StateStore::open(dir, lock_timeout)
        .and_then(|store| store.begin())
        .map_err(|e| e.to_string())
}

/// The parts of the event every guardrail shares.
fn base_event(input: &HookInput) -> wit::Event {
    let turn = input.transcript_path.as_deref().and_then(|path| {
        match transcript::current_turn(Path::new(path)) {
            Ok(turn) => Some(turn),
            Err(e) => {
                eprintln!("sandrail: turn unknown: {e}");
                None
            }
        }
    });
    wit::Event {
        kind: input.kind.into(),
        session_id: input.session_id.clone(),
        turn: turn.map(|t| wit::Turn {
            id: t.id(),
            count: t.count,
            uuid: t.uuid,
        }),
        tool_name: input.tool_name.clone(),
        tool_input: input.tool_input.as_ref().map(|v| v.to_string()),
        payload: input.raw.clone(),
        config: String::new(),
        facts: crate::facts::derive(input).to_string(),
    }
}

/// Rejects verdicts the harness could not show: empty or oversized messages, and
/// rule names that are not short identifiers.
fn check_verdict(verdict: wit::Verdict) -> Result<wit::Verdict, String> {
    let check_text = |what: &str, text: &str| {
        let chars = text.chars().count();
        if text.trim().is_empty() {
            Err(format!("the {what} is empty"))
        } else if chars > MAX_MESSAGE_CHARS {
            Err(format!(
                "the {what} is {chars} characters; the limit is {MAX_MESSAGE_CHARS}"
            ))
        } else {
            Ok(())
        }
    };
    match &verdict {
        wit::Verdict::Pass => {}
        wit::Verdict::Note(text) => check_text("note", text)?,
        wit::Verdict::Deny(reason) => check_text("deny reason", reason)?,
        wit::Verdict::Violation(v) => {
            check_text("violation message", &v.message)?;
            let rule_ok = !v.rule.is_empty()
                && v.rule.len() <= MAX_RULE_BYTES
                && !v.rule.chars().any(|c| c.is_control() || c.is_whitespace());
            if !rule_ok {
                return Err(format!(
                    "the violation's rule name must be 1 to {MAX_RULE_BYTES} bytes without spaces"
                ));
            }
        }
    }
    Ok(verdict)
}

/// Adds a verdict to the decision; true when it refuses the event.
fn record(decision: &mut Decision, guardrail: &str, verdict: wit::Verdict) -> bool {
    match verdict {
        wit::Verdict::Pass => false,
        wit::Verdict::Note(text) => {
            decision.notes.push(format!("[{guardrail}] {text}"));
            false
        }
        wit::Verdict::Deny(reason) => {
            decision.refusals.push(format!("[{guardrail}] {reason}"));
            true
        }
        wit::Verdict::Violation(v) => {
            decision
                .refusals
                .push(format!("[{guardrail}/{}] {}", v.rule, v.message));
            true
        }
    }
}

/// Forwards what a guardrail printed to its stdout or stderr, line by line.
fn forward_output(guardrail: &str, stream: &str, captured: &Captured) {
    for line in String::from_utf8_lossy(&captured.bytes).lines() {
        eprintln!("sandrail: [{guardrail}] {stream}: {line}");
    }
    if captured.dropped > 0 {
        eprintln!(
            "sandrail: [{guardrail}] {stream}: {} more bytes dropped (the first {} KiB of each event are kept)",
            captured.dropped,
            crate::runtime::CAPTURE_BYTES / 1024
        );
    }
}
