//! Claude Code: the host's own event model, so its payloads and answers pass
//! as they are. Only its settings live here.

use serde_json::{Value, json};

use super::settings::{Layout, Settings};

/// `.claude/settings.json`: every event sandrail handles, ConfigChange included
/// (self-protection refuses a settings change that drops these hooks).
pub(super) const SETTINGS: Settings = Settings {
    file: ".claude/settings.json",
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
};

/// A running `sandrail serve` as an http hook, naming the project in the header
/// the server reads (Claude Code fills in `$CLAUDE_PROJECT_DIR`).
pub(super) fn http_hook(url: &str) -> Value {
    let mut headers = serde_json::Map::new();
    headers.insert(
        crate::serve::PROJECT_HEADER.into(),
        json!("$CLAUDE_PROJECT_DIR"),
    );
    json!({
        "type": "http",
        "url": url,
        "headers": headers,
        "allowedEnvVars": ["CLAUDE_PROJECT_DIR"],
    })
}
