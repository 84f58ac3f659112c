//! One module per subcommand; `main.rs` only dispatches.

pub mod audit;
pub mod check_config;
pub mod checkpoints;
pub mod cycle;
pub mod doctor;
pub mod facts;
pub mod flag;
pub mod guardrail;
pub mod import;
pub mod init;
pub mod inspect;
pub mod list;
pub mod new;
pub mod overrides;
pub mod person;
pub mod pin;
pub mod protect;
pub mod receipts;
pub mod replay;
pub mod serve;
pub mod state;
pub mod status;
pub mod test;
pub mod trust;
pub mod undo;

use sandrail::config::Config;
use sandrail::locations;

/// The configuration in force for the current directory's project.
pub fn project_config() -> anyhow::Result<Config> {
    let cwd = std::env::current_dir().ok();
    Ok(Config::discover(locations::project_dir(cwd).as_deref())?)
}

/// The policy a new session of the current directory's project would run now,
/// decided by the hook's own function ([`sandrail::policy::prospect`]): the
/// config on disk where the ratchet takes it, else the accepted policy or the
/// embedded default it is held for. Said on stderr: what of it could not be read.
pub fn policy_in_force() -> sandrail::policy::Prospect {
    let state = locations::state_dir();
    let project = project_dir().map(|here| match &state {
        Some(state) => sandrail::policy::project_for(state, &here),
        None => here,
    });
    let timeouts = sandrail::harness::timeouts::of_project(project.as_deref());
    let prospect = sandrail::policy::prospect(
        &sandrail::policy::Source::Project,
        &sandrail::runtime::Prepares,
        state.as_deref(),
        project.as_deref(),
        &timeouts,
    );
    for alert in &prospect.alerts {
        eprintln!("sandrail: {alert}");
    }
    prospect
}

/// What a person must hear when the policy on disk is not what runs: that it
/// is held, what runs instead, and how to accept it. `None` when it runs.
pub fn held_notice(prospect: &sandrail::policy::Prospect) -> Option<String> {
    use sandrail::policy::Standing;
    let on_disk = &prospect.on_disk;
    match &prospect.standing {
        Standing::Taken { .. } => None,
        Standing::Held { changes } => Some(format!(
            "the policy on disk ({}, {}) is held, not in force: {}. New sessions run the accepted policy {} ({}{}) instead, and running sessions keep the policy each started with. To accept the one on disk, run `sandrail trust` in a terminal.",
            on_disk.id(),
            on_disk.origin(),
            changes.join("; "),
            prospect.policy.id(),
            prospect.policy.origin(),
            prospect
                .accepted
                .as_ref()
                .map_or_else(String::new, |a| format!(
                    ", accepted {} ({})",
                    a.accepted_at, a.how
                )),
        )),
        Standing::Default { why } => Some(format!(
            "the policy on disk ({}, {}) is held, not in force: it {why}, and nothing accepted for this project can run instead. New sessions run the embedded default. To accept the one on disk, run `sandrail trust` in a terminal.",
            on_disk.id(),
            on_disk.origin(),
        )),
    }
}

/// The project the current directory belongs to.
pub fn project_dir() -> Option<std::path::PathBuf> {
    locations::project_dir(std::env::current_dir().ok())
}

/// The session a command is about: the one given, else the project's latest.
pub fn session_or_latest(
    session: Option<String>,
    state: &std::path::Path,
) -> anyhow::Result<String> {
    use anyhow::Context;
    if let Some(session) = session {
        return Ok(session);
    }
    let project = project_dir().context("no project directory: give --session")?;
    sandrail::store::lifecycle::last_session(state, &project).with_context(|| {
        format!(
            "no session has been seen in {} yet; give --session",
            project.display()
        )
    })
}

/// How the OS sandbox stands for the project a command runs in, per harness
/// registered there; empty under managed mode (Claude Code's managed settings
/// hand every event to sandrail as a user of its own), which the flag says.
pub fn sandbox_reports() -> (bool, Vec<sandrail::os_sandbox::Report>) {
    if sandrail::managed::registered_in_managed_settings() {
        return (true, Vec::new());
    }
    let reports = project_dir()
        .map(|project| {
            let places = sandrail::os_sandbox::Places::here(&project);
            sandrail::os_sandbox::registered_harnesses(&project, places.home.as_deref())
                .into_iter()
                .map(|harness| sandrail::os_sandbox::report(harness, &places))
                .collect()
        })
        .unwrap_or_default();
    (false, reports)
}

/// The lines `status` and `audit` print about the OS sandbox.
pub fn sandbox_lines(managed: bool, reports: &[sandrail::os_sandbox::Report]) -> Vec<String> {
    if managed {
        return vec!["os sandbox: not needed for sandrail's own files: Claude Code's managed settings hand every event to sandrail running as a user of its own (managed mode)".to_owned()];
    }
    reports
        .iter()
        .map(|report| {
            let fix = report
                .fix
                .as_deref()
                .map_or_else(String::new, |fix| format!("; {fix}"));
            format!("os sandbox ({}): {}{fix}", report.harness, report.said)
        })
        .collect()
}
