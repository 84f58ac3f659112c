//! The policy in force: what a session is judged by, and what only a person
//! loosens.
//!
//! At a session's first event sandrail captures the policy it starts with — the
//! config's text, its lock and mandate, and a copy of every component and data
//! file it references ([`manifest`], [`blobs`]) — and that is the session's policy
//! until it ends, whatever happens to the files meanwhile. An event that finds the
//! files differing says so once per change.
//!
//! Across sessions a ratchet holds ([`ratchet`]): per project sandrail keeps the
//! last policy it accepted. A new session whose policy only adds guardrails takes
//! it; any other change is held, the accepted policy stays in force, and the
//! person is told how to accept it (`sandrail trust`). With nothing accepted yet
//! the first policy seen is accepted, unless it judges nothing or switches
//! self-protection off.
//!
//! None of this depends on seeing how a file was written: it compares contents.

pub mod blobs;
pub mod manifest;
pub mod ratchet;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{Config, Located};
use crate::timeouts::HookTimeouts;
use sandrail_files::Identity;

pub use ratchet::Loads;

use blobs::Blobs;
use manifest::{Captured, Manifest};

/// The extension of a session's policy record, beside its database.
pub const SESSION_RECORD: &str = sandrail_store::POLICY_RECORD;
/// Where each project's accepted policy is kept, under the state directory.
const PROJECTS_DIR: &str = "policy/projects";
/// Copies no record refers to are removed once they are this old (seconds): a
/// session being started may have kept a copy and not yet written its record.
const GARBAGE_AGE: u64 = 3600;

/// A file as a policy snapshot holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frozen {
    /// The copy kept under its sha256.
    Copy { blob: PathBuf, sha256: String },
    /// It could not be read when the policy was captured.
    Unreadable(String),
}

impl Frozen {
    /// The bytes as the policy holds them, at most `max`.
    pub fn read(&self, max: u64) -> Result<Vec<u8>, String> {
        match self {
            Frozen::Copy { blob, sha256 } => {
                blobs::read_verified(blob, sha256, max).map_err(|e| e.to_string())
            }
            // As it was when the session's policy was captured.
            Frozen::Unreadable(why) => Err(why.clone()),
        }
    }

    /// [`Frozen::read`], with the sha256 the bytes were just checked against:
    /// hashing a large component once per event is enough.
    pub fn read_hashed(&self, max: u64) -> Result<(Vec<u8>, String), String> {
        let bytes = self.read(max)?;
        match self {
            Frozen::Copy { sha256, .. } => Ok((bytes, sha256.clone())),
            Frozen::Unreadable(why) => Err(why.clone()),
        }
    }
}

/// Where a new session's policy comes from.
#[derive(Debug, Clone, Default)]
pub enum Source {
    /// The project's `sandrail.toml` (or `SANDRAIL_CONFIG`, or the embedded
    /// default), through the project's ratchet.
    #[default]
    Project,
    /// One root-owned config for every project (managed mode): taken as it is,
    /// provided every file it names is root's alone.
    Managed(PathBuf),
}

impl Source {
    fn locate(&self, project: Option<&Path>) -> Result<Located, String> {
        match self {
            Source::Project => Config::locate(project).map_err(|e| e.to_string()),
            Source::Managed(config) => Ok(Located::File(config.clone())),
        }
    }
}

/// What a session's events are judged by.
#[derive(Debug)]
pub struct InForce {
    pub config: Config,
    /// The policy's id, when it is one this state directory keeps.
    pub id: Option<String>,
    /// What the person must hear: said on stderr, as a `systemMessage` and in
    /// the receipt.
    pub alerts: Vec<String>,
    /// The transcript path of the session's first event: a Stop naming another
    /// is not the harness's.
    pub transcript: Option<String>,
    /// Whether this is the session's first event (what is said once per
    /// session is said now).
    pub started: bool,
    /// How long the harness waits for the hook, as the session started.
    pub timeouts: HookTimeouts,
}

/// A session's policy, kept beside its database.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The project it belongs to (whose ratchet it started from).
    #[serde(default)]
    pub project: Option<PathBuf>,
    /// The policy in force.
    pub policy: Manifest,
    /// What the policy on disk changed that the session did not take, at its start.
    #[serde(default)]
    pub held: Vec<String>,
    /// The files on disk as last seen.
    #[serde(default)]
    pub seen: Seen,
    /// The transcript path of its first event.
    #[serde(default)]
    pub transcript: Option<String>,
    /// How long the harness waits for the hook, read from its registrations
    /// at the session's start.
    #[serde(default)]
    pub timeouts: HookTimeouts,
}

/// The policy files on disk as a session last saw them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Seen {
    /// The config file found (none: the embedded default).
    pub config: Option<PathBuf>,
    /// Each file's identity (none: it did not exist).
    pub files: BTreeMap<PathBuf, Option<Identity>>,
    /// The id of the policy on disk, when it differs from the one in force.
    pub differs: Option<String>,
    /// What differs, in words.
    #[serde(default)]
    pub changes: Vec<String>,
}

/// A project's accepted policy.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProjectRecord {
    pub project: PathBuf,
    pub policy: Manifest,
    /// When, RFC 3339.
    pub accepted_at: String,
    /// How: `first-seen`, `addition`, `unchanged` or `person`.
    pub how: String,
}

/// The policy a session's event is judged by: the session's snapshot, or — at its
/// first event — what the project's ratchet allows of the files on disk, under
/// the harness's hook `timeouts` (read only then).
pub fn in_force(
    source: &Source,
    loads: &dyn Loads,
    state: Option<&Path>,
    project: Option<&Path>,
    session: &str,
    transcript: Option<&str>,
    timeouts: &dyn Fn() -> HookTimeouts,
) -> InForce {
    let Some(state) = state else {
        let timeouts = timeouts();
        let (config, alert) = stateless(source, loads, project, &timeouts);
        eprintln!(
            "sandrail: no usable state directory, so this session's policy cannot be kept and nothing accepted can be read: the policy on disk is judged only where it adds to the embedded default"
        );
        return InForce {
            config,
            id: None,
            alerts: alert.into_iter().collect(),
            transcript: None,
            started: true,
            timeouts,
        };
    };
    let blobs = Blobs::new(state);
    let path = sandrail_store::session_file(state, session, SESSION_RECORD);
    if let Some(record) = read_json::<SessionRecord>(&path) {
        return continuing(source, loads, &blobs, &path, record, project);
    }
    let (record, alerts) = start(
        source,
        loads,
        state,
        &blobs,
        project,
        transcript,
        timeouts(),
    );
    match create(&path, &record) {
        Ok(true) => {}
        // Another hook of the same session started it first: its record stands.
        Ok(false) => {
            if let Some(theirs) = read_json::<SessionRecord>(&path) {
                return continuing(source, loads, &blobs, &path, theirs, project);
            }
        }
        Err(e) => eprintln!(
            "sandrail: cannot keep this session's policy in {}: {e}",
            path.display()
        ),
    }
    started(&blobs, record, alerts)
}

/// The policy of an event with no state directory to keep or read policies in:
/// as for a project with nothing accepted, the policy on disk where it only adds
/// to the embedded default (root's as it is, in managed mode), else the embedded
/// default and why. Losing the state directory must not make the files on disk
/// judge unchecked.
fn stateless(
    source: &Source,
    loads: &dyn Loads,
    project: Option<&Path>,
    timeouts: &HookTimeouts,
) -> (Config, Option<String>) {
    let prospect = prospect(source, loads, None, project, timeouts);
    let alert = match &prospect.standing {
        Standing::Default { why } => Some(format!(
            "sandrail: {} {why}, and with no usable state directory nothing a person accepted can be read: the embedded default is in force",
            prospect.on_disk.origin()
        )),
        Standing::Taken { .. } | Standing::Held { .. } => None,
    };
    (prospect.config, alert)
}

/// What a new session of a project would be judged by if it started now, as
/// the hook decides it at a session's first event ([`prospect`]).
#[derive(Debug)]
pub struct Prospect {
    /// The config that would run.
    pub config: Config,
    /// The policy that would run.
    pub policy: Manifest,
    /// The policy on disk.
    pub on_disk: Manifest,
    /// The project's accepted policy, if it has one.
    pub accepted: Option<ProjectRecord>,
    /// How the policy on disk stands: taken, or held and why.
    pub standing: Standing,
    /// What could not be read back of the policy that would run (its copies),
    /// for the person: the embedded default runs instead.
    pub alerts: Vec<String>,
}

/// How the policy on disk stands for a new session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// It is what runs: `unchanged` (it is the accepted one, or differs only in
    /// comments), `addition` (it only adds guardrails), `first-seen` (nothing
    /// accepted yet, and it only adds to the embedded default) or `managed`.
    Taken { how: &'static str },
    /// It is held: the accepted policy runs instead; what it changes.
    Held { changes: Vec<String> },
    /// It is held and nothing accepted can run instead: the embedded default
    /// runs; why.
    Default { why: String },
}

impl Standing {
    /// Whether the policy on disk is not the one that runs.
    pub fn is_held(&self) -> bool {
        !matches!(self, Standing::Taken { .. })
    }
}

/// The policy a new session of `project` would start with now, decided exactly
/// as the hook decides it at a session's first event (the same capture, the
/// same ratchet against the project's accepted policy in `state`, under the
/// harness's hook `timeouts`), keeping and accepting nothing: what `list` and
/// `audit` show is what would run, not merely what is on disk.
pub fn prospect(
    source: &Source,
    loads: &dyn Loads,
    state: Option<&Path>,
    project: Option<&Path>,
    timeouts: &HookTimeouts,
) -> Prospect {
    let decided = decide_new_session(source, loads, state, project, None, timeouts);
    let Decided {
        captured,
        accepted,
        decision,
        ..
    } = decided;
    let mut alerts = Vec::new();
    let (policy, config, standing) = match (decision, captured.config) {
        (Decision::Take(how), Ok(config)) => {
            (captured.manifest.clone(), config, Standing::Taken { how })
        }
        (Decision::Hold { keep, changes }, _) => {
            // As a session's first event loads it: from the copies kept.
            let loaded = state.map(|state| manifest::load(&keep, &Blobs::new(state)));
            let config = match loaded {
                Some(Ok(config)) => config,
                Some(Err(e)) => {
                    alerts.push(format!(
                        "the accepted policy ({}, {}) cannot be read back from its copies ({e}), so a new session would run the embedded default; run `sandrail trust` in a terminal to take the policy on disk",
                        keep.id(),
                        keep.origin()
                    ));
                    embedded()
                }
                None => embedded(),
            };
            (*keep, config, Standing::Held { changes })
        }
        (Decision::Default(why), _) => (embedded_manifest(), embedded(), Standing::Default { why }),
        // A decision to take a config that cannot be used is never made.
        (Decision::Take(_), Err(why)) => (
            embedded_manifest(),
            embedded(),
            Standing::Default {
                why: format!("cannot be used ({why})"),
            },
        ),
    };
    Prospect {
        config,
        policy,
        on_disk: captured.manifest,
        accepted,
        standing,
        alerts,
    }
}

/// The policy on disk, the project's accepted one and what the ratchet makes of
/// them: the one decision a new session's policy comes from.
struct Decided {
    located: Result<Located, String>,
    captured: Captured,
    accepted: Option<ProjectRecord>,
    decision: Decision,
}

/// Captures the policy on disk (keeping copies in `keep`, when given) and
/// decides it against the project's accepted policy in `state` (none without
/// one, as for a project with nothing accepted).
fn decide_new_session(
    source: &Source,
    loads: &dyn Loads,
    state: Option<&Path>,
    project: Option<&Path>,
    keep: Option<&Blobs>,
    timeouts: &HookTimeouts,
) -> Decided {
    let located = source.locate(project);
    let captured = capture_located(&located, keep);
    let accepted = match (source, state, project) {
        (Source::Project, Some(state), Some(project)) => accepted(state, project),
        _ => None,
    };
    let decision = match source {
        Source::Project => {
            let blobs = state.map(Blobs::new);
            let against = accepted.as_ref().zip(blobs.as_ref());
            decide(against, &captured, loads, timeouts)
        }
        Source::Managed(_) => decide_managed(&captured),
    };
    Decided {
        located,
        captured,
        accepted,
        decision,
    }
}

/// The session's first event: its policy as started, with what the person must
/// hear about it.
fn started(blobs: &Blobs, record: SessionRecord, alerts: Vec<String>) -> InForce {
    let mut alerts = alerts;
    let config = load_or_default(blobs, &record.policy, &mut alerts);
    InForce {
        config,
        id: Some(record.policy.id()),
        alerts,
        transcript: record.transcript,
        started: true,
        timeouts: record.timeouts,
    }
}

/// A later event: the session's policy, and a word when the files on disk
/// differ from it in a way not yet reported.
fn continuing(
    source: &Source,
    loads: &dyn Loads,
    blobs: &Blobs,
    path: &Path,
    mut record: SessionRecord,
    project: Option<&Path>,
) -> InForce {
    let mut alerts = Vec::new();
    let config = load_or_default(blobs, &record.policy, &mut alerts);
    match look_at_disk(source, loads, &mut record, project, blobs) {
        Looked::Unchanged => {}
        Looked::Changed(report) => {
            alerts.extend(report);
            write_json(path, &record);
        }
    }
    InForce {
        config,
        id: Some(record.policy.id()),
        alerts,
        transcript: record.transcript,
        started: false,
        timeouts: record.timeouts,
    }
}

/// The session's policy as a config; one whose copies cannot be read leaves the
/// embedded default in force, and says so.
fn load_or_default(blobs: &Blobs, manifest: &Manifest, alerts: &mut Vec<String>) -> Config {
    match manifest::load(manifest, blobs) {
        Ok(config) => config,
        Err(e) => {
            alerts.push(format!(
                "sandrail: this session's policy ({}) cannot be read back from its snapshot: {e}. The embedded default is in force; run `sandrail trust` in a terminal to take the policy on disk.",
                manifest.origin()
            ));
            embedded()
        }
    }
}

/// Captures the policy on disk for a new session and lets the project's ratchet
/// decide what is in force.
fn start(
    source: &Source,
    loads: &dyn Loads,
    state: &Path,
    blobs: &Blobs,
    project: Option<&Path>,
    transcript: Option<&str>,
    timeouts: HookTimeouts,
) -> (SessionRecord, Vec<String>) {
    let Decided {
        located,
        captured,
        accepted,
        decision,
    } = decide_new_session(source, loads, Some(state), project, Some(blobs), &timeouts);
    let mut alerts = Vec::new();
    let mut held = Vec::new();
    let policy = match decision {
        Decision::Take(how) => {
            if let Source::Project = source
                && let Some(project) = project
                && accepted
                    .as_ref()
                    .is_none_or(|a| a.policy != captured.manifest)
                && let Err(e) = accept(state, project, &captured.manifest, how)
            {
                eprintln!(
                    "sandrail: cannot keep the project's accepted policy in {}: {e}",
                    state.display()
                );
            }
            captured.manifest.clone()
        }
        Decision::Hold { keep, changes } => {
            alerts.push(format!(
                "sandrail: the policy on disk ({}) is not the one accepted for this project, and this session does not take it: {}. The accepted policy ({}, {}) is in force. If you made this change, run `sandrail trust` in a terminal to accept it.",
                captured.manifest.origin(),
                changes.join("; "),
                keep.id(),
                keep.origin(),
            ));
            held = changes;
            *keep
        }
        Decision::Default(why) => {
            alerts.push(match source {
                Source::Project => format!(
                    "sandrail: {} {why}, so this project takes it only from a person: the embedded default is in force. To use it anyway, run `sandrail trust` in a terminal.",
                    captured.manifest.origin()
                ),
                Source::Managed(_) => format!(
                    "sandrail: the managed policy {} {why}, so the embedded default is in force for this session. Make every file of the policy root's alone (owned by root, writable by nobody else).",
                    captured.manifest.origin()
                ),
            });
            held = vec![why];
            embedded_manifest()
        }
    };
    let differs = (policy != captured.manifest).then(|| captured.manifest.id());
    let mut record = record(project, policy, held.clone(), transcript);
    record.timeouts = timeouts;
    record.seen = Seen {
        config: located_path(&located),
        files: captured.seen,
        differs,
        changes: held,
    };
    (record, alerts)
}

fn record(
    project: Option<&Path>,
    policy: Manifest,
    held: Vec<String>,
    transcript: Option<&str>,
) -> SessionRecord {
    SessionRecord {
        project: project.map(Path::to_path_buf),
        policy,
        held,
        seen: Seen::default(),
        transcript: transcript.map(str::to_owned),
        timeouts: HookTimeouts::default(),
    }
}

/// What a new session does with the policy on disk.
enum Decision {
    /// Takes it (and the project accepts it), saying how.
    Take(&'static str),
    /// Keeps the accepted policy; what the one on disk changes.
    Hold {
        keep: Box<Manifest>,
        changes: Vec<String>,
    },
    /// Nothing accepted yet and this one may not be the first: the embedded
    /// default, and why.
    Default(String),
}

/// Managed mode: root's policy is taken as it is, unless a file of it could
/// have been changed by someone else (then the embedded default, and why), or
/// it cannot be used.
fn decide_managed(captured: &Captured) -> Decision {
    if let Err(why) = &captured.config {
        return Decision::Default(format!("cannot be used ({why})"));
    }
    match crate::managed::policy_not_root_owned(captured.seen.keys()) {
        Some(why) => Decision::Default(format!("is not root's alone: {why}")),
        None => Decision::Take("managed"),
    }
}

/// Why root's policy at `config` would not be taken by a new session, if it
/// would not: a managed server says so before it listens.
pub fn managed_unfit(config: &Path) -> Option<String> {
    let captured = manifest::capture(&Located::File(config.to_path_buf()), None);
    match decide_managed(&captured) {
        Decision::Default(why) => Some(why),
        Decision::Take(_) | Decision::Hold { .. } => None,
    }
}

/// The ratchet for a project's new session: the policy on disk against the
/// project's accepted one (with the copies it is kept in), or against the
/// embedded default when nothing is accepted.
fn decide(
    accepted: Option<(&ProjectRecord, &Blobs)>,
    captured: &Captured,
    loads: &dyn Loads,
    timeouts: &HookTimeouts,
) -> Decision {
    let config = match &captured.config {
        Ok(config) => config,
        Err(why) => {
            return match accepted {
                Some((accepted, _)) => Decision::Hold {
                    keep: Box::new(accepted.policy.clone()),
                    changes: vec![format!("it cannot be used: {why}")],
                },
                None => Decision::Default(format!("cannot be used ({why})")),
            };
        }
    };
    let Some((accepted, blobs)) = accepted else {
        return first_policy(captured, config, loads, timeouts);
    };
    if accepted.policy == captured.manifest {
        return Decision::Take("unchanged");
    }
    let changes = match compare_with(&accepted.policy, captured, blobs, loads, timeouts) {
        Ok(c) if c.loosens_nothing() && c.added.is_empty() => return Decision::Take("unchanged"),
        Ok(c) if c.loosens_nothing() => return Decision::Take("addition"),
        Ok(c) => c.changes,
        Err(why) => vec![format!(
            "the accepted policy cannot be compared with it ({why})"
        )],
    };
    Decision::Hold {
        keep: Box::new(accepted.policy.clone()),
        changes,
    }
}

/// A project with nothing accepted: the embedded default is its floor. The
/// policy on disk is taken (and accepted) where the ratchet would take it over
/// the embedded default — the same entries, unchanged, then only additions —
/// and otherwise waits for a person, the embedded default in force meanwhile.
/// So a fresh state directory, or a config an agent wrote before anything was
/// accepted, never judges less than the embedded default.
fn first_policy(
    captured: &Captured,
    config: &Config,
    loads: &dyn Loads,
    timeouts: &HookTimeouts,
) -> Decision {
    let floor = embedded();
    let floor_manifest = embedded_manifest();
    if captured.manifest == floor_manifest {
        return Decision::Take("first-seen");
    }
    let comparison = ratchet::compare(
        &ratchet::Side {
            manifest: &floor_manifest,
            text: crate::config::EMBEDDED_DEFAULT,
            config: &floor,
        },
        &ratchet::Side {
            manifest: &captured.manifest,
            text: captured.text.as_deref().unwrap_or(""),
            config,
        },
        loads,
        timeouts,
    );
    if comparison.loosens_nothing() {
        Decision::Take("first-seen")
    } else {
        Decision::Default(format!(
            "does more than add guardrails to the embedded default ({})",
            comparison.changes.join("; ")
        ))
    }
}

/// How the policy on disk stands against `accepted`, under the harness's hook
/// `timeouts`.
pub fn compare_with(
    accepted: &Manifest,
    captured: &Captured,
    blobs: &Blobs,
    loads: &dyn Loads,
    timeouts: &HookTimeouts,
) -> Result<ratchet::Comparison, String> {
    let config = captured.config.as_ref().map_err(Clone::clone)?;
    let old_config = manifest::load(accepted, blobs).map_err(|e| e.to_string())?;
    let old_text = manifest::text(accepted, blobs).map_err(|e| e.to_string())?;
    let new_text = captured.text.as_deref().unwrap_or("");
    Ok(ratchet::compare(
        &ratchet::Side {
            manifest: accepted,
            text: &old_text,
            config: &old_config,
        },
        &ratchet::Side {
            manifest: &captured.manifest,
            text: new_text,
            config,
        },
        loads,
        timeouts,
    ))
}

/// What a look at the policy files on disk found.
enum Looked {
    /// Nothing was written since the last look.
    Unchanged,
    /// Something was: the record's view is brought up to date, with the report
    /// for the person when the files now differ from the session's policy in a
    /// way not yet reported.
    Changed(Option<String>),
}

/// Looks at the policy files on disk. Only when one of them was written since
/// the last look (its identity moved, or the config is found elsewhere) are they
/// read and compared with the session's policy.
fn look_at_disk(
    source: &Source,
    loads: &dyn Loads,
    record: &mut SessionRecord,
    project: Option<&Path>,
    blobs: &Blobs,
) -> Looked {
    let located = source.locate(project);
    let unchanged = located.is_ok()
        && located_path(&located) == record.seen.config
        && record
            .seen
            .files
            .iter()
            .all(|(file, identity)| same_identity(file, identity.as_ref()));
    if unchanged {
        return Looked::Unchanged;
    }
    let captured = capture_located(&located, None);
    record.seen.config = located_path(&located);
    record.seen.files = captured.seen.clone();
    if captured.manifest == record.policy {
        record.seen.differs = None;
        record.seen.changes.clear();
        return Looked::Changed(None);
    }
    let disk = captured.manifest.id();
    if record.seen.differs.as_deref() == Some(disk.as_str()) {
        return Looked::Changed(None);
    }
    record.seen.differs = Some(disk);
    let (changes, taken) =
        match compare_with(&record.policy, &captured, blobs, loads, &record.timeouts) {
            Ok(c) if c.changes.is_empty() && c.added.is_empty() => {
                // Comments or layout only: nothing to say.
                record.seen.changes.clear();
                return Looked::Changed(None);
            }
            Ok(c) => {
                let taken = c.loosens_nothing();
                let mut said = c.changes;
                if !c.added.is_empty() {
                    said.push(format!("adds {}", quoted(&c.added)));
                }
                (said, taken)
            }
            Err(why) => (vec![why], false),
        };
    record.seen.changes = changes.clone();
    let next = if let Source::Managed(_) = source {
        "New sessions take it."
    } else if taken {
        "New sessions take it: it only adds guardrails."
    } else {
        "New sessions keep the accepted policy until a person runs `sandrail trust` in a terminal."
    };
    Looked::Changed(Some(format!(
        "sandrail: the policy on disk ({}) changed since this session started ({}); this session keeps the policy it started with ({}). {next}",
        captured.manifest.origin(),
        changes.join("; "),
        record.policy.id(),
    )))
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn same_identity(file: &Path, identity: Option<&Identity>) -> bool {
    match (Identity::of(file).ok(), identity) {
        (None, None) => true,
        (Some(now), Some(then)) => now.same(then),
        _ => false,
    }
}

fn capture_located(located: &Result<Located, String>, blobs: Option<&Blobs>) -> Captured {
    match located {
        Ok(located) => manifest::capture(located, blobs),
        Err(why) => Captured {
            manifest: Manifest {
                config: manifest::ConfigRef::File(manifest::FileRef {
                    path: PathBuf::from(std::env::var_os("SANDRAIL_CONFIG").unwrap_or_default()),
                    content: manifest::Content::Unreadable(why.clone()),
                }),
                lock: None,
                mandate: None,
                components: Vec::new(),
                data: Vec::new(),
            },
            seen: BTreeMap::new(),
            text: None,
            config: Err(why.clone()),
        },
    }
}

fn located_path(located: &Result<Located, String>) -> Option<PathBuf> {
    match located {
        Ok(Located::File(path)) => Some(path.clone()),
        _ => None,
    }
}

/// The project's accepted policy: its own, else the nearest enclosing
/// directory's (a subdirectory starts from its parent's ratchet).
pub fn accepted(state: &Path, project: &Path) -> Option<ProjectRecord> {
    project
        .ancestors()
        .find_map(|dir| read_json::<ProjectRecord>(&project_record(state, dir)))
}

/// The config of the project's accepted policy, if it has one that can be read.
pub fn accepted_config(state: &Path, project: &Path) -> Option<Config> {
    let record = accepted(state, project)?;
    manifest::load(&record.policy, &Blobs::new(state)).ok()
}

/// The project a person means from `dir`: the nearest enclosing one with an
/// accepted policy, else the directory of the config found from there, else
/// `dir` itself. (A terminal has no `CLAUDE_PROJECT_DIR`, and a person may stand
/// in a subdirectory.)
pub fn project_for(state: &Path, dir: &Path) -> PathBuf {
    if let Some(record) = accepted(state, dir) {
        return record.project;
    }
    match Config::locate(Some(dir)) {
        Ok(Located::File(config)) => config
            .parent()
            .filter(|parent| dir.starts_with(parent))
            .map_or_else(|| dir.to_path_buf(), Path::to_path_buf),
        _ => dir.to_path_buf(),
    }
}

/// Accepts `policy` for `project`: new sessions there start from it. Fails when
/// the record could not be written, so nobody is told it was accepted.
pub fn accept(state: &Path, project: &Path, policy: &Manifest, how: &str) -> std::io::Result<()> {
    let record = ProjectRecord {
        project: project.to_path_buf(),
        policy: policy.clone(),
        accepted_at: sandrail_event::clock::rfc3339(sandrail_event::clock::now()),
        how: how.to_owned(),
    };
    try_write_json(&project_record(state, project), &record)
}

/// The record of a project's accepted policy.
fn project_record(state: &Path, project: &Path) -> PathBuf {
    let key = &sandrail_event::sha256_hex(project.to_string_lossy().as_bytes())[..32];
    state.join(PROJECTS_DIR).join(format!("{key}.json"))
}

/// The policy on disk for `project`, captured (keeping copies when `blobs` is
/// given).
pub fn on_disk(project: Option<&Path>, blobs: Option<&Blobs>) -> Captured {
    capture_located(&Config::locate(project).map_err(|e| e.to_string()), blobs)
}

/// A session's policy record, if it has one.
pub fn session_record(state: &Path, session: &str) -> Option<SessionRecord> {
    read_json(&sandrail_store::session_file(
        state,
        session,
        SESSION_RECORD,
    ))
}

/// The config a session is judged by, read back from its policy's copies, if
/// it has a record that can be.
pub fn session_config(state: &Path, session: &str) -> Option<Config> {
    let record = session_record(state, session)?;
    manifest::load(&record.policy, &Blobs::new(state)).ok()
}

/// Puts `policy` in force for every session of `project` that has a record:
/// what a person accepted applies from their next event. Returns how many, or
/// the first record that could not be rewritten.
pub fn retake(state: &Path, project: &Path, policy: &Manifest) -> std::io::Result<usize> {
    let dir = state.join(sandrail_store::SESSIONS_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(0);
    };
    let mut count = 0;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != SESSION_RECORD) {
            continue;
        }
        let Some(mut record) = read_json::<SessionRecord>(&path) else {
            continue;
        };
        if record.project.as_deref() != Some(project) {
            continue;
        }
        record.policy = policy.clone();
        record.held.clear();
        record.seen = Seen::default();
        try_write_json(&path, &record)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        count += 1;
    }
    Ok(count)
}

/// Removes the copies no session or project refers to any more.
pub fn collect_garbage(state: &Path, now: u64) {
    let blobs = Blobs::new(state);
    let mut kept = std::collections::BTreeSet::new();
    let records = [
        state.join(sandrail_store::SESSIONS_DIR),
        state.join(PROJECTS_DIR),
    ];
    for dir in records {
        for entry in std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            let path = entry.path();
            let manifest = match path.extension().and_then(|e| e.to_str()) {
                Some(SESSION_RECORD) => read_json::<SessionRecord>(&path).map(|r| r.policy),
                Some("json") => read_json::<ProjectRecord>(&path).map(|r| r.policy),
                _ => None,
            };
            if let Some(manifest) = manifest {
                kept.extend(manifest.shas().map(str::to_owned));
            }
        }
    }
    for sha in blobs.all() {
        let old = std::fs::metadata(blobs.path(&sha))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|m| now.saturating_sub(m.as_secs()) > GARBAGE_AGE);
        if old && !kept.contains(&sha) {
            blobs.remove(&sha);
        }
    }
}

/// The config on disk, or the embedded default when it cannot be used (as
/// without a state directory nothing can be held).
pub fn from_disk(project: Option<&Path>) -> Config {
    match Config::discover(project) {
        Ok(config) => config,
        Err(e) => {
            eprintln!(
                "sandrail: {e}; the embedded default is in force until it is fixed (run `sandrail check-config`)"
            );
            embedded()
        }
    }
}

fn embedded() -> Config {
    #[allow(clippy::expect_used)]
    Config::embedded()
        .expect("the embedded default is part of the binary; config::tests::embedded_default_is_valid parses it")
}

fn embedded_manifest() -> Manifest {
    manifest::capture(&Located::Embedded, None).manifest
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let bytes = sandrail_files::read_regular(path, 16 << 20).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Writes a record whole, by atomic rename; what could not be written is said
/// on stderr.
fn write_json<T: Serialize>(path: &Path, value: &T) {
    if let Err(e) = try_write_json(path, value) {
        eprintln!("sandrail: cannot write {}: {e}", path.display());
    }
}

/// Writes a record whole, by atomic rename.
fn try_write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::from)?;
    sandrail_files::write_atomically(path, &bytes)
}

/// Writes a record only if there is none: false when another process wrote it
/// first.
fn create<T: Serialize>(path: &Path, value: &T) -> std::io::Result<bool> {
    sandrail_files::create_atomically(path, &serde_json::to_vec(value)?)
}
