//! Judging with the session held: what the event will need worked out, its
//! components made ready, the session's state held, the call recorded, the
//! chain run, a Stop settled and the session's counters advanced, all in the
//! event's one state transaction, handed back unsaved.

use std::collections::BTreeSet;

use super::*;

/// What every stage after selection reads: the event, where it is judged, and
/// what was worked out before the session is held.
pub(super) struct Event<'a> {
    pub(super) input: &'a HookInput,
    pub(super) config: &'a Config,
    pub(super) dirs: &'a Dirs,
    pub(super) engine: &'a Engine,
    pub(super) deadline: Deadline,
    pub(super) duties: Duties,
    /// The costly facts some guardrail reads ([`runtime::kept_facts`]).
    pub(super) kept: &'a BTreeSet<Costly>,
    pub(super) turn: Option<transcript::Turn>,
    /// Self-protection refuses the call (its refusal is added afterwards).
    pub(super) protected: bool,
}

/// Runs the event's guardrails (and its other duties) with the session held,
/// and hands back the decision and the event's state, unsaved.
pub(super) fn judge(
    event: &Event,
    prepared: &[(&Guardrail, Prepared)],
    mut facts: crate::facts::Facts,
    mut decision: Decision,
) -> (Decision, Unsaved) {
    let Event {
        input,
        config,
        dirs,
        engine,
        deadline,
        duties,
        kept,
        ref turn,
        protected,
    } = *event;
    let Duties {
        counting,
        recording,
        stopping,
        ..
    } = duties;
    let keeps_session = kept.contains(&Costly::Session);
    let keeps_case = kept.contains(&Costly::Case);
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
        match make_ready(engine, dirs, prepared, &leaving, config, &mut decision) {
            Some(made) => ready = Some(made),
            None => return (decision, Unsaved::default()),
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
        return (decision, Unsaved::of(txn, Vec::new(), now));
    }

    let (runtime, loaded) = match ready {
        Some(made) => made,
        None => match make_ready(engine, dirs, prepared, &leaving, config, &mut decision) {
            Some(made) => made,
            None => return (decision, Unsaved::default()),
        },
    };

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
        protected,
        deadline,
    };
    let mut chain = Chain::start(decision, txn, unavailable, input.kind);
    chain.run_all(&scope, &runtime, &loaded);
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
}
