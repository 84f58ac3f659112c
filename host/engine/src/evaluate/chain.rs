//! The chain: each guardrail judged in turn in its sandbox, its verdict checked,
//! escalated and recorded, contexts' transitions, the cut at the first refusal.

use super::*;

/// What every guardrail of one event reads: the event, and what was worked out
/// about it before the first one ran.
pub(super) struct Scope<'a> {
    pub(super) input: &'a HookInput,
    pub(super) config: &'a Config,
    pub(super) base_event: &'a wit::Event,
    pub(super) turn: Option<&'a transcript::Turn>,
    pub(super) turn_id: Option<String>,
    pub(super) now: u64,
    /// The fingerprint of a PreToolUse's input (only it can be sent again after
    /// a refusal, as an override).
    pub(super) input_hash: Option<String>,
    pub(super) tool_use_id: Option<&'a str>,
    pub(super) stopping: bool,
    /// The session's state could not be had for this event.
    pub(super) state_lost: bool,
    /// Self-protection refuses the call whatever the guardrails say.
    pub(super) protected: bool,
    /// Past this no guardrail runs ([`crate::deadline`]).
    pub(super) deadline: Deadline,
}

impl Scope<'_> {
    /// A guardrail's limits for this event: its deadline no later than the
    /// event's; and whether the event's is the nearer.
    pub(super) fn limits_of(&self, guardrail: &Guardrail) -> (crate::config::Limits, bool) {
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
pub(super) const PAST_DEADLINE: &str = "sandrail's deadline for this event came first (it answers before the harness's hook timeout would let the call through)";

/// One guardrail's call: it, its component, the keyspace it runs with and the
/// event as it sees it (with its own config).
pub(super) struct Call<'a> {
    pub(super) guardrail: &'a Guardrail,
    pub(super) component: &'a Loaded,
    pub(super) keyspace: Keyspace,
    pub(super) event: wit::Event,
}

/// What the guardrails of one event pass along as they run in turn.
pub(super) struct Chain {
    pub(super) decision: Decision,
    /// The event's transaction, lent to each guardrail's keyspace in turn.
    pub(super) txn: Option<StateTxn>,
    /// A refusal has cut the chain: later guardrails run only for their flags.
    pub(super) cut: bool,
    /// Why the guardrails still to run have no state, when they have none.
    pub(super) unavailable: String,
    /// Refusals of guardrails without `enforcement`, counted at the end.
    pub(super) plain_refusals: Vec<(String, String)>,
    /// Overrides recorded by escalation, for the trail once committed.
    pub(super) overrides: Vec<(String, String, u64)>,
}

impl Chain {
    /// The chain of an event whose decision so far is `decision`. Once a
    /// refusal cuts the chain, only guardrails that touch flags still run, and
    /// only their flag changes count: a flag records that something was
    /// attempted, whatever became of the attempt.
    pub(super) fn start(
        decision: Decision,
        txn: Option<StateTxn>,
        unavailable: String,
        kind: EventKind,
    ) -> Chain {
        let cut = !decision.refusals.is_empty() && protocol::can_refuse(kind);
        Chain {
            decision,
            txn,
            cut,
            unavailable,
            plain_refusals: Vec::new(),
            overrides: Vec::new(),
        }
    }

    /// Runs every loaded guardrail in turn, each run's receipt entry in the
    /// decision's trace.
    pub(super) fn run_all(
        &mut self,
        scope: &Scope,
        runtime: &EventRuntime,
        loaded: &[(&Guardrail, Loaded, bool)],
    ) {
        for (guardrail, component, reads_cycle) in loaded {
            let run = self.run(scope, runtime, guardrail, component, *reads_cycle);
            self.decision.trace.guardrails.push(run);
        }
    }

    /// Runs one guardrail of the event (or says why it does not run) and applies
    /// its answer; returns its receipt entry.
    pub(super) fn run(
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
    pub(super) fn cut_if_refused(&mut self, scope: &Scope, run: &GuardrailRun) {
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
    pub(super) fn failed_requirement(
        &mut self,
        scope: &Scope,
        guardrail: &Guardrail,
    ) -> Option<String> {
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
    pub(super) fn held_at_stop(
        &self,
        scope: &Scope,
        guardrail: &Guardrail,
        reads_cycle: bool,
    ) -> bool {
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
    pub(super) fn observe(
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
    pub(super) fn judge(
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
    pub(super) fn escalated(
        &mut self,
        scope: &Scope,
        guardrail: &Guardrail,
        verdict: wit::Verdict,
    ) -> Judged {
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
    pub(super) fn take_back(
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
pub(super) fn take_back(
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
pub(super) fn keyspace_context_payload(keyspace: &Keyspace, name: &str) -> Option<String> {
    keyspace
        .context_record(name)
        .filter(|record| record.active)
        .and_then(|record| record.payload)
}

/// Applies a context's transition; returns the receipt's verdict for it.
pub(super) fn transit(
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

/// Rejects verdicts the harness could not show: empty or oversized messages, and
/// rule names that are not short identifiers.
pub(super) fn check_verdict(verdict: wit::Verdict) -> Result<wit::Verdict, String> {
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
pub(super) enum Judged {
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
pub(super) fn escalate(
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

/// Adds a verdict to the decision; true when it refuses the event.
/// The rule a refusal by a guardrail without `enforcement` is counted under: its
/// violation's rule, or `deny`.
pub(super) fn refused_rule(verdict: &wit::Verdict) -> Option<String> {
    match verdict {
        wit::Verdict::Violation(v) => Some(v.rule.clone()),
        wit::Verdict::Deny(_) => Some("deny".to_owned()),
        wit::Verdict::Pass | wit::Verdict::Note(_) => None,
    }
}

pub(super) fn record_verdict(decision: &mut Decision, guardrail: &str, judged: Judged) -> bool {
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
