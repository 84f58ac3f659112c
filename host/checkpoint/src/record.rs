//! A checkpoint's record: when it was taken, in which session, before which
//! call, and the tree that holds the project as it was. One small file per
//! checkpoint (`records/<id>.json`), written whole by rename, so parallel
//! hooks on one project never write the same file and a reader never sees
//! half of one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::walk::LeftOut;

/// The longest call (a command line, a path) a record keeps, in characters.
pub const MAX_CALL_CHARS: usize = 400;

/// What the checkpoint was taken before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Occasion {
    /// A tool call that can write.
    Call,
    /// The session's start: the project as the session found it.
    SessionStart,
    /// `sandrail undo`: the project as it was before the undo, so the undo can
    /// itself be undone.
    Undo,
}

/// One checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    /// RFC 3339, to the second.
    pub time: String,
    /// Seconds since the epoch (sandrail's clock), for retention.
    pub unix: u64,
    /// Nanoseconds since the epoch, by the system's clock: the order of
    /// checkpoints taken within one second.
    pub order: u128,
    pub session: String,
    pub occasion: Occasion,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The command, or the path, of the call it preceded (at most
    /// [`MAX_CALL_CHARS`], made safe to show).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The digest of the tree holding the project.
    pub root: String,
    pub files: u64,
    pub bytes: u64,
    /// Bytes this checkpoint added to the store.
    pub added_bytes: u64,
    /// The project held a git repository (`.git`).
    pub git: bool,
    /// How long it took, in milliseconds.
    #[serde(default)]
    pub took_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// What the person should hear of how it was taken (git's ignore rules
    /// set aside).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The records of one store.
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    pub fn new(store: &Path) -> Records {
        Records {
            dir: store.join("records"),
        }
    }

    pub fn write(&self, record: &Record) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
        sandrail_files::write_atomically(&self.path(&record.id), &bytes)
    }

    pub fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    pub fn remove(&self, id: &str) -> std::io::Result<()> {
        std::fs::remove_file(self.path(id))
    }

    /// Every record, oldest first; one that cannot be read is skipped and
    /// named in the second list.
    pub fn all(&self) -> std::io::Result<(Vec<Record>, Vec<String>)> {
        let mut records = Vec::new();
        let mut unreadable = Vec::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((records, unreadable)),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            let parsed = sandrail_files::read_regular(&entry.path(), 1 << 20)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
                .filter(|record| record.id == id);
            match parsed {
                Some(record) => records.push(record),
                None => unreadable.push(id.to_owned()),
            }
        }
        records.sort_by(|a, b| a.order.cmp(&b.order).then_with(|| a.id.cmp(&b.id)));
        Ok((records, unreadable))
    }
}

/// A new checkpoint's id: twelve hex digits, unique enough to type a prefix of.
pub fn new_id(session: &str, order: u128, root: &str) -> String {
    let mut seed = Vec::new();
    seed.extend_from_slice(session.as_bytes());
    seed.extend_from_slice(&order.to_le_bytes());
    seed.extend_from_slice(&std::process::id().to_le_bytes());
    seed.extend_from_slice(root.as_bytes());
    let mut random = [0u8; 8];
    if getrandom::fill(&mut random).is_ok() {
        seed.extend_from_slice(&random);
    }
    sandrail_event::sha256_hex(&seed)[..12].to_owned()
}
