//! Claude Code: the host's own event model, so its payloads and answers pass
//! as they are. Only its settings live here.

use std::time::Duration;

use serde_json::{Value, json};

use super::settings::{Layout, Settings};
use crate::event::EventKind;

/// `.claude/settings.json`: every event sandrail handles, ConfigChange included
/// (self-protection refuses a settings change that drops these hooks).
pub(super) const SETTINGS: Settings = Settings {
    file: ".claude/settings.json",
    registration: ".claude/settings.local.json",
    also: &[".claude/settings.local.json"],
    in_home: &[".claude/settings.json"],
    layout: Layout::Grouped,
    events: &[
        ("PreToolUse", Some("*")),
        ("PostToolUse", Some("*")),
        ("UserPromptSubmit", None),
        ("Stop", None),
        ("SubagentStop", None),
        ("SessionStart", None),
        ("SessionEnd", None),
        ("PreCompact", None),
        ("ConfigChange", None),
    ],
    command_key: "command",
    hook: |command, _event| json!({"type": "command", "command": command}),
    timeout_key: "timeout",
    timeout_unit_ms: 1000,
    default_timeout: |event| match event {
        // Claude Code gives a prompt hook 30 s and SessionEnd's hooks 1.5 s;
        // the rest 60 s in the versions that ran them longest-lived (600 s in
        // later ones: the shorter holds).
        EventKind::UserPromptSubmit => Duration::from_secs(30),
        EventKind::SessionEnd => Duration::from_millis(1500),
        _ => Duration::from_secs(60),
    },
};

/// A running `sandrail serve` as an http hook, naming the project in the header
/// the server reads (Claude Code fills in `$CLAUDE_PROJECT_DIR`).
pub(super) fn http_hook(url: &str) -> Value {
    let mut headers = serde_json::Map::new();
    headers.insert(
        sandrail_forward::PROJECT_HEADER.into(),
        json!("$CLAUDE_PROJECT_DIR"),
    );
    json!({
        "type": "http",
        "url": url,
        "headers": headers,
        "allowedEnvVars": ["CLAUDE_PROJECT_DIR"],
    })
}
