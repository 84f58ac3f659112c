//! The harnesses sandrail answers, and their dialects.
//!
//! The host has one event model: Claude Code's payload and answer
//! ([`crate::protocol`]). Every other harness is a pair of translations at the
//! edge: its payload is read into a Claude-shaped payload — the event, the
//! session, the tool under Claude's name with its arguments under Claude's field
//! names — and the answer the host gives is put back in the harness's own words.
//! Facts, matchers and guardrails see one tool vocabulary, so one guardrail
//! serves every harness; the harness's own names stay in the payload
//! (`harness`, `harness_event_name`, `harness_tool_name`).
//!
//! Each harness's file holds its payload reading, its answer and its settings.

mod claude;
mod codex;
mod copilot;
mod cursor;
mod gemini;
pub mod key_order;
pub mod settings;
pub mod timeouts;
pub mod typed;

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::event::EventKind;
use crate::protocol::{PayloadError, members};

/// A harness whose hooks sandrail answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Harness {
    /// Claude Code (the host's own event model).
    #[default]
    Claude,
    /// OpenAI Codex CLI.
    Codex,
    /// Cursor's agent.
    Cursor,
    /// Gemini CLI.
    Gemini,
    /// GitHub Copilot CLI and coding agent.
    Copilot,
}

impl Harness {
    pub const ALL: [Harness; 5] = [
        Harness::Claude,
        Harness::Codex,
        Harness::Cursor,
        Harness::Gemini,
        Harness::Copilot,
    ];

    /// The name `--harness` takes.
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
            Harness::Cursor => "cursor",
            Harness::Gemini => "gemini",
            Harness::Copilot => "copilot",
        }
    }

    /// The harness's own name for a person.
    pub fn title(self) -> &'static str {
        match self {
            Harness::Claude => "Claude Code",
            Harness::Codex => "Codex CLI",
            Harness::Cursor => "Cursor",
            Harness::Gemini => "Gemini CLI",
            Harness::Copilot => "GitHub Copilot",
        }
    }

    /// Where and how the harness's project settings register hooks.
    pub fn settings(self) -> settings::Settings {
        match self {
            Harness::Claude => claude::SETTINGS,
            Harness::Codex => codex::SETTINGS,
            Harness::Cursor => cursor::SETTINGS,
            Harness::Gemini => gemini::SETTINGS,
            Harness::Copilot => copilot::SETTINGS,
        }
    }

    /// The hook object registering a running `sandrail serve` at `url`, for the
    /// harnesses that have http hooks (Claude Code).
    pub fn http_hook(self, url: &str) -> Option<Value> {
        (self == Harness::Claude).then(|| claude::http_hook(url))
    }

    /// The event names this harness's settings register, for the host's events
    /// a config needs: the first of the harness's that maps to `kind`.
    pub fn event_name(self, kind: EventKind) -> Option<&'static str> {
        let events = match self {
            Harness::Claude => return Some(kind.name()),
            Harness::Codex => codex::EVENTS,
            Harness::Cursor => cursor::EVENTS,
            Harness::Gemini => gemini::EVENTS,
            Harness::Copilot => copilot::EVENTS,
        };
        events
            .iter()
            .find(|(_, k)| *k == kind)
            .map(|(name, _)| *name)
    }

    /// The host's event for one of this harness's event names.
    pub fn kind_of(self, name: &str) -> Option<EventKind> {
        let events = match self {
            Harness::Claude => return EventKind::from_payload_name(name),
            Harness::Codex => codex::EVENTS,
            Harness::Cursor => cursor::EVENTS,
            Harness::Gemini => gemini::EVENTS,
            Harness::Copilot => copilot::EVENTS,
        };
        events.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    /// Reads this harness's payload into the host's event model.
    pub fn read(self, raw: &str) -> Result<Translated, PayloadError> {
        if self == Harness::Claude {
            // Cursor runs the hooks in Claude Code's settings too, with its own
            // payload; the answer stays Claude Code's, which it reads. Only a
            // payload naming Cursor's version is parsed to find out, so Claude
            // Code's own go on untouched.
            let cursors = memchr::memmem::find(raw.as_bytes(), b"\"cursor_version\"").is_some();
            return match cursors.then(|| members(raw)) {
                Some(Ok(members)) if cursor::sent(&members) => cursor::read(&members),
                // Anything else is Claude Code's to read, errors included.
                _ => Ok(Translated::AsIs),
            };
        }
        let members = members(raw)?;
        match self {
            Harness::Claude => unreachable!("read above"),
            Harness::Codex => codex::read(&members),
            Harness::Cursor => cursor::read(&members),
            Harness::Gemini => gemini::read(&members),
            Harness::Copilot => copilot::read(&members),
        }
    }

    /// The host's answer (Claude Code's JSON) in this harness's words.
    pub fn answer(self, event: &Event, claude: &str) -> Option<String> {
        let kind = event.kind;
        let value: Value = serde_json::from_str(claude).ok()?;
        let said = Said::of(kind, &value);
        if said.refusal.is_some() && self.cannot_refuse(&event.harness_event, kind) {
            eprintln!(
                "sandrail: {} cannot refuse '{}'; the refusal is only reported",
                self.title(),
                event.harness_event
            );
        }
        let answer = match self {
            Harness::Claude => return Some(claude.to_owned()),
            Harness::Codex => codex::answer(kind, &said, value),
            Harness::Cursor => cursor::answer(&event.harness_event, kind, &said),
            Harness::Gemini => gemini::answer(&event.harness_event, kind, &said),
            Harness::Copilot => copilot::answer(kind, &said),
        };
        answer.map(|a| a.to_string())
    }
}

/// A payload read into the host's event model.
#[derive(Debug)]
pub enum Translated {
    /// An event the host judges.
    Event(Event),
    /// Claude Code's own payload: judged as it came.
    AsIs,
    /// An event of the harness's that sandrail has no verdict for: its name.
    Unjudged(String),
}

#[derive(Debug)]
pub struct Event {
    /// The payload in Claude Code's shape.
    pub payload: String,
    /// The event as the harness named it.
    pub harness_event: String,
    /// The host's event.
    pub kind: EventKind,
    /// The working directory the payload names.
    pub cwd: Option<String>,
}

impl Harness {
    /// The project directory the harness names in a hook's environment, where it
    /// names one under its own variable (`CLAUDE_PROJECT_DIR` is read first).
    pub(crate) fn project_dir(self) -> Option<std::path::PathBuf> {
        let var = match self {
            Harness::Cursor => "CURSOR_PROJECT_DIR",
            Harness::Gemini => "GEMINI_PROJECT_DIR",
            Harness::Claude | Harness::Codex | Harness::Copilot => return None,
        };
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(Into::into)
    }

    /// The project a working directory belongs to, for a harness that names
    /// none: the nearest directory above it (short of the home directory)
    /// holding this harness's hook settings, else the nearest git work tree,
    /// else the directory itself. (Self-protection guards the hook settings of
    /// every directory above the project too, so a decoy settings file cannot
    /// move the guard off the real one.)
    pub(crate) fn project_of(self, cwd: &std::path::Path) -> std::path::PathBuf {
        let home = crate::locations::home();
        let candidates = || {
            cwd.ancestors()
                .filter(|dir| Some(*dir) != home.as_deref() && dir.parent().is_some())
        };
        let file = self.settings().file;
        candidates()
            .find(|dir| dir.join(file).exists())
            .or_else(|| candidates().find(|dir| dir.join(".git").exists()))
            .unwrap_or(cwd)
            .to_path_buf()
    }

    /// Whether the harness ignores a refusal of this event.
    fn cannot_refuse(self, harness_event: &str, kind: EventKind) -> bool {
        match self {
            Harness::Claude | Harness::Codex => false,
            Harness::Cursor => cursor::cannot_refuse(harness_event),
            Harness::Gemini => gemini::cannot_refuse(kind),
            Harness::Copilot => copilot::cannot_refuse(kind),
        }
    }
}

/// What the host's answer says, whatever the event: the refusal (and whether it
/// is a question), the context for the agent, the message for the person.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Said {
    pub refusal: Option<String>,
    pub ask: bool,
    pub context: Option<String>,
    pub to_person: Option<String>,
}

impl Said {
    fn of(kind: EventKind, answer: &Value) -> Said {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let specific = answer.get("hookSpecificOutput");
        let (refusal, ask) = if kind == EventKind::PreToolUse {
            let decision = specific
                .and_then(|s| s.get("permissionDecision"))
                .and_then(Value::as_str);
            match decision {
                Some("deny" | "ask") => (
                    text(specific.and_then(|s| s.get("permissionDecisionReason"))),
                    decision == Some("ask"),
                ),
                _ => (None, false),
            }
        } else if answer.get("decision").and_then(Value::as_str) == Some("block") {
            (text(answer.get("reason")), false)
        } else {
            (None, false)
        };
        Said {
            refusal,
            ask,
            context: text(specific.and_then(|s| s.get("additionalContext"))),
            to_person: text(answer.get("systemMessage")),
        }
    }

    /// The refusal and the context, for a harness with one field for both.
    fn refusal_and_context(&self) -> Option<String> {
        let parts: Vec<&str> = [self.refusal.as_deref(), self.context.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
}

/// A payload's top-level members as unparsed JSON (see [`crate::protocol`]: no
/// nesting below the top level is parsed, so no depth stops an event).
pub(crate) type Members<'a> = BTreeMap<String, &'a RawValue>;

/// A member's string value.
pub(crate) fn text(members: &Members, key: &str) -> Option<String> {
    let raw = members.get(key)?;
    serde_json::from_str::<String>(raw.get()).ok()
}

/// A Claude-shaped payload under construction: members as JSON text.
#[derive(Debug, Default)]
pub(crate) struct Payload {
    members: BTreeMap<String, String>,
}

impl Payload {
    /// Starts from the harness's members that the host's model does not
    /// rename, so a platform's snapshot and anything a guardrail may read pass.
    fn keeping(members: &Members, renamed: &[&str]) -> Payload {
        let mut payload = Payload::default();
        for (key, raw) in members {
            if !renamed.contains(&key.as_str()) {
                payload.members.insert(key.clone(), raw.get().to_owned());
            }
        }
        payload
    }

    fn set(&mut self, key: &str, value: Value) {
        self.members.insert(key.to_owned(), value.to_string());
    }

    fn set_raw(&mut self, key: &str, raw: &RawValue) {
        self.members.insert(key.to_owned(), raw.get().to_owned());
    }

    fn remove(&mut self, key: &str) {
        self.members.remove(key);
    }

    /// The common frame: the event under the host's name, the harness's names
    /// beside it, and the harness's transcript set aside (it is not Claude
    /// Code's JSON lines, so it is not read as one).
    fn frame(&mut self, harness: Harness, harness_event: &str, kind: EventKind) {
        self.set("hook_event_name", json!(kind.name()));
        self.set("harness", json!(harness.name()));
        self.set("harness_event_name", json!(harness_event));
        self.remove("transcript_path");
    }

    /// The tool under the host's name when the host knows it (else the
    /// harness's own), its arguments as an object with the host's field names.
    fn tool(&mut self, harness_name: &str, known: Option<Tool>, arguments: Option<&RawValue>) {
        let (name, fields) = match known {
            Some(tool) => (tool.name, tool.fields),
            None => (harness_name, &[][..]),
        };
        self.set("tool_name", json!(name));
        self.set("harness_tool_name", json!(harness_name));
        // A patch tool's arguments may be the patch itself.
        let loose = if name == "apply_patch" {
            "command"
        } else {
            "arguments"
        };
        let input = match arguments {
            Some(raw) => tool_input(raw, fields, loose),
            None => "{}".to_owned(),
        };
        self.members.insert("tool_input".into(), input);
    }

    /// A command tool told to run in another directory runs there: its relative
    /// paths are read against that directory, as the harness will run it. Only
    /// the fields this harness's shell tool takes, in the order it reads them
    /// (Gemini's `dir_path`, else its older `directory`; Cursor's
    /// `working_directory`): any other is the agent's decoy.
    fn run_in(&mut self, fields: &[&str]) {
        let Some(input) = self.members.get("tool_input") else {
            return;
        };
        let Ok(args) = serde_json::from_str::<Members>(input) else {
            return;
        };
        let dir = fields
            .iter()
            .find_map(|key| text(&args, key))
            .filter(|dir| !dir.is_empty());
        let Some(dir) = dir else {
            return;
        };
        let cwd = self
            .members
            .get("cwd")
            .and_then(|raw| serde_json::from_str::<String>(raw).ok());
        let joined = match cwd {
            Some(cwd) if std::path::Path::new(&dir).is_relative() => {
                std::path::Path::new(&cwd).join(&dir).display().to_string()
            }
            _ => dir,
        };
        self.set("cwd", json!(joined));
    }

    /// The members as one JSON object.
    fn text(&self) -> String {
        let mut text = String::from("{");
        for (i, (key, raw)) in self.members.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&json!(key).to_string());
            text.push(':');
            text.push_str(raw);
        }
        text.push('}');
        text
    }

    fn into_event(self, harness_event: &str, kind: EventKind) -> Translated {
        let cwd = self
            .members
            .get("cwd")
            .and_then(|raw| serde_json::from_str::<String>(raw).ok());
        Translated::Event(Event {
            payload: self.text(),
            harness_event: harness_event.to_owned(),
            kind,
            cwd,
        })
    }
}

/// The host's event for a harness's event name: `Ok(None)` for one the harness
/// sends that sandrail has no verdict for.
fn event_of(
    harness: Harness,
    events: &[(&str, EventKind)],
    unjudged: &[&str],
    name: &str,
) -> Result<Option<EventKind>, PayloadError> {
    if let Some((_, kind)) = events.iter().find(|(n, _)| *n == name) {
        return Ok(Some(*kind));
    }
    if unjudged.contains(&name) {
        return Ok(None);
    }
    let mut known: Vec<&str> = events.iter().map(|(n, _)| *n).collect();
    known.dedup();
    Err(PayloadError::UnknownHarnessEvent {
        harness: harness.title(),
        name: name.to_owned(),
        known: known.join(", "),
    })
}

/// A tool of the harness's under the host's name, from a `(theirs, host's)` table.
fn known_tool(tools: &[(&str, Tool)], name: &str) -> Option<Tool> {
    tools.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// A harness's tool under the host's name, and its argument fields renamed to
/// the host's: `(harness field, host field)`; a harness field that is absent
/// leaves the host's as the call spelt it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tool {
    pub name: &'static str,
    pub fields: &'static [(&'static str, &'static str)],
}

impl Tool {
    /// A tool whose arguments already have the host's field names.
    const fn named(name: &'static str) -> Tool {
        Tool { name, fields: &[] }
    }

    const fn renaming(name: &'static str, fields: &'static [(&'static str, &'static str)]) -> Tool {
        Tool { name, fields }
    }
}

/// The arguments as an object with the host's field names. The harness's field
/// decides: an argument the agent spelt under the host's name as well is
/// replaced, so a decoy `file_path` beside the real `path` cannot mislead.
/// Arguments that arrive as a JSON string (Copilot's `toolArgs`, Cursor's MCP
/// `tool_input`) are read from the string; a string that is not a JSON object is
/// kept whole under `arguments`.
fn tool_input(raw: &RawValue, renames: &[(&str, &str)], loose: &str) -> String {
    let owned;
    let object_text = if raw.get().starts_with('"') {
        match serde_json::from_str::<String>(raw.get()) {
            Ok(inner) if inner.trim_start().starts_with('{') => {
                owned = inner;
                owned.as_str()
            }
            Ok(inner) => {
                let mut kept = serde_json::Map::new();
                kept.insert(loose.to_owned(), json!(inner));
                return Value::Object(kept).to_string();
            }
            Err(_) => return "{}".to_owned(),
        }
    } else {
        raw.get()
    };
    let Ok(fields) = serde_json::from_str::<Members>(object_text) else {
        return json!({ "arguments": raw.get() }).to_string();
    };
    let mut payload = Payload::default();
    for (key, value) in &fields {
        payload.set_raw(key, value);
    }
    for (theirs, ours) in renames {
        if let Some(value) = fields.get(*theirs) {
            payload.set_raw(ours, value);
        }
    }
    payload.text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_field_wins_over_a_decoy_under_the_hosts_name() {
        let raw: Box<RawValue> =
            serde_json::from_str(r#"{"path":"sandrail.toml","file_path":"harmless.txt"}"#).unwrap();
        let input: Value =
            serde_json::from_str(&tool_input(&raw, &[("path", "file_path")], "arguments")).unwrap();
        assert_eq!(input["file_path"], "sandrail.toml");
    }

    #[test]
    fn arguments_in_a_json_string_are_read() {
        let raw: Box<RawValue> =
            serde_json::from_str(r#""{\"command\":\"rm -rf dist\"}""#).unwrap();
        let input: Value = serde_json::from_str(&tool_input(&raw, &[], "arguments")).unwrap();
        assert_eq!(input["command"], "rm -rf dist");
        let raw: Box<RawValue> = serde_json::from_str(r#""not json""#).unwrap();
        let input: Value = serde_json::from_str(&tool_input(&raw, &[], "arguments")).unwrap();
        assert_eq!(input["arguments"], "not json");
        let input: Value = serde_json::from_str(&tool_input(&raw, &[], "command")).unwrap();
        assert_eq!(input["command"], "not json");
    }
}
