//! Escalation: how a rule's violations in a session turn into what the agent is
//! told. A guardrail entry that declares `enforcement` has a counter per rule and
//! session; each violation raises it by one *before* the level is resolved, and the
//! level a rule has reached never falls within the session.
//!
//! silent < nudge < warning < soft_block < hard_block: silent is counted and shown
//! in status only; nudge is one line of context for the agent; warning a short
//! block of it; soft_block a refusal the user can override; hard_block a refusal
//! nobody overrides.

use std::collections::BTreeMap;

use serde::Deserialize;

/// How severe a rule's answer is. The order is the escalation order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Silent,
    Nudge,
    Warning,
    SoftBlock,
    HardBlock,
}

impl Level {
    pub const ALL: [Level; 5] = [
        Level::Silent,
        Level::Nudge,
        Level::Warning,
        Level::SoftBlock,
        Level::HardBlock,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Level::Silent => "silent",
            Level::Nudge => "nudge",
            Level::Warning => "warning",
            Level::SoftBlock => "soft_block",
            Level::HardBlock => "hard_block",
        }
    }

    pub fn from_name(name: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.name() == name)
    }

    /// Whether the answer refuses the event.
    pub fn blocks(self) -> bool {
        self >= Level::SoftBlock
    }

    /// The most characters a message at this level may have (the seed's caps: a
    /// nudge is a line, a warning a short block, a refusal a sentence or two).
    pub fn max_chars(self) -> usize {
        match self {
            Level::Silent => 0,
            Level::Nudge => 120,
            Level::Warning => 500,
            Level::SoftBlock | Level::HardBlock => 200,
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One step of an escalation: from `after` violations on, `level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold {
    pub after: u64,
    pub level: Level,
}

/// The escalation of one rule (or of all a guardrail's rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder {
    pub default_level: Level,
    /// Strictly increasing `after`, levels never decreasing.
    pub thresholds: Vec<Threshold>,
}

impl Ladder {
    /// The level `counter` violations resolve to, before the session's rise-only rule.
    pub fn resolve(&self, counter: u64) -> Level {
        self.thresholds
            .iter()
            .rev()
            .find(|t| counter >= t.after)
            .map_or(self.default_level, |t| t.level)
    }

    /// The next `after` above `counter`, if any: what `{threshold}` shows.
    pub fn next_threshold(&self, counter: u64) -> Option<u64> {
        self.thresholds
            .iter()
            .map(|t| t.after)
            .find(|&after| after > counter)
    }
}

/// A guardrail entry's `enforcement`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    pub ladder: Ladder,
    /// What a soft_block answers on a PreToolUse: a refusal the user overrides by
    /// approving the same call again, or Claude Code's own prompt to the user.
    pub soft_block: SoftBlock,
    /// Rules with a ladder of their own.
    pub rules: BTreeMap<String, Ladder>,
    pub templates: Templates,
}

impl Enforcement {
    pub fn ladder(&self, rule: &str) -> &Ladder {
        self.rules.get(rule).unwrap_or(&self.ladder)
    }
}

/// How a soft_block is put to the harness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SoftBlock {
    /// `permissionDecision: "deny"`; the same call again within the window is an override.
    #[default]
    Deny,
    /// `permissionDecision: "ask"`: the user decides in the harness, and the
    /// PostToolUse of that call (same tool_use_id) confirms the override.
    Ask,
}

/// Message templates, with `{guardrail}`, `{rule}`, `{message}`, `{counter}`,
/// `{threshold}`, `{level}` and `{tool_name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates {
    pub nudge: String,
    pub warning: String,
    pub block: String,
}

impl Default for Templates {
    fn default() -> Self {
        Templates {
            nudge: "{message}".into(),
            warning: "{message}\nThis is violation {counter} of this rule in this session; it escalates at {threshold}."
                .into(),
            block: "{message}".into(),
        }
    }
}

/// `enforcement` as written in sandrail.toml.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEnforcement {
    default_level: Option<String>,
    #[serde(default)]
    escalation: Vec<RawThreshold>,
    #[serde(default)]
    rules: BTreeMap<String, RawLadder>,
    nudge: Option<String>,
    warning: Option<String>,
    block: Option<String>,
    #[serde(default)]
    soft_block: SoftBlock,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLadder {
    default_level: Option<String>,
    #[serde(default)]
    escalation: Vec<RawThreshold>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawThreshold {
    after: u64,
    level: String,
}

impl RawEnforcement {
    /// Validates the levels and thresholds; the error names the place.
    pub fn validate(self) -> Result<Enforcement, String> {
        let ladder = parse_ladder(
            "enforcement",
            self.default_level.as_deref(),
            &self.escalation,
        )?;
        let mut rules = BTreeMap::new();
        for (rule, raw) in &self.rules {
            let place = format!("enforcement.rules.{rule}");
            rules.insert(
                rule.clone(),
                parse_ladder(&place, raw.default_level.as_deref(), &raw.escalation)?,
            );
        }
        let defaults = Templates::default();
        Ok(Enforcement {
            ladder,
            soft_block: self.soft_block,
            rules,
            templates: Templates {
                nudge: self.nudge.unwrap_or(defaults.nudge),
                warning: self.warning.unwrap_or(defaults.warning),
                block: self.block.unwrap_or(defaults.block),
            },
        })
    }
}

fn level(place: &str, name: &str) -> Result<Level, String> {
    Level::from_name(name).ok_or_else(|| {
        format!(
            "{place}: unknown level '{name}'; levels are {}",
            Level::ALL.map(Level::name).join(", ")
        )
    })
}

fn parse_ladder(
    place: &str,
    default: Option<&str>,
    raw: &[RawThreshold],
) -> Result<Ladder, String> {
    let default_level = match default {
        Some(name) => level(&format!("{place}.default_level"), name)?,
        None => Level::Silent,
    };
    let mut thresholds: Vec<Threshold> = Vec::with_capacity(raw.len());
    for (i, t) in raw.iter().enumerate() {
        let here = format!("{place}.escalation[{i}]");
        let level = level(&here, &t.level)?;
        if t.after == 0 {
            return Err(format!("{here}: `after` counts violations and starts at 1"));
        }
        if let Some(previous) = thresholds.last() {
            if t.after <= previous.after {
                return Err(format!(
                    "{here}: thresholds out of order: after = {} follows after = {}",
                    t.after, previous.after
                ));
            }
            if level < previous.level {
                return Err(format!(
                    "{here}: level {level} is lower than the {} before it; levels only rise",
                    previous.level
                ));
            }
        }
        thresholds.push(Threshold {
            after: t.after,
            level,
        });
    }
    Ok(Ladder {
        default_level,
        thresholds,
    })
}

/// What one violation came to, for the message and for status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalated {
    pub counter: u64,
    pub level: Level,
    pub next_threshold: Option<u64>,
}

/// The values a template may name.
pub struct Vars<'a> {
    pub guardrail: &'a str,
    pub rule: &'a str,
    pub message: &'a str,
    pub tool_name: &'a str,
    pub escalated: &'a Escalated,
}

/// The message for a violation at its level, from the entry's templates, within
/// the level's cap; `None` for silent.
pub fn render(templates: &Templates, vars: &Vars<'_>) -> Option<String> {
    let level = vars.escalated.level;
    let template = match level {
        Level::Silent => return None,
        Level::Nudge => &templates.nudge,
        Level::Warning => &templates.warning,
        Level::SoftBlock | Level::HardBlock => &templates.block,
    };
    let threshold = vars
        .escalated
        .next_threshold
        .map_or_else(|| "max".to_owned(), |t| t.to_string());
    let counter = vars.escalated.counter.to_string();
    let message = worded_for(level, vars.message);
    let text = substitute(
        template,
        &[
            ("guardrail", vars.guardrail),
            ("rule", vars.rule),
            ("message", &message),
            ("counter", &counter),
            ("threshold", &threshold),
            ("level", level.name()),
            ("tool_name", vars.tool_name),
        ],
    );
    let text = if level == Level::Nudge {
        // A nudge is one line.
        text.lines().next().unwrap_or_default().to_owned()
    } else {
        text
    };
    Some(sandrail_event::text::cap_chars(
        text.trim_end(),
        level.max_chars(),
    ))
}

/// A violation's message as said at `level`. Guardrails word their messages for
/// a refusal ("Refused: …", as the builtins do); below soft_block the call runs,
/// so that word becomes "Noted:".
fn worded_for(level: Level, message: &str) -> std::borrow::Cow<'_, str> {
    match message.strip_prefix(REFUSED) {
        Some(rest) if !level.blocks() => format!("{NOTED}{rest}").into(),
        _ => message.into(),
    }
}

const REFUSED: &str = "Refused:";
const NOTED: &str = "Noted:";

/// Replaces each `{name}` with its value in one pass, so a value that contains a
/// `{name}` is not expanded again; names it does not know stay as written.
fn substitute(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let known = after.find('}').and_then(|close| {
            let name = &after[..close];
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, value)| (close, *value))
        });
        match known {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed_ladder() -> Ladder {
        let raw: RawEnforcement = toml::from_str(
            "default_level = 'silent'\nescalation = [{after = 1, level = 'nudge'}, {after = 3, level = 'warning'}, {after = 5, level = 'soft_block'}]",
        )
        .unwrap();
        raw.validate().unwrap().ladder
    }

    #[test]
    fn the_seeds_table_comes_out_exactly() {
        let ladder = seed_ladder();
        let levels: Vec<Level> = (0..=6).map(|n| ladder.resolve(n)).collect();
        assert_eq!(
            levels,
            [
                Level::Silent,
                Level::Nudge,
                Level::Nudge,
                Level::Warning,
                Level::Warning,
                Level::SoftBlock,
                Level::SoftBlock
            ]
        );
        assert_eq!(ladder.next_threshold(1), Some(3));
        assert_eq!(ladder.next_threshold(5), None);
    }

    #[test]
    fn bad_ladders_name_their_place() {
        let err = |text: &str| {
            toml::from_str::<RawEnforcement>(text)
                .unwrap()
                .validate()
                .unwrap_err()
        };
        assert_eq!(
            err("default_level = 'loud'"),
            "enforcement.default_level: unknown level 'loud'; levels are silent, nudge, warning, soft_block, hard_block"
        );
        assert_eq!(
            err("escalation = [{after = 3, level = 'nudge'}, {after = 2, level = 'warning'}]"),
            "enforcement.escalation[1]: thresholds out of order: after = 2 follows after = 3"
        );
        assert_eq!(
            err("escalation = [{after = 1, level = 'warning'}, {after = 2, level = 'nudge'}]"),
            "enforcement.escalation[1]: level nudge is lower than the warning before it; levels only rise"
        );
        assert_eq!(
            err("[rules.x]\nescalation = [{after = 0, level = 'nudge'}]"),
            "enforcement.rules.x.escalation[0]: `after` counts violations and starts at 1"
        );
    }

    #[test]
    fn a_refusal_s_word_becomes_noted_below_soft_block() {
        let templates = Templates::default();
        let at = |level: Level| {
            render(
                &templates,
                &Vars {
                    guardrail: "g",
                    rule: "r",
                    message: "Refused: rm -rf of the home directory.",
                    tool_name: "Bash",
                    escalated: &Escalated {
                        counter: 1,
                        level,
                        next_threshold: None,
                    },
                },
            )
            .unwrap_or_default()
        };
        assert!(at(Level::Nudge).starts_with("Noted: rm -rf"));
        assert!(at(Level::Warning).starts_with("Noted: rm -rf"));
        assert!(at(Level::SoftBlock).starts_with("Refused: rm -rf"));
        assert!(at(Level::HardBlock).starts_with("Refused: rm -rf"));
    }

    #[test]
    fn templates_substitute_once_and_keep_to_their_cap() {
        let escalated = Escalated {
            counter: 2,
            level: Level::Nudge,
            next_threshold: Some(3),
        };
        let vars = Vars {
            guardrail: "g",
            rule: "r",
            message: "msg with {counter} inside\nsecond line",
            tool_name: "Write",
            escalated: &escalated,
        };
        let templates = Templates {
            nudge: "{guardrail}/{rule}: {message} ({counter}/{threshold}, {level}, {tool_name}) {unknown}".into(),
            ..Templates::default()
        };
        assert_eq!(
            render(&templates, &vars).unwrap(),
            "g/r: msg with {counter} inside"
        );
        let long = Templates {
            nudge: "x".repeat(300),
            ..Templates::default()
        };
        assert_eq!(render(&long, &vars).unwrap().chars().count(), 120);
        let silent = Escalated {
            level: Level::Silent,
            ..escalated
        };
        assert_eq!(
            render(
                &templates,
                &Vars {
                    escalated: &silent,
                    ..vars
                }
            ),
            None
        );
    }
}
