//! A snapshot: the project's files as they are now, each hashed (or its
//! digest taken from the stat cache) and, for a checkpoint, kept in the store
//! with the trees above them.
//!
//! Files are opened beneath the project's root and without following a
//! symlink, so a directory swapped for a link while the walk runs cannot lead
//! a checkpoint to copy a file from elsewhere; without blocking, so a FIFO put
//! in a file's place cannot wedge the hook. Files the stat cache does not
//! vouch for are hashed on every core. Out of time, what was hashed is kept
//! (and cached) for the next checkpoint, which then has less to do.

use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Instant, SystemTime};

use cap_fs_ext::{
    FollowSymlinks, OpenOptionsFollowExt, OpenOptionsMaybeDirExt, OpenOptionsSyncExt,
};

use crate::objects::{Digest, Objects, hash_until};
use crate::stat_cache::{Stat, StatCache};
use crate::tree::{self, Blob, Flat, Kind};
use crate::walk::{self, Found, LeftOut, LeftOutWhy};
use crate::{CheckpointError, Rules};

/// Files at most this large are read whole and hashed in memory; larger ones
/// are copied into the store and hashed from the copy.
const IN_MEMORY: u64 = 1 << 20;

/// Whether a snapshot keeps what it hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// A checkpoint: blobs and trees written to the store, the stat cache
    /// brought up to date.
    Store,
    /// A look at the project as it is (for `checkpoints` and `undo --dry-run`):
    /// hashes only, nothing written.
    Measure,
}

/// The project's files as a snapshot found them.
#[derive(Debug)]
pub struct Snapshot {
    pub root: Digest,
    pub files: Flat,
    pub left_out: Vec<LeftOut>,
    /// The trees, when they were not written (a [`Keep::Measure`] snapshot).
    pub unwritten: std::collections::HashMap<Digest, Vec<u8>>,
    pub git: bool,
    /// Bytes this snapshot added to the store.
    pub added_bytes: u64,
    /// What the person should hear of how it was taken.
    pub warnings: Vec<String>,
}

/// Takes a snapshot of `root` into `objects`, with `cache` vouching for what
/// did not change, before `deadline`.
pub fn take(
    root: &Path,
    objects: &Objects,
    cache: &mut StatCache,
    rules: &Rules,
    keep: Keep,
    deadline: Instant,
) -> Result<Snapshot, CheckpointError> {
    let started = SystemTime::now();
    let timer = Instant::now();
    let listing = walk::list(root, rules, cache.len(), cache.dirs(), deadline)?;
    let listed = timer.elapsed();
    let dir = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(
        |source| CheckpointError::Project {
            path: root.to_path_buf(),
            source,
        },
    )?;
    // Gathered as a list and sorted once: inserting ten thousand paths into a
    // map one by one costs more.
    let mut files: Vec<(Vec<u8>, Blob)> = Vec::with_capacity(listing.found.len());
    let mut left_out = listing.left_out;
    let warnings = listing.warnings;
    if keep == Keep::Store {
        cache.set_dirs(listing.dirs);
    }
    let mut misses: Vec<&Found> = Vec::new();
    for found in &listing.found {
        if found.symlink {
            continue;
        }
        match cache.get(&found.path, &found.stat, found.immutable) {
            Some(digest) => {
                files.push((
                    found.path.clone(),
                    blob_of(&found.stat, digest, found.stat.size),
                ));
            }
            None => misses.push(found),
        }
    }
    let mut added_bytes = 0u64;
    // Symlinks cost a readlink each; their targets are tiny.
    for found in listing.found.iter().filter(|f| f.symlink) {
        let on_disk = root.join(std::ffi::OsStr::from_bytes(&found.path));
        let Ok(target) = std::fs::read_link(&on_disk) else {
            continue;
        };
        let bytes = target.as_os_str().as_bytes();
        let digest = match keep {
            Keep::Store => objects
                .put_bytes(bytes)
                .map_err(|e| CheckpointError::store(objects.dir(), e))?,
            Keep::Measure => Digest::of(bytes),
        };
        files.push((
            found.path.clone(),
            Blob {
                kind: Kind::Symlink,
                mode: 0o777,
                size: bytes.len() as u64,
                digest,
            },
        ));
    }
    let cached = timer.elapsed();
    let hashed = hash_all(&dir, objects, &misses, keep, rules, deadline);
    let mut unfinished = 0usize;
    let mut store_error = None;
    for (found, outcome) in misses.iter().zip(hashed) {
        match outcome {
            Hashed::Kept {
                stat,
                digest,
                size,
                new,
            } => {
                if keep == Keep::Store {
                    cache.put(&found.path, stat, digest, found.immutable, started);
                }
                if new {
                    added_bytes += size;
                }
                files.push((found.path.clone(), blob_of(&stat, digest, size)));
            }
            Hashed::Gone => {}
            Hashed::OverCap(size) => left_out.push(LeftOut {
                path: String::from_utf8_lossy(&found.path).into_owned(),
                bytes: Some(size),
                why: LeftOutWhy::OverCap,
            }),
            Hashed::Unreadable => left_out.push(LeftOut {
                path: String::from_utf8_lossy(&found.path).into_owned(),
                bytes: None,
                why: LeftOutWhy::Unreadable,
            }),
            Hashed::OutOfTime => unfinished += 1,
            Hashed::StoreFailed(e) => {
                store_error.get_or_insert(e);
            }
        }
    }
    if store_error.is_some() || unfinished > 0 {
        // What was hashed stays hashed, for the next snapshot to start from.
        if keep == Keep::Store {
            let _ = cache.save();
        }
        if let Some(e) = store_error {
            return Err(CheckpointError::store(objects.dir(), e));
        }
        return Err(CheckpointError::OutOfTime {
            done: misses.len() - unfinished,
            left: unfinished,
        });
    }
    let files: Flat = files.into_iter().collect();
    // The trees, worked out in memory; written only when the root is not the
    // last checkpoint's (most calls change nothing, and every tree under a
    // root kept is in the store).
    let mut unwritten = std::collections::HashMap::new();
    let root_digest = tree::seal(&files, &mut |digest, bytes| {
        unwritten.insert(digest, bytes);
        Ok(())
    })
    .map_err(|e| CheckpointError::store(objects.dir(), e))?;
    if keep == Keep::Store {
        if cache.root() != Some(root_digest) {
            for (digest, bytes) in unwritten.drain() {
                let new = objects
                    .put_hashed(&digest, &bytes)
                    .map_err(|e| CheckpointError::store(objects.dir(), e))?;
                if new {
                    added_bytes += bytes.len() as u64;
                }
            }
            cache.set_root(root_digest);
        }
        unwritten.clear();
    }
    let sealed = timer.elapsed();
    if keep == Keep::Store {
        // Files gone since are forgotten once the cache holds more than the
        // tree (an entry for a path not there matches nothing meanwhile).
        if cache.len() > listing.found.len() {
            let present: std::collections::HashSet<&[u8]> =
                listing.found.iter().map(|f| f.path.as_slice()).collect();
            cache.keep_only(&|path| present.contains(path));
        }
        let _ = cache.save();
    }
    if sandrail_event::debug_logging() {
        let shown: Vec<String> = misses
            .iter()
            .take(5)
            .map(|f| String::from_utf8_lossy(&f.path).into_owned())
            .collect();
        eprintln!(
            "sandrail: checkpoint of {}: {} files listed in {:?}, {} hashed ({}) by {:?}, trees sealed by {:?} ({} bytes added), the stat cache saved by {:?}",
            root.display(),
            listing.found.len(),
            listed,
            misses.len(),
            shown.join(", "),
            cached,
            sealed,
            added_bytes,
            timer.elapsed()
        );
    }
    left_out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Snapshot {
        root: root_digest,
        files,
        left_out,
        unwritten,
        git: listing.git,
        added_bytes,
        warnings,
    })
}

fn blob_of(stat: &Stat, digest: Digest, size: u64) -> Blob {
    Blob {
        kind: Kind::File,
        // Permission bits only: a set-id bit is never brought back.
        mode: stat.mode & 0o777,
        size,
        digest,
    }
}

/// What became of one file the cache did not vouch for.
enum Hashed {
    Kept {
        stat: Stat,
        digest: Digest,
        size: u64,
        /// Its bytes were not in the store before.
        new: bool,
    },
    /// It is gone, or is no longer a regular file.
    Gone,
    OverCap(u64),
    Unreadable,
    OutOfTime,
    StoreFailed(std::io::Error),
}

/// Hashes `misses` on every core (at most four), in order.
fn hash_all(
    dir: &cap_std::fs::Dir,
    objects: &Objects,
    misses: &[&Found],
    keep: Keep,
    rules: &Rules,
    deadline: Instant,
) -> Vec<Hashed> {
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4);
    if misses.len() < 64 || workers == 1 {
        return misses
            .iter()
            .map(|f| hash_one(dir, objects, f, keep, rules, deadline))
            .collect();
    }
    let chunk = misses.len().div_ceil(workers);
    std::thread::scope(|scope| {
        let handles: Vec<_> = misses
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|f| hash_one(dir, objects, f, keep, rules, deadline))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec![]))
            .collect()
    })
}

fn hash_one(
    dir: &cap_std::fs::Dir,
    objects: &Objects,
    found: &Found,
    keep: Keep,
    rules: &Rules,
    deadline: Instant,
) -> Hashed {
    if Instant::now() > deadline {
        return Hashed::OutOfTime;
    }
    let mut options = cap_std::fs::OpenOptions::new();
    // Not through a symlink, and without waiting on a FIFO for a writer.
    options
        .read(true)
        .follow(FollowSymlinks::No)
        .maybe_dir(false)
        .nonblock(true);
    let path = Path::new(std::ffi::OsStr::from_bytes(&found.path));
    let mut file: File = match dir.open_with(path, &options) {
        Ok(file) => file.into_std(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Hashed::Gone,
        Err(_) => return Hashed::Unreadable,
    };
    let Ok(meta) = file.metadata() else {
        return Hashed::Unreadable;
    };
    if !meta.is_file() {
        return Hashed::Gone;
    }
    let stat = Stat::of(&meta);
    if walk::over_cap(&found.path, stat.size, rules) {
        return Hashed::OverCap(stat.size);
    }
    let result = match keep {
        Keep::Measure => hash_until(&mut file, deadline).map(|digest| (digest, stat.size, false)),
        Keep::Store if stat.size <= IN_MEMORY => {
            let mut bytes = Vec::with_capacity(stat.size as usize);
            match std::io::Read::read_to_end(&mut file, &mut bytes) {
                Ok(_) => {
                    let digest = Digest::of(&bytes);
                    let new = !objects.has(&digest);
                    if new && let Err(e) = objects.put_hashed(&digest, &bytes) {
                        return Hashed::StoreFailed(e);
                    }
                    Ok((digest, bytes.len() as u64, new))
                }
                Err(e) => Err(e),
            }
        }
        Keep::Store => match objects.put_file(&mut file, deadline) {
            Ok(kept) => Ok(kept),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Hashed::OutOfTime,
            Err(e) => return Hashed::StoreFailed(e),
        },
    };
    match result {
        Ok((digest, size, new)) => Hashed::Kept {
            stat,
            digest,
            size,
            new,
        },
        Err(_) => Hashed::Unreadable,
    }
}
