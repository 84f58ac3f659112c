//! `sandrail.lock`: the sha256 of every component in force, written by `sandrail
//! pin` beside the config and read with it. A component whose bytes no longer match
//! its entry is not run, and its guardrail's `on_error` decides the event.
//!
//! Entries are keyed by guardrail name and keep the source as the config wrote it,
//! so the file can be committed with the config and reviewed in a diff: a changed
//! plugin shows as a changed hash, a changed source as a changed source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The lock file's name, beside `sandrail.toml`.
pub const LOCK_FILE: &str = "sandrail.lock";
/// The format written; a newer one is refused rather than half-understood.
const VERSION: u32 = 1;
/// The largest lock file read.
const MAX_LOCK_BYTES: u64 = 1 << 20;

const HEADER: &str = "# Written by `sandrail pin`: the sha256 of each guardrail's component.\n\
# A component whose bytes differ from its entry is not run. Review a change with\n\
# `sandrail inspect`, then run `sandrail pin` again.\n";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: sandrail_files::FileError,
    },
    #[error("{path} could not be read when this policy was captured: {why}")]
    Unreadable { path: PathBuf, why: String },
    #[error("{path} is not a valid lock file: {message}; run `sandrail pin` to write it again")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLock {
    version: u32,
    #[serde(default, rename = "guardrail")]
    guardrails: BTreeMap<String, Entry>,
}

/// One guardrail's pin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The source as the config wrote it (`builtin:NAME` or a path).
    pub source: String,
    /// The component's sha256, lowercase hex.
    pub sha256: String,
}

/// A lock file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub path: PathBuf,
    pub entries: BTreeMap<String, Entry>,
}

/// Where the lock of a config file lives.
pub fn beside(config_file: &Path) -> PathBuf {
    config_file.with_file_name(LOCK_FILE)
}

/// The lock at `path`; `None` when there is none.
pub fn read(path: &Path) -> Result<Option<Lock>, LockError> {
    match read_bytes(path)? {
        Some(bytes) => parse(path, &bytes).map(Some),
        None => Ok(None),
    }
}

/// The bytes of the lock at `path`; `None` when there is none.
pub fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, LockError> {
    match sandrail_files::read_regular(path, MAX_LOCK_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(sandrail_files::FileError::Missing { .. }) => Ok(None),
        Err(source) => Err(LockError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The lock whose file at `path` holds `bytes`.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Lock, LockError> {
    let invalid = |message: String| LockError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("not valid UTF-8".into()))?;
    let raw: RawLock = toml::from_str(text).map_err(|e| invalid(e.message().to_owned()))?;
    if raw.version != VERSION {
        return Err(invalid(format!(
            "version {} is not the {VERSION} this sandrail reads",
            raw.version
        )));
    }
    for (name, entry) in &raw.guardrails {
        let hex = entry.sha256.len() == 64
            && entry
                .sha256
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
        if !hex {
            return Err(invalid(format!(
                "guardrail '{name}': sha256 must be 64 lowercase hexadecimal characters"
            )));
        }
    }
    Ok(Lock {
        path: path.to_path_buf(),
        entries: raw.guardrails,
    })
}

/// Writes the lock whole, by atomic rename: a reader sees the old file or the new.
pub fn write(path: &Path, entries: BTreeMap<String, Entry>) -> Result<(), LockError> {
    let raw = RawLock {
        version: VERSION,
        guardrails: entries,
    };
    let body = toml::to_string(&raw).map_err(|e| LockError::Invalid {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(HEADER.as_bytes())?;
        tmp.write_all(body.as_bytes())?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    };
    write().map_err(|source| LockError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// What the lock says about one guardrail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locked {
    /// Its component must have this sha256.
    Sha256(String),
    /// The lock cannot vouch for it (unreadable, or it pins another source), so its
    /// component is not run.
    Unusable(String),
}

/// How the config in force stands against its lock, for `check-config` and
/// `audit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// Configured but not in the lock.
    Unpinned(String),
    /// In the lock but not configured.
    Stale(String),
    /// In both, with different sources.
    SourceChanged {
        name: String,
        locked: String,
        configured: String,
    },
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Drift::Unpinned(name) => write!(f, "'{name}' is not in {LOCK_FILE}"),
            Drift::Stale(name) => write!(f, "{LOCK_FILE} pins '{name}', which is not configured"),
            Drift::SourceChanged {
                name,
                locked,
                configured,
            } => write!(
                f,
                "{LOCK_FILE} pins '{name}' as {locked}, but the config names {configured}"
            ),
        }
    }
}

impl Lock {
    /// What the lock says about the guardrail `name` whose source the config
    /// writes as `source`; `None` when the lock has no entry for it.
    pub fn pin_of(&self, name: &str, source: &str) -> Option<Locked> {
        let entry = self.entries.get(name)?;
        Some(if entry.source == source {
            Locked::Sha256(entry.sha256.clone())
        } else {
            Locked::Unusable(format!(
                "{} pins it as {}, but the config names {source}; review the new source (`sandrail inspect`) and run `sandrail pin`",
                self.path.display(),
                entry.source
            ))
        })
    }

    /// Where the configured guardrails (name, source as written) and the lock
    /// part ways.
    pub fn drift<'a>(
        &self,
        configured: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Vec<Drift> {
        let mut drift = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (name, source) in configured {
            seen.insert(name);
            match self.entries.get(name) {
                None => drift.push(Drift::Unpinned(name.to_owned())),
                Some(entry) if entry.source != source => drift.push(Drift::SourceChanged {
                    name: name.to_owned(),
                    locked: entry.source.clone(),
                    configured: source.to_owned(),
                }),
                Some(_) => {}
            }
        }
        for name in self.entries.keys() {
            if !seen.contains(name.as_str()) {
                drift.push(Drift::Stale(name.clone()));
            }
        }
        drift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(entries: &[(&str, &str, &str)]) -> Lock {
        Lock {
            path: PathBuf::from("/p/sandrail.lock"),
            entries: entries
                .iter()
                .map(|(n, s, h)| {
                    (
                        n.to_string(),
                        Entry {
                            source: s.to_string(),
                            sha256: h.to_string(),
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn a_changed_source_is_not_vouched_for() {
        let lock = lock(&[("a", "builtin:a", "00")]);
        assert_eq!(
            lock.pin_of("a", "builtin:a"),
            Some(Locked::Sha256("00".into()))
        );
        assert!(matches!(
            lock.pin_of("a", "a.wasm"),
            Some(Locked::Unusable(_))
        ));
        assert_eq!(lock.pin_of("b", "builtin:b"), None);
    }

    #[test]
    fn drift_names_unpinned_stale_and_moved() {
        let lock = lock(&[("a", "builtin:a", "00"), ("gone", "g.wasm", "11")]);
        let drift = lock.drift([("a", "a.wasm"), ("new", "builtin:new")]);
        assert_eq!(
            drift,
            vec![
                Drift::SourceChanged {
                    name: "a".into(),
                    locked: "builtin:a".into(),
                    configured: "a.wasm".into()
                },
                Drift::Unpinned("new".into()),
                Drift::Stale("gone".into()),
            ]
        );
    }

    #[test]
    fn a_written_lock_reads_back_and_a_bad_one_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(LOCK_FILE);
        assert_eq!(read(&path).expect("absent"), None);
        let written = lock(&[("a", "builtin:a", &"ab".repeat(32))]);
        write(&path, written.entries.clone()).expect("write");
        let back = read(&path).expect("read").expect("present");
        assert_eq!(back.entries, written.entries);
        std::fs::write(
            &path,
            "version = 1\n[guardrail.a]\nsource = \"x\"\nsha256 = \"XYZ\"\n",
        )
        .expect("write");
        let err = read(&path).expect_err("bad hash");
        assert!(
            err.to_string().contains("64 lowercase hexadecimal"),
            "{err}"
        );
        std::fs::write(&path, "version = 2\n").expect("write");
        assert!(
            read(&path)
                .expect_err("newer")
                .to_string()
                .contains("version 2")
        );
    }
}
