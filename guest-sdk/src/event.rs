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
