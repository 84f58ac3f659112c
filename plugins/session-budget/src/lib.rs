//! session-budget: counts the file edits an agent makes in one session, reminds it
//! past `warn_at`, and refuses edits past `limit`.
//!
//! The count is reserved at PreToolUse, inside the event's state transaction: an
//! edit this guardrail refuses does not count, and however many edits race, no
//! more than `limit` are let through. (An edit a later guardrail refuses has still
//! used its place; when the state cannot be had the guardrail is skipped.)

use sandrail_guest::{Configure, Event, Guardrail, Needs, Problem, Result, Verdict, state};
use serde::Deserialize;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Edits allowed in one session; none means unlimited.
    limit: Option<u64>,
    /// From this many edits on, each edit carries a reminder.
    warn_at: Option<u64>,
}

const COUNT_KEY: &str = "edits";

struct SessionBudget;

impl Guardrail for SessionBudget {
    fn evaluate(event: &Event) -> Result<Verdict> {
        let config: Config = event.config_as()?;
        let used: u64 = state::get(COUNT_KEY)?.unwrap_or(0);
        if let Some(limit) = config.limit
            && used >= limit
        {
            return Ok(Verdict::violation(
                "edit-limit",
                format!(
                    "This session has used its budget of {limit} file edits. Stop and summarise the work for the user; they can raise the limit in sandrail.toml."
                ),
            ));
        }
        let used = used + 1;
        state::set(COUNT_KEY, &used)?;
        Ok(match config.warn_at {
            Some(warn_at) if used >= warn_at => {
                let of = config.limit.map(|l| format!(" of {l}")).unwrap_or_default();
                Verdict::note(format!(
                    "This is file edit {used}{of} in this session. Consider checking in with the user."
                ))
            }
            _ => Verdict::pass(),
        })
    }
}

/// `check-config` reads the config as `evaluate` would, so a misspelt key
/// (`limt = 5`) is reported there, not as a failure on every event.
impl Configure for SessionBudget {
    fn check(config: &serde_json::Value) -> std::result::Result<Needs, Vec<Problem>> {
        let config: Config = match config {
            serde_json::Value::Null => Config::default(),
            value => serde_json::from_value(value.clone())
                .map_err(|e| vec![Problem::new(None, e.to_string())])?,
        };
        match (config.limit, config.warn_at) {
            (Some(limit), Some(warn_at)) if warn_at > limit => Err(vec![Problem::new(
                Some("warn_at"),
                format!(
                    "warn_at ({warn_at}) is past limit ({limit}): the reminder would never come"
                ),
            )]),
            _ => Ok(Needs::none()),
        }
    }
}

sandrail_guest::export_configurable!(SessionBudget);
