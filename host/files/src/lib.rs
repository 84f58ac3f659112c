//! Reading files named from outside — a payload's transcript path, a config's
//! component source, the config itself — without letting the name decide how the
//! hook behaves: only regular files are read, they are opened without blocking (a
//! FIFO must not hang the hook, `/dev/zero` must not fill its memory), and no more
//! than a stated number of bytes is read. Writing sandrail's own files whole and
//! private, and whether a path is root's alone ([`ownership`]).
//!
//! The bottom layer beside `sandrail-event`: it imports nothing of sandrail's but
//! the shell analysis's `ScriptFiles`, which it implements.

pub mod ownership;

pub use ownership::not_root_owned;

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path} does not exist")]
    Missing { path: PathBuf },
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path} is {size} bytes; at most {max} are read")]
    TooLarge { path: PathBuf, size: u64, max: u64 },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The script files a command line runs, as the shell analysis reads them:
/// through [`open_regular`], so a FIFO put in a script's place cannot wedge the
/// hook, and a script sandrail may not read makes the line unjudgeable.
#[derive(Debug, Clone, Copy)]
pub struct ScriptsOnDisk;

impl sandrail_shell::ScriptFiles for ScriptsOnDisk {
    fn open(&self, path: &Path) -> Result<(Box<dyn Read + '_>, u64), sandrail_shell::ScriptUnread> {
        match open_regular(path, u64::MAX) {
            Ok((file, size)) => Ok((Box::new(file), size)),
            Err(FileError::Open { source, .. })
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                Err(sandrail_shell::ScriptUnread::Denied)
            }
            Err(_) => Err(sandrail_shell::ScriptUnread::Absent),
        }
    }
}

/// Opens `path` for reading if it is a regular file of at most `max` bytes, and
/// returns it with its size. Symlinks are followed; what they lead to is checked.
pub fn open_regular(path: &Path, max: u64) -> Result<(File, u64), FileError> {
    let mut options = OpenOptions::new();
    options.read(true);
    // Opening a FIFO for reading blocks until a writer appears; without blocking it
    // opens at once, and the type check below turns it away.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => FileError::Missing {
            path: path.to_path_buf(),
        },
        _ => FileError::Open {
            path: path.to_path_buf(),
            source,
        },
    })?;
    let metadata = file.metadata().map_err(|source| FileError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    if !metadata.is_file() {
        return Err(FileError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(&metadata.file_type()),
        });
    }
    if metadata.len() > max {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            size: metadata.len(),
            max,
        });
    }
    Ok((file, metadata.len()))
}

/// Reads the whole of `path` if it is a regular file of at most `max` bytes. A file
/// that grows while it is read is cut at `max`.
pub fn read_regular(path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
    let (file, size) = open_regular(path, max)?;
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(|source| FileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(bytes)
}

/// Writes `bytes` to `path` whole, by atomic rename: a reader sees the old file or
/// the new. The directory is created readable by its owner only if missing.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    temp_beside(path, bytes)?
        .persist(path)
        .map(drop)
        .map_err(|e| e.error)
}

/// Writes `bytes` to `path` whole only if nothing is there yet; false when
/// another process wrote it first.
pub fn create_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    match temp_beside(path, bytes)?.persist_noclobber(path) {
        Ok(_) => Ok(true),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e.error),
    }
}

/// A temporary file in `path`'s directory holding `bytes`.
fn temp_beside(path: &Path, bytes: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    Ok(tmp)
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

/// Which file this is and whether it was written since: device, inode, size,
/// modification and change times (nanoseconds). A write always moves the change
/// time, which only root can set back, so an unchanged identity means unchanged
/// bytes without reading them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Identity(Vec<i64>);

impl Identity {
    /// The identity of the file `path` leads to (symlinks followed).
    pub fn of(path: &Path) -> std::io::Result<Identity> {
        let meta = std::fs::metadata(path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let nanos = |secs: i64, nsec: i64| secs.saturating_mul(1_000_000_000) + nsec;
            Ok(Identity(vec![
                meta.dev() as i64,
                meta.ino() as i64,
                meta.size() as i64,
                nanos(meta.mtime(), meta.mtime_nsec()),
                nanos(meta.ctime(), meta.ctime_nsec()),
            ]))
        }
        #[cfg(not(unix))]
        {
            // No change time to trust: an empty identity never matches a
            // recorded one, so every check reads the file.
            let _ = meta;
            Ok(Identity(Vec::new()))
        }
    }

    /// Whether two identities name the same unchanged file; never on a system
    /// without change times.
    pub fn same(&self, other: &Identity) -> bool {
        !self.0.is_empty() && self == other
    }
}

fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello").unwrap();
        assert_eq!(read_regular(&path, 5).unwrap(), b"hello");
        assert!(matches!(
            read_regular(&path, 4),
            Err(FileError::TooLarge {
                size: 5,
                max: 4,
                ..
            })
        ));
    }

    #[test]
    fn turns_away_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_regular(dir.path(), 100).unwrap_err().to_string();
        assert!(err.ends_with("is a directory, not a regular file"), "{err}");
        let err = read_regular(Path::new("/dev/zero"), 100)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a character device"), "{err}");
        assert!(matches!(
            read_regular(&dir.path().join("none"), 100),
            Err(FileError::Missing { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let err = read_regular(&fifo, 100).unwrap_err().to_string();
        assert!(err.contains("is a FIFO"), "{err}");
    }
}
