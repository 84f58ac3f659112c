//! The selected components made ready to run: read, compiled or taken from
//! the cache, before the session is held.

use super::*;

/// The event's runtime and the components loaded on it, each with whether it
/// reads the cycle.
pub(super) type Ready<'e, 'c> = (EventRuntime<'e>, Vec<(&'c Guardrail, Loaded, bool)>);

/// Stage: make ready. The event's runtime (this process's own, or the
/// server's) for the selected components and the contexts that may leave, and
/// each selected component loaded on it; `None` when the runtime cannot start
/// (said, and answered as `on_error` says).
pub(super) fn make_ready<'e, 'c>(
    engine: &'e Engine,
    dirs: &Dirs,
    prepared: &[(&'c Guardrail, Prepared)],
    leaving: &[(&'c Guardrail, Result<Prepared, String>)],
    config: &Config,
    decision: &mut Decision,
) -> Option<Ready<'e, 'c>> {
    let components = prepared
        .iter()
        .map(|(_, p)| p)
        .chain(leaving.iter().filter_map(|(_, p)| p.as_ref().ok()));
    match engine.runtime_for(dirs.cache.clone(), components) {
        Ok(runtime) => {
            let loaded = load(&runtime, prepared, config, decision);
            Some((runtime, loaded))
        }
        Err(e) => {
            let why = format!("cannot start the WebAssembly runtime: {e:#}");
            eprintln!("sandrail: {why}");
            host_failure(decision, config, &why);
            None
        }
    }
}

/// Stage: load. Each selected component instantiated-ready on `runtime`, with
/// whether it reads the cycle; one that cannot be loaded is recorded as not run.
pub(super) fn load<'c>(
    runtime: &Runtime,
    prepared: &[(&'c Guardrail, Prepared)],
    config: &Config,
    decision: &mut Decision,
) -> Vec<(&'c Guardrail, Loaded, bool)> {
    prepared
        .iter()
        .filter_map(|(g, p)| match runtime.load(p) {
            Ok(loaded) => Some((*g, loaded, p.reads_cycle())),
            Err(e) => {
                cannot_run(decision, config, g, Some(&p.sha256), &e.to_string());
                None
            }
        })
        .collect()
}

/// A guardrail whose component cannot be prepared or loaded: a context says so
/// and records nothing; a gate is recorded as not run, under its `on_error`.
pub(super) fn cannot_run(
    decision: &mut Decision,
    config: &Config,
    guardrail: &Guardrail,
    sha256: Option<&str>,
    why: &str,
) {
    if guardrail.is_context() {
        eprintln!(
            "sandrail: context '{}' not run: {why}; it records nothing for this event",
            guardrail.name
        );
    } else {
        not_run(decision, config, guardrail, sha256, why);
    }
}
