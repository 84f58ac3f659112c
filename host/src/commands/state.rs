//! `sandrail state`: read or change guardrail state from the command line, under
//! the same lock and limits a guardrail has.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use sandrail::config::Config;
use sandrail::locations;
use sandrail::store::{Keyspace, KeyspaceError, SessionStore};

use super::project_config;

#[derive(Subcommand)]
pub enum StateCommand {
    /// Print the value stored under KEY.
    Get {
        key: String,
        #[command(flatten)]
        scope: Scope,
    },
    /// Store VALUE under KEY.
    Set {
        key: String,
        value: String,
        #[command(flatten)]
        scope: Scope,
    },
    /// Remove KEY.
    Delete {
        key: String,
        #[command(flatten)]
        scope: Scope,
    },
    /// Print the entries whose keys start with PREFIX, as JSON lines {"key":…,"value":…}.
    List {
        prefix: Option<String>,
        #[command(flatten)]
        scope: Scope,
        /// List this guardrail's entries (in the same session), as --guardrail would see them
        /// through list-owner: allowed when --guardrail's config lists it in `requires`.
        #[arg(long)]
        owner: Option<String>,
    },
}

#[derive(Args)]
pub struct Scope {
    /// The session whose state to use.
    #[arg(long)]
    session: String,
    /// The guardrail whose keyspace to use.
    #[arg(long)]
    guardrail: String,
}

pub fn run(cmd: StateCommand) -> anyhow::Result<ExitCode> {
    let dir: PathBuf =
        locations::state_dir().context("no state directory: set SANDRAIL_STATE_DIR (or HOME)")?;
    let config = project_config();
    let lock_timeout = config
        .as_ref()
        .map_or(sandrail::config::DEFAULT_LOCK_TIMEOUT, |c| c.lock_timeout);
    let mut out = std::io::stdout().lock();
    match cmd {
        StateCommand::Get { key, scope } => {
            let value = match SessionStore::open_existing(&dir, &scope.session, lock_timeout)? {
                Some(store) => store.read()?.get(&scope.guardrail, &key)?,
                None => None,
            };
            match value {
                Some(value) => writeln!(out, "{value}")?,
                None => {
                    eprintln!(
                        "sandrail: no key '{key}' for guardrail '{}' in session '{}'",
                        scope.guardrail, scope.session
                    );
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        StateCommand::Set { key, value, scope } => {
            if let Err(code) = super::person::confirm(
                "state set",
                "changes a guardrail's record of a running session",
            ) {
                return Ok(code);
            }
            let budget = keyspace_budget(config.as_ref().ok(), &scope.guardrail);
            write_keyspace(&dir, lock_timeout, &scope, budget, |keyspace| {
                keyspace.set(&key, &value)
            })?;
        }
        StateCommand::Delete { key, scope } => {
            if let Err(code) = super::person::confirm(
                "state delete",
                "changes a guardrail's record of a running session",
            ) {
                return Ok(code);
            }
            let budget = keyspace_budget(config.as_ref().ok(), &scope.guardrail);
            let existed = write_keyspace(&dir, lock_timeout, &scope, budget, |keyspace| {
                keyspace.delete(&key)
            })?;
            if !existed {
                eprintln!("sandrail: no key '{key}' to delete");
                return Ok(ExitCode::FAILURE);
            }
        }
        StateCommand::List {
            prefix,
            scope,
            owner,
        } => {
            if let Some(owner) = &owner {
                // Show exactly what the guardrail itself could read.
                let config = config?;
                let allowed = config
                    .guardrails
                    .iter()
                    .find(|g| g.name == scope.guardrail)
                    .is_some_and(|g| g.requires.contains(owner));
                if !allowed {
                    bail!(
                        "guardrail '{}' does not list '{owner}' in `requires` in {}, so it cannot read that keyspace",
                        scope.guardrail,
                        config.origin
                    );
                }
            }
            let whose = owner.as_deref().unwrap_or(&scope.guardrail);
            if let Some(store) = SessionStore::open_existing(&dir, &scope.session, lock_timeout)? {
                let entries = store.read()?.list(whose, prefix.as_deref().unwrap_or(""))?;
                for entry in entries {
                    writeln!(out, "{}", serde_json::to_string(&entry)?)?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The byte budget the config gives `guardrail`'s keyspace (the default if it is
/// not configured), so the command line is held to what the guardrail is.
fn keyspace_budget(config: Option<&Config>, guardrail: &str) -> u64 {
    config
        .and_then(|c| c.guardrails.iter().find(|g| g.name == guardrail))
        .map_or(sandrail::store::DEFAULT_KEYSPACE_BYTES, |g| {
            g.limits.state_bytes
        })
}

/// Changes one keyspace in one committed transaction, under the same limits a
/// guardrail has.
fn write_keyspace<T>(
    dir: &std::path::Path,
    lock_timeout: std::time::Duration,
    scope: &Scope,
    budget: u64,
    change: impl FnOnce(&mut Keyspace) -> Result<T, KeyspaceError>,
) -> anyhow::Result<T> {
    let store = SessionStore::open(dir, &scope.session, lock_timeout)?;
    let mut keyspace = Keyspace::new(&scope.guardrail, Vec::new(), budget).with_txn(store.begin()?);
    let result = change(&mut keyspace)?;
    if let Some(txn) = keyspace.finish(true)? {
        txn.commit()?;
    }
    Ok(result)
}
