//! The session lock: one process at a time holds a session's state.
//!
//! A blocking OS file lock (`flock`) on a lock file beside the session's database,
//! so waiting processes sleep in the kernel's queue instead of polling, and the
//! lock goes away with its process however that process ends (no stale locks).
//! The wait is bounded: the timeout is how long the lock may stay with one
//! holder while a process waits — a queue of the session's events that keeps
//! moving is waited out (each holder names itself in the lock file as it takes
//! the lock, so a waiter sees the lock change hands), a holder that keeps it is
//! not — and [`LockWait::until`] bounds the whole wait however the queue moves.
//! Past either, the caller gives up, and the lock the abandoned wait eventually
//! gets is released at once.

use std::fs::File;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::StoreError;

/// How long to wait for a session's lock.
#[derive(Debug, Clone, Copy)]
pub struct LockWait {
    /// The longest the lock may stay with one holder while this process waits
    /// (the config's `lock_timeout`).
    pub stalled: Duration,
    /// Never wait past this, however the lock changes hands (an event's own
    /// deadline); `None`: as long as it keeps changing hands.
    pub until: Option<Instant>,
}

impl From<Duration> for LockWait {
    fn from(stalled: Duration) -> LockWait {
        LockWait {
            stalled,
            until: None,
        }
    }
}

/// How often a waiter looks whether the lock changed hands.
const HAND_OVER_POLL: Duration = Duration::from_millis(50);

/// A held session lock; released when dropped.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
    waited: Duration,
}

impl SessionLock {
    /// Takes the lock at `path` (created if missing), waiting as `wait` says.
    pub fn acquire(path: &Path, wait: impl Into<LockWait>) -> Result<SessionLock, StoreError> {
        let wait = wait.into();
        let started = Instant::now();
        // When the lock last changed hands as far as this process has seen.
        let mut moved = started;
        loop {
            let file = open(path)?;
            let file = match file.try_lock() {
                Ok(()) => file,
                Err(std::fs::TryLockError::WouldBlock) => {
                    // Only a running sandrail process is worth waiting for.
                    if let Some(holder) = crate::holders::of(path)
                        && holder.never_lets_go()
                    {
                        return Err(StoreError::LockHeld(holder.to_string()));
                    }
                    wait_for(file, path, &wait, &mut moved).map_err(|e| match e {
                        WaitError::Stalled => {
                            timed_out(path, StoreError::LockTimeout(wait.stalled))
                        }
                        WaitError::OutOfTime => {
                            timed_out(path, StoreError::LockWaitedOut(started.elapsed()))
                        }
                        WaitError::Io(source) => StoreError::Lock {
                            path: path.to_path_buf(),
                            source,
                        },
                    })?
                }
                Err(std::fs::TryLockError::Error(source)) => {
                    return Err(StoreError::Lock {
                        path: path.to_path_buf(),
                        source,
                    });
                }
            };
            // A session purged while we waited has had its lock file removed: the
            // lock we hold is on a file nobody else will open. Start again on the
            // file that is there now.
            if still_linked(&file, path) {
                let lock = SessionLock {
                    _file: file,
                    waited: started.elapsed(),
                };
                // Who holds it, for a waiter to tell sandrail at work from a
                // process that took the lock and then ran sandrail, and the
                // hand-over's number, for a waiter to see the queue move (one
                // server takes the lock for event after event).
                let handed = field(&lock._file, HOLDER_AT)
                    .and_then(|text| hand_over_of(&text))
                    .map_or(0, |n| (n + 1) % HAND_OVERS_COUNTED);
                let _ = lock.write_field(
                    HOLDER_AT,
                    &format!("{HOLDER_PREFIX}{} {handed}", std::process::id()),
                );
                return Ok(lock);
            }
            moved = Instant::now();
            if wait.until.is_some_and(|until| moved >= until) {
                return Err(timed_out(
                    path,
                    StoreError::LockWaitedOut(started.elapsed()),
                ));
            }
        }
    }

    /// How long this process waited for the lock.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// The seal the last committing event left in the lock file: how many
    /// commits the session's database had then. `None` before any.
    pub fn seal(&self) -> Option<u64> {
        field(&self._file, SEAL_AT)?
            .strip_prefix(SEAL_PREFIX)?
            .parse()
            .ok()
    }

    /// Leaves the seal for the next event: the database holds `commits` commits.
    pub fn set_seal(&self, commits: u64) -> std::io::Result<()> {
        self.write_field(SEAL_AT, &format!("{SEAL_PREFIX}{commits}"))
    }

    /// Writes one field of the lock file in place, keeping the file's
    /// modification time (the session's last access).
    #[cfg(unix)]
    fn write_field(&self, at: u64, text: &str) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let accessed = self._file.metadata()?.modified()?;
        let mut line = format!("{text:<width$}", width = FIELD_BYTES - 1);
        line.truncate(FIELD_BYTES - 1);
        line.push('\n');
        self._file.write_all_at(line.as_bytes(), at)?;
        self._file.set_modified(accessed)
    }

    #[cfg(not(unix))]
    fn write_field(&self, _at: u64, _text: &str) -> std::io::Result<()> {
        Ok(())
    }
}

/// The lock file holds two fixed-width fields: the seal, and the pid of the
/// sandrail process that last took the lock.
const FIELD_BYTES: usize = 32;
const SEAL_AT: u64 = 0;
const HOLDER_AT: u64 = 32;
const SEAL_PREFIX: &str = "sandrail-seal ";
const HOLDER_PREFIX: &str = "sandrail-holder ";

/// The text of the field at `at`, spaces trimmed.
#[cfg(unix)]
fn field(file: &File, at: u64) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; FIELD_BYTES];
    let n = file.read_at(&mut buf, at).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    Some(text.lines().next()?.trim().to_owned())
}

#[cfg(not(unix))]
fn field(_file: &File, _at: u64) -> Option<String> {
    None
}

/// Hand-overs are numbered modulo this, so the number fits its field.
const HAND_OVERS_COUNTED: u64 = 1_000_000;

/// The pid the lock file at `path` names as the sandrail process that last
/// took it.
fn recorded_holder(path: &Path) -> Option<u32> {
    let file = File::open(path).ok()?;
    field(&file, HOLDER_AT)?
        .strip_prefix(HOLDER_PREFIX)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The hand-over number in a holder field (`sandrail-holder PID N`).
fn hand_over_of(text: &str) -> Option<u64> {
    text.strip_prefix(HOLDER_PREFIX)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// What the holder field of the lock file at `path` says now: it changes each
/// time the lock changes hands.
fn holder_field(path: &Path) -> Option<String> {
    field(&File::open(path).ok()?, HOLDER_AT)
}

/// Past the timeout: a sandrail process still at work — one that took the lock
/// as sandrail does, naming itself in the file — is contention, and so is a lock
/// that turns out free (let go as the wait ended, or by a holder on its way out,
/// within a short grace), or one the system keeps no record of (nothing shows
/// tampering there). Anything else holding the lock — another program, a
/// stopped or hidden process, a holder that exited leaving the lock to a
/// child, one the kernel does not name, a process that took the lock and then
/// became sandrail — is tampering.
///
/// `contention` is what a wait that ran out on sandrail at work says.
fn timed_out(path: &Path, contention: StoreError) -> StoreError {
    use crate::holders::LockState;
    let started = Instant::now();
    loop {
        let in_grace = started.elapsed() < NAMING_GRACE;
        match crate::holders::state_of(path) {
            LockState::Free | LockState::Unknowable => return contention,
            LockState::Held(holder) if holder.lets_go() => {
                // A holder that has only just taken the lock may not have named
                // itself yet; on a loaded machine that can take a while.
                if recorded_holder(path) == Some(holder.pid) {
                    return contention;
                }
                if !in_grace {
                    return StoreError::LockHeld(holder.to_string());
                }
            }
            // On its way out: its lock goes with it, or it was never its own.
            LockState::Held(holder) if holder.is_exiting() && in_grace => {}
            LockState::Held(holder) => return StoreError::LockHeld(holder.to_string()),
            LockState::HeldUnnamed => {
                return StoreError::LockHeld(
                    "a process the system does not name, for as long as this event could wait"
                        .to_owned(),
                );
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How long a sandrail holder is given to name itself in the lock file, and an
/// exiting one to let go.
const NAMING_GRACE: Duration = Duration::from_millis(250);

fn open(path: &Path) -> Result<File, StoreError> {
    sandrail_files::open_private_file(path).map_err(|source| StoreError::Lock {
        path: path.to_path_buf(),
        source,
    })
}

enum WaitError {
    /// The lock stayed with one holder for the lock timeout.
    Stalled,
    /// The wait reached its `until`.
    OutOfTime,
    Io(std::io::Error),
}

/// Blocks in the kernel for the lock on `file` until `wait` gives up: the lock
/// stayed with one holder for `wait.stalled` (`moved` is when it last changed
/// hands, brought forward as it does), or `wait.until` came. The wait runs on
/// its own thread so that it can be abandoned; if it succeeds after that, the
/// thread drops the file and with it the lock.
fn wait_for(
    file: File,
    path: &Path,
    wait: &LockWait,
    moved: &mut Instant,
) -> Result<File, WaitError> {
    let (sender, receiver) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("sandrail-lock".into())
        .spawn(move || {
            let locked = file.lock().map(|()| file);
            // The receiver is gone when the caller gave up: the file drops here.
            let _ = sender.send(locked);
        })
        .map_err(WaitError::Io)?;
    let mut holder = holder_field(path);
    loop {
        let stalled_at = *moved + wait.stalled;
        let (give_up, why) = match wait.until {
            Some(until) if until < stalled_at => (until, WaitError::OutOfTime),
            _ => (stalled_at, WaitError::Stalled),
        };
        let left = give_up.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(why);
        }
        match receiver.recv_timeout(left.min(HAND_OVER_POLL)) {
            Ok(Ok(file)) => return Ok(file),
            Ok(Err(e)) => return Err(WaitError::Io(e)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = holder_field(path);
                if now != holder {
                    holder = now;
                    *moved = Instant::now();
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(WaitError::Io(std::io::Error::other(
                    "the thread waiting for the lock ended without it",
                )));
            }
        }
    }
}

#[cfg(unix)]
fn still_linked(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(current)) => held.dev() == current.dev() && held.ino() == current.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn still_linked(_file: &File, path: &Path) -> bool {
    path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_then_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let _held = SessionLock::acquire(&path, Duration::from_secs(1)).unwrap();
        let started = Instant::now();
        let second = SessionLock::acquire(&path, Duration::from_millis(50));
        assert!(matches!(second, Err(StoreError::LockTimeout(_))));
        assert!(started.elapsed() >= Duration::from_millis(50));
    }

    /// A wait that ends as the holder lets go finds no holder: that is
    /// contention, not a process the system does not name.
    #[test]
    fn a_lock_let_go_as_the_wait_ends_is_contention() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        drop(SessionLock::acquire(&path, Duration::from_secs(1)).unwrap());
        assert!(matches!(
            timed_out(&path, StoreError::LockTimeout(Duration::from_millis(50))),
            StoreError::LockTimeout(_)
        ));
    }

    #[test]
    fn a_waiter_gets_the_lock_when_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let held = SessionLock::acquire(&path, Duration::from_secs(1)).unwrap();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || SessionLock::acquire(&path, Duration::from_secs(5)))
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        let lock = waiter.join().unwrap().unwrap();
        assert!(lock.waited() >= Duration::from_millis(40));
    }

    /// A queue that keeps moving is waited out past the timeout; one holder
    /// keeping the lock is not, and nothing is waited for past `until`.
    #[test]
    fn the_timeout_counts_from_the_last_hand_over() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let stalled = Duration::from_millis(300);
        let held = SessionLock::acquire(&path, stalled).unwrap();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                (SessionLock::acquire(&path, stalled), started.elapsed())
            })
        };
        // The lock changes hands, as far as a waiter can see, every 100 ms for
        // 1.2 s: four timeouts' worth.
        for n in 0..12 {
            std::thread::sleep(Duration::from_millis(100));
            let text = format!("{HOLDER_PREFIX}{} {n}", std::process::id());
            held._file
                .write_all_at(format!("{text:<31}\n").as_bytes(), HOLDER_AT)
                .unwrap();
        }
        let (waited, took) = waiter.join().unwrap();
        assert!(matches!(waited, Err(StoreError::LockTimeout(_))));
        assert!(took >= Duration::from_millis(1400), "{took:?}");
        let bounded = LockWait {
            stalled: Duration::from_secs(10),
            until: Some(Instant::now() + Duration::from_millis(100)),
        };
        let started = Instant::now();
        assert!(SessionLock::acquire(&path, bounded).is_err());
        assert!(started.elapsed() < Duration::from_secs(2));
        drop(held);
    }

    #[test]
    fn an_abandoned_wait_does_not_keep_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let held = SessionLock::acquire(&path, Duration::from_secs(1)).unwrap();
        assert!(SessionLock::acquire(&path, Duration::from_millis(20)).is_err());
        drop(held);
        // The abandoned waiter takes the lock and lets it go at once.
        let again = SessionLock::acquire(&path, Duration::from_secs(2));
        assert!(again.is_ok());
    }

    #[test]
    fn the_seal_is_kept_and_the_access_time_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let lock = SessionLock::acquire(&path, Duration::from_secs(1)).unwrap();
        assert_eq!(lock.seal(), None);
        let at = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000);
        std::fs::File::open(&path)
            .unwrap()
            .set_modified(at)
            .unwrap();
        lock.set_seal(12).unwrap();
        lock.set_seal(7).unwrap();
        assert_eq!(lock.seal(), Some(7));
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), at);
    }

    #[test]
    fn a_removed_lock_file_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let old = open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(!still_linked(&old, &path));
        let lock = SessionLock::acquire(&path, Duration::from_secs(1)).unwrap();
        assert!(path.exists());
        drop(lock);
    }
}
