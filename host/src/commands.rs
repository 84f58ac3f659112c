//! One module per subcommand; `main.rs` only dispatches.

pub mod audit;
pub mod check_config;
pub mod cycle;
pub mod doctor;
pub mod facts;
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

use sandrail::config::Config;
use sandrail::locations;

/// The configuration in force for the current directory's project.
pub fn project_config() -> anyhow::Result<Config> {
    let cwd = std::env::current_dir().ok();
    Ok(Config::discover(locations::project_dir(cwd).as_deref())?)
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
