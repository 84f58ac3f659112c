//! Which files of a project a checkpoint holds: every file git would not
//! ignore, every file git tracks (ignored or not), and what of `.git` an agent
//! could destroy — its refs, HEAD, index, stash and logs, config, hooks and
//! the objects they need. Build output and dependencies are not held: what git
//! ignores, and a short list of directories every toolchain regenerates
//! ([`DEFAULT_IGNORE`]), plus the config's own patterns. A file over the cap is
//! left out and said.
//!
//! The walk follows no symlink (a link is kept as a link), never enters a
//! repository nested in the project (its files are kept, its `.git` is not),
//! and reads nothing: each file is opened later, beneath the project's root.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::stat_cache::{DirListing, DirListings, Stat};
use crate::{CheckpointError, Rules};

/// Directories every toolchain makes again from the sources, left out of a
/// checkpoint unless git tracks what is in them: gitignore patterns, applied
/// to untracked files in every project, with git or without. Each is of one
/// of three simple forms, matched by name without building a matcher: `name/`
/// (a directory anywhere), `*.ext` (an extension), `name` (any entry).
pub const DEFAULT_IGNORE: &[&str] = &[
    "node_modules/",
    "target/",
    ".venv/",
    "venv/",
    "__pycache__/",
    "*.pyc",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".tox/",
    ".nox/",
    ".gradle/",
    ".next/",
    ".nuxt/",
    ".svelte-kit/",
    ".turbo/",
    ".parcel-cache/",
    ".terraform/",
    ".direnv/",
    ".DS_Store",
];

/// The directory git keeps a repository in.
pub const GIT_DIR: &str = ".git";

/// A file the walk found.
#[derive(Debug, Clone)]
pub struct Found {
    /// From the project's root, `/`-separated.
    pub path: Vec<u8>,
    pub symlink: bool,
    pub stat: Stat,
    /// One of git's objects or packs: named by its contents, never changed in
    /// place, and kept whatever its size.
    pub immutable: bool,
}

/// A file a checkpoint could not hold, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    pub why: LeftOutWhy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeftOutWhy {
    /// Larger than `[checkpoints] max_file_mib`.
    OverCap,
    /// It could not be read (permission, or it led out of the project).
    Unreadable,
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.why, self.bytes) {
            (LeftOutWhy::OverCap, Some(bytes)) => {
                write!(
                    f,
                    "{} ({}, over the cap)",
                    self.path,
                    crate::human_bytes(bytes)
                )
            }
            (LeftOutWhy::OverCap, None) => write!(f, "{} (over the cap)", self.path),
            (LeftOutWhy::Unreadable, _) => write!(f, "{} (could not be read)", self.path),
        }
    }
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Listing {
    pub found: Vec<Found>,
    pub left_out: Vec<LeftOut>,
    /// The project's root holds a git repository (`.git` a directory).
    pub git: bool,
    /// The loose-object directories' listings, for the next walk.
    pub dirs: DirListings,
    /// What the person should hear of this walk (ignore rules set aside).
    pub warnings: Vec<String>,
}

/// A tree with fewer files than this (as the last checkpoint found it) is
/// walked on the checkpoint's own thread: starting more costs more than they
/// save.
pub(crate) const PARALLEL_FROM: usize = 2000;

/// Lists `root`'s files as [`Rules`] say, before `deadline`. A tree that had
/// `expected` files or more at the last checkpoint has its directories read
/// on every core (at most four), each thread keeping what it finds.
/// `known` are the loose-object directories' listings the last walk made: a
/// directory whose stat is what it was is not read again.
pub fn list(
    root: &Path,
    rules: &Rules,
    expected: usize,
    known: &DirListings,
    deadline: Instant,
) -> Result<Listing, CheckpointError> {
    let started = std::time::SystemTime::now();
    let threads = if expected >= PARALLEL_FROM {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, 4)
    } else {
        1
    };
    // git's ignore rules hold where git would apply them: in a repository
    // git recognises, from ignore files that are regular files (git does not
    // follow a symlinked `.gitignore`, and a FIFO must not wedge the walk).
    let mut warnings = Vec::new();
    let honour_git = match odd_ignore_file_above(root) {
        Some(odd) => {
            warnings.push(set_aside(&odd, root));
            false
        }
        None => in_repository(root),
    };
    let (listing, odd) = walk_tree(root, rules, threads, honour_git, deadline)?;
    let mut listing = match odd {
        None => listing,
        Some(odd) => {
            warnings.push(set_aside(&odd, root));
            walk_tree(root, rules, threads, false, deadline)?.0
        }
    };
    listing.warnings = warnings;
    let git = root.join(GIT_DIR);
    match std::fs::symlink_metadata(&git) {
        Ok(meta) if meta.is_dir() => {
            listing.git = true;
            let mut objects = Objects {
                known,
                started,
                listed: DirListings::new(),
            };
            list_git(&git, b".git", &mut listing, rules, &mut objects, deadline)?;
            listing.dirs = objects.listed;
            add_tracked(root, &git, &mut listing, rules);
        }
        // A worktree's or a submodule's `.git` file: kept as the file it is.
        Ok(meta) => take(&mut listing, b".git".to_vec(), &meta, false, rules),
        Err(_) => {}
    }
    Ok(listing)
}

/// One walk of the working tree (`.git` aside), with git's ignore rules or
/// without them; with them, also an ignore file met that is not a regular
/// file, whose directory the walk did not enter (so it must be walked again
/// without them).
fn walk_tree(
    root: &Path,
    rules: &Rules,
    threads: usize,
    honour_git: bool,
    deadline: Instant,
) -> Result<(Listing, Option<std::path::PathBuf>), CheckpointError> {
    // The config's own patterns need a matcher; the default list does not.
    let extra = if rules.ignore.is_empty() {
        None
    } else {
        Some(matcher(root, rules)?)
    };
    let exclude = rules.exclude.clone();
    let odd: std::sync::Arc<std::sync::Mutex<Option<std::path::PathBuf>>> = Default::default();
    let seen_odd = odd.clone();
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .ignore(false)
        .parents(honour_git)
        .git_ignore(honour_git)
        // The global excludes file is found here: the crate's own lookup
        // compiles a regular expression in every process.
        .git_global(false)
        .git_exclude(honour_git)
        .require_git(true)
        .follow_links(false)
        .threads(threads)
        .filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir
                && honour_git
                && let Some(found) = odd_ignore_file_in(entry.path())
            {
                // Not entered: the walk would open it. Walked again without.
                *seen_odd
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(found);
                return false;
            }
            let left_out = entry.file_name() == GIT_DIR
                || default_ignored(entry.file_name().as_bytes(), is_dir)
                || extra
                    .as_ref()
                    .is_some_and(|m| m.matched(entry.path(), is_dir).is_ignore())
                || (is_dir && exclude.iter().any(|e| e == entry.path()));
            !left_out
        });
    if honour_git && let Some(excludes) = global_excludes().filter(|p| p.is_file()) {
        // Lowest in precedence, as git has it; its patterns are matched from
        // its own directory, so one anchored to a repository's root (rare in
        // a global file) leaves that file kept.
        let _ = builder.add_ignore(excludes);
    }
    let late = std::sync::atomic::AtomicBool::new(false);
    let mut listing = Listing::default();
    if threads == 1 {
        for entry in builder.build() {
            if !visit(entry, root, rules, deadline, &mut listing) {
                late.store(true, std::sync::atomic::Ordering::Relaxed);
                break;
            }
        }
    } else {
        let parts: std::sync::Mutex<Vec<Listing>> = std::sync::Mutex::new(Vec::new());
        builder.build_parallel().run(|| {
            let mut mine = Part {
                listing: Listing::default(),
                parts: &parts,
            };
            let late = &late;
            Box::new(move |entry| {
                if visit(entry, root, rules, deadline, &mut mine.listing) {
                    ignore::WalkState::Continue
                } else {
                    late.store(true, std::sync::atomic::Ordering::Relaxed);
                    ignore::WalkState::Quit
                }
            })
        });
        for part in parts
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            listing.found.extend(part.found);
            listing.left_out.extend(part.left_out);
        }
    }
    if late.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(CheckpointError::OutOfTime { done: 0, left: 0 });
    }
    let odd = odd
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    Ok((listing, odd))
}

/// The ignore files the walk reads for a directory: its `.gitignore`, and
/// the exclude file of a repository there.
const IGNORE_FILES: &[&str] = &[".gitignore", ".git/info/exclude"];

/// One of `dir`'s ignore files that is there but is not a regular file (a
/// symlink, a FIFO, a device).
fn odd_ignore_file_in(dir: &Path) -> Option<std::path::PathBuf> {
    IGNORE_FILES
        .iter()
        .map(|f| dir.join(f))
        .find(|file| std::fs::symlink_metadata(file).is_ok_and(|meta| !meta.file_type().is_file()))
}

/// The same, for the root and every directory above it (whose ignore files
/// the walk reads before it starts).
fn odd_ignore_file_above(root: &Path) -> Option<std::path::PathBuf> {
    root.ancestors().find_map(odd_ignore_file_in)
}

fn set_aside(odd: &Path, root: &Path) -> String {
    let shown = odd.strip_prefix(root).unwrap_or(odd);
    format!(
        "{} is not a regular file (git reads no such ignore file): git's ignore rules were set aside, so this checkpoint keeps what they would have left out",
        shown.display()
    )
}

/// Whether `root` is in a repository git recognises: the nearest `.git`
/// above it (or in it) that is a git directory — HEAD and objects there — or
/// a `gitdir:` file naming one. An empty `.git` made to look like one is not.
fn in_repository(root: &Path) -> bool {
    root.ancestors().any(|dir| {
        let dot_git = dir.join(GIT_DIR);
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => is_git_dir(&dot_git),
            Ok(meta) if meta.is_file() => sandrail_files::read_regular(&dot_git, 4096)
                .ok()
                .and_then(|bytes| {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    let named = text.trim().strip_prefix("gitdir:")?.trim().to_owned();
                    Some(is_git_dir(&dir.join(named)))
                })
                .unwrap_or(false),
            _ => false,
        }
    })
}

fn is_git_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("HEAD")).is_ok_and(|m| m.is_file())
        && dir.join("objects").is_dir()
}

/// Takes in one entry the walk met; false once past the deadline.
fn visit(
    entry: Result<ignore::DirEntry, ignore::Error>,
    root: &Path,
    rules: &Rules,
    deadline: Instant,
    listing: &mut Listing,
) -> bool {
    if Instant::now() > deadline {
        return false;
    }
    match entry {
        Ok(entry) if entry.depth() > 0 => {
            if let (Ok(meta), Some(path)) = (entry.metadata(), relative(entry.path(), root)) {
                take(listing, path, &meta, false, rules);
            }
        }
        Ok(_) => {}
        Err(e) => {
            if let Some(path) = error_path(&e, root) {
                listing.left_out.push(LeftOut {
                    path,
                    bytes: None,
                    why: LeftOutWhy::Unreadable,
                });
            }
        }
    }
    true
}

/// What one thread of the walk found, handed over when it ends.
struct Part<'a> {
    listing: Listing,
    parts: &'a std::sync::Mutex<Vec<Listing>>,
}

impl Drop for Part<'_> {
    fn drop(&mut self) {
        let listing = std::mem::take(&mut self.listing);
        self.parts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(listing);
    }
}

/// Adds a file (or symlink) the walk met, or says why it is left out.
fn take(
    listing: &mut Listing,
    path: Vec<u8>,
    meta: &std::fs::Metadata,
    immutable: bool,
    rules: &Rules,
) {
    let symlink = meta.file_type().is_symlink();
    if !symlink && !meta.is_file() {
        // Sockets, FIFOs and devices hold nothing to keep.
        return;
    }
    let stat = Stat::of(meta);
    if !symlink && over_cap(&path, stat.size, rules) {
        listing.left_out.push(LeftOut {
            path: String::from_utf8_lossy(&path).into_owned(),
            bytes: Some(stat.size),
            why: LeftOutWhy::OverCap,
        });
        return;
    }
    listing.found.push(Found {
        path,
        symlink,
        stat,
        immutable,
    });
}

/// The loose-object directories as the last walk left them, and as this one
/// finds them.
struct Objects<'a> {
    known: &'a DirListings,
    started: std::time::SystemTime,
    listed: DirListings,
}

/// `.git`'s files, but for locks and temporary files git is still writing. A
/// directory of loose objects whose stat has not moved since the last walk is
/// taken from its listing then, unread.
fn list_git(
    dir: &Path,
    prefix: &[u8],
    listing: &mut Listing,
    rules: &Rules,
    objects: &mut Objects,
    deadline: Instant,
) -> Result<(), CheckpointError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        listing.left_out.push(LeftOut {
            path: String::from_utf8_lossy(prefix).into_owned(),
            bytes: None,
            why: LeftOutWhy::Unreadable,
        });
        return Ok(());
    };
    if Instant::now() > deadline {
        return Err(CheckpointError::OutOfTime { done: 0, left: 0 });
    }
    let in_objects = prefix.starts_with(b".git/objects");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.as_bytes();
        if name.ends_with(b".lock")
            || name == b"gc.pid"
            || name.starts_with(b"fsmonitor--daemon")
            || (in_objects
                && (name.starts_with(b"tmp_")
                    || name.starts_with(b"incoming-")
                    || name.starts_with(b".tmp-")))
        {
            continue;
        }
        let mut path = prefix.to_vec();
        path.push(b'/');
        path.extend_from_slice(name);
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            let stat = Stat::of(&meta);
            match objects.known.get(&path) {
                Some(known) if is_fan_out(&path) && known.stat == stat => {
                    for (file, file_stat) in &known.files {
                        let mut inside = path.clone();
                        inside.push(b'/');
                        inside.extend_from_slice(file);
                        listing.found.push(Found {
                            path: inside,
                            symlink: false,
                            stat: *file_stat,
                            immutable: true,
                        });
                    }
                    if !stat.racy(objects.started) {
                        objects.listed.insert(path, known.clone());
                    }
                }
                _ => {
                    list_git(&entry.path(), &path, listing, rules, objects, deadline)?;
                    if is_fan_out(&path) && !stat.racy(objects.started) {
                        let inside = listing
                            .found
                            .iter()
                            .rev()
                            .take_while(|f| {
                                f.path.starts_with(&path) && f.path.get(path.len()) == Some(&b'/')
                            })
                            .map(|f| (f.path[path.len() + 1..].to_vec(), f.stat))
                            .collect();
                        objects.listed.insert(
                            path,
                            DirListing {
                                stat,
                                files: inside,
                            },
                        );
                    }
                }
            }
        } else {
            let immutable = is_git_object(&path);
            take(listing, path, &meta, immutable, rules);
        }
    }
    Ok(())
}

/// `.git/objects/ab`: a directory of loose objects.
fn is_fan_out(path: &[u8]) -> bool {
    path.strip_prefix(b".git/objects/")
        .is_some_and(|rest| rest.len() == 2 && rest.iter().all(u8::is_ascii_hexdigit))
}

/// How much more than the cap one of git's objects or packs may be: a
/// repository cannot come back without them, and each is kept once (it never
/// changes), but one made huge to stall every checkpoint is left out too.
const GIT_OBJECTS_CAP_FACTOR: u64 = 16;

/// Whether a file of `size` bytes at `path` is left out for its size: over
/// the cap, or for git's objects and packs over [`GIT_OBJECTS_CAP_FACTOR`]
/// times it.
pub(crate) fn over_cap(path: &[u8], size: u64, rules: &Rules) -> bool {
    let cap = if is_git_object(path) {
        rules.max_file_bytes.saturating_mul(GIT_OBJECTS_CAP_FACTOR)
    } else {
        rules.max_file_bytes
    };
    size > cap
}

/// A loose object (`objects/ab/cdef…`) or a pack's files (`objects/pack/pack-…`).
fn is_git_object(path: &[u8]) -> bool {
    let Some(rest) = path.strip_prefix(b".git/objects/") else {
        return false;
    };
    if let Some(name) = rest.strip_prefix(b"pack/") {
        return name.starts_with(b"pack-") && !name.ends_with(b".keep");
    }
    rest.len() > 3 && rest[2] == b'/' && rest[..2].iter().all(u8::is_ascii_hexdigit)
}

/// Tracked files the ignore rules left out: git keeps them whatever a
/// `.gitignore` says, so a checkpoint does too.
fn add_tracked(root: &Path, git: &Path, listing: &mut Listing, rules: &Rules) {
    let tracked = match crate::git_index::tracked(git) {
        Ok(tracked) => tracked,
        Err(e) => {
            eprintln!("sandrail: {e}; tracked files that git ignores are not in this checkpoint");
            return;
        }
    };
    let listed: std::collections::HashSet<&[u8]> = listing
        .found
        .iter()
        .map(|f| f.path.as_slice())
        .chain(listing.left_out.iter().map(|l| l.path.as_bytes()))
        .collect();
    let missing: Vec<Vec<u8>> = tracked
        .into_iter()
        .filter(|path| {
            !listed.contains(path.as_slice())
                && !path.starts_with(b".git/")
                && path.as_slice() != b".git"
        })
        .collect();
    for path in missing {
        let on_disk = root.join(std::ffi::OsStr::from_bytes(&path));
        if let Ok(meta) = std::fs::symlink_metadata(&on_disk) {
            take(listing, path, &meta, false, rules);
        }
    }
}

/// git's global excludes file: `core.excludesFile` in the user's git config
/// (`~/.gitconfig`, then `$XDG_CONFIG_HOME/git/config`), else
/// `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).
fn global_excludes() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|x| !x.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    let configs = [
        home.as_ref().map(|h| h.join(".gitconfig")),
        xdg.as_ref().map(|x| x.join("git/config")),
    ];
    let configured = configs
        .iter()
        .flatten()
        .filter_map(|file| sandrail_files::read_regular(file, 1 << 20).ok())
        .find_map(|text| excludes_file_in(&String::from_utf8_lossy(&text)));
    match configured {
        Some(path) => match path.strip_prefix("~/") {
            Some(rest) => home.map(|h| h.join(rest)),
            None => Some(std::path::PathBuf::from(path)),
        },
        None => xdg.map(|x| x.join("git/ignore")),
    }
}

/// The value of `excludesfile` in a git config's text (in any section, as
/// the `ignore` crate reads it too).
fn excludes_file_in(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("excludesfile")
            .then(|| value.trim().trim_matches('"').trim().to_owned())
            .filter(|v| !v.is_empty())
    })
}

/// Whether an entry of this name is on [`DEFAULT_IGNORE`].
fn default_ignored(name: &[u8], is_dir: bool) -> bool {
    DEFAULT_IGNORE.iter().any(|pattern| {
        let pattern = pattern.as_bytes();
        match (pattern.strip_suffix(b"/"), pattern.strip_prefix(b"*")) {
            (Some(dir), _) => is_dir && name == dir,
            (None, Some(extension)) => name.ends_with(extension),
            (None, None) => name == pattern,
        }
    })
}

/// The config's patterns, as one gitignore.
pub(crate) fn matcher(
    root: &Path,
    rules: &Rules,
) -> Result<ignore::gitignore::Gitignore, CheckpointError> {
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    for pattern in rules.ignore.iter().map(String::as_str) {
        builder
            .add_line(None, pattern)
            .map_err(|e| CheckpointError::Pattern(pattern.to_owned(), e.to_string()))?;
    }
    builder
        .build()
        .map_err(|e| CheckpointError::Pattern(String::new(), e.to_string()))
}

/// `path` from `root`, as bytes: the walk's paths are `root` joined with
/// names, so the prefix is cut as bytes (a component-wise comparison costs a
/// walk of many files a millisecond or more).
fn relative(path: &Path, root: &Path) -> Option<Vec<u8>> {
    let root = root.as_os_str().as_bytes();
    let root = root.strip_suffix(b"/").unwrap_or(root);
    let rest = path.as_os_str().as_bytes().strip_prefix(root)?;
    let rest = rest.strip_prefix(b"/")?;
    (!rest.is_empty()).then(|| rest.to_vec())
}

/// The path a walk error names, from the root.
fn error_path(error: &ignore::Error, root: &Path) -> Option<String> {
    match error {
        ignore::Error::WithPath { path, .. } => {
            relative(path, root).map(|p| String::from_utf8_lossy(&p).into_owned())
        }
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err, root)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default list is matched by name, as gitignore would match it.
    #[test]
    fn the_default_list_matches_as_gitignore_does() {
        let mut builder = ignore::gitignore::GitignoreBuilder::new("/p");
        for pattern in DEFAULT_IGNORE {
            assert!(
                pattern.ends_with('/')
                    || (pattern.starts_with("*.") && !pattern[2..].contains(['*', '/', '?', '[']))
                    || !pattern.contains(['*', '/', '?', '[', '!']),
                "{pattern} is not of a form matched by name"
            );
            builder.add_line(None, pattern).expect("a pattern");
        }
        let gitignore = builder.build().expect("a matcher");
        for (path, is_dir) in [
            ("/p/node_modules", true),
            ("/p/web/node_modules", true),
            ("/p/node_modules", false),
            ("/p/src/target", true),
            ("/p/x.pyc", false),
            ("/p/a/.DS_Store", false),
            ("/p/.DS_Store", true),
            ("/p/venv", true),
            ("/p/venvs", true),
            ("/p/src/main.rs", false),
            ("/p/pyc", false),
            ("/p/x.pyc", true),
        ] {
            let name = Path::new(path).file_name().expect("name").as_bytes();
            assert_eq!(
                default_ignored(name, is_dir),
                gitignore.matched(path, is_dir).is_ignore(),
                "{path} (dir: {is_dir})"
            );
        }
    }

    #[test]
    fn the_global_excludes_file_is_read_from_gits_config() {
        assert_eq!(
            excludes_file_in(
                "[user]\n\tname = a\n[core]\n\texcludesFile = \"~/.gitignore_global\"\n"
            )
            .as_deref(),
            Some("~/.gitignore_global")
        );
        assert_eq!(excludes_file_in("[core]\n\tpager = less\n"), None);
    }

    /// Only git's objects and packs go past the cap, and only so far: any
    /// other file under `.git/objects` is capped like the rest.
    #[test]
    fn the_cap_spares_only_gits_objects_and_only_so_far() {
        let rules = Rules {
            max_file_bytes: 100,
            ..Rules::default()
        };
        assert!(!over_cap(b".git/objects/pack/pack-1.pack", 1_000, &rules));
        assert!(over_cap(b".git/objects/pack/pack-1.pack", 1_700, &rules));
        assert!(over_cap(b".git/objects/info/big", 200, &rules));
        assert!(over_cap(b"src/big.bin", 200, &rules));
        assert!(!over_cap(b"src/small.rs", 100, &rules));
    }

    #[test]
    fn git_objects_are_known_by_their_names() {
        assert!(is_git_object(b".git/objects/ab/cdef0123"));
        assert!(is_git_object(b".git/objects/pack/pack-123.pack"));
        assert!(!is_git_object(b".git/objects/pack/pack-123.keep"));
        assert!(!is_git_object(b".git/objects/info/packs"));
        assert!(!is_git_object(b".git/refs/heads/main"));
    }
}
