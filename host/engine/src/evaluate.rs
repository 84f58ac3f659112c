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
//! guardrails'), `ready` (components read and compiled before the session is
//! held), `hold` (the session's state, within the deadline), `chain` (each
//! guardrail judged in turn), `stop` (contexts leaving, the cycle settled) and
//! `commit` (what is left to save). `trail` (the override trail) and
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
mod commit;
mod derive;
mod failures;
mod hold;
mod protection;
mod ready;
mod select;
mod stop;
mod trail;

use chain::*;
use commit::*;
use derive::*;
use hold::*;
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
    let keeps_session = kept.contains(&Costly::Session);
    let keeps_case = kept.contains(&Costly::Case);
    let duties = Duties::of(input.kind, config, keeps_session || keeps_case);
    let Duties {
        counting,
        guarding,
        recording,
        stopping,
    } = duties;
    if prepared.is_empty() && !duties.any() {
        return (decision, Unsaved::default());
    }

    // The turn and the facts need no state: worked out before the session is held,
    // so that holding it costs only the guardrails' calls and the commit.
    let mut facts = crate::facts::derive(
        input,
        &config.patterns,
        config.mandate.as_ref(),
        dirs.project.as_deref(),
    );
    let turn = transcript::of_event(input, dirs.state.as_deref());
    if let Some(turn) = &turn {
        facts.set_turn(turn);
    }
    // Self-protection refuses what would change what sandrail depends on, but
    // the guardrails still judge the call: what they refuse is named first, under
    // its rule, and counted.
    let protection = guarding
        .then(|| self_protection(input, config, dirs, &facts))
        .flatten();
    let (mut decision, unsaved) = 'judged: {
        if prepared.is_empty() && !duties.besides_guarding() {
            break 'judged (decision, Unsaved::default());
        }
        if stopping && turn.is_none() {
            eprintln!(
                "sandrail: this Stop's turn is unknown, so no context counts as entered in this turn"
            );
        }
        let project = crate::cycle::project_of(dirs.project.as_deref(), input);
        let looked = if recording {
            crate::cycle::look_at_changes(input, &facts, project.as_deref())
        } else {
            Vec::new()
        };
        // At Stop, every context may have to leave: whether it is active is known once
        // the session is held.
        let mut leaving = if stopping {
            contexts_that_may_leave(input, config, dirs, engine)
        } else {
            Vec::new()
        };
        let turn_id = turn.as_ref().map(transcript::Turn::id);
        let mut base_event = base_event(input, &facts, turn.clone());

        let stateful: Vec<&str> = prepared
            .iter()
            .filter(|(_, p)| p.uses_state)
            .map(|(g, _)| g.name.as_str())
            .collect();
        // Escalation keeps its counters in the session too, and so do the facts.
        let needs_state = !stateful.is_empty()
            || prepared
                .iter()
                .any(|(g, _)| g.enforcement.is_some() || g.is_context())
            || duties.besides_guarding()
            || (!kept.is_empty() && !prepared.is_empty());
        let now = crate::clock::now();
        // Only a PreToolUse can be approved and sent again after a refusal.
        let input_hash = (input.kind == crate::event::EventKind::PreToolUse)
            .then(|| input_fingerprint(input.tool_input.as_deref().unwrap_or("null")));
        let tool_use_id = input.fields.get("tool_use_id").and_then(|v| v.as_str());
        // The components are made ready before the session is held, so that
        // holding it costs only the guardrails' calls and the commit: many
        // events of one session load theirs at once, then judge in turn.
        let mut ready = None;
        if !prepared.is_empty() {
            match make_ready(engine, dirs, &prepared, &leaving, config, &mut decision) {
                Some(made) => ready = Some(made),
                None => break 'judged (decision, Unsaved::default()),
            }
        }
        let Held {
            mut txn,
            unavailable,
        } = if needs_state {
            hold(input, config, dirs, &stateful, deadline, &mut decision)
        } else {
            Held::not_needed()
        };
        let state_lost = txn.is_none();
        let mut session_facts = None;
        if keeps_session || keeps_case {
            session_facts =
                add_costly_facts(&mut facts, txn.as_ref(), config, keeps_session, keeps_case);
            base_event.facts = facts.to_json();
        }
        if recording && let Some(t) = txn.as_mut() {
            let recorded = crate::cycle::record_call(t, input, &facts, turn.as_ref(), looked, now);
            if let Err(e) = recorded {
                eprintln!("sandrail: this call could not be recorded in the cycle's span: {e}");
            }
        }
        // Contexts that are not active have nothing to leave.
        if let Some(t) = txn.as_ref() {
            leaving.retain(|(g, _)| t.context(&g.name).is_ok_and(|c| c.active));
        } else if !leaving.is_empty() {
            eprintln!("sandrail: the contexts' states cannot be read, so none leaves at this Stop");
            leaving.clear();
        }
        if prepared.is_empty() && leaving.is_empty() {
            if stopping {
                stop::settle(&mut txn, &mut decision, input, turn.as_ref(), config);
            }
            advance_session(&mut txn, session_facts, &facts, &decision, counting, config);
            break 'judged (decision, Unsaved::of(txn, Vec::new(), now));
        }

        let (runtime, loaded) = match ready {
            Some(made) => made,
            None => match make_ready(engine, dirs, &prepared, &leaving, config, &mut decision) {
                Some(made) => made,
                None => break 'judged (decision, Unsaved::default()),
            },
        };

        // Once a refusal cuts the chain, only guardrails that touch flags still run,
        // and only their flag changes count: a flag records that something was
        // attempted, whatever became of the attempt.
        let cut = !decision.refusals.is_empty() && protocol::can_refuse(input.kind);
        let scope = Scope {
            input,
            config,
            base_event: &base_event,
            turn: turn.as_ref(),
            turn_id,
            now,
            input_hash,
            tool_use_id,
            stopping,
            state_lost,
            protected: protection.is_some(),
            deadline,
        };
        let mut chain = Chain {
            decision,
            txn,
            cut,
            unavailable,
            plain_refusals: Vec::new(),
            overrides: Vec::new(),
        };
        for (guardrail, component, reads_cycle) in &loaded {
            let run = chain.run(&scope, &runtime, guardrail, component, *reads_cycle);
            chain.decision.trace.guardrails.push(run);
        }
        let Chain {
            mut decision,
            mut txn,
            cut,
            plain_refusals,
            overrides,
            ..
        } = chain;

        if stopping {
            if !cut {
                stop::leave_contexts(
                    &runtime,
                    &mut txn,
                    &mut decision,
                    config,
                    &base_event,
                    leaving,
                );
            }
            stop::settle(&mut txn, &mut decision, input, turn.as_ref(), config);
        }
        count_plain_refusals(
            &mut txn,
            &plain_refusals,
            needs_state,
            input,
            dirs,
            config,
            &mut decision,
        );
        advance_session(&mut txn, session_facts, &facts, &decision, counting, config);
        if runtime::leaves_teardown_to_exit() && runtime.is_own() {
            std::mem::forget(loaded);
            std::mem::forget(runtime);
        }
        (decision, Unsaved::of(txn, overrides, now))
    };
    if let Some(reason) = protection {
        refuse_as_protection(&mut decision, &reason);
    }
    (decision, unsaved)
}

/// How sandrail signs what it says itself; no guardrail may take the name.
pub const HOST_AUTHOR: &str = "[sandrail]";
