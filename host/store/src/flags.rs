//! Flags: session-scoped markers that one guardrail sets and another checks or
//! consumes. They live in the session's database beside the keyspaces, and a
//! guardrail reaches only the flags its entry grants it.

use std::collections::BTreeMap;

use redb::{ReadableTable, TableDefinition};

use super::{StateReader, StateTxn, StoreError};

/// flag name → when it was last set, in seconds since the epoch.
const FLAGS: TableDefinition<&str, u64> = TableDefinition::new("flags");

/// The longest flag name.
pub const MAX_FLAG_NAME_BYTES: usize = 128;

/// What a guardrail entry may do with which flags (`[guardrail.flags]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlagGrants {
    /// Flags it may set.
    #[serde(default)]
    pub set: Vec<String>,
    /// Flags it may read, leaving them set.
    #[serde(default)]
    pub check: Vec<String>,
    /// Flags it may read and clear (and so also check).
    #[serde(default)]
    pub consume: Vec<String>,
}

impl FlagGrants {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.check.is_empty() && self.consume.is_empty()
    }

    pub fn may_set(&self, flag: &str) -> bool {
        self.set.iter().any(|f| f == flag)
    }

    pub fn may_check(&self, flag: &str) -> bool {
        self.check.iter().chain(&self.consume).any(|f| f == flag)
    }

    pub fn may_consume(&self, flag: &str) -> bool {
        self.consume.iter().any(|f| f == flag)
    }

    /// Every flag named, each once.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .set
            .iter()
            .chain(&self.check)
            .chain(&self.consume)
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Checks the names ([`check_name`]).
    pub fn validate(&self) -> Result<(), String> {
        for name in self.names() {
            check_name(name).map_err(|e| format!("flags: {e}"))?;
        }
        Ok(())
    }
}

/// A name no flag can have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a flag name (1 to {MAX_FLAG_NAME_BYTES} bytes, no spaces)")]
pub struct NotAFlagName(pub String);

/// Checks a flag name: non-empty, at most [`MAX_FLAG_NAME_BYTES`], no
/// whitespace — the same for an entry's grants and a person's command.
pub fn check_name(name: &str) -> Result<(), NotAFlagName> {
    if name.is_empty() || name.len() > MAX_FLAG_NAME_BYTES || name.chars().any(char::is_whitespace)
    {
        return Err(NotAFlagName(name.to_owned()));
    }
    Ok(())
}

/// Why a flag call was refused; mirrors the WIT `flag-error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error("this guardrail's entry does not grant it to {0}")]
    NotGranted(String),
    #[error("state unavailable: {0}")]
    Unavailable(String),
}

/// A guardrail's flag changes during one event: set (at a time) or cleared.
#[derive(Debug, Default)]
pub(super) struct StagedFlags {
    pub(super) changes: BTreeMap<String, Option<u64>>,
}

impl StateTxn {
    /// Whether `flag` is set in this session.
    pub(super) fn flag_is_set(&self, flag: &str) -> Result<bool, StoreError> {
        match self.txn.open_table(FLAGS) {
            Ok(table) => Ok(table.get(flag)?.is_some()),
            Err(e) => Err(e.into()),
        }
    }

    /// Applies a guardrail's flag changes.
    pub(super) fn apply_flags(&mut self, staged: &StagedFlags) -> Result<(), StoreError> {
        if staged.changes.is_empty() {
            return Ok(());
        }
        let mut table = self.txn.open_table(FLAGS)?;
        for (flag, change) in &staged.changes {
            match change {
                Some(at) => table.insert(flag.as_str(), *at)?,
                None => table.remove(flag.as_str())?,
            };
        }
        self.dirty = true;
        Ok(())
    }

    /// Every flag set in this session, with when.
    pub fn flags(&self) -> Result<Vec<(String, u64)>, StoreError> {
        flags_in(&self.txn.open_table(FLAGS)?)
    }

    /// A person's change to a flag (`sandrail flag set|clear`), outside any
    /// guardrail's grant: set at `set_at`, or cleared when it is `None`. Returns
    /// whether it was set before.
    pub fn change_flag(&mut self, flag: &str, set_at: Option<u64>) -> Result<bool, StoreError> {
        let was_set = self.flag_is_set(flag)?;
        if set_at.is_none() && !was_set {
            return Ok(false);
        }
        let mut staged = StagedFlags::default();
        staged.changes.insert(flag.to_owned(), set_at);
        self.apply_flags(&staged)?;
        Ok(was_set)
    }
}

impl StateReader {
    /// Every flag set in this session, with when, in name order: for `sandrail
    /// status`.
    pub fn flags(&self) -> Result<Vec<(String, u64)>, StoreError> {
        match self.txn.open_table(FLAGS) {
            Ok(table) => flags_in(&table),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }
}

fn flags_in(
    table: &impl ReadableTable<&'static str, u64>,
) -> Result<Vec<(String, u64)>, StoreError> {
    let mut out = Vec::new();
    for item in table.iter()? {
        let (k, v) = item?;
        out.push((k.value().to_owned(), v.value()));
    }
    Ok(out)
}
