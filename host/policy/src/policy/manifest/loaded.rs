//! The configs manifests were loaded into, kept for the life of the process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use super::{Blobs, LoadError, Manifest};
use crate::config::Config;

/// How many loaded policies are kept: past it, all are dropped and loaded again
/// as they are needed (a server judges a handful of policies at a time).
const KEPT: usize = 64;

type Key = [u8; 32];

static LOADED: Mutex<Option<HashMap<Key, Arc<Config>>>> = Mutex::new(None);

/// Whether this process keeps what it loaded: a resident server does; the
/// one-shot hook loads one policy and exits, so keeping it would only cost it
/// a hash and a copy.
static KEEPING: AtomicBool = AtomicBool::new(false);

/// From now on, loaded policies are kept for the life of the process.
pub fn keep() {
    KEEPING.store(true, Ordering::Relaxed);
}

/// `manifest`'s config: kept from an earlier load, or loaded now by `load` and
/// kept. Only what loaded is kept: a failure is tried again next time.
pub(super) fn get_or_load(
    manifest: &Manifest,
    blobs: &Blobs,
    load: impl FnOnce(&Manifest, &Blobs) -> Result<Config, LoadError>,
) -> Result<Config, LoadError> {
    if !KEEPING.load(Ordering::Relaxed) {
        return load(manifest, blobs);
    }
    let key = key_of(manifest, blobs);
    if let Some(key) = &key
        && let Some(config) = kept().as_ref().and_then(|loaded| loaded.get(key).cloned())
    {
        return Ok(Config::clone(&config));
    }
    let config = load(manifest, blobs)?;
    if let Some(key) = key {
        let mut kept = kept();
        let loaded = kept.get_or_insert_with(HashMap::new);
        if loaded.len() >= KEPT {
            loaded.clear();
        }
        loaded.insert(key, Arc::new(config.clone()));
    }
    Ok(config)
}

fn kept() -> std::sync::MutexGuard<'static, Option<HashMap<Key, Arc<Config>>>> {
    // What is kept is whole or absent: a panic elsewhere leaves nothing half-made.
    LOADED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The whole manifest's sha256 (not its short id: two manifests made to share
/// an id must not share a config) with the directory its copies are read from.
fn key_of(manifest: &Manifest, blobs: &Blobs) -> Option<Key> {
    let json = serde_json::to_vec(manifest).ok()?;
    let mut hasher = Sha256::new();
    hasher.update(blobs.path("").as_os_str().as_encoded_bytes());
    hasher.update([0]);
    hasher.update(&json);
    Some(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::manifest::ConfigRef;

    #[test]
    fn a_policy_is_loaded_once_and_a_failure_is_tried_again() {
        keep();
        let dir = tempfile::tempdir().expect("temp dir");
        let blobs = Blobs::new(dir.path());
        let manifest = Manifest {
            config: ConfigRef::Embedded {
                sha256: "a-policy-of-this-test-only".into(),
            },
            lock: None,
            mandate: None,
            components: Vec::new(),
            data: Vec::new(),
        };
        let mut loads = 0;
        for _ in 0..3 {
            get_or_load(&manifest, &blobs, |_, _| {
                loads += 1;
                Ok(Config::embedded()?)
            })
            .expect("loaded");
        }
        assert_eq!(loads, 1);
        let other = Blobs::new(&dir.path().join("elsewhere"));
        let failed = get_or_load(&manifest, &other, |_, _| {
            Err(LoadError::Unreadable("not now".into()))
        });
        assert!(failed.is_err());
        let again = get_or_load(&manifest, &other, |_, _| Ok(Config::embedded()?));
        assert!(again.is_ok(), "a failure is not kept");
    }
}
