//! An event as sandrail reads it, before anything judges it: the hook events,
//! independent of any one harness's spelling; the payload read into one model
//! ([`payload`]); the clock events are stamped with ([`clock`]); and text from
//! outside made safe to show ([`text`]). The bottom layer: it imports nothing
//! of sandrail's.

pub mod clock;
pub mod payload;
pub mod text;

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

use std::fmt;

/// A hook event kind. Names follow Claude Code's `hook_event_name`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum EventKind {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
    SubagentStop,
    PreCompact,
    SessionEnd,
    /// Claude Code's settings changed during the session: judged by the host's
    /// self-protection alone, never by a guardrail (the contract has no such event).
    ConfigChange,
}

impl EventKind {
    /// The events a guardrail may subscribe to.
    pub const ALL: [EventKind; 8] = [
        EventKind::SessionStart,
        EventKind::UserPromptSubmit,
        EventKind::PreToolUse,
        EventKind::PostToolUse,
        EventKind::Stop,
        EventKind::SubagentStop,
        EventKind::PreCompact,
        EventKind::SessionEnd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EventKind::SessionStart => "SessionStart",
            EventKind::UserPromptSubmit => "UserPromptSubmit",
            EventKind::PreToolUse => "PreToolUse",
            EventKind::PostToolUse => "PostToolUse",
            EventKind::Stop => "Stop",
            EventKind::SubagentStop => "SubagentStop",
            EventKind::PreCompact => "PreCompact",
            EventKind::SessionEnd => "SessionEnd",
            EventKind::ConfigChange => "ConfigChange",
        }
    }

    /// An event name as a payload carries it: a guardrail's events, or one the
    /// host judges alone.
    pub fn from_payload_name(name: &str) -> Option<EventKind> {
        EventKind::from_name(name).or((name == "ConfigChange").then_some(EventKind::ConfigChange))
    }

    pub fn from_name(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the event is about one tool call, so a tool matcher applies to it.
    pub fn is_tool_event(self) -> bool {
        matches!(self, EventKind::PreToolUse | EventKind::PostToolUse)
    }

    /// A comma-separated list of every name, for error messages.
    pub fn all_names() -> String {
        EventKind::ALL.map(|k| k.name()).join(", ")
    }
}

/// Whether debug messages are wanted (`SANDRAIL_LOG=debug`).
pub fn debug_logging() -> bool {
    std::env::var("SANDRAIL_LOG").is_ok_and(|v| v.eq_ignore_ascii_case("debug"))
}

/// Whether a refusal of this event actually stops anything in Claude Code.
pub fn can_refuse(kind: EventKind) -> bool {
    !matches!(kind, EventKind::SessionStart | EventKind::SessionEnd)
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
