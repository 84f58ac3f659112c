//! GitHub Copilot CLI and coding agent. Two payload dialects, chosen by how the
//! event is named in the hooks file: camelCase events (`preToolUse`,
//! `agentStop`, …) send camelCase fields with the runtime's tool names (`bash`,
//! `edit`, `create`, `view`) and the arguments as a JSON *string* in `toolArgs`,
//! and name no event; PascalCase events send Claude Code's fields and tool names.
//! Either is answered with flat fields: `permissionDecision`,
//! `permissionDecisionReason`, `additionalContext`, `decision` / `reason`.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::settings::{Layout, Settings};
use super::{Harness, Members, Payload, Said, Tool, Translated, event_of, known_tool, text};
use crate::event::EventKind;
use crate::protocol::PayloadError;

pub(super) const EVENTS: &[(&str, EventKind)] = &[
    ("sessionStart", EventKind::SessionStart),
    ("userPromptSubmitted", EventKind::UserPromptSubmit),
    ("preToolUse", EventKind::PreToolUse),
    ("postToolUse", EventKind::PostToolUse),
    ("agentStop", EventKind::Stop),
    ("subagentStop", EventKind::SubagentStop),
    ("preCompact", EventKind::PreCompact),
    ("sessionEnd", EventKind::SessionEnd),
    ("SessionStart", EventKind::SessionStart),
    ("UserPromptSubmit", EventKind::UserPromptSubmit),
    ("PreToolUse", EventKind::PreToolUse),
    ("PostToolUse", EventKind::PostToolUse),
    ("Stop", EventKind::Stop),
    ("SubagentStop", EventKind::SubagentStop),
    ("PreCompact", EventKind::PreCompact),
    ("SessionEnd", EventKind::SessionEnd),
];

const UNJUDGED: &[&str] = &[
    "postToolUseFailure",
    "errorOccurred",
    "notification",
    "permissionRequest",
    "subagentStart",
    "userPromptTransformed",
    "PostToolUseFailure",
    "PermissionRequest",
    "SubagentStart",
    "Notification",
];

const TOOLS: &[(&str, Tool)] = &[
    ("bash", Tool::named("Bash")),
    // Typed into a shell `bash` started: a command line like any other.
    (
        "write_bash",
        Tool::renaming("Bash", &[("input", "command")]),
    ),
    // Its arguments are the patch text itself.
    ("apply_patch", Tool::named("apply_patch")),
    ("powershell", Tool::named("PowerShell")),
    (
        "edit",
        Tool::renaming(
            "Edit",
            &[
                ("path", "file_path"),
                ("old_str", "old_string"),
                ("new_str", "new_string"),
            ],
        ),
    ),
    (
        "create",
        Tool::renaming("Write", &[("path", "file_path"), ("file_text", "content")]),
    ),
    ("view", Tool::renaming("Read", &[("path", "file_path")])),
    ("glob", Tool::named("Glob")),
    ("grep", Tool::named("Grep")),
    ("task", Tool::named("Agent")),
    ("web_fetch", Tool::named("WebFetch")),
];

/// camelCase fields and the host's names for them.
const RENAMED: &[(&str, &str)] = &[
    ("sessionId", "session_id"),
    ("toolResult", "tool_response"),
    ("stopReason", "stop_reason"),
    ("agentId", "agent_id"),
    ("agentType", "agent_type"),
    ("agentName", "agent_name"),
    ("response", "last_assistant_message"),
    ("initialPrompt", "initial_prompt"),
    ("customInstructions", "custom_instructions"),
];

/// `.github/hooks/sandrail.json`, the file the CLI and the cloud coding agent
/// both read, with camelCase events.
pub(super) const SETTINGS: Settings = Settings {
    file: ".github/hooks/sandrail.json",
    registration: ".github/hooks/sandrail.json",
    also: &[],
    in_home: &[],
    layout: Layout::Flat,
    events: &[
        ("sessionStart", None),
        ("userPromptSubmitted", None),
        ("preToolUse", None),
        ("postToolUse", None),
        ("agentStop", None),
        ("subagentStop", None),
        ("preCompact", None),
        ("sessionEnd", None),
    ],
    command_key: "bash",
    hook: |command, _event| json!({"type": "command", "bash": command, "timeoutSec": 30}),
    timeout_key: "timeoutSec",
    timeout_unit_ms: 1000,
    default_timeout: |_| Duration::from_secs(30),
};

pub(super) fn read(members: &Members) -> Result<Translated, PayloadError> {
    let name = match text(members, "hook_event_name") {
        Some(name) => name,
        None => camel_event(members)
            .ok_or(PayloadError::MissingEventName)?
            .to_owned(),
    };
    let Some(kind) = event_of(Harness::Copilot, EVENTS, UNJUDGED, &name)? else {
        return Ok(Translated::Unjudged(name));
    };
    let mut moved: Vec<&str> = vec![
        "toolName",
        "toolArgs",
        "tool_name",
        "tool_input",
        "transcriptPath",
    ];
    moved.extend(RENAMED.iter().map(|(theirs, _)| *theirs));
    let mut payload = Payload::keeping(members, &moved);
    payload.frame(Harness::Copilot, &name, kind);
    for (theirs, ours) in RENAMED {
        if let Some(value) = members.get(*theirs) {
            payload.set_raw(ours, value);
        }
    }
    if kind.is_tool_event() {
        let (tool, arguments) = match text(members, "toolName") {
            Some(tool) => (tool, members.get("toolArgs").copied()),
            None => (
                text(members, "tool_name").unwrap_or_default(),
                members.get("tool_input").copied(),
            ),
        };
        payload.tool(&tool, known_tool(TOOLS, &tool), arguments);
    }
    Ok(payload.into_event(&name, kind))
}

/// The event of a camelCase payload, which does not name it, from the fields
/// only that event carries. The payload's top level is the harness's own (the
/// agent's words are inside `toolArgs`, a string), so its shape is not the
/// agent's to choose.
fn camel_event(members: &Members) -> Option<&'static str> {
    let has = |key: &str| members.contains_key(key);
    Some(if has("toolName") && has("toolResult") {
        "postToolUse"
    } else if has("toolName") && has("error") {
        "postToolUseFailure"
    } else if has("toolName") {
        "preToolUse"
    } else if has("prompt") {
        "userPromptSubmitted"
    } else if has("agentName") || has("agentId") {
        if has("response") || has("stopReason") {
            "subagentStop"
        } else {
            "subagentStart"
        }
    } else if has("stopReason") || has("stop_hook_active") {
        "agentStop"
    } else if has("source") || has("initialPrompt") {
        "sessionStart"
    } else if has("trigger") {
        "preCompact"
    } else if has("reason") {
        "sessionEnd"
    } else if has("error") {
        "errorOccurred"
    } else {
        return None;
    })
}

/// Whether Copilot ignores a refusal of this event (a command hook cannot
/// block a prompt: its output is dropped).
pub(super) fn cannot_refuse(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::UserPromptSubmit
            | EventKind::SessionStart
            | EventKind::SessionEnd
            | EventKind::PreCompact
    )
}

pub(super) fn answer(kind: EventKind, said: &Said) -> Option<Value> {
    let mut out = Map::new();
    match kind {
        EventKind::PreToolUse => {
            if let Some(refusal) = &said.refusal {
                let decision = if said.ask { "ask" } else { "deny" };
                out.insert("permissionDecision".into(), json!(decision));
                out.insert("permissionDecisionReason".into(), json!(refusal));
            }
        }
        EventKind::PostToolUse => {
            if let Some(text) = said.refusal_and_context() {
                out.insert("additionalContext".into(), json!(text));
            }
        }
        EventKind::Stop | EventKind::SubagentStop => {
            if let Some(refusal) = &said.refusal {
                out.insert("decision".into(), json!("block"));
                out.insert("reason".into(), json!(refusal));
            }
        }
        EventKind::SessionStart => {
            if let Some(context) = &said.context {
                out.insert("additionalContext".into(), json!(context));
            }
        }
        _ => {}
    }
    // Copilot has no field for the person: they read stderr in its log.
    if let Some(message) = &said.to_person {
        eprintln!("{message}");
    }
    (!out.is_empty()).then_some(Value::Object(out))
}
