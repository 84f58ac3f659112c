//! Facts the host derives once per event and hands to every guardrail, so that no
//! guardrail re-derives them (and all of them agree). Each namespace is a top-level
//! key of the document: `env` and `tool` so far. A fact the host cannot establish
//! is absent, never defaulted.

mod destructive;

use serde_json::{Map, Value, json};

use crate::protocol::HookInput;

/// Tools whose `command` is a POSIX shell command line, which the host analyses.
const SHELL_TOOLS: &[&str] = &["Bash"];

/// The facts document for one event.
pub fn derive(input: &HookInput) -> Value {
    let mut facts = Map::new();
    facts.insert("env".into(), env(input));
    if let Some(tool) = tool(input) {
        facts.insert("tool".into(), tool);
    }
    Value::Object(facts)
}

/// Where and as whom the call runs, as the harness reported it.
fn env(input: &HookInput) -> Value {
    let mut env = Map::new();
    env.insert("session_id".into(), json!(input.session_id));
    for (fact, field) in [
        ("cwd", "cwd"),
        ("permission_mode", "permission_mode"),
        ("agent_id", "agent_id"),
        ("agent_type", "agent_type"),
    ] {
        if let Some(value) = input.fields.get(field).and_then(Value::as_str) {
            env.insert(fact.into(), json!(value));
        }
    }
    if let Some(mode) = input.fields.get("permission_mode").and_then(Value::as_str) {
        // Modes that run without asking cannot put a question to a person.
        let can_ask = !matches!(mode, "bypassPermissions" | "dontAsk" | "auto");
        env.insert("can_ask".into(), json!(can_ask));
    }
    Value::Object(env)
}

/// This tool call. Whether a shell command is destructive is judged over every
/// command the line runs, however it is wrapped; for other tools it is not known
/// yet, so it is absent.
fn tool(input: &HookInput) -> Option<Value> {
    let name = input.tool_name.as_deref()?;
    let mut tool = Map::new();
    tool.insert("name".into(), json!(name));
    if SHELL_TOOLS.contains(&name)
        && let Some(command) = input.tool_field("command")
    {
        let reason = destructive::find(command);
        tool.insert("is_destructive".into(), json!(reason.is_some()));
        if let Some(reason) = reason {
            tool.insert("destructive_reason".into(), json!(reason));
        }
    }
    Some(Value::Object(tool))
}
