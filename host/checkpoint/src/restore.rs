//! Bringing a project back to a checkpoint: every file the checkpoint holds
//! that differs now is written back, and every file that is here now, was
//! kept by the checkpoint taken just before (so nothing is lost), and was not
//! in the one restored is removed. A file ignored by the ignore rules being
//! restored is never removed, nor is anything not kept (over the cap), nor
//! any of git's objects (extra objects cost git nothing).
//!
//! Every write and removal goes through directory handles opened one
//! component at a time beneath the project's root without following a
//! symlink, so a symlink the agent put where a directory was — leading out of
//! the project, or to another place in it — cannot make an undo write or
//! remove anywhere but where the path says; a file is written to a temporary
//! file beside it and renamed over it, checked against its digest as it is
//! copied.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::objects::{ObjectError, Objects};
use crate::tree::{Blob, Flat, Kind};

/// What a restore did, or would do.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Restored {
    /// Files written back (their path from the root).
    pub written: Vec<String>,
    /// Files removed: here now, not in the checkpoint.
    pub removed: Vec<String>,
    /// Paths left as they are, each with why.
    pub left: Vec<(String, String)>,
}

/// What to change to bring `now` back to `target`.
#[derive(Debug)]
pub struct Plan {
    writes: BTreeMap<Vec<u8>, Blob>,
    removals: BTreeSet<Vec<u8>>,
    left: Vec<(String, String)>,
}

impl Plan {
    /// The changes from `now` (the checkpoint of the project as it is, which
    /// holds everything a removal takes) to `target`. `target_has_git`: the
    /// checkpoint held a repository; if it did not, `.git` is left as it is.
    /// What the target left out (over the cap, unreadable) is never removed:
    /// it was there, the checkpoint just did not keep it.
    pub fn new(
        objects: &Objects,
        target: &Flat,
        target_has_git: bool,
        target_left_out: &[crate::LeftOut],
        now: &Flat,
    ) -> Plan {
        let not_kept: BTreeSet<&[u8]> = target_left_out.iter().map(|l| l.path.as_bytes()).collect();
        let in_git = |path: &[u8]| path == b".git" || path.starts_with(b".git/");
        let mut left = Vec::new();
        if !target_has_git && now.keys().any(|p| in_git(p)) {
            left.push((
                ".git".to_owned(),
                "the checkpoint holds no repository, so .git is left as it is".to_owned(),
            ));
        }
        let touchable = |path: &[u8]| target_has_git || !in_git(path);
        let writes: BTreeMap<Vec<u8>, Blob> = target
            .iter()
            .filter(|(path, blob)| touchable(path) && now.get(*path) != Some(blob))
            .map(|(path, blob)| (path.clone(), *blob))
            .collect();
        let ignores = Ignores::of(objects, target);
        let mut removals = BTreeSet::new();
        for path in now.keys() {
            if target.contains_key(path) || !touchable(path) {
                continue;
            }
            if path.starts_with(b".git/objects/") {
                continue;
            }
            if not_kept.contains(path.as_slice()) {
                left.push((
                    shown(path),
                    "the checkpoint did not keep it (over the cap, or unreadable), so left as it is".to_owned(),
                ));
                continue;
            }
            // Ignore rules say nothing of what is inside `.git`.
            if !in_git(path) && ignores.ignored(path) {
                left.push((
                    shown(path),
                    "ignored by the checkpoint's ignore rules, so left as it is".to_owned(),
                ));
                continue;
            }
            removals.insert(path.clone());
        }
        Plan {
            writes,
            removals,
            left,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.removals.is_empty()
    }

    /// What it would do, without doing it.
    pub fn preview(&self) -> Restored {
        Restored {
            written: self.writes.keys().map(|p| shown(p)).collect(),
            removed: self.removals.iter().map(|p| shown(p)).collect(),
            left: self.left.clone(),
        }
    }

    /// Does it: removals first (so a file can become a directory and back),
    /// then the directories they emptied, then the writes.
    pub fn apply(&self, root: &Path, objects: &Objects) -> Result<Restored, RestoreError> {
        let dir = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(
            |source| RestoreError::Project {
                path: root.to_path_buf(),
                source,
            },
        )?;
        let mut done = Restored {
            left: self.left.clone(),
            ..Restored::default()
        };
        let mut emptied: BTreeSet<Vec<u8>> = BTreeSet::new();
        for path in &self.removals {
            let removed = holding(&dir, as_path(path), false)
                .and_then(|(parent, name)| parent.remove_file(name));
            match removed {
                Ok(()) => {
                    done.removed.push(shown(path));
                    emptied.extend(ancestors(path).map(<[u8]>::to_vec));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => done
                    .left
                    .push((shown(path), format!("could not be removed: {e}"))),
            }
        }
        // Deepest first; one still holding something (an ignored file) stays.
        let needed: BTreeSet<&[u8]> = self.writes.keys().flat_map(|p| ancestors(p)).collect();
        for path in emptied.iter().rev() {
            if !needed.contains(path.as_slice())
                && let Ok((parent, name)) = holding(&dir, as_path(path), false)
            {
                let _ = parent.remove_dir(name);
            }
        }
        for (path, blob) in &self.writes {
            match write_one(&dir, objects, path, blob) {
                Ok(()) => done.written.push(shown(path)),
                Err(WriteError::Object(e)) => return Err(RestoreError::Object(e)),
                Err(WriteError::Io(e)) => done
                    .left
                    .push((shown(path), format!("could not be written: {e}"))),
            }
        }
        Ok(done)
    }
}

enum WriteError {
    Object(ObjectError),
    Io(std::io::Error),
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Io(e)
    }
}

/// The directory holding `path`, opened beneath the root one component at a
/// time without following a symlink — not even one leading elsewhere in the
/// project, where an ignored file or one never kept could be written over —
/// and `path`'s last name. `create` makes the directories that are missing.
fn holding<'p>(
    root: &cap_std::fs::Dir,
    path: &'p Path,
    create: bool,
) -> std::io::Result<(cap_std::fs::Dir, &'p OsStr)> {
    use cap_fs_ext::DirExt;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("a path with no name"))?;
    let mut dir = root.try_clone()?;
    for part in path.parent().into_iter().flat_map(Path::components) {
        let std::path::Component::Normal(part) = part else {
            return Err(std::io::Error::other("a path that is not plain names"));
        };
        dir = match dir.open_dir_nofollow(part) {
            Ok(next) => next,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                dir.create_dir(part)?;
                dir.open_dir_nofollow(part)?
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!(
                        "{} is not a directory to write into (a symlink or a file is there: {e})",
                        String::from_utf8_lossy(part.as_bytes())
                    ),
                ));
            }
        };
    }
    Ok((dir, name))
}

fn write_one(
    root: &cap_std::fs::Dir,
    objects: &Objects,
    path: &[u8],
    blob: &Blob,
) -> Result<(), WriteError> {
    let (dir, name) = holding(root, as_path(path), true)?;
    // A directory in the way (one the checkpoint did not have, emptied of
    // what the undo removed already) goes; one still holding something stays.
    if let Ok(meta) = dir.symlink_metadata(name)
        && meta.is_dir()
    {
        dir.remove_dir(name)?;
    }
    match blob.kind {
        Kind::Symlink => {
            let mut bytes = Vec::new();
            objects
                .copy_to(&blob.digest, &mut bytes)
                .map_err(WriteError::Object)?;
            let _ = dir.remove_file(name);
            dir.symlink(OsStr::from_bytes(&bytes), name)?;
        }
        Kind::File | Kind::Dir => {
            let temp = temp_name();
            let mut file = dir.create(&temp)?.into_std();
            let written = objects.copy_to(&blob.digest, &mut file);
            let finished = written.map_err(WriteError::Object).and_then(|_| {
                file.flush()?;
                file.set_permissions(std::fs::Permissions::from_mode(blob.mode & 0o777))?;
                Ok(())
            });
            if let Err(e) = finished {
                let _ = dir.remove_file(&temp);
                return Err(e);
            }
            drop(file);
            if let Err(e) = dir.rename(&temp, &dir, name) {
                let _ = dir.remove_file(&temp);
                return Err(e.into());
            }
        }
    }
    Ok(())
}

/// A name for a file being written, in the directory it goes to.
fn temp_name() -> PathBuf {
    let mut random = [0u8; 6];
    let _ = getrandom::fill(&mut random);
    PathBuf::from(format!(".sandrail-undo-{}", sandrail_event::hex(&random)))
}

fn as_path(path: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(path))
}

fn shown(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// Every directory above `path`, from the root's child down.
fn ancestors(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.iter()
        .enumerate()
        .filter(|(_, b)| **b == b'/')
        .map(move |(at, _)| &path[..at])
}

/// The ignore rules a checkpoint holds: its `.gitignore` files and
/// `.git/info/exclude`, read from the store, so whether a file would be
/// ignored once the checkpoint is restored is known before anything is
/// written.
struct Ignores {
    /// By directory (from the root, `""` for the root itself).
    by_dir: HashMap<Vec<u8>, ignore::gitignore::Gitignore>,
    exclude: Option<ignore::gitignore::Gitignore>,
}

impl Ignores {
    fn of(objects: &Objects, target: &Flat) -> Ignores {
        let root = Path::new("/");
        let build = |dir: &[u8], blob: &Blob| -> Option<ignore::gitignore::Gitignore> {
            let bytes = objects.read(&blob.digest, 1 << 20).ok()?;
            let base = root.join(as_path(dir));
            let mut builder = ignore::gitignore::GitignoreBuilder::new(&base);
            for line in String::from_utf8_lossy(&bytes).lines() {
                let _ = builder.add_line(None, line);
            }
            builder.build().ok()
        };
        let mut by_dir = HashMap::new();
        let mut exclude = None;
        for (path, blob) in target {
            if blob.kind != Kind::File {
                continue;
            }
            if path.as_slice() == b".git/info/exclude" {
                exclude = build(b"", blob);
            } else if path.as_slice() == b".gitignore" {
                if let Some(matcher) = build(b"", blob) {
                    by_dir.insert(Vec::new(), matcher);
                }
            } else if let Some(dir) = path.strip_suffix(b"/.gitignore")
                && !dir.starts_with(b".git")
                && let Some(matcher) = build(dir, blob)
            {
                by_dir.insert(dir.to_vec(), matcher);
            }
        }
        Ignores { by_dir, exclude }
    }

    /// Whether git would ignore `path` under these rules: the deepest
    /// `.gitignore` that says anything decides, then `info/exclude`.
    fn ignored(&self, path: &[u8]) -> bool {
        let absolute = Path::new("/").join(as_path(path));
        let mut dirs: Vec<&[u8]> = ancestors(path).collect();
        dirs.insert(0, b"");
        for dir in dirs.iter().rev() {
            if let Some(matcher) = self.by_dir.get(*dir) {
                let matched = matcher.matched_path_or_any_parents(&absolute, false);
                if matched.is_ignore() {
                    return true;
                }
                if matched.is_whitelist() {
                    return false;
                }
            }
        }
        self.exclude
            .as_ref()
            .is_some_and(|m| m.matched_path_or_any_parents(&absolute, false).is_ignore())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("cannot open the project {path}: {source}")]
    Project {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}; nothing more was restored")]
    Object(ObjectError),
}
