//! The event a guardrail judges, with its JSON parts parsed.

use std::cell::OnceCell;
use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::bindings::sandrail::guardrail::types as wit;

pub use wit::EventKind;

/// The turn an event belongs to; see the WIT `turn` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub count: u32,
    pub uuid: String,
    /// `<count>:<uuid>`.
    pub id: String,
}

/// One hook event.
///
/// The JSON parts are parsed when first asked for, so a guardrail pays only for
/// what it reads: a 16 MiB payload it never looks at costs it nothing but the copy.
#[derive(Debug, Clone)]
pub struct Event {
    kind: EventKind,
    session_id: String,
    turn: Option<Turn>,
    tool_name: Option<String>,
    raw_tool_input: Option<String>,
    raw_payload: String,
    raw_facts: String,
    config: Value,
    tool_input: OnceCell<Value>,
    tool_fields: OnceCell<Map<String, Value>>,
    payload: OnceCell<Value>,
    facts: OnceCell<Value>,
}

impl Event {
    pub(crate) fn from_raw(raw: wit::Event) -> serde_json::Result<Self> {
        let config = if raw.config.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&raw.config)?
        };
        Ok(Event {
            kind: raw.kind,
            session_id: raw.session_id,
            turn: raw.turn.map(|t| Turn {
                count: t.count,
                uuid: t.uuid,
                id: t.id,
            }),
            tool_name: raw.tool_name,
            raw_tool_input: raw.tool_input,
            raw_payload: raw.payload,
            raw_facts: raw.facts,
            config,
            tool_input: OnceCell::new(),
            tool_fields: OnceCell::new(),
            payload: OnceCell::new(),
            facts: OnceCell::new(),
        })
    }

    /// Builds an event by hand, for a guardrail's native unit tests.
    pub fn for_test(
        kind: EventKind,
        tool_name: Option<&str>,
        tool_input: Value,
        config: Value,
    ) -> Self {
        Event {
            kind,
            session_id: "test-session".into(),
            turn: None,
            tool_name: tool_name.map(str::to_owned),
            raw_tool_input: (!tool_input.is_null()).then(|| tool_input.to_string()),
            raw_payload: String::new(),
            raw_facts: String::new(),
            config,
            tool_input: OnceCell::new(),
            tool_fields: OnceCell::new(),
            payload: OnceCell::new(),
            facts: OnceCell::new(),
        }
    }

    /// A PreToolUse of `tool` with this input, for a guardrail's native unit tests:
    /// `Event::pre_tool_use("Bash", json!({"command": "ls"}))`.
    pub fn pre_tool_use(tool: &str, input: Value) -> Self {
        Event::for_test(EventKind::PreToolUse, Some(tool), input, Value::Null)
    }

    /// An event without a tool (a Stop, a prompt, …), for native unit tests.
    pub fn of_kind(kind: EventKind) -> Self {
        Event::for_test(kind, None, Value::Null, Value::Null)
    }

    /// The same event with this `config` table, for native unit tests.
    pub fn with_config(mut self, config: Value) -> Self {
        self.config = config;
        self
    }

    /// The same event with this hook payload, for native unit tests.
    pub fn with_payload(mut self, payload: Value) -> Self {
        self.raw_payload = payload.to_string();
        self.payload = OnceCell::new();
        self
    }

    /// The same event with this facts document, for a guardrail's native unit tests.
    pub fn with_facts(mut self, facts: Value) -> Self {
        self.raw_facts = facts.to_string();
        self.facts = OnceCell::new();
        self
    }

    pub fn kind(&self) -> EventKind {
        self.kind
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The turn, when the host could identify it.
    pub fn turn(&self) -> Option<&Turn> {
        self.turn.as_ref()
    }

    /// The same event in this turn, for a guardrail's native unit tests.
    pub fn with_turn(mut self, count: u32, uuid: &str) -> Self {
        self.turn = Some(Turn {
            count,
            uuid: uuid.to_owned(),
            id: format!("{count}:{uuid}"),
        });
        self
    }

    /// At a Stop: whether the harness says the agent is already continuing because
    /// a Stop hook refused (Claude Code's `stop_hook_active`).
    pub fn stop_hook_active(&self) -> bool {
        self.payload()
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    pub fn tool_name(&self) -> Option<&str> {
        self.tool_name.as_deref()
    }

    /// The tool input as JSON text, exactly as the harness sent it.
    pub fn tool_input_json(&self) -> Option<&str> {
        self.raw_tool_input.as_deref()
    }

    /// The tool input object (`Null` for events without a tool, and for an input
    /// nested too deeply to parse: read fields with [`Event::tool_field`], which
    /// does not depend on what else the input holds).
    pub fn tool_input(&self) -> &Value {
        self.tool_input
            .get_or_init(|| parse_or_null(self.raw_tool_input.as_deref().unwrap_or("")))
    }

    /// The tool input as a typed struct.
    pub fn tool_input_as<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(self.raw_tool_input.as_deref().unwrap_or("null"))
    }

    /// A string field of the tool input. Only the input's top level is parsed, so
    /// no other field (however deeply nested) can make this fail.
    pub fn tool_field(&self, field: &str) -> Option<&str> {
        self.tool_fields
            .get_or_init(|| top_level_scalars(self.raw_tool_input.as_deref().unwrap_or("")))
            .get(field)
            .and_then(Value::as_str)
    }

    /// The shell command of a `Bash` (or `PowerShell`) call.
    pub fn command(&self) -> Option<&str> {
        self.tool_field("command")
    }

    /// The file a file tool reads or writes (`file_path`, or `notebook_path`).
    pub fn file_path(&self) -> Option<&str> {
        self.tool_field("file_path")
            .or_else(|| self.tool_field("notebook_path"))
    }

    /// The hook payload as the harness sent it (`Null` if nested too deeply to parse;
    /// the text is in [`Event::payload_json`]).
    pub fn payload(&self) -> &Value {
        self.payload
            .get_or_init(|| parse_or_null(&self.raw_payload))
    }

    /// The hook payload as JSON text.
    pub fn payload_json(&self) -> &str {
        &self.raw_payload
    }

    /// This guardrail's `config` table.
    pub fn config(&self) -> &Value {
        &self.config
    }

    /// The config table as a typed struct; missing fields take their serde
    /// defaults, and no table at all reads as an empty one.
    pub fn config_as<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        match &self.config {
            Value::Null => T::deserialize(&Value::Object(Map::new())),
            config => T::deserialize(config),
        }
    }

    /// The facts the host derived for this event.
    pub fn facts(&self) -> &Value {
        self.facts.get_or_init(|| parse_or_null(&self.raw_facts))
    }

    /// One fact by its dotted name, such as `env.cwd`; `None` when absent.
    pub fn fact(&self, name: &str) -> Option<&Value> {
        name.split('.')
            .try_fold(self.facts(), |v, part| v.get(part))
    }
}

fn parse_or_null(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// The strings, numbers and booleans at the top level of a JSON object. Members
/// are taken as unparsed JSON first, which serde_json skips without recursing.
fn top_level_scalars(text: &str) -> Map<String, Value> {
    let Ok(members) = serde_json::from_str::<BTreeMap<String, &RawValue>>(text) else {
        return Map::new();
    };
    members
        .into_iter()
        .filter(|(_, raw)| !raw.get().starts_with(['{', '[']))
        .filter_map(|(key, raw)| Some((key, serde_json::from_str(raw.get()).ok()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(tool_input: Option<&str>, facts: &str) -> wit::Event {
        wit::Event {
            kind: EventKind::PreToolUse,
            session_id: "s".into(),
            turn: Some(wit::Turn {
                count: 2,
                uuid: "u".into(),
                id: "2:u".into(),
            }),
            tool_name: Some("Bash".into()),
            tool_input: tool_input.map(str::to_owned),
            payload: r#"{"hook_event_name":"PreToolUse"}"#.into(),
            config: r#"{"limit":3}"#.into(),
            facts: facts.into(),
        }
    }

    #[test]
    fn parses_every_json_part() {
        let event = Event::from_raw(raw(
            Some(r#"{"command":"ls","file_path":"/a"}"#),
            r#"{"env":{"cwd":"/p"}}"#,
        ))
        .unwrap();
        assert_eq!(event.command(), Some("ls"));
        assert_eq!(event.file_path(), Some("/a"));
        assert_eq!(event.turn().map(|t| t.id.as_str()), Some("2:u"));
        assert_eq!(event.config()["limit"], 3);
        assert_eq!(event.fact("env.cwd").and_then(Value::as_str), Some("/p"));
        assert_eq!(event.fact("env.missing"), None);
        assert_eq!(event.payload()["hook_event_name"], "PreToolUse");
    }

    #[test]
    fn events_without_a_tool_have_a_null_input() {
        let event = Event::from_raw(raw(None, "{}")).unwrap();
        assert!(event.tool_input().is_null());
        assert_eq!(event.command(), None);
    }

    #[test]
    fn fields_are_read_whatever_else_the_input_holds() {
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        let input = format!(r#"{{"command":"git status","extra":{deep}}}"#);
        let event = Event::from_raw(raw(Some(&input), "{}")).unwrap();
        assert_eq!(event.command(), Some("git status"));
        // The whole input is past serde_json's depth limit: Null, not a failure.
        assert!(event.tool_input().is_null());
        assert_eq!(event.tool_input_json(), Some(input.as_str()));
    }

    #[test]
    fn unparseable_parts_are_null_and_bad_config_an_error() {
        let event = Event::from_raw(raw(Some("{not json"), "{}")).unwrap();
        assert!(event.tool_input().is_null());
        assert_eq!(event.command(), None);
        let mut bad = raw(None, "{}");
        bad.config = "{not json".into();
        assert!(Event::from_raw(bad).is_err());
    }
}
