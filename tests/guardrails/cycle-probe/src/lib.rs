//! A Stop gate for the integration tests: it reports what the cycle shows it — the
//! contexts it requires, the span, whether `owner` stamped `key` this turn, and
//! `owner`'s entries as typed values.
//! Apart from the probe, because importing `cycle` makes a gate quiet at a Stop
//! with nothing new, and the probe must judge every Stop.

use sandrail_guest::{Event, Guardrail, Result, Verdict, state};
use serde::Deserialize;

#[derive(Deserialize)]
struct Config {
    #[serde(default)]
    key: String,
    #[serde(default)]
    owner: String,
}

struct CycleProbe;

impl Guardrail for CycleProbe {
    fn evaluate(event: &Event) -> Result<Verdict> {
        let config: Config = event.config_as()?;
        let contexts: Vec<serde_json::Value> = sandrail_guest::cycle::contexts()?
            .into_iter()
            .map(|c| {
                serde_json::json!({
                    "name": c.name,
                    "active": c.active,
                    "payload": c.payload,
                    "entered_turn": c.entered_turn,
                    "entered_this_turn": c.entered_this_turn,
                    "entered_this_cycle": c.entered_this_cycle,
                })
            })
            .collect();
        let span: Vec<serde_json::Value> = sandrail_guest::cycle::span()?
            .into_iter()
            .map(|e| {
                let files: Vec<&str> = e.files.iter().map(|f| f.path.as_str()).collect();
                serde_json::json!({"tool": e.tool_name, "turn": e.turn, "files": files})
            })
            .collect();
        let stamped = (!config.owner.is_empty())
            .then(|| state::stamped_this_turn_by(&config.owner, &config.key))
            .transpose()?
            .map(|s| format!("{s:?}"));
        let owner_keys: Option<Vec<String>> = (!config.owner.is_empty())
            .then(|| state::list_owner_as::<String>(&config.owner, ""))
            .transpose()?
            .map(|entries| {
                entries
                    .into_iter()
                    .map(|(key, turn)| format!("{key}@{turn}"))
                    .collect()
            });
        Ok(Verdict::note(
            serde_json::json!({"contexts": contexts, "span": span, "stamped": stamped, "owner_entries": owner_keys})
                .to_string(),
        ))
    }
}

sandrail_guest::export!(CycleProbe);
