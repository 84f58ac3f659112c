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

const MAGIC: &[u8] = b"sandrail-stat-cache 2\n";
/// Tags of the two kinds of record in the file.
const FILE: u8 = b'f';
const DIR: u8 = b'd';
const ROOT: u8 = b'r';
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
    /// Judged by the change time, which every write sets to the kernel's
    /// clock and no one but root can set otherwise: a modification time set
    /// into the future (`touch -d 2035-…`) cannot keep a file from ever being
    /// cached.
    pub fn racy(&self, started: SystemTime) -> bool {
        let limit = started
            .checked_sub(RACY)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        self.ctime_ns >= limit
    }
}

#[derive(Debug, Clone, Copy)]
struct Cached {
    stat: Stat,
    digest: Digest,
}

/// What a directory of git's loose objects held, by the directory's stat:
/// its files are named by their contents and never change, and adding or
/// removing one moves the directory's times, so while they stand still the
/// directory need not be read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirListing {
    pub stat: Stat,
    /// Each file's name and stat.
    pub files: Vec<(Vec<u8>, Stat)>,
}

/// Directory listings by the directory's path from the project's root.
pub type DirListings = HashMap<Vec<u8>, DirListing>;

/// The stat cache of one project's store.
#[derive(Debug)]
pub struct StatCache {
    path: PathBuf,
    entries: HashMap<Vec<u8>, Cached>,
    dirs: DirListings,
    /// The tree the last checkpoint kept: its trees are all in the store.
    root: Option<Digest>,
    changed: bool,
}

impl StatCache {
    /// The cache at `path`; empty when there is none or it cannot be read
    /// (everything is hashed again, which costs time, never a wrong answer).
    pub fn load(path: &Path) -> StatCache {
        let (entries, dirs, root) = std::fs::read(path)
            .ok()
            .and_then(|bytes| decode(&bytes))
            .unwrap_or_default();
        StatCache {
            path: path.to_path_buf(),
            entries,
            dirs,
            root,
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
    /// unless it changed too close to `started` to be sure — which an
    /// `immutable` file (one of git's objects or packs, whose name is its
    /// contents and which git renames into place whole) never is.
    pub fn put(
        &mut self,
        path: &[u8],
        stat: Stat,
        digest: Digest,
        immutable: bool,
        started: SystemTime,
    ) {
        if !immutable && stat.racy(started) {
            if self.entries.remove(path).is_some() {
                self.changed = true;
            }
            return;
        }
        self.entries.insert(path.to_vec(), Cached { stat, digest });
        self.changed = true;
    }

    /// The loose-object directories' listings it holds.
    pub fn dirs(&self) -> &DirListings {
        &self.dirs
    }

    /// Replaces the directory listings with those a walk just made.
    pub fn set_dirs(&mut self, dirs: DirListings) {
        if dirs != self.dirs {
            self.dirs = dirs;
            self.changed = true;
        }
    }

    /// The root of the tree the last checkpoint kept, every tree under which
    /// is in the store.
    pub fn root(&self) -> Option<Digest> {
        self.root
    }

    pub fn set_root(&mut self, root: Digest) {
        if self.root != Some(root) {
            self.root = Some(root);
            self.changed = true;
        }
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
        sandrail_files::write_atomically(&self.path, &encode(&self.entries, &self.dirs, self.root))
    }
}

/// The file: its magic line, then records, each a tag byte: the last root
/// (`r`, a digest); then a path (u16 length and bytes) and a file's (`f`)
/// stat and digest, or a directory's listing (`d`): its stat and its files
/// (u32 count; each a name and a stat). Little-endian.
fn encode(entries: &HashMap<Vec<u8>, Cached>, dirs: &DirListings, root: Option<Digest>) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + entries.len() * 100);
    out.extend_from_slice(MAGIC);
    if let Some(root) = root {
        out.push(ROOT);
        out.extend_from_slice(&root.0);
    }
    let name = |out: &mut Vec<u8>, name: &[u8]| -> bool {
        let Ok(len) = u16::try_from(name.len()) else {
            return false;
        };
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(name);
        true
    };
    for (path, cached) in entries {
        out.push(FILE);
        if !name(&mut out, path) {
            out.pop();
            continue;
        }
        put_stat(&mut out, &cached.stat);
        out.extend_from_slice(&cached.digest.0);
    }
    for (path, listing) in dirs {
        let Ok(count) = u32::try_from(listing.files.len()) else {
            continue;
        };
        let mark = out.len();
        out.push(DIR);
        if !name(&mut out, path) {
            out.truncate(mark);
            continue;
        }
        put_stat(&mut out, &listing.stat);
        out.extend_from_slice(&count.to_le_bytes());
        for (file, stat) in &listing.files {
            if !name(&mut out, file) {
                out.truncate(mark);
                break;
            }
            put_stat(&mut out, stat);
        }
    }
    out
}

fn put_stat(out: &mut Vec<u8>, s: &Stat) {
    out.extend_from_slice(&s.size.to_le_bytes());
    out.extend_from_slice(&s.mtime_ns.to_le_bytes());
    out.extend_from_slice(&s.ctime_ns.to_le_bytes());
    out.extend_from_slice(&s.ino.to_le_bytes());
    out.extend_from_slice(&s.dev.to_le_bytes());
    out.extend_from_slice(&s.mode.to_le_bytes());
}

fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, tail) = rest.split_at_checked(n)?;
    *rest = tail;
    Some(head)
}

fn take_name(rest: &mut &[u8]) -> Option<Vec<u8>> {
    let len = u16::from_le_bytes(take(rest, 2)?.try_into().ok()?);
    Some(take(rest, usize::from(len))?.to_vec())
}

fn take_stat(rest: &mut &[u8]) -> Option<Stat> {
    let u64_of = |b: &[u8]| b.try_into().ok().map(u64::from_le_bytes);
    let i64_of = |b: &[u8]| b.try_into().ok().map(i64::from_le_bytes);
    Some(Stat {
        size: u64_of(take(rest, 8)?)?,
        mtime_ns: i64_of(take(rest, 8)?)?,
        ctime_ns: i64_of(take(rest, 8)?)?,
        ino: u64_of(take(rest, 8)?)?,
        dev: u64_of(take(rest, 8)?)?,
        mode: u32::from_le_bytes(take(rest, 4)?.try_into().ok()?),
    })
}

type Decoded = (HashMap<Vec<u8>, Cached>, DirListings, Option<Digest>);

fn decode(bytes: &[u8]) -> Option<Decoded> {
    let mut rest = bytes.strip_prefix(MAGIC)?;
    // A file's record is a path and 79 bytes; most paths are under 50.
    let mut entries = HashMap::with_capacity(rest.len() / 110 + 16);
    let mut dirs = DirListings::new();
    let mut root = None;
    while let Some((&tag, tail)) = rest.split_first() {
        rest = tail;
        if tag == ROOT {
            root = Some(Digest(take(&mut rest, 32)?.try_into().ok()?));
            continue;
        }
        let path = take_name(&mut rest)?;
        let stat = take_stat(&mut rest)?;
        match tag {
            FILE => {
                let digest = Digest(take(&mut rest, 32)?.try_into().ok()?);
                entries.insert(path, Cached { stat, digest });
            }
            DIR => {
                let count = u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?);
                let mut files = Vec::with_capacity((count as usize).min(1 << 16));
                for _ in 0..count {
                    let name = take_name(&mut rest)?;
                    files.push((name, take_stat(&mut rest)?));
                }
                dirs.insert(path, DirListing { stat, files });
            }
            _ => return None,
        }
    }
    Some((entries, dirs, root))
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
        cache.put(b"a", stat(old), Digest::of(b"abc"), false, started);
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
    fn directory_listings_round_trip() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("cache");
        let mut cache = StatCache::load(&path);
        let mut dirs = DirListings::new();
        dirs.insert(
            b".git/objects/ab".to_vec(),
            DirListing {
                stat: stat(5),
                files: vec![(b"cdef".to_vec(), stat(6)), (b"0123".to_vec(), stat(7))],
            },
        );
        cache.set_dirs(dirs.clone());
        cache.put(b"a", stat(1), Digest::of(b"a"), false, SystemTime::now());
        cache.save().expect("save");
        let cache = StatCache::load(&path);
        assert_eq!(cache.dirs(), &dirs);
        assert_eq!(cache.get(b"a", &stat(1), false), Some(Digest::of(b"a")));
    }

    #[test]
    fn a_file_changed_just_now_is_not_cached() {
        let dir = tempfile::tempdir().expect("dir");
        let started = SystemTime::now();
        let now_ns = i64::try_from(started.duration_since(UNIX_EPOCH).expect("time").as_nanos())
            .expect("fits");
        let mut cache = StatCache::load(&dir.path().join("cache"));
        cache.put(b"a", stat(now_ns), Digest::of(b"abc"), false, started);
        cache.put(b"pack", stat(now_ns), Digest::of(b"p"), true, started);
        assert_eq!(
            cache.get(b"pack", &stat(now_ns), true),
            Some(Digest::of(b"p"))
        );
        assert_eq!(cache.get(b"a", &stat(now_ns), false), None);
    }

    #[test]
    fn a_damaged_cache_is_an_empty_one() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("cache");
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[FILE, 9, 0, b'x']);
        std::fs::write(&path, bytes).expect("write");
        assert!(StatCache::load(&path).entries.is_empty());
    }
}
