//! Gemini CLI: its own event names (BeforeTool, AfterTool, BeforeAgent,
//! AfterAgent, PreCompress), snake_case tool names (`run_shell_command`,
//! `write_file`, `replace`, `read_file`), and a flat answer: `decision`
//! (`allow` | `deny`), `reason`, `systemMessage`, `hookSpecificOutput`.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::settings::{Layout, Settings};
use super::{Harness, Members, Payload, Said, Tool, Translated, event_of, known_tool, text};
use crate::event::EventKind;
use crate::protocol::PayloadError;

pub(super) const EVENTS: &[(&str, EventKind)] = &[
    ("SessionStart", EventKind::SessionStart),
    ("BeforeAgent", EventKind::UserPromptSubmit),
    ("BeforeTool", EventKind::PreToolUse),
    ("AfterTool", EventKind::PostToolUse),
    ("AfterAgent", EventKind::Stop),
    ("PreCompress", EventKind::PreCompact),
    ("SessionEnd", EventKind::SessionEnd),
];

const UNJUDGED: &[&str] = &[
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "Notification",
];

const TOOLS: &[(&str, Tool)] = &[
    ("run_shell_command", Tool::named("Bash")),
    ("write_file", Tool::named("Write")),
    ("replace", Tool::named("Edit")),
    (
        "read_file",
        Tool::renaming("Read", &[("absolute_path", "file_path")]),
    ),
    ("glob", Tool::renaming("Glob", &[("dir_path", "path")])),
    (
        "search_file_content",
        Tool::renaming("Grep", &[("dir_path", "path"), ("include", "glob")]),
    ),
    (
        "grep",
        Tool::renaming("Grep", &[("dir_path", "path"), ("include", "glob")]),
    ),
    (
        "list_directory",
        Tool::renaming("LS", &[("dir_path", "path")]),
    ),
    ("web_fetch", Tool::named("WebFetch")),
    ("google_web_search", Tool::named("WebSearch")),
    ("write_todos", Tool::named("TodoWrite")),
];

/// `.gemini/settings.json`; Gemini's timeout is in milliseconds and its
/// matcher a regular expression.
pub(super) const SETTINGS: Settings = Settings {
    file: ".gemini/settings.json",
    registration: ".gemini/settings.json",
    also: &[],
    in_home: &[".gemini/settings.json"],
    layout: Layout::Grouped,
    events: &[
        ("SessionStart", None),
        ("BeforeAgent", None),
        ("BeforeTool", Some(".*")),
        ("AfterTool", Some(".*")),
        ("AfterAgent", None),
        ("PreCompress", None),
        ("SessionEnd", None),
    ],
    command_key: "command",
    hook: |command, _event| json!({"name": "sandrail", "type": "command", "command": command, "timeout": 30000}),
    timeout_key: "timeout",
    timeout_unit_ms: 1,
    default_timeout: |_| Duration::from_secs(60),
};

pub(super) fn read(members: &Members) -> Result<Translated, PayloadError> {
    let name = text(members, "hook_event_name").ok_or(PayloadError::MissingEventName)?;
    let Some(kind) = event_of(Harness::Gemini, EVENTS, UNJUDGED, &name)? else {
        return Ok(Translated::Unjudged(name));
    };
    let mut payload = Payload::keeping(members, &["tool_name", "tool_input", "prompt_response"]);
    payload.frame(Harness::Gemini, &name, kind);
    if kind.is_tool_event() {
        let tool = text(members, "tool_name").unwrap_or_default();
        let known = known_tool(TOOLS, &tool);
        payload.tool(&tool, known, members.get("tool_input").copied());
        if tool == "run_shell_command" {
            payload.run_in(&["dir_path", "directory"]);
        }
        if known.is_none()
            && let Some(mcp) = mcp_name(members)
        {
            payload.set("tool_name", json!(mcp));
        }
    }
    if let Some(response) = members.get("prompt_response") {
        payload.set_raw("last_assistant_message", response);
    }
    Ok(payload.into_event(&name, kind))
}

/// An MCP tool under the host's `mcp__server__tool`, from the call's
/// `mcp_context` (Gemini's own `mcp_<server>_<tool>` cannot be split reliably).
fn mcp_name(members: &Members) -> Option<String> {
    let context: Map<String, Value> =
        serde_json::from_str(members.get("mcp_context")?.get()).ok()?;
    let server = context.get("server_name")?.as_str()?;
    let tool = context.get("tool_name")?.as_str()?;
    Some(format!("mcp__{server}__{tool}"))
}

/// Whether Gemini ignores a refusal of this event.
pub(super) fn cannot_refuse(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::SessionStart | EventKind::SessionEnd | EventKind::PreCompact
    )
}

pub(super) fn answer(harness_event: &str, _kind: EventKind, said: &Said) -> Option<Value> {
    let mut out = Map::new();
    if let Some(refusal) = &said.refusal {
        out.insert("decision".into(), json!("deny"));
        out.insert("reason".into(), json!(refusal));
    }
    if let Some(context) = &said.context {
        out.insert(
            "hookSpecificOutput".into(),
            json!({"hookEventName": harness_event, "additionalContext": context}),
        );
    }
    if let Some(message) = &said.to_person {
        out.insert("systemMessage".into(), json!(message));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}
