//! `sandrail hook`: one event in, the harness's answer out.
//!
//! Whatever goes wrong, the harness gets a complete answer or nothing, and every
//! problem is explained on stderr. A payload is read leniently and judged; one that
//! truly cannot be read follows the config's `on_error`: proceed (exit 0), or block
//! with exit code 2 and the reason on stderr, which is how Claude Code takes a
//! refusal it has no JSON for. A config that cannot be used is replaced by the
//! embedded default rather than by nothing, and a config with no guardrails at all
//! says so on every event.

use std::io::Read;

use crate::config::{Config, OnError};
use crate::evaluate::{self, Dirs};
use crate::locations;
use crate::protocol::{self, HookInput};

/// What `sandrail hook` does once an event is judged.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The answer to print on stdout, if there is anything to say.
    pub answer: Option<String>,
    /// Block without an answer: exit 2 (the reason is already on stderr).
    pub block: bool,
}

/// Reads one payload from `stdin` and judges it.
pub fn run(stdin: impl Read) -> Outcome {
    let input = match HookInput::read(stdin) {
        Ok(input) => input,
        Err(e) if e.is_unjudged_event() => {
            if crate::debug_logging() {
                eprintln!("sandrail: {e}; nothing to do");
            }
            return Outcome::default();
        }
        Err(e) => return unreadable(&e.to_string()),
    };
    for repair in &input.repairs {
        eprintln!("sandrail: {repair}; the event is judged");
    }
    let project = locations::project_dir(input.cwd.as_ref().map(Into::into));
    let Some(config) = config_in_force(project.as_deref()) else {
        eprintln!("sandrail: no configuration can be used; the event proceeds unjudged");
        return Outcome::default();
    };
    if config.guardrails.is_empty() {
        eprintln!(
            "sandrail: {} configures no guardrails: nothing is judged. Add [[guardrail]] entries, or remove the file to use the embedded default.",
            config.origin
        );
    }
    let dirs = Dirs {
        state: locations::state_dir(),
        cache: locations::cache_dir(),
        project: project.clone(),
    };
    let decision = evaluate::evaluate(&input, &config, &dirs);
    if !decision.refusals.is_empty() && !protocol::can_refuse(input.kind) {
        eprintln!(
            "sandrail: {} cannot be refused; the refusal is shown to the user instead",
            input.kind
        );
    }
    Outcome {
        answer: protocol::render(input.kind, &decision).map(|answer| answer.to_string()),
        block: false,
    }
}

/// The config to judge by: the one found, else the embedded default.
fn config_in_force(project: Option<&std::path::Path>) -> Option<Config> {
    match Config::discover(project) {
        Ok(config) => Some(config),
        Err(e) => {
            // A broken config must not switch every rule off: the bundled ones hold.
            eprintln!(
                "sandrail: {e}; the embedded default is in force until it is fixed (run `sandrail check-config`)"
            );
            match Config::embedded() {
                Ok(config) => Some(config),
                Err(e) => {
                    eprintln!("sandrail: {e}");
                    None
                }
            }
        }
    }
}

/// A payload that cannot be read: the config's `on_error` decides.
fn unreadable(why: &str) -> Outcome {
    let cwd = std::env::current_dir().ok();
    let project = locations::project_dir(cwd);
    let on_error = config_in_force(project.as_deref()).map_or(OnError::Allow, |c| c.on_error);
    match on_error {
        OnError::Allow => {
            eprintln!("sandrail: {why}; the event proceeds unjudged (on_error = \"allow\")");
            Outcome::default()
        }
        OnError::Deny => {
            eprintln!(
                "sandrail: {why}; the event is refused (on_error = \"deny\"). Ask the user to look at sandrail's stderr."
            );
            Outcome {
                answer: None,
                block: true,
            }
        }
    }
}
