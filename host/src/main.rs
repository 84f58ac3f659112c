//! The `sandrail` command line.

mod commands;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use commands::flag::FlagCommand;
use commands::state::StateCommand;
use sandrail::harness::Harness;
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
    Hook {
        /// The harness whose payload arrives and whose dialect the answer is in.
        #[arg(long, value_enum, default_value = "claude")]
        harness: sandrail::harness::Harness,
    },
    /// Register sandrail in a harness's project settings, write a starter
    /// sandrail.toml if there is none, and have a person accept it.
    Init {
        /// The harness to register sandrail with.
        #[arg(long, value_enum, default_value = "claude")]
        harness: Harness,
        /// Register a running `sandrail serve` at this URL as an http hook (Claude
        /// Code) instead of the command.
        #[arg(long, value_name = "URL")]
        http: Option<String>,
        /// Print what it would write, and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Leave the harness's OS sandbox off (and record that choice in the
        /// config): what the sandbox holds against an agent running as you is
        /// then open.
        #[arg(long)]
        no_sandbox: bool,
        /// Also install and start `sandrail serve --user` as a user service
        /// (systemd --user on Linux, a launchd agent on macOS) and register
        /// `sandrail-hook`, which hands each event to it and judges locally
        /// while it is down (Claude Code only).
        #[arg(long, conflicts_with = "http")]
        serve: bool,
    },
    /// Check the setup: the harness settings register sandrail for the events
    /// the config needs and run this binary, the state and cache directories are
    /// usable, the policy in force, and the config's own check.
    Doctor {
        /// The findings as one JSON object.
        #[arg(long)]
        json: bool,
        /// Check the managed set-up instead: Claude Code's managed settings,
        /// the server's socket and root's policy (see docs/managed.md).
        #[arg(long)]
        managed: bool,
        /// With --managed: the managed settings to read (default Claude Code's,
        /// /etc/claude-code/managed-settings.json).
        #[arg(long, value_name = "FILE", requires = "managed")]
        settings: Option<std::path::PathBuf>,
    },
    /// Try the policy on a past session: replay a Claude Code transcript through
    /// the guardrails in observe mode, with a scratch state.
    Replay {
        /// The transcript: a session's .jsonl under ~/.claude/projects/.
        transcript: std::path::PathBuf,
        /// The config to try (default: the config in force for this directory).
        #[arg(long, value_name = "FILE")]
        config: Option<std::path::PathBuf>,
        /// One JSON object per event, then the summary.
        #[arg(long)]
        json: bool,
    },
    /// Answer hook payloads POSTed over HTTP (Claude Code's http hooks) until
    /// SIGINT or SIGTERM, keeping the components compiled between events.
    Serve {
        /// A TCP address to listen on, such as 127.0.0.1:8787 (port 0: any free one).
        #[arg(long, value_name = "ADDR")]
        listen: Option<std::net::SocketAddr>,
        /// A Unix socket to listen on, created readable by this user only
        /// (with --system: by every user, in /run/sandrail/hook.sock by default).
        #[arg(long, value_name = "PATH")]
        socket: Option<std::path::PathBuf>,
        /// The socket's mode in octal, such as 660 (default 600; 666 with --system).
        #[arg(long, value_name = "MODE", value_parser = commands::serve::parse_mode)]
        socket_mode: Option<u32>,
        /// Managed mode: run as a user of its own, judge every project by root's
        /// /etc/sandrail/sandrail.toml, keep state in /var/lib/sandrail (see
        /// docs/managed.md and contrib/sandrail.service).
        #[arg(long, conflicts_with = "user")]
        system: bool,
        /// This user's server, as the service `sandrail init --serve` installs
        /// runs it: on the socket in the user's state directory
        /// (`sandrail-serve.sock`) unless --socket names another.
        #[arg(long)]
        user: bool,
    },
    /// Show the guardrails in force: name, source, sha256, events, matcher.
    List {
        /// One JSON object per guardrail, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Validate the configuration in force and load every component it names.
    CheckConfig,
    /// Write a new guardrail project that builds as it is: source, cases, README.
    New {
        /// The guardrail's name: lower-case letters, digits and dashes.
        name: String,
        /// A gate judges events; a context records a mode for Stop gates.
        #[arg(long, value_enum, default_value = "gate")]
        kind: commands::new::Kind,
        /// Where to write it (default: ./NAME).
        #[arg(long, value_name = "DIR")]
        path: Option<std::path::PathBuf>,
        /// The language to write it in.
        #[arg(long, value_enum, default_value = "rust")]
        lang: commands::new::Lang,
    },
    /// Run case files against components in the real sandbox: each case in a
    /// fresh session and state, each event through `sandrail hook`.
    Test {
        /// Case files, or directories of them (*.toml); by default ./cases.toml.
        paths: Vec<std::path::PathBuf>,
        /// The results as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print the facts the guardrails would see for the payload on stdin, as JSON.
    Facts {
        /// Include this session's counters (and case) as they stand.
        #[arg(long)]
        session: Option<String>,
    },
    /// Read or change guardrail state.
    #[command(subcommand)]
    State(StateCommand),
    /// Where each guardrail and rule stands in a session (by default the project's latest).
    Status {
        /// The session to show; by default the project's latest.
        #[arg(long)]
        session: Option<String>,
        /// The whole status as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Where a session's cycle stands: the read mark, each context, the span since the mark.
    Cycle {
        /// By default the project's latest.
        #[arg(long)]
        session: Option<String>,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Switch a guardrail on or off: in the config in force, or for one session.
    #[command(subcommand)]
    Guardrail(Switch),
    /// Set or clear a flag in a running session (a person at a terminal only).
    #[command(subcommand)]
    Flag(FlagCommand),
    /// What a component is, what each import reaches, and what the config grants it.
    Inspect {
        /// A component file, or builtin:NAME.
        component: String,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Every configured guardrail with its hash, pin, grants, limits and reach.
    Audit {
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write the sha256 of every component in force to sandrail.lock beside the config.
    Pin,
    /// Show how the policy on disk differs from the accepted one, and accept it
    /// (a person at a terminal only).
    Trust,
    /// Turn on the harness's OS sandbox with sandrail's own paths out of the
    /// agent's reach, merged into the project's settings (init does it too).
    Protect {
        /// The harness whose sandbox to set up.
        #[arg(long, value_enum, default_value = "claude")]
        harness: Harness,
        /// Print the settings it would write, and write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Import rules from another tool into the config in force.
    #[command(subcommand)]
    Import(Import),
    /// List the decision receipts (one per judged event), or verify their hash chain.
    Receipts {
        /// Only this session's.
        #[arg(long)]
        session: Option<String>,
        /// Only those since a time (2026-12-01T09:00:00Z) or a span back from now (2h).
        #[arg(long)]
        since: Option<String>,
        /// Only those in which this guardrail ran (or was skipped, or not run).
        #[arg(long, value_name = "NAME")]
        guardrail: Option<String>,
        /// Only those from this project directory.
        #[arg(long, value_name = "DIR")]
        project: Option<std::path::PathBuf>,
        /// The receipts as they are stored: one JSON object per line.
        #[arg(long)]
        json: bool,
        /// Check that no receipt was edited, inserted or removed (exit 1 if one was).
        #[arg(long)]
        verify: bool,
        /// With --verify: also compare the file with this capture of the system log
        /// (`journalctl -t sandrail -o cat`), receipt by receipt.
        #[arg(long, requires = "verify", value_name = "LOG")]
        against: Option<std::path::PathBuf>,
    },
    /// The project as it was before each call that could change it: when, in
    /// which session, before which call, how many files differ from now.
    Checkpoints {
        /// Only this session's.
        #[arg(long)]
        session: Option<String>,
        /// One JSON object per checkpoint, one per line.
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        action: Option<commands::checkpoints::Action>,
    },
    /// Bring the project's files and repository back to a checkpoint (a person
    /// at a terminal only); by default the one before the latest call that
    /// changed something, in the project's latest session.
    Undo {
        /// The checkpoint, or the start of its id (`sandrail checkpoints` lists them).
        id: Option<String>,
        /// Pick the default checkpoint from this session rather than the latest.
        #[arg(long, conflicts_with = "id")]
        session: Option<String>,
        /// Say what it would write back and remove, and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
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

#[derive(Subcommand)]
enum Import {
    /// dotforge's behaviors: DIR holds behaviors/index.yaml.
    Dotforge { dir: std::path::PathBuf },
}

#[derive(Subcommand)]
enum Switch {
    /// Switch NAME on (removes `enabled = false`).
    On {
        name: String,
        /// Only for this session (undoes a session `off`).
        #[arg(long)]
        session: Option<String>,
    },
    /// Switch NAME off (`enabled = false` in the config, or for one session).
    Off {
        name: String,
        /// Only for this session: the guardrail is not even instantiated.
        #[arg(long)]
        session: Option<String>,
    },
}

fn main() -> ExitCode {
    // `sandrail hook` starts on every tool call: exactly that command line skips
    // building the parser for all the others.
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == "hook") && args.next().is_none() {
        return hook(Harness::Claude);
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Hook { harness } => hook(harness),
        command => match run(command) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("sandrail: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Judges the event on stdin and prints the answer, then exits: before the
/// harness's hook timeout, whatever happens, as the watchdog sees to.
fn hook(harness: Harness) -> ExitCode {
    // Started by a forwarding hook that already waited on the server: its
    // start, so the deadline still falls before the harness's timeout.
    let started = sandrail::forward::started_at(std::time::Instant::now());
    let watchdog = sandrail::deadline::Watchdog::start(started);
    let origin = hook::Origin::of_this_process();
    // Read into the host's model, judged as Claude Code's, answered in the
    // harness's dialect.
    let judged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sandrail::hook::dialect::judge(
            harness,
            std::io::stdin().lock(),
            &origin,
            |payload, origin| judge(payload, origin, &watchdog, started),
        )
    }));
    let Ok(outcome) = judged else {
        // Unless the watchdog answered first and is ending the process.
        return if watchdog.answering() {
            faulted()
        } else {
            ExitCode::SUCCESS
        };
    };
    if !watchdog.answering() {
        // The watchdog answered first and is ending the process.
        return ExitCode::SUCCESS;
    }
    if let Some(answer) = outcome.answer {
        let mut stdout = std::io::stdout().lock();
        // One write of a complete answer; a closed pipe loses nothing we could save.
        let _ = writeln!(stdout, "{answer}").and_then(|()| stdout.flush());
    }
    if outcome.block.is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// A fault in sandrail itself while judging (a panic, its message printed
/// above) refuses the event whatever `on_error` says: a fault the agent's own
/// input can set off (a command line spelt to reach it) must not be a way past
/// every guardrail. Only the exit code and stderr answer, which every harness
/// reads.
fn faulted() -> ExitCode {
    eprintln!(
        "sandrail: sandrail failed while judging this event (its error is above; please report it), so the event is refused"
    );
    ExitCode::from(2)
}

/// Judges one Claude-shaped payload: by the server when one is configured (this
/// process then loads no engine), else here.
fn judge(
    payload: impl std::io::Read,
    origin: &hook::Origin,
    watchdog: &sandrail::deadline::Watchdog,
    started: std::time::Instant,
) -> hook::Outcome {
    let engine = || sandrail::engine::Engine::one_shot().watched(watchdog.clone());
    match sandrail::forward::Forwarding::from_env() {
        Some(forwarding) => sandrail::forward::run(&forwarding, payload, origin, engine, started),
        None => {
            sandrail::runtime::leave_teardown_to_exit();
            hook::run(payload, origin, &engine(), started)
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Hook { .. } => unreachable!("handled in main"),
        Command::List { json } => commands::list::run(json),
        Command::CheckConfig => commands::check_config::run(),
        Command::Test { paths, json } => commands::test::run(paths, json),
        Command::New {
            name,
            kind,
            path,
            lang,
        } => commands::new::run(&name, kind, path, lang),
        Command::Init {
            harness,
            http,
            dry_run,
            no_sandbox,
            serve,
        } => {
            let registering = match (http, serve) {
                (Some(url), _) => commands::init::Registering::Http(url),
                (None, true) => commands::init::Registering::Served,
                (None, false) => commands::init::Registering::Command,
            };
            commands::init::run(harness, &registering, dry_run, !no_sandbox)
        }
        Command::Doctor {
            json,
            managed,
            settings,
        } => commands::doctor::run(json, managed.then_some(settings)),
        Command::Replay {
            transcript,
            config,
            json,
        } => commands::replay::run(&transcript, config.as_deref(), json),
        Command::Pin => commands::pin::run(),
        Command::Trust => commands::trust::run(),
        Command::Protect { harness, dry_run } => commands::protect::run(harness, dry_run),
        Command::Inspect { component, json } => commands::inspect::run(&component, json),
        Command::Audit { json } => commands::audit::run(json),
        Command::Receipts {
            session,
            since,
            guardrail,
            project,
            json,
            verify,
            against,
        } => commands::receipts::run(
            commands::receipts::Filter {
                session: session.as_deref(),
                since: since.as_deref(),
                guardrail: guardrail.as_deref(),
                project: project.as_deref(),
            },
            json,
            verify.then_some(commands::receipts::Verify {
                against: against.as_deref(),
            }),
        ),
        Command::Facts { session } => commands::facts::run(session),
        Command::Serve {
            listen,
            socket,
            socket_mode,
            system,
            user,
        } => {
            let socket = match (user, socket) {
                (true, None) => Some(commands::init::service::prepared_user_socket()?),
                (_, socket) => socket,
            };
            commands::serve::run(listen, socket, socket_mode, system)
        }
        Command::State(cmd) => commands::state::run(cmd),
        Command::Flag(cmd) => commands::flag::run(cmd),
        Command::Overrides { session, json } => commands::overrides::run(session.as_deref(), json),
        Command::Checkpoints {
            session,
            json,
            action,
        } => commands::checkpoints::run(session, json, action),
        Command::Undo {
            id,
            session,
            dry_run,
        } => commands::undo::run(id, session, dry_run),
        Command::Status { session, json } => commands::status::run(session, json),
        Command::Cycle { session, json } => commands::cycle::run(session, json),
        Command::Import(Import::Dotforge { dir }) => commands::import::dotforge(&dir),
        Command::Guardrail(Switch::On { name, session }) => {
            commands::guardrail::run(&name, true, session.as_deref())
        }
        Command::Guardrail(Switch::Off { name, session }) => {
            commands::guardrail::run(&name, false, session.as_deref())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command lines a page shows: each line of its shell code blocks.
    /// (Inline spans in prose name commands, `sandrail new`, rather than show
    /// one to run.)
    fn shown_commands(text: &str) -> Vec<(usize, String)> {
        let mut shown = Vec::new();
        let mut fence: Option<String> = None;
        for (n, line) in text.lines().enumerate() {
            if let Some(rest) = line.trim_start().strip_prefix("```") {
                fence = match fence {
                    Some(_) => None,
                    None => Some(rest.trim().to_owned()),
                };
                continue;
            }
            let line = line.trim_start();
            match fence.as_deref() {
                Some("sh" | "bash" | "shell") => shown.push((n + 1, line.to_owned())),
                // A terminal session: its commands follow the prompt.
                Some("console") => {
                    if let Some(command) = line.strip_prefix("$ ") {
                        shown.push((n + 1, command.to_owned()));
                    }
                }
                _ => {}
            }
        }
        shown
    }

    /// Every `sandrail …` command shown in README.md and docs/ parses with this
    /// command line's own parser, so the documentation cannot drift from it.
    #[test]
    fn every_command_shown_in_the_docs_parses() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut pages = vec![root.join("README.md")];
        let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
            .expect("docs/")
            .map(|entry| entry.expect("an entry").path())
            .filter(|path| path.extension().is_some_and(|e| e == "md"))
            .collect();
        docs.sort();
        pages.extend(docs);
        let mut checked = 0;
        let mut failures = Vec::new();
        for page in &pages {
            let text = std::fs::read_to_string(page).expect("a page");
            for (line_number, line) in shown_commands(&text) {
                for command in sandrail::shell::analyse(&line).commands {
                    let Some(program) = command.argv.first() else {
                        continue;
                    };
                    if sandrail::shell::program(program) != "sandrail" {
                        continue;
                    }
                    checked += 1;
                    let parsed = Cli::try_parse_from(&command.argv);
                    if let Err(e) = parsed.as_ref().map(|_| ()).or_else(|e| match e.kind() {
                        clap::error::ErrorKind::DisplayHelp
                        | clap::error::ErrorKind::DisplayVersion => Ok(()),
                        _ => Err(e),
                    }) {
                        let first = e.to_string().lines().next().unwrap_or_default().to_owned();
                        failures.push(format!(
                            "{}:{line_number}: `{line}`: {first}",
                            page.display()
                        ));
                    }
                }
            }
        }
        assert!(checked > 30, "only {checked} commands found in the docs");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
