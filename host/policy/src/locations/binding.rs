//! Where a project's records live, kept where the environment cannot move it.
//!
//! The state directory — the project's accepted policy, the registrations
//! remembered for ConfigChange, the sessions, the receipts — and the system log
//! the receipts also go to are found from the environment (`SANDRAIL_STATE_DIR`,
//! `XDG_STATE_HOME`, `HOME`, `SANDRAIL_SYSLOG_SOCKET`), which a harness's
//! settings (`env`) or a shell profile can set for a new session. A session
//! pointed at a fresh directory would find nothing accepted, and one pointed at
//! a directory the agent filled would find what the agent wrote.
//!
//! So the first time sandrail sees a project, the places it saw it with are
//! bound to it, in a record under the account's home directory as the password
//! database gives it (`~/.local/state/sandrail/anchors/`), which no variable
//! moves. Every later event of that project uses the bound places; a hook
//! started with others says so, and a person moves the binding with `sandrail
//! trust` in a terminal started with the new ones. A project inside a bound one
//! shares its binding. A project never seen before is bound to what it is first
//! seen with: it has nothing accepted yet, so nothing can be lost by it (the
//! embedded default is its floor, see [`crate::policy`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the bindings are kept, under the account's state directory.
const ANCHORS_DIR: &str = "anchors";

/// A project's places, as bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The project the binding was made for.
    pub project: PathBuf,
    /// Its state directory.
    pub state: PathBuf,
    /// The socket its receipts are logged to.
    pub log: PathBuf,
}

/// The places an event or command uses, and what the person must hear about
/// how they were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    pub state: PathBuf,
    pub log: PathBuf,
    /// Set when the environment asked for other places than the bound ones.
    pub moved: Option<String>,
}

/// The places to use for `project`, given the ones the environment asks for.
/// With `bind_new`, a project seen for the first time is bound to them.
pub fn settle(project: Option<&Path>, state: PathBuf, log: PathBuf, bind_new: bool) -> Settled {
    let Some(project) = project else {
        return Settled {
            state,
            log,
            moved: None,
        };
    };
    match bound(project) {
        Some(binding) if binding.state == state && binding.log == log => Settled {
            state,
            log,
            moved: None,
        },
        Some(binding) => {
            let moved = Some(moved_alert(&binding, &state, &log));
            Settled {
                state: binding.state,
                log: binding.log,
                moved,
            }
        }
        None => {
            if bind_new
                && let Err(e) = bind(project, &state, &log)
                && sandrail_event::debug_logging()
            {
                eprintln!(
                    "sandrail: cannot bind {} to its state directory: {e}",
                    project.display()
                );
            }
            Settled {
                state,
                log,
                moved: None,
            }
        }
    }
}

/// What the person is told when the environment asks for other places.
fn moved_alert(binding: &Binding, state: &Path, log: &Path) -> String {
    let mut asked = Vec::new();
    if binding.state != state {
        asked.push(format!(
            "its state directory at {} instead of {}",
            state.display(),
            binding.state.display()
        ));
    }
    if binding.log != log {
        asked.push(format!(
            "its receipts logged to {} instead of {}",
            log.display(),
            binding.log.display()
        ));
    }
    format!(
        "sandrail: this hook was started with {}, but {}'s records are bound to the places it was first seen with, and those are used. Something changed the environment sandrail starts in (SANDRAIL_STATE_DIR, XDG_STATE_HOME, HOME or SANDRAIL_SYSLOG_SOCKET, such as a harness settings file's `env`). If you made this change, run `sandrail trust` in a terminal started with it.",
        asked.join(" and "),
        binding.project.display()
    )
}

/// The binding of `project`: its own, else the nearest enclosing project's.
pub fn bound(project: &Path) -> Option<Binding> {
    let root = anchors_root()?;
    project.ancestors().find_map(|dir| {
        let bytes = sandrail_files::read_regular(&record(&root, dir), 64 << 10).ok()?;
        serde_json::from_slice::<Binding>(&bytes)
            .ok()
            .filter(|b| b.project == dir)
    })
}

/// Binds `project` to these places (a person's `sandrail trust`, or the first
/// sight of a project).
pub fn bind(project: &Path, state: &Path, log: &Path) -> std::io::Result<()> {
    let root = anchors_root().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the password database names no usable home directory for this user",
        )
    })?;
    let binding = Binding {
        project: project.to_path_buf(),
        state: state.to_path_buf(),
        log: log.to_path_buf(),
    };
    let path = record(&root, project);
    if let Some(dir) = path.parent() {
        super::create_private_dir(dir)?;
    }
    sandrail_files::write_atomically(&path, &serde_json::to_vec(&binding)?)
}

/// Where the bindings live: `anchors/` in the account's own state directory,
/// whatever the environment says.
pub fn anchors_root() -> Option<PathBuf> {
    super::account_state_dir().map(|dir| dir.join(ANCHORS_DIR))
}

/// The file holding `project`'s own binding, whether or not it exists.
pub fn record_of(project: &Path) -> Option<PathBuf> {
    anchors_root().map(|root| record(&root, project))
}

fn record(root: &Path, project: &Path) -> PathBuf {
    let key = &sandrail_event::sha256_hex(project.as_os_str().as_encoded_bytes())[..32];
    root.join(format!("{key}.json"))
}
