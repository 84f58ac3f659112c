//! Compiled components on disk, so each is compiled once rather than per event.
//!
//! Files are keyed by the component's sha256 and the engine's compatibility hash (a
//! different sandrail or wasmtime build never loads another's code) and written by
//! atomic rename, so a racing process sees a whole file or none.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::LoadError;

pub struct ComponentCache {
    dir: Option<PathBuf>,
    engine_key: String,
}

impl ComponentCache {
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut hasher = DigestHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = crate::hex(&hasher.0.finalize()[..8]);
        ComponentCache { dir, engine_key }
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
            match deserialize(engine, path) {
                Ok(component) => {
                    if crate::debug_logging() {
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
                    let _ = std::fs::remove_file(path);
                }
            }
        }
        let component = Component::new(engine, bytes).map_err(LoadError::Compile)?;
        if crate::debug_logging() {
            eprintln!("sandrail: compiled {sha256}");
        }
        if let Some(path) = path
            && let Err(e) = store(&component, &path)
        {
            eprintln!(
                "sandrail: cannot write the component cache {}: {e}",
                path.display()
            );
        }
        Ok(component)
    }
}

/// Loads a file this cache wrote.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: the file is native code that wasmtime trusts. Only files this cache
    // wrote are read: the name carries the component's hash and this engine's
    // compatibility hash, and wasmtime checks the header's engine settings again.
    unsafe { Component::deserialize_file(engine, path) }
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

fn store(component: &Component, path: &Path) -> Result<(), WriteError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::locations::create_private_dir(dir)?;
    let serialized = component
        .serialize()
        .map_err(|e| WriteError::Serialize(format!("{e:#}")))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(&serialized)?;
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
