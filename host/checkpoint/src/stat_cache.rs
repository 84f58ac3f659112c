//! Which files need hashing again: for each path, the stat it had when it was
//! last hashed (size, modification and change times, inode, device, mode) and
//! the digest of its bytes then, as git's index and jj's tree state keep. A
//! file whose stat is unchanged is not read again, so a checkpoint of a large
//! tree with one edited file reads one file.
//!
//! The change time moves with every write and only root can set it back, so
//! `touch -r` cannot make an edited file look unchanged. A file written within
//! the last moments before it was hashed may change again within the same tick
//! of the file system's clock without its stat moving (git's "racily clean"
//! entries): such a file is not cached, and is hashed again next time.
//!
//! Every digest in the cache names an object kept in the store (only a
//! checkpoint that keeps what it hashed adds to it), so pruning the store
//! removes the cache with the objects.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::objects::Digest;

const MAGIC: &[u8] = b"sandrail-stat-cache 1\n";
/// A file changed less than this before it was hashed is not cached.
const RACY: Duration = Duration::from_secs(2);

/// What a file's stat says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub dev: u64,
    pub mode: u32,
}

impl Stat {
    pub fn of(meta: &std::fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        let nanos = |secs: i64, nsec: i64| secs.saturating_mul(1_000_000_000).saturating_add(nsec);
        Stat {
            size: meta.size(),
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            dev: meta.dev(),
            mode: meta.mode(),
        }
    }

    /// Changed too close to `started` for its stat to vouch for its bytes.
    fn racy(&self, started: SystemTime) -> bool {
        let limit = started
            .checked_sub(RACY)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        self.mtime_ns >= limit || self.ctime_ns >= limit
    }
}

#[derive(Debug, Clone, Copy)]
struct Cached {
    stat: Stat,
    digest: Digest,
}

/// The stat cache of one project's store.
#[derive(Debug)]
pub struct StatCache {
    path: PathBuf,
    entries: HashMap<Vec<u8>, Cached>,
    changed: bool,
}

impl StatCache {
    /// The cache at `path`; empty when there is none or it cannot be read
    /// (everything is hashed again, which costs time, never a wrong answer).
    pub fn load(path: &Path) -> StatCache {
        let entries = std::fs::read(path)
            .ok()
            .and_then(|bytes| decode(&bytes))
            .unwrap_or_default();
        StatCache {
            path: path.to_path_buf(),
            entries,
            changed: false,
        }
    }

    /// The digest of `path`'s bytes, if its stat is what it was when hashed.
    /// An `immutable` file (one of git's objects or packs, named by its
    /// contents) is recognised by size, inode and device alone: git freshens
    /// their times without changing a byte.
    pub fn get(&self, path: &[u8], stat: &Stat, immutable: bool) -> Option<Digest> {
        let cached = self.entries.get(path)?;
        let same = if immutable {
            (cached.stat.size, cached.stat.ino, cached.stat.dev) == (stat.size, stat.ino, stat.dev)
        } else {
            cached.stat == *stat
        };
        same.then_some(cached.digest)
    }

    /// Remembers that `path`, with `stat`, holds `digest` (kept in the store),
    /// unless it changed too close to `started` to be sure.
    pub fn put(&mut self, path: &[u8], stat: Stat, digest: Digest, started: SystemTime) {
        if stat.racy(started) {
            if self.entries.remove(path).is_some() {
                self.changed = true;
            }
            return;
        }
        self.entries.insert(path.to_vec(), Cached { stat, digest });
        self.changed = true;
    }

    /// How many files it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every path not in `seen`, so the cache stays the size of the tree.
    pub fn keep_only(&mut self, seen: &dyn Fn(&[u8]) -> bool) {
        let before = self.entries.len();
        self.entries.retain(|path, _| seen(path));
        self.changed |= self.entries.len() != before;
    }

    /// Forgets every entry whose object is no longer kept (after a prune).
    pub fn keep_digests(&mut self, kept: &std::collections::HashSet<Digest>) {
        let before = self.entries.len();
        self.entries
            .retain(|_, cached| kept.contains(&cached.digest));
        self.changed |= self.entries.len() != before;
    }

    /// Writes the cache back, if anything changed: whole, by rename, so a
    /// second hook writing it at the same time leaves one of the two.
    pub fn save(&self) -> std::io::Result<()> {
        if !self.changed {
            return Ok(());
        }
        sandrail_files::write_atomically(&self.path, &encode(&self.entries))
    }
}

fn encode(entries: &HashMap<Vec<u8>, Cached>) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + entries.len() * 100);
    out.extend_from_slice(MAGIC);
    for (path, cached) in entries {
        let Ok(len) = u16::try_from(path.len()) else {
            continue;
        };
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(path);
        let s = &cached.stat;
        out.extend_from_slice(&s.size.to_le_bytes());
        out.extend_from_slice(&s.mtime_ns.to_le_bytes());
        out.extend_from_slice(&s.ctime_ns.to_le_bytes());
        out.extend_from_slice(&s.ino.to_le_bytes());
        out.extend_from_slice(&s.dev.to_le_bytes());
        out.extend_from_slice(&s.mode.to_le_bytes());
        out.extend_from_slice(&cached.digest.0);
    }
    out
}

fn decode(bytes: &[u8]) -> Option<HashMap<Vec<u8>, Cached>> {
    let mut rest = bytes.strip_prefix(MAGIC)?;
    // An entry is a path and 78 bytes; most paths are under 50.
    let mut entries = HashMap::with_capacity(rest.len() / 110 + 16);
    fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        *rest = tail;
        Some(head)
    }
    let u64_of = |b: &[u8]| b.try_into().ok().map(u64::from_le_bytes);
    let i64_of = |b: &[u8]| b.try_into().ok().map(i64::from_le_bytes);
    while !rest.is_empty() {
        let len = u16::from_le_bytes(take(&mut rest, 2)?.try_into().ok()?);
        let path = take(&mut rest, usize::from(len))?.to_vec();
        let stat = Stat {
            size: u64_of(take(&mut rest, 8)?)?,
            mtime_ns: i64_of(take(&mut rest, 8)?)?,
            ctime_ns: i64_of(take(&mut rest, 8)?)?,
            ino: u64_of(take(&mut rest, 8)?)?,
            dev: u64_of(take(&mut rest, 8)?)?,
            mode: u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?),
        };
        let digest = Digest(take(&mut rest, 32)?.try_into().ok()?);
        entries.insert(path, Cached { stat, digest });
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(mtime_ns: i64) -> Stat {
        Stat {
            size: 3,
            mtime_ns,
            ctime_ns: mtime_ns,
            ino: 7,
            dev: 1,
            mode: 0o100644,
        }
    }

    #[test]
    fn round_trips_and_refuses_what_changed() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("cache");
        let started = SystemTime::now();
        let old = 1_000_000_000;
        let mut cache = StatCache::load(&path);
        cache.put(b"a", stat(old), Digest::of(b"abc"), started);
        cache.save().expect("save");
        let cache = StatCache::load(&path);
        assert_eq!(cache.get(b"a", &stat(old), false), Some(Digest::of(b"abc")));
        assert_eq!(cache.get(b"a", &stat(old + 1), false), None);
        assert_eq!(
            cache.get(b"a", &stat(old + 1), true),
            Some(Digest::of(b"abc")),
            "git's objects are known by size and inode"
        );
        assert_eq!(cache.get(b"b", &stat(old), false), None);
    }

    #[test]
    fn a_file_changed_just_now_is_not_cached() {
        let dir = tempfile::tempdir().expect("dir");
        let started = SystemTime::now();
        let now_ns = i64::try_from(started.duration_since(UNIX_EPOCH).expect("time").as_nanos())
            .expect("fits");
        let mut cache = StatCache::load(&dir.path().join("cache"));
        cache.put(b"a", stat(now_ns), Digest::of(b"abc"), started);
        assert_eq!(cache.get(b"a", &stat(now_ns), false), None);
    }

    #[test]
    fn a_damaged_cache_is_an_empty_one() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("cache");
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[9, 0, b'x']);
        std::fs::write(&path, bytes).expect("write");
        assert!(StatCache::load(&path).entries.is_empty());
    }
}
