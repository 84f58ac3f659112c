//! Self-protection's part in an event: what would change what sandrail
//! depends on is refused, after the guardrails have judged it.

use super::*;

/// Self-protection's verdict, after the guardrails': a call that also breaks a
/// guardrail's rule (`rm -rf ~` is a destructive command before it is a change
/// to sandrail's files) is refused under that rule first, and both are said and
/// recorded. Never a question for the user.
pub(super) fn refuse_as_protection(decision: &mut Decision, reason: &str) {
    decision.ask = false;
    decision.trace.host_refused = true;
    decision
        .refusals
        .push(guest_text::attributed(HOST_AUTHOR, reason));
}

/// Why the call must not run because it would change what sandrail depends on.
pub(super) fn self_protection(
    input: &HookInput,
    config: &Config,
    dirs: &Dirs,
    facts: &crate::facts::Facts,
) -> Option<String> {
    let changes = &facts.changes;
    if changes.paths.is_empty() && changes.sandrail_command.is_none() {
        return None;
    }
    let cwd = input.cwd.as_deref().map(Path::new);
    let places = crate::protect::Places {
        cwd,
        project: dirs.project.as_deref(),
        state: dirs.state.as_deref(),
        cache: dirs.cache.as_deref(),
    };
    crate::protect::Protected::new(config, &places).refusal(changes, cwd)
}
