//! A policy's manifest: the config it is made of, its lock, its mandate, and the
//! sha256 of every component and data file it references. Captured from the files
//! on disk (keeping a copy of each), and turned back into the [`Config`] it
//! stands for, reading only those copies.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{Config, ConfigError, EMBEDDED_DEFAULT, Located, MAX_CONFIG_BYTES, Source};
use sandrail_facts::mandate::{Mandate, MandateError};
use sandrail_files::{FileError, Identity};

use super::Frozen;
use super::blobs::Blobs;

mod loaded;

pub use loaded::keep as keep_loaded;

/// The most bytes of components and data one capture reads.
const MAX_POLICY_BYTES: u64 = 256 << 20;

/// What a policy is made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The config file, or the embedded default.
    pub config: ConfigRef,
    /// `sandrail.lock` beside the config, if there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<FileRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mandate: Option<FileRef>,
    /// Every guardrail's component file (bundled components are part of the binary).
    #[serde(default)]
    pub components: Vec<FileRef>,
    /// Every data grant's file.
    #[serde(default)]
    pub data: Vec<FileRef>,
}

/// Where a policy's config came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigRef {
    /// The embedded default of the binary whose text hashed to this.
    Embedded {
        sha256: String,
    },
    File(FileRef),
}

/// One file of a policy: where it was, and what it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    pub path: PathBuf,
    #[serde(flatten)]
    pub content: Content,
}

/// What a file held when the policy was captured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Content {
    Sha256(String),
    /// It could not be read, for this reason.
    Unreadable(String),
}

impl Content {
    pub fn sha256(&self) -> Option<&str> {
        match self {
            Content::Sha256(sha) => Some(sha),
            Content::Unreadable(_) => None,
        }
    }
}

impl Manifest {
    /// A short name for the policy: the first 16 hex digits of the sha256 of its
    /// manifest. The same files give the same id on every event.
    pub fn id(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        sandrail_event::sha256_hex(&json)[..16].to_owned()
    }

    /// Where its config is, for people.
    pub fn origin(&self) -> String {
        match &self.config {
            ConfigRef::Embedded { .. } => "(embedded default)".to_owned(),
            ConfigRef::File(file) => file.path.display().to_string(),
        }
    }

    /// Every file of the policy, for the drift check.
    pub fn files(&self) -> impl Iterator<Item = &FileRef> {
        let config = match &self.config {
            ConfigRef::File(file) => Some(file),
            ConfigRef::Embedded { .. } => None,
        };
        config
            .into_iter()
            .chain(&self.lock)
            .chain(&self.mandate)
            .chain(&self.components)
            .chain(&self.data)
    }

    /// The content of the policy file at `path`, if it is one.
    pub fn content_of(&self, path: &Path) -> Option<&Content> {
        self.files().find(|f| f.path == path).map(|f| &f.content)
    }

    /// Every sha256 it keeps a copy of.
    pub fn shas(&self) -> impl Iterator<Item = &str> {
        self.files().filter_map(|f| f.content.sha256())
    }
}

/// A policy as found on disk.
#[derive(Debug)]
pub struct Captured {
    pub manifest: Manifest,
    /// The identity of each file looked at (none: it did not exist), taken just
    /// before it was read, so that a file changed while it was read shows as
    /// changed the next time.
    pub seen: BTreeMap<PathBuf, Option<Identity>>,
    /// The config text (the embedded default's, or the file's).
    pub text: Option<String>,
    /// The config it stands for, or why it cannot be used.
    pub config: Result<Config, String>,
}

/// Reads the policy at `located` from disk. With `blobs`, a copy of each file is
/// kept and the config returned runs from those copies; without, files are only
/// hashed (to see whether they changed).
pub fn capture(located: &Located, blobs: Option<&Blobs>) -> Captured {
    let path = match located {
        Located::Embedded => {
            return Captured {
                manifest: Manifest {
                    config: ConfigRef::Embedded {
                        sha256: sandrail_event::sha256_hex(EMBEDDED_DEFAULT.as_bytes()),
                    },
                    lock: None,
                    mandate: None,
                    components: Vec::new(),
                    data: Vec::new(),
                },
                seen: BTreeMap::new(),
                text: Some(EMBEDDED_DEFAULT.to_owned()),
                config: Config::embedded().map_err(|e| e.to_string()),
            };
        }
        Located::File(path) => path,
    };
    let keep = |bytes: &[u8]| -> Content {
        match blobs {
            Some(blobs) => match blobs.put(bytes) {
                Ok(sha) => Content::Sha256(sha),
                Err(e) => Content::Unreadable(e.to_string()),
            },
            None => Content::Sha256(sandrail_event::sha256_hex(bytes)),
        }
    };
    let seen = RefCell::new(BTreeMap::new());
    let look = |at: &Path| {
        seen.borrow_mut()
            .insert(at.to_path_buf(), Identity::of(at).ok());
    };
    let mut manifest = Manifest {
        config: ConfigRef::File(FileRef {
            path: path.clone(),
            content: Content::Unreadable(String::new()),
        }),
        lock: None,
        mandate: None,
        components: Vec::new(),
        data: Vec::new(),
    };
    look(path);
    let bytes = match sandrail_files::read_regular(path, MAX_CONFIG_BYTES) {
        Ok(bytes) => bytes,
        Err(e) => {
            let why = ConfigError::from(e).to_string();
            manifest.config = ConfigRef::File(FileRef {
                path: path.clone(),
                content: Content::Unreadable(why.clone()),
            });
            return Captured {
                manifest,
                seen: seen.into_inner(),
                text: None,
                config: Err(why),
            };
        }
    };
    manifest.config = ConfigRef::File(FileRef {
        path: path.clone(),
        content: keep(&bytes),
    });
    let mandate = RefCell::new(None);
    let parsed = Config::from_bytes(&bytes, path, &mut |at: &Path| {
        look(at);
        let read = sandrail_facts::mandate::read(at);
        *mandate.borrow_mut() = Some(FileRef {
            path: at.to_path_buf(),
            content: match &read {
                Ok(bytes) => keep(bytes),
                Err(e) => Content::Unreadable(e.to_string()),
            },
        });
        Mandate::from_bytes(at, read?)
    });
    manifest.mandate = mandate.into_inner();
    let text = String::from_utf8(bytes).ok();
    let mut config = match parsed {
        Ok(config) => config,
        Err(e) => {
            return Captured {
                manifest,
                seen: seen.into_inner(),
                text,
                config: Err(e.to_string()),
            };
        }
    };
    let lock_path = crate::lock::beside(path);
    look(&lock_path);
    let lock = match crate::lock::read_bytes(&lock_path) {
        Ok(Some(bytes)) => {
            manifest.lock = Some(FileRef {
                path: lock_path.clone(),
                content: keep(&bytes),
            });
            crate::lock::parse(&lock_path, &bytes).map(Some)
        }
        Ok(None) => Ok(None),
        Err(e) => {
            manifest.lock = Some(FileRef {
                path: lock_path.clone(),
                content: Content::Unreadable(e.to_string()),
            });
            Err(e)
        }
    };
    config.apply_lock(lock);
    // Each file is read once however many entries name it (or however its path
    // is spelled), and all of them together at most MAX_POLICY_BYTES: a config
    // cannot make a look at the policy arbitrarily slow.
    let mut read = std::collections::HashMap::new();
    let mut budget = MAX_POLICY_BYTES;
    let mut content_of = |path: &Path, max: u64| -> Content {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(content) = read.get(&key) {
            return Content::clone(content);
        }
        look(path);
        let content = match sandrail_files::read_regular(path, max.min(budget)) {
            Ok(bytes) => {
                budget = budget.saturating_sub(bytes.len() as u64);
                keep(&bytes)
            }
            Err(sandrail_files::FileError::TooLarge { size, .. }) if size <= max => {
                Content::Unreadable(format!(
                    "{} was not read: the policy's files come to more than {} MiB",
                    path.display(),
                    MAX_POLICY_BYTES >> 20
                ))
            }
            Err(e) => Content::Unreadable(e.to_string()),
        };
        read.insert(key, content.clone());
        content
    };
    for guardrail in &mut config.guardrails {
        if let Source::File(path) = &guardrail.source {
            let content = content_of(path, crate::MAX_COMPONENT_BYTES);
            if blobs.is_some() {
                guardrail.frozen = Some(frozen(blobs, &content));
            }
            push_once(&mut manifest.components, path, content);
        }
        for grant in &mut guardrail.data {
            let content = content_of(&grant.path, crate::MAX_DATA_BYTES);
            if blobs.is_some() {
                grant.frozen = Some(frozen(blobs, &content));
            }
            push_once(&mut manifest.data, &grant.path, content);
        }
    }
    Captured {
        manifest,
        seen: seen.into_inner(),
        text,
        config: Ok(config),
    }
}

fn push_once(files: &mut Vec<FileRef>, path: &Path, content: Content) {
    if !files.iter().any(|f| f.path == path) {
        files.push(FileRef {
            path: path.to_path_buf(),
            content,
        });
    }
}

fn frozen(blobs: Option<&Blobs>, content: &Content) -> Frozen {
    match (blobs, content) {
        (Some(blobs), Content::Sha256(sha)) => Frozen::Copy {
            blob: blobs.path(sha),
            sha256: sha.clone(),
        },
        (_, Content::Unreadable(why)) => Frozen::Unreadable(why.clone()),
        (None, Content::Sha256(_)) => Frozen::Unreadable("no copy was kept".into()),
    }
}

/// Why a manifest cannot be turned back into a config.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Blob(#[from] super::blobs::BlobError),
    #[error("the config could not be read when the policy was captured: {0}")]
    Unreadable(String),
    #[error("{0}")]
    Config(#[from] ConfigError),
}

/// The config a manifest stands for, read from the copies in `blobs`: the
/// config text, lock and mandate as they were, and each component and data file
/// frozen to its copy.
///
/// A resident server judges every event of a session by the same manifest, and
/// parsing it again each time was most of reading it: what was loaded is kept,
/// under the whole manifest's sha256 and the blobs' directory. That is exact, as
/// a manifest names every file it is made of by content and loading reads
/// nothing else.
pub fn load(manifest: &Manifest, blobs: &Blobs) -> Result<Config, LoadError> {
    loaded::get_or_load(manifest, blobs, load_from_copies)
}

fn load_from_copies(manifest: &Manifest, blobs: &Blobs) -> Result<Config, LoadError> {
    let file = match &manifest.config {
        ConfigRef::Embedded { .. } => return Ok(Config::embedded()?),
        ConfigRef::File(file) => file,
    };
    let sha = match &file.content {
        Content::Sha256(sha) => sha,
        Content::Unreadable(why) => return Err(LoadError::Unreadable(why.clone())),
    };
    let bytes = blobs.get(sha, MAX_CONFIG_BYTES)?;
    let mut config = Config::from_bytes(&bytes, &file.path, &mut |at: &Path| {
        let kept = manifest.mandate.as_ref().filter(|m| m.path == at);
        match kept.map(|m| &m.content) {
            Some(Content::Sha256(sha)) => {
                let bytes = blobs
                    .get(sha, crate::MAX_DATA_BYTES)
                    .map_err(|e| MandateError::Read(snapshot_error(at, &e.to_string())))?;
                Mandate::from_bytes(at, bytes)
            }
            Some(Content::Unreadable(why)) => Err(MandateError::Read(snapshot_error(at, why))),
            None => Err(MandateError::Read(snapshot_error(
                at,
                "the snapshot holds no copy of it",
            ))),
        }
    })?;
    let lock = match &manifest.lock {
        None => Ok(None),
        Some(lock) => match &lock.content {
            Content::Sha256(sha) => match blobs.get(sha, MAX_CONFIG_BYTES) {
                Ok(bytes) => crate::lock::parse(&lock.path, &bytes).map(Some),
                Err(e) => Err(crate::lock::LockError::Unreadable {
                    path: lock.path.clone(),
                    why: e.to_string(),
                }),
            },
            Content::Unreadable(why) => Err(crate::lock::LockError::Unreadable {
                path: lock.path.clone(),
                why: why.clone(),
            }),
        },
    };
    config.apply_lock(lock);
    let frozen_at = |files: &[FileRef], path: &Path| -> Frozen {
        match files.iter().find(|f| f.path == path) {
            Some(f) => frozen(Some(blobs), &f.content),
            None => Frozen::Unreadable(format!(
                "{} is not in this session's policy snapshot",
                path.display()
            )),
        }
    };
    for guardrail in &mut config.guardrails {
        if let Source::File(path) = &guardrail.source {
            guardrail.frozen = Some(frozen_at(&manifest.components, path));
        }
        for grant in &mut guardrail.data {
            grant.frozen = Some(frozen_at(&manifest.data, &grant.path));
        }
    }
    Ok(config)
}

/// The config text a manifest holds (the embedded default's, or its copy).
pub fn text(manifest: &Manifest, blobs: &Blobs) -> Result<String, LoadError> {
    match &manifest.config {
        ConfigRef::Embedded { .. } => Ok(EMBEDDED_DEFAULT.to_owned()),
        ConfigRef::File(file) => match &file.content {
            Content::Sha256(sha) => {
                let bytes = blobs.get(sha, MAX_CONFIG_BYTES)?;
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            }
            Content::Unreadable(why) => Err(LoadError::Unreadable(why.clone())),
        },
    }
}

fn snapshot_error(path: &Path, why: &str) -> FileError {
    FileError::Open {
        path: path.to_path_buf(),
        source: std::io::Error::other(why.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five sparse 60 MiB "components", one named twice with another spelling:
    /// each file is read once, and past 256 MiB in all the rest is not read but
    /// marked.
    #[test]
    fn a_capture_reads_each_file_once_and_stops_at_its_budget() {
        let dir = tempfile::tempdir().expect("dir");
        let mut config = String::new();
        for n in 0..5 {
            let file = std::fs::File::create(dir.path().join(format!("c{n}.wasm"))).expect("file");
            file.set_len(60 << 20).expect("sparse");
            config.push_str(&format!(
                "[[guardrail]]\nname = \"g{n}\"\nsource = \"c{n}.wasm\"\nevents = [\"Stop\"]\n"
            ));
        }
        config.push_str(
            "[[guardrail]]\nname = \"again\"\nsource = \"./c0.wasm\"\nevents = [\"Stop\"]\n",
        );
        let path = dir.path().join("sandrail.toml");
        std::fs::write(&path, config).expect("config");
        let captured = capture(&Located::File(path), None);
        let contents: Vec<&Content> = captured
            .manifest
            .components
            .iter()
            .map(|c| &c.content)
            .collect();
        // `./c0.wasm` is `c0.wasm`: one file of the policy.
        assert_eq!(contents.len(), 5);
        assert!(
            contents[..4].iter().all(|c| c.sha256().is_some()),
            "{contents:?}"
        );
        assert!(
            matches!(contents[4], Content::Unreadable(why) if why.contains("more than 256 MiB")),
            "{contents:?}"
        );
        // Looked at once each: the config, its lock and the five files.
        assert_eq!(captured.seen.len(), 7, "{:?}", captured.seen.keys());
    }
}
