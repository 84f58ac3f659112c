//! The hook's own deadline: an answer before the harness gives up.
//!
//! Every harness lets a tool call through when its hook runs past the hook's
//! timeout (Claude Code, Codex, Gemini CLI and Copilot always; Cursor unless the
//! hook is `failClosed`). So what one event may cost is bounded twice:
//!
//! - **over the policy**: the deadlines of everything that can run on one event —
//!   the state lock's wait and each guardrail's `timeout_ms` — must fit within
//!   sandrail's own deadline for that event, or a new session does not take the
//!   policy without a person ([`crate::policy::ratchet`]; the sums are
//!   `sandrail_policy::timeouts`');
//! - **at run time**: the hook keeps its own deadline below the harness's
//!   timeout. A guardrail that would run past it is given only the time left,
//!   and one that cannot start is answered by its `on_error`; and should
//!   anything else stall the process (a slow disk, a compile), a watchdog
//!   answers for it before the harness would give up ([`Watchdog`]).
//!
//! The harness's timeout is read from the registrations sandrail has in the
//! project's settings (the shortest, over every harness registered there), else
//! the harness's default, at a session's start, and kept with the session's
//! policy.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::config::{Config, OnError};
use crate::event::EventKind;

pub use sandrail_policy::timeouts::{DEFAULT_TIMEOUT, HookTimeouts, over_budget, worst_case};

/// The hook's deadline for one event, from the moment the process started.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// Past this no guardrail starts, and one running is stopped.
    pub cut: Instant,
}

impl Deadline {
    /// The deadline of an event of `kind` whose hook started at `started`.
    pub fn of(started: Instant, kind: EventKind, timeouts: &HookTimeouts) -> Deadline {
        Deadline {
            cut: started + timeouts.budget(kind),
        }
    }

    /// The time left, zero once it has passed.
    pub fn left(&self) -> Duration {
        self.cut.saturating_duration_since(Instant::now())
    }
}

/// What the watchdog answers for a hook that has not answered in time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// Refuse (exit 2, the reason on stderr: a refusal in every harness's
    /// dialect).
    Refuse(String),
    /// Let the event proceed, saying why on stderr.
    Proceed(String),
}

impl Fallback {
    /// What an unanswered event of `kind` falls back to under `config`: a
    /// refusal where a guardrail that can run on it fails closed (`on_error =
    /// "deny"`) or sandrail's own failures do, else it proceeds.
    pub fn under(config: &Config, kind: EventKind) -> Fallback {
        let closed: Vec<&str> = config
            .guardrails
            .iter()
            .filter(|g| g.enabled && g.events.contains(&kind) && g.on_error == OnError::Deny)
            .map(|g| g.name.as_str())
            .collect();
        let said = "sandrail: the hook did not finish judging before its deadline, below the harness's hook timeout";
        if !crate::protocol::can_refuse(kind) {
            return Fallback::Proceed(format!("{said}; {kind} cannot be refused"));
        }
        if !closed.is_empty() {
            return Fallback::Refuse(format!(
                "{said}: refused, as on_error = \"deny\" of {} says",
                closed.join(", ")
            ));
        }
        if config.on_error == OnError::Deny {
            return Fallback::Refuse(format!(
                "{said}: refused, as [settings] on_error = \"deny\" says"
            ));
        }
        Fallback::Proceed(format!(
            "{said}: it proceeds, as on_error = \"allow\" of every guardrail that could run says"
        ))
    }
}

/// A thread that answers for the hook if the hook has not answered by the
/// harness's timeout less half the margin, then ends the process.
///
/// Until the event's config is known it falls back to a refusal: nothing has
/// decided that this event may fail open.
#[derive(Debug, Clone)]
pub struct Watchdog {
    shared: Arc<(Mutex<Watch>, Condvar)>,
}

#[derive(Debug)]
struct Watch {
    started: Instant,
    /// When to answer; moved once the event's timeouts are known.
    at: Instant,
    fallback: Fallback,
    /// The hook answered (or is answering): the watchdog stands down.
    answered: bool,
}

impl Watchdog {
    /// Starts watching a hook that started at `started`, with the default
    /// timeout until [`Watchdog::watch`] says more.
    pub fn start(started: Instant) -> Watchdog {
        let at = started + HookTimeouts::default().last_moment(EventKind::PreToolUse);
        let watchdog = Watchdog {
            shared: Arc::new((
                Mutex::new(Watch {
                    started,
                    at,
                    fallback: Fallback::Refuse(
                        "sandrail: the hook did not get as far as reading its policy before its deadline: refused".to_owned(),
                    ),
                    answered: false,
                }),
                Condvar::new(),
            )),
        };
        let shared = watchdog.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("sandrail-watchdog".into())
            .spawn(move || watch(&shared));
        if let Err(e) = spawned {
            eprintln!("sandrail: cannot start the hook's watchdog: {e}");
        }
        watchdog
    }

    /// The event is known: answer at its own last moment, with `fallback`.
    pub fn watch(&self, kind: EventKind, timeouts: &HookTimeouts, fallback: Fallback) {
        let (lock, wake) = &*self.shared;
        let mut watch = lock.lock().unwrap_or_else(PoisonError::into_inner);
        watch.at = watch.started + timeouts.last_moment(kind);
        watch.fallback = fallback;
        wake.notify_all();
    }

    /// The hook is answering: the watchdog stands down. Returns false when
    /// the watchdog answered first (the process is then ending).
    pub fn answering(&self) -> bool {
        let (lock, wake) = &*self.shared;
        let mut watch = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if watch.answered {
            return false;
        }
        watch.answered = true;
        wake.notify_all();
        true
    }
}

fn watch(shared: &(Mutex<Watch>, Condvar)) {
    let (lock, wake) = shared;
    let mut watch = lock.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if watch.answered {
            return;
        }
        let left = watch.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        watch = wake
            .wait_timeout(watch, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    // The lock stays held: the hook cannot start answering now.
    watch.answered = true;
    match &watch.fallback {
        Fallback::Refuse(why) => {
            eprintln!("{why}");
            std::process::exit(2);
        }
        Fallback::Proceed(why) => {
            eprintln!("{why}");
            std::process::exit(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_falls_back_by_the_guardrails_failure_policy() {
        let closed = Config::embedded().expect("embedded");
        assert!(matches!(
            Fallback::under(&closed, EventKind::PreToolUse),
            Fallback::Refuse(why) if why.contains("destructive-commands")
        ));
        assert!(matches!(
            Fallback::under(&closed, EventKind::SessionStart),
            Fallback::Proceed(_)
        ));
    }
}
