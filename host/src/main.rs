//! The `sandrail` command line.

mod commands;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use commands::state::StateCommand;
use sandrail::hook;

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
    /// Print the override trail: soft_blocks a person let through.
    Overrides {
        /// Only this session's.
        #[arg(long)]
        session: Option<String>,
        /// One JSON object per override, one per line.
        #[arg(long)]
        json: bool,
    },
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
        Command::List { json } => commands::list::run(json),
        Command::CheckConfig => commands::check_config::run(),
        Command::State(cmd) => commands::state::run(cmd),
        Command::Overrides { session, json } => commands::overrides::run(session.as_deref(), json),
    }
}
