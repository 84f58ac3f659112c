//! OpenAI Codex CLI: Claude Code's event names and field names, plus `turn_id`
//! and `model`; the shell tool is `Bash`, patches are `apply_patch` with the
//! patch text in `command`. Its answer schema is strict: an unknown field, `ask`
//! or a bare `allow` makes the hook count as failed and the tool run.

use std::time::Duration;

use serde_json::{Value, json};

use super::settings::{Layout, Settings};
use super::{Harness, Members, Payload, Said, Translated, event_of, text};
use crate::event::EventKind;
use crate::protocol::PayloadError;

pub(super) const EVENTS: &[(&str, EventKind)] = &[
    ("SessionStart", EventKind::SessionStart),
    ("UserPromptSubmit", EventKind::UserPromptSubmit),
    ("PreToolUse", EventKind::PreToolUse),
    ("PostToolUse", EventKind::PostToolUse),
    ("Stop", EventKind::Stop),
    ("SubagentStop", EventKind::SubagentStop),
    ("PreCompact", EventKind::PreCompact),
];

const UNJUDGED: &[&str] = &[
    "PermissionRequest",
    "SubagentStart",
    "PostCompact",
    "StopFailure",
];

/// `.codex/hooks.json`, Claude Code's layout. Codex runs a project's hooks
/// only once they are reviewed and trusted in its `/hooks` view.
pub(super) const SETTINGS: Settings = Settings {
    file: ".codex/hooks.json",
    registration: ".codex/hooks.json",
    also: &[],
    in_home: &[".codex/hooks.json"],
    layout: Layout::Grouped,
    events: &[
        ("SessionStart", None),
        ("UserPromptSubmit", None),
        ("PreToolUse", Some("*")),
        ("PostToolUse", Some("*")),
        ("Stop", None),
        ("SubagentStop", None),
        ("PreCompact", None),
    ],
    command_key: "command",
    hook: |command, _event| json!({"type": "command", "command": command, "timeout": 30}),
    timeout_key: "timeout",
    timeout_unit_ms: 1000,
    default_timeout: |_| Duration::from_secs(600),
};

pub(super) fn read(members: &Members) -> Result<Translated, PayloadError> {
    let name = text(members, "hook_event_name").ok_or(PayloadError::MissingEventName)?;
    let Some(kind) = event_of(Harness::Codex, EVENTS, UNJUDGED, &name)? else {
        return Ok(Translated::Unjudged(name));
    };
    let mut payload = Payload::keeping(members, &["tool_name", "tool_input"]);
    payload.frame(Harness::Codex, &name, kind);
    if kind.is_tool_event() {
        let tool = text(members, "tool_name").unwrap_or_default();
        // Codex's tools already carry the host's names (`apply_patch` is one of them).
        payload.tool(&tool, None, members.get("tool_input").copied());
    }
    Ok(payload.into_event(&name, kind))
}

/// Claude Code's answer, which Codex reads, with a question turned into a
/// refusal: Codex rejects `ask`, and a rejected answer lets the tool run.
pub(super) fn answer(kind: EventKind, said: &Said, mut claude: Value) -> Option<Value> {
    if kind == EventKind::PreToolUse
        && said.ask
        && let Some(specific) = claude.get_mut("hookSpecificOutput")
    {
        specific["permissionDecision"] = json!("deny");
    }
    Some(claude)
}
