//! Where sandrail keeps its files: the state database and the compiled-component
//! cache. Both live outside the project so that nothing sandrail writes ends up in
//! the project's tracked files.

use std::path::{Path, PathBuf};

use crate::managed;
use crate::policy;

/// Where one process keeps its state and compiled code and finds its policy.
#[derive(Debug, Clone, Default)]
pub enum Places {
    /// The user's (from the environment, looked up at each event) and the
    /// project's policy: `sandrail hook`, and `sandrail serve` for one user.
    #[default]
    User,
    /// A managed server's: the service user's directories and root's policy.
    System(managed::System),
}

impl Places {
    /// The state directory and the compiled-code cache, each `None` when it
    /// cannot be used (said on stderr); what had to be put right is added to
    /// `repairs`.
    pub fn dirs(&self, repairs: &mut Vec<String>) -> (Option<PathBuf>, Option<PathBuf>) {
        match self {
            Places::User => (state_dir_repaired(repairs), cache_dir_repaired(repairs)),
            Places::System(system) => (
                trusted(system.state.clone(), "state directory", repairs),
                trusted(system.cache.clone(), "compiled-code cache", repairs),
            ),
        }
    }

    /// Where a new session's policy comes from.
    pub fn policy(&self) -> policy::Source {
        match self {
            Places::User => policy::Source::Project,
            Places::System(system) => policy::Source::Managed(system.config()),
        }
    }
}

/// The state directory: `SANDRAIL_STATE_DIR`, else `$XDG_STATE_HOME/sandrail`, else
/// `~/.local/state/sandrail`.
/// `None` as well when it exists but is not the user's alone ([`trusted`]).
pub fn state_dir() -> Option<PathBuf> {
    state_dir_repaired(&mut Vec::new())
}

/// [`state_dir`], adding to `repairs` what had to be put right (a loosened mode).
pub fn state_dir_repaired(repairs: &mut Vec<String>) -> Option<PathBuf> {
    from_env("SANDRAIL_STATE_DIR")
        .or_else(|| from_env("XDG_STATE_HOME").map(|d| d.join("sandrail")))
        .or_else(|| home().map(|h| h.join(".local/state/sandrail")))
        .and_then(|dir| trusted(dir, "state directory", repairs))
}

/// The compiled-component cache: `SANDRAIL_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/sandrail`, else `~/.cache/sandrail`.
/// `None` as well when it exists but is not the user's alone ([`trusted`]).
pub fn cache_dir() -> Option<PathBuf> {
    cache_dir_repaired(&mut Vec::new())
}

/// [`cache_dir`], adding to `repairs` what had to be put right. A cache that was
/// open to other users loses its compiled code, which anyone could have put
/// there: it is compiled again.
pub fn cache_dir_repaired(repairs: &mut Vec<String>) -> Option<PathBuf> {
    let dir = from_env("SANDRAIL_CACHE_DIR")
        .or_else(|| from_env("XDG_CACHE_HOME").map(|d| d.join("sandrail")))
        .or_else(|| home().map(|h| h.join(".cache/sandrail")))?;
    let before = repairs.len();
    let dir = trusted(dir, "compiled-code cache", repairs)?;
    if repairs.len() > before {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Some(dir)
}

/// `dir`, unless it exists and another user owns it: what another user can put
/// there (a session's state, native code for the engine to run) must not be
/// taken for sandrail's own. A directory of this user's whose mode was changed
/// (`chmod 777`, `chmod 000`) is made the user's alone again, said on stderr and
/// added to `repairs`: changing it must not make sandrail stop using it. A directory that does not
/// exist yet is created private. Says why on stderr when it refuses one.
fn trusted(dir: PathBuf, what: &str, repairs: &mut Vec<String>) -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let Ok(meta) = std::fs::metadata(&dir) else {
            return Some(dir);
        };
        // The process's own uid, without unsafe code: /proc/self is owned by it.
        let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
        if me.is_some_and(|me| meta.uid() != me) {
            eprintln!(
                "sandrail: the {what} {} is owned by uid {}, not by this user, so it is not used; point sandrail elsewhere",
                dir.display(),
                meta.uid()
            );
            return None;
        }
        let mode = meta.mode() & 0o777;
        // Not a directory: using it fails where it is used, and says so there.
        // Opened to others, or closed to its owner (`chmod 000`): either way
        // sandrail would stop using it.
        if meta.is_dir() && mode != 0o700 && (mode & 0o077 != 0 || mode & 0o700 != 0o700) {
            if let Err(e) = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)) {
                eprintln!(
                    "sandrail: the {what} {} can be reached by other users (mode {mode:o}) and cannot be made private ({e}), so it is not used",
                    dir.display()
                );
                return None;
            }
            let repaired = format!(
                "sandrail: the {what} {} had been given mode {mode:o}; it is the user's alone again (700)",
                dir.display()
            );
            eprintln!("{repaired}");
            repairs.push(repaired);
        }
    }
    Some(dir)
}

/// The project a hook runs for: `CLAUDE_PROJECT_DIR`, else the given directory.
pub fn project_dir(fallback: Option<PathBuf>) -> Option<PathBuf> {
    from_env("CLAUDE_PROJECT_DIR").or(fallback)
}

/// Creates `dir` (and its parents) readable by its owner only: the state holds what
/// guardrails recorded about a session, and the cache holds native code.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Opens `path` for reading and writing, creating it readable by its owner only if
/// it does not exist; its contents are left as they are.
pub fn open_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// The user's home directory, from `HOME`.
pub fn home() -> Option<PathBuf> {
    from_env("HOME")
}

fn from_env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
