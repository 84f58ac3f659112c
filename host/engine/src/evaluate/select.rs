//! Which guardrails an event runs, which contexts may leave at a Stop, and
//! what else the event asks of the engine (counting, guarding, recording).

use super::*;

/// Stage: select. The guardrails this event wakes (matching it, not switched
/// off for the session), each with its component prepared; one that cannot be
/// prepared is recorded as not run (a context says so and records nothing).
pub(super) fn select<'c>(
    input: &HookInput,
    config: &'c Config,
    dirs: &Dirs,
    engine: &Engine,
    decision: &mut Decision,
) -> Vec<(&'c Guardrail, Prepared)> {
    let mut matching = config.matching(input.kind, input.tool_name.as_deref());
    if !matching.is_empty()
        && let Some(state) = &dirs.state
    {
        // Switched off for this session: not even instantiated.
        let off = crate::store::lifecycle::switched_off(state, &input.session_id);
        matching.retain(|g| !off.contains(&g.name));
    }
    matching
        .into_iter()
        .filter_map(|g| match engine.prepare(g) {
            Ok(prepared) => Some((g, prepared)),
            Err(e) => {
                cannot_run(decision, config, g, None, &e.to_string());
                None
            }
        })
        .collect()
}

/// At Stop: every context not switched off, which may have to leave (whether it
/// is active is known once the session is held).
pub(super) fn contexts_that_may_leave<'c>(
    input: &HookInput,
    config: &'c Config,
    dirs: &Dirs,
    engine: &Engine,
) -> Vec<(&'c Guardrail, Result<Prepared, String>)> {
    let off = dirs
        .state
        .as_deref()
        .map(|state| crate::store::lifecycle::switched_off(state, &input.session_id))
        .unwrap_or_default();
    config
        .contexts()
        .filter(|g| !off.contains(&g.name))
        .map(|g| (g, engine.prepare(g).map_err(|e| e.to_string())))
        .collect()
}

/// What an event obliges the pipeline to do beyond running the guardrails it
/// matches: each is a stage that runs, or not, for this event.
#[derive(Debug, Clone, Copy)]
pub(super) struct Duties {
    /// Advance the session's counters: a PreToolUse, while a guardrail reads them.
    pub(super) counting: bool,
    /// Check the call against self-protection: a PreToolUse, while it is on.
    pub(super) guarding: bool,
    /// Put the finished call in the cycle's span: a PostToolUse, while the config
    /// keeps cycles.
    pub(super) recording: bool,
    /// Let the active contexts leave and settle the cycle: a Stop, while the
    /// config keeps cycles.
    pub(super) stopping: bool,
}

impl Duties {
    pub(super) fn of(kind: EventKind, config: &Config, keeps_session_facts: bool) -> Duties {
        let cycles = config.keeps_cycles();
        Duties {
            counting: keeps_session_facts && kind == EventKind::PreToolUse,
            guarding: config.protect.enabled && kind == EventKind::PreToolUse,
            recording: cycles && kind == EventKind::PostToolUse,
            stopping: cycles && kind == EventKind::Stop,
        }
    }

    pub(super) fn any(self) -> bool {
        self.guarding || self.besides_guarding()
    }

    /// A duty that needs the session's state.
    pub(super) fn besides_guarding(self) -> bool {
        self.counting || self.recording || self.stopping
    }
}
