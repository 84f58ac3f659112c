//! Compiled components on disk, so each is compiled once rather than per event.
//!
//! Files are keyed by the component's sha256 and the engine's compatibility hash (a
//! different sandrail or wasmtime build never loads another's code) and written by
//! atomic rename, so a racing process sees a whole file or none.
//!
//! wasmtime runs a cache file's native code without verifying it, so a file is
//! loaded only if it is the one this host wrote for this component: beside each
//! `.cwasm` the host keeps a record of the component it was compiled from, its
//! own sha256 and the file's identity (device, inode, size, modification and
//! change times). A file whose identity still matches has not been written
//! since (any write moves its change time, which only root can set back); one
//! whose identity moved is hashed, and loaded only if its sha256 still matches.
//! A file without a record (planted), whose record names another component
//! (another's file and record renamed into this one's place) or with a
//! different hash is discarded and the component recompiled.
//!
//! Only the hook path writes here. The commands a person runs to look at a
//! policy (`check-config`, `inspect`, `audit`) read what the hook compiled but
//! compile anything else in memory: a component nobody accepted never gets a
//! file and record of its own to be renamed from.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sandrail_files::Identity;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::LoadError;

pub struct ComponentCache {
    dir: Option<PathBuf>,
    engine_key: String,
    /// Whether what is compiled is stored; otherwise only read.
    writes: bool,
}

impl ComponentCache {
    pub fn new(engine: &Engine, dir: Option<PathBuf>, writes: bool) -> Self {
        let mut hasher = DigestHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = sandrail_event::hex(&hasher.0.finalize()[..8]);
        ComponentCache {
            dir,
            engine_key,
            writes,
        }
    }

    fn path_for(&self, sha256: &str) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{sha256}-{}.cwasm", self.engine_key)))
    }

    /// The compiled component, from the cache when present; compiles and stores it
    /// otherwise. A cache that cannot be written costs speed, never correctness.
    pub fn get_or_compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
        sha256: &str,
    ) -> Result<Component, LoadError> {
        let path = self.path_for(sha256);
        if let Some(path) = path.as_deref().filter(|p| p.is_file()) {
            match verified(path, sha256).and_then(|identity| deserialize(engine, path, &identity)) {
                Ok(component) => {
                    if sandrail_event::debug_logging() {
                        eprintln!(
                            "sandrail: loaded {sha256} from the cache {}",
                            path.display()
                        );
                    }
                    return Ok(component);
                }
                Err(e) => {
                    eprintln!(
                        "sandrail: discarding unusable cached component {}: {e:#}",
                        path.display()
                    );
                    if self.writes {
                        let _ = std::fs::remove_file(path);
                        let _ = std::fs::remove_file(record_path(path));
                    }
                }
            }
        }
        let component = Component::new(engine, bytes).map_err(LoadError::Compile)?;
        if sandrail_event::debug_logging() {
            eprintln!("sandrail: compiled {sha256}");
        }
        if let Some(path) = path.filter(|_| self.writes)
            && let Err(e) = store(&component, &path, sha256)
        {
            eprintln!(
                "sandrail: cannot write the component cache {}: {e}",
                path.display()
            );
        }
        Ok(component)
    }
}

/// Loads a file this cache wrote, whose identity `verified` has just checked; the
/// identity is checked again once the file is mapped, so a file swapped in
/// between the two is not run.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path, identity: &Identity) -> wasmtime::Result<Component> {
    // SAFETY: the file is native code that wasmtime trusts. Only a file this cache
    // wrote is read: its record holds the sha256 and identity it had when written
    // (checked by `verified`), its name carries the component's hash and this
    // engine's compatibility hash, and wasmtime checks the header's engine
    // settings again.
    let component = unsafe { Component::deserialize_file(engine, path) }?;
    if Identity::of(path)? != *identity {
        wasmtime::bail!("it changed while it was being loaded");
    }
    Ok(component)
}

/// What the host recorded about a cache file it wrote.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Record {
    /// The sha256 of the component it was compiled from (none in records
    /// written before it was kept: those are not trusted).
    #[serde(default)]
    component: String,
    /// The file's own sha256.
    sha256: String,
    identity: Identity,
}

fn record_path(cache_file: &Path) -> PathBuf {
    cache_file.with_extension("record")
}

/// Why a cache file is not trusted.
#[derive(Debug, thiserror::Error)]
enum Untrusted {
    #[error(
        "it has no record of being written by sandrail (planted, or renamed from another component's)"
    )]
    NoRecord,
    #[error("its record is unreadable: {0}")]
    BadRecord(String),
    #[error(
        "its record says it was compiled from component {recorded}, not {wanted} (another component's code moved into this one's place)"
    )]
    OtherComponent { recorded: String, wanted: String },
    #[error(
        "its sha256 is {actual}, not the {recorded} recorded when it was written (altered or replaced)"
    )]
    Altered { recorded: String, actual: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The file's identity when it is the file this cache wrote for `component`:
/// unchanged since its record, or changed in identity only (copied back,
/// touched) with the same sha256, in which case the record is brought up to
/// date.
fn verified(path: &Path, component: &str) -> wasmtime::Result<Identity> {
    let record_file = record_path(path);
    let check = || -> Result<Identity, Untrusted> {
        let text = match std::fs::read_to_string(&record_file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Untrusted::NoRecord),
            Err(e) => return Err(e.into()),
        };
        let record: Record =
            serde_json::from_str(&text).map_err(|e| Untrusted::BadRecord(e.to_string()))?;
        if record.component != component {
            return Err(Untrusted::OtherComponent {
                recorded: if record.component.is_empty() {
                    "(not recorded)".to_owned()
                } else {
                    record.component
                },
                wanted: component.to_owned(),
            });
        }
        let identity = Identity::of(path)?;
        if identity.same(&record.identity) {
            return Ok(identity);
        }
        let actual = sandrail_event::sha256_hex(&std::fs::read(path)?);
        if actual != record.sha256 {
            return Err(Untrusted::Altered {
                recorded: record.sha256,
                actual,
            });
        }
        let _ = write_record(path, component, &actual);
        Ok(identity)
    };
    check().map_err(|e| wasmtime::format_err!("{e}"))
}

/// Records the component, sha256 and identity of a cache file just written.
fn write_record(cache_file: &Path, component: &str, sha256: &str) -> Result<(), WriteError> {
    let record = Record {
        component: component.to_owned(),
        sha256: sha256.to_owned(),
        identity: Identity::of(cache_file)?,
    };
    let text = serde_json::to_vec(&record).map_err(|e| WriteError::Serialize(e.to_string()))?;
    write_atomically(&record_path(cache_file), &text)
}

#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Persist(#[from] tempfile::PersistError),
    #[error("cannot serialize: {0}")]
    Serialize(String),
}

/// Writes the compiled component, then its record. Until the record is in place
/// the file is not trusted, so a crash between the two costs a recompile.
fn store(component: &Component, path: &Path, source_sha256: &str) -> Result<(), WriteError> {
    let serialized = component
        .serialize()
        .map_err(|e| WriteError::Serialize(format!("{e:#}")))?;
    write_atomically(path, &serialized)?;
    write_record(
        path,
        source_sha256,
        &sandrail_event::sha256_hex(&serialized),
    )
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    sandrail_policy::locations::create_private_dir(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)?;
    Ok(())
}

/// Feeds `Hash` output into sha256, for a key that is stable across runs.
struct DigestHasher(Sha256);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}
