//! `sandrail init [--harness H] [--http URL] [--dry-run]`: registers sandrail in
//! the harness's project settings (added beside what is there, never replacing
//! a hook), writes a commented starter `sandrail.toml` when the project has no
//! config, and has a person accept the policy.
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
use sandrail::harness::settings::shell_word;

use super::project_dir;

/// The starter policy: the embedded default, with escalation and observe mode
/// shown in comments.
pub const STARTER: &str = include_str!("../../templates/starter.toml");

/// A file `init` writes: where, and what.
struct Planned {
    path: PathBuf,
    text: String,
    what: String,
}

pub fn run(harness: Harness, http: Option<&str>, dry_run: bool) -> anyhow::Result<ExitCode> {
    let project = project_dir().context("no project directory: run it in the project")?;
    let binary = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .context("cannot tell where this sandrail binary is")?;
    let command = hook_command(&binary, harness);
    let settings = harness.settings();
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

    let settings_path = project.join(settings.file);
    let mut doc = match sandrail::os_sandbox::read(&settings_path) {
        Ok(doc) => doc.unwrap_or_else(|| serde_json::json!({})),
        Err(why) => bail!("{why}; fix it first, nothing was written"),
    };
    let registered = settings.register(&mut doc, &*hook_for).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}; fix it first, nothing was written",
            settings_path.display()
        )
    })?;
    let mut planned = Vec::new();
    if registered.changed() {
        planned.push(Planned {
            path: settings_path.clone(),
            text: serde_json::to_string_pretty(&doc)? + "\n",
            what: format!(
                "registers sandrail for {} ({})",
                registered.added.join(", "),
                harness.title()
            ),
        });
    }
    let config_in_force = Config::locate(Some(&project))
        .map_err(|e| anyhow::anyhow!("{e}; fix it first, nothing was written"))?;
    if let Located::Embedded = config_in_force {
        planned.push(Planned {
            path: project.join(CONFIG_FILE),
            text: STARTER.to_owned(),
            what: "the starter policy: the embedded default, with escalation and observe mode in comments".into(),
        });
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
        return Ok(ExitCode::SUCCESS);
    }
    for file in &planned {
        write(&file.path, &file.text)?;
        println!("wrote {}: {}", file.path.display(), file.what);
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
    accept()
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
