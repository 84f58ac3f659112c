//! Who holds a file lock, from the kernel's own record of it (`/proc/locks` on
//! Linux), and whether that holder is a running sandrail process.
//!
//! A session's lock or the receipts file's lock held by anything else — `flock
//! FILE sleep 600` in the agent's shell, or a sandrail process the agent has
//! stopped — is not contention, it is tampering, and must not make sandrail
//! skip what it guards. Where the kernel keeps no such record the holder is
//! unknown, and waiting is all sandrail can do.

use std::path::Path;

/// The process holding a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// Its command line, cleaned and cut for display.
    pub command: String,
    pub program: Program,
    /// It is stopped (a signal or a debugger keeps it from ever letting go).
    pub stopped: bool,
}

/// What a holder runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// The same executable as this process.
    Sandrail,
    /// Another one.
    Other,
    /// It is exiting: it has let go of its executable and is letting go of its
    /// files, the lock among them.
    Exiting,
    /// Cannot be told: it hides its executable.
    Unknown,
}

impl Holder {
    /// Whether it is worth waiting for: a sandrail process that is running.
    pub fn lets_go(&self) -> bool {
        self.program == Program::Sandrail && !self.stopped
    }

    /// Whether it is on its way out, taking its lock with it.
    pub fn is_exiting(&self) -> bool {
        self.program == Program::Exiting
    }

    /// Whether it is plainly not sandrail at work, so that waiting is pointless.
    pub fn never_lets_go(&self) -> bool {
        self.program == Program::Other || self.stopped
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} (`{}`", self.pid, self.command)?;
        match self.program {
            Program::Sandrail => {}
            Program::Other => f.write_str(", not a sandrail process")?,
            Program::Exiting => f.write_str(", exiting")?,
            Program::Unknown => f.write_str(", whose program cannot be seen")?,
        }
        if self.stopped {
            f.write_str(", stopped")?;
        }
        f.write_str(")")
    }
}

/// The holder of the lock on the file at `path`, when the kernel says.
pub fn of(path: &Path) -> Option<Holder> {
    match state_of(path) {
        LockState::Held(holder) => Some(holder),
        _ => None,
    }
}

/// What the kernel says of the lock on a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockState {
    /// Nobody holds it.
    Free,
    /// This process holds it.
    Held(Holder),
    /// Something holds it that the kernel does not name (a process in another
    /// pid namespace, a description open in no named process).
    HeldUnnamed,
    /// The system keeps no record to read (not Linux).
    Unknowable,
}

/// The lock on the file at `path`, as the kernel records it.
pub fn state_of(path: &Path) -> LockState {
    #[cfg(target_os = "linux")]
    {
        linux::state_of(path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        LockState::Unknowable
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    use super::{Holder, LockState, Program};

    /// The longest command line shown.
    const COMMAND_CHARS: usize = 160;

    pub fn state_of(path: &Path) -> LockState {
        let Ok(meta) = std::fs::metadata(path) else {
            return LockState::Free;
        };
        let Ok(locks) = std::fs::read_to_string("/proc/locks") else {
            return LockState::Unknowable;
        };
        match holder_pid(&locks, meta.dev(), meta.ino()) {
            None => LockState::Free,
            Some(None) => LockState::HeldUnnamed,
            Some(Some(pid)) => LockState::Held(describe(pid)),
        }
    }

    /// Who holds a lock on the file (`dev`, `ino`), from `/proc/locks`: lines
    /// like `1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF`; waiters (`->`)
    /// hold nothing. `Some(None)`: held, by a pid the kernel does not give (0
    /// or -1).
    pub(super) fn holder_pid(locks: &str, dev: u64, ino: u64) -> Option<Option<u32>> {
        let (major, minor) = (device_major(dev), device_minor(dev));
        locks
            .lines()
            .filter(|l| !l.contains("->"))
            .find_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let pid = fields.get(4)?;
                let mut place = fields.get(5)?.split(':');
                let maj = u64::from_str_radix(place.next()?, 16).ok()?;
                let min = u64::from_str_radix(place.next()?, 16).ok()?;
                let inode: u64 = place.next()?.parse().ok()?;
                (maj == major && min == minor && inode == ino)
                    .then(|| pid.parse::<u32>().ok().filter(|&pid| pid != 0))
            })
    }

    fn device_major(dev: u64) -> u64 {
        ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)
    }

    fn device_minor(dev: u64) -> u64 {
        (dev & 0xff) | ((dev >> 12) & !0xff)
    }

    fn describe(pid: u32) -> Holder {
        let proc = format!("/proc/{pid}");
        let command = std::fs::read(format!("{proc}/cmdline"))
            .map(|bytes| {
                let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
                sandrail_event::text::one_line(text.trim(), COMMAND_CHARS)
            })
            .unwrap_or_else(|_| "exited".to_owned());
        let identity = |exe: &str| std::fs::metadata(exe).ok().map(|m| (m.dev(), m.ino()));
        let state = std::fs::read_to_string(format!("{proc}/stat"))
            .ok()
            .and_then(|stat| {
                let after = stat.rsplit_once(')')?.1;
                after.split_whitespace().next().map(str::to_owned)
            })
            .unwrap_or_default();
        // An exiting process has let go of its executable before its files; one
        // whose entry is gone has exited (its lock may live on in a child that
        // kept the file open).
        let exiting = matches!(state.as_str(), "Z" | "X" | "x" | "");
        let program = match identity(&format!("{proc}/exe")) {
            _ if exiting => Program::Exiting,
            Some(theirs) if Some(theirs) == identity("/proc/self/exe") => Program::Sandrail,
            Some(_) => Program::Other,
            None => Program::Unknown,
        };
        Holder {
            pid,
            command,
            program,
            stopped: matches!(state.as_str(), "T" | "t"),
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_read_from_proc_locks() {
        let locks = "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF\n\
                     1: -> FLOCK  ADVISORY  WRITE 5151 fd:01:1234567 0 EOF\n\
                     2: POSIX  ADVISORY  WRITE 77 08:02:99 0 EOF\n";
        let dev = (0xfd << 8) | 0x01;
        assert_eq!(linux::holder_pid(locks, dev, 1234567), Some(Some(4242)));
        assert_eq!(
            linux::holder_pid(locks, (0x08 << 8) | 0x02, 99),
            Some(Some(77))
        );
        assert_eq!(linux::holder_pid(locks, dev, 1), None);
        let unnamed = "1: FLOCK  ADVISORY  WRITE 0 fd:01:7 0 EOF\n";
        assert_eq!(linux::holder_pid(unnamed, dev, 7), Some(None));
    }

    #[test]
    fn a_lock_this_process_holds_names_this_process_as_sandrail() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("held");
        let file = std::fs::File::create(&path).expect("create");
        file.lock().expect("lock");
        let holder = of(&path).expect("the kernel names the holder");
        assert_eq!(holder.pid, std::process::id());
        assert_eq!(holder.program, Program::Sandrail);
        assert!(holder.lets_go() && !holder.never_lets_go());
    }
}
