//! What one event may cost under a policy, against the harness's hook timeout:
//! the timeouts a session starts with, sandrail's budget below them, and the
//! events on which a policy could run past it (which the ratchet holds). The
//! deadline kept at run time, and the watchdog, are the engine's.

use std::collections::BTreeMap;
use std::time::Duration;

use sandrail_event::EventKind;
use serde::{Deserialize, Serialize};

use crate::config::Config;

/// How long the harness waits for sandrail's hook, by event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookTimeouts {
    /// In milliseconds, by event; an event not named has [`DEFAULT_TIMEOUT`].
    #[serde(default)]
    ms: BTreeMap<EventKind, u64>,
}

/// The timeout assumed for an event no registration or default names.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl HookTimeouts {
    /// Records `timeout` for `kind`, keeping the shorter of two.
    pub fn shorten(&mut self, kind: EventKind, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let entry = self.ms.entry(kind).or_insert(ms);
        *entry = (*entry).min(ms);
    }

    /// The harness's timeout for `kind`.
    pub fn timeout(&self, kind: EventKind) -> Duration {
        self.ms
            .get(&kind)
            .map_or(DEFAULT_TIMEOUT, |ms| Duration::from_millis(*ms))
    }

    /// How long sandrail gives itself on `kind`: the harness's timeout less a
    /// margin (a fifth of it, from half a second up to ten) for starting,
    /// answering and writing the receipt.
    pub fn budget(&self, kind: EventKind) -> Duration {
        let timeout = self.timeout(kind);
        timeout.saturating_sub(margin(timeout))
    }

    /// When the watchdog answers for a hook still running on `kind`: half way
    /// through the margin.
    pub fn last_moment(&self, kind: EventKind) -> Duration {
        let timeout = self.timeout(kind);
        timeout.saturating_sub(margin(timeout) / 2)
    }
}

fn margin(timeout: Duration) -> Duration {
    (timeout / 5).clamp(Duration::from_millis(500), Duration::from_secs(10))
}

/// What everything that can run on one event may take under `config`: the
/// state lock's wait, then each enabled guardrail subscribed to it in turn
/// (nothing, where none is).
pub fn worst_case(config: &Config, kind: EventKind) -> Duration {
    let mut subscribed = config
        .guardrails
        .iter()
        .filter(|g| g.enabled && g.events.contains(&kind))
        .peekable();
    if subscribed.peek().is_none() {
        return Duration::ZERO;
    }
    subscribed
        .map(|g| g.limits.timeout)
        .fold(config.lock_timeout, |sum, t| sum.saturating_add(t))
}

/// The events on which `config` could run past sandrail's own deadline, each
/// in a sentence; with `before`, only those on which it could run longer than
/// `before` does (a policy a person accepted as it is stays theirs). Only
/// events that can be refused count: a hook timing out on the others lets
/// nothing through that it could have stopped.
pub fn over_budget(
    config: &Config,
    before: Option<&Config>,
    timeouts: &HookTimeouts,
) -> Vec<String> {
    EventKind::ALL
        .into_iter()
        .filter(|kind| sandrail_event::can_refuse(*kind))
        .filter_map(|kind| {
            let worst = worst_case(config, kind);
            let budget = timeouts.budget(kind);
            let longer = before.is_none_or(|before| worst > worst_case(before, kind));
            (worst > budget && longer).then(|| {
                format!(
                    "what can run on one {kind} could take {} together (the lock's wait and each guardrail's timeout_ms), past the {} sandrail keeps below the harness's {} hook timeout",
                    seconds(worst),
                    seconds(budget),
                    seconds(timeouts.timeout(kind))
                )
            })
        })
        .collect()
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_keeps_a_margin_below_the_timeout() {
        let mut timeouts = HookTimeouts::default();
        assert_eq!(
            timeouts.budget(EventKind::PreToolUse),
            Duration::from_secs(50)
        );
        timeouts.shorten(EventKind::UserPromptSubmit, Duration::from_secs(30));
        timeouts.shorten(EventKind::UserPromptSubmit, Duration::from_secs(600));
        assert_eq!(
            timeouts.budget(EventKind::UserPromptSubmit),
            Duration::from_secs(24)
        );
        timeouts.shorten(EventKind::Stop, Duration::from_secs(600));
        assert_eq!(timeouts.budget(EventKind::Stop), Duration::from_secs(590));
        timeouts.shorten(EventKind::SessionEnd, Duration::from_millis(1500));
        assert_eq!(
            timeouts.budget(EventKind::SessionEnd),
            Duration::from_secs(1)
        );
    }
}
