//! `sandrail facts [--session S]`: the facts document the guardrails would see for
//! the payload on stdin — the author's window into the host.

use std::process::ExitCode;

use anyhow::Context;

use sandrail::config::Config;
use sandrail::facts::{self, Costly};
use sandrail::locations;
use sandrail::protocol::HookInput;
use sandrail::store::SessionStore;

pub fn run(session: Option<String>) -> anyhow::Result<ExitCode> {
    let input = HookInput::read(std::io::stdin().lock())
        .context("cannot read the payload on stdin (give the JSON a hook would receive)")?;
    for repair in &input.repairs {
        eprintln!("sandrail: {repair}");
    }
    let project = locations::project_dir(
        input
            .cwd
            .as_deref()
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::current_dir().ok()),
    );
    let config = Config::discover(project.as_deref())?;
    let mut document = facts::derive(
        &input,
        &config.patterns,
        config.mandate.as_ref(),
        project.as_deref(),
    );
    // Read from the start: a look must not move the session's bookmark.
    if let Some(turn) = sandrail::transcript::of_event(&input, None) {
        document.set_turn(&turn);
    }
    if let Some(session) = session {
        // No cache: a look at a config nobody accepted compiles in memory and
        // leaves nothing in the cache the hook runs code from.
        let kept_facts = sandrail::runtime::kept_facts(&config, None);
        let keeps_session = kept_facts.contains(&Costly::Session);
        let keeps_case = kept_facts.contains(&Costly::Case);
        if !keeps_session && !keeps_case {
            eprintln!(
                "sandrail: session and case counters are not being kept: no guardrail in {} declares facts = [\"session\"] or [\"case\"], so no hook pays for them",
                config.origin
            );
        } else {
            let dir = locations::state_dir()
                .context("no state directory: set SANDRAIL_STATE_DIR (or HOME)")?;
            let kept = match SessionStore::open_existing(&dir, &session, config.lock_timeout)? {
                Some(store) => store.read()?.session_facts()?,
                None => {
                    eprintln!(
                        "sandrail: session '{session}' has no state yet; its counters are zero"
                    );
                    Default::default()
                }
            };
            document.add_kept(&kept, config.mandate.as_ref(), keeps_session, keeps_case);
        }
    }
    let json = serde_json::to_string_pretty(&serde_json::Value::Object(document.document))?;
    println!("{json}");
    Ok(ExitCode::SUCCESS)
}
