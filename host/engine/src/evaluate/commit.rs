//! What an event leaves to be saved: its state transaction, the session's
//! counters advanced, the plain refusals counted.

use super::*;

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
    pub(super) fn of(
        txn: Option<StateTxn>,
        overrides: Vec<(String, String, u64)>,
        now: u64,
    ) -> Unsaved {
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

/// Advances the session's counters for a tool call (a refused one moves only
/// `refused_calls`) and remembers the case it touched.
pub(super) fn advance_session(
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

/// Counts the refusals of guardrails without `enforcement` in the session's rule
/// records, so `sandrail status` shows them (escalating rules count in
/// `escalate`). An event that took no state for its guardrails opens it only
/// now, when something was refused: most events refuse nothing and stay off the
/// database.
pub(super) fn count_plain_refusals(
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
