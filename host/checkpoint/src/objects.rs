//! The content-addressed object store: every blob (a file's bytes, a
//! symlink's target) and every tree (a directory's listing) is kept once, in a
//! file named by the sha256 of its bytes. A checkpoint after a small change
//! writes only the changed files and the trees above them.
//!
//! An object is written to a temporary file in the store and renamed into
//! place, so a reader (or a second hook taking a checkpoint at the same time)
//! sees an object whole or not at all, and two writers of the same object
//! cannot mix their bytes. What is read back is checked against its name, so
//! an object changed in the store is an error, never restored as it stands.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// Read and hashed in pieces of this size.
const CHUNK: usize = 64 * 1024;

/// The sha256 of an object's bytes: its name in the store.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    pub fn to_hex(self) -> String {
        sandrail_event::hex(&self.0)
    }

    pub fn from_hex(text: &str) -> Option<Digest> {
        if text.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (at, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(text.get(at * 2..at * 2 + 2)?, 16).ok()?;
        }
        Some(Digest(out))
    }
}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", &self.to_hex()[..12])
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// The objects of one project's store.
#[derive(Debug, Clone)]
pub struct Objects {
    dir: PathBuf,
    /// Where objects are written before they are renamed into place (the same
    /// file system, so the rename is atomic).
    tmp: PathBuf,
}

impl Objects {
    pub fn new(store: &Path) -> Objects {
        Objects {
            dir: store.join("objects"),
            tmp: store.join("tmp"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where an object lives: `objects/ab/cdef…`.
    pub fn path(&self, digest: &Digest) -> PathBuf {
        let hex = digest.to_hex();
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    pub fn has(&self, digest: &Digest) -> bool {
        self.path(digest).is_file()
    }

    /// Keeps `bytes`, unless an object of the same bytes is kept already.
    pub fn put_bytes(&self, bytes: &[u8]) -> std::io::Result<Digest> {
        let digest = Digest::of(bytes);
        self.put_hashed(&digest, bytes)?;
        Ok(digest)
    }

    /// Keeps `bytes`, whose digest the caller has already worked out; true
    /// when they were not kept already.
    pub fn put_hashed(&self, digest: &Digest, bytes: &[u8]) -> std::io::Result<bool> {
        if self.has(digest) {
            return Ok(false);
        }
        let mut tmp = self.temp()?;
        tmp.write_all(bytes)?;
        self.settle(tmp, digest)?;
        Ok(true)
    }

    /// Keeps what `file` holds from its start: hashed where it is, and if the
    /// store has no such object, copied in (by the kernel, which clones the
    /// blocks where the file system can) and hashed again from the copy, so
    /// what is kept is what its name says even if the file was being written
    /// meanwhile. Returns the digest, the bytes, and whether they are new.
    /// Past `deadline` it stops hashing (`TimedOut`): a file made huge cannot
    /// hold the hook.
    pub fn put_file(
        &self,
        file: &mut File,
        deadline: std::time::Instant,
    ) -> std::io::Result<(Digest, u64, bool)> {
        file.rewind()?;
        let seen = hash_until(file, deadline)?;
        if self.has(&seen) {
            let size = file.stream_position()?;
            return Ok((seen, size, false));
        }
        let mut tmp = self.temp()?;
        file.rewind()?;
        let size = std::io::copy(file, tmp.as_file_mut())?;
        let mut copy = tmp.reopen()?;
        let digest = hash_reader(&mut copy)?;
        if self.has(&digest) {
            return Ok((digest, size, false));
        }
        self.settle(tmp, &digest)?;
        Ok((digest, size, true))
    }

    /// An object's bytes, checked against its name; at most `max` bytes.
    pub fn read(&self, digest: &Digest, max: u64) -> Result<Vec<u8>, ObjectError> {
        let path = self.path(digest);
        let file = File::open(&path).map_err(|source| ObjectError::Missing {
            digest: *digest,
            source,
        })?;
        let mut bytes = Vec::new();
        file.take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| ObjectError::Missing {
                digest: *digest,
                source,
            })?;
        if bytes.len() as u64 > max || Digest::of(&bytes) != *digest {
            return Err(ObjectError::Altered { digest: *digest });
        }
        Ok(bytes)
    }

    /// Copies an object into `out`, checking it against its name as it goes:
    /// `Err(Altered)` once the bytes are written when they are not what the
    /// name says (the caller discards `out`).
    pub fn copy_to(&self, digest: &Digest, out: &mut impl Write) -> Result<u64, ObjectError> {
        let path = self.path(digest);
        let mut file = File::open(&path).map_err(|source| ObjectError::Missing {
            digest: *digest,
            source,
        })?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; CHUNK];
        let mut total = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(|source| ObjectError::Missing {
                digest: *digest,
                source,
            })?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|source| ObjectError::Write { source })?;
            total += n as u64;
        }
        if Digest(hasher.finalize().into()) != *digest {
            return Err(ObjectError::Altered { digest: *digest });
        }
        Ok(total)
    }

    /// Every object kept, with its size.
    pub fn all(&self) -> std::io::Result<Vec<(Digest, u64)>> {
        let mut out = Vec::new();
        let fans = match std::fs::read_dir(&self.dir) {
            Ok(fans) => fans,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        for fan in fans {
            let fan = fan?;
            let Some(prefix) = fan.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if prefix.len() != 2 || !fan.file_type()?.is_dir() {
                continue;
            }
            for object in std::fs::read_dir(fan.path())? {
                let object = object?;
                let name = object.file_name();
                let Some(rest) = name.to_str() else { continue };
                if let Some(digest) = Digest::from_hex(&format!("{prefix}{rest}")) {
                    let size = object.metadata().map(|m| m.len()).unwrap_or(0);
                    out.push((digest, size));
                }
            }
        }
        Ok(out)
    }

    fn temp(&self) -> std::io::Result<tempfile::NamedTempFile> {
        match tempfile::NamedTempFile::new_in(&self.tmp) {
            Ok(tmp) => Ok(tmp),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                sandrail_files::create_private_dir(&self.tmp)?;
                tempfile::NamedTempFile::new_in(&self.tmp)
            }
            Err(e) => Err(e),
        }
    }

    /// Renames a written temporary file into place as `digest`; one already
    /// there (another hook kept the same bytes) stays.
    fn settle(&self, tmp: tempfile::NamedTempFile, digest: &Digest) -> std::io::Result<()> {
        let path = self.path(digest);
        if let Some(fan) = path.parent() {
            sandrail_files::create_private_dir(fan)?;
        }
        match tmp.persist_noclobber(&path) {
            Ok(_) => Ok(()),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(e.error),
        }
    }
}

/// The sha256 of everything `reader` yields.
pub fn hash_reader(reader: &mut impl Read) -> std::io::Result<Digest> {
    hash_within(reader, None)
}

/// The sha256 of everything `reader` yields, or `TimedOut` once `deadline`
/// has passed (checked every 16 MiB).
pub fn hash_until(reader: &mut impl Read, deadline: std::time::Instant) -> std::io::Result<Digest> {
    hash_within(reader, Some(deadline))
}

fn hash_within(
    reader: &mut impl Read,
    deadline: Option<std::time::Instant>,
) -> std::io::Result<Digest> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut chunks = 0u32;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        chunks = chunks.wrapping_add(1);
        if chunks.is_multiple_of(256) && deadline.is_some_and(|d| std::time::Instant::now() > d) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the deadline passed while hashing",
            ));
        }
    }
    Ok(Digest(hasher.finalize().into()))
}

#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("object {digest} is missing from the checkpoint store: {source}")]
    Missing {
        digest: Digest,
        source: std::io::Error,
    },
    #[error(
        "object {digest} in the checkpoint store is not what it was when kept (it was changed or cut short)"
    )]
    Altered { digest: Digest },
    #[error("cannot write: {source}")]
    Write { source: std::io::Error },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_kept_once_and_read_back_checked() {
        let dir = tempfile::tempdir().expect("dir");
        let objects = Objects::new(dir.path());
        let a = objects.put_bytes(b"hello").expect("put");
        let again = objects.put_bytes(b"hello").expect("put");
        assert_eq!(a, again);
        assert_eq!(objects.read(&a, 100).expect("read"), b"hello");
        assert_eq!(objects.all().expect("all").len(), 1);
        std::fs::write(objects.path(&a), b"jello").expect("tamper");
        assert!(matches!(
            objects.read(&a, 100),
            Err(ObjectError::Altered { .. })
        ));
        let mut out = Vec::new();
        assert!(matches!(
            objects.copy_to(&a, &mut out),
            Err(ObjectError::Altered { .. })
        ));
    }

    #[test]
    fn a_file_is_kept_by_what_its_copy_holds() {
        let dir = tempfile::tempdir().expect("dir");
        let objects = Objects::new(&dir.path().join("store"));
        let source = dir.path().join("f");
        std::fs::write(&source, b"bytes of a file").expect("write");
        let mut file = File::open(&source).expect("open");
        let later = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let (digest, size, new) = objects.put_file(&mut file, later).expect("put");
        assert_eq!(size, 15);
        assert!(new);
        let (again, _, new) = objects.put_file(&mut file, later).expect("put");
        assert_eq!((again, new), (digest, false), "kept once");
        assert_eq!(digest, Digest::of(b"bytes of a file"));
        assert_eq!(
            Digest::from_hex(&digest.to_hex()),
            Some(digest),
            "hex round trip"
        );
    }
}
