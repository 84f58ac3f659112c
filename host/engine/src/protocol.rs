//! Claude Code's hook protocol: the payload on stdin (read by the
//! `sandrail-event` crate, [`HookInput`]) and the JSON answer on stdout.
//!
//! Everything harness-specific lives here, so that the rest of the host works on
//! [`HookInput`] and [`Decision`] alone.

use serde_json::{Map, Value, json};

use crate::event::EventKind;
pub use sandrail_event::can_refuse;
pub use sandrail_event::payload::{
    HookInput, MAX_PAYLOAD_BYTES, PLATFORM_KEY, PayloadError, members,
};
pub use sandrail_event::text::cap_chars;

/// Claude Code caps strings in a hook answer at this many characters.
pub const MAX_ANSWER_CHARS: usize = 10_000;

/// What the guardrails decided about one event, before it is put in the harness's words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// Reasons the event is refused, each already attributed to its guardrail.
    pub refusals: Vec<String>,
    /// Context for the agent.
    pub notes: Vec<String>,
    /// The refusal is a question for the user (a soft_block answering `ask`):
    /// where the harness can prompt, it asks instead of refusing.
    pub ask: bool,
    /// Who judged and how, for the receipt.
    pub trace: crate::receipts::Trace,
    /// What the person must hear whatever the event (the policy files changed, a
    /// record was tampered with): a `systemMessage`, and in the receipt.
    pub alerts: Vec<String>,
}

impl Decision {
    pub fn is_silent(&self) -> bool {
        self.refusals.is_empty() && self.notes.is_empty() && self.alerts.is_empty()
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
                let decision = if decision.ask { "ask" } else { "deny" };
                specific.insert("permissionDecision".into(), json!(decision));
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
        EventKind::Stop
        | EventKind::SubagentStop
        | EventKind::PreCompact
        | EventKind::ConfigChange => {
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
    if let Some(alerts) = join_capped(&decision.alerts) {
        // To the person, before anything the event's own answer says to them.
        let message = match out.get("systemMessage").and_then(Value::as_str) {
            Some(said) => join_capped(&[alerts, said.to_owned()]).unwrap_or_default(),
            None => alerts,
        };
        out.insert("systemMessage".into(), json!(message));
    }
    Some(Value::Object(out))
}

fn join_capped(parts: &[String]) -> Option<String> {
    if parts.is_empty() {
        return None;
    }
    Some(cap_chars(&parts.join("\n"), MAX_ANSWER_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_tool_use_deny_shape() {
        let d = Decision {
            refusals: vec!["[g] no".into()],
            ..Decision::default()
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
