//! What is answered when a guardrail or sandrail itself cannot judge: each by
//! its `on_error`, reported by name.

use super::*;

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
pub(super) fn not_run(
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
pub(super) fn gated(
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
pub(super) enum Stage {
    /// Missing, unreadable, not matching its pin, or not loadable.
    NotRun,
    /// Crashed, ran out of time or memory, or answered a malformed verdict.
    Failed,
}

/// A guardrail that could not judge: stderr names it and the cause in full
/// (`why`), the agent reads it in one line (`brief`: a trap without its
/// backtrace), and its `on_error` decides. Returns whether the event is refused
/// for it.
pub(super) fn could_not_judge(
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

#[derive(Debug, thiserror::Error)]
pub(super) enum Failure {
    #[error("{0}")]
    Run(RunError),
    #[error("malformed verdict: {0}")]
    Malformed(String),
    #[error("stopped: {PAST_DEADLINE}")]
    PastDeadline,
}

impl Failure {
    /// In one short line, for the agent.
    pub(super) fn brief(&self) -> String {
        match self {
            Failure::Run(e) => e.brief(),
            other => guest_text::one_line(&other.to_string(), runtime::BRIEF_CHARS),
        }
    }
}

/// The limits a run reached, by their config names; one stopped by the event's
/// deadline rather than its own `timeout_ms` reached `deadline`.
pub(super) fn exceeded(reached: &[&str], cut_short: bool) -> Vec<String> {
    reached
        .iter()
        .map(|limit| match *limit {
            "timeout_ms" if cut_short => "deadline".to_owned(),
            other => other.to_owned(),
        })
        .collect()
}
