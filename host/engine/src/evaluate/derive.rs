//! What every guardrail is shown: the event with its facts, the costly facts
//! read from the session, and the call's fingerprint.

use super::*;

/// The event's facts and its turn in the transcript (the facts carry the
/// turn too). Neither needs the session's state.
pub(super) fn facts_and_turn(
    input: &HookInput,
    config: &Config,
    dirs: &Dirs,
) -> (crate::facts::Facts, Option<transcript::Turn>) {
    let mut facts = crate::facts::derive(
        input,
        &config.patterns,
        config.mandate.as_ref(),
        dirs.project.as_deref(),
    );
    let turn = transcript::of_event(input, dirs.state.as_deref());
    if let Some(turn) = &turn {
        facts.set_turn(turn);
    }
    (facts, turn)
}

/// Adds the `session` and `case` namespaces from the session's state. Without the
/// state they stay absent, so rules that read them fail rather than pass.
pub(super) fn add_costly_facts(
    facts: &mut crate::facts::Facts,
    txn: Option<&StateTxn>,
    config: &Config,
    keeps_session: bool,
    keeps_case: bool,
) -> Option<SessionFacts> {
    let kept = match txn?.session_facts() {
        Ok(kept) => kept,
        Err(e) => {
            eprintln!(
                "sandrail: the session's counters cannot be read: {e}; session and case facts are absent"
            );
            return None;
        }
    };
    facts.add_kept(&kept, config.mandate.as_ref(), keeps_session, keeps_case);
    Some(kept)
}

/// The parts of the event every guardrail shares.
pub(super) fn base_event(
    input: &HookInput,
    facts: &crate::facts::Facts,
    turn: Option<transcript::Turn>,
) -> wit::Event {
    wit::Event {
        kind: input.kind.into(),
        session_id: input.session_id.clone(),
        turn: turn.map(|t| wit::Turn {
            id: t.id(),
            count: t.count,
            uuid: t.uuid,
        }),
        tool_name: input.tool_name.clone(),
        tool_input: input.tool_input.clone(),
        payload: input.raw.clone(),
        config: String::new(),
        facts: facts.to_json(),
    }
}

/// The first 40 hex digits of the sha256 of a tool input in canonical form (keys
/// sorted, no spaces), so the same call is recognised whatever its key order. An
/// input too deep to parse is fingerprinted as it was sent.
pub(super) fn input_fingerprint(tool_input: &str) -> String {
    let canonical = serde_json::from_str::<serde_json::Value>(tool_input)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| tool_input.to_owned());
    crate::sha256_hex(canonical.as_bytes())[..40].to_owned()
}
