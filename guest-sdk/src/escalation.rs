//! How the host has answered this guardrail's rules in this session (contract
//! 0.1.4), read-only: what each rule's violations resolved to under the entry's
//! `enforcement`, so a guardrail can act on what the host decided rather than on a
//! count of its own (which cannot know that a violation was only a nudge).

use crate::imports::escalation as wit;

pub use wit::{Level, RuleStanding};

/// This guardrail's rules with a record in this session, in rule order, as they
/// stood before the current event (whose verdict is not counted yet).
pub fn rules() -> crate::Result<Vec<RuleStanding>> {
    wit::rules().map_err(|why| crate::Error::msg(format!("escalation: {why}")))
}

/// One rule's record; `None` when none of its violations was counted yet.
pub fn rule(name: &str) -> crate::Result<Option<RuleStanding>> {
    Ok(rules()?.into_iter().find(|r| r.rule == name))
}

impl Level {
    /// Its name as sandrail.toml and the receipts spell it (`soft_block`).
    pub fn name(self) -> &'static str {
        match self {
            Level::Silent => "silent",
            Level::Nudge => "nudge",
            Level::Warning => "warning",
            Level::SoftBlock => "soft_block",
            Level::HardBlock => "hard_block",
        }
    }
}

impl RuleStanding {
    /// Whether its violations are refused now: it reached a blocking level, or the
    /// entry does not escalate (every violation is refused).
    pub fn refuses(&self) -> bool {
        match self.level {
            None => true,
            Some(level) => matches!(level, Level::SoftBlock | Level::HardBlock),
        }
    }
}
