//! Input typed into a running shell (Copilot's `write_bash`): each call sends
//! some keystrokes, and the shell runs a line only when Enter ends it. A
//! command sent in pieces — `git push --fo`, then `rce origin main\n` — has no
//! destructive piece; the line the shell assembles is destructive.
//!
//! So the text typed since the last Enter is kept per harness session and
//! shell, in the state directory, and each call is judged as that text with its
//! own input after it, as the shell will run it: Ctrl-C and Ctrl-U drop the line
//! typed so far, backspace drops a character. What a refused call typed is not
//! kept (the harness does not send it).

use std::path::{Path, PathBuf};

use crate::protocol::HookInput;

/// The harness tools that type into a running shell.
const TYPING_TOOLS: &[&str] = &["write_bash"];

/// The most of an unfinished line kept: a shell's line buffer is not longer in
/// any use an agent has for it.
const MAX_PENDING: usize = 64 << 10;

/// What a typing call leaves in its shell's line, to keep once the call is
/// allowed.
pub struct Pending {
    path: PathBuf,
    line: String,
}

/// For a call that types into a shell, the input judged as the shell will run
/// it (the line typed before it, then its own keystrokes), and what it leaves
/// unfinished; None for any other call.
pub fn join(input: &HookInput, state: &Path) -> Option<(HookInput, Pending)> {
    let tool = input.fields.get("harness_tool_name")?.as_str()?;
    if !TYPING_TOOLS.contains(&tool) || input.kind != crate::event::EventKind::PreToolUse {
        return None;
    }
    let typed = input.tool_field("command")?;
    let shell = input.tool_field("sessionId").unwrap_or_default();
    let key = crate::sha256_hex(format!("{}\0{shell}", input.session_id).as_bytes());
    let path = state.join("typed").join(format!("{}.txt", &key[..32]));
    let before = crate::files::read_regular(&path, MAX_PENDING as u64)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let (runs, line) = as_the_shell_reads(&format!("{before}{typed}"));
    let mut payload: serde_json::Value = serde_json::from_str(&input.raw).ok()?;
    payload
        .get_mut("tool_input")?
        .as_object_mut()?
        .insert("command".into(), runs.into());
    let mut joined = HookInput::parse(payload.to_string()).ok()?;
    joined.repairs = input.repairs.clone();
    Some((joined, Pending { path, line }))
}

/// Keeps what an allowed call left unfinished in its shell's line.
pub fn keep(pending: &Pending) {
    let result = if pending.line.is_empty() {
        match std::fs::remove_file(&pending.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    } else {
        pending
            .path
            .parent()
            .map_or(Ok(()), crate::locations::create_private_dir)
            .and_then(|()| crate::files::write_atomically(&pending.path, pending.line.as_bytes()))
    };
    if let Err(e) = result {
        eprintln!(
            "sandrail: cannot keep the line typed so far ({}): {e}; the next piece is judged alone",
            pending.path.display()
        );
    }
}

/// The text the shell runs from `typed` (every line typed, the unfinished one
/// included, as it would run once Enter ends it), and the unfinished line.
fn as_the_shell_reads(typed: &str) -> (String, String) {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for c in typed.chars() {
        match c {
            '\n' | '\r' => {
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
            }
            // Ctrl-C, Ctrl-U: the line so far is dropped.
            '\u{3}' | '\u{15}' => line.clear(),
            // Backspace, DEL.
            '\u{8}' | '\u{7f}' => {
                line.pop();
            }
            c => line.push(c),
        }
    }
    let mut runs = lines.join("\n");
    if !line.is_empty() {
        if !runs.is_empty() {
            runs.push('\n');
        }
        runs.push_str(&line);
    }
    if line.len() > MAX_PENDING {
        let cut = line.len() - MAX_PENDING;
        let cut = (cut..line.len())
            .find(|&i| line.is_char_boundary(i))
            .unwrap_or(line.len());
        line.drain(..cut);
    }
    (runs, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_join_as_the_shell_joins_them() {
        assert_eq!(
            as_the_shell_reads("git push --fo"),
            ("git push --fo".to_owned(), "git push --fo".to_owned())
        );
        assert_eq!(
            as_the_shell_reads("git push --forc\u{7f}ce origin main\n"),
            ("git push --force origin main".to_owned(), String::new())
        );
        assert_eq!(
            as_the_shell_reads("rm -rf ~\u{3}ls\n"),
            ("ls".to_owned(), String::new())
        );
        assert_eq!(
            as_the_shell_reads("ls\ngit reset --h"),
            ("ls\ngit reset --h".to_owned(), "git reset --h".to_owned())
        );
    }
}
