//! The `sandrail` command line.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use serde_json::json;

use sandrail::config::Config;
use sandrail::runtime::{Runtime, prepare, read_source};
use sandrail::store::{Keyspace, KeyspaceError, SessionStore};
use sandrail::{hook, locations};

#[derive(Parser)]
#[command(
    name = "sandrail",
    version,
    about = "Sandboxed WebAssembly guardrails for AI coding agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Judge one hook event: reads the harness's JSON payload on stdin, prints the answer.
    Hook,
    /// Show the guardrails in force: name, source, sha256, events, matcher.
    List {
        /// One JSON object per guardrail, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Validate the configuration in force and load every component it names.
    CheckConfig,
    /// Read or change guardrail state.
    #[command(subcommand)]
    State(StateCommand),
}

#[derive(Subcommand)]
enum StateCommand {
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
struct Scope {
    /// The session whose state to use.
    #[arg(long)]
    session: String,
    /// The guardrail whose keyspace to use.
    #[arg(long)]
    guardrail: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Hook => {
            let outcome = hook::run(std::io::stdin().lock());
            if let Some(answer) = outcome.answer {
                let mut stdout = std::io::stdout().lock();
                // One write of a complete answer; a closed pipe loses nothing we could save.
                let _ = writeln!(stdout, "{answer}").and_then(|()| stdout.flush());
            }
            if outcome.block {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        command => match run(command) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("sandrail: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Hook => unreachable!("handled in main"),
        Command::List { json } => list(json),
        Command::CheckConfig => check_config(),
        Command::State(cmd) => state(cmd),
    }
}

fn project_config() -> anyhow::Result<Config> {
    let cwd = std::env::current_dir().ok();
    Ok(Config::discover(locations::project_dir(cwd).as_deref())?)
}

/// Zero guardrails in force is never said quietly.
fn warn_if_empty(config: &Config) {
    if config.guardrails.is_empty() {
        eprintln!(
            "sandrail: WARNING: {} configures no guardrails: no event is judged. Add [[guardrail]] entries, or remove the file to use the embedded default.",
            config.origin
        );
    }
}

fn list(as_json: bool) -> anyhow::Result<ExitCode> {
    let config = project_config()?;
    warn_if_empty(&config);
    let mut out = std::io::stdout().lock();
    if !as_json {
        writeln!(out, "config: {}", config.origin)?;
        if config.guardrails.is_empty() {
            writeln!(out, "\nNO GUARDRAILS: nothing is judged")?;
        }
    }
    for g in &config.guardrails {
        let (_, sha256) = read_source(&g.source)?;
        let events: Vec<&str> = g.events.iter().map(|e| e.name()).collect();
        let matcher = g.matcher_text.as_deref().unwrap_or("*");
        if as_json {
            let line = json!({
                "name": g.name,
                "source": g.source.to_string(),
                "sha256": sha256,
                "pinned": g.sha256.is_some(),
                "events": events,
                "matcher": matcher,
                "requires": g.requires,
            });
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "\n{}", g.name)?;
            writeln!(out, "  source   {}", g.source)?;
            let pin = if g.sha256.is_some() { " (pinned)" } else { "" };
            writeln!(out, "  sha256   {sha256}{pin}")?;
            writeln!(out, "  events   {}", events.join(", "))?;
            writeln!(out, "  matcher  {matcher}")?;
            if !g.requires.is_empty() {
                writeln!(out, "  requires {}", g.requires.join(", "))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check_config() -> anyhow::Result<ExitCode> {
    let config = project_config()?;
    if config.guardrails.is_empty() {
        bail!(
            "{} configures no guardrails: no event would be judged. Add [[guardrail]] entries, or remove the file to use the embedded default.",
            config.origin
        );
    }
    let runtime = Runtime::new(locations::cache_dir())
        .map_err(|e| anyhow::anyhow!("cannot start the WebAssembly runtime: {e:#}"))?;
    let mut failed = 0;
    for g in &config.guardrails {
        let loaded = prepare(&g.source, g.sha256.as_deref()).and_then(|p| runtime.load(&p));
        match loaded {
            Ok(loaded) => println!("ok     {} ({}, sha256 {})", g.name, g.source, loaded.sha256),
            Err(e) => {
                failed += 1;
                println!("error  {}: {e}", g.name);
            }
        }
    }
    let n = config.guardrails.len();
    if failed > 0 {
        bail!(
            "{}: {failed} of {n} guardrails cannot be loaded",
            config.origin
        );
    }
    let noun = if n == 1 { "guardrail" } else { "guardrails" };
    println!("{}: {n} {noun}, all valid", config.origin);
    Ok(ExitCode::SUCCESS)
}

fn state(cmd: StateCommand) -> anyhow::Result<ExitCode> {
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
            let budget = keyspace_budget(config.as_ref().ok(), &scope.guardrail);
            write_keyspace(&dir, lock_timeout, &scope, budget, |keyspace| {
                keyspace.set(&key, &value)
            })?;
        }
        StateCommand::Delete { key, scope } => {
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
