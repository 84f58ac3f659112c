//! Reading Claude Code's transcript: which turn an event belongs to.
//!
//! A turn starts with each real user message: a `type: "user"` line whose
//! `message.content` is a string. Tool results are `type: "user"` lines too, but
//! carry an array, and several arrive within one turn, so they do not count; nor
//! do lines the harness writes on the user's behalf (`isMeta`, `isCompactSummary`,
//! and the lines a slash command leaves: `<command-name>…`, `<local-command-…>`)
//! or a subagent's prompt (`isSidechain`). The turn id is `<count>:<uuid>`; the
//! count (which only grows) keeps apart two turns that share a uuid, as a
//! re-injected refusal can.
//!
//! The transcript only grows, so it is read incrementally: per session a
//! bookmark remembers how far it was read (the end of its last complete line),
//! the count and uuid so far, the file's identity, and a hash of the bytes just
//! before that offset. An event reads only what was appended since. A transcript
//! that was truncated, replaced (rotated) or rewritten before the offset fails
//! those checks and is read again from the start; a last line still being
//! written is counted if it already parses but is read again next time.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

/// The most of a transcript read for one event. A longer stretch not yet read
/// leaves this event's turn unknown (the event is still judged); the bookmark
/// keeps what was read, so the next event goes on from there.
pub const MAX_READ_BYTES: u64 = 64 << 20;
/// How many bytes before the bookmark's offset must be unchanged for the
/// transcript to count as the same one, grown.
const CHECK_BYTES: u64 = 4096;
/// Content that marks a user line as the harness's record of a slash command.
const COMMAND_MARKERS: [&str; 4] = [
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
];

#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("transcript: {0}")]
    File(#[from] sandrail_files::FileError),
    #[error("cannot read transcript {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("transcript {0} holds no real user message yet")]
    NoUserMessage(String),
    #[error(
        "transcript {path}: {read} MiB read of {size} MiB so far ({max} MiB per event); the turn is known once it has been read to the end"
    )]
    Unfinished {
        path: String,
        read: u64,
        size: u64,
        max: u64,
    },
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

/// Where reading a session's transcript left off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Bookmark {
    path: PathBuf,
    /// Device and inode: a rotated transcript is another file.
    identity: (u64, u64),
    /// The end of the last complete line read.
    offset: u64,
    count: u32,
    uuid: Option<String>,
    /// The sha256 of the (up to) [`CHECK_BYTES`] before `offset`.
    check: String,
}

/// The turn of a hook event, from the transcript its payload names (read on from
/// the session's bookmark in the state directory). `None`, with a stderr line
/// saying why, when there is no transcript, it cannot be read, or it holds no
/// real user message yet: the event then has no turn, rather than a wrong one.
pub fn of_event(input: &sandrail_event::payload::HookInput, state: Option<&Path>) -> Option<Turn> {
    let Some(path) = input.transcript_path.as_deref() else {
        // A payload read from another harness has its transcript set aside on
        // purpose (docs/harnesses.md); only a Claude Code payload without one is news.
        if !input.fields.contains_key("harness") {
            eprintln!("sandrail: turn unknown: the payload names no transcript_path");
        }
        return None;
    };
    let bookmarks = state.map(|dir| (dir, input.session_id.as_str()));
    match current_turn_from(Path::new(path), bookmarks) {
        Ok(turn) => Some(turn),
        Err(e) => {
            // The path is the harness's: shown cleaned, on one line.
            eprintln!(
                "sandrail: turn unknown: {}",
                sandrail_event::text::one_line(&e.to_string(), 1000)
            );
            None
        }
    }
}

/// The current turn of the transcript at `path`, read from the start.
pub fn current_turn(path: &Path) -> Result<Turn, TranscriptError> {
    current_turn_from(path, None)
}

/// The current turn of the transcript at `path`, reading only what was appended
/// since this session's bookmark in `bookmarks` (a directory), and moving the
/// bookmark on. Without a directory, or with a bookmark that no longer fits the
/// file, it reads from the start.
pub fn current_turn_from(
    path: &Path,
    bookmarks: Option<(&Path, &str)>,
) -> Result<Turn, TranscriptError> {
    let display = path.display().to_string();
    let read_error = |source| TranscriptError::Read {
        path: display.clone(),
        source,
    };
    let (mut file, size) = sandrail_files::open_regular(path, u64::MAX)?;
    let identity = identity(&file).map_err(read_error)?;
    let bookmark_file = bookmarks.map(|(dir, session)| bookmark_path(dir, session));
    let kept = bookmark_file
        .as_deref()
        .and_then(read_bookmark)
        .filter(|b| b.path == path && b.identity == identity && b.offset <= size);
    let start = match kept {
        // A check that cannot be read is a check that fails: read from the start.
        Some(b) if check_of(&mut file, b.offset).is_ok_and(|check| check == b.check) => b,
        _ => Bookmark {
            path: path.to_path_buf(),
            identity,
            check: sandrail_event::sha256_hex(b""),
            ..Bookmark::default()
        },
    };
    file.seek(SeekFrom::Start(start.offset))
        .map_err(read_error)?;
    let mut reader = BufReader::new(file.take(MAX_READ_BYTES));
    let mut line = Vec::new();
    let user_marker = memchr::memmem::Finder::new(b"\"user\"");
    let mut next = start.clone();
    let mut pending: Option<(u32, String)> = None;
    let mut consumed = 0u64;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(read_error)?;
        if read == 0 {
            break;
        }
        consumed += read as u64;
        let complete = line.last() == Some(&b'\n');
        let user = if user_marker.find(&line).is_some() {
            real_user_message(&line)
        } else {
            None
        };
        if complete {
            next.offset += read as u64;
            if let Some(uuid) = user {
                next.count += 1;
                next.uuid = Some(uuid);
            }
        } else if let Some(uuid) = user {
            // A last line still being written that already parses counts now,
            // and is read again next time.
            pending = Some((next.count + 1, uuid));
        }
    }
    let mut file = reader.into_inner().into_inner();
    // Stopped by the per-event limit rather than by the end of the file.
    let unfinished = consumed >= MAX_READ_BYTES && start.offset + consumed < size;
    if unfinished && next.offset == start.offset {
        // One line longer than a whole read: it cannot be parsed anyway, so it is
        // passed over rather than read again at every event.
        next.offset += consumed;
    }
    // Best effort: without a bookmark the next event reads from the start.
    if next.offset != start.offset
        && let Some(bookmark_file) = &bookmark_file
        && let Ok(check) = check_of(&mut file, next.offset)
    {
        next.check = check;
        let _ = write_bookmark(bookmark_file, &next);
    }
    if unfinished {
        return Err(TranscriptError::Unfinished {
            path: display,
            read: next.offset >> 20,
            size: size >> 20,
            max: MAX_READ_BYTES >> 20,
        });
    }
    match pending.or(next.uuid.map(|uuid| (next.count, uuid))) {
        Some((count, uuid)) => Ok(Turn { count, uuid }),
        None => Err(TranscriptError::NoUserMessage(display)),
    }
}

/// The uuid of a real user message; `None` for any other line, or one that does
/// not parse (bytes that are not UTF-8, a line cut short).
fn real_user_message(line: &[u8]) -> Option<String> {
    let parsed = serde_json::from_slice::<Line>(line).ok()?;
    let content = parsed.message.as_ref()?.content.as_ref()?.as_str()?;
    let real = parsed.kind == Some("user")
        && !parsed.is_sidechain
        && !parsed.is_meta
        && !parsed.is_compact_summary
        && !COMMAND_MARKERS
            .iter()
            .any(|marker| content.trim_start().starts_with(marker));
    real.then(|| parsed.uuid.map(std::borrow::Cow::into_owned))
        .flatten()
}

fn identity(file: &std::fs::File) -> std::io::Result<(u64, u64)> {
    let meta = file.metadata()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok((0, 0))
    }
}

/// The sha256 of the (up to) [`CHECK_BYTES`] before `offset`.
fn check_of(file: &mut std::fs::File, offset: u64) -> std::io::Result<String> {
    let from = offset.saturating_sub(CHECK_BYTES);
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::with_capacity((offset - from) as usize);
    Read::take(&mut *file, offset - from).read_to_end(&mut bytes)?;
    Ok(sandrail_event::sha256_hex(&bytes))
}

fn bookmark_path(dir: &Path, session: &str) -> PathBuf {
    dir.join("transcripts").join(format!(
        "{}.json",
        &sandrail_event::sha256_hex(session.as_bytes())[..32]
    ))
}

fn read_bookmark(path: &Path) -> Option<Bookmark> {
    let bytes = sandrail_files::read_regular(path, 64 * 1024).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Replaces the bookmark whole, by atomic rename: concurrent hooks of a session
/// each write a bookmark that is true of the file, and the reader sees one.
fn write_bookmark(path: &Path, bookmark: &Bookmark) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    sandrail_files::create_private_dir(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(&serde_json::to_vec(bookmark).map_err(std::io::Error::other)?)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// How much of a transcript's end is read to see whether a tool call is open.
const TAIL_BYTES: u64 = 256 << 10;

/// Whether the transcript ends inside a tool call: an assistant `tool_use` with
/// no `tool_result` after it. The harness sends its Stop when the agent has
/// finished answering, so a Stop sent while a call is open comes from within
/// that call (the agent running `sandrail hook` itself). `None` when the
/// transcript cannot be read. Only the last 256 KiB are read.
pub fn in_a_tool_call(path: &Path) -> Option<bool> {
    let (mut file, size) = sandrail_files::open_regular(path, u64::MAX).ok()?;
    let start = size.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut tail = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let mut lines = text.lines();
    if start > 0 {
        // The first line is cut.
        lines.next();
    }
    let mut open: Vec<String> = Vec::new();
    for line in lines {
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let content = entry
            .pointer("/message/content")
            .and_then(serde_json::Value::as_array);
        for block in content.into_iter().flatten() {
            match block.get("type").and_then(serde_json::Value::as_str) {
                Some("tool_use") => {
                    if let Some(id) = block.get("id").and_then(serde_json::Value::as_str) {
                        open.push(id.to_owned());
                    }
                }
                Some("tool_result") => {
                    let id = block.get("tool_use_id").and_then(serde_json::Value::as_str);
                    open.retain(|o| Some(o.as_str()) != id);
                }
                _ => {}
            }
        }
    }
    Some(!open.is_empty())
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
    fn a_tool_call_without_its_result_is_open() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("t.jsonl");
        let call = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}}"#;
        let result = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}}"#;
        let text = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Done."}]}}"#;
        std::fs::write(&path, format!("{call}\n")).expect("write");
        assert_eq!(in_a_tool_call(&path), Some(true));
        std::fs::write(&path, format!("{call}\n{result}\n{text}\n")).expect("write");
        assert_eq!(in_a_tool_call(&path), Some(false));
        assert_eq!(in_a_tool_call(&dir.path().join("none")), None);
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
