//! The state store: guardrail keyspaces persisted in redb.
//!
//! redb lets one process hold a database at a time, so every process that touches
//! the state (each hook, each `sandrail state` command) opens it for as short a time
//! as it can and, finding it held, retries until the lock timeout. All of an event's writes
//! go into one write transaction that is committed once at the end, so a crash never
//! leaves half an event behind. Each guardrail's writes are staged in a
//! [`Keyspace`] first and only applied to the transaction when that guardrail finished
//! cleanly: a guardrail that traps halfway leaves nothing behind either.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redb::{
    Database, DatabaseError, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition,
    WriteTransaction,
};

/// (session, guardrail, key): sessions first, so one session's state is one range.
type EntryKey = (&'static str, &'static str, &'static str);
/// (session, guardrail, key) → value.
const ENTRIES: TableDefinition<EntryKey, &str> = TableDefinition::new("entries");
/// (session, guardrail) → how many keys that keyspace holds, so the key limit is
/// checked without walking the keyspace.
const KEY_COUNTS: TableDefinition<(&str, &str), u64> = TableDefinition::new("key_counts");

/// Longest key a guardrail may use, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest value a guardrail may store, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Most keys one guardrail may hold in one session.
pub const MAX_KEYS: u64 = 10_000;

/// The database file inside the state directory.
pub const DATABASE_FILE: &str = "state.redb";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the state directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the state database {path}: {source}")]
    Open {
        path: PathBuf,
        source: redb::DatabaseError,
    },
    #[error(
        "another sandrail process held the state database for longer than the lock timeout ({0:?})"
    )]
    LockTimeout(Duration),
    #[error("state database error: {0}")]
    Database(#[from] redb::Error),
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

/// The opened state database.
pub struct StateStore {
    db: Database,
}

impl StateStore {
    /// Opens (creating if needed) the database in `dir`, waiting up to `timeout` while
    /// another process holds it.
    pub fn open(dir: &Path, timeout: Duration) -> Result<Self, StoreError> {
        crate::locations::create_private_dir(dir).map_err(|source| StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join(DATABASE_FILE);
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_micros(200);
        loop {
            match Database::create(&path) {
                Ok(db) => return Ok(StateStore { db }),
                Err(DatabaseError::DatabaseAlreadyOpen) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(StoreError::LockTimeout(timeout));
                    }
                    std::thread::sleep(pause.min(deadline - now));
                    pause = (pause * 2).min(Duration::from_millis(4));
                }
                Err(source) => return Err(StoreError::Open { path, source }),
            }
        }
    }

    /// Begins the one write transaction of this process.
    pub fn begin(&self) -> Result<StateTxn, StoreError> {
        Ok(StateTxn {
            txn: self.db.begin_write()?,
            dirty: false,
        })
    }

    /// A consistent read-only view.
    pub fn read(&self) -> Result<StateReader, StoreError> {
        Ok(StateReader {
            txn: self.db.begin_read()?,
        })
    }
}

/// A read-only snapshot of the state.
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

    pub fn get(
        &self,
        session: &str,
        guardrail: &str,
        key: &str,
    ) -> Result<Option<String>, StoreError> {
        match self.entries()? {
            Some(table) => value_of(&table, session, guardrail, key),
            None => Ok(None),
        }
    }

    pub fn list(
        &self,
        session: &str,
        guardrail: &str,
        prefix: &str,
    ) -> Result<Vec<Entry>, StoreError> {
        match self.entries()? {
            Some(table) => collect_prefix(&table, session, guardrail, prefix),
            None => Ok(Vec::new()),
        }
    }
}

/// The event's write transaction. Commit it once, at the end of the event.
pub struct StateTxn {
    txn: WriteTransaction,
    dirty: bool,
}

impl StateTxn {
    /// Makes the event's writes durable, if it made any.
    pub fn commit(self) -> Result<(), StoreError> {
        if self.dirty {
            self.txn.commit()?;
        } else {
            self.txn.abort()?;
        }
        Ok(())
    }

    pub fn get(
        &self,
        session: &str,
        guardrail: &str,
        key: &str,
    ) -> Result<Option<String>, StoreError> {
        value_of(&self.txn.open_table(ENTRIES)?, session, guardrail, key)
    }

    pub fn list(
        &self,
        session: &str,
        guardrail: &str,
        prefix: &str,
    ) -> Result<Vec<Entry>, StoreError> {
        let table = self.txn.open_table(ENTRIES)?;
        collect_prefix(&table, session, guardrail, prefix)
    }

    fn key_count(&self, session: &str, guardrail: &str) -> Result<u64, StoreError> {
        let table = self.txn.open_table(KEY_COUNTS)?;
        Ok(table.get((session, guardrail))?.map_or(0, |v| v.value()))
    }

    /// Applies a keyspace's staged changes.
    fn apply(
        &mut self,
        session: &str,
        guardrail: &str,
        staged: &BTreeMap<String, Option<String>>,
    ) -> Result<(), StoreError> {
        if staged.is_empty() {
            return Ok(());
        }
        let mut count = self.key_count(session, guardrail)?;
        {
            let mut entries = self.txn.open_table(ENTRIES)?;
            for (key, value) in staged {
                let previous = match value {
                    Some(v) => entries.insert((session, guardrail, key.as_str()), v.as_str())?,
                    None => entries.remove((session, guardrail, key.as_str()))?,
                };
                match (previous.is_some(), value.is_some()) {
                    (false, true) => count += 1,
                    (true, false) => count = count.saturating_sub(1),
                    _ => {}
                }
            }
        }
        let mut counts = self.txn.open_table(KEY_COUNTS)?;
        if count == 0 {
            counts.remove((session, guardrail))?;
        } else {
            counts.insert((session, guardrail), count)?;
        }
        self.dirty = true;
        Ok(())
    }
}

fn value_of(
    table: &impl ReadableTable<EntryKey, &'static str>,
    session: &str,
    guardrail: &str,
    key: &str,
) -> Result<Option<String>, StoreError> {
    Ok(table
        .get((session, guardrail, key))?
        .map(|v| v.value().to_owned()))
}

fn collect_prefix(
    table: &impl ReadableTable<EntryKey, &'static str>,
    session: &str,
    guardrail: &str,
    prefix: &str,
) -> Result<Vec<Entry>, StoreError> {
    let mut out = Vec::new();
    for item in table.range((session, guardrail, prefix)..)? {
        let (k, v) = item?;
        let (s, g, key) = k.value();
        if s != session || g != guardrail || !key.starts_with(prefix) {
            break;
        }
        out.push(Entry {
            key: key.to_owned(),
            value: v.value().to_owned(),
        });
    }
    Ok(out)
}

/// One guardrail's view of the state for one event: its own keys in this session,
/// plus read-only listings of the owners it requires.
///
/// Writes are staged here and reach the transaction only through
/// [`Keyspace::finish`], so a guardrail that fails midway leaves nothing behind.
pub struct Keyspace {
    session: String,
    guardrail: String,
    requires: Vec<String>,
    /// The event's transaction, or why there is none.
    txn: Result<StateTxn, String>,
    staged: BTreeMap<String, Option<String>>,
    /// How many keys the keyspace held before this guardrail ran, read once.
    stored_keys: Option<u64>,
    /// Keys added minus keys removed by the staged changes.
    key_delta: i64,
}

impl Keyspace {
    pub fn new(session: &str, guardrail: &str, requires: Vec<String>) -> Self {
        Keyspace {
            session: session.to_owned(),
            guardrail: guardrail.to_owned(),
            requires,
            txn: Err("no state store for this event".to_owned()),
            staged: BTreeMap::new(),
            stored_keys: None,
            key_delta: 0,
        }
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
    pub fn finish(mut self, keep: bool) -> Result<Option<StateTxn>, StoreError> {
        if let Ok(txn) = self.txn.as_mut()
            && keep
        {
            txn.apply(&self.session, &self.guardrail, &self.staged)?;
        }
        Ok(self.txn.ok())
    }

    fn txn(&self) -> Result<&StateTxn, KeyspaceError> {
        self.txn
            .as_ref()
            .map_err(|why| KeyspaceError::Unavailable(why.clone()))
    }

    fn storage<T>(r: Result<T, StoreError>) -> Result<T, KeyspaceError> {
        r.map_err(|e| KeyspaceError::Unavailable(e.to_string()))
    }

    pub fn get(&self, key: &str) -> Result<Option<String>, KeyspaceError> {
        if let Some(staged) = self.staged.get(key) {
            return Ok(staged.clone());
        }
        let txn = self.txn()?;
        Self::storage(txn.get(&self.session, &self.guardrail, key))
    }

    pub fn set(&mut self, key: &str, value: &str) -> Result<(), KeyspaceError> {
        if key.len() > MAX_KEY_BYTES {
            return Err(KeyspaceError::KeyTooLong);
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(KeyspaceError::ValueTooLarge);
        }
        let existed = self.get(key)?.is_some();
        if !existed {
            let stored = match self.stored_keys {
                Some(stored) => stored,
                None => {
                    let txn = self.txn()?;
                    let stored = Self::storage(txn.key_count(&self.session, &self.guardrail))?;
                    *self.stored_keys.insert(stored)
                }
            };
            if stored as i64 + self.key_delta >= MAX_KEYS as i64 {
                return Err(KeyspaceError::KeyspaceFull);
            }
            self.key_delta += 1;
        }
        self.staged.insert(key.to_owned(), Some(value.to_owned()));
        Ok(())
    }

    pub fn delete(&mut self, key: &str) -> Result<bool, KeyspaceError> {
        let existed = self.get(key)?.is_some();
        if existed {
            self.key_delta -= 1;
            self.staged.insert(key.to_owned(), None);
        }
        Ok(existed)
    }

    pub fn list(&self, prefix: &str) -> Result<Vec<Entry>, KeyspaceError> {
        let txn = self.txn()?;
        let stored = Self::storage(txn.list(&self.session, &self.guardrail, prefix))?;
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
        Self::storage(txn.list(&self.session, owner, prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, StateStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::open(dir.path(), Duration::from_secs(1)).unwrap();
        (dir, store)
    }

    #[test]
    fn writes_are_staged_until_the_guardrail_finishes() {
        let (_dir, store) = store();
        let mut ks = Keyspace::new("s", "g", vec![]).with_txn(store.begin().unwrap());
        ks.set("a", "1").unwrap();
        assert_eq!(ks.get("a").unwrap().as_deref(), Some("1"));
        assert_eq!(ks.list("").unwrap().len(), 1);
        // A guardrail that failed: its writes are discarded.
        let txn = ks.finish(false).unwrap().unwrap();
        let ks = Keyspace::new("s", "g", vec![]).with_txn(txn);
        assert_eq!(ks.get("a").unwrap(), None);
        ks.finish(true).unwrap().unwrap().commit().unwrap();
        assert_eq!(store.read().unwrap().get("s", "g", "a").unwrap(), None);
    }

    #[test]
    fn committed_writes_are_read_back_in_key_order() {
        let (_dir, store) = store();
        let mut ks = Keyspace::new("s", "g", vec![]).with_txn(store.begin().unwrap());
        for key in ["tag:b", "tag:a", "other"] {
            ks.set(key, key).unwrap();
        }
        assert!(ks.delete("other").unwrap());
        assert!(!ks.delete("never").unwrap());
        ks.finish(true).unwrap().unwrap().commit().unwrap();
        let keys: Vec<String> = store
            .read()
            .unwrap()
            .list("s", "g", "tag:")
            .unwrap()
            .into_iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(keys, ["tag:a", "tag:b"]);
        assert!(
            store
                .read()
                .unwrap()
                .list("s", "other-guardrail", "")
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .read()
                .unwrap()
                .list("other-session", "g", "")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_key_limit_counts_staged_and_stored_keys() {
        let (_dir, store) = store();
        let mut ks = Keyspace::new("s", "g", vec![]).with_txn(store.begin().unwrap());
        for i in 0..MAX_KEYS {
            ks.set(&format!("k{i}"), "v").unwrap();
        }
        assert_eq!(ks.set("one-more", "v"), Err(KeyspaceError::KeyspaceFull));
        // Overwriting an existing key is not a new key.
        ks.set("k0", "w").unwrap();
        ks.finish(true).unwrap().unwrap().commit().unwrap();

        let mut ks = Keyspace::new("s", "g", vec![]).with_txn(store.begin().unwrap());
        assert_eq!(ks.set("one-more", "v"), Err(KeyspaceError::KeyspaceFull));
        assert!(ks.delete("k1").unwrap());
        ks.set("one-more", "v").unwrap();
        assert_eq!(ks.set("two-more", "v"), Err(KeyspaceError::KeyspaceFull));
    }

    #[test]
    fn list_owner_needs_requires() {
        let (_dir, store) = store();
        let ks = Keyspace::new("s", "judge", vec!["ctx".into()]).with_txn(store.begin().unwrap());
        assert_eq!(ks.list_owner("ctx", "").unwrap(), vec![]);
        assert_eq!(
            ks.list_owner("other", ""),
            Err(KeyspaceError::OwnerNotRequired("other".into()))
        );
    }

    #[test]
    fn a_second_opener_waits_then_times_out() {
        let (dir, _held) = store();
        let started = Instant::now();
        let second = StateStore::open(dir.path(), Duration::from_millis(50));
        assert!(matches!(second, Err(StoreError::LockTimeout(_))));
        assert!(started.elapsed() >= Duration::from_millis(50));
    }
}
