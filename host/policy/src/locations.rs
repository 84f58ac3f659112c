//! Where sandrail keeps its files: the state database and the compiled-component
//! cache. Both live outside the project so that nothing sandrail writes ends up in
//! the project's tracked files. Which state directory and system log a project's
//! records use is bound to the project where the environment cannot move it
//! ([`binding`]).

pub mod binding;

use std::path::{Path, PathBuf};

pub use sandrail_files::{create_private_dir, open_private_file};

use crate::managed;
use crate::policy;

/// The socket the system log listens on (journald reads it too).
const DEV_LOG: &str = "/dev/log";

/// The places one event (or command) uses.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// The state directory; `None` when it cannot be used (said on stderr).
    pub state: Option<PathBuf>,
    /// The compiled-code cache; `None` when it cannot be used.
    pub cache: Option<PathBuf>,
    /// The socket receipts are logged to.
    pub log: PathBuf,
    /// What the person must hear when the environment asked for other places
    /// than the project's bound ones.
    pub moved: Option<String>,
    /// What had to be put right (a loosened directory mode).
    pub repairs: Vec<String>,
}

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
    /// The places an event of `project` uses. A user's are the project's bound
    /// ones ([`binding`]); a project seen for the first time is bound to what
    /// the environment names.
    pub fn for_event(&self, project: Option<&Path>) -> Found {
        let mut found = Found::default();
        match self {
            Places::User => {
                let settled = settle_user(project, true);
                found.state = settled
                    .state
                    .and_then(|dir| trusted(dir, "state directory", &mut found.repairs));
                found.cache = cache_dir_repaired(&mut found.repairs);
                found.log = settled.log;
                found.moved = settled.moved;
            }
            Places::System(system) => {
                found.state = trusted(system.state.clone(), "state directory", &mut found.repairs);
                found.cache = trusted(
                    system.cache.clone(),
                    "compiled-code cache",
                    &mut found.repairs,
                );
                found.log = log_from_env();
            }
        }
        found
    }

    /// The compiled-code cache alone (a resident engine's, at its start).
    pub fn cache(&self) -> Option<PathBuf> {
        match self {
            Places::User => cache_dir(),
            Places::System(system) => {
                trusted(system.cache.clone(), "compiled-code cache", &mut Vec::new())
            }
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

/// The state directory of the project a command runs in (`CLAUDE_PROJECT_DIR`,
/// else the current directory): the one bound to it, else what the environment
/// names (see [`state_dir_from_env`]). A command started with other places than
/// the bound ones says so on stderr. `None` as well when it exists but is not
/// the user's alone ([`trusted`]).
pub fn state_dir() -> Option<PathBuf> {
    let project = project_dir(std::env::current_dir().ok());
    let settled = settle_user(project.as_deref(), false);
    if let Some(moved) = &settled.moved {
        eprintln!("{moved}");
    }
    settled
        .state
        .and_then(|dir| trusted(dir, "state directory", &mut Vec::new()))
}

/// `dir` as a state directory, unless it is not the user's alone ([`trusted`]).
pub fn usable_state_dir(dir: PathBuf) -> Option<PathBuf> {
    trusted(dir, "state directory", &mut Vec::new())
}

/// The state directory the environment names: `SANDRAIL_STATE_DIR`, else
/// `$XDG_STATE_HOME/sandrail`, else `~/.local/state/sandrail` — and where the
/// environment names none (`HOME` emptied), the account's own: an environment
/// stripped of its variables must not leave sandrail without its records.
pub fn state_dir_from_env() -> Option<PathBuf> {
    from_env("SANDRAIL_STATE_DIR")
        .or_else(|| from_env("XDG_STATE_HOME").map(|d| d.join("sandrail")))
        .or_else(|| home().map(|h| h.join(".local/state/sandrail")))
        .or_else(|| account_home().map(|h| h.join(".local/state/sandrail")))
}

/// The socket the environment names for the system log:
/// `SANDRAIL_SYSLOG_SOCKET`, else `/dev/log`.
pub fn log_from_env() -> PathBuf {
    from_env("SANDRAIL_SYSLOG_SOCKET").unwrap_or_else(|| PathBuf::from(DEV_LOG))
}

/// A user's places for `project`: the bound ones, else the environment's.
struct UserPlaces {
    state: Option<PathBuf>,
    log: PathBuf,
    moved: Option<String>,
}

fn settle_user(project: Option<&Path>, bind_new: bool) -> UserPlaces {
    let log = log_from_env();
    let Some(state) = state_dir_from_env() else {
        return UserPlaces {
            state: None,
            log,
            moved: None,
        };
    };
    let settled = binding::settle(project, state, log, bind_new);
    UserPlaces {
        state: Some(settled.state),
        log: settled.log,
        moved: settled.moved,
    }
}

/// The account's own state directory, `~/.local/state/sandrail` under the home
/// directory the password database gives: where the bindings live, since no
/// variable of the environment moves it. `None` when there is no such home,
/// or the directory is not the user's alone.
pub fn account_state_dir() -> Option<PathBuf> {
    let dir = account_home()?.join(".local/state/sandrail");
    trusted(dir, "account's state directory", &mut Vec::new())
}

/// The home directory the password database gives this process's user: unlike
/// `HOME`, nothing in a harness's settings or the agent's shell changes it.
pub fn account_home() -> Option<PathBuf> {
    static HOME: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HOME.get_or_init(password_database_home).clone()
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn password_database_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let mut buffer = vec![0u8; 1024];
    loop {
        // SAFETY: an all-zero `passwd` is a valid value of the plain C struct
        // (null pointers, zero ids); getpwuid_r fills it in.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call: `entry` and `result`
        // are live locals, and `buffer` is writable for `buffer.len()` bytes.
        // The strings `entry` points to live in `buffer`, read below while it
        // is alive.
        let code = unsafe {
            libc::getpwuid_r(
                uid,
                &mut entry,
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                &mut result,
            )
        };
        if code == libc::ERANGE && buffer.len() < 1 << 20 {
            buffer.resize(buffer.len() * 2, 0);
            continue;
        }
        if code != 0 || result.is_null() || entry.pw_dir.is_null() {
            return None;
        }
        // SAFETY: getpwuid_r succeeded, so pw_dir is a NUL-terminated string
        // inside `buffer`.
        let dir = unsafe { std::ffi::CStr::from_ptr(entry.pw_dir) };
        let dir = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
        return dir.is_absolute().then_some(dir);
    }
}

#[cfg(not(unix))]
fn password_database_home() -> Option<PathBuf> {
    None
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
        .or_else(|| home().map(|h| h.join(".cache/sandrail")))
        .or_else(|| account_home().map(|h| h.join(".cache/sandrail")))?;
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
        let me = current_uid();
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
            // A directory only readable by others (`mkdir` under the usual
            // umask gives 755) is made private without a word: nothing another
            // user could do with it harms sandrail. One others could write to,
            // or its owner could not use, was changed by someone: said.
            let harmful = mode & 0o022 != 0 || mode & 0o700 != 0o700;
            if harmful {
                let repaired = format!(
                    "sandrail: the {what} {} had been given mode {mode:o}; it is the user's alone again (700)",
                    dir.display()
                );
                eprintln!("{repaired}");
                repairs.push(repaired);
            }
        }
    }
    Some(dir)
}

/// The project a hook runs for: `CLAUDE_PROJECT_DIR`, else the given directory,
/// as [`canonical`].
pub fn project_dir(fallback: Option<PathBuf>) -> Option<PathBuf> {
    from_env("CLAUDE_PROJECT_DIR")
        .or(fallback)
        .map(|p| canonical(&p))
}

/// A project's path as one spelling: symbolic links, `.`, `..`, repeated and
/// trailing slashes resolved, so that `/p/`, `/p/./` and a link to `/p` find the
/// same accepted policy and the same binding. A path that does not exist is
/// only made absolute and cleaned.
pub fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut clean = PathBuf::new();
        for part in absolute.components() {
            match part {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    clean.pop();
                }
                other => clean.push(other),
            }
        }
        clean
    })
}

/// The home directories whose settings count for a hook: `HOME`, as the
/// harness reads it, and the account's home from the password database when it
/// differs, which a `HOME` set for the hook cannot move a guard off.
pub fn homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = home().into_iter().collect();
    if let Some(account) = account_home()
        && !homes.contains(&account)
    {
        homes.push(account);
    }
    homes
}

/// The file the user service running `sandrail serve --user` is described in
/// (`sandrail init --serve` writes it): a systemd user unit, or a launchd agent
/// on macOS.
pub fn user_service_file() -> Option<PathBuf> {
    if cfg!(target_os = "macos") {
        return home().map(|h| h.join("Library/LaunchAgents/dev.sandrail.serve.plist"));
    }
    Some(user_config_dir()?.join("systemd/user/sandrail.service"))
}

/// What decides how the user service runs, so what the OS sandbox and
/// self-protection keep from the agent's commands: whoever changes it chooses
/// what answers the forwarding hook. On Linux all of the user's systemd
/// configuration (the unit, its drop-ins, `user.control`) and the environment
/// the user manager gives services; on macOS the agent's file.
pub fn user_service_places() -> Vec<PathBuf> {
    if cfg!(target_os = "macos") {
        return user_service_file().into_iter().collect();
    }
    user_config_dir()
        .map(|config| vec![config.join("systemd"), config.join("environment.d")])
        .unwrap_or_default()
}

fn user_config_dir() -> Option<PathBuf> {
    from_env("XDG_CONFIG_HOME").or_else(|| home().map(|h| h.join(".config")))
}

/// The process's own uid, without unsafe code: `/proc/self` is owned by it.
/// `None` where there is no `/proc`.
pub fn current_uid() -> Option<u32> {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .ok()
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
