//! Trees: a directory's listing as an object, each entry naming a file's blob
//! or a subdirectory's tree by digest, as git's trees do. Two checkpoints that
//! differ in one file share every tree but those on its path, so a checkpoint
//! after a small change writes a few small objects, and comparing two skips
//! every directory whose digest is the same.
//!
//! A project's files are handled flat, by their path from the project's root
//! (bytes, `/`-separated: a name need not be UTF-8), and turned into trees only
//! to be kept or compared.

use std::collections::{BTreeMap, HashMap};

use crate::objects::{Digest, ObjectError, Objects};

/// The largest tree read back (a directory of a million entries).
const MAX_TREE_BYTES: u64 = 256 << 20;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Symlink,
    Dir,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::File => b'f',
            Kind::Symlink => b'l',
            Kind::Dir => b'd',
        }
    }

    fn from_byte(byte: u8) -> Option<Kind> {
        match byte {
            b'f' => Some(Kind::File),
            b'l' => Some(Kind::Symlink),
            b'd' => Some(Kind::Dir),
            _ => None,
        }
    }
}

/// A file or symlink as a checkpoint holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    pub kind: Kind,
    /// Permission bits (`0o755`, `0o644`, …); set-id bits are never kept.
    pub mode: u32,
    pub size: u64,
    pub digest: Digest,
}

/// Every file of a checkpoint, by its path from the project's root.
pub type Flat = BTreeMap<Vec<u8>, Blob>;

/// One entry of a tree object.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: Vec<u8>,
    kind: Kind,
    mode: u32,
    size: u64,
    digest: Digest,
}

/// A tree object's bytes: for each entry, sorted by name, its kind (one
/// byte), mode (u32), size (u64), digest (32 bytes), name length (u16) and
/// name, little-endian.
fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 64);
    for entry in entries {
        out.push(entry.kind.byte());
        out.extend_from_slice(&entry.mode.to_le_bytes());
        out.extend_from_slice(&entry.size.to_le_bytes());
        out.extend_from_slice(&entry.digest.0);
        // A name is at most 255 bytes on every file system sandrail runs on.
        let len = u16::try_from(entry.name.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&entry.name[..usize::from(len)]);
    }
    out
}

fn decode(bytes: &[u8]) -> Option<Vec<Entry>> {
    let mut entries = Vec::new();
    let mut at = 0;
    let take = |at: &mut usize, n: usize| -> Option<&[u8]> {
        let piece = bytes.get(*at..*at + n)?;
        *at += n;
        Some(piece)
    };
    while at < bytes.len() {
        let kind = Kind::from_byte(take(&mut at, 1)?[0])?;
        let mode = u32::from_le_bytes(take(&mut at, 4)?.try_into().ok()?);
        let size = u64::from_le_bytes(take(&mut at, 8)?.try_into().ok()?);
        let digest = Digest(take(&mut at, 32)?.try_into().ok()?);
        let len = u16::from_le_bytes(take(&mut at, 2)?.try_into().ok()?);
        let name = take(&mut at, usize::from(len))?.to_vec();
        entries.push(Entry {
            name,
            kind,
            mode,
            size,
            digest,
        });
    }
    Some(entries)
}

/// The trees of `files`, each handed to `keep` (to be written, or held in
/// memory), and the root's digest. One pass over the paths in order: every
/// path under a directory is contiguous in byte order, so a directory is
/// sealed as soon as a path outside it comes.
pub fn seal(
    files: &Flat,
    keep: &mut dyn FnMut(Digest, Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<Digest> {
    // The open directories, the root first: each one's name and entries.
    let mut open: Vec<(Vec<u8>, Vec<Entry>)> = vec![(Vec::new(), Vec::new())];
    // Seals the innermost open directory into its parent's entries.
    let close = |open: &mut Vec<(Vec<u8>, Vec<Entry>)>,
                 keep: &mut dyn FnMut(Digest, Vec<u8>) -> std::io::Result<()>|
     -> std::io::Result<()> {
        let (name, entries) = open.pop().expect("a directory above the root");
        let (digest, size) = finish(entries, keep)?;
        if let Some((_, parent)) = open.last_mut() {
            parent.push(Entry {
                name,
                kind: Kind::Dir,
                mode: 0o755,
                size,
                digest,
            });
        }
        Ok(())
    };
    for (path, blob) in files {
        let components: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
        let (file, dirs) = components.split_last().expect("a path has a name");
        // Close what this path is not under, then open what it is.
        let mut shared = 0;
        while shared < dirs.len()
            && shared + 1 < open.len()
            && open[shared + 1].0.as_slice() == dirs[shared]
        {
            shared += 1;
        }
        while open.len() > shared + 1 {
            close(&mut open, keep)?;
        }
        for dir in &dirs[shared..] {
            open.push((dir.to_vec(), Vec::new()));
        }
        if let Some((_, entries)) = open.last_mut() {
            entries.push(Entry {
                name: file.to_vec(),
                kind: blob.kind,
                mode: blob.mode,
                size: blob.size,
                digest: blob.digest,
            });
        }
    }
    while open.len() > 1 {
        close(&mut open, keep)?;
    }
    let (_, entries) = open.pop().expect("the root");
    finish(entries, keep).map(|(digest, _)| digest)
}

/// A directory's tree from its entries: its digest and the bytes under it.
fn finish(
    mut entries: Vec<Entry>,
    keep: &mut dyn FnMut(Digest, Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<(Digest, u64)> {
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let size = entries.iter().map(|e| e.size).sum();
    let bytes = encode(&entries);
    let digest = Digest::of(&bytes);
    keep(digest, bytes)?;
    Ok((digest, size))
}

/// Where trees are read from: the store, and trees of the project as it is
/// now that were never written.
pub struct Trees<'a> {
    pub objects: &'a Objects,
    pub unwritten: HashMap<Digest, Vec<u8>>,
}

impl<'a> Trees<'a> {
    pub fn new(objects: &'a Objects) -> Trees<'a> {
        Trees {
            objects,
            unwritten: HashMap::new(),
        }
    }

    fn entries(&self, digest: &Digest) -> Result<Vec<Entry>, ObjectError> {
        let bytes = match self.unwritten.get(digest) {
            Some(bytes) => bytes.clone(),
            None => self.objects.read(digest, MAX_TREE_BYTES)?,
        };
        decode(&bytes).ok_or(ObjectError::Altered { digest: *digest })
    }

    /// Every file under the tree `root`.
    pub fn flat(&self, root: &Digest) -> Result<Flat, ObjectError> {
        let mut out = Flat::new();
        self.flatten(root, &mut Vec::new(), &mut out)?;
        Ok(out)
    }

    fn flatten(
        &self,
        digest: &Digest,
        prefix: &mut Vec<u8>,
        out: &mut Flat,
    ) -> Result<(), ObjectError> {
        for entry in self.entries(digest)? {
            let len = prefix.len();
            if !prefix.is_empty() {
                prefix.push(b'/');
            }
            prefix.extend_from_slice(&entry.name);
            match entry.kind {
                Kind::Dir => self.flatten(&entry.digest, prefix, out)?,
                kind => {
                    out.insert(
                        prefix.clone(),
                        Blob {
                            kind,
                            mode: entry.mode,
                            size: entry.size,
                            digest: entry.digest,
                        },
                    );
                }
            }
            prefix.truncate(len);
        }
        Ok(())
    }

    /// Adds every object under the tree `root` to `reached` (a tree already
    /// there is not read again).
    pub fn reach(
        &self,
        root: &Digest,
        reached: &mut std::collections::HashSet<Digest>,
    ) -> Result<(), ObjectError> {
        for entry in self.entries(root)? {
            if reached.insert(entry.digest) && entry.kind == Kind::Dir {
                self.reach(&entry.digest, reached)?;
            }
        }
        Ok(())
    }

    /// How the files under `to` differ from those under `from`, path by path,
    /// skipping every directory whose tree is the same in both.
    pub fn diff(&self, from: &Digest, to: &Digest) -> Result<Vec<Change>, ObjectError> {
        let mut out = Vec::new();
        if from != to {
            self.diff_into(Some(from), Some(to), &mut Vec::new(), &mut out)?;
        }
        Ok(out)
    }

    fn diff_into(
        &self,
        from: Option<&Digest>,
        to: Option<&Digest>,
        prefix: &mut Vec<u8>,
        out: &mut Vec<Change>,
    ) -> Result<(), ObjectError> {
        let side = |digest: Option<&Digest>| -> Result<BTreeMap<Vec<u8>, Entry>, ObjectError> {
            Ok(match digest {
                Some(d) => self
                    .entries(d)?
                    .into_iter()
                    .map(|e| (e.name.clone(), e))
                    .collect(),
                None => BTreeMap::new(),
            })
        };
        let before = side(from)?;
        let after = side(to)?;
        let mut names: Vec<&Vec<u8>> = before.keys().chain(after.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let len = prefix.len();
            if !prefix.is_empty() {
                prefix.push(b'/');
            }
            prefix.extend_from_slice(name);
            let (old, new) = (before.get(name), after.get(name));
            let as_dir = |e: Option<&Entry>| e.filter(|e| e.kind == Kind::Dir).map(|e| e.digest);
            let as_blob = |e: Option<&Entry>| {
                e.filter(|e| e.kind != Kind::Dir).map(|e| Blob {
                    kind: e.kind,
                    mode: e.mode,
                    size: e.size,
                    digest: e.digest,
                })
            };
            let (old_dir, new_dir) = (as_dir(old), as_dir(new));
            if old_dir != new_dir {
                self.diff_into(old_dir.as_ref(), new_dir.as_ref(), prefix, out)?;
            }
            let (old_blob, new_blob) = (as_blob(old), as_blob(new));
            if old_blob != new_blob {
                out.push(Change {
                    path: prefix.clone(),
                    before: old_blob,
                    after: new_blob,
                });
            }
            prefix.truncate(len);
        }
        Ok(())
    }
}

/// One file that differs between two checkpoints (or a checkpoint and now).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: Vec<u8>,
    /// What it was; `None`: it was not there.
    pub before: Option<Blob>,
    /// What it is; `None`: it is gone.
    pub after: Option<Blob>,
}

impl Change {
    /// `A`dded, `D`eleted or `M`odified, as git's name-status says.
    pub fn status(&self) -> char {
        match (&self.before, &self.after) {
            (None, _) => 'A',
            (_, None) => 'D',
            _ => 'M',
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(bytes: &[u8]) -> Blob {
        Blob {
            kind: Kind::File,
            mode: 0o644,
            size: bytes.len() as u64,
            digest: Digest::of(bytes),
        }
    }

    #[test]
    fn trees_round_trip_and_diff_only_what_changed() {
        let dir = tempfile::tempdir().expect("dir");
        let objects = Objects::new(dir.path());
        let mut keep = |_: Digest, bytes: Vec<u8>| objects.put_bytes(&bytes).map(drop);
        let mut before = Flat::new();
        before.insert(b"a.txt".to_vec(), blob(b"a"));
        before.insert(b"src/main.rs".to_vec(), blob(b"fn main() {}"));
        before.insert(b"src/deep/x".to_vec(), blob(b"x"));
        before.insert(b"odd\xffname".to_vec(), blob(b"odd"));
        let first = seal(&before, &mut keep).expect("seal");
        let trees = Trees::new(&objects);
        assert_eq!(trees.flat(&first).expect("flat"), before);

        let mut after = before.clone();
        after.insert(b"src/main.rs".to_vec(), blob(b"fn main() { changed }"));
        after.remove(b"a.txt".as_slice());
        after.insert(b"new/file".to_vec(), blob(b"new"));
        let second = seal(&after, &mut keep).expect("seal");
        let changes = trees.diff(&first, &second).expect("diff");
        let listed: Vec<(String, char)> = changes
            .iter()
            .map(|c| (String::from_utf8_lossy(&c.path).into_owned(), c.status()))
            .collect();
        assert_eq!(
            listed,
            vec![
                ("a.txt".to_owned(), 'D'),
                ("new/file".to_owned(), 'A'),
                ("src/main.rs".to_owned(), 'M'),
            ]
        );
        assert!(trees.diff(&second, &second).expect("diff").is_empty());
    }

    #[test]
    fn a_file_replaced_by_a_directory_is_both_a_deletion_and_additions() {
        let dir = tempfile::tempdir().expect("dir");
        let objects = Objects::new(dir.path());
        let mut keep = |_: Digest, bytes: Vec<u8>| objects.put_bytes(&bytes).map(drop);
        let mut before = Flat::new();
        before.insert(b"thing".to_vec(), blob(b"file"));
        let mut after = Flat::new();
        after.insert(b"thing/inside".to_vec(), blob(b"in"));
        let a = seal(&before, &mut keep).expect("seal");
        let b = seal(&after, &mut keep).expect("seal");
        let changes = Trees::new(&objects).diff(&a, &b).expect("diff");
        assert_eq!(changes.len(), 2);
        assert!(
            changes
                .iter()
                .any(|c| c.path == b"thing" && c.status() == 'D')
        );
        assert!(
            changes
                .iter()
                .any(|c| c.path == b"thing/inside" && c.status() == 'A')
        );
    }
}
