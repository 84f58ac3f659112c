//! `sandrail protect --harness claude [--dry-run]`: puts sandrail's own paths out
//! of the agent's reach with the harness's OS sandbox and permission rules,
//! merged into the project's Claude Code settings (see [`sandrail::os_sandbox`]).

use std::process::ExitCode;

use anyhow::{Context, bail};

use sandrail::locations;
use sandrail::os_sandbox::{self, Places};

use super::project_dir;

/// The harnesses `protect` knows how to set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Harness {
    /// Claude Code: `sandbox.filesystem.denyWrite` and `Edit` deny rules.
    Claude,
}

pub fn run(harness: Harness, dry_run: bool) -> anyhow::Result<ExitCode> {
    let Harness::Claude = harness;
    let project = project_dir().context("no project directory: run it in the project")?;
    let state = locations::state_dir();
    let cache = locations::cache_dir();
    // A path the sandbox denies must exist when a command starts, or the
    // sandbox makes its missing parent read-only for the command's whole run.
    if !dry_run {
        for dir in [state.as_deref(), cache.as_deref()].into_iter().flatten() {
            locations::create_private_dir(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        if let Some(audit) = sandrail::audit::trail(&project).parent() {
            std::fs::create_dir_all(audit)
                .with_context(|| format!("cannot create {}", audit.display()))?;
        }
    }
    let home = locations::home();
    let binary = std::env::current_exe().ok();
    let places = Places {
        project: &project,
        home: home.as_deref(),
        state: state.as_deref(),
        cache: cache.as_deref(),
        binary: binary.as_deref(),
    };
    let configs = os_sandbox::configs_of(&project, state.as_deref());
    let kept = os_sandbox::kept_paths(&configs.iter().collect::<Vec<_>>(), &places);
    let (deny_write, edit_rules) = os_sandbox::claude_entries(&kept, &places);
    let path = project.join(os_sandbox::CLAUDE_SETTINGS);
    let mut settings = match os_sandbox::read(&path) {
        Ok(settings) => settings.unwrap_or_else(|| serde_json::json!({})),
        Err(why) => bail!("{why}; fix it first, nothing was written"),
    };
    let changed = os_sandbox::merge(&mut settings, &deny_write, &edit_rules);
    let text = serde_json::to_string_pretty(&settings)? + "\n";
    if dry_run {
        println!(
            "{}{}:",
            if changed {
                "would write "
            } else {
                "already in "
            },
            path.display()
        );
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    if !changed {
        println!(
            "{} already keeps sandrail's {} paths out of the agent's reach",
            path.display(),
            kept.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let dir = path
        .parent()
        .context("the settings file has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!(
        "{}: the Bash sandbox is on, single commands cannot leave it, and sandrail's {} paths are in sandbox.filesystem.denyWrite and permissions.deny",
        path.display(),
        kept.len()
    );
    for entry in &deny_write {
        println!("  {entry}");
    }
    Ok(ExitCode::SUCCESS)
}
