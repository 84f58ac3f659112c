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

use std::path::{Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forwarding_hooks_socket_is_read_as_the_shell_reads_it() {
        assert_eq!(
            forwarding_hook("SANDRAIL_SERVE_SOCKET='/a b/it'\\''s.sock' /bin/sandrail-hook"),
            Some((PathBuf::from("/a b/it's.sock"), false))
        );
        assert_eq!(
            forwarding_hook(
                "SANDRAIL_SERVE_REQUIRED=1 SANDRAIL_SERVE_SOCKET=\"/run/x y.sock\" sandrail hook"
            ),
            Some((PathBuf::from("/run/x y.sock"), true))
        );
        assert_eq!(forwarding_hook("/bin/sandrail-hook"), None);
        assert_eq!(
            forwarding_hook("echo SANDRAIL_SERVE_SOCKET=/s sandrail-hook"),
            None
        );
    }
}

/// Claude Code's managed settings on Linux: root's, above every user and
/// project setting, where managed mode registers the forwarding hook.
pub const CLAUDE_MANAGED_SETTINGS: &str = "/etc/claude-code/managed-settings.json";

/// What a managed settings file registers of a managed sandrail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagedHooks {
    /// Per event, the socket each of its forwarding hooks names, and whether
    /// each refuses when the server does not answer
    /// (`SANDRAIL_SERVE_REQUIRED=1`).
    pub forwarding: std::collections::BTreeMap<String, Vec<(PathBuf, bool)>>,
    /// `allowManagedHooksOnly`: no user or project hook runs besides these.
    pub managed_hooks_only: bool,
}

impl ManagedHooks {
    /// Reads Claude Code's managed settings at `path`: `None` where there is
    /// no such file.
    pub fn read(path: &Path) -> Result<Option<ManagedHooks>, String> {
        let Some(doc) = crate::os_sandbox::read(path)? else {
            return Ok(None);
        };
        let mut hooks = ManagedHooks {
            managed_hooks_only: doc
                .get("allowManagedHooksOnly")
                .and_then(serde_json::Value::as_bool)
                == Some(true),
            ..ManagedHooks::default()
        };
        let events = doc.get("hooks").and_then(serde_json::Value::as_object);
        for (event, groups) in events.into_iter().flatten() {
            let commands = groups
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|group| group.get("hooks").and_then(serde_json::Value::as_array))
                .flatten()
                .filter_map(|hook| hook.get("command").and_then(serde_json::Value::as_str));
            for command in commands {
                if let Some(found) = forwarding_hook(command) {
                    hooks
                        .forwarding
                        .entry(event.clone())
                        .or_default()
                        .push(found);
                }
            }
        }
        Ok(Some(hooks))
    }
}

/// Whether the managed settings at Claude Code's place hand events to a
/// managed sandrail.
pub fn registered_in_managed_settings() -> bool {
    ManagedHooks::read(Path::new(CLAUDE_MANAGED_SETTINGS))
        .ok()
        .flatten()
        .is_some_and(|hooks| !hooks.forwarding.is_empty())
}

/// A hook command line that forwards to a server: `sandrail-hook`, or
/// `sandrail hook`, with `SANDRAIL_SERVE_SOCKET` set in front of it. Gives the
/// socket and whether `SANDRAIL_SERVE_REQUIRED=1` is set too.
pub fn forwarding_hook(command: &str) -> Option<(PathBuf, bool)> {
    let argv = crate::shell::analyse(command)
        .commands
        .into_iter()
        .map(|c| c.argv)
        .find(|argv| {
            let program = argv.first().map(|p| crate::shell::program(p));
            program == Some("sandrail-hook")
                || (program == Some("sandrail") && argv.get(1).is_some_and(|a| a == "hook"))
        })?;
    let program = argv.first()?;
    // The assignments in front of the program, as the shell reads them: the
    // line's words as the one shell analysis unquotes them, read as the
    // arguments of a command put in front.
    let words = crate::shell::analyse(&format!("printf {command}"))
        .commands
        .into_iter()
        .find(|c| c.argv.first().is_some_and(|p| p == "printf"))?
        .argv;
    let mut socket = None;
    let mut required = false;
    for word in words.iter().skip(1) {
        if word == program {
            break;
        }
        match word.split_once('=') {
            Some((crate::forward::SOCKET_VAR, value)) => socket = Some(PathBuf::from(value)),
            Some((crate::forward::REQUIRED_VAR, value)) => required = value == "1",
            _ => {}
        }
    }
    Some((socket?, required))
}
