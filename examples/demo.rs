//! Feeds a recorded Claude Code session (examples/session/hooks.jsonl) through the
//! real `sandrail hook`, with the embedded default config and a scratch state, and
//! prints what sandrail answered to each event.
//!
//! Run from the repository root:
//!     rustup target add wasm32-wasip2 && cargo build --release && cargo run --release --example demo

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let session_dir = root.join("examples/session");
    let sandrail = sandrail_binary()?;
    let scratch = tempfile::tempdir()?;
    let project = scratch.path().join("project");
    std::fs::create_dir_all(&project)?;
    let transcript = session_dir.join("transcript.jsonl").canonicalize()?;

    let recorded = std::fs::read_to_string(session_dir.join("hooks.jsonl"))?;
    let mut session = String::new();
    println!(
        "{:>2}  {:<17} {:<6} {:<58} answer",
        "#", "event", "tool", "input"
    );
    for (i, line) in recorded.lines().enumerate() {
        let mut payload: Value = serde_json::from_str(line)?;
        // The recording names the machine it came from; point it at the example transcript.
        payload["transcript_path"] = Value::from(transcript.to_string_lossy().into_owned());
        session = payload["session_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();

        let mut child = Command::new(&sandrail)
            .arg("hook")
            .env_remove("SANDRAIL_CONFIG")
            .env("CLAUDE_PROJECT_DIR", &project)
            .env("SANDRAIL_STATE_DIR", scratch.path().join("state"))
            .env("SANDRAIL_CACHE_DIR", scratch.path().join("cache"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        child
            .stdin
            .take()
            .ok_or("no stdin")?
            .write_all(payload.to_string().as_bytes())?;
        let output = child.wait_with_output()?;
        let answer = String::from_utf8_lossy(&output.stdout).trim().to_owned();

        println!(
            "{:>2}  {:<17} {:<6} {:<58} {}",
            i + 1,
            payload["hook_event_name"].as_str().unwrap_or("?"),
            payload["tool_name"].as_str().unwrap_or("-"),
            summary(&payload),
            describe(&answer)
        );
    }

    println!("\nState the session-budget guardrail kept for this session:");
    let listed = Command::new(&sandrail)
        .args([
            "state",
            "list",
            "--session",
            &session,
            "--guardrail",
            "session-budget",
        ])
        .env("CLAUDE_PROJECT_DIR", &project)
        .env("SANDRAIL_STATE_DIR", scratch.path().join("state"))
        .output()?;
    print!("{}", String::from_utf8_lossy(&listed.stdout));
    Ok(())
}

/// The release `sandrail` binary next to this example's own build directory.
fn sandrail_binary() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot locate the build directory")?;
    let binary = profile_dir.join("sandrail");
    if !binary.is_file() {
        return Err(format!(
            "{} not found: run `cargo build --release` first",
            binary.display()
        )
        .into());
    }
    Ok(binary)
}

/// One line saying what the event was about.
fn summary(payload: &Value) -> String {
    let input = &payload["tool_input"];
    let text = input["command"]
        .as_str()
        .or(input["file_path"].as_str())
        .or(payload["prompt"].as_str())
        .or(payload["source"].as_str())
        .or(payload["reason"].as_str())
        .unwrap_or("");
    let text = text.replace('\n', " ");
    if text.chars().count() > 56 {
        format!("{}…", text.chars().take(55).collect::<String>())
    } else {
        text
    }
}

/// The answer in a few words: what the harness will do.
fn describe(answer: &str) -> String {
    if answer.is_empty() {
        return "proceed (no output)".to_owned();
    }
    let Ok(json) = serde_json::from_str::<Value>(answer) else {
        return format!("unexpected answer: {answer}");
    };
    let specific = &json["hookSpecificOutput"];
    if specific["permissionDecision"] == "deny" {
        return format!(
            "DENY  {}",
            first_line(&specific["permissionDecisionReason"])
        );
    }
    if json["decision"] == "block" {
        return format!("BLOCK {}", first_line(&json["reason"]));
    }
    if let Some(context) = specific["additionalContext"].as_str() {
        return format!("note  {context}");
    }
    format!("note  {}", first_line(&json["systemMessage"]))
}

fn first_line(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}
