//! {{name}}: a context that records that the agent ran the tests. It enters when
//! a Bash call that runs a test command has run (PostToolUse), with the command
//! as its payload; a Stop gate that lists it in `requires` reads whether it
//! entered this turn or this cycle (`sandrail_guest::cycle::context`).
//!
//! Build: `cargo build --release --target wasm32-wasip2`
//! Test:  `cargo test` (native, the SDK's in-memory host) and `sandrail test`
//!        (cases.toml, the built component in the real sandbox).

use sandrail_guest::{Context, Event, Result, Transition, state};
use serde::Deserialize;

/// The entry's `[guardrail.config]`.
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    /// Commands that run the tests.
    commands: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            commands: ["cargo test", "npm test", "pytest"].map(String::from).to_vec(),
        }
    }
}

/// The state key holding the last test command that ran.
const LAST_RUN: &str = "last-test-command";

struct TestsRan;

impl Context for TestsRan {
    fn observe(event: &Event, _payload: Option<&serde_json::Value>) -> Result<Transition> {
        let config: Config = event.config_as()?;
        let Some(command) = event.command() else {
            return Ok(Transition::stay());
        };
        if !config.commands.iter().any(|c| command.contains(c.as_str())) {
            return Ok(Transition::stay());
        }
        state::set(LAST_RUN, command)?;
        Transition::enter(&serde_json::json!({ "command": command }))
    }
}

sandrail_guest::export_context!(TestsRan);

#[cfg(test)]
mod tests {
    use super::*;
    use sandrail_guest::testing;
    use serde_json::json;

    fn ran(command: &str) -> Event {
        Event::pre_tool_use("Bash", json!({ "command": command }))
    }

    #[test]
    fn a_test_run_enters_with_its_command() {
        let transition = testing::observe::<TestsRan>(&ran("cargo test -q"), None).unwrap();
        assert_eq!(transition, Transition::enter(&json!({"command": "cargo test -q"})).unwrap());
        assert_eq!(testing::state_value::<String>(LAST_RUN).as_deref(), Some("cargo test -q"));
    }

    #[test]
    fn other_commands_leave_it_as_it_is() {
        assert_eq!(testing::observe::<TestsRan>(&ran("ls"), None).unwrap(), Transition::stay());
        assert!(testing::state_entries().is_empty());
    }
}
