//! Checkpoints: the project as it was before each call that could change it,
//! kept where the agent cannot reach, so whatever a command destroyed inside
//! the project — however it was spelled, by whatever program it ran — can be
//! brought back with `sandrail undo`.
//!
//! A checkpoint holds the project's working tree (tracked files with their
//! uncommitted edits, untracked files git does not ignore) and what of `.git`
//! the agent could destroy (refs, HEAD, the index, the stash and logs, config,
//! hooks and the objects they need), so even `rm -rf .git` is undone. A
//! project without git is held the same way, less its repository.
//!
//! Each project has a store of its own in sandrail's state directory
//! (`checkpoints/<project>/`), which the harness's OS sandbox and
//! self-protection keep from the agent's commands:
//!
//! - `objects/`: every blob and tree, once, named by its sha256 ([`objects`],
//!   [`tree`]), so a checkpoint after a small change writes a small change;
//! - `records/`: one small file per checkpoint ([`record`]);
//! - `stat-cache`: which files need hashing again ([`stat_cache`]);
//! - `lock`: shared by checkpoints, held alone by a prune ([`lock`]).
//!
//! Nothing here runs a program, the project's git included: its index is read
//! as bytes ([`git_index`]), its ignore rules by the `ignore` crate. No
//! guardrail reaches a store: the contract gives them no import that could.

pub mod git_index;
pub mod lock;
pub mod objects;
pub mod record;
pub mod restore;
pub mod retention;
pub mod snapshot;
pub mod stat_cache;
pub mod tree;
pub mod walk;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use objects::Digest;
pub use record::{Occasion, Record};
pub use restore::Restored;
pub use retention::{Pruned, Retention};
pub use tree::{Change, Flat};
pub use walk::{DEFAULT_IGNORE, LeftOut, LeftOutWhy};

use objects::Objects;
use record::Records;
use snapshot::{Keep, Snapshot};
use stat_cache::StatCache;
use tree::Trees;

/// The directory of the state directory that holds every project's store.
pub const STORES: &str = "checkpoints";
/// The default cap on a file a checkpoint holds.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 << 20;
/// How often the store is pruned without being asked.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// What a checkpoint holds beyond git's own rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// A file larger than this is left out (git's objects excepted).
    pub max_file_bytes: u64,
    /// More patterns (gitignore syntax) to leave out.
    pub ignore: Vec<String>,
    /// Directories never walked, absolute: sandrail's own, where one lies in
    /// the project (a store must not keep itself).
    pub exclude: Vec<PathBuf>,
}

impl Rules {
    /// Whether every pattern is gitignore syntax.
    pub fn check(&self) -> Result<(), CheckpointError> {
        walk::matcher(Path::new("/"), self).map(drop)
    }
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            ignore: Vec::new(),
            exclude: Vec::new(),
        }
    }
}

/// What a checkpoint is taken before.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub session: &'a str,
    pub occasion: Occasion,
    pub harness: Option<&'a str>,
    pub tool: Option<&'a str>,
    /// The command line, or the path, the call names.
    pub call: Option<&'a str>,
    pub tool_use_id: Option<&'a str>,
}

/// The project as it is now, measured against the store without writing to it.
#[derive(Debug)]
pub struct Now {
    snapshot: Snapshot,
}

impl Now {
    pub fn files(&self) -> &Flat {
        &self.snapshot.files
    }

    pub fn left_out(&self) -> &[LeftOut] {
        &self.snapshot.left_out
    }

    pub fn root(&self) -> Digest {
        self.snapshot.root
    }
}

/// One project's checkpoint store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    project: PathBuf,
    /// The state directory it is in, never walked.
    state: PathBuf,
}

impl Store {
    /// The store of `project` (its canonical path) in the state directory `state`.
    pub fn of(state: &Path, project: &Path) -> Store {
        use std::os::unix::ffi::OsStrExt;
        let key = sandrail_event::sha256_hex(project.as_os_str().as_bytes());
        Store {
            dir: state.join(STORES).join(&key[..16]),
            project: project.to_path_buf(),
            state: state.to_path_buf(),
        }
    }

    /// `rules`, with the state directory this store is in never walked.
    fn rules_here(&self, rules: &Rules) -> Rules {
        let mut rules = rules.clone();
        let state = std::fs::canonicalize(&self.state).unwrap_or_else(|_| self.state.clone());
        rules.exclude.push(state);
        rules
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn project(&self) -> &Path {
        &self.project
    }

    fn objects(&self) -> Objects {
        Objects::new(&self.dir)
    }

    fn records_dir(&self) -> Records {
        Records::new(&self.dir)
    }

    /// Takes a checkpoint of the project before `call`, within `deadline`.
    pub fn take(
        &self,
        call: &Call,
        rules: &Rules,
        deadline: Instant,
    ) -> Result<Record, CheckpointError> {
        let started = Instant::now();
        let _held = lock::shared(&self.dir, deadline).map_err(CheckpointError::Lock)?;
        self.note_project()?;
        let objects = self.objects();
        let mut cache = StatCache::load(&self.dir.join("stat-cache"));
        let snapshot = snapshot::take(
            &self.project,
            &objects,
            &mut cache,
            &self.rules_here(rules),
            Keep::Store,
            deadline,
        )?;
        let mut record = self.record(call, &snapshot);
        record.took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.records_dir()
            .write(&record)
            .map_err(|e| CheckpointError::store(&self.dir, e))?;
        Ok(record)
    }

    fn record(&self, call: &Call, snapshot: &Snapshot) -> Record {
        let order = now_nanos();
        let unix = sandrail_event::clock::now();
        let root = snapshot.root.to_hex();
        let bounded = |text: &str| sandrail_event::text::one_line(text, record::MAX_CALL_CHARS);
        Record {
            id: record::new_id(call.session, order, &root),
            time: sandrail_event::clock::rfc3339(unix),
            unix,
            order,
            session: call.session.to_owned(),
            occasion: call.occasion,
            harness: call.harness.map(bounded),
            tool: call.tool.map(bounded),
            call: call.call.map(bounded),
            tool_use_id: call.tool_use_id.map(bounded),
            root,
            files: snapshot.files.len() as u64,
            bytes: snapshot.files.values().map(|b| b.size).sum(),
            added_bytes: snapshot.added_bytes,
            git: snapshot.git,
            took_ms: 0,
            left_out: snapshot.left_out.clone(),
            warnings: snapshot.warnings.clone(),
        }
    }

    /// Names the project in its store, so a listing of stores can say whose
    /// each one is.
    fn note_project(&self) -> Result<(), CheckpointError> {
        use std::os::unix::ffi::OsStrExt;
        let named = self.dir.join("project");
        if named.exists() {
            return Ok(());
        }
        sandrail_files::write_atomically(&named, self.project.as_os_str().as_bytes())
            .map_err(|e| CheckpointError::store(&self.dir, e))
    }

    /// Every checkpoint, oldest first.
    pub fn records(&self) -> Result<Vec<Record>, CheckpointError> {
        let (records, unreadable) = self
            .records_dir()
            .all()
            .map_err(|e| CheckpointError::store(&self.dir, e))?;
        for id in unreadable {
            eprintln!(
                "sandrail: the checkpoint record {} cannot be read; it is skipped",
                self.records_dir().path(&id).display()
            );
        }
        Ok(records)
    }

    /// The checkpoint whose id starts with `id`.
    pub fn find(&self, id: &str) -> Result<Record, CheckpointError> {
        let records = self.records()?;
        if records.is_empty() {
            return Err(self.none_here());
        }
        let matching: Vec<Record> = records
            .into_iter()
            .filter(|r| !id.is_empty() && r.id.starts_with(id))
            .collect();
        match matching.len() {
            0 => Err(CheckpointError::UnknownId {
                id: id.to_owned(),
                project: self.project.clone(),
            }),
            1 => Ok(matching.into_iter().next().expect("one")),
            _ => Err(CheckpointError::Ambiguous {
                id: id.to_owned(),
                matches: matching.into_iter().map(|r| r.id).collect(),
            }),
        }
    }

    fn none_here(&self) -> CheckpointError {
        CheckpointError::NoCheckpoint {
            project: self.project.clone(),
        }
    }

    /// The project as it is now, without writing to the store.
    pub fn now(&self, rules: &Rules, deadline: Instant) -> Result<Now, CheckpointError> {
        let _held = lock::shared(&self.dir, deadline).map_err(CheckpointError::Lock)?;
        let cache = StatCache::load(&self.dir.join("stat-cache"));
        let mut cache = cache;
        let snapshot = snapshot::take(
            &self.project,
            &self.objects(),
            &mut cache,
            &self.rules_here(rules),
            Keep::Measure,
            deadline,
        )?;
        Ok(Now { snapshot })
    }

    /// How the project now differs from `record`, file by file.
    pub fn changes_since(
        &self,
        record: &Record,
        now: &Now,
    ) -> Result<Vec<Change>, CheckpointError> {
        let objects = self.objects();
        let mut trees = Trees::new(&objects);
        trees.unwritten = now.snapshot.unwritten.clone();
        let root = root_of(record)?;
        trees
            .diff(&root, &now.snapshot.root)
            .map_err(CheckpointError::Object)
    }

    /// The checkpoint an undo restores by default: in `session` (else the
    /// newest checkpoint's), the one before the latest call that changed
    /// something — the last whose project differs from the next checkpoint's,
    /// or from now.
    pub fn default_target(
        &self,
        session: Option<&str>,
        now: &Now,
    ) -> Result<Record, CheckpointError> {
        let records = self.records()?;
        let session = match session {
            Some(session) => session.to_owned(),
            None => match records.last() {
                Some(last) => last.session.clone(),
                None => return Err(self.none_here()),
            },
        };
        let mine: Vec<&Record> = records.iter().filter(|r| r.session == session).collect();
        if mine.is_empty() {
            return Err(CheckpointError::NoSessionCheckpoint {
                session,
                project: self.project.clone(),
            });
        }
        let now_root = now.root().to_hex();
        for (at, record) in mine.iter().enumerate().rev() {
            let next = mine
                .get(at + 1)
                .map_or(now_root.as_str(), |r| r.root.as_str());
            if record.root != next {
                return Ok((*record).clone());
            }
        }
        Err(CheckpointError::NothingChanged { session })
    }

    /// What restoring `record` would change now.
    pub fn plan(&self, record: &Record, now: &Now) -> Result<restore::Plan, CheckpointError> {
        let objects = self.objects();
        let trees = Trees::new(&objects);
        let target = trees
            .flat(&root_of(record)?)
            .map_err(CheckpointError::Object)?;
        Ok(restore::Plan::new(
            &objects,
            &target,
            record.git,
            &record.left_out,
            now.files(),
        ))
    }

    /// Restores the project to `record`, after a checkpoint of the project as
    /// it is (`before`, occasion [`Occasion::Undo`]), so the undo can itself be
    /// undone. Returns that checkpoint and what was restored. `confirmed` is
    /// the plan the person saw: if the project changed since so that the undo
    /// would now write or remove anything else, nothing is changed.
    pub fn undo(
        &self,
        record: &Record,
        confirmed: Option<&Restored>,
        before: &Call,
        rules: &Rules,
        deadline: Instant,
    ) -> Result<(Record, Restored), CheckpointError> {
        let taken = self.take(before, rules, deadline)?;
        let _held = lock::shared(&self.dir, deadline).map_err(CheckpointError::Lock)?;
        let objects = self.objects();
        let trees = Trees::new(&objects);
        let now = trees
            .flat(&root_of(&taken)?)
            .map_err(CheckpointError::Object)?;
        let target = trees
            .flat(&root_of(record)?)
            .map_err(CheckpointError::Object)?;
        let plan = restore::Plan::new(&objects, &target, record.git, &record.left_out, &now);
        // The plan the person confirmed, or none at all: the project may have
        // changed while they read it (a directory swapped for a symlink).
        if let Some(confirmed) = confirmed {
            let planned = plan.preview();
            if planned.written != confirmed.written || planned.removed != confirmed.removed {
                return Err(CheckpointError::Moved {
                    kept: taken.id.clone(),
                });
            }
        }
        let restored = plan
            .apply(&self.project, &objects)
            .map_err(CheckpointError::Restore)?;
        Ok((taken, restored))
    }

    /// Removes what `retention` does not keep, holding the store alone
    /// (waiting for checkpoints being taken until `deadline`).
    pub fn prune(
        &self,
        retention: &Retention,
        deadline: Instant,
    ) -> Result<Pruned, CheckpointError> {
        let _held = lock::exclusive(&self.dir, deadline).map_err(CheckpointError::Lock)?;
        self.prune_held(retention)
    }

    fn prune_held(&self, retention: &Retention) -> Result<Pruned, CheckpointError> {
        let objects = self.objects();
        let (pruned, reachable) = retention::prune(
            &objects,
            &self.records_dir(),
            retention,
            sandrail_event::clock::now(),
        )
        .map_err(|e| CheckpointError::store(&self.dir, e))?;
        if pruned.objects > 0 {
            let mut cache = StatCache::load(&self.dir.join("stat-cache"));
            cache.keep_digests(&reachable);
            let _ = cache.save();
        }
        clear_stale_temporaries(&self.dir.join("tmp"));
        let _ = std::fs::write(self.dir.join("pruned"), b"");
        Ok(pruned)
    }

    /// Prunes when the last prune is an hour old, if no checkpoint holds the
    /// store right now (it is tried again later otherwise).
    pub fn prune_if_due(&self, retention: &Retention) -> Option<Result<Pruned, CheckpointError>> {
        let last = std::fs::metadata(self.dir.join("pruned"))
            .and_then(|m| m.modified())
            .ok();
        if last.is_some_and(|t| t.elapsed().is_ok_and(|age| age < PRUNE_EVERY)) {
            return None;
        }
        if !self.dir.exists() {
            return None;
        }
        let held = lock::exclusive(&self.dir, Instant::now()).ok()?;
        let pruned = self.prune_held(retention);
        drop(held);
        Some(pruned)
    }

    /// Whether the project had fewer files than a walk on several threads is
    /// worth at its last checkpoint (the stat cache's size says, in one
    /// `stat`): a small one is cheaper taken on the caller's thread.
    pub fn is_small(&self) -> bool {
        std::fs::metadata(self.dir.join("stat-cache"))
            .map_or(true, |m| m.len() < walk::PARALLEL_FROM as u64 * 100)
    }

    /// Records why a checkpoint could not be taken, for `sandrail doctor`
    /// (best effort: a store that cannot be written cannot keep this either,
    /// and `doctor` finds that for itself).
    pub fn note_failure(&self, why: &str) {
        let unix = sandrail_event::clock::now();
        let note = serde_json::json!({
            "time": sandrail_event::clock::rfc3339(unix),
            "unix": unix,
            "order": now_nanos().to_string(),
            "why": why,
        });
        let _ = sandrail_files::write_atomically(
            &self.dir.join("last-failure"),
            note.to_string().as_bytes(),
        );
    }

    /// The last checkpoint that could not be taken: when (seconds since the
    /// epoch), and why, unless a checkpoint was taken since.
    pub fn last_failure(&self) -> Option<(u64, String)> {
        let bytes = sandrail_files::read_regular(&self.dir.join("last-failure"), 1 << 16).ok()?;
        let note: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        let order: u128 = note["order"].as_str()?.parse().ok()?;
        let newest = self.records().ok()?.last().map_or(0, |r| r.order);
        (order > newest)
            .then(|| Some((note["unix"].as_u64()?, note["why"].as_str()?.to_owned())))?
    }

    /// The bytes the store takes on disk.
    pub fn size(&self) -> u64 {
        size_of(&self.dir)
    }
}

/// Nanoseconds since the epoch by the system's clock: the order of what
/// happens within one second.
fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn root_of(record: &Record) -> Result<Digest, CheckpointError> {
    Digest::from_hex(&record.root).ok_or_else(|| CheckpointError::Damaged {
        id: record.id.clone(),
    })
}

/// Every project's store in `state`, with the project it names.
pub fn stores(state: &Path) -> Vec<Store> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(entries) = std::fs::read_dir(state.join(STORES)) else {
        return Vec::new();
    };
    let mut out: Vec<Store> = entries
        .flatten()
        .filter_map(|entry| {
            let project = std::fs::read(entry.path().join("project")).ok()?;
            Some(Store {
                dir: entry.path(),
                project: PathBuf::from(std::ffi::OsStr::from_bytes(&project)),
                state: state.to_path_buf(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.project.cmp(&b.project));
    out
}

/// The bytes every store in `state` takes.
pub fn total_size(state: &Path) -> u64 {
    size_of(&state.join(STORES))
}

fn size_of(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => size_of(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Temporary files a checkpoint left when it was killed, an hour on.
fn clear_stale_temporaries(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > PRUNE_EVERY);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A size as people read it: `512 B`, `3.1 KiB`, `12.0 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: &[&str] = &["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{}", store_message(dir, source))]
    Store {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the project {path}: {source}")]
    Project {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Lock(lock::LockError),
    #[error(
        "the checkpoint could not be finished before the deadline ({done} changed files hashed, which the next one need not hash again; {left} left)"
    )]
    OutOfTime { done: usize, left: usize },
    #[error("[checkpoints] ignore has a pattern that is not gitignore syntax ({0}): {1}")]
    Pattern(String, String),
    #[error(transparent)]
    Object(objects::ObjectError),
    #[error(transparent)]
    Restore(restore::RestoreError),
    #[error("there is no checkpoint of {project}: none was taken there, or all were pruned")]
    NoCheckpoint { project: PathBuf },
    #[error("no checkpoint of session {session} in {project}")]
    NoSessionCheckpoint { session: String, project: PathBuf },
    #[error(
        "nothing changed in session {session} since its first checkpoint: there is nothing to undo"
    )]
    NothingChanged { session: String },
    #[error(
        "no checkpoint of {project} has an id starting with '{id}' (`sandrail checkpoints` lists them)"
    )]
    UnknownId { id: String, project: PathBuf },
    #[error("'{id}' starts the ids of {} checkpoints ({}): give more of it", matches.len(), matches.join(", "))]
    Ambiguous { id: String, matches: Vec<String> },
    #[error("the checkpoint record {id} names no tree; it is damaged")]
    Damaged { id: String },
    #[error(
        "the project changed while the undo was being confirmed, so it would now write or remove other files than those shown; nothing was changed (the project as it is now is checkpoint {kept}). Run `sandrail undo` again to see the new plan"
    )]
    Moved { kept: String },
}

impl CheckpointError {
    pub fn store(dir: &Path, source: std::io::Error) -> CheckpointError {
        CheckpointError::Store {
            dir: dir.to_path_buf(),
            source,
        }
    }
}

fn store_message(dir: &Path, source: &std::io::Error) -> String {
    if source.kind() == std::io::ErrorKind::StorageFull {
        format!(
            "the checkpoint store {} is full ({source}): free space, or lower [checkpoints] keep_last and keep_days and run `sandrail checkpoints prune`",
            dir.display()
        )
    } else {
        format!(
            "cannot write the checkpoint store {}: {source}",
            dir.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(session: &str) -> Call<'_> {
        Call {
            session,
            occasion: Occasion::Call,
            harness: Some("claude"),
            tool: Some("Bash"),
            call: Some("rm -rf src"),
            tool_use_id: None,
        }
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    #[test]
    fn a_checkpoint_brings_back_what_was_changed_removed_and_added() {
        let dir = tempfile::tempdir().expect("dir");
        let project = dir.path().join("project");
        let state = dir.path().join("state");
        std::fs::create_dir_all(project.join("src/deep")).expect("dir");
        std::fs::write(project.join("src/lib.rs"), "fn kept() {}").expect("write");
        std::fs::write(project.join("src/deep/x.txt"), "x").expect("write");
        std::fs::write(project.join("notes.txt"), "notes").expect("write");
        std::fs::create_dir_all(project.join("node_modules/pkg")).expect("dir");
        std::fs::write(project.join("node_modules/pkg/index.js"), "big").expect("write");
        std::os::unix::fs::symlink("notes.txt", project.join("link")).expect("link");
        let store = Store::of(&state, &project);
        let rules = Rules::default();
        let first = store.take(&call("s1"), &rules, later()).expect("take");
        assert_eq!(first.files, 4, "node_modules is left out: {first:?}");

        std::fs::remove_dir_all(project.join("src")).expect("rm");
        std::fs::write(project.join("notes.txt"), "").expect("empty");
        std::fs::write(project.join("new.txt"), "new").expect("new");
        let now = store.now(&rules, later()).expect("now");
        assert_eq!(store.changes_since(&first, &now).expect("count").len(), 4);
        let target = store.default_target(None, &now).expect("target");
        assert_eq!(target.id, first.id);

        let before = Call {
            occasion: Occasion::Undo,
            ..call("s1")
        };
        let (undone, restored) = store
            .undo(&first, None, &before, &rules, later())
            .expect("undo");
        assert_eq!(restored.removed, vec!["new.txt".to_owned()]);
        assert_eq!(
            std::fs::read_to_string(project.join("src/lib.rs")).expect("read"),
            "fn kept() {}"
        );
        assert_eq!(
            std::fs::read_to_string(project.join("notes.txt")).expect("read"),
            "notes"
        );
        assert!(!project.join("new.txt").exists());
        assert!(project.join("node_modules/pkg/index.js").exists());

        // The undo is itself undone: the default target is now the
        // checkpoint taken before it.
        let now = store.now(&rules, later()).expect("now");
        assert_eq!(
            store.default_target(None, &now).expect("target").id,
            undone.id
        );
        store
            .undo(&undone, None, &before, &rules, later())
            .expect("undo the undo");
        assert_eq!(
            std::fs::read_to_string(project.join("new.txt")).expect("read"),
            "new"
        );
        assert!(!project.join("src").exists());
    }

    #[test]
    fn an_undo_writes_nothing_through_a_symlink_out_of_the_project() {
        let dir = tempfile::tempdir().expect("dir");
        let project = dir.path().join("project");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(project.join("src")).expect("dir");
        std::fs::create_dir_all(&outside).expect("dir");
        std::fs::write(project.join("src/a.txt"), "a").expect("write");
        let store = Store::of(&dir.path().join("state"), &project);
        let first = store
            .take(&call("s1"), &Rules::default(), later())
            .expect("take");
        std::fs::remove_dir_all(project.join("src")).expect("rm");
        std::os::unix::fs::symlink(&outside, project.join("src")).expect("link");
        let before = Call {
            occasion: Occasion::Undo,
            ..call("s1")
        };
        let (_, restored) = store
            .undo(&first, None, &before, &Rules::default(), later())
            .expect("undo");
        assert!(!outside.join("a.txt").exists(), "{restored:?}");
        assert_eq!(
            std::fs::read_to_string(project.join("src/a.txt")).expect("read"),
            "a",
            "{restored:?}"
        );
    }

    /// A symlink the ignore rules hide, put where a directory was, leading to
    /// ignored files elsewhere in the project: the undo writes nothing through
    /// it, and says what it left.
    #[test]
    fn an_undo_writes_nothing_through_a_symlink_within_the_project() {
        let dir = tempfile::tempdir().expect("dir");
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join("x")).expect("dir");
        std::fs::create_dir_all(project.join("data")).expect("dir");
        std::fs::write(project.join("x/secret.env"), "tiny").expect("write");
        std::fs::write(project.join("data/secret.env"), "the person's secret").expect("write");
        let rules = Rules {
            ignore: vec!["data/".into(), "x".into(), "!x/".into()],
            ..Rules::default()
        };
        let store = Store::of(&dir.path().join("state"), &project);
        let first = store.take(&call("s1"), &rules, later()).expect("take");
        std::fs::remove_dir_all(project.join("x")).expect("rm");
        std::os::unix::fs::symlink("data", project.join("x")).expect("link");
        let before = Call {
            occasion: Occasion::Undo,
            ..call("s1")
        };
        let (_, restored) = store
            .undo(&first, None, &before, &rules, later())
            .expect("undo");
        assert_eq!(
            std::fs::read_to_string(project.join("data/secret.env")).expect("read"),
            "the person's secret",
            "{restored:?}"
        );
        assert!(
            restored
                .left
                .iter()
                .any(|(path, why)| path == "x/secret.env" && why.contains("symlink")),
            "{restored:?}"
        );
    }

    /// What the checkpoint did not keep (over the cap) is never removed by
    /// an undo to it, though the project holds it now.
    #[test]
    fn an_undo_removes_nothing_its_checkpoint_left_out() {
        let dir = tempfile::tempdir().expect("dir");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).expect("dir");
        std::fs::write(project.join("big.bin"), "twenty bytes of data").expect("write");
        let rules = Rules {
            max_file_bytes: 10,
            ..Rules::default()
        };
        let store = Store::of(&dir.path().join("state"), &project);
        let first = store.take(&call("s1"), &rules, later()).expect("take");
        assert_eq!(first.left_out.len(), 1);
        std::fs::write(project.join("big.bin"), "small").expect("write");
        let now = store.now(&rules, later()).expect("now");
        let plan = store.plan(&first, &now).expect("plan").preview();
        assert!(plan.removed.is_empty(), "{plan:?}");
        assert!(plan.left.iter().any(|(p, _)| p == "big.bin"), "{plan:?}");
    }

    /// The plan the person confirmed, or nothing: a project that changed
    /// meanwhile so that the undo would do otherwise is left as it is.
    #[test]
    fn an_undo_that_would_do_other_than_what_was_confirmed_does_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).expect("dir");
        std::fs::write(project.join("a.txt"), "a").expect("write");
        let rules = Rules::default();
        let store = Store::of(&dir.path().join("state"), &project);
        let first = store.take(&call("s1"), &rules, later()).expect("take");
        std::fs::remove_file(project.join("a.txt")).expect("rm");
        let now = store.now(&rules, later()).expect("now");
        let confirmed = store.plan(&first, &now).expect("plan").preview();
        // Meanwhile a file appears that the undo would remove.
        std::fs::write(project.join("b.txt"), "b").expect("write");
        let before = Call {
            occasion: Occasion::Undo,
            ..call("s1")
        };
        let moved = store.undo(&first, Some(&confirmed), &before, &rules, later());
        assert!(
            matches!(moved, Err(CheckpointError::Moved { .. })),
            "{moved:?}"
        );
        assert!(!project.join("a.txt").exists() && project.join("b.txt").exists());
    }

    /// A repository git would recognise, made by hand.
    fn repository_at(dir: &Path) {
        std::fs::create_dir_all(dir.join(".git/objects")).expect("dir");
        std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
    }

    fn kept_paths(record: &Record, store: &Store) -> Vec<String> {
        let objects = store.objects();
        let trees = Trees::new(&objects);
        trees
            .flat(&root_of(record).expect("root"))
            .expect("flat")
            .keys()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| !p.starts_with(".git/"))
            .collect()
    }

    /// An ignore file that is a FIFO (which would wedge the walk) or a
    /// symlink (which git does not follow): git's rules are set aside, the
    /// checkpoint keeps everything, promptly, and says so.
    #[test]
    fn an_ignore_file_that_is_not_a_regular_file_neither_wedges_nor_empties_a_checkpoint() {
        let dir = tempfile::tempdir().expect("dir");
        let project = dir.path().join("project");
        repository_at(&project);
        std::fs::create_dir_all(project.join("vendor/lib")).expect("dir");
        std::fs::write(project.join("vendor/lib/code.c"), "int x;").expect("write");
        std::fs::write(project.join("work.txt"), "work").expect("write");
        let fifo = std::process::Command::new("mkfifo")
            .arg(project.join("vendor/lib/.gitignore"))
            .status();
        if !fifo.is_ok_and(|s| s.success()) {
            eprintln!("mkfifo is not available: skipped");
            return;
        }
        let store = Store::of(&dir.path().join("state"), &project);
        let started = Instant::now();
        let taken = store
            .take(
                &call("s1"),
                &Rules::default(),
                Instant::now() + Duration::from_secs(5),
            )
            .expect("take");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "the walk waited on the FIFO"
        );
        assert!(kept_paths(&taken, &store).contains(&"vendor/lib/code.c".to_owned()));
        assert!(
            taken
                .warnings
                .iter()
                .any(|w| w.contains("vendor/lib/.gitignore")),
            "{taken:?}"
        );

        // A symlinked `.gitignore` holding `*`.
        std::fs::remove_file(project.join("vendor/lib/.gitignore")).expect("rm");
        std::fs::write(project.join("rules"), "*\n").expect("write");
        std::os::unix::fs::symlink("rules", project.join(".gitignore")).expect("link");
        let taken = store
            .take(&call("s1"), &Rules::default(), later())
            .expect("take");
        assert!(
            kept_paths(&taken, &store).contains(&"work.txt".to_owned()),
            "{taken:?}"
        );
        assert!(
            taken.warnings.iter().any(|w| w.contains(".gitignore")),
            "{taken:?}"
        );
    }

    /// An empty `.git` is no repository: a `.gitignore` beside it is not
    /// git's, and leaves out nothing.
    #[test]
    fn a_gitignore_beside_an_empty_dot_git_leaves_nothing_out() {
        let dir = tempfile::tempdir().expect("dir");
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join(".git")).expect("dir");
        std::fs::write(project.join(".gitignore"), "*\n").expect("write");
        std::fs::write(project.join("work.txt"), "work").expect("write");
        let store = Store::of(&dir.path().join("state"), &project);
        let taken = store
            .take(&call("s1"), &Rules::default(), later())
            .expect("take");
        assert!(
            kept_paths(&taken, &store).contains(&"work.txt".to_owned()),
            "{taken:?}"
        );
        // A real repository's `.gitignore` does leave out what it names.
        repository_at(&project);
        let taken = store
            .take(&call("s1"), &Rules::default(), later())
            .expect("take");
        assert!(
            !kept_paths(&taken, &store).contains(&"work.txt".to_owned()),
            "{taken:?}"
        );
    }

    /// A file whose modification time is set into the future is cached like
    /// any other: it cannot make every checkpoint hash it again.
    #[test]
    fn a_modification_time_in_the_future_does_not_keep_a_file_from_the_cache() {
        let dir = tempfile::tempdir().expect("dir");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).expect("dir");
        let file = project.join("future.txt");
        std::fs::write(&file, "from the future").expect("write");
        let future = std::time::SystemTime::now() + Duration::from_secs(10 * 365 * 86_400);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .and_then(|f| f.set_modified(future))
            .expect("set the time");
        // Its change time is now: past the racy window once 2 s have gone.
        std::thread::sleep(Duration::from_millis(2100));
        let store = Store::of(&dir.path().join("state"), &project);
        store
            .take(&call("s1"), &Rules::default(), later())
            .expect("take");
        let cache = StatCache::load(&store.dir().join("stat-cache"));
        assert_eq!(cache.len(), 1, "the file was not cached");
    }

    #[test]
    fn pruning_keeps_the_newest_of_each_session_and_what_they_reach() {
        let dir = tempfile::tempdir().expect("dir");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).expect("dir");
        let store = Store::of(&dir.path().join("state"), &project);
        let rules = Rules::default();
        for n in 0..4 {
            std::fs::write(project.join("f"), format!("version {n}")).expect("write");
            store.take(&call("s1"), &rules, later()).expect("take");
        }
        let retention = Retention {
            keep_last: 2,
            keep_for: Duration::ZERO,
        };
        let pruned = store.prune(&retention, later()).expect("prune");
        assert_eq!(pruned.checkpoints, 2);
        assert!(pruned.objects >= 2, "{pruned:?}");
        let left = store.records().expect("records");
        assert_eq!(left.len(), 2);
        let now = store.now(&rules, later()).expect("now");
        for record in &left {
            store
                .changes_since(record, &now)
                .expect("its objects are all there");
        }
    }
}
