//! The override trail: every time a person let through a call that a soft_block
//! refused, one JSON line in the project's `.sandrail/audit/overrides.jsonl`. It
//! lives in the project, meant to be committed, so a team sees its overrides in
//! review; lines are only ever appended.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the trail lives, relative to the project.
pub const TRAIL: &str = ".sandrail/audit/overrides.jsonl";
/// How much of the tool input an override record keeps.
const SUMMARY_CHARS: usize = 100;

/// How an override was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detected {
    /// The same input came again within the override window, as it does when the
    /// user approves a refused call: inferred from timing.
    Reinvocation,
    /// The soft_block asked the user, and the call's PostToolUse showed it ran:
    /// certain.
    Confirmed,
}

/// One override.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Override {
    /// RFC 3339, UTC.
    pub time: String,
    pub session: String,
    pub guardrail: String,
    pub rule: String,
    pub tool: Option<String>,
    /// The start of the tool input, as compact JSON.
    pub summary: String,
    /// The rule's counter when the call was let through (it does not move).
    pub counter: u64,
    pub detected: Detected,
    /// dotforge's `reason`: why the person let the call through. Empty, as in
    /// dotforge: neither an approval nor a repeated call says why.
    #[serde(default)]
    pub reason: String,
}

impl Override {
    /// The first characters of a tool input, on one line.
    pub fn summarise(tool_input: &str) -> String {
        let one_line: String = tool_input
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        sandrail_event::text::cap_chars(&one_line, SUMMARY_CHARS)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot write the override trail {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the override trail: {0}")]
    Read(#[from] crate::files::FileError),
    #[error("{path}:{line}: not an override record: {source}")]
    Parse {
        path: PathBuf,
        line: usize,
        source: serde_json::Error,
    },
}

/// The trail's path in `project`.
pub fn trail(project: &Path) -> PathBuf {
    project.join(TRAIL)
}

/// Appends records to the trail in one write, creating it if needed.
pub fn append(project: &Path, records: &[Override]) -> Result<(), AuditError> {
    if records.is_empty() {
        return Ok(());
    }
    let path = trail(project);
    let write_error = |source| AuditError::Write {
        path: path.clone(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write_error)?;
    }
    let mut text = String::new();
    for record in records {
        // Serialising plain strings and numbers cannot fail.
        if let Ok(line) = serde_json::to_string(record) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(write_error)
}

/// The largest trail read back.
const MAX_TRAIL_BYTES: u64 = 64 << 20;

/// Every record in the trail, oldest first; none when there is no trail.
pub fn read(project: &Path) -> Result<Vec<Override>, AuditError> {
    let path = trail(project);
    let bytes = match crate::files::read_regular(&path, MAX_TRAIL_BYTES) {
        Ok(bytes) => bytes,
        Err(crate::files::FileError::Missing { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|source| AuditError::Parse {
                path: path.clone(),
                line: i + 1,
                source,
            })
        })
        .collect()
}
