//! What Claude Code's sandbox needs on this machine: on Linux and WSL2,
//! bubblewrap (`bwrap`) able to make the namespaces it runs commands in, socat
//! for its network proxy and ripgrep; on macOS nothing (Seatbelt is part of the
//! system); elsewhere it cannot run. Where something is missing, the exact
//! command to install it.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Whether the sandbox can run here, and if not, what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Programs it needs are not on the `PATH`; the command that installs them
    /// (none where no package manager is known).
    Missing {
        programs: Vec<&'static str>,
        install: Option<String>,
    },
    /// Everything is installed but the sandbox cannot start, and why.
    Broken(String),
    /// No sandbox runs on this system at all.
    Unsupported(&'static str),
}

impl Readiness {
    pub fn is_ready(&self) -> bool {
        matches!(self, Readiness::Ready)
    }

    /// What is wrong and how to put it right, in a sentence or two.
    pub fn said(&self) -> Option<String> {
        match self {
            Readiness::Ready => None,
            Readiness::Missing { programs, install } => Some(format!(
                "Claude Code's sandbox needs {} on this machine: {}",
                programs.join(", "),
                install
                    .as_deref()
                    .map_or("install them with your package manager".to_owned(), |c| {
                        format!("install them with `{c}`")
                    })
            )),
            Readiness::Broken(why) => Some(format!(
                "bubblewrap is installed but cannot make the namespaces the sandbox needs ({why}); on Ubuntu 24.04 and later, AppArmor restricts them: see Claude Code's sandboxing guide, or run `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`"
            )),
            Readiness::Unsupported(why) => Some((*why).to_owned()),
        }
    }
}

/// The programs Claude Code's sandbox runs on Linux.
const LINUX_PROGRAMS: &[(&str, &str)] = &[
    ("bwrap", "bubblewrap"),
    ("socat", "socat"),
    ("rg", "ripgrep"),
];

/// Checks this machine, looking for programs on `PATH`.
pub fn check() -> Readiness {
    if cfg!(target_os = "macos") {
        return Readiness::Ready;
    }
    if !cfg!(target_os = "linux") {
        return Readiness::Unsupported(
            "Claude Code's sandbox does not run on this system (it needs Linux, WSL2 or macOS)",
        );
    }
    let missing: Vec<(&str, &str)> = LINUX_PROGRAMS
        .iter()
        .copied()
        .filter(|(program, _)| on_path(program).is_none())
        .collect();
    if !missing.is_empty() {
        let packages: Vec<&str> = missing.iter().map(|(_, package)| *package).collect();
        return Readiness::Missing {
            programs: packages.clone(),
            install: install_command(&packages),
        };
    }
    match namespaces_work() {
        Ok(()) => Readiness::Ready,
        Err(why) => Readiness::Broken(why),
    }
}

/// Whether bubblewrap can run a command in the namespaces the sandbox uses.
fn namespaces_work() -> Result<(), String> {
    let out = Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-net",
            "--unshare-pid",
            "true",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("bwrap cannot be started: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        Err(said.trim().lines().next().unwrap_or("it failed").to_owned())
    }
}

/// The command installing `packages` with the package manager found here.
fn install_command(packages: &[&str]) -> Option<String> {
    const MANAGERS: &[(&str, &str)] = &[
        ("apt-get", "sudo apt-get install -y"),
        ("dnf", "sudo dnf install -y"),
        ("yum", "sudo yum install -y"),
        ("pacman", "sudo pacman -S --needed"),
        ("zypper", "sudo zypper install -y"),
        ("apk", "sudo apk add"),
    ];
    MANAGERS
        .iter()
        .find(|(program, _)| on_path(program).is_some())
        .map(|(_, install)| format!("{install} {}", packages.join(" ")))
}

/// Where `program` is on `PATH`, if it is.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
