//! Claude Code's hook protocol: the payload on stdin and the JSON answer on stdout.
//!
//! Everything harness-specific lives here, so that the rest of the host works on
//! [`HookInput`] and [`Decision`] alone.

use std::io::Read;

use serde_json::{Map, Value, json};

use crate::event::EventKind;

/// The largest payload accepted, in bytes.
pub const MAX_PAYLOAD_BYTES: usize = 16 << 20;
/// Claude Code caps strings in a hook answer at this many characters.
pub const MAX_ANSWER_CHARS: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("cannot read the hook payload from stdin: {0}")]
    Read(#[from] std::io::Error),
    #[error("the hook payload on stdin is empty; the harness sends one JSON object per event")]
    Empty,
    #[error("the hook payload is larger than {MAX_PAYLOAD_BYTES} bytes")]
    TooLarge,
    #[error("the hook payload is not valid UTF-8 (invalid byte at offset {0})")]
    NotUtf8(usize),
    #[error("the hook payload is not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("the hook payload is not a JSON object")]
    NotObject,
    #[error("the hook payload has no `hook_event_name`")]
    MissingEventName,
    #[error(
        "unknown hook event '{0}'; sandrail judges {events}",
        events = EventKind::all_names()
    )]
    UnknownEvent(String),
    #[error("the hook payload has no `session_id` (a non-empty string)")]
    MissingSessionId,
}

impl PayloadError {
    /// Events Claude Code sends that sandrail does not judge are not an error: there
    /// is simply nothing to say about them.
    pub fn is_unjudged_event(&self) -> bool {
        matches!(self, PayloadError::UnknownEvent(name) if KNOWN_UNJUDGED.contains(&name.as_str()))
    }
}

/// Claude Code events a user may route to sandrail that it has no verdict for.
const KNOWN_UNJUDGED: &[&str] = &[
    "Notification",
    "PermissionRequest",
    "PostToolUseFailure",
    "SubagentStart",
    "PostCompact",
];

/// One parsed hook payload.
#[derive(Debug, Clone)]
pub struct HookInput {
    pub kind: EventKind,
    pub session_id: String,
    pub cwd: Option<String>,
    pub transcript_path: Option<String>,
    pub tool_name: Option<String>,
    /// The tool input object, when the event has one.
    pub tool_input: Option<Value>,
    /// The payload as parsed.
    pub payload: Value,
    /// The payload text as received.
    pub raw: String,
}

impl HookInput {
    /// Reads and validates one payload, refusing anything over [`MAX_PAYLOAD_BYTES`].
    pub fn read(reader: impl Read) -> Result<HookInput, PayloadError> {
        let mut bytes = Vec::new();
        reader
            .take(MAX_PAYLOAD_BYTES as u64 + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() > MAX_PAYLOAD_BYTES {
            return Err(PayloadError::TooLarge);
        }
        let raw = String::from_utf8(bytes)
            .map_err(|e| PayloadError::NotUtf8(e.utf8_error().valid_up_to()))?;
        HookInput::parse(raw)
    }

    pub fn parse(raw: String) -> Result<HookInput, PayloadError> {
        if raw.trim().is_empty() {
            return Err(PayloadError::Empty);
        }
        // serde_json refuses nesting deeper than 128 levels, which bounds the stack.
        let payload: Value = serde_json::from_str(&raw).map_err(PayloadError::NotJson)?;
        let object = payload.as_object().ok_or(PayloadError::NotObject)?;
        let name = object
            .get("hook_event_name")
            .and_then(Value::as_str)
            .ok_or(PayloadError::MissingEventName)?;
        let kind = EventKind::from_name(name)
            .ok_or_else(|| PayloadError::UnknownEvent(name.to_owned()))?;
        let session_id = object
            .get("session_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(PayloadError::MissingSessionId)?
            .to_owned();
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        let cwd = text("cwd");
        let transcript_path = text("transcript_path");
        let (tool_name, tool_input) = if kind.is_tool_event() {
            (text("tool_name"), object.get("tool_input").cloned())
        } else {
            (None, None)
        };
        Ok(HookInput {
            kind,
            session_id,
            cwd,
            transcript_path,
            tool_name,
            tool_input,
            payload,
            raw,
        })
    }
}

/// What the guardrails decided about one event, before it is put in the harness's words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// Reasons the event is refused, each already attributed to its guardrail.
    pub refusals: Vec<String>,
    /// Context for the agent.
    pub notes: Vec<String>,
}

impl Decision {
    pub fn is_silent(&self) -> bool {
        self.refusals.is_empty() && self.notes.is_empty()
    }
}

/// Puts a decision in Claude Code's words; `None` when there is nothing to say.
pub fn render(kind: EventKind, decision: &Decision) -> Option<Value> {
    if decision.is_silent() {
        return None;
    }
    let reason = join_capped(&decision.refusals);
    let context = join_capped(&decision.notes);
    let mut out = Map::new();
    match kind {
        EventKind::PreToolUse => {
            let mut specific = Map::new();
            specific.insert("hookEventName".into(), json!(kind.name()));
            if let Some(reason) = reason {
                specific.insert("permissionDecision".into(), json!("deny"));
                specific.insert("permissionDecisionReason".into(), json!(reason));
            }
            if let Some(context) = context {
                specific.insert("additionalContext".into(), json!(context));
            }
            out.insert("hookSpecificOutput".into(), Value::Object(specific));
        }
        EventKind::PostToolUse | EventKind::UserPromptSubmit => {
            if let Some(reason) = reason {
                out.insert("decision".into(), json!("block"));
                out.insert("reason".into(), json!(reason));
            }
            if let Some(context) = context {
                out.insert(
                    "hookSpecificOutput".into(),
                    json!({"hookEventName": kind.name(), "additionalContext": context}),
                );
            }
        }
        EventKind::Stop | EventKind::SubagentStop | EventKind::PreCompact => {
            if let Some(reason) = reason {
                out.insert("decision".into(), json!("block"));
                out.insert("reason".into(), json!(reason));
            }
            if let Some(context) = context {
                out.insert("systemMessage".into(), json!(context));
            }
        }
        EventKind::SessionStart => {
            // SessionStart cannot be refused; a refusal is shown to the user instead.
            if let Some(context) = context {
                out.insert(
                    "hookSpecificOutput".into(),
                    json!({"hookEventName": kind.name(), "additionalContext": context}),
                );
            }
            if let Some(reason) = reason {
                out.insert("systemMessage".into(), json!(reason));
            }
        }
        EventKind::SessionEnd => {
            let all: Vec<String> = decision
                .refusals
                .iter()
                .chain(&decision.notes)
                .cloned()
                .collect();
            if let Some(text) = join_capped(&all) {
                out.insert("systemMessage".into(), json!(text));
            }
        }
    }
    Some(Value::Object(out))
}

/// Whether a refusal of this event actually stops anything in Claude Code.
pub fn can_refuse(kind: EventKind) -> bool {
    !matches!(kind, EventKind::SessionStart | EventKind::SessionEnd)
}

fn join_capped(parts: &[String]) -> Option<String> {
    if parts.is_empty() {
        return None;
    }
    Some(cap_chars(&parts.join("\n"), MAX_ANSWER_CHARS))
}

/// Cuts `text` to at most `max` characters, marking the cut.
pub fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((cut, _)) if text[cut..].chars().count() > 1 => {
            let mut out = text[..cut].to_owned();
            out.push('…');
            out
        }
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_short_text_and_marks_cuts() {
        assert_eq!(cap_chars("abc", 3), "abc");
        assert_eq!(cap_chars("abcd", 3), "ab…");
        assert_eq!(cap_chars("ééé", 10), "ééé");
    }

    #[test]
    fn pre_tool_use_deny_shape() {
        let d = Decision {
            refusals: vec!["[g] no".into()],
            notes: vec![],
        };
        let out = render(EventKind::PreToolUse, &d).unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(
            out["hookSpecificOutput"]["permissionDecisionReason"],
            "[g] no"
        );
    }

    #[test]
    fn silence_renders_nothing() {
        assert!(render(EventKind::Stop, &Decision::default()).is_none());
    }
}
