//! `sandrail flag set|clear NAME --session S`: a person sets or clears a flag in
//! a running session — say, that the tests were run by hand — and the
//! guardrails that check or consume it see that from the session's next event.
//!
//! A flag is something guardrails decide by (a Stop gate that waits for
//! `tests_passed`, a write allowed once `search_context_ready`), so setting or
//! clearing one can loosen what the agent is held to: it is a person's command,
//! as `trust` is ([`super::person`]). The change goes through the session's
//! lock, as an event's does, so it never lands inside a hook's transaction.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;

use sandrail::clock;
use sandrail::config::Config;
use sandrail::locations;
use sandrail::store::{SessionStore, lifecycle};

use super::person;

#[derive(Subcommand)]
pub enum FlagCommand {
    /// Set NAME in a session (again: refreshes its time); the guardrails that
    /// check or consume it see it from the session's next event.
    Set {
        name: String,
        /// The session to set it in.
        #[arg(long)]
        session: String,
    },
    /// Clear NAME in a session.
    Clear {
        name: String,
        /// The session to clear it in.
        #[arg(long)]
        session: String,
    },
}

pub fn run(cmd: FlagCommand) -> anyhow::Result<ExitCode> {
    let (name, session, set) = match cmd {
        FlagCommand::Set { name, session } => (name, session, true),
        FlagCommand::Clear { name, session } => (name, session, false),
    };
    sandrail::store::check_flag_name(&name)?;
    let state =
        locations::state_dir().context("no state directory: set SANDRAIL_STATE_DIR (or HOME)")?;
    if lifecycle::last_access(&state, &session).is_none() {
        bail!(
            "no session '{session}' in {}: it was never seen there, or was forgotten after its TTL; nothing was changed",
            state.display()
        );
    }
    // The guardrails that decide by the flag: the session's own policy's.
    let config = sandrail::policy::session_config(&state, &session)
        .unwrap_or_else(|| super::policy_in_force().config);
    let who = Readers::of(&config, &name);
    if set && who.is_empty() {
        bail!(
            "no guardrail of session {session}'s policy (its config: {}) sets, checks or consumes a flag '{name}', so setting it would change nothing; nothing was changed (`sandrail list` shows the flags)",
            config.origin
        );
    }
    let was_set = flag_is_set(&state, &session, &name, config.lock_timeout);
    if !set && was_set == Some(false) {
        eprintln!("sandrail: flag '{name}' is not set in session {session}; nothing was cleared");
        return Ok(ExitCode::FAILURE);
    }
    let what = if set {
        format!("sets the flag '{name}' in session {session}{who}")
    } else {
        format!("clears the flag '{name}' in session {session}{who}")
    };
    let command = if set { "flag set" } else { "flag clear" };
    if let Err(code) = person::confirm(command, &what) {
        return Ok(code);
    }
    let change = if set { "setting" } else { "clearing" };
    let not_saved = |e: sandrail::store::StoreError| {
        person::not_saved(
            command,
            &state,
            &format!("{change} the flag '{name}'"),
            "nothing was changed",
            e,
        )
    };
    let store = SessionStore::open(&state, &session, config.lock_timeout).map_err(not_saved)?;
    let mut txn = store.begin().map_err(not_saved)?;
    let now = clock::now();
    let was_set = txn
        .change_flag(&name, set.then_some(now))
        .map_err(not_saved)?;
    txn.commit().map_err(not_saved)?;
    match (set, was_set) {
        (true, false) => println!(
            "Set flag '{name}' in session {session} at {}.",
            clock::rfc3339(now)
        ),
        (true, true) => println!(
            "Flag '{name}' was already set in session {session}; it is now set at {}.",
            clock::rfc3339(now)
        ),
        (false, true) => println!("Cleared flag '{name}' in session {session}."),
        (false, false) => {
            eprintln!(
                "sandrail: flag '{name}' is not set in session {session} (consumed meanwhile); nothing was cleared"
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether the flag is set now, read before the person is asked; `None` when
/// the session's state cannot be read here (the write says why, if it fails).
fn flag_is_set(
    state: &std::path::Path,
    session: &str,
    name: &str,
    lock_timeout: std::time::Duration,
) -> Option<bool> {
    let store = SessionStore::open_existing(state, session, lock_timeout).ok()?;
    let Some(store) = store else {
        return Some(false);
    };
    let flags = store.read().ok()?.flags().ok()?;
    Some(flags.iter().any(|(flag, _)| flag == name))
}

/// The guardrails that set, check and consume a flag, for the person to read
/// before confirming.
struct Readers {
    set: Vec<String>,
    check: Vec<String>,
    consume: Vec<String>,
}

impl Readers {
    fn of(config: &Config, flag: &str) -> Readers {
        let named = |may: &dyn Fn(&sandrail::store::FlagGrants) -> bool| -> Vec<String> {
            config
                .guardrails
                .iter()
                .filter(|g| may(&g.flags))
                .map(|g| g.name.clone())
                .collect()
        };
        Readers {
            set: named(&|f| f.may_set(flag)),
            check: named(&|f| f.check.iter().any(|c| c == flag)),
            consume: named(&|f| f.may_consume(flag)),
        }
    }

    fn is_empty(&self) -> bool {
        self.set.is_empty() && self.check.is_empty() && self.consume.is_empty()
    }
}

impl std::fmt::Display for Readers {
    /// ` (checked by …; consumed by …; set by …)`, empty when no guardrail names it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            ("checked", &self.check),
            ("consumed", &self.consume),
            ("set", &self.set),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(what, names)| format!("{what} by {}", names.join(", ")))
        .collect();
        if parts.is_empty() {
            return Ok(());
        }
        write!(f, " ({})", parts.join("; "))
    }
}
