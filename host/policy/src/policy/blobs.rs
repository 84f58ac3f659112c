//! The copies a policy snapshot keeps: each file's bytes under its sha256, in the
//! state directory, so a session goes on running the component, config, lock,
//! mandate and data it started with whatever becomes of the files on disk.
//!
//! A copy is read back only if its bytes still hash to its name: one altered in
//! place is not run, it is reported.

use std::path::{Path, PathBuf};

/// Where the copies live, under the state directory.
const BLOBS_DIR: &str = "policy/blobs";

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("cannot keep a copy in {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the snapshot's copy {path} cannot be read: {source}")]
    Read {
        path: PathBuf,
        source: sandrail_files::FileError,
    },
    #[error(
        "the snapshot's copy {path} was altered: its sha256 is {actual}, not the {expected} it is kept under"
    )]
    Altered {
        path: PathBuf,
        expected: String,
        actual: String,
    },
}

/// The copies of one state directory.
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    pub fn new(state_dir: &Path) -> Blobs {
        Blobs {
            dir: state_dir.join(BLOBS_DIR),
        }
    }

    /// Where the copy of the bytes whose sha256 is `sha256` is.
    pub fn path(&self, sha256: &str) -> PathBuf {
        self.dir.join(sha256)
    }

    /// Keeps a copy of `bytes`; returns their sha256. A copy already kept is
    /// left as it is.
    pub fn put(&self, bytes: &[u8]) -> Result<String, BlobError> {
        let sha256 = sandrail_event::sha256_hex(bytes);
        let path = self.path(&sha256);
        if path.is_file() {
            return Ok(sha256);
        }
        // False when another process kept the same bytes first: as good.
        sandrail_files::create_atomically(&path, bytes).map_err(|source| BlobError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(sha256)
    }

    /// The bytes kept under `sha256`, if they still hash to it.
    pub fn get(&self, sha256: &str, max: u64) -> Result<Vec<u8>, BlobError> {
        read_verified(&self.path(sha256), sha256, max)
    }

    /// Every copy kept, by sha256.
    pub fn all(&self) -> Vec<String> {
        std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|name| name.len() == 64)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Removes the copy kept under `sha256`.
    pub fn remove(&self, sha256: &str) {
        let _ = std::fs::remove_file(self.path(sha256));
    }
}

/// The bytes of the copy at `path`, if they still hash to `sha256`.
pub fn read_verified(path: &Path, sha256: &str, max: u64) -> Result<Vec<u8>, BlobError> {
    let bytes = sandrail_files::read_regular(path, max).map_err(|source| BlobError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let actual = sandrail_event::sha256_hex(&bytes);
    if actual != sha256 {
        return Err(BlobError::Altered {
            path: path.to_path_buf(),
            expected: sha256.to_owned(),
            actual,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_read_back_only_while_it_hashes_to_its_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        let blobs = Blobs::new(dir.path());
        let sha = blobs.put(b"[settings]\n").expect("kept");
        assert_eq!(blobs.put(b"[settings]\n").expect("kept again"), sha);
        assert_eq!(blobs.get(&sha, 1024).expect("read"), b"[settings]\n");
        std::fs::write(blobs.path(&sha), b"[protect]\nenabled = false\n").expect("alter");
        let err = blobs.get(&sha, 1024).expect_err("altered").to_string();
        assert!(err.contains("was altered"), "{err}");
        assert_eq!(blobs.all(), vec![sha]);
    }
}
