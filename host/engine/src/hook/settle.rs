//! When an event's state and receipt are saved: before its answer (the
//! one-shot hook, whose answer then says what could not be saved), or after it
//! (`sandrail serve`, whose session's next event waits for them and hears what
//! could not be saved, as [`Owed`]).

use super::{Outcome, write_receipt};
use crate::config::Config;
use crate::engine::Engine;
use crate::evaluate::{self, Dirs};
use crate::protocol::{self, HookInput};

/// An event decided: answered already (nothing of it is left to save), or with
/// its state and receipt still to save.
pub(super) enum Decided<'e> {
    Done(Outcome),
    Unsaved(Box<UnsavedEvent<'e>>),
}

/// A decided event whose state and receipt are not saved yet.
pub(super) struct UnsavedEvent<'e> {
    pub(super) input: HookInput,
    pub(super) config: Config,
    pub(super) dirs: Dirs,
    pub(super) policy: Option<String>,
    pub(super) decision: protocol::Decision,
    pub(super) unsaved: evaluate::Unsaved,
    pub(super) engine: &'e Engine,
}

impl UnsavedEvent<'_> {
    /// The one-shot hook's order: saved, then answered, so the answer says
    /// what could not be saved.
    pub(super) fn save_then_answer(mut self: Box<Self>) -> Outcome {
        if let Err(why) = self.unsaved.save(&self.input, &self.dirs) {
            evaluate::report_lost_state(&mut self.decision, &self.config, &why);
        }
        if self.receipt_due()
            && let Err(why) = self.write_receipt()
        {
            evaluate::host_failure(&mut self.decision, &self.config, &why);
        }
        self.answer()
    }

    /// The answer to what was decided.
    pub(super) fn answer(&self) -> Outcome {
        let kind = self.input.kind;
        if !self.decision.refusals.is_empty() && !protocol::can_refuse(kind) {
            eprintln!(
                "sandrail: {kind} cannot be refused; the refusal is shown to the user instead"
            );
        }
        Outcome {
            answer: protocol::render(kind, &self.decision).map(|answer| answer.to_string()),
            ..Outcome::default()
        }
    }

    /// Whether the event leaves a receipt: a guardrail or sandrail judged it,
    /// the person was told something, or a checkpoint it called for could
    /// not be taken.
    fn receipt_due(&self) -> bool {
        !self.decision.trace.guardrails.is_empty()
            || self.decision.trace.host_refused
            || !self.decision.alerts.is_empty()
            || self.decision.trace.checkpoint_failed.is_some()
    }

    fn write_receipt(&mut self) -> Result<(), String> {
        write_receipt(
            &self.input,
            &self.config,
            &self.dirs,
            self.policy.clone(),
            &mut self.decision,
            self.engine,
        )
    }
}

/// An event answered by the server, whose state and receipt are saved next.
pub struct Unsettled<'e>(pub(super) Box<UnsavedEvent<'e>>);

impl Unsettled<'_> {
    /// Commits the event's state and writes its receipt, which records the
    /// answer given. What could not be saved is said on stderr and in the
    /// receipt, and owed to the session's next event: its answer says so, and
    /// under `on_error = "deny"` it is refused, as this one would have been
    /// had it waited.
    pub fn settle(self) -> Owed {
        let mut event = self.0;
        let mut owed = Owed::default();
        if let Err(why) = event.unsaved.save(&event.input, &event.dirs) {
            eprintln!(
                "sandrail: {why}; what the guardrails recorded for this event is lost, after its answer: the session's next event hears of it"
            );
            event.decision.alerts.push(format!("sandrail: {why}"));
            owed.failures.push(why);
        }
        let told = event.decision.alerts.len();
        if event.receipt_due() {
            if let Err(why) = event.write_receipt() {
                owed.failures.push(why);
            }
            owed.alerts.extend(event.decision.alerts.drain(told..));
        }
        owed
    }
}

/// What an event settled after its answer leaves for its session's next
/// event: failures to save it, and what the person must still hear.
#[derive(Debug, Default)]
pub struct Owed {
    failures: Vec<String>,
    alerts: Vec<String>,
}

impl Owed {
    pub fn is_empty(&self) -> bool {
        self.failures.is_empty() && self.alerts.is_empty()
    }

    /// Charges it to `decision`, the session's next event: the alerts are
    /// said, and each failure is one of sandrail's own, which `on_error` decides.
    pub(super) fn charge(self, decision: &mut protocol::Decision, config: &Config) {
        decision.alerts.extend(self.alerts);
        for why in self.failures {
            let why = format!("the session's previous event was answered, but {why}");
            eprintln!("sandrail: {why}");
            decision.alerts.push(format!("sandrail: {why}"));
            evaluate::host_failure(decision, config, &why);
        }
    }
}
