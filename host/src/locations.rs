//! Where sandrail keeps its files: the state database and the compiled-component
//! cache. Both live outside the project so that nothing sandrail writes ends up in
//! the project's tracked files.

use std::path::{Path, PathBuf};

/// The state directory: `SANDRAIL_STATE_DIR`, else `$XDG_STATE_HOME/sandrail`, else
/// `~/.local/state/sandrail`.
/// `None` as well when it exists but is not the user's alone ([`trusted`]).
pub fn state_dir() -> Option<PathBuf> {
    from_env("SANDRAIL_STATE_DIR")
        .or_else(|| from_env("XDG_STATE_HOME").map(|d| d.join("sandrail")))
        .or_else(|| home().map(|h| h.join(".local/state/sandrail")))
        .and_then(|dir| trusted(dir, "state directory"))
}

/// The compiled-component cache: `SANDRAIL_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/sandrail`, else `~/.cache/sandrail`.
/// `None` as well when it exists but is not the user's alone ([`trusted`]).
pub fn cache_dir() -> Option<PathBuf> {
    from_env("SANDRAIL_CACHE_DIR")
        .or_else(|| from_env("XDG_CACHE_HOME").map(|d| d.join("sandrail")))
        .or_else(|| home().map(|h| h.join(".cache/sandrail")))
        .and_then(|dir| trusted(dir, "compiled-code cache"))
}

/// `dir`, unless it exists and another user owns it or others may write to it:
/// what another user can put there (a session's state, native code for the
/// engine to run) must not be taken for sandrail's own. A directory that does
/// not exist yet is created private. Says why on stderr when it refuses one.
fn trusted(dir: PathBuf, what: &str) -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(&dir) else {
            return Some(dir);
        };
        // The process's own uid, without unsafe code: /proc/self is owned by it.
        let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
        let foreign_owner = me.is_some_and(|me| meta.uid() != me);
        let others_write = meta.mode() & 0o022 != 0;
        if foreign_owner || others_write {
            let why = if foreign_owner {
                format!("is owned by uid {}, not by this user", meta.uid())
            } else {
                "can be written by other users".to_owned()
            };
            eprintln!(
                "sandrail: the {what} {} {why}, so it is not used; make it yours alone (chmod 700) or point sandrail elsewhere",
                dir.display()
            );
            return None;
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
