//! The state store: guardrail keyspaces persisted in redb, one database per session.
//!
//! State is session-scoped, so each session has its own database file under
//! `<state dir>/sessions/`: hooks of different sessions never contend, and
//! forgetting a session is deleting its files. Within a session, one process at a
//! time holds the state: it takes the session's [`SessionLock`] (a blocking OS file
//! lock, so waiters sleep in the kernel's queue rather than poll), opens the
//! database, and keeps both only while the event's guardrails run and commit.
//!
//! All of an event's writes go into one write transaction committed once at the end,
//! so a crash never leaves half an event behind. Each guardrail's writes are staged
//! in a [`Keyspace`] first and only applied to the transaction when that guardrail
//! finished cleanly: a guardrail that traps halfway leaves nothing behind either.
//! Every keyspace has a key limit and a byte budget per session, and a listing is
//! bounded, so no guardrail can fill the disk or make the host hold more than a few
//! MiB on its behalf.
//!
//! The store layer: above the facts (it keeps the session's) and the file
//! helpers, below the policy, the runtime and the engine, none of which it may
//! import. The escalation ladder it counts against and the lock holders it
//! names live here too ([`escalation`], [`holders`]).

pub mod cycle;
pub mod escalation;
mod flags;
pub mod holders;
pub mod lifecycle;
mod lock;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction,
};

pub use flags::{FlagError, FlagGrants, NotAFlagName, check_name as check_flag_name};
pub use lock::{LockWait, SessionLock};

use flags::StagedFlags;

/// The extension of a session's policy record, beside its database: the policy
/// layer writes it, and forgetting a session removes it with the rest.
pub const POLICY_RECORD: &str = "policy";

use crate::escalation::{Escalated, Ladder, Level};

/// (guardrail, key) → value, within one session's database.
type EntryKey = (&'static str, &'static str);
const ENTRIES: TableDefinition<EntryKey, &str> = TableDefinition::new("entries");
/// guardrail → (keys, bytes) its keyspace holds, so limits are checked without
/// walking the keyspace.
const KEYSPACES: TableDefinition<&str, (u64, u64)> = TableDefinition::new("keyspaces");
/// (guardrail, rule) → the rule's escalation in this session, as JSON ([`RuleState`]).
/// The host's own records: no guardrail reaches this table.
const RULES: TableDefinition<(&str, &str), &str> = TableDefinition::new("rules");
/// Facts about the database itself: which session it holds.
const META: TableDefinition<&str, &str> = TableDefinition::new("meta");
/// What the host keeps for the `session` and `case` facts: one JSON record.
const FACTS: TableDefinition<&str, &str> = TableDefinition::new("facts");
const FACTS_SESSION: &str = "session";
const META_SESSION: &str = "session_id";
/// How many events committed to the database: sealed in the lock file too, so
/// a database emptied, rolled back or replaced between events is recognised.
const META_COMMITS: &str = "commits";

/// Longest key a guardrail may use, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest value a guardrail may store, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Most keys one guardrail may hold in one session.
pub const MAX_KEYS: u64 = 10_000;
/// The default byte budget of one keyspace in one session (keys plus values).
pub const DEFAULT_KEYSPACE_BYTES: u64 = 4 << 20;
/// The largest byte budget a keyspace may be given.
pub const MAX_KEYSPACE_BYTES: u64 = 8 << 20;
/// Most bytes (keys plus values) one `list` or `list-owner` call may return. No
/// keyspace can hold more, so a listing of a whole keyspace always fits; the bound
/// is what keeps the host's own memory and time per call small.
pub const MAX_LIST_BYTES: u64 = MAX_KEYSPACE_BYTES;

/// The directory of per-session databases inside the state directory.
pub const SESSIONS_DIR: &str = "sessions";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the state directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot use the session lock {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "this session's state stayed busy for longer than the lock timeout ({0:?}): other events of this session, judged one at a time (contention, not tampering)"
    )]
    LockTimeout(Duration),
    #[error(
        "this session's state stayed busy for {0:?}, as long as this event could wait for it: other events of this session, judged one at a time (contention, not tampering)"
    )]
    LockWaitedOut(Duration),
    #[error(
        "this session's lock is held by {0}, which is not sandrail at work: the session's state is kept from sandrail on purpose"
    )]
    LockHeld(String),
    #[error("cannot open the state database {path}: {source}")]
    Open {
        path: PathBuf,
        source: redb::DatabaseError,
    },
    #[error("state database error: {0}")]
    Database(#[from] redb::Error),
    #[error("cannot encode a state record: {0}")]
    Encode(serde_json::Error),
}

impl From<redb::StorageError> for StoreError {
    fn from(e: redb::StorageError) -> Self {
        StoreError::Database(e.into())
    }
}
impl From<redb::TableError> for StoreError {
    fn from(e: redb::TableError) -> Self {
        StoreError::Database(e.into())
    }
}
impl From<redb::TransactionError> for StoreError {
    fn from(e: redb::TransactionError) -> Self {
        StoreError::Database(e.into())
    }
}
impl From<redb::CommitError> for StoreError {
    fn from(e: redb::CommitError) -> Self {
        StoreError::Database(e.into())
    }
}

/// Why a guardrail's state call was refused; mirrors the WIT `state-error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyspaceError {
    #[error("key is longer than {MAX_KEY_BYTES} bytes")]
    KeyTooLong,
    #[error("value is larger than {MAX_VALUE_BYTES} bytes")]
    ValueTooLarge,
    #[error("the keyspace already holds {MAX_KEYS} keys")]
    KeyspaceFull,
    #[error(
        "the keyspace would exceed its budget of {budget} bytes (keys plus values) in this session; delete entries or raise limits.state_mib"
    )]
    OverBudget { budget: u64 },
    #[error(
        "the listing is larger than {MAX_LIST_BYTES} bytes or {MAX_KEYS} entries; list a narrower prefix"
    )]
    ListTooLarge,
    #[error("'{0}' is not listed in this guardrail's `requires`")]
    OwnerNotRequired(String),
    #[error("state unavailable: {0}")]
    Unavailable(String),
}

/// A stored entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    pub key: String,
    pub value: String,
}

/// The files of one session's state: a name derived from the session id, so any
/// id (slashes, dots, thousands of characters) maps to one safe file name.
struct SessionFiles {
    dir: PathBuf,
    database: PathBuf,
    lock: PathBuf,
}

impl SessionFiles {
    fn new(state_dir: &Path, session: &str) -> Self {
        let dir = state_dir.join(SESSIONS_DIR);
        let stem = &sandrail_event::sha256_hex(session.as_bytes())[..32];
        SessionFiles {
            database: dir.join(format!("{stem}.redb")),
            lock: dir.join(format!("{stem}.lock")),
            dir,
        }
    }
}

/// A file of `session` in the state directory's sessions, beside its database:
/// `<stem>.<extension>`, where `extension` says what it holds.
pub fn session_file(state_dir: &Path, session: &str, extension: &str) -> PathBuf {
    SessionFiles::new(state_dir, session)
        .lock
        .with_extension(extension)
}

/// The file counting this session's events judged without its state because
/// its lock stayed busy: one byte each, until an event that holds the state
/// says how many there were.
pub const UNHELD: &str = "unheld";

/// Counts one event of `session` judged without its state (its lock stayed
/// busy past the lock timeout).
pub fn note_unheld(state_dir: &Path, session: &str) {
    use std::io::Write;
    let path = session_file(state_dir, session, UNHELD);
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(b"."));
    if let Err(e) = appended {
        eprintln!(
            "sandrail: cannot count this event as judged without its state in {}: {e}",
            path.display()
        );
    }
}

/// How many of `session`'s events were judged without its state since the
/// last time this was asked (the count starts again); the caller holds the
/// session's lock.
pub fn take_unheld(state_dir: &Path, session: &str) -> u64 {
    let path = session_file(state_dir, session, UNHELD);
    let Ok(meta) = std::fs::metadata(&path) else {
        return 0;
    };
    let _ = std::fs::remove_file(&path);
    meta.len()
}

/// Whether opening failed because the file is not a sound redb database (rather
/// than, say, for want of permission or space).
fn is_corrupt(error: &redb::DatabaseError) -> bool {
    match error {
        redb::DatabaseError::Storage(redb::StorageError::Corrupted(_)) => true,
        redb::DatabaseError::Storage(redb::StorageError::Io(e)) => {
            e.kind() == std::io::ErrorKind::InvalidData
        }
        redb::DatabaseError::UpgradeRequired(_) => true,
        _ => false,
    }
}

/// Why a database does not match the seal of `sealed` commits, if it does not.
fn unsealed(db: &Database, session: &str, sealed: u64, existed: bool) -> Option<String> {
    let (commits, owner) = db
        .begin_read()
        .ok()
        .and_then(|txn| txn.open_table(META).ok())
        .map(|meta| {
            let read = |key| meta.get(key).ok().flatten().map(|v| v.value().to_owned());
            (
                read(META_COMMITS)
                    .and_then(|c| c.parse::<u64>().ok())
                    .unwrap_or(0),
                read(META_SESSION),
            )
        })
        .unwrap_or((0, None));
    if owner.as_deref().is_some_and(|owner| owner != session) {
        return Some("it was replaced by another session's database".to_owned());
    }
    if sealed == 0 || commits >= sealed {
        return None;
    }
    Some(if !existed {
        format!("it vanished after {sealed} commit(s)")
    } else if commits == 0 {
        format!("it was emptied or replaced: it holds none of the {sealed} commit(s) made")
    } else {
        format!(
            "it was rolled back or replaced by an older copy: it holds {commits} of the {sealed} commit(s) made"
        )
    })
}

/// One session's state, held by this process until dropped.
pub struct SessionStore {
    db: Database,
    session: String,
    lock: SessionLock,
    /// Where a corrupt database was moved, and what was wrong with it.
    moved_aside: Option<(PathBuf, String)>,
    /// What became of the database between events, when it is not what the last
    /// committing event left.
    tampered: Option<String>,
}

impl SessionStore {
    /// Takes the session's lock, waiting as `wait` says, and opens its
    /// database, creating both if needed.
    pub fn open(
        state_dir: &Path,
        session: &str,
        wait: impl Into<LockWait>,
    ) -> Result<Self, StoreError> {
        let files = SessionFiles::new(state_dir, session);
        sandrail_files::create_private_dir(&files.dir).map_err(|source| StoreError::CreateDir {
            path: files.dir.clone(),
            source,
        })?;
        let lock = SessionLock::acquire(&files.lock, wait)?;
        let open_error = |source| StoreError::Open {
            path: files.database.clone(),
            source,
        };
        let existed = files.database.is_file();
        // Created owner-only before redb initialises it, as the directory is.
        sandrail_files::open_private_file(&files.database).map_err(|e| open_error(e.into()))?;
        let mut moved_aside = None;
        let db = match Database::create(&files.database) {
            Ok(db) => db,
            Err(e) if is_corrupt(&e) => {
                // A session's state is worth less than judging its events: keep the
                // damaged file for inspection and start the session afresh.
                let aside = files
                    .database
                    .with_extension(format!("redb.corrupt-{}", sandrail_event::clock::now()));
                std::fs::rename(&files.database, &aside)
                    .map_err(|source| open_error(source.into()))?;
                sandrail_files::open_private_file(&files.database)
                    .map_err(|e| open_error(e.into()))?;
                moved_aside = Some((aside, e.to_string()));
                Database::create(&files.database).map_err(open_error)?
            }
            Err(e) => return Err(open_error(e)),
        };
        let tampered = lock
            .seal()
            .and_then(|sealed| unsealed(&db, session, sealed, existed));
        Ok(SessionStore {
            db,
            session: session.to_owned(),
            lock,
            moved_aside,
            tampered,
        })
    }

    /// What became of the database since the last committing event, if it is
    /// not what that event left: vanished, emptied, rolled back or replaced.
    pub fn tampered(&self) -> Option<&str> {
        self.tampered.as_deref()
    }

    /// Like [`SessionStore::open`], for reading: `None`, creating nothing, when the
    /// session has no state.
    pub fn open_existing(
        state_dir: &Path,
        session: &str,
        wait: impl Into<LockWait>,
    ) -> Result<Option<Self>, StoreError> {
        if !SessionFiles::new(state_dir, session).database.is_file() {
            return Ok(None);
        }
        SessionStore::open(state_dir, session, wait).map(Some)
    }

    /// How long this process waited for the session's lock.
    pub fn lock_waited(&self) -> Duration {
        self.lock.waited()
    }

    /// The file a corrupt database was moved to when this opened, and why.
    pub fn moved_aside(&self) -> Option<&(PathBuf, String)> {
        self.moved_aside.as_ref()
    }

    /// Begins the one write transaction of this event; it keeps the session held
    /// until it is committed or dropped.
    pub fn begin(self) -> Result<StateTxn, StoreError> {
        Ok(StateTxn {
            txn: self.db.begin_write()?,
            dirty: false,
            session: self.session,
            _db: self.db,
            _lock: self.lock,
        })
    }

    /// A consistent read-only view.
    pub fn read(&self) -> Result<StateReader, StoreError> {
        Ok(StateReader {
            txn: self.db.begin_read()?,
        })
    }
}

/// A read-only snapshot of one session's state.
pub struct StateReader {
    txn: ReadTransaction,
}

impl StateReader {
    /// The entries table, or `None` before anything was ever stored.
    fn entries(&self) -> Result<Option<redb::ReadOnlyTable<EntryKey, &'static str>>, StoreError> {
        match self.txn.open_table(ENTRIES) {
            Ok(table) => Ok(Some(table)),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Every rule's escalation in this session, in (guardrail, rule) order.
    pub fn rules(&self) -> Result<Vec<RuleRecord>, StoreError> {
        let table = match self.txn.open_table(RULES) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for item in table.iter()? {
            let (k, v) = item?;
            let (guardrail, rule) = k.value();
            let state = serde_json::from_str(v.value()).unwrap_or_default();
            out.push(RuleRecord {
                guardrail: guardrail.to_owned(),
                rule: rule.to_owned(),
                state,
            });
        }
        Ok(out)
    }

    /// The session's counters and last case, as they stand.
    pub fn session_facts(&self) -> Result<sandrail_facts::SessionFacts, StoreError> {
        match self.txn.open_table(FACTS) {
            Ok(table) => session_facts_in(&table),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(Default::default()),
            Err(e) => Err(e.into()),
        }
    }

    pub fn get(&self, guardrail: &str, key: &str) -> Result<Option<String>, StoreError> {
        match self.entries()? {
            Some(table) => value_of(&table, guardrail, key),
            None => Ok(None),
        }
    }

    /// Every entry of `guardrail` under `prefix`, without a size bound: for the
    /// person at the command line, not for guardrails.
    pub fn list(&self, guardrail: &str, prefix: &str) -> Result<Vec<Entry>, StoreError> {
        match self.entries()? {
            Some(table) => Ok(collect_prefix(&table, guardrail, prefix, None)?.unwrap_or_default()),
            None => Ok(Vec::new()),
        }
    }
}

fn session_facts_in(
    table: &impl ReadableTable<&'static str, &'static str>,
) -> Result<sandrail_facts::SessionFacts, StoreError> {
    Ok(match table.get(FACTS_SESSION)? {
        // A record this version cannot read counts from zero rather than failing
        // every event of the session.
        Some(json) => serde_json::from_str(json.value()).unwrap_or_default(),
        None => Default::default(),
    })
}

/// The event's write transaction. Commit it once, at the end of the event.
pub struct StateTxn {
    // Dropped in this order: the transaction, then the database (closing it), and
    // only then the lock.
    txn: WriteTransaction,
    dirty: bool,
    session: String,
    _db: Database,
    _lock: SessionLock,
}

impl StateTxn {
    /// Makes the event's writes durable, if it made any, and releases the session.
    pub fn commit(self) -> Result<(), StoreError> {
        if !self.dirty {
            self.txn.abort()?;
            return Ok(());
        }
        let commits = {
            let mut meta = self.txn.open_table(META)?;
            meta.insert(META_SESSION, self.session.as_str())?;
            let before = meta
                .get(META_COMMITS)?
                .and_then(|v| v.value().parse::<u64>().ok())
                .unwrap_or(0);
            let commits = before.saturating_add(1);
            meta.insert(META_COMMITS, commits.to_string().as_str())?;
            commits
        };
        let StateTxn {
            mut txn, _db: db, ..
        } = self;
        // Durable through the close that follows, whose own commit (the
        // allocator's state) syncs this one's pages with it: one `fsync` of
        // them rather than two. A close that fails is a lost commit.
        txn.set_durability(redb::Durability::None)
            .map_err(redb::Error::from)?;
        txn.commit()?;
        db.close().map_err(redb::Error::from)?;
        // Best effort: without it the next event checks nothing, as before.
        let _ = self._lock.set_seal(commits);
        Ok(())
    }

    fn get(&self, guardrail: &str, key: &str) -> Result<Option<String>, StoreError> {
        value_of(&self.txn.open_table(ENTRIES)?, guardrail, key)
    }

    /// Commits this event even if it writes nothing else, sealing the database
    /// as it now is: a database found tampered with is reported once.
    pub fn reseal(&mut self) {
        self.dirty = true;
    }

    /// The session's counters and last case, as they stand before this event.
    pub fn session_facts(&self) -> Result<sandrail_facts::SessionFacts, StoreError> {
        session_facts_in(&self.txn.open_table(FACTS)?)
    }

    /// `guardrail`'s rules with a record in this session, in rule order: what the
    /// `escalation` interface shows it.
    pub fn rules_of(&self, guardrail: &str) -> Result<Vec<(String, RuleState)>, StoreError> {
        let table = self.txn.open_table(RULES)?;
        let mut out = Vec::new();
        for item in table.range((guardrail, "")..)? {
            let (k, v) = item?;
            let (owner, rule) = k.value();
            if owner != guardrail {
                break;
            }
            out.push((
                rule.to_owned(),
                serde_json::from_str(v.value()).unwrap_or_default(),
            ));
        }
        Ok(out)
    }

    /// Stores the session's counters and last case, with the event's other writes.
    pub fn set_session_facts(
        &mut self,
        facts: &sandrail_facts::SessionFacts,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_string(facts).map_err(StoreError::Encode)?;
        self.txn
            .open_table(FACTS)?
            .insert(FACTS_SESSION, json.as_str())?;
        self.dirty = true;
        Ok(())
    }

    /// The rules whose soft_block asked the user about the call `tool_use_id`: the
    /// user let it run, so each is an override, recorded as certain. Returns
    /// (guardrail, rule, counter) for each.
    pub fn confirm_asked(
        &mut self,
        tool_use_id: &str,
    ) -> Result<Vec<(String, String, u64)>, StoreError> {
        let mut table = self.txn.open_table(RULES)?;
        let mut confirmed = Vec::new();
        for item in table.iter()? {
            let (k, v) = item?;
            let Ok(mut state) = serde_json::from_str::<RuleState>(v.value()) else {
                continue;
            };
            if state.pending.as_ref().and_then(|p| p.asked.as_deref()) == Some(tool_use_id) {
                let (guardrail, rule) = k.value();
                state.pending = None;
                state.overrides += 1;
                confirmed.push((guardrail.to_owned(), rule.to_owned(), state));
            }
        }
        let mut out = Vec::with_capacity(confirmed.len());
        for (guardrail, rule, state) in confirmed {
            let text = serde_json::to_string(&state).map_err(StoreError::Encode)?;
            table.insert((guardrail.as_str(), rule.as_str()), text.as_str())?;
            self.dirty = true;
            out.push((guardrail, rule, state.counter));
        }
        Ok(out)
    }

    /// Takes over another session's counters and levels (not its pending blocks),
    /// for a session that continues it; returns how many rules it took.
    pub fn inherit_rules(&mut self, rules: &[RuleRecord]) -> Result<usize, StoreError> {
        let mut table = self.txn.open_table(RULES)?;
        for record in rules {
            let state = RuleState {
                pending: None,
                ..record.state.clone()
            };
            let text = serde_json::to_string(&state).map_err(StoreError::Encode)?;
            table.insert(
                (record.guardrail.as_str(), record.rule.as_str()),
                text.as_str(),
            )?;
        }
        self.dirty |= !rules.is_empty();
        Ok(rules.len())
    }

    /// Counts one refusal by a guardrail that does not escalate (its violation, or
    /// its `deny` under the rule `deny`), so `sandrail status` shows what it
    /// refused; the level is left alone.
    pub fn count_refusal(
        &mut self,
        guardrail: &str,
        rule: &str,
        tool: Option<&str>,
        now: u64,
    ) -> Result<u64, StoreError> {
        let mut table = self.txn.open_table(RULES)?;
        let mut state: RuleState = match table.get((guardrail, rule))? {
            Some(text) => serde_json::from_str(text.value()).unwrap_or_default(),
            None => RuleState::default(),
        };
        state.counter += 1;
        state.last_violation_at = Some(now);
        state.last_violation_tool = tool.map(str::to_owned);
        let text = serde_json::to_string(&state).map_err(StoreError::Encode)?;
        table.insert((guardrail, rule), text.as_str())?;
        self.dirty = true;
        Ok(state.counter)
    }

    /// Counts one violation of `rule` and resolves its level: the counter rises
    /// first, and the level never falls. A soft_block is remembered, and the same
    /// input within the window after it is the user's override, not a violation.
    pub fn escalate(
        &mut self,
        guardrail: &str,
        rule: &str,
        ladder: &Ladder,
        occurrence: Occurrence<'_>,
    ) -> Result<Escalation, StoreError> {
        let mut table = self.txn.open_table(RULES)?;
        let mut state: RuleState = match table.get((guardrail, rule))? {
            // A record this version cannot read starts the rule afresh rather than
            // failing the event.
            Some(text) => serde_json::from_str(text.value()).unwrap_or_default(),
            None => RuleState::default(),
        };
        // A pending block is used or cleared by the next violation, whatever it is.
        let pending = state.pending.take();
        let outcome = match (pending, occurrence.input_hash) {
            (Some(pending), Some(hash))
                if pending.input_hash == hash
                    // A soft_block that asks is overridden only by the user's
                    // answer (the asked call's PostToolUse): the same call sent
                    // again was never approved, and is asked about again.
                    && !occurrence.asks
                    && pending.asked.is_none()
                    // dotforge: `now - blocked_at < window`, the end excluded.
                    && occurrence.now.saturating_sub(pending.at) < occurrence.override_window =>
            {
                state.overrides += 1;
                Escalation::Overridden {
                    counter: state.counter,
                }
            }
            _ => {
                state.counter += 1;
                state.level = state.level.max(ladder.resolve(state.counter));
                state.last_violation_at = Some(occurrence.now);
                state.last_violation_tool = occurrence.tool.map(str::to_owned);
                if state.level == Level::SoftBlock
                    && let Some(hash) = occurrence.input_hash
                {
                    state.pending = Some(PendingBlock {
                        input_hash: hash.to_owned(),
                        at: occurrence.now,
                        asked: occurrence.ask_for.map(str::to_owned),
                    });
                }
                Escalation::Counted(Escalated {
                    counter: state.counter,
                    level: state.level,
                    next_threshold: ladder.next_threshold(state.counter),
                })
            }
        };
        let text = serde_json::to_string(&state).map_err(StoreError::Encode)?;
        table.insert((guardrail, rule), text.as_str())?;
        self.dirty = true;
        Ok(outcome)
    }

    fn list(
        &self,
        guardrail: &str,
        prefix: &str,
        budget: ListBudget,
    ) -> Result<Option<Vec<Entry>>, StoreError> {
        let table = self.txn.open_table(ENTRIES)?;
        collect_prefix(&table, guardrail, prefix, Some(budget))
    }

    /// How many keys and bytes `guardrail`'s keyspace holds.
    fn usage(&self, guardrail: &str) -> Result<Usage, StoreError> {
        let table = self.txn.open_table(KEYSPACES)?;
        Ok(table.get(guardrail)?.map_or(Usage::default(), |v| {
            let (keys, bytes) = v.value();
            Usage { keys, bytes }
        }))
    }

    /// Applies a keyspace's staged changes.
    fn apply(
        &mut self,
        guardrail: &str,
        staged: &BTreeMap<String, Option<String>>,
    ) -> Result<(), StoreError> {
        if staged.is_empty() {
            return Ok(());
        }
        let mut usage = self.usage(guardrail)?;
        {
            let mut entries = self.txn.open_table(ENTRIES)?;
            for (key, value) in staged {
                let previous = match value {
                    Some(v) => entries.insert((guardrail, key.as_str()), v.as_str())?,
                    None => entries.remove((guardrail, key.as_str()))?,
                };
                if let Some(previous) = previous {
                    usage.keys = usage.keys.saturating_sub(1);
                    usage.bytes = usage
                        .bytes
                        .saturating_sub(entry_bytes(key, previous.value()));
                }
                if let Some(value) = value {
                    usage.keys += 1;
                    usage.bytes += entry_bytes(key, value);
                }
            }
        }
        let mut keyspaces = self.txn.open_table(KEYSPACES)?;
        if usage.keys == 0 {
            keyspaces.remove(guardrail)?;
        } else {
            keyspaces.insert(guardrail, (usage.keys, usage.bytes))?;
        }
        self.dirty = true;
        Ok(())
    }
}

/// One rule's escalation in one session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RuleState {
    /// Violations so far; never falls within a session.
    pub counter: u64,
    /// The highest level reached; never falls within a session.
    pub level: Level,
    /// When the last violation was, in seconds since the epoch.
    pub last_violation_at: Option<u64>,
    /// The tool of the last violation.
    pub last_violation_tool: Option<String>,
    /// The last soft_block, until the same input comes again or the window passes.
    #[serde(default)]
    pub pending: Option<PendingBlock>,
    /// How many soft_blocks a person has let through in this session.
    #[serde(default)]
    pub overrides: u64,
}

impl Default for RuleState {
    fn default() -> Self {
        RuleState {
            counter: 0,
            level: Level::Silent,
            last_violation_at: None,
            last_violation_tool: None,
            pending: None,
            overrides: 0,
        }
    }
}

/// A soft_block waiting to see whether the user lets the same call through.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PendingBlock {
    /// The first 40 hex digits of the sha256 of the canonical tool input.
    pub input_hash: String,
    /// When it was refused, in seconds since the epoch.
    pub at: u64,
    /// Set when the soft_block asked the user: the call's id, which its
    /// PostToolUse carries if the user let it run.
    #[serde(default)]
    pub asked: Option<String>,
}

/// One violation, as escalation sees it.
#[derive(Debug, Clone, Copy)]
pub struct Occurrence<'a> {
    pub tool: Option<&'a str>,
    /// For a call the user can approve after a refusal (PreToolUse): its input's hash.
    pub input_hash: Option<&'a str>,
    pub now: u64,
    /// How long after a soft_block the same input counts as the user's override.
    pub override_window: u64,
    /// The call's tool_use_id, when a soft_block asks the user rather than refusing.
    pub ask_for: Option<&'a str>,
    /// The rule's soft_block asks the user (`soft_block = "ask"`): a repeated call
    /// is never taken as an override, whether or not this call could be asked.
    pub asks: bool,
}

/// What a violation came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Escalation {
    /// Counted, at this level.
    Counted(Escalated),
    /// The same input as the soft_block just before, within the window: the user let
    /// it through. Not counted.
    Overridden { counter: u64 },
}

/// A rule's escalation, with whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRecord {
    pub guardrail: String,
    pub rule: String,
    pub state: RuleState,
}

/// What a keyspace holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Usage {
    keys: u64,
    bytes: u64,
}

/// What one entry costs against a byte budget.
fn entry_bytes(key: &str, value: &str) -> u64 {
    (key.len() + value.len()) as u64
}

/// How much one listing may return.
#[derive(Debug, Clone, Copy)]
struct ListBudget {
    entries: u64,
    bytes: u64,
}

const LIST_BUDGET: ListBudget = ListBudget {
    entries: MAX_KEYS,
    bytes: MAX_LIST_BYTES,
};

fn value_of(
    table: &impl ReadableTable<EntryKey, &'static str>,
    guardrail: &str,
    key: &str,
) -> Result<Option<String>, StoreError> {
    Ok(table.get((guardrail, key))?.map(|v| v.value().to_owned()))
}

/// The entries of `guardrail` under `prefix`, in key order; `None` as soon as they
/// would exceed `budget`, having read no more than the budget.
fn collect_prefix(
    table: &impl ReadableTable<EntryKey, &'static str>,
    guardrail: &str,
    prefix: &str,
    budget: Option<ListBudget>,
) -> Result<Option<Vec<Entry>>, StoreError> {
    let mut out = Vec::new();
    let mut bytes = 0u64;
    for item in table.range((guardrail, prefix)..)? {
        let (k, v) = item?;
        let (g, key) = k.value();
        if g != guardrail || !key.starts_with(prefix) {
            break;
        }
        let value = v.value();
        bytes += entry_bytes(key, value);
        if let Some(budget) = budget
            && (out.len() as u64 >= budget.entries || bytes > budget.bytes)
        {
            return Ok(None);
        }
        out.push(Entry {
            key: key.to_owned(),
            value: value.to_owned(),
        });
    }
    Ok(Some(out))
}

/// One guardrail's view of the state for one event: its own keys in this session,
/// plus read-only listings of the owners it requires.
///
/// Writes are staged here and reach the transaction only through
/// [`Keyspace::finish`], so a guardrail that fails midway leaves nothing behind.
pub struct Keyspace {
    guardrail: String,
    requires: Vec<String>,
    /// The most bytes (keys plus values) this keyspace may hold in a session.
    budget_bytes: u64,
    /// The event's transaction, or why there is none.
    txn: Result<StateTxn, String>,
    staged: BTreeMap<String, Option<String>>,
    /// What the keyspace held before this guardrail ran, read once.
    stored: Option<Usage>,
    /// Keys added minus keys removed by the staged changes.
    key_delta: i64,
    /// Bytes added minus bytes removed by the staged changes.
    byte_delta: i64,
    /// Which flags it may touch, and its staged flag changes.
    flag_grants: FlagGrants,
    flags: StagedFlags,
    /// The time a flag set now is stamped with.
    now: u64,
    /// Whether a write was refused for the byte budget during this event.
    over_budget: bool,
    /// The contexts among its `requires`, and the current turn: what `cycle`
    /// shows it.
    contexts: Vec<String>,
    turn: Option<String>,
    /// Whether its entry declares `enforcement`.
    escalates: bool,
}

impl Keyspace {
    /// Whether a write was refused for the byte budget during this event.
    pub fn went_over_budget(&self) -> bool {
        self.over_budget
    }

    pub fn new(guardrail: &str, requires: Vec<String>, budget_bytes: u64) -> Self {
        Keyspace {
            guardrail: guardrail.to_owned(),
            requires,
            budget_bytes,
            txn: Err("no state store for this event".to_owned()),
            staged: BTreeMap::new(),
            stored: None,
            key_delta: 0,
            byte_delta: 0,
            flag_grants: FlagGrants::default(),
            flags: StagedFlags::default(),
            now: 0,
            over_budget: false,
            contexts: Vec::new(),
            turn: None,
            escalates: false,
        }
    }

    /// What the `cycle` interface shows this guardrail: the states of `contexts`
    /// (those of its `requires` that are contexts), judged against `turn`.
    pub fn with_cycle(mut self, contexts: Vec<String>, turn: Option<String>) -> Self {
        self.contexts = contexts;
        self.turn = turn;
        self
    }

    /// The span since the read mark.
    pub fn span(&self) -> Result<Vec<cycle::SpanEvent>, String> {
        let txn = self.txn.as_ref().map_err(Clone::clone)?;
        txn.span().map_err(|e| e.to_string())
    }

    /// A context's record, as this event's transaction holds it.
    pub fn context_record(&self, name: &str) -> Option<cycle::ContextRecord> {
        self.txn.as_ref().ok()?.context(name).ok()
    }

    /// The states of the contexts this guardrail requires.
    pub fn contexts(&self) -> Result<Vec<cycle::ContextView>, String> {
        let txn = self.txn.as_ref().map_err(Clone::clone)?;
        txn.context_views(&self.contexts, self.turn.as_deref())
            .map_err(|e| e.to_string())
    }

    /// Whether its entry declares `enforcement`: what the `escalation` interface
    /// says a rule's level is.
    pub fn with_escalation(mut self, escalates: bool) -> Self {
        self.escalates = escalates;
        self
    }

    /// Its rules' records in this session, and whether the entry escalates.
    pub fn standing(&self) -> Result<(Vec<(String, RuleState)>, bool), String> {
        let txn = self.txn.as_ref().map_err(Clone::clone)?;
        let rules = txn.rules_of(&self.guardrail).map_err(|e| e.to_string())?;
        Ok((rules, self.escalates))
    }

    /// Grants this keyspace the flags its entry lists; `now` stamps flags it sets.
    pub fn with_flags(mut self, grants: FlagGrants, now: u64) -> Self {
        self.flag_grants = grants;
        self.now = now;
        self
    }

    /// Marks the state as out of reach for this event; every call answers `unavailable`.
    pub fn set_unavailable(&mut self, why: String) {
        self.txn = Err(why);
    }

    /// Hands the event's transaction to this keyspace.
    pub fn with_txn(mut self, txn: StateTxn) -> Self {
        self.txn = Ok(txn);
        self
    }

    /// Ends the guardrail's turn: applies its staged writes when `keep` is true,
    /// discards them otherwise, and hands the transaction back.
    pub fn finish(self, keep: bool) -> Result<Option<StateTxn>, StoreError> {
        self.finish_keeping(keep, keep)
    }

    /// Like [`Keyspace::finish`], keeping its writes and its flag changes
    /// separately: a guardrail that runs after the chain was cut keeps only its
    /// flags.
    pub fn finish_keeping(
        mut self,
        writes: bool,
        flags: bool,
    ) -> Result<Option<StateTxn>, StoreError> {
        if let Ok(txn) = self.txn.as_mut() {
            if writes {
                txn.apply(&self.guardrail, &self.staged)?;
            }
            if flags {
                txn.apply_flags(&self.flags)?;
            }
        }
        Ok(self.txn.ok())
    }

    fn flag_state(&self, flag: &str) -> Result<bool, FlagError> {
        if let Some(change) = self.flags.changes.get(flag) {
            return Ok(change.is_some());
        }
        let txn = self
            .txn
            .as_ref()
            .map_err(|why| FlagError::Unavailable(why.clone()))?;
        txn.flag_is_set(flag)
            .map_err(|e| FlagError::Unavailable(e.to_string()))
    }

    pub fn flag_set(&mut self, flag: &str) -> Result<(), FlagError> {
        if !self.flag_grants.may_set(flag) {
            return Err(FlagError::NotGranted(format!("set '{flag}'")));
        }
        self.flag_state(flag)?;
        self.flags.changes.insert(flag.to_owned(), Some(self.now));
        Ok(())
    }

    pub fn flag_check(&self, flag: &str) -> Result<bool, FlagError> {
        if !self.flag_grants.may_check(flag) {
            return Err(FlagError::NotGranted(format!("check '{flag}'")));
        }
        self.flag_state(flag)
    }

    pub fn flag_consume(&mut self, flag: &str) -> Result<bool, FlagError> {
        if !self.flag_grants.may_consume(flag) {
            return Err(FlagError::NotGranted(format!("consume '{flag}'")));
        }
        let was_set = self.flag_state(flag)?;
        if was_set {
            self.flags.changes.insert(flag.to_owned(), None);
        }
        Ok(was_set)
    }

    fn txn(&self) -> Result<&StateTxn, KeyspaceError> {
        self.txn
            .as_ref()
            .map_err(|why| KeyspaceError::Unavailable(why.clone()))
    }

    fn storage<T>(r: Result<T, StoreError>) -> Result<T, KeyspaceError> {
        r.map_err(|e| KeyspaceError::Unavailable(e.to_string()))
    }

    fn stored(&mut self) -> Result<Usage, KeyspaceError> {
        if let Some(stored) = self.stored {
            return Ok(stored);
        }
        let usage = Self::storage(self.txn()?.usage(&self.guardrail))?;
        Ok(*self.stored.insert(usage))
    }

    pub fn get(&self, key: &str) -> Result<Option<String>, KeyspaceError> {
        if let Some(staged) = self.staged.get(key) {
            return Ok(staged.clone());
        }
        let txn = self.txn()?;
        Self::storage(txn.get(&self.guardrail, key))
    }

    pub fn set(&mut self, key: &str, value: &str) -> Result<(), KeyspaceError> {
        if key.len() > MAX_KEY_BYTES {
            return Err(KeyspaceError::KeyTooLong);
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(KeyspaceError::ValueTooLarge);
        }
        let previous = self.get(key)?;
        let stored = self.stored()?;
        let new_key = i64::from(previous.is_none());
        if new_key == 1 && stored.keys as i64 + self.key_delta >= MAX_KEYS as i64 {
            return Err(KeyspaceError::KeyspaceFull);
        }
        let freed = previous.as_deref().map_or(0, |p| entry_bytes(key, p)) as i64;
        let byte_delta = self.byte_delta - freed + entry_bytes(key, value) as i64;
        if stored.bytes as i64 + byte_delta > self.budget_bytes as i64 {
            self.over_budget = true;
            return Err(KeyspaceError::OverBudget {
                budget: self.budget_bytes,
            });
        }
        self.key_delta += new_key;
        self.byte_delta = byte_delta;
        self.staged.insert(key.to_owned(), Some(value.to_owned()));
        Ok(())
    }

    pub fn delete(&mut self, key: &str) -> Result<bool, KeyspaceError> {
        let Some(previous) = self.get(key)? else {
            return Ok(false);
        };
        self.stored()?;
        self.key_delta -= 1;
        self.byte_delta -= entry_bytes(key, &previous) as i64;
        self.staged.insert(key.to_owned(), None);
        Ok(true)
    }

    pub fn list(&self, prefix: &str) -> Result<Vec<Entry>, KeyspaceError> {
        let txn = self.txn()?;
        let stored = Self::storage(txn.list(&self.guardrail, prefix, LIST_BUDGET))?
            .ok_or(KeyspaceError::ListTooLarge)?;
        let mut merged: BTreeMap<String, String> =
            stored.into_iter().map(|e| (e.key, e.value)).collect();
        for (key, value) in self.staged.range(prefix.to_owned()..) {
            if !key.starts_with(prefix) {
                break;
            }
            match value {
                Some(v) => merged.insert(key.clone(), v.clone()),
                None => merged.remove(key),
            };
        }
        // Staged writes stay within the keyspace's budget, which is within the
        // listing's; the check keeps that true if either ever changes.
        let bytes: u64 = merged.iter().map(|(k, v)| entry_bytes(k, v)).sum();
        if merged.len() as u64 > LIST_BUDGET.entries || bytes > LIST_BUDGET.bytes {
            return Err(KeyspaceError::ListTooLarge);
        }
        Ok(merged
            .into_iter()
            .map(|(key, value)| Entry { key, value })
            .collect())
    }

    pub fn list_owner(&self, owner: &str, prefix: &str) -> Result<Vec<Entry>, KeyspaceError> {
        if !self.requires.iter().any(|r| r == owner) {
            return Err(KeyspaceError::OwnerNotRequired(owner.to_owned()));
        }
        let txn = self.txn()?;
        Self::storage(txn.list(owner, prefix, LIST_BUDGET))?.ok_or(KeyspaceError::ListTooLarge)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: u64 = DEFAULT_KEYSPACE_BYTES;

    fn open(dir: &Path, session: &str) -> SessionStore {
        SessionStore::open(dir, session, Duration::from_secs(1)).unwrap()
    }

    fn keyspace(dir: &Path, session: &str, guardrail: &str) -> Keyspace {
        Keyspace::new(guardrail, vec![], BUDGET).with_txn(open(dir, session).begin().unwrap())
    }

    fn commit(keyspace: Keyspace) {
        keyspace.finish(true).unwrap().unwrap().commit().unwrap();
    }

    #[test]
    fn writes_are_staged_until_the_guardrail_finishes() {
        let dir = tempfile::tempdir().unwrap();
        let mut ks = keyspace(dir.path(), "s", "g");
        ks.set("a", "1").unwrap();
        assert_eq!(ks.get("a").unwrap().as_deref(), Some("1"));
        assert_eq!(ks.list("").unwrap().len(), 1);
        // A guardrail that failed: its writes are discarded.
        let txn = ks.finish(false).unwrap().unwrap();
        let ks = Keyspace::new("g", vec![], BUDGET).with_txn(txn);
        assert_eq!(ks.get("a").unwrap(), None);
        commit(ks);
        assert_eq!(
            open(dir.path(), "s").read().unwrap().get("g", "a").unwrap(),
            None
        );
    }

    #[test]
    fn committed_writes_are_read_back_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut ks = keyspace(dir.path(), "s", "g");
        for key in ["tag:b", "tag:a", "other"] {
            ks.set(key, key).unwrap();
        }
        assert!(ks.delete("other").unwrap());
        assert!(!ks.delete("never").unwrap());
        commit(ks);
        let store = open(dir.path(), "s");
        let reader = store.read().unwrap();
        let keys: Vec<String> = reader
            .list("g", "tag:")
            .unwrap()
            .into_iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(keys, ["tag:a", "tag:b"]);
        assert!(reader.list("other-guardrail", "").unwrap().is_empty());
        drop(reader);
        drop(store);
        // Another session is another database.
        assert!(
            SessionStore::open_existing(dir.path(), "other-session", Duration::from_secs(1))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn session_ids_of_any_shape_map_to_files_in_the_sessions_directory() {
        let dir = tempfile::tempdir().unwrap();
        let hostile = format!("../../{}/x", "a".repeat(2000));
        let mut ks = keyspace(dir.path(), &hostile, "g");
        ks.set("k", "v").unwrap();
        commit(ks);
        let files: Vec<_> = std::fs::read_dir(dir.path().join(SESSIONS_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(files.iter().all(|f| f.len() == 32 + 5), "{files:?}");
    }

    #[test]
    fn the_key_limit_counts_staged_and_stored_keys() {
        let dir = tempfile::tempdir().unwrap();
        let mut ks = keyspace(dir.path(), "s", "g");
        for i in 0..MAX_KEYS {
            ks.set(&format!("k{i}"), "v").unwrap();
        }
        assert_eq!(ks.set("one-more", "v"), Err(KeyspaceError::KeyspaceFull));
        // Overwriting an existing key is not a new key.
        ks.set("k0", "w").unwrap();
        commit(ks);

        let mut ks = keyspace(dir.path(), "s", "g");
        assert_eq!(ks.set("one-more", "v"), Err(KeyspaceError::KeyspaceFull));
        assert!(ks.delete("k1").unwrap());
        ks.set("one-more", "v").unwrap();
        assert_eq!(ks.set("two-more", "v"), Err(KeyspaceError::KeyspaceFull));
    }

    #[test]
    fn the_byte_budget_counts_staged_and_stored_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 1000;
        let begin =
            || Keyspace::new("g", vec![], budget).with_txn(open(dir.path(), "s").begin().unwrap());
        let mut ks = begin();
        ks.set("a", &"x".repeat(499)).unwrap(); // 500 bytes
        ks.set("b", &"x".repeat(499)).unwrap(); // 1000 bytes: exactly the budget
        assert_eq!(ks.set("c", ""), Err(KeyspaceError::OverBudget { budget }));
        // Replacing a value counts the difference.
        ks.set("a", &"x".repeat(400)).unwrap();
        commit(ks);

        let mut ks = begin();
        assert_eq!(
            ks.set("c", &"x".repeat(200)),
            Err(KeyspaceError::OverBudget { budget })
        );
        ks.set("c", &"x".repeat(98)).unwrap(); // 901 + 99 = 1000
        assert!(ks.delete("b").unwrap());
        ks.set("d", &"x".repeat(499)).unwrap();
        commit(ks);
        let store = open(dir.path(), "s");
        let total: usize = store
            .read()
            .unwrap()
            .list("g", "")
            .unwrap()
            .iter()
            .map(|e| e.key.len() + e.value.len())
            .sum();
        assert_eq!(total, 1000);
    }

    #[test]
    fn list_owner_needs_requires() {
        let dir = tempfile::tempdir().unwrap();
        let ks = Keyspace::new("judge", vec!["ctx".into()], BUDGET)
            .with_txn(open(dir.path(), "s").begin().unwrap());
        assert_eq!(ks.list_owner("ctx", "").unwrap(), vec![]);
        assert_eq!(
            ks.list_owner("other", ""),
            Err(KeyspaceError::OwnerNotRequired("other".into()))
        );
    }

    #[test]
    fn a_listing_stops_at_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), "s");
        let txn = store.begin().unwrap();
        {
            let mut table = txn.txn.open_table(ENTRIES).unwrap();
            for i in 0..3 {
                table
                    .insert(("g", format!("k{i}").as_str()), "12345678")
                    .unwrap();
            }
        }
        let small = ListBudget {
            entries: 10,
            bytes: 20,
        };
        assert!(txn.list("g", "", small).unwrap().is_none());
        assert_eq!(txn.list("g", "k1", small).unwrap().unwrap().len(), 1);
        let few = ListBudget {
            entries: 2,
            bytes: 1000,
        };
        assert!(txn.list("g", "", few).unwrap().is_none());
    }
}
