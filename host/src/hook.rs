//! `sandrail hook`: one event in, the harness's answer out.
//!
//! Whatever goes wrong, the harness gets either a complete answer or nothing, and
//! the exit code is 0: a guardrail engine that breaks must not break the agent.
//! Every problem is explained on stderr. A config that cannot be used is replaced
//! by the embedded default rather than by nothing.

use std::io::Read;

use crate::config::Config;
use crate::evaluate::{self, Dirs};
use crate::locations;
use crate::protocol::{self, HookInput};

/// Reads one payload from `stdin` and returns the answer to print, if any.
pub fn run(stdin: impl Read) -> Option<String> {
    let input = match HookInput::read(stdin) {
        Ok(input) => input,
        Err(e) if e.is_unjudged_event() => {
            if crate::debug_logging() {
                eprintln!("sandrail: {e}; nothing to do");
            }
            return None;
        }
        Err(e) => {
            eprintln!("sandrail: {e}; the event proceeds unjudged");
            return None;
        }
    };
    let project = locations::project_dir(input.cwd.as_ref().map(Into::into));
    let config = match Config::discover(project.as_deref()) {
        Ok(config) => config,
        Err(e) => {
            // A broken config must not switch every rule off: the bundled ones hold.
            eprintln!(
                "sandrail: {e}; the embedded default is in force until it is fixed (run `sandrail check-config`)"
            );
            match Config::embedded() {
                Ok(config) => config,
                Err(e) => {
                    eprintln!("sandrail: {e}; the event proceeds unjudged");
                    return None;
                }
            }
        }
    };
    let dirs = Dirs {
        state: locations::state_dir(),
        cache: locations::cache_dir(),
    };
    let decision = evaluate::evaluate(&input, &config, &dirs);
    if !decision.refusals.is_empty() && !protocol::can_refuse(input.kind) {
        eprintln!(
            "sandrail: {} cannot be refused; the refusal is shown to the user instead",
            input.kind
        );
    }
    protocol::render(input.kind, &decision).map(|answer| answer.to_string())
}
