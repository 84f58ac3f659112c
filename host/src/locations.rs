//! Where sandrail keeps its files: the state database and the compiled-component
//! cache. Both live outside the project so that nothing sandrail writes ends up in
//! the project's tracked files.

use std::path::{Path, PathBuf};

/// The state directory: `SANDRAIL_STATE_DIR`, else `$XDG_STATE_HOME/sandrail`, else
/// `~/.local/state/sandrail`.
pub fn state_dir() -> Option<PathBuf> {
    from_env("SANDRAIL_STATE_DIR")
        .or_else(|| from_env("XDG_STATE_HOME").map(|d| d.join("sandrail")))
        .or_else(|| home().map(|h| h.join(".local/state/sandrail")))
}

/// The compiled-component cache: `SANDRAIL_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/sandrail`, else `~/.cache/sandrail`.
pub fn cache_dir() -> Option<PathBuf> {
    from_env("SANDRAIL_CACHE_DIR")
        .or_else(|| from_env("XDG_CACHE_HOME").map(|d| d.join("sandrail")))
        .or_else(|| home().map(|h| h.join(".cache/sandrail")))
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
