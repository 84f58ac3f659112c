//! Cursor's agent: camelCase events (the generic preToolUse / postToolUse and the
//! older per-kind ones: beforeShellExecution, beforeReadFile, afterFileEdit, …),
//! `conversation_id` for the session and `generation_id` for the turn, tools
//! named `Shell`, `Read`, `Write`, `Delete`, `Task`, `MCP:<tool>`, and an answer
//! of `permission` / `user_message` / `agent_message` (stop: `followup_message`).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::settings::{Layout, Settings};
use super::{Harness, Members, Payload, Said, Tool, Translated, event_of, known_tool, text};
use crate::event::EventKind;
use crate::protocol::PayloadError;

pub(super) const EVENTS: &[(&str, EventKind)] = &[
    ("sessionStart", EventKind::SessionStart),
    ("beforeSubmitPrompt", EventKind::UserPromptSubmit),
    ("preToolUse", EventKind::PreToolUse),
    ("beforeShellExecution", EventKind::PreToolUse),
    ("beforeMCPExecution", EventKind::PreToolUse),
    ("beforeReadFile", EventKind::PreToolUse),
    ("postToolUse", EventKind::PostToolUse),
    ("afterShellExecution", EventKind::PostToolUse),
    ("afterMCPExecution", EventKind::PostToolUse),
    ("afterFileEdit", EventKind::PostToolUse),
    ("stop", EventKind::Stop),
    ("subagentStop", EventKind::SubagentStop),
    ("preCompact", EventKind::PreCompact),
    ("sessionEnd", EventKind::SessionEnd),
];

const UNJUDGED: &[&str] = &[
    "subagentStart",
    "postToolUseFailure",
    "afterAgentResponse",
    "afterAgentThought",
    "beforeTabFileRead",
    "afterTabFileEdit",
    "workspaceOpen",
];

const TOOLS: &[(&str, Tool)] = &[
    ("Shell", Tool::named("Bash")),
    ("Read", Tool::renaming("Read", &[("path", "file_path")])),
    (
        "Write",
        Tool::renaming("Write", &[("path", "file_path"), ("contents", "content")]),
    ),
    ("Delete", Tool::renaming("Delete", &[("path", "file_path")])),
    ("Grep", Tool::named("Grep")),
    ("Task", Tool::named("Agent")),
];

/// Top-level fields of the per-kind events that become the tool's input.
const MOVED: &[&str] = &[
    "tool_name",
    "tool_input",
    "tool_output",
    "command",
    "file_path",
    "content",
    "attachments",
    "edits",
    "output",
    "result_json",
];

/// `.cursor/hooks.json`. A tool call is refused, not let through, when the hook
/// crashes or times out (`failClosed`): failing open is the config's choice
/// (`on_error`), never a side effect.
pub(super) const SETTINGS: Settings = Settings {
    file: ".cursor/hooks.json",
    registration: ".cursor/hooks.json",
    also: &[],
    in_home: &[".cursor/hooks.json"],
    layout: Layout::Flat,
    events: &[
        ("sessionStart", None),
        ("beforeSubmitPrompt", None),
        ("preToolUse", None),
        ("postToolUse", None),
        ("stop", None),
        ("subagentStop", None),
        ("preCompact", None),
        ("sessionEnd", None),
    ],
    command_key: "command",
    hook: |command, event| {
        if event == "preToolUse" {
            json!({"command": command, "timeout": 30, "failClosed": true})
        } else {
            json!({"command": command, "timeout": 30})
        }
    },
    timeout_key: "timeout",
    timeout_unit_ms: 1000,
    default_timeout: |_| Duration::from_secs(30),
};

/// Whether a payload is Cursor's own: its top level (the harness's, never the
/// agent's) names Cursor's version and one of Cursor's events.
pub(super) fn sent(members: &Members) -> bool {
    members.contains_key("cursor_version")
        && text(members, "hook_event_name").is_some_and(|name| {
            EVENTS.iter().any(|(n, _)| *n == name) || UNJUDGED.contains(&name.as_str())
        })
}

pub(super) fn read(members: &Members) -> Result<Translated, PayloadError> {
    let name = text(members, "hook_event_name").ok_or(PayloadError::MissingEventName)?;
    let Some(kind) = event_of(Harness::Cursor, EVENTS, UNJUDGED, &name)? else {
        return Ok(Translated::Unjudged(name));
    };
    let mut payload = Payload::keeping(members, MOVED);
    payload.frame(Harness::Cursor, &name, kind);
    if let Some(session) = text(members, "conversation_id").or_else(|| text(members, "session_id"))
    {
        payload.set("session_id", json!(session));
    }
    if let Some(turn) = text(members, "generation_id") {
        payload.set("turn_id", json!(turn));
    }
    if text(members, "cwd").is_none()
        && let Some(root) = first_workspace_root(members)
    {
        payload.set("cwd", json!(root));
    }
    match name.as_str() {
        "beforeShellExecution" | "afterShellExecution" => {
            let command = text(members, "command").unwrap_or_default();
            payload.set("tool_name", json!("Bash"));
            payload.set("harness_tool_name", json!("Shell"));
            payload.set("tool_input", json!({ "command": command }));
            if let Some(output) = text(members, "output") {
                payload.set("tool_response", json!({ "output": output }));
            }
        }
        "beforeReadFile" => {
            // The file's content stays out: the host reads the file itself.
            let path = text(members, "file_path").unwrap_or_default();
            payload.set("tool_name", json!("Read"));
            payload.set("harness_tool_name", json!("Read"));
            payload.set("tool_input", json!({ "file_path": path }));
        }
        "afterFileEdit" => {
            let path = text(members, "file_path").unwrap_or_default();
            let edits: Value = members
                .get("edits")
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or(Value::Null);
            payload.set("tool_name", json!("MultiEdit"));
            payload.set("harness_tool_name", json!("afterFileEdit"));
            payload.set("tool_input", json!({ "file_path": path, "edits": edits }));
        }
        "beforeMCPExecution" | "afterMCPExecution" => {
            let tool = text(members, "tool_name").unwrap_or_default();
            payload.tool(&tool, None, members.get("tool_input").copied());
            payload.set("tool_name", json!(format!("mcp__cursor__{tool}")));
            if let Some(result) = text(members, "result_json") {
                payload.set("tool_response", json_or_text(&result));
            }
        }
        _ if kind.is_tool_event() => {
            let tool = text(members, "tool_name").unwrap_or_default();
            payload.tool(
                &tool,
                known_tool(TOOLS, &tool),
                members.get("tool_input").copied(),
            );
            if tool == "Shell" {
                payload.run_in(&["working_directory"]);
            }
            if let Some(mcp) = tool.strip_prefix("MCP:") {
                payload.set("tool_name", json!(format!("mcp__cursor__{mcp}")));
            }
            if let Some(output) = members.get("tool_output") {
                let output = serde_json::from_str::<String>(output.get())
                    .map(|text| json_or_text(&text))
                    .unwrap_or_else(|_| serde_json::from_str(output.get()).unwrap_or(Value::Null));
                payload.set("tool_response", output);
            }
        }
        "stop" | "subagentStop" => {
            let looping = members
                .get("loop_count")
                .and_then(|raw| serde_json::from_str::<u64>(raw.get()).ok())
                .is_some_and(|n| n > 0);
            payload.set("stop_hook_active", json!(looping));
        }
        _ => {}
    }
    Ok(payload.into_event(&name, kind))
}

fn first_workspace_root(members: &Members) -> Option<String> {
    let roots: Vec<String> = serde_json::from_str(members.get("workspace_roots")?.get()).ok()?;
    roots.into_iter().next()
}

/// A JSON-encoded string read as the JSON it holds, else kept as text.
fn json_or_text(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| json!(text))
}

/// Cursor events whose answer cannot stop anything.
pub(super) fn cannot_refuse(harness_event: &str) -> bool {
    matches!(
        harness_event,
        "postToolUse"
            | "afterShellExecution"
            | "afterMCPExecution"
            | "afterFileEdit"
            | "sessionStart"
            | "sessionEnd"
            | "preCompact"
    )
}

pub(super) fn answer(harness_event: &str, kind: EventKind, said: &Said) -> Option<Value> {
    let mut out = Map::new();
    match harness_event {
        _ if kind == EventKind::PreToolUse => {
            if let Some(refusal) = &said.refusal {
                // Cursor enforces a question only before a shell or MCP command.
                let asks = said.ask
                    && matches!(harness_event, "beforeShellExecution" | "beforeMCPExecution");
                out.insert(
                    "permission".into(),
                    json!(if asks { "ask" } else { "deny" }),
                );
                out.insert("agent_message".into(), json!(refusal));
                out.insert("user_message".into(), json!(refusal));
            } else if let Some(context) = &said.context {
                out.insert("agent_message".into(), json!(context));
            }
        }
        "postToolUse" => {
            if let Some(text) = said.refusal_and_context() {
                out.insert("additional_context".into(), json!(text));
            }
        }
        "beforeSubmitPrompt" => {
            if let Some(refusal) = &said.refusal {
                out.insert("continue".into(), json!(false));
                out.insert("user_message".into(), json!(refusal));
            }
        }
        "stop" | "subagentStop" => {
            if let Some(refusal) = &said.refusal {
                out.insert("followup_message".into(), json!(refusal));
            }
        }
        "sessionStart" => {
            if let Some(context) = &said.context {
                out.insert("additional_context".into(), json!(context));
            }
        }
        _ => {}
    }
    if let Some(message) = &said.to_person {
        let shown = match out.get("user_message").and_then(Value::as_str) {
            Some(said) => format!("{message}\n{said}"),
            None => message.clone(),
        };
        if out.contains_key("user_message") || harness_event == "preCompact" {
            out.insert("user_message".into(), json!(shown));
        } else {
            eprintln!("{message}");
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}
