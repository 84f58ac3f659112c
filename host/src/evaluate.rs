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

mod stop;

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

/// What an event leaves once it is decided: its state transaction, still
/// holding the session, and the overrides that go on the project's trail once
/// that state is saved. The one-shot hook saves it before it answers; the
/// server answers first and saves it before the session's next event
/// ([`crate::hook`]).
#[must_use = "an event's state is lost unless it is saved"]
#[derive(Default)]
pub struct Unsaved {
    txn: Option<StateTxn>,
    overrides: Vec<(String, String, u64)>,
    now: u64,
}

impl Unsaved {
    fn of(txn: Option<StateTxn>, overrides: Vec<(String, String, u64)>, now: u64) -> Unsaved {
        Unsaved {
            txn,
            overrides,
            now,
        }
    }

    /// Commits the event's state, releasing its session, then puts its
    /// overrides on the trail (only once the state that recorded them is
    /// saved). A commit that fails loses what the guardrails recorded: why.
    /// Once: what is saved is gone from here.
    pub fn save(&mut self, input: &HookInput, dirs: &Dirs) -> Result<(), String> {
        let Some(txn) = self.txn.take() else {
            return Ok(());
        };
        txn.commit()
            .map_err(|e| format!("the state of this event could not be saved: {e}"))?;
        write_trail(
            input,
            dirs,
            self.now,
            std::mem::take(&mut self.overrides),
            audit::Detected::Reinvocation,
        );
        Ok(())
    }
}

/// Self-protection's verdict, after the guardrails': a call that also breaks a
/// guardrail's rule (`rm -rf ~` is a destructive command before it is a change
/// to sandrail's files) is refused under that rule first, and both are said and
/// recorded. Never a question for the user.
fn refuse_as_protection(decision: &mut Decision, reason: &str) {
    decision.ask = false;
    decision.trace.host_refused = true;
    decision
        .refusals
        .push(guest_text::attributed(HOST_AUTHOR, reason));
}

/// Stage: select. The guardrails this event wakes (matching it, not switched
/// off for the session), each with its component prepared; one that cannot be
/// prepared is recorded as not run (a context says so and records nothing).
fn select<'c>(
    input: &HookInput,
    config: &'c Config,
    dirs: &Dirs,
    engine: &Engine,
    decision: &mut Decision,
) -> Vec<(&'c Guardrail, Prepared)> {
    let mut matching = config.matching(input.kind, input.tool_name.as_deref());
    if !matching.is_empty()
        && let Some(state) = &dirs.state
    {
        // Switched off for this session: not even instantiated.
        let off = crate::store::lifecycle::switched_off(state, &input.session_id);
        matching.retain(|g| !off.contains(&g.name));
    }
    matching
        .into_iter()
        .filter_map(|g| match engine.prepare(g) {
            Ok(prepared) => Some((g, prepared)),
            Err(e) => {
                cannot_run(decision, config, g, None, &e.to_string());
                None
            }
        })
        .collect()
}

/// At Stop: every context not switched off, which may have to leave (whether it
/// is active is known once the session is held).
fn contexts_that_may_leave<'c>(
    input: &HookInput,
    config: &'c Config,
    dirs: &Dirs,
    engine: &Engine,
) -> Vec<(&'c Guardrail, Result<Prepared, String>)> {
    let off = dirs
        .state
        .as_deref()
        .map(|state| crate::store::lifecycle::switched_off(state, &input.session_id))
        .unwrap_or_default();
    config
        .contexts()
        .filter(|g| !off.contains(&g.name))
        .map(|g| (g, engine.prepare(g).map_err(|e| e.to_string())))
        .collect()
}

/// What holding the session left.
struct Held {
    txn: Option<StateTxn>,
    /// Why the state cannot be had, for the guardrails that ask for it.
    unavailable: String,
}

impl Held {
    fn not_needed() -> Held {
        Held {
            txn: None,
            unavailable: String::from("no guardrail of this event imports state"),
        }
    }
}

/// Stage: hold the session. Its lock and a write transaction on its state; when
/// they cannot be had, why, said on stderr, and what the event does without
/// them (`stateful` names the guardrails that keep state).
fn hold(
    input: &HookInput,
    config: &Config,
    dirs: &Dirs,
    stateful: &[&str],
    deadline: Deadline,
    decision: &mut Decision,
) -> Held {
    let mut held = Held::not_needed();
    // A queue of this session's events is waited out while it moves, for at
    // most half the time the event has left: the rest is the guardrails'.
    let wait = LockWait {
        stalled: config.lock_timeout,
        until: Some(std::time::Instant::now() + deadline.left() / 2),
    };
    match begin_state(
        dirs.state.as_deref(),
        &input.session_id,
        wait,
        &mut decision.alerts,
    ) {
        Ok(begun) => held.txn = Some(begun),
        Err(failure) => {
            if failure.is_lock_timeout()
                && let Some(state) = &dirs.state
            {
                crate::store::note_unheld(state, &input.session_id);
            }
            // Without their state these guardrails cannot judge; the others can,
            // and escalation falls back to each rule's default level.
            if stateful.is_empty() {
                eprintln!(
                    "sandrail: {failure}; violations are not counted for this event and answer at their rule's default level"
                );
            } else {
                eprintln!(
                    "sandrail: {failure}; the guardrails that keep state ({}) judge without it for this event: violations answer at their rule's default level, and one that cannot judge without its state follows its on_error",
                    stateful.join(", ")
                );
            }
            // Waiting out another sandrail process is not a failure; an
            // unusable store is; a lock held by anything else is tampering,
            // which the person hears of, while the guardrails judge as at a
            // lock timeout (default levels; `on_error` for one that cannot).
            if failure.is_tampering() {
                decision.alerts.push(format!("sandrail: {failure}"));
            } else if !failure.is_lock_timeout() {
                host_failure(decision, config, &failure.to_string());
            }
            held.unavailable = failure.to_string();
        }
    }
    held
}

/// The event's runtime and the components loaded on it, each with whether it
/// reads the cycle.
type Ready<'e, 'c> = (EventRuntime<'e>, Vec<(&'c Guardrail, Loaded, bool)>);

/// Stage: make ready. The event's runtime (this process's own, or the
/// server's) for the selected components and the contexts that may leave, and
/// each selected component loaded on it; `None` when the runtime cannot start
/// (said, and answered as `on_error` says).
fn make_ready<'e, 'c>(
    engine: &'e Engine,
    dirs: &Dirs,
    prepared: &[(&'c Guardrail, Prepared)],
    leaving: &[(&'c Guardrail, Result<Prepared, String>)],
    config: &Config,
    decision: &mut Decision,
) -> Option<Ready<'e, 'c>> {
    let components = prepared
        .iter()
        .map(|(_, p)| p)
        .chain(leaving.iter().filter_map(|(_, p)| p.as_ref().ok()));
    match engine.runtime_for(dirs.cache.clone(), components) {
        Ok(runtime) => {
            let loaded = load(&runtime, prepared, config, decision);
            Some((runtime, loaded))
        }
        Err(e) => {
            let why = format!("cannot start the WebAssembly runtime: {e:#}");
            eprintln!("sandrail: {why}");
            host_failure(decision, config, &why);
            None
        }
    }
}

/// Stage: load. Each selected component instantiated-ready on `runtime`, with
/// whether it reads the cycle; one that cannot be loaded is recorded as not run.
fn load<'c>(
    runtime: &Runtime,
    prepared: &[(&'c Guardrail, Prepared)],
    config: &Config,
    decision: &mut Decision,
) -> Vec<(&'c Guardrail, Loaded, bool)> {
    prepared
        .iter()
        .filter_map(|(g, p)| match runtime.load(p) {
            Ok(loaded) => Some((*g, loaded, p.reads_cycle())),
            Err(e) => {
                cannot_run(decision, config, g, Some(&p.sha256), &e.to_string());
                None
            }
        })
        .collect()
}

/// A guardrail whose component cannot be prepared or loaded: a context says so
/// and records nothing; a gate is recorded as not run, under its `on_error`.
fn cannot_run(
    decision: &mut Decision,
    config: &Config,
    guardrail: &Guardrail,
    sha256: Option<&str>,
    why: &str,
) {
    if guardrail.is_context() {
        eprintln!(
            "sandrail: context '{}' not run: {why}; it records nothing for this event",
            guardrail.name
        );
    } else {
        not_run(decision, config, guardrail, sha256, why);
    }
}

/// What an event obliges the pipeline to do beyond running the guardrails it
/// matches: each is a stage that runs, or not, for this event.
#[derive(Debug, Clone, Copy)]
struct Duties {
    /// Advance the session's counters: a PreToolUse, while a guardrail reads them.
    counting: bool,
    /// Check the call against self-protection: a PreToolUse, while it is on.
    guarding: bool,
    /// Put the finished call in the cycle's span: a PostToolUse, while the config
    /// keeps cycles.
    recording: bool,
    /// Let the active contexts leave and settle the cycle: a Stop, while the
    /// config keeps cycles.
    stopping: bool,
}

impl Duties {
    fn of(kind: EventKind, config: &Config, keeps_session_facts: bool) -> Duties {
        let cycles = config.keeps_cycles();
        Duties {
            counting: keeps_session_facts && kind == EventKind::PreToolUse,
            guarding: config.protect.enabled && kind == EventKind::PreToolUse,
            recording: cycles && kind == EventKind::PostToolUse,
            stopping: cycles && kind == EventKind::Stop,
        }
    }

    fn any(self) -> bool {
        self.guarding || self.besides_guarding()
    }

    /// A duty that needs the session's state.
    fn besides_guarding(self) -> bool {
        self.counting || self.recording || self.stopping
    }
}

/// What every guardrail of one event reads: the event, and what was worked out
/// about it before the first one ran.
struct Scope<'a> {
    input: &'a HookInput,
    config: &'a Config,
    base_event: &'a wit::Event,
    turn: Option<&'a transcript::Turn>,
    turn_id: Option<String>,
    now: u64,
    /// The fingerprint of a PreToolUse's input (only it can be sent again after
    /// a refusal, as an override).
    input_hash: Option<String>,
    tool_use_id: Option<&'a str>,
    stopping: bool,
    /// The session's state could not be had for this event.
    state_lost: bool,
    /// Self-protection refuses the call whatever the guardrails say.
    protected: bool,
    /// Past this no guardrail runs ([`crate::deadline`]).
    deadline: Deadline,
}

impl Scope<'_> {
    /// A guardrail's limits for this event: its deadline no later than the
    /// event's; and whether the event's is the nearer.
    fn limits_of(&self, guardrail: &Guardrail) -> (crate::config::Limits, bool) {
        let mut limits = guardrail.limits;
        let left = self.deadline.left();
        let cut = left < limits.timeout;
        if cut {
            limits.timeout = left;
        }
        (limits, cut)
    }
}

/// Why a guardrail stopped by the event's deadline did not judge.
const PAST_DEADLINE: &str = "sandrail's deadline for this event came first (it answers before the harness's hook timeout would let the call through)";

/// One guardrail's call: it, its component, the keyspace it runs with and the
/// event as it sees it (with its own config).
struct Call<'a> {
    guardrail: &'a Guardrail,
    component: &'a Loaded,
    keyspace: Keyspace,
    event: wit::Event,
}

/// What the guardrails of one event pass along as they run in turn.
struct Chain {
    decision: Decision,
    /// The event's transaction, lent to each guardrail's keyspace in turn.
    txn: Option<StateTxn>,
    /// A refusal has cut the chain: later guardrails run only for their flags.
    cut: bool,
    /// Why the guardrails still to run have no state, when they have none.
    unavailable: String,
    /// Refusals of guardrails without `enforcement`, counted at the end.
    plain_refusals: Vec<(String, String)>,
    /// Overrides recorded by escalation, for the trail once committed.
    overrides: Vec<(String, String, u64)>,
}

impl Chain {
    /// Runs one guardrail of the event (or says why it does not run) and applies
    /// its answer; returns its receipt entry.
    fn run(
        &mut self,
        scope: &Scope,
        runtime: &Runtime,
        guardrail: &Guardrail,
        component: &Loaded,
        reads_cycle: bool,
    ) -> GuardrailRun {
        let gate = scope.config.gate_of(guardrail);
        let mut run = GuardrailRun {
            name: guardrail.name.clone(),
            sha256: Some(component.sha256.clone()),
            verdict: "skipped".to_owned(),
            gate,
            ..GuardrailRun::default()
        };
        let context = guardrail.is_context();
        // Without the state (the lock timed out or is held by another program,
        // the store is unusable) a context records nothing; a guardrail that keeps
        // state still judges, its violations answering at their rule's default
        // level (dotforge: "on timeout, the hook proceeds using default_level for
        // all behaviors"), and one that cannot judge without its state fails under
        // its `on_error`. A call self-protection refuses will not run: no context
        // records it.
        if (context && (scope.state_lost || scope.protected))
            || (self.cut && guardrail.flags.is_empty())
        {
            return run;
        }
        if let Some(why) = self.failed_requirement(scope, guardrail) {
            run.verdict = "deny".to_owned();
            run.refuses = gated(&mut self.decision, &guardrail.name, gate, |d| {
                record_verdict(d, &guardrail.name, Judged::from(wit::Verdict::Deny(why)))
            });
            self.cut_if_refused(scope, &run);
            return run;
        }
        if self.held_at_stop(scope, guardrail, reads_cycle) {
            run.verdict = "held".to_owned();
            return run;
        }
        if scope.deadline.left().is_zero() {
            if context {
                eprintln!(
                    "sandrail: context '{}' not run: {PAST_DEADLINE}; it records nothing for this event",
                    guardrail.name
                );
                return run;
            }
            run.verdict = "not-run".to_owned();
            run.reason = Some(PAST_DEADLINE.to_owned());
            run.refuses = gated(&mut self.decision, &guardrail.name, gate, |d| {
                could_not_judge(
                    d,
                    guardrail,
                    Stage::NotRun,
                    PAST_DEADLINE,
                    "sandrail's deadline passed",
                )
            });
            self.cut_if_refused(scope, &run);
            return run;
        }
        let mut keyspace = Keyspace::new(
            &guardrail.name,
            guardrail.requires.clone(),
            guardrail.limits.state_bytes,
        )
        .with_flags(guardrail.flags.clone(), scope.now)
        .with_escalation(guardrail.enforcement.is_some())
        .with_cycle(
            scope.config.required_contexts(guardrail),
            scope.turn_id.clone(),
        );
        match self.txn.take() {
            Some(t) => keyspace = keyspace.with_txn(t),
            None => keyspace.set_unavailable(self.unavailable.clone()),
        }
        let mut event = scope.base_event.clone();
        event.config = guardrail.config.to_string();
        let call = Call {
            guardrail,
            component,
            keyspace,
            event,
        };
        if context {
            self.observe(scope, runtime, call, run)
        } else {
            self.judge(scope, runtime, call, run)
        }
    }

    /// An enforced refusal ends the chain, on an event that can be refused.
    /// A refusal cuts the chain; a question to the user does not: a guardrail
    /// after it may refuse outright, and then the user is not asked at all (one
    /// approval must not let through what another rule refuses).
    fn cut_if_refused(&mut self, scope: &Scope, run: &GuardrailRun) {
        if run.refuses
            && run.gate == Gate::Enforce
            && protocol::can_refuse(scope.input.kind)
            && !self.decision.ask
        {
            self.cut = true;
        }
    }

    /// At a Stop, why this gate refuses without running: a context it requires
    /// failed during the cycle.
    fn failed_requirement(&mut self, scope: &Scope, guardrail: &Guardrail) -> Option<String> {
        let t = self.txn.as_mut().filter(|_| scope.stopping && !self.cut)?;
        crate::cycle::failed_requirement(t, scope.config, guardrail).unwrap_or_else(|e| {
            eprintln!(
                "sandrail: the cycle cannot be read: {e}; '{}' runs as if its contexts had recorded",
                guardrail.name
            );
            None
        })
    }

    /// At a Stop, whether this gate is held: a context it requires has not entered
    /// during the cycle, or nothing happened since the last accepted Stop.
    fn held_at_stop(&self, scope: &Scope, guardrail: &Guardrail, reads_cycle: bool) -> bool {
        let Some(t) = self.txn.as_ref().filter(|_| scope.stopping) else {
            return false;
        };
        match crate::cycle::held_at_stop(t, scope.config, guardrail, reads_cycle) {
            Ok(None) => false,
            Ok(Some(why)) => {
                if crate::debug_logging() {
                    eprintln!("sandrail: [{}] not run at this Stop: {why}", guardrail.name);
                }
                true
            }
            Err(e) => {
                eprintln!(
                    "sandrail: the cycle cannot be read: {e}; '{}' runs as if its contexts had entered",
                    guardrail.name
                );
                false
            }
        }
    }

    /// A context observes the event and records its transition; it never refuses.
    fn observe(
        &mut self,
        scope: &Scope,
        runtime: &Runtime,
        call: Call,
        mut run: GuardrailRun,
    ) -> GuardrailRun {
        let Call {
            guardrail,
            component,
            keyspace,
            event,
        } = call;
        let payload = keyspace_context_payload(&keyspace, &guardrail.name);
        let (limits, cut_short) = scope.limits_of(guardrail);
        let started = std::time::Instant::now();
        let outcome = runtime.run_context(
            component,
            &guardrail.name,
            runtime::ContextCall::Observe {
                event: &event,
                payload: payload.as_deref(),
            },
            keyspace,
            &guardrail.data,
            limits,
        );
        run.us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        run.exceeded = exceeded(&outcome.exceeded, cut_short);
        let ok = outcome.result.is_ok();
        let finished = outcome.keyspace.finish_keeping(ok && !self.cut, ok);
        let who = format!("context '{}'", guardrail.name);
        self.take_back(finished, scope.config, &who);
        run.verdict = match outcome.result {
            Ok(runtime::ContextAnswer::Transition(transition)) if !self.cut => {
                transit(&mut self.txn, &guardrail.name, transition, scope.turn)
            }
            Ok(_) => "skipped".to_owned(),
            Err(e) => {
                // A context never refuses: what it could not record is lost,
                // and the gates that need it refuse a claim they cannot check.
                let why = if crate::debug_logging() {
                    e.to_string()
                } else {
                    e.brief()
                };
                eprintln!(
                    "sandrail: context '{}' failed: {why}; it records nothing for this event, and the gates requiring it refuse this cycle's Stop",
                    guardrail.name
                );
                if let Some(t) = self.txn.as_mut()
                    && let Err(e) =
                        crate::cycle::record_context_failure(t, &guardrail.name, &e.brief())
                {
                    eprintln!(
                        "sandrail: the failure of context '{}' could not be recorded: {e}",
                        guardrail.name
                    );
                }
                "failed".to_owned()
            }
        };
        run
    }

    /// A gate judges the event; its verdict, escalated by its rule's level where
    /// it has `enforcement`, goes into the decision under its gate mode.
    fn judge(
        &mut self,
        scope: &Scope,
        runtime: &Runtime,
        call: Call,
        mut run: GuardrailRun,
    ) -> GuardrailRun {
        let Call {
            guardrail,
            component,
            keyspace,
            event,
        } = call;
        let (limits, cut_short) = scope.limits_of(guardrail);
        let started = std::time::Instant::now();
        let outcome = runtime.run(
            component,
            &guardrail.name,
            &event,
            keyspace,
            &guardrail.data,
            limits,
        );
        run.us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        run.exceeded = exceeded(&outcome.exceeded, cut_short);
        let verdict = outcome
            .result
            .map_err(|e| match e {
                RunError::Timeout(_) if cut_short => Failure::PastDeadline,
                e => Failure::Run(e),
            })
            .and_then(|v| check_verdict(v).map_err(Failure::Malformed));
        let finished = if self.cut {
            outcome.keyspace.finish_keeping(false, verdict.is_ok())
        } else {
            outcome.keyspace.finish(verdict.is_ok())
        };
        let who = format!("guardrail '{}'", guardrail.name);
        self.take_back(finished, scope.config, &who);
        if self.cut {
            return run;
        }
        let gate = run.gate;
        match verdict {
            Ok(verdict) => {
                match &verdict {
                    wit::Verdict::Pass => run.verdict = "pass".to_owned(),
                    wit::Verdict::Note(_) => run.verdict = "note".to_owned(),
                    wit::Verdict::Deny(_) => run.verdict = "deny".to_owned(),
                    wit::Verdict::Violation(v) => {
                        run.verdict = "violation".to_owned();
                        run.rule = Some(v.rule.clone());
                    }
                }
                let verdict = self.escalated(scope, guardrail, verdict);
                if let Judged::Escalated { level, .. } = &verdict {
                    run.level = Some(level.name().to_owned());
                }
                run.refuses = gated(&mut self.decision, &guardrail.name, gate, |d| {
                    record_verdict(d, &guardrail.name, verdict)
                });
            }
            Err(failure) => {
                run.verdict = "failed".to_owned();
                run.reason = Some(failure.brief());
                // One line on stderr; wasmtime's whole account (a trap's
                // backtrace) only under SANDRAIL_LOG=debug.
                let why = if crate::debug_logging() {
                    failure.to_string()
                } else {
                    failure.brief()
                };
                run.refuses = gated(&mut self.decision, &guardrail.name, gate, |d| {
                    could_not_judge(d, guardrail, Stage::Failed, &why, &failure.brief())
                });
            }
        }
        self.cut_if_refused(scope, &run);
        run
    }

    /// A violation of a rule with `enforcement` answers at the level its counter
    /// reached; any other verdict as it is (a refusal noted for counting).
    fn escalated(&mut self, scope: &Scope, guardrail: &Guardrail, verdict: wit::Verdict) -> Judged {
        match (verdict, &guardrail.enforcement) {
            (wit::Verdict::Violation(v), Some(enforcement)) => {
                let asks = enforcement.soft_block == SoftBlock::Ask;
                let occurrence = Occurrence {
                    tool: scope.input.tool_name.as_deref(),
                    input_hash: scope.input_hash.as_deref(),
                    now: scope.now,
                    override_window: scope.config.override_window,
                    ask_for: scope
                        .tool_use_id
                        .filter(|_| asks && scope.input_hash.is_some()),
                    asks,
                };
                escalate(
                    &mut self.txn,
                    guardrail,
                    enforcement,
                    v,
                    occurrence,
                    &mut self.overrides,
                )
            }
            (verdict, _) => {
                if let Some(rule) = refused_rule(&verdict) {
                    self.plain_refusals.push((guardrail.name.clone(), rule));
                }
                Judged::from(verdict)
            }
        }
    }

    /// Takes the event's transaction back from the keyspace `who` ran with (see
    /// [`take_back`]).
    fn take_back(
        &mut self,
        finished: Result<Option<StateTxn>, StoreError>,
        config: &Config,
        who: &str,
    ) {
        if let Some(why) = take_back(finished, &mut self.txn, &mut self.decision, config, who) {
            self.unavailable = why;
        }
    }
}

/// Takes the event's transaction back from the keyspace `who` (a guardrail or a
/// context) ran with. When its writes could not be applied the event's state is
/// lost: stderr says so and the failure policy decides; the answer is why the
/// guardrails still to run have no state.
fn take_back(
    finished: Result<Option<StateTxn>, StoreError>,
    txn: &mut Option<StateTxn>,
    decision: &mut Decision,
    config: &Config,
    who: &str,
) -> Option<String> {
    match finished {
        Ok(t) => {
            *txn = t;
            None
        }
        Err(e) => {
            let why = format!("the state of this event could not be saved (at {who}): {e}");
            report_lost_state(decision, config, &why);
            Some(format!("the state store failed during this event: {e}"))
        }
    }
}

/// A context's payload while it is active, as its keyspace's transaction holds it.
fn keyspace_context_payload(keyspace: &Keyspace, name: &str) -> Option<String> {
    keyspace
        .context_record(name)
        .filter(|record| record.active)
        .and_then(|record| record.payload)
}

/// Applies a context's transition; returns the receipt's verdict for it.
fn transit(
    txn: &mut Option<StateTxn>,
    name: &str,
    transition: runtime::Transition,
    turn: Option<&transcript::Turn>,
) -> String {
    let Some(t) = txn.as_mut() else {
        eprintln!("sandrail: context '{name}' could not record its transition: the state was lost");
        return "failed".to_owned();
    };
    match crate::cycle::apply_transition(t, name, transition, turn) {
        Ok(verdict) => verdict.to_owned(),
        Err(why) => {
            eprintln!("sandrail: context '{name}' could not record its transition: {why}");
            "failed".to_owned()
        }
    }
}

/// Adds the `session` and `case` namespaces from the session's state. Without the
/// state they stay absent, so rules that read them fail rather than pass.
fn add_costly_facts(
    facts: &mut crate::facts::Facts,
    txn: Option<&StateTxn>,
    config: &Config,
    keeps_session: bool,
    keeps_case: bool,
) -> Option<SessionFacts> {
    let kept = match txn?.session_facts() {
        Ok(kept) => kept,
        Err(e) => {
            eprintln!(
                "sandrail: the session's counters cannot be read: {e}; session and case facts are absent"
            );
            return None;
        }
    };
    facts.add_kept(&kept, config.mandate.as_ref(), keeps_session, keeps_case);
    Some(kept)
}

/// Advances the session's counters for a tool call (a refused one moves only
/// `refused_calls`) and remembers the case it touched.
fn advance_session(
    txn: &mut Option<StateTxn>,
    kept: Option<SessionFacts>,
    facts: &crate::facts::Facts,
    decision: &Decision,
    counting: bool,
    config: &Config,
) {
    let (Some(t), Some(mut kept), Some(tool), true) = (txn.as_mut(), kept, facts.tool(), counting)
    else {
        return;
    };
    let case = facts.case_of_this_call(config.mandate.as_ref());
    let refused = !decision.refusals.is_empty();
    kept.advance(tool, case.is_some(), refused);
    if !refused && case.is_some() {
        kept.last_case = case;
    }
    if let Err(e) = t.set_session_facts(&kept) {
        eprintln!("sandrail: the session's counters could not be advanced: {e}");
    }
}

/// Puts overrides on the project's trail.
fn write_trail(
    input: &HookInput,
    dirs: &Dirs,
    now: u64,
    overrides: Vec<(String, String, u64)>,
    detected: audit::Detected,
) {
    if overrides.is_empty() {
        return;
    }
    let records: Vec<audit::Override> = overrides
        .into_iter()
        .map(|(guardrail, rule, counter)| audit::Override {
            time: crate::clock::rfc3339(now),
            session: input.session_id.clone(),
            guardrail,
            rule,
            tool: input.tool_name.clone(),
            summary: audit::Override::summarise(input.tool_input.as_deref().unwrap_or("")),
            counter,
            detected,
            reason: String::new(),
        })
        .collect();
    match &dirs.project {
        Some(project) => {
            if let Err(e) = audit::append(project, &records) {
                eprintln!("sandrail: {e}");
            }
        }
        None => eprintln!(
            "sandrail: no project directory: {} override(s) not written to the trail",
            records.len()
        ),
    }
}

/// A PostToolUse of a call a soft_block asked the user about: the user let it run.
/// Each such pending block becomes an override recorded as certain. Only configs
/// with a guardrail whose soft_block asks pay for the look.
fn confirm_asked(input: &HookInput, config: &Config, dirs: &Dirs) {
    let asks = config.guardrails.iter().any(|g| {
        g.enforcement
            .as_ref()
            .is_some_and(|e| e.soft_block == SoftBlock::Ask)
    });
    let tool_use_id = input.fields.get("tool_use_id").and_then(|v| v.as_str());
    let (true, Some(tool_use_id), Some(state)) = (
        asks && input.kind == crate::event::EventKind::PostToolUse,
        tool_use_id,
        dirs.state.as_deref(),
    ) else {
        return;
    };
    let confirmed = SessionStore::open_existing(state, &input.session_id, config.lock_timeout)
        .and_then(|store| {
            let Some(store) = store else {
                return Ok(Vec::new());
            };
            let mut txn = store.begin()?;
            let confirmed = txn.confirm_asked(tool_use_id)?;
            txn.commit()?;
            Ok(confirmed)
        });
    match confirmed {
        Ok(confirmed) => write_trail(
            input,
            dirs,
            crate::clock::now(),
            confirmed,
            audit::Detected::Confirmed,
        ),
        Err(e) => eprintln!("sandrail: cannot confirm an approved call: {e}"),
    }
}

/// What the guardrails recorded for this event is lost: say so, and let the failure
/// policy decide whether the event may still proceed.
pub fn report_lost_state(decision: &mut Decision, config: &Config, why: &str) {
    eprintln!(
        "sandrail: {why}; what the guardrails recorded for this event is lost{}",
        match config.on_error {
            OnError::Allow => " (on_error = \"allow\": the event proceeds as decided)",
            OnError::Deny => " (on_error = \"deny\": the event is refused)",
        }
    );
    host_failure(decision, config, why);
}

/// A guardrail that was not run (unreadable, not matching its pin, not loadable):
/// its failure policy decides, under its gate mode, and the receipt says so.
fn not_run(
    decision: &mut Decision,
    config: &Config,
    guardrail: &Guardrail,
    sha256: Option<&str>,
    why: &str,
) {
    let gate = config.gate_of(guardrail);
    let refuses = gated(decision, &guardrail.name, gate, |d| {
        could_not_judge(
            d,
            guardrail,
            Stage::NotRun,
            why,
            &guest_text::one_line(why, runtime::BRIEF_CHARS),
        )
    });
    decision.trace.guardrails.push(GuardrailRun {
        name: guardrail.name.clone(),
        sha256: sha256.map(str::to_owned),
        verdict: "not-run".to_owned(),
        refuses,
        gate,
        reason: Some(guest_text::one_line(why, runtime::BRIEF_CHARS)),
        ..GuardrailRun::default()
    });
}

/// Applies a guardrail's answer (`answer` adds it to the decision it is given and
/// says whether it refuses) under its gate mode: enforced, it goes into the
/// decision; observed, its notes do, and what it would have refused only to
/// stderr and the receipt. Returns whether the answer refuses.
fn gated(
    decision: &mut Decision,
    name: &str,
    gate: Gate,
    answer: impl FnOnce(&mut Decision) -> bool,
) -> bool {
    match gate {
        Gate::Enforce => answer(decision),
        Gate::Observe => {
            let mut shadow = Decision::default();
            let refuses = answer(&mut shadow);
            for refusal in &shadow.refusals {
                eprintln!("sandrail: [{name}] observe mode, not refused: {refusal}");
            }
            decision.notes.append(&mut shadow.notes);
            if refuses {
                decision.trace.observed_refusals += 1;
            }
            refuses
        }
    }
}

/// Where a guardrail that could not judge gave out.
enum Stage {
    /// Missing, unreadable, not matching its pin, or not loadable.
    NotRun,
    /// Crashed, ran out of time or memory, or answered a malformed verdict.
    Failed,
}

/// A guardrail that could not judge: stderr names it and the cause in full
/// (`why`), the agent reads it in one line (`brief`: a trap without its
/// backtrace), and its `on_error` decides. Returns whether the event is refused
/// for it.
fn could_not_judge(
    decision: &mut Decision,
    guardrail: &Guardrail,
    stage: Stage,
    why: &str,
    brief: &str,
) -> bool {
    let name = &guardrail.name;
    match (guardrail.on_error, stage) {
        (OnError::Allow, Stage::NotRun) => {
            eprintln!("sandrail: guardrail '{name}' not run: {why}");
            false
        }
        (OnError::Allow, Stage::Failed) => {
            eprintln!(
                "sandrail: guardrail '{name}' failed and was skipped (the event proceeds): {why}"
            );
            false
        }
        (OnError::Deny, _) => {
            eprintln!(
                "sandrail: guardrail '{name}' could not judge: {why}; the event is refused (its on_error = \"deny\")"
            );
            decision.ask = false;
            decision.refusals.push(guest_text::attributed(
                HOST_AUTHOR,
                &format!(
                    "Refused because guardrail '{name}' could not judge this call ({brief}) and its on_error is \"deny\". Ask the user to look at sandrail's stderr."
                ),
            ));
            true
        }
    }
}

/// Why the call must not run because it would change what sandrail depends on.
fn self_protection(
    input: &HookInput,
    config: &Config,
    dirs: &Dirs,
    facts: &crate::facts::Facts,
) -> Option<String> {
    let changes = &facts.changes;
    if changes.paths.is_empty() && changes.sandrail_command.is_none() {
        return None;
    }
    let cwd = input.cwd.as_deref().map(Path::new);
    let places = crate::protect::Places {
        cwd,
        project: dirs.project.as_deref(),
        state: dirs.state.as_deref(),
        cache: dirs.cache.as_deref(),
    };
    crate::protect::Protected::new(config, &places).refusal(changes, cwd)
}

/// Under `on_error = "deny"`, refuses the event because sandrail itself failed.
pub fn host_failure(decision: &mut Decision, config: &Config, why: &str) {
    if config.on_error == OnError::Deny {
        // Not a question for the user: a refusal.
        decision.ask = false;
        decision.trace.host_refused = true;
        decision.refusals.push(guest_text::attributed(
            HOST_AUTHOR,
            &format!(
                "Refused because sandrail failed ({why}) and its config says on_error = \"deny\". Ask the user to look at sandrail's stderr."
            ),
        ));
    }
}

/// How sandrail signs what it says itself; no guardrail may take the name.
pub const HOST_AUTHOR: &str = "[sandrail]";

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    Run(RunError),
    #[error("malformed verdict: {0}")]
    Malformed(String),
    #[error("stopped: {PAST_DEADLINE}")]
    PastDeadline,
}

impl Failure {
    /// In one short line, for the agent.
    fn brief(&self) -> String {
        match self {
            Failure::Run(e) => e.brief(),
            other => guest_text::one_line(&other.to_string(), runtime::BRIEF_CHARS),
        }
    }
}

/// The limits a run reached, by their config names; one stopped by the event's
/// deadline rather than its own `timeout_ms` reached `deadline`.
fn exceeded(reached: &[&str], cut_short: bool) -> Vec<String> {
    reached
        .iter()
        .map(|limit| match *limit {
            "timeout_ms" if cut_short => "deadline".to_owned(),
            other => other.to_owned(),
        })
        .collect()
}

/// Why this event has no state.
#[derive(Debug, thiserror::Error)]
enum NoState {
    #[error("no state directory (set SANDRAIL_STATE_DIR or HOME)")]
    NoDirectory,
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl NoState {
    fn is_lock_timeout(&self) -> bool {
        matches!(
            self,
            NoState::Store(StoreError::LockTimeout(_) | StoreError::LockWaitedOut(_))
        )
    }

    fn is_tampering(&self) -> bool {
        matches!(self, NoState::Store(StoreError::LockHeld(_)))
    }
}

/// Takes the session's state and begins the event's transaction. A database
/// that is not what the last committing event left (corrupt, vanished, emptied,
/// rolled back, replaced) is reported to the person, and its counters are
/// restored from what the session's receipts recorded.
fn begin_state(
    dir: Option<&Path>,
    session: &str,
    wait: LockWait,
    alerts: &mut Vec<String>,
) -> Result<StateTxn, NoState> {
    let dir = dir.ok_or(NoState::NoDirectory)?;
    let store = SessionStore::open(dir, session, wait)?;
    // Events judged without the state while it stayed busy: said once, here,
    // with how many there were.
    let unheld = crate::store::take_unheld(dir, session);
    if unheld > 0 {
        let alert = format!(
            "sandrail: {unheld} event(s) of this session were judged without its state, because it stayed busy past the lock timeout: their violations were not counted and answered at their rule's default level"
        );
        eprintln!("{alert}");
        alerts.push(alert);
    }
    let mut lost = None;
    if let Some((aside, why)) = store.moved_aside() {
        eprintln!(
            "sandrail: this session's state database was unusable ({why}); it was moved to {} and the session starts afresh",
            aside.display()
        );
        lost = Some(format!(
            "it was unusable ({why}) and was moved to {}",
            aside.display()
        ));
    }
    if let Some(why) = store.tampered() {
        lost = Some(why.to_owned());
    }
    if crate::debug_logging() {
        eprintln!(
            "sandrail: waited {:.1} ms for this session's state",
            store.lock_waited().as_secs_f64() * 1000.0
        );
    }
    let mut txn = store.begin()?;
    if let Some(why) = lost {
        txn.reseal();
        let restored = restore_counters(&mut txn, dir, session);
        let alert = format!(
            "sandrail: this session's state database is not what its last event left: {why}. {restored} What its guardrails kept in their own keyspaces is lost."
        );
        eprintln!("{alert}");
        alerts.push(alert);
    }
    Ok(txn)
}

/// Puts back the rule counters and levels the session's receipts recorded;
/// says what was done.
fn restore_counters(txn: &mut StateTxn, dir: &Path, session: &str) -> String {
    let counted = match crate::receipts::counted_violations(dir, session) {
        Ok(counted) => counted,
        Err(e) => return format!("Its counters cannot be restored: {e}."),
    };
    let records: Vec<crate::store::RuleRecord> = counted
        .into_iter()
        .map(|c| crate::store::RuleRecord {
            guardrail: c.guardrail,
            rule: c.rule,
            state: crate::store::RuleState {
                counter: c.counter,
                level: c.level,
                ..crate::store::RuleState::default()
            },
        })
        .collect();
    match txn.inherit_rules(&records) {
        Ok(0) => "Its receipts record no counted violation to restore.".to_owned(),
        Ok(n) => format!("The counters and levels of {n} rule(s) were restored from its receipts."),
        Err(e) => format!("Its counters cannot be restored: {e}."),
    }
}

/// The parts of the event every guardrail shares.
fn base_event(
    input: &HookInput,
    facts: &crate::facts::Facts,
    turn: Option<transcript::Turn>,
) -> wit::Event {
    wit::Event {
        kind: input.kind.into(),
        session_id: input.session_id.clone(),
        turn: turn.map(|t| wit::Turn {
            id: t.id(),
            count: t.count,
            uuid: t.uuid,
        }),
        tool_name: input.tool_name.clone(),
        tool_input: input.tool_input.clone(),
        payload: input.raw.clone(),
        config: String::new(),
        facts: facts.to_json(),
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

/// A verdict after escalation: what the guardrail's answer comes to.
enum Judged {
    Pass,
    Note(String),
    /// A deny, or a violation without enforcement: refuses outright.
    Refuse {
        author: String,
        text: String,
    },
    /// A violation with enforcement, at its level; `text` is `None` for silent.
    Escalated {
        author: String,
        level: Level,
        text: Option<String>,
        /// A soft_block put to the user as a question.
        ask: bool,
    },
}

impl From<wit::Verdict> for Judged {
    fn from(verdict: wit::Verdict) -> Self {
        match verdict {
            wit::Verdict::Pass => Judged::Pass,
            wit::Verdict::Note(text) => Judged::Note(text),
            wit::Verdict::Deny(text) => Judged::Refuse {
                author: String::new(),
                text,
            },
            wit::Verdict::Violation(v) => Judged::Refuse {
                author: format!("/{}", v.rule),
                text: v.message,
            },
        }
    }
}

/// Counts a violation of a guardrail with enforcement and resolves its level.
/// Without the session's state (the lock timed out) nothing is counted and the
/// rule answers at its default level, as the first violation of a session would
/// before any threshold.
fn escalate(
    txn: &mut Option<StateTxn>,
    guardrail: &Guardrail,
    enforcement: &Enforcement,
    violation: wit::Violation,
    occurrence: Occurrence<'_>,
    overrides: &mut Vec<(String, String, u64)>,
) -> Judged {
    let ladder = enforcement.ladder(&violation.rule);
    let tool = occurrence.tool;
    let escalated = match txn.as_mut() {
        Some(txn) => match txn.escalate(&guardrail.name, &violation.rule, ladder, occurrence) {
            Ok(Escalation::Counted(escalated)) => Some(escalated),
            Ok(Escalation::Overridden { counter }) => {
                overrides.push((guardrail.name.clone(), violation.rule, counter));
                return Judged::Pass;
            }
            Err(e) => {
                eprintln!(
                    "sandrail: cannot count a violation of '{}/{}': {e}; it answers at its default level",
                    guardrail.name, violation.rule
                );
                None
            }
        },
        None => None,
    };
    let escalated = escalated.unwrap_or(Escalated {
        counter: 0,
        level: ladder.default_level,
        next_threshold: ladder.next_threshold(0),
    });
    let text = escalation::render(
        &enforcement.templates,
        &escalation::Vars {
            guardrail: &guardrail.name,
            rule: &violation.rule,
            message: &violation.message,
            tool_name: tool.unwrap_or(""),
            escalated: &escalated,
        },
    );
    Judged::Escalated {
        author: format!("/{}", violation.rule),
        level: escalated.level,
        text,
        ask: escalated.level == Level::SoftBlock && occurrence.ask_for.is_some(),
    }
}

/// The first 40 hex digits of the sha256 of a tool input in canonical form (keys
/// sorted, no spaces), so the same call is recognised whatever its key order. An
/// input too deep to parse is fingerprinted as it was sent.
fn input_fingerprint(tool_input: &str) -> String {
    let canonical = serde_json::from_str::<serde_json::Value>(tool_input)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| tool_input.to_owned());
    crate::sha256_hex(canonical.as_bytes())[..40].to_owned()
}

/// Adds a verdict to the decision; true when it refuses the event.
/// The rule a refusal by a guardrail without `enforcement` is counted under: its
/// violation's rule, or `deny`.
fn refused_rule(verdict: &wit::Verdict) -> Option<String> {
    match verdict {
        wit::Verdict::Violation(v) => Some(v.rule.clone()),
        wit::Verdict::Deny(_) => Some("deny".to_owned()),
        wit::Verdict::Pass | wit::Verdict::Note(_) => None,
    }
}

/// Counts the refusals of guardrails without `enforcement` in the session's rule
/// records, so `sandrail status` shows them (escalating rules count in
/// `escalate`). An event that took no state for its guardrails opens it only
/// now, when something was refused: most events refuse nothing and stay off the
/// database.
fn count_plain_refusals(
    txn: &mut Option<StateTxn>,
    refusals: &[(String, String)],
    tried_state: bool,
    input: &HookInput,
    dirs: &Dirs,
    config: &Config,
    decision: &mut Decision,
) {
    if refusals.is_empty() {
        return;
    }
    if txn.is_none() && !tried_state {
        *txn = begin_state(
            dirs.state.as_deref(),
            &input.session_id,
            config.lock_timeout.into(),
            &mut decision.alerts,
        )
        .ok();
    }
    let Some(t) = txn.as_mut() else {
        return;
    };
    let now = crate::clock::now();
    for (guardrail, rule) in refusals {
        if let Err(e) = t.count_refusal(guardrail, rule, input.tool_name.as_deref(), now) {
            eprintln!("sandrail: [{guardrail}] this refusal could not be counted: {e}");
        }
    }
}

fn record_verdict(decision: &mut Decision, guardrail: &str, judged: Judged) -> bool {
    match judged {
        Judged::Pass => false,
        Judged::Note(text) => {
            let author = format!("[{guardrail}]");
            decision.notes.push(guest_text::attributed(&author, &text));
            false
        }
        Judged::Refuse { author, text } => {
            let author = format!("[{guardrail}{author}]");
            // A refusal outright is not put to the user, whatever asked before.
            decision.ask = false;
            decision
                .refusals
                .push(guest_text::attributed(&author, &text));
            true
        }
        Judged::Escalated {
            author,
            level,
            text,
            ask,
        } => {
            let Some(text) = text else {
                return false;
            };
            let text = guest_text::attributed(&format!("[{guardrail}{author}]"), &text);
            if level.blocks() {
                // Asked only while every refusal so far is a question too.
                decision.ask = ask && (decision.refusals.is_empty() || decision.ask);
                decision.refusals.push(text);
                true
            } else {
                decision.notes.push(text);
                false
            }
        }
    }
}
