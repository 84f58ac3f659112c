//! Facts the host derives once per event and hands to every guardrail, so that no
//! guardrail re-derives them. Each namespace is a top-level key of the document;
//! so far there is `env`. A fact the host cannot establish is absent, never
//! defaulted.

use serde_json::{Map, Value, json};

use crate::protocol::HookInput;

/// The facts document for one event.
pub fn derive(input: &HookInput) -> Value {
    let mut facts = Map::new();
    facts.insert("env".into(), env(input));
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
        if let Some(value) = input.payload.get(field).and_then(Value::as_str) {
            env.insert(fact.into(), json!(value));
        }
    }
    if let Some(mode) = input.payload.get("permission_mode").and_then(Value::as_str) {
        // Modes that run without asking cannot put a question to a person.
        let can_ask = !matches!(mode, "bypassPermissions" | "dontAsk" | "auto");
        env.insert("can_ask".into(), json!(can_ask));
    }
    Value::Object(env)
}
