//! dotforge: runs a dotforge v3 behavior file (`behaviors/<id>/behavior.yaml`) as
//! it is. The file is a data grant of the entry (`data = ["…/behavior.yaml"]`,
//! named again in `config.behavior`), read on every event, so an edit to its
//! triggers takes effect on the next one.
//!
//! Triggers run in order. `set_flag` and a `check_flag` that finds its flag pass
//! and go on; the first `evaluate` whose conditions hold, or `check_flag` with
//! `on_absent: violate` that finds none, is the behavior's one violation for the
//! call (rule: the behavior's id). Escalation — levels, counters, overrides — is the
//! host's, from the entry's `enforcement`, which `sandrail import dotforge` writes
//! from the file's `enforcement` and `rendering`.

mod behavior;

use sandrail_guest::{Configure, Event, Guardrail, Needs, Problem, Result, Verdict, data, flags};
use serde::Deserialize;

pub use behavior::{Action, Behavior, Condition, Trigger};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The granted path of the behavior file.
    behavior: String,
}

/// What one trigger's flag action asks of the host.
pub trait Flags {
    fn set(&mut self, name: &str) -> Result<()>;
    fn check(&mut self, name: &str) -> Result<bool>;
    fn consume(&mut self, name: &str) -> Result<bool>;
}

/// The host's flags. When the session's state cannot be had (its lock busy or
/// held by another program), dotforge's rule is that the hook goes on at default
/// levels with no state read or written: a flag cannot be set, and one looked
/// for is not seen, so the trigger is still judged and its violation answers at
/// the behavior's default level.
struct HostFlags;

impl HostFlags {
    fn or_unseen<T>(result: std::result::Result<T, flags::FlagError>, unseen: T) -> Result<T> {
        match result {
            Ok(value) => Ok(value),
            Err(e) if e.is_unavailable() => {
                sandrail_guest::log::warn(&format!("flags: {}; judged without them", e.message()));
                Ok(unseen)
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl Flags for HostFlags {
    fn set(&mut self, name: &str) -> Result<()> {
        Self::or_unseen(flags::set(name), ())
    }
    fn check(&mut self, name: &str) -> Result<bool> {
        Self::or_unseen(flags::check(name), false)
    }
    fn consume(&mut self, name: &str) -> Result<bool> {
        Self::or_unseen(flags::consume(name), false)
    }
}

/// Runs the behavior's triggers on one event: `Some(message)` for a violation.
pub fn judge(
    behavior: &Behavior,
    event_name: &str,
    tool: Option<&str>,
    context: &serde_json::Map<String, serde_json::Value>,
    flags: &mut dyn Flags,
) -> Result<Option<String>> {
    for trigger in &behavior.policy.triggers {
        if trigger.event != event_name || !trigger.matches_tool(tool) || !trigger.holds(context) {
            continue;
        }
        match trigger.action {
            Action::Evaluate => return Ok(Some(behavior.violation_message())),
            Action::SetFlag => flags.set(trigger.flag()?)?,
            Action::CheckFlag => {
                let flag = trigger.flag()?;
                let present = if trigger.keeps_flag() {
                    flags.check(flag)?
                } else {
                    flags.consume(flag)?
                };
                if !present && trigger.violates_when_absent() {
                    return Ok(Some(behavior.violation_message()));
                }
            }
        }
    }
    Ok(None)
}

struct Dotforge;

impl Guardrail for Dotforge {
    fn evaluate(event: &Event) -> Result<Verdict> {
        let config: Config = event.config_as()?;
        let text = data::read(&config.behavior)?;
        let behavior = Behavior::parse(&text)
            .map_err(|e| sandrail_guest::Error::msg(format!("{}: {e}", config.behavior)))?;
        let event_name = event
            .payload()
            .get("hook_event_name")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned();
        let context = behavior::context(event.tool_input_json(), event.payload_json());
        Ok(
            match judge(
                &behavior,
                &event_name,
                event.tool_name(),
                &context,
                &mut HostFlags,
            )? {
                Some(message) => Verdict::violation(&behavior.id, message),
                None => Verdict::pass(),
            },
        )
    }
}

/// `check-config` reads the entry's config as `evaluate` would: a missing
/// `behavior` or a misspelt key is reported there, not on every event.
impl Configure for Dotforge {
    fn check(config: &serde_json::Value) -> std::result::Result<Needs, Vec<Problem>> {
        serde_json::from_value::<Config>(config.clone())
            .map(|_| Needs::none())
            .map_err(|e| vec![Problem::new(None, e.to_string())])
    }
}

sandrail_guest::export_configurable!(Dotforge);
