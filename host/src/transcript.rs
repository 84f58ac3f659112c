//! Reading Claude Code's transcript: which turn an event belongs to.
//!
//! A turn starts with each real user message: a `type: "user"` line whose
//! `message.content` is a string. Tool results are `type: "user"` lines too, but
//! carry an array, and several arrive within one turn, so they do not count; nor
//! do lines the harness writes on the user's behalf (`isMeta`, `isCompactSummary`)
//! or a subagent's prompt (`isSidechain`). The
//! turn id is `<count>:<uuid>`; the count (which only grows) keeps apart two turns
//! that share a uuid, as a re-injected refusal can.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Deserialize;

/// The turn an event belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub count: u32,
    pub uuid: String,
}

impl Turn {
    pub fn id(&self) -> String {
        format!("{}:{}", self.count, self.uuid)
    }
}

/// The largest transcript read for one event. Past it the turn is unknown (and
/// the event still judged) rather than the hook slow.
pub const MAX_TRANSCRIPT_BYTES: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("transcript: {0}")]
    File(#[from] crate::files::FileError),
    #[error("cannot read transcript {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("transcript {0} holds no real user message yet")]
    NoUserMessage(String),
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a str>,
    #[serde(default, rename = "isSidechain")]
    is_sidechain: bool,
    #[serde(default, rename = "isMeta")]
    is_meta: bool,
    #[serde(default, rename = "isCompactSummary")]
    is_compact_summary: bool,
    #[serde(borrow)]
    uuid: Option<std::borrow::Cow<'a, str>>,
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    content: Option<serde_json::Value>,
}

/// Computes the current turn from the transcript at `path`.
///
/// Lines that do not parse (such as a last line still being written) are skipped.
pub fn current_turn(path: &Path) -> Result<Turn, TranscriptError> {
    let display = path.display().to_string();
    let (file, _) = crate::files::open_regular(path, MAX_TRANSCRIPT_BYTES)?;
    let mut reader = BufReader::new(file.take(MAX_TRANSCRIPT_BYTES));
    let mut line = Vec::new();
    let user_marker = memchr::memmem::Finder::new(b"\"user\"");
    let mut count = 0u32;
    let mut last_uuid = None;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| TranscriptError::Read {
                path: display.clone(),
                source,
            })?;
        if read == 0 {
            break;
        }
        // Cheap filter before parsing: most lines are assistant output or tool results.
        if user_marker.find(&line).is_none() {
            continue;
        }
        // A line that does not parse (a last line still being written, bytes that
        // are not UTF-8) is skipped rather than costing the whole turn.
        let Ok(parsed) = serde_json::from_slice::<Line>(&line) else {
            continue;
        };
        let is_real_user_message = parsed.kind == Some("user")
            && !parsed.is_sidechain
            && !parsed.is_meta
            && !parsed.is_compact_summary
            && parsed
                .message
                .as_ref()
                .and_then(|m| m.content.as_ref())
                .is_some_and(serde_json::Value::is_string);
        if let (true, Some(uuid)) = (is_real_user_message, parsed.uuid) {
            count += 1;
            last_uuid = Some(uuid.into_owned());
        }
    }
    match last_uuid {
        Some(uuid) => Ok(Turn { count, uuid }),
        None => Err(TranscriptError::NoUserMessage(display)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn transcript(lines: &[&str]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        for line in lines {
            writeln!(file, "{line}").unwrap();
        }
        file
    }

    #[test]
    fn tool_results_do_not_start_turns() {
        let file = transcript(&[
            r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"fix it"}}"#,
            r#"{"type":"assistant","uuid":"a1","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#,
            r#"{"type":"user","uuid":"r1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}}"#,
            r#"{"type":"user","uuid":"u2","message":{"role":"user","content":"now test"}}"#,
            r#"{"type":"user","uuid":"r2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2"}]}}"#,
            r#"{"type":"user","uuid":"half"#,
        ]);
        let turn = current_turn(file.path()).unwrap();
        assert_eq!(turn.id(), "2:u2");
    }

    #[test]
    fn a_repeated_uuid_is_a_new_turn() {
        let line = r#"{"type":"user","uuid":"same","message":{"content":"refused, try again"}}"#;
        let once = transcript(&[line]);
        let twice = transcript(&[line, line]);
        assert_ne!(
            current_turn(once.path()).unwrap().id(),
            current_turn(twice.path()).unwrap().id()
        );
    }

    #[test]
    fn harness_written_user_lines_do_not_start_turns() {
        let file = transcript(&[
            r#"{"type":"user","uuid":"u1","message":{"content":"build it"}}"#,
            r#"{"type":"user","uuid":"m1","isMeta":true,"message":{"content":"Caveat: local command output follows"}}"#,
            r#"{"type":"user","uuid":"c1","isCompactSummary":true,"message":{"content":"Summary of the conversation"}}"#,
            r#"{"type":"user","uuid":"s1","isSidechain":true,"message":{"content":"subagent prompt"}}"#,
        ]);
        assert_eq!(current_turn(file.path()).unwrap().id(), "1:u1");
    }

    #[test]
    fn no_user_message_is_no_turn() {
        let file = transcript(&[r#"{"type":"summary","summary":"x"}"#]);
        assert!(matches!(
            current_turn(file.path()),
            Err(TranscriptError::NoUserMessage(_))
        ));
    }
}
