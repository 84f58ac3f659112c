//! The override trail in the project: an ask the user confirmed, and the
//! overrides written once the state is saved.

use super::*;

/// Puts overrides on the project's trail.
pub(super) fn write_trail(
    input: &HookInput,
    dirs: &Dirs,
    now: u64,
    overrides: Vec<(String, String, u64)>,
    detected: audit::Detected,
) {
    if overrides.is_empty() {
        return;
    }
    let records: Vec<audit::Override> = overrides
        .into_iter()
        .map(|(guardrail, rule, counter)| audit::Override {
            time: crate::clock::rfc3339(now),
            session: input.session_id.clone(),
            guardrail,
            rule,
            tool: input.tool_name.clone(),
            summary: audit::Override::summarise(input.tool_input.as_deref().unwrap_or("")),
            counter,
            detected,
            reason: String::new(),
        })
        .collect();
    match &dirs.project {
        Some(project) => {
            if let Err(e) = audit::append(project, &records) {
                eprintln!("sandrail: {e}");
            }
        }
        None => eprintln!(
            "sandrail: no project directory: {} override(s) not written to the trail",
            records.len()
        ),
    }
}

/// A PostToolUse of a call a soft_block asked the user about: the user let it run.
/// Each such pending block becomes an override recorded as certain. Only configs
/// with a guardrail whose soft_block asks pay for the look.
pub(super) fn confirm_asked(input: &HookInput, config: &Config, dirs: &Dirs) {
    let asks = config.guardrails.iter().any(|g| {
        g.enforcement
            .as_ref()
            .is_some_and(|e| e.soft_block == SoftBlock::Ask)
    });
    let tool_use_id = input.fields.get("tool_use_id").and_then(|v| v.as_str());
    let (true, Some(tool_use_id), Some(state)) = (
        asks && input.kind == crate::event::EventKind::PostToolUse,
        tool_use_id,
        dirs.state.as_deref(),
    ) else {
        return;
    };
    let confirmed = SessionStore::open_existing(state, &input.session_id, config.lock_timeout)
        .and_then(|store| {
            let Some(store) = store else {
                return Ok(Vec::new());
            };
            let mut txn = store.begin()?;
            let confirmed = txn.confirm_asked(tool_use_id)?;
            txn.commit()?;
            Ok(confirmed)
        });
    match confirmed {
        Ok(confirmed) => write_trail(
            input,
            dirs,
            crate::clock::now(),
            confirmed,
            audit::Detected::Confirmed,
        ),
        Err(e) => eprintln!("sandrail: cannot confirm an approved call: {e}"),
    }
}
