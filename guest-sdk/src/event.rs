//! The event a guardrail judges, with its JSON parts parsed.

use serde::de::DeserializeOwned;
use serde_json::Value;

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
#[derive(Debug, Clone)]
pub struct Event {
    kind: EventKind,
    session_id: String,
    turn: Option<Turn>,
    tool_name: Option<String>,
    tool_input: Value,
    payload: Value,
    config: Value,
    facts: Value,
}

impl Event {
    pub(crate) fn from_raw(raw: wit::Event) -> serde_json::Result<Self> {
        let parse = |text: &str| -> serde_json::Result<Value> {
            if text.is_empty() {
                Ok(Value::Null)
            } else {
                serde_json::from_str(text)
            }
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
            tool_input: match &raw.tool_input {
                Some(text) => parse(text)?,
                None => Value::Null,
            },
            payload: parse(&raw.payload)?,
            config: parse(&raw.config)?,
            facts: parse(&raw.facts)?,
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
            tool_input,
            payload: Value::Null,
            config,
            facts: Value::Null,
        }
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

    pub fn tool_name(&self) -> Option<&str> {
        self.tool_name.as_deref()
    }

    /// The tool input object (`Null` for events without a tool).
    pub fn tool_input(&self) -> &Value {
        &self.tool_input
    }

    /// The tool input as a typed struct.
    pub fn tool_input_as<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        T::deserialize(&self.tool_input)
    }

    /// A string field of the tool input.
    pub fn tool_field(&self, field: &str) -> Option<&str> {
        self.tool_input.get(field).and_then(Value::as_str)
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

    /// The hook payload exactly as the harness sent it.
    pub fn payload(&self) -> &Value {
        &self.payload
    }

    /// This guardrail's `config` table.
    pub fn config(&self) -> &Value {
        &self.config
    }

    /// The config table as a typed struct; missing fields take their serde defaults.
    pub fn config_as<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        T::deserialize(&self.config)
    }

    /// The facts the host derived for this event.
    pub fn facts(&self) -> &Value {
        &self.facts
    }

    /// One fact by its dotted name, such as `env.cwd`; `None` when absent.
    pub fn fact(&self, name: &str) -> Option<&Value> {
        name.split('.').try_fold(&self.facts, |v, part| v.get(part))
    }
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
    fn bad_json_from_the_host_is_an_error() {
        assert!(Event::from_raw(raw(Some("{not json"), "{}")).is_err());
    }
}
