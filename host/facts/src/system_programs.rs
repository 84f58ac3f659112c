//! The system's programs a hook runs to learn about an event (`git` for a
//! branch, `tar` and `unzip` for what an archive holds): found only where the
//! agent cannot have put them, and never waited on past a deadline.
//!
//! A hook runs outside the harness's OS sandbox. A program it found on `PATH`
//! in a directory the sandboxed agent can write (a package manager's `bin`)
//! would be the agent's code running with the hook's reach — out of the
//! sandbox. So a program is run only from a directory on `PATH` (or the usual
//! system directories) where it, and every directory on the way to it, is
//! root's alone; where there is none, the hook does without it.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The system directories looked in after `PATH`.
const SYSTEM_DIRS: &[&str] = &["/usr/bin", "/bin", "/usr/local/bin"];
/// The most output of a program read.
const MAX_OUTPUT_BYTES: u64 = 4 << 20;

/// `name` as a command that runs it from where only root could have put it,
/// with nothing from the environment that would make it run other code (git's
/// global and system configs).
pub fn command(name: &str) -> Option<Command> {
    let path = trusted(name)?;
    let mut command = Command::new(path);
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_EXEC_PATH");
    Some(command)
}

/// Where `name` is, in the first directory of `PATH` (then the system's)
/// holding it as root's alone.
fn trusted(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SYSTEM_DIRS.iter().map(PathBuf::from))
        .find_map(|dir| runnable_from(&dir, name))
}

/// `dir/name`, where it is a file and it and the way to it are root's alone.
fn runnable_from(dir: &std::path::Path, name: &str) -> Option<PathBuf> {
    let candidate = dir.join(name);
    (dir.is_absolute()
        && candidate.is_file()
        && sandrail_files::not_root_owned(&candidate).is_none())
    .then_some(candidate)
}

/// What a finished run said.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
}

/// Runs `command` with no input, its output read (at most 4 MiB) until it ends
/// or `deadline` passes, when it is killed (`None`).
pub fn run_within(command: &mut Command, deadline: Duration) -> Option<Ran> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout
            .take(MAX_OUTPUT_BYTES)
            .read_to_end(&mut out)
            .map(|_| out)
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < deadline => {
                std::thread::sleep(Duration::from_millis(2))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let out = reader.join().ok()?.ok()?;
    Some(Ran {
        code: status.code(),
        stdout: String::from_utf8_lossy(&out).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_in_a_directory_others_can_write_is_not_run() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let planted = dir.path().join("git");
        std::fs::write(&planted, "#!/bin/sh\nexit 0\n").expect("plant");
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(runnable_from(dir.path(), "git"), None);
        assert_eq!(runnable_from(std::path::Path::new("relative"), "git"), None);
        assert!(
            runnable_from(std::path::Path::new("/bin"), "sh").is_some(),
            "the system's own shell is found"
        );
    }
}
