//! `sandrail init [--harness H] [--http URL | --serve] [--dry-run] [--no-sandbox]`:
//! registers sandrail in the harness's project settings (added beside what is
//! there, never replacing a hook), turns on the harness's OS sandbox with
//! sandrail's paths out of the agent's reach (what `sandrail protect` does),
//! writes a commented starter `sandrail.toml` when the project has no config,
//! and has a person accept the policy.
//!
//! The sandbox is the default because it is what holds against an agent
//! running as the same user however a write is spelled: without it, the next
//! session's hook settings, sandrail's state and its compiled code are only as
//! safe as the shell analysis is complete. `--no-sandbox` leaves it off, says
//! what that leaves open, and records the choice in the config
//! (`[protect] os_sandbox = false`), so `doctor` warns rather than fails.
//!
//! `--serve` also installs the user service running `sandrail serve --user`
//! ([`service`]) and registers the forwarding hook instead of `sandrail hook`.
//!
//! An agent running it gains nothing: it only adds registrations, and the shell
//! analysis names it among the commands that change sandrail's config, so
//! self-protection refuses it to the agent.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::Value;

use sandrail::config::{CONFIG_FILE, Config, Located};
use sandrail::harness::Harness;
use sandrail::harness::settings::{FORWARDING_HOOK, shell_word};

use super::project_dir;

pub mod service;

/// What the harness is given to run for each event.
pub enum Registering {
    /// `sandrail hook`, this binary by its path.
    Command,
    /// An http hook posting to a running `sandrail serve` at this URL.
    Http(String),
    /// The forwarding hook, handing each event to the user service.
    Served,
}

/// The starter policy: the embedded default, with escalation and observe mode
/// shown in comments.
pub const STARTER: &str = include_str!("../../templates/starter.toml");

/// A file `init` writes: where, and what.
struct Planned {
    path: PathBuf,
    text: String,
    what: String,
}

/// What going without the OS sandbox leaves open, said whenever a person
/// chooses it.
pub const WITHOUT_SANDBOX: &str = "Without the harness's OS sandbox, an agent running as you can rewrite the hook settings the next session starts from (with plain git, cp, or a script), delete sandrail's records, and drive `sandrail trust` through a pseudo-terminal; sandrail's own checks refuse only the spellings they recognise. The ratchet, the policy snapshot and the receipts in the system log still show what was changed. See docs/security.md.";

pub fn run(
    harness: Harness,
    registering: &Registering,
    dry_run: bool,
    sandbox: bool,
) -> anyhow::Result<ExitCode> {
    let project = project_dir().context("no project directory: run it in the project")?;
    let binary = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .context("cannot tell where this sandrail binary is")?;
    let service = match registering {
        Registering::Served if harness != Harness::Claude => bail!(
            "--serve registers the forwarding hook, which reads Claude Code's payloads; for {} register `sandrail hook --harness {}` with SANDRAIL_SERVE_SOCKET set in front of it (see docs/internals.md)",
            harness.title(),
            harness.name()
        ),
        Registering::Served => Some(service::Service::plan(&binary)?),
        _ => None,
    };
    // The service's directory first, so that the sandbox planned below keeps
    // its file from the agent's commands.
    if let Some(service) = &service
        && !dry_run
        && let Some(dir) = service.file.parent()
    {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let command = match &service {
        Some(service) => service.command.clone(),
        None => hook_command(&binary, harness),
    };
    let settings = harness.settings();
    let http = match registering {
        Registering::Http(url) => Some(url.as_str()),
        _ => None,
    };
    let hook_for: Box<dyn Fn(&str) -> Value> = match http {
        Some(url) => {
            let Some(hook) = harness.http_hook(url) else {
                bail!(
                    "--http registers an http hook, which {} does not have; let its command hook forward to the server instead (SANDRAIL_SERVE_SOCKET, see docs/internals.md)",
                    harness.title()
                );
            };
            Box::new(move |_| hook.clone())
        }
        None => Box::new(|event| (settings.hook)(&command, event)),
    };

    // This machine's registration goes where the harness reads a file kept out
    // of the repository (Claude Code's settings.local.json), so the file a team
    // commits names no one's binary; one an earlier init left there moves.
    let shared_path = project.join(settings.file);
    let settings_path = project.join(settings.registration);
    let separate = settings_path != shared_path;
    let read = |path: &Path| match sandrail::harness::settings::read(path) {
        Ok(doc) => Ok(doc.unwrap_or_else(|| serde_json::json!({}))),
        Err(why) => Err(anyhow::anyhow!("{why}; fix it first, nothing was written")),
    };
    let mut shared = read(&shared_path)?;
    let moved = if separate {
        settings.unregister(&mut shared, &command)
    } else {
        Vec::new()
    };
    let mut doc = if separate {
        read(&settings_path)?
    } else {
        shared.clone()
    };
    // Switching between the command hook and the forwarding hook replaces this
    // binary's other registration rather than keeping both.
    let other = match &service {
        Some(_) => Some(hook_command(&binary, harness)),
        None if harness == Harness::Claude => service::user_socket().ok().map(|socket| {
            service::forwarding_command(&binary.with_file_name(FORWARDING_HOOK), &socket)
        }),
        None => None,
    };
    if let Some(other) = other.filter(|other| *other != command) {
        settings.unregister(&mut doc, &other);
    }
    let registered = settings
        .register(&mut doc, separate.then_some(&shared), &*hook_for)
        .map_err(|e| {
            anyhow::anyhow!(
                "{}: {e}; fix it first, nothing was written",
                settings_path.display()
            )
        })?;
    let mut planned = Vec::new();
    let sandbox_plan = if sandbox {
        let base = (harness == Harness::Claude).then(|| {
            if separate {
                shared.clone()
            } else {
                doc.clone()
            }
        });
        Some(super::protect::plan(harness, &project, base)?)
    } else {
        None
    };
    let pretty = sandrail::harness::key_order::pretty_as_on_disk;
    let mut registering = registered.changed().then(|| Planned {
        path: settings_path.clone(),
        text: pretty(&settings_path, &doc),
        what: format!(
            "registers sandrail for {} ({}){}",
            registered.added.join(", "),
            harness.title(),
            if separate {
                ", this machine's binary by its path, in the file kept out of the repository"
            } else {
                ""
            }
        ),
    });
    // The shared file changes when the registration moves out of it, and when
    // the sandbox is turned on in it (the sandbox's plan starts from the file
    // with the registration moved out).
    let mut sharing = (!moved.is_empty()).then(|| Planned {
        path: shared_path.clone(),
        text: pretty(&shared_path, &shared),
        what: format!(
            "moves this machine's registration ({}) to {}",
            moved.join(", "),
            settings.registration
        ),
    });
    if let Some(plan) = &sandbox_plan
        && let Some(change) = &plan.change
    {
        let turns_on = format!("turns {}'s OS sandbox on", harness.title());
        if let Some(both) = registering.as_mut().filter(|r| r.path == change.path) {
            both.text = change.text.clone();
            both.what.push_str(", and turns its OS sandbox on");
        } else if let Some(both) = sharing.as_mut().filter(|r| r.path == change.path) {
            both.text = change.text.clone();
            both.what = format!("{turns_on}, and {}", both.what);
        } else {
            planned.push(Planned {
                path: change.path.clone(),
                text: change.text.clone(),
                what: turns_on,
            });
        }
    }
    planned.splice(0..0, sharing);
    planned.splice(0..0, registering);
    let config_in_force = Config::locate(Some(&project))
        .map_err(|e| anyhow::anyhow!("{e}; fix it first, nothing was written"))?;
    match config_in_force {
        Located::Embedded => planned.push(Planned {
            path: project.join(CONFIG_FILE),
            text: if sandbox {
                STARTER.to_owned()
            } else {
                without_sandbox(STARTER)?
            },
            what: "the starter policy: the embedded default, with escalation and observe mode in comments".into(),
        }),
        Located::File(path) if !sandbox => {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let edited = without_sandbox(&text)?;
            if edited != text {
                planned.push(Planned {
                    path,
                    text: edited,
                    what: "records that this project goes without the OS sandbox ([protect] os_sandbox = false)".into(),
                });
            }
        }
        Located::File(_) => {}
    }

    for (event, other) in &registered.kept {
        if let Some(other) = other {
            println!(
                "{}: {event} already runs `{other}`, not this binary; left as it is (`sandrail doctor` checks it)",
                settings_path.display()
            );
        }
    }
    if dry_run {
        if planned.is_empty() {
            println!(
                "Nothing to write: {} already registers sandrail, and the project has a config.",
                settings_path.display()
            );
        }
        for file in &planned {
            println!("would write {} — {}:", file.path.display(), file.what);
            print!("{}", file.text);
        }
        if let Some(service) = &service {
            println!(
                "would write {} — the user service running sandrail serve --user, and start it:",
                service.file.display()
            );
            print!("{}", service.text);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if sandbox_plan.is_some() {
        super::protect::prepare_places(&project)?;
    }
    for file in &planned {
        write(&file.path, &file.text)?;
        println!("wrote {}: {}", file.path.display(), file.what);
    }
    if separate && registered.changed() {
        keep_out_of_git(&project, settings.registration);
    }
    if !registered.changed() {
        println!(
            "{} already registers sandrail for every event it handles",
            settings_path.display()
        );
    }
    if harness == Harness::Codex {
        println!(
            "Codex runs a project's hooks once they are reviewed: open /hooks in Codex and trust them."
        );
    }
    match &sandbox_plan {
        Some(plan) => println!("\n{}", plan.summary()),
        None => println!("\nThe OS sandbox is left off. {WITHOUT_SANDBOX}"),
    }
    // A service that cannot start leaves events judged by the local hook: the
    // set-up asked for is not done, and the person hears what is left to do.
    let served = match &service {
        Some(service) => match service.install(write) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("sandrail: {e:#}");
                ExitCode::FAILURE
            }
        },
        None => ExitCode::SUCCESS,
    };
    let accepted = accept()?;
    // A sandbox that cannot run here protects nothing: the set-up is not done.
    let ready = sandbox_plan
        .as_ref()
        .map_or(ExitCode::SUCCESS, super::protect::report_readiness);
    Ok(if ready != ExitCode::SUCCESS {
        ready
    } else if served != ExitCode::SUCCESS {
        served
    } else {
        accepted
    })
}

/// A config's text recording that the project goes without the OS sandbox
/// (`[protect] os_sandbox = false`), comments and layout kept.
fn without_sandbox(text: &str) -> anyhow::Result<String> {
    let mut doc: toml_edit::DocumentMut = text.parse().context("the config is not valid TOML")?;
    let protect = doc
        .entry("protect")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            table.decor_mut().set_prefix(
                "\n# This project goes without the harness's OS sandbox (`sandrail init\n# --no-sandbox`), so `sandrail doctor` warns rather than fails. Turning it\n# back on is a change a person accepts with `sandrail trust`.\n",
            );
            toml_edit::Item::Table(table)
        })
        .as_table_mut()
        .context("[protect] in the config is not a table")?;
    if protect.get("os_sandbox").and_then(toml_edit::Item::as_bool) != Some(false) {
        protect.insert("os_sandbox", toml_edit::value(false));
    }
    Ok(doc.to_string())
}

/// The command line a harness runs: this binary by absolute path, so a file
/// named `sandrail` earlier on the PATH cannot stand in for it.
pub fn hook_command(binary: &Path, harness: Harness) -> String {
    let program = shell_word(&binary.to_string_lossy());
    match harness {
        Harness::Claude => format!("{program} hook"),
        other => format!("{program} hook --harness {}", other.name()),
    }
}

/// Adds this machine's registration file to the repository's own exclude list
/// (`.git/info/exclude`, which is not committed), so `git add -A` does not put a
/// machine's path in the team's history. A project that is not a git
/// repository, or one already excluding it, is left alone.
fn keep_out_of_git(project: &Path, file: &str) {
    let info = project.join(".git/info");
    if !project.join(".git").is_dir() {
        return;
    }
    let exclude = info.join("exclude");
    let line = format!("/{file}");
    let text = std::fs::read_to_string(&exclude).unwrap_or_default();
    if text.lines().any(|l| l.trim() == line) {
        return;
    }
    let separator = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let added = std::fs::create_dir_all(&info)
        .and_then(|()| std::fs::write(&exclude, format!("{text}{separator}{line}\n")));
    match added {
        Ok(()) => println!("{} is kept out of git ({})", file, exclude.display()),
        Err(e) => println!(
            "{file} could not be added to {} ({e}): keep it out of the repository yourself",
            exclude.display()
        ),
    }
}

/// Writes `text` to `path` whole or not at all.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().context("the file has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The policy on disk becomes the project's once a person accepts it: at a
/// terminal, as `sandrail trust` does; otherwise the person is told how.
fn accept() -> anyhow::Result<ExitCode> {
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        println!();
        return super::trust::run();
    }
    println!(
        "To accept the policy as this project's, run `sandrail trust` yourself in a terminal. Then `sandrail doctor` checks the setup."
    );
    Ok(ExitCode::SUCCESS)
}
