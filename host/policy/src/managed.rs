//! Managed mode (`sandrail serve --system`): the server runs as a user of its own,
//! out of reach of the agents it judges. What keeps the guard on is ownership,
//! not watching: the policy is read from a directory only root can write, the
//! state, receipts and compiled code belong to the service user (0700), and the
//! agents reach the server only through its socket, which answers hook payloads
//! and nothing else.
//!
//! Because only root can change the policy, the per-project ratchet (which holds
//! a loosening change until a person runs `sandrail trust`) is not needed: a new
//! session takes the policy as root left it, and a running session keeps the
//! policy it started with, as everywhere else.

use std::path::PathBuf;

pub use sandrail_files::not_root_owned;

/// The directories of a managed server: systemd's (`ConfigurationDirectory=`,
/// `StateDirectory=`, `CacheDirectory=`, `RuntimeDirectory=` set these
/// variables), else the usual system places.
#[derive(Debug, Clone)]
pub struct System {
    /// The root-owned directory holding `sandrail.toml` (`/etc/sandrail`).
    pub config_dir: PathBuf,
    /// The service user's state: sessions, policy snapshots, receipts.
    pub state: PathBuf,
    /// The service user's compiled components.
    pub cache: PathBuf,
    /// Where the socket is made (`/run/sandrail`).
    pub runtime: PathBuf,
}

/// The socket's name in the runtime directory.
pub const SOCKET_NAME: &str = "hook.sock";

impl System {
    pub fn from_environment() -> System {
        let dir = |var: &str, default: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                // systemd lists several directories separated by ':' when asked
                // for several; the first is sandrail's.
                .map(|v| {
                    let v = v.to_string_lossy().into_owned();
                    PathBuf::from(v.split(':').next().unwrap_or_default())
                })
                .unwrap_or_else(|| PathBuf::from(default))
        };
        System {
            config_dir: dir("CONFIGURATION_DIRECTORY", "/etc/sandrail"),
            state: dir("STATE_DIRECTORY", "/var/lib/sandrail"),
            cache: dir("CACHE_DIRECTORY", "/var/cache/sandrail"),
            runtime: dir("RUNTIME_DIRECTORY", "/run/sandrail"),
        }
    }

    /// The policy every session is judged by.
    pub fn config(&self) -> PathBuf {
        self.config_dir.join(crate::config::CONFIG_FILE)
    }

    pub fn socket(&self) -> PathBuf {
        self.runtime.join(SOCKET_NAME)
    }
}

/// Why the policy files a session would take (the config, its lock and
/// mandate, its components and data files) are not all root's alone, if they
/// are not.
pub fn policy_not_root_owned<'a>(files: impl IntoIterator<Item = &'a PathBuf>) -> Option<String> {
    files.into_iter().find_map(|file| not_root_owned(file))
}
