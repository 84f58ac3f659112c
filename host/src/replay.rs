//! A Claude Code transcript read back into the hook events it caused, for
//! `sandrail replay`: each real prompt, each tool call before and after it runs,
//! each subagent's end and each stop, in order, with how much of the transcript
//! had been written when the event fired.
//!
//! The transcript is JSON lines: `user` lines hold a real prompt (a string, or
//! text blocks) or tool results; `assistant` lines hold one content block each,
//! streamed with a shared `message.id`; `isSidechain` marks a subagent's lines;
//! `summary`, `system`, meta and compact-summary lines cause no event; and the
//! last line may be cut off mid-write.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::event::EventKind;

/// Markers of a user line that records a slash command, not a prompt.
const COMMAND_MARKERS: [&str; 4] = [
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
];

/// One event to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub kind: EventKind,
    /// The turn: 1 for the first real prompt (0 before any).
    pub turn: u32,
    pub tool: Option<String>,
    /// What the event is about, in a few words.
    pub summary: String,
    /// Inside a subagent.
    pub subagent: bool,
    /// The event's own payload fields (the runner adds session, transcript, cwd).
    pub fields: Value,
    /// The working directory the transcript recorded for it.
    pub cwd: Option<String>,
    /// How many of the transcript's lines were written when the event fired.
    pub lines_written: usize,
}

/// The events of a transcript, and what was passed over.
#[derive(Debug, Default)]
pub struct Replayed {
    pub steps: Vec<Step>,
    /// The transcript's complete lines, as written.
    pub lines: Vec<String>,
    pub session_id: Option<String>,
    /// Lines that caused no event, by kind (`summary`, `system`, `meta`, …).
    pub passed_over: std::collections::BTreeMap<String, usize>,
    /// Lines that could not be read, with why.
    pub unreadable: Vec<String>,
}

/// Reads a transcript's text into its events.
pub fn read(text: &str) -> Replayed {
    let mut out = Replayed::default();
    let mut state = Walk::default();
    let complete = text.ends_with('\n');
    let raw_lines: Vec<&str> = text.lines().collect();
    for (i, raw) in raw_lines.iter().enumerate() {
        let last = i + 1 == raw_lines.len();
        if raw.trim().is_empty() {
            continue;
        }
        let line: Value = match serde_json::from_str(raw) {
            Ok(line) => line,
            Err(e) if last && !complete => {
                out.unreadable.push(format!(
                    "line {}: cut off mid-line ({e}); the transcript was still being written",
                    i + 1
                ));
                continue;
            }
            Err(e) => {
                out.unreadable
                    .push(format!("line {}: not JSON ({e})", i + 1));
                continue;
            }
        };
        out.lines.push((*raw).to_owned());
        if out.session_id.is_none() {
            out.session_id = line
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        let written = out.lines.len();
        state.take(&line, written, &mut out);
    }
    state.end_turn(out.lines.len(), &mut out);
    out
}

#[derive(Default)]
struct Walk {
    turn: u32,
    open_turn: bool,
    last_text: Option<String>,
    /// Tool calls seen, by id: (name, input, inside a subagent).
    calls: HashMap<String, (String, Value, bool)>,
    /// Tool call ids already turned into a PreToolUse (streamed blocks repeat).
    called: HashSet<String>,
}

impl Walk {
    fn take(&mut self, line: &Value, written: usize, out: &mut Replayed) {
        let kind = line.get("type").and_then(Value::as_str).unwrap_or("");
        let flag = |name: &str| line.get(name).and_then(Value::as_bool).unwrap_or(false);
        let sidechain = flag("isSidechain");
        let cwd = line.get("cwd").and_then(Value::as_str).map(str::to_owned);
        let pass_over = |what: &str, out: &mut Replayed| {
            *out.passed_over.entry(what.to_owned()).or_default() += 1;
        };
        if kind != "user" && kind != "assistant" {
            pass_over(if kind.is_empty() { "untyped" } else { kind }, out);
            return;
        }
        if flag("isMeta") {
            return pass_over("meta", out);
        }
        if flag("isCompactSummary") {
            return pass_over("compact summary", out);
        }
        let content = line.get("message").and_then(|m| m.get("content"));
        if kind == "assistant" {
            for block in content.and_then(Value::as_array).into_iter().flatten() {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") if !sidechain => {
                        self.last_text =
                            block.get("text").and_then(Value::as_str).map(str::to_owned);
                    }
                    Some("tool_use") => self.tool_use(block, sidechain, cwd.clone(), written, out),
                    _ => {}
                }
            }
            return;
        }
        // A user line: a prompt, or tool results.
        let results: Vec<&Value> = content
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .collect();
        if !results.is_empty() {
            for result in results {
                self.tool_result(result, cwd.clone(), written, out);
            }
            return;
        }
        let prompt = match content {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Array(blocks)) => {
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect();
                (!texts.is_empty()).then(|| texts.join("\n"))
            }
            _ => None,
        };
        let Some(prompt) = prompt else {
            return pass_over("user without text", out);
        };
        if COMMAND_MARKERS.iter().any(|m| prompt.contains(m)) {
            return pass_over("slash command", out);
        }
        if sidechain {
            // A subagent's task, sent by the Agent call already replayed.
            return pass_over("subagent prompt", out);
        }
        // The prompt's hook fires before its line is written.
        self.end_turn(written - 1, out);
        self.turn += 1;
        self.open_turn = true;
        out.steps.push(Step {
            kind: EventKind::UserPromptSubmit,
            turn: self.turn,
            tool: None,
            summary: prompt.clone(),
            subagent: false,
            fields: json!({ "prompt": prompt }),
            cwd,
            lines_written: written - 1,
        });
    }

    fn tool_use(
        &mut self,
        block: &Value,
        sidechain: bool,
        cwd: Option<String>,
        written: usize,
        out: &mut Replayed,
    ) {
        let Some(id) = block.get("id").and_then(Value::as_str) else {
            return;
        };
        if !self.called.insert(id.to_owned()) {
            return;
        }
        let name = block
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
        self.calls
            .insert(id.to_owned(), (name.clone(), input.clone(), sidechain));
        out.steps.push(Step {
            kind: EventKind::PreToolUse,
            turn: self.turn,
            summary: summarise(&name, &input),
            tool: Some(name.clone()),
            subagent: sidechain,
            fields: json!({"tool_name": name, "tool_input": input, "tool_use_id": id}),
            cwd,
            lines_written: written,
        });
    }

    fn tool_result(
        &mut self,
        block: &Value,
        cwd: Option<String>,
        written: usize,
        out: &mut Replayed,
    ) {
        let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
            return;
        };
        let Some((name, input, sidechain)) = self.calls.get(id).cloned() else {
            *out.passed_over
                .entry("result of an unseen call".into())
                .or_default() += 1;
            return;
        };
        if matches!(name.as_str(), "Agent" | "Task") {
            // The subagent ended before its result came back.
            out.steps.push(Step {
                kind: EventKind::SubagentStop,
                turn: self.turn,
                tool: None,
                summary: summarise(&name, &input),
                subagent: true,
                fields: json!({"stop_hook_active": false}),
                cwd: cwd.clone(),
                lines_written: written - 1,
            });
        }
        if block.get("is_error").and_then(Value::as_bool) == Some(true) {
            // Claude Code sends PostToolUseFailure, which no guardrail judges.
            *out.passed_over
                .entry("failed tool result".into())
                .or_default() += 1;
            return;
        }
        out.steps.push(Step {
            kind: EventKind::PostToolUse,
            turn: self.turn,
            summary: summarise(&name, &input),
            tool: Some(name.clone()),
            subagent: sidechain,
            fields: json!({
                "tool_name": name,
                "tool_input": input,
                "tool_use_id": id,
                "tool_response": block.get("content").cloned().unwrap_or(Value::Null),
            }),
            cwd,
            lines_written: written - 1,
        });
    }

    /// The Stop that ended the open turn, once everything it wrote was written.
    fn end_turn(&mut self, written: usize, out: &mut Replayed) {
        if !self.open_turn {
            return;
        }
        self.open_turn = false;
        let last = self.last_text.take();
        out.steps.push(Step {
            kind: EventKind::Stop,
            turn: self.turn,
            tool: None,
            summary: last.clone().unwrap_or_else(|| "stop".into()),
            subagent: false,
            fields: json!({"stop_hook_active": false, "last_assistant_message": last}),
            cwd: None,
            lines_written: written,
        });
    }
}

/// A tool call in a few words: the command, the file, the pattern, the prompt.
fn summarise(name: &str, input: &Value) -> String {
    let field = |key: &str| input.get(key).and_then(Value::as_str);
    field("command")
        .or_else(|| field("file_path"))
        .or_else(|| field("notebook_path"))
        .or_else(|| field("url"))
        .or_else(|| field("pattern"))
        .or_else(|| field("query"))
        .or_else(|| field("description"))
        .unwrap_or(name)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_blocks_make_one_call_and_a_cut_line_is_reported() {
        let text = concat!(
            r#"{"type":"summary","summary":"earlier"}"#,
            "\n",
            r#"{"type":"user","sessionId":"s1","message":{"content":"fix it"}}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"On it."}]}}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#,
            "\n",
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a b"}]}}"#,
            "\n",
            r#"{"type":"user","message":{"content":"next"#,
        );
        let replayed = read(text);
        let kinds: Vec<EventKind> = replayed.steps.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::UserPromptSubmit,
                EventKind::PreToolUse,
                EventKind::PostToolUse,
                EventKind::Stop
            ]
        );
        assert_eq!(replayed.session_id.as_deref(), Some("s1"));
        assert_eq!(replayed.unreadable.len(), 1);
        assert_eq!(replayed.steps[0].lines_written, 1);
        assert_eq!(replayed.steps[3].summary, "On it.");
    }
}
