//! One module per subcommand; `main.rs` only dispatches.

pub mod audit;
pub mod check_config;
pub mod facts;
pub mod guardrail;
pub mod import;
pub mod inspect;
pub mod list;
pub mod overrides;
pub mod pin;
pub mod receipts;
pub mod state;
pub mod status;

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
