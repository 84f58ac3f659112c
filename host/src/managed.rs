//! Managed mode as Claude Code sees it: root's managed settings, where the
//! forwarding hook is registered above every user and project setting. The
//! server's own places and the ownership of root's policy are the policy
//! layer's (`sandrail_policy::managed`, re-exported here).

use std::path::{Path, PathBuf};

pub use sandrail_policy::managed::*;

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
        let Some(doc) = crate::harness::settings::read(path)? else {
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
