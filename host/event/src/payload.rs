//! The hook payload on stdin, read into [`HookInput`]: Claude Code's shape,
//! which every other harness's payload is translated into first.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::EventKind;

/// The largest payload accepted, in bytes.
pub const MAX_PAYLOAD_BYTES: usize = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("cannot read the hook payload from stdin: {0}")]
    Read(#[from] std::io::Error),
    #[error("the hook payload on stdin is empty; the harness sends one JSON object per event")]
    Empty,
    #[error("the hook payload is larger than {MAX_PAYLOAD_BYTES} bytes")]
    TooLarge,
    #[error("the hook payload is not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("the hook payload is not a JSON object")]
    NotObject,
    #[error("the hook payload has no `hook_event_name`")]
    MissingEventName,
    #[error(
        "unknown hook event '{}'; sandrail judges {events}",
        crate::text::one_line(.0, 100),
        events = EventKind::all_names()
    )]
    UnknownEvent(String),
    #[error(
        "unknown {harness} hook event '{}'; sandrail judges {known}",
        crate::text::one_line(.name, 100)
    )]
    UnknownHarnessEvent {
        harness: &'static str,
        name: String,
        known: String,
    },
}

impl PayloadError {
    /// Events Claude Code sends that sandrail does not judge are not an error: there
    /// is simply nothing to say about them.
    pub fn is_unjudged_event(&self) -> bool {
        matches!(self, PayloadError::UnknownEvent(name) if KNOWN_UNJUDGED.contains(&name.as_str()))
    }
}

/// Claude Code events a user may route to sandrail that it has no verdict for.
const KNOWN_UNJUDGED: &[&str] = &[
    "Notification",
    "PermissionRequest",
    "PostToolUseFailure",
    "SubagentStart",
    "PostCompact",
];

/// One parsed hook payload.
///
/// The payload's top-level key under which a platform embedding sandrail supplies
/// its snapshot: the `platform` facts.
pub const PLATFORM_KEY: &str = "sandrail_platform";

/// The payload is read leniently, because parts of it are written by the agent
/// (the tool input): bytes that are not UTF-8 and escapes of lone surrogates are
/// replaced by U+FFFD, and only the top-level fields (and the tool input's) are
/// parsed, so no nesting depth anywhere else can stop the event from being judged.
#[derive(Debug, Clone)]
pub struct HookInput {
    pub kind: EventKind,
    pub session_id: String,
    pub cwd: Option<String>,
    pub transcript_path: Option<String>,
    pub tool_name: Option<String>,
    /// The tool input as JSON text, when the event has one.
    pub tool_input: Option<String>,
    /// The tool input's top-level scalar fields (strings, numbers, booleans).
    pub tool_fields: Map<String, Value>,
    /// The payload's top-level scalar fields.
    pub fields: Map<String, Value>,
    /// The platform's snapshot, as JSON text: the payload's top-level
    /// [`PLATFORM_KEY`], which only the payload's author (the harness or the calling
    /// platform service, never the agent) can write.
    pub platform: Option<String>,
    /// The payload text, repaired as above: valid UTF-8 and valid JSON escapes.
    pub raw: String,
    /// What had to be repaired to read the payload, one sentence each.
    pub repairs: Vec<String>,
}

impl HookInput {
    /// Reads and validates one payload, refusing anything over [`MAX_PAYLOAD_BYTES`].
    pub fn read(reader: impl Read) -> Result<HookInput, PayloadError> {
        let mut bytes = Vec::new();
        reader
            .take(MAX_PAYLOAD_BYTES as u64 + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() > MAX_PAYLOAD_BYTES {
            return Err(PayloadError::TooLarge);
        }
        let mut repairs = Vec::new();
        let raw = match String::from_utf8(bytes) {
            Ok(raw) => raw,
            Err(e) => {
                repairs.push(format!(
                    "the hook payload is not valid UTF-8 (first invalid byte at offset {}); invalid bytes were read as U+FFFD",
                    e.utf8_error().valid_up_to()
                ));
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            }
        };
        let mut input = HookInput::parse(raw)?;
        repairs.append(&mut input.repairs);
        input.repairs = repairs;
        Ok(input)
    }

    pub fn parse(raw: String) -> Result<HookInput, PayloadError> {
        if raw.trim().is_empty() {
            return Err(PayloadError::Empty);
        }
        let mut repairs = Vec::new();
        let raw = match replace_lone_surrogates(&raw) {
            Cow::Borrowed(_) => raw,
            Cow::Owned(repaired) => {
                repairs.push(
                    "the hook payload escapes lone UTF-16 surrogates; they were read as U+FFFD"
                        .to_owned(),
                );
                repaired
            }
        };
        let top = members(&raw)?;
        let fields = scalars(&top);
        let text = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
        let name = text("hook_event_name").ok_or(PayloadError::MissingEventName)?;
        let kind = EventKind::from_payload_name(&name)
            .ok_or_else(|| PayloadError::UnknownEvent(name.clone()))?;
        let session_id = match text("session_id").filter(|s| !s.is_empty()) {
            Some(id) => id,
            None => {
                let id = derived_session_id(text("cwd").as_deref());
                repairs.push(format!(
                    "the hook payload has no `session_id`; the session is {id}, derived from the directory, the parent process and the day"
                ));
                id
            }
        };
        let (tool_name, tool_input, tool_fields) = if kind.is_tool_event() {
            let tool_input = top.get("tool_input").copied();
            let tool_fields = tool_input
                .and_then(|raw| top_level(raw.get()).ok())
                .map(|fields| scalars(&fields))
                .unwrap_or_default();
            (
                text("tool_name"),
                tool_input.map(|raw| raw.get().to_owned()),
                tool_fields,
            )
        } else {
            (None, None, Map::new())
        };
        let platform = top.get(PLATFORM_KEY).map(|raw| raw.get().to_owned());
        Ok(HookInput {
            platform,
            kind,
            session_id,
            cwd: text("cwd"),
            transcript_path: text("transcript_path"),
            tool_name,
            tool_input,
            tool_fields,
            fields,
            raw,
            repairs,
        })
    }

    /// A string field of the tool input.
    pub fn tool_field(&self, name: &str) -> Option<&str> {
        self.tool_fields.get(name).and_then(Value::as_str)
    }
}

/// A session id for harnesses that send none: stable within one process tree (the
/// harness that runs the hooks), one directory and one day, as dotforge derives it.
fn derived_session_id(cwd: Option<&str>) -> String {
    let dir = cwd.map(str::to_owned).unwrap_or_else(|| {
        std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default()
    });
    #[cfg(unix)]
    let parent = std::os::unix::process::parent_id();
    #[cfg(not(unix))]
    let parent = 0;
    let day = crate::clock::rfc3339(crate::clock::now())[..10].replace('-', "");
    crate::sha256_hex(format!("{dir}:{parent}:{day}").as_bytes())[..36].to_owned()
}

/// An object's members as unparsed JSON. serde_json skips a raw value without
/// recursing, so nesting inside the members costs no stack and has no depth limit;
/// of duplicated keys, the last one counts.
fn top_level(text: &str) -> serde_json::Result<BTreeMap<String, &RawValue>> {
    serde_json::from_str(text)
}

/// A payload's top-level members, unparsed (as [`top_level`]), or why the text
/// is not a JSON object: shared by every harness's reading.
pub fn members(text: &str) -> Result<BTreeMap<String, &RawValue>, PayloadError> {
    if text.trim().is_empty() {
        return Err(PayloadError::Empty);
    }
    top_level(text).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            PayloadError::NotJson(e)
        } else {
            PayloadError::NotObject
        }
    })
}

/// The members of an object whose values are strings, numbers or booleans.
fn scalars(members: &BTreeMap<String, &RawValue>) -> Map<String, Value> {
    members
        .iter()
        .filter(|(_, raw)| !raw.get().starts_with(['{', '[']))
        .filter_map(|(key, raw)| {
            let value: Value = serde_json::from_str(raw.get()).ok()?;
            (!value.is_null()).then(|| (key.clone(), value))
        })
        .collect()
}

/// Replaces `\u` escapes of unpaired UTF-16 surrogates, which serde_json refuses,
/// with `\ufffd`. A backslash can only stand inside a string in valid JSON, so
/// escapes are found without tracking where strings begin and end.
fn replace_lone_surrogates(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let unit_at = |i: usize| -> Option<u16> {
        let hex = bytes.get(i..i + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let is_high = |u: u16| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    // (`get`: a backslash last in the text leaves `i` past its end.)
    while let Some(offset) = bytes.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        i += offset;
        let Some(unit) = unit_at(i) else {
            i += 2;
            continue;
        };
        let paired = is_high(unit) && unit_at(i + 6).is_some_and(is_low);
        if paired {
            i += 12;
        } else if is_high(unit) || is_low(unit) {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..i]);
            out.push_str("\\ufffd");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    match out {
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzz target (host/event/fuzz): a payload whose last byte
    /// is a backslash panicked the reader; it is JSON it cannot read.
    #[test]
    fn a_backslash_last_in_the_payload_is_not_json() {
        assert_eq!(replace_lone_surrogates("x\\"), "x\\");
        let read = HookInput::parse(r#"{"hook_event_name":"Stop","a":"\"#.to_owned());
        assert!(matches!(read, Err(PayloadError::NotJson(_))), "{read:?}");
    }

    #[test]
    fn lone_surrogates_are_replaced_and_pairs_kept() {
        let text = r#"{"a":"\ud800 x \udc00 \\ud800 \ud83d\ude00 \u0041"}"#;
        let repaired = replace_lone_surrogates(text);
        assert_eq!(
            repaired,
            r#"{"a":"\ufffd x \ufffd \\ud800 \ud83d\ude00 \u0041"}"#
        );
        let value: Value = serde_json::from_str(&repaired).unwrap();
        assert_eq!(value["a"], "\u{fffd} x \u{fffd} \\ud800 \u{1f600} A");
        assert!(matches!(replace_lone_surrogates("{}"), Cow::Borrowed(_)));
    }

    #[test]
    fn deep_nesting_outside_the_top_level_is_skipped() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let raw = format!(
            r#"{{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash","extra":{deep},"tool_input":{{"command":"ls","x":{deep}}}}}"#
        );
        let input = HookInput::parse(raw).unwrap();
        assert_eq!(input.tool_field("command"), Some("ls"));
        assert!(!input.fields.contains_key("extra"));
    }
}
