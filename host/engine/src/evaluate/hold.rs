//! Holding the session's state for the event: its lock, within the deadline,
//! and what the event does when the state cannot be had.

use super::*;

/// What holding the session left.
pub(super) struct Held {
    pub(super) txn: Option<StateTxn>,
    /// Why the state cannot be had, for the guardrails that ask for it.
    pub(super) unavailable: String,
}

impl Held {
    pub(super) fn not_needed() -> Held {
        Held {
            txn: None,
            unavailable: String::from("no guardrail of this event imports state"),
        }
    }
}

/// Stage: hold the session. Its lock and a write transaction on its state; when
/// they cannot be had, why, said on stderr, and what the event does without
/// them (`stateful` names the guardrails that keep state).
pub(super) fn hold(
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

/// Why this event has no state.
#[derive(Debug, thiserror::Error)]
pub(super) enum NoState {
    #[error("no state directory (set SANDRAIL_STATE_DIR or HOME)")]
    NoDirectory,
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl NoState {
    pub(super) fn is_lock_timeout(&self) -> bool {
        matches!(
            self,
            NoState::Store(StoreError::LockTimeout(_) | StoreError::LockWaitedOut(_))
        )
    }

    pub(super) fn is_tampering(&self) -> bool {
        matches!(self, NoState::Store(StoreError::LockHeld(_)))
    }
}

/// Takes the session's state and begins the event's transaction. A database
/// that is not what the last committing event left (corrupt, vanished, emptied,
/// rolled back, replaced) is reported to the person, and its counters are
/// restored from what the session's receipts recorded.
pub(super) fn begin_state(
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
pub(super) fn restore_counters(txn: &mut StateTxn, dir: &Path, session: &str) -> String {
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
