//! A context for the integration tests: it enters when a Bash command contains
//! `config.enter_on`, exits when one contains `config.exit_on`, and at Stop holds
//! with `config.hold` when that is set.

use sandrail_guest::{Context, Event, Result, Transition};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Config {
    enter_on: String,
    #[serde(default)]
    exit_on: String,
    #[serde(default)]
    hold: Option<String>,
    /// Enter with a payload that is not JSON, which the host must refuse to keep.
    #[serde(default)]
    bad_payload: bool,
}

struct ContextProbe;

impl Context for ContextProbe {
    fn observe(event: &Event, _payload: Option<&serde_json::Value>) -> Result<Transition> {
        let config: Config = event.config_as()?;
        let command = event.command().unwrap_or_default();
        if command.contains(&config.enter_on) {
            if config.bad_payload {
                return Ok(Transition::Enter("{not json".to_owned()));
            }
            return Transition::enter(&json!({"word": config.enter_on, "command": command}));
        }
        if !config.exit_on.is_empty() && command.contains(&config.exit_on) {
            return Ok(Transition::exit());
        }
        Ok(Transition::stay())
    }

    fn leave(event: &Event, _payload: &serde_json::Value) -> Result<Option<String>> {
        let config: Config = event.config_as()?;
        Ok(config.hold)
    }
}

sandrail_guest::export_context!(ContextProbe);
