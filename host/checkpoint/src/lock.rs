//! The store's lock: checkpoints, listings and undos share it, so any number
//! run at once; pruning holds it alone, so no object it removes is one a
//! checkpoint being taken counts on. A lock not had by the deadline is an
//! error the caller reports, never a wait past the hook's time.

use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

/// A held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct Held(#[allow(dead_code)] File);

/// How often a busy lock is tried again.
const RETRY: Duration = Duration::from_millis(5);

fn open(store: &Path) -> std::io::Result<File> {
    match sandrail_files::open_private_file(&store.join("lock")) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            sandrail_files::create_private_dir(store)?;
            sandrail_files::open_private_file(&store.join("lock"))
        }
        opened => opened,
    }
}

/// The lock shared with other checkpoints, waiting for a prune until `deadline`.
pub fn shared(store: &Path, deadline: Instant) -> Result<Held, LockError> {
    let file = open(store).map_err(LockError::Io)?;
    loop {
        match file.try_lock_shared() {
            Ok(()) => return Ok(Held(file)),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(RETRY),
            Err(TryLockError::WouldBlock) => return Err(LockError::Busy),
            Err(TryLockError::Error(e)) => return Err(LockError::Io(e)),
        }
    }
}

/// The lock alone, waiting for the others until `deadline`.
pub fn exclusive(store: &Path, deadline: Instant) -> Result<Held, LockError> {
    let file = open(store).map_err(LockError::Io)?;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Held(file)),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(RETRY),
            Err(TryLockError::WouldBlock) => return Err(LockError::Busy),
            Err(TryLockError::Error(e)) => return Err(LockError::Io(e)),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("the checkpoint store is held by a prune past the deadline")]
    Busy,
    #[error("cannot lock the checkpoint store: {0}")]
    Io(std::io::Error),
}
