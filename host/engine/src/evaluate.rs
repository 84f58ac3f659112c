//! Evaluation: runs the guardrails an event matches and combines their verdicts.
//!
//! Guardrails run in config order (after `requires`), each in its own sandbox, all
//! inside one state transaction, handed back to be committed once ([`Unsaved`]):
//! before the answer by the one-shot hook, after it by the server. The first
//! refusal ends the chain: later guardrails do not see (or count) an event that is
//! not going to happen. A guardrail that fails (trap, timeout, memory, fuel,
//! malformed verdict) is plumbing: it is reported on stderr by name, and its
//! `on_error` decides whether the event proceeds. A guardrail in observe mode
//! (`gate = "observe"`) is judged the same, but what it would refuse goes only to
//! stderr and the receipt. The decision carries a trace of who judged and how, for
//! the receipt the hook writes.
//! When the state cannot be had (another process held it past the lock timeout,
//! the directory is unusable), every guardrail still judges, with one stderr line:
//! a violation answers at its rule's default level, a state call answers with an
//! error (a guardrail that cannot judge without it follows its `on_error`), and
//! contexts record nothing. A force push is refused even while the database is
//! busy.
//!
//! The stages, in the order an event meets them, each in a file of its own
//! under `evaluate/`: `select` (which guardrails and duties the event has),
//! `derive` (the event and facts every guardrail is shown), `protection`
//! (self-protection's refusal, decided before and named after the
//! guardrails'), `checkpoint` (the project kept before a call that can
//! change it, beside the rest), `ready` (components read and compiled before
//! the session is held), `hold` (the session's state, within the deadline), `chain` (each
//! guardrail judged in turn), `stop` (contexts leaving, the cycle settled) and
//! `commit` (what is left to save). [`evaluate`] runs the stages that need no
//! state; `judge` runs the rest, in order, with the session held. `trail` (the override trail) and
//! `failures` (what is answered when something cannot judge) serve them all.

use std::path::{Path, PathBuf};

use crate::audit;
use crate::config::{Config, Guardrail, OnError};
use crate::deadline::Deadline;
use crate::engine::{Engine, EventRuntime};
use crate::escalation::{self, Enforcement, Escalated, Level, SoftBlock};
use crate::event::EventKind;
use crate::facts::{Costly, SessionFacts};
use crate::guest_text;
use crate::protocol::{self, Decision, HookInput};
use crate::receipts::{Gate, GuardrailRun};
use crate::runtime::{self, Loaded, Prepared, RunError, Runtime, wit};
use crate::store::{
    Escalation, Keyspace, LockWait, Occurrence, SessionStore, StateTxn, StoreError,
};
use crate::transcript;

mod chain;
mod checkpoint;
mod commit;
mod derive;
mod failures;
mod hold;
mod judge;
mod protection;
mod ready;
mod select;
mod stop;
mod trail;

use chain::*;
use commit::*;
use derive::*;
use hold::*;
use judge::*;
use protection::*;
use ready::*;
use select::*;
use trail::*;

pub use commit::Unsaved;
use failures::*;
pub use failures::{host_failure, report_lost_state};

/// The longest message a verdict may carry, in characters (Claude Code's own cap).
const MAX_MESSAGE_CHARS: usize = protocol::MAX_ANSWER_CHARS;
/// The longest rule name a violation may carry, in bytes.
const MAX_RULE_BYTES: usize = 128;

/// Where evaluation keeps its files.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub state: Option<PathBuf>,
    pub cache: Option<PathBuf>,
    /// The project, where the override trail is kept.
    pub project: Option<PathBuf>,
    /// The socket receipts are logged to.
    pub log: PathBuf,
}

/// Judges one event. Every problem on the way is written to stderr and costs only
/// the guardrail it concerns; the answer is whatever the others decided. A failure
/// of sandrail itself (its state cannot be opened or saved, its runtime cannot
/// start) follows the config's `on_error`.
///
/// Nothing costly starts before this process holds the session's state: while
/// many hooks of one session wait their turn, each has only read its components
/// and derived the event's facts; the holder then runs the guardrails and commits.
///
/// No guardrail runs past `deadline`: one that would is given only the time
/// left, one that cannot start is answered by its `on_error`.
pub fn evaluate(
    input: &HookInput,
    config: &Config,
    dirs: &Dirs,
    engine: &Engine,
    deadline: Deadline,
) -> (Decision, Unsaved) {
    let mut decision = Decision::default();
    confirm_asked(input, config, dirs);
    let prepared = select(input, config, dirs, engine, &mut decision);
    // The session's counters advance with every tool call while a guardrail reads
    // them, whether or not a guardrail judges this one.
    let kept = runtime::kept_facts(config, dirs.cache.as_deref());
    let keeps_session_facts = kept.contains(&Costly::Session) || kept.contains(&Costly::Case);
    let duties = Duties::of(input.kind, config, keeps_session_facts);
    let may_checkpoint = checkpoint::may_be_due(input, config, dirs, engine);
    if prepared.is_empty() && !duties.any() && !may_checkpoint {
        return (decision, Unsaved::default());
    }
    // The turn and the facts need no state: worked out before the session is held,
    // so that holding it costs only the guardrails' calls and the commit.
    let (facts, turn) = facts_and_turn(input, config, dirs);
    // The project is kept before the call: a large one on a thread of its own
    // beside the guardrails' judging.
    let checkpointing = may_checkpoint
        .then(|| checkpoint::due(input, config, dirs, &facts, deadline, &mut decision))
        .flatten()
        .map(|due| {
            (
                checkpoint::Stakes::of(input, &facts, dirs),
                checkpoint::Taking::start(due),
            )
        });
    // Self-protection refuses what would change what sandrail depends on, but
    // the guardrails still judge the call: what they refuse is named first, under
    // its rule, and counted.
    let protection = duties
        .guarding
        .then(|| self_protection(input, config, dirs, &facts))
        .flatten();
    let (mut decision, unsaved) = if prepared.is_empty() && !duties.besides_guarding() {
        (decision, Unsaved::default())
    } else {
        let event = Event {
            input,
            config,
            dirs,
            engine,
            deadline,
            duties,
            kept: &kept,
            turn,
            protected: protection.is_some(),
        };
        judge(&event, &prepared, facts, decision)
    };
    if let Some(reason) = protection {
        refuse_as_protection(&mut decision, &reason);
    }
    if let Some((stakes, taking)) = checkpointing
        && let Some(taken) = taking.finish(input.kind, &decision)
    {
        checkpoint::report(taken, &mut decision, stakes, input.kind);
    }
    (decision, unsaved)
}

/// How sandrail signs what it says itself; no guardrail may take the name.
pub const HOST_AUTHOR: &str = "[sandrail]";
