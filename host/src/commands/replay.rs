//! `sandrail replay TRANSCRIPT.jsonl [--config C] [--json]`: tries a policy on a
//! past session. Each event the transcript records goes through this binary's
//! own `sandrail hook`, with the transcript written up to where it stood when
//! the event fired, under the policy in observe mode, in a scratch project and
//! state: nothing of the user's sessions, counters or receipts is touched, and
//! no receipt goes to the system log. What each guardrail would have said comes
//! from the scratch receipts.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use sandrail::config::{CONFIG_FILE, Config, EMBEDDED_DEFAULT, Located};
use sandrail::receipts::{self, Receipt};
use sandrail::replay::{self, Step};

use super::project_dir;

/// The largest transcript replayed.
const MAX_TRANSCRIPT_BYTES: u64 = 256 << 20;

/// One replayed event and what the policy made of it.
#[derive(serde::Serialize)]
struct Row {
    n: usize,
    turn: u32,
    event: String,
    tool: Option<String>,
    summary: String,
    subagent: bool,
    /// `allow`, `would deny`, `would block`, `ask`, `note`, or `-` (nothing judged).
    decision: String,
    guardrail: Option<String>,
    rule: Option<String>,
    level: Option<String>,
    message: Option<String>,
}

pub fn run(transcript: &Path, config: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let bytes = sandrail::files::read_regular(transcript, MAX_TRANSCRIPT_BYTES)
        .with_context(|| format!("cannot read the transcript {}", transcript.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let replayed = replay::read(&text);
    if replayed.steps.is_empty() {
        bail!(
            "{} records no prompt or tool call to replay ({} lines read); give a Claude Code session transcript (~/.claude/projects/…/SESSION.jsonl)",
            transcript.display(),
            replayed.lines.len()
        );
    }
    let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
    let project = scratch.path().join("project");
    let state = scratch.path().join("state");
    std::fs::create_dir_all(&project)?;
    let (policy_text, policy_dir, origin) = policy(config)?;
    let observed = observe(&policy_text, policy_dir.as_deref())?;
    let scratch_config = project.join(CONFIG_FILE);
    std::fs::write(&scratch_config, &observed)?;
    Config::load(&scratch_config)
        .map_err(|e| anyhow::anyhow!("the policy {origin} cannot be used: {e}"))?;
    let _scratch = super::test::ScratchProject::accepting(&project, &state)?;

    let copy = scratch.path().join("transcript.jsonl");
    let mut copy_file = std::fs::File::create(&copy)?;
    let mut copied = 0;
    let session = replayed
        .session_id
        .clone()
        .unwrap_or_else(|| "replay".to_owned());
    let hook = std::env::current_exe().context("cannot find this sandrail binary")?;
    let mut rows = Vec::new();
    let mut seen = 0;
    for (i, step) in replayed.steps.iter().enumerate() {
        // The transcript as it stood when the event fired.
        while copied < step.lines_written.min(replayed.lines.len()) {
            writeln!(copy_file, "{}", replayed.lines[copied])?;
            copied += 1;
        }
        copy_file.flush()?;
        let payload = payload(step, &session, &copy, &project);
        let ran = super::test::run_hook(&hook, &payload, &project, &state)?;
        let receipts = receipts::read_all(&state).unwrap_or_default();
        let receipt = (receipts.len() > seen)
            .then(|| receipts.last().and_then(|(_, r)| r.as_ref().ok()).cloned())
            .flatten();
        seen = receipts.len();
        let mut row = row(i + 1, step, receipt.as_ref());
        if row.message.is_none() {
            // What observe mode let through is said on stderr only.
            row.message = ran.stderr.lines().find_map(|l| {
                l.split_once("observe mode, not refused: ")
                    .map(|(_, m)| m.to_owned())
            });
        }
        if let Some(why) = ran.failed.or(ran.refused) {
            row.decision = "error".into();
            row.message = Some(why);
        }
        rows.push(row);
    }
    if json {
        for row in &rows {
            println!("{}", serde_json::to_string(row)?);
        }
        println!("{}", summary_json(&rows, &replayed, &origin));
    } else {
        print_table(&rows);
        print_summary(&rows, &replayed, transcript, &origin);
    }
    Ok(ExitCode::SUCCESS)
}

/// The policy to try: the file given, else the one in force for this directory.
fn policy(config: Option<&Path>) -> anyhow::Result<(String, Option<PathBuf>, String)> {
    let path = match config {
        Some(path) => Some(path.to_path_buf()),
        None => match Config::locate(project_dir().as_deref())? {
            Located::File(path) => Some(path),
            Located::Embedded => None,
        },
    };
    let Some(path) = path else {
        return Ok((
            EMBEDDED_DEFAULT.to_owned(),
            None,
            "the embedded default".into(),
        ));
    };
    let bytes = sandrail::files::read_regular(&path, 1 << 20)
        .with_context(|| format!("cannot read the config {}", path.display()))?;
    let text =
        String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8", path.display()))?;
    // Relative paths in it are read from the directory the hook reads it in:
    // the link's, for a config reached through a link.
    let dir = std::path::absolute(&path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    Ok((text, dir, path.display().to_string()))
}

/// The policy in observe mode, moved to the scratch project: every gate
/// observes, receipts stay out of the system log and off the network, and the
/// paths it names relative to its own directory are made absolute.
fn observe(text: &str, dir: Option<&Path>) -> anyhow::Result<String> {
    let mut doc: toml_edit::DocumentMut = text.parse().context("the config is not TOML")?;
    let absolute = |value: &str| -> String {
        match dir {
            Some(dir)
                if !value.starts_with("builtin:")
                    && Path::new(value).is_relative()
                    && !value.starts_with('~') =>
            {
                dir.join(value).display().to_string()
            }
            _ => value.to_owned(),
        }
    };
    let settings = doc
        .entry("settings")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .context("[settings] is not a table")?;
    settings["gate"] = toml_edit::value("observe");
    if let Some(mandate) = settings
        .get("mandate")
        .and_then(|m| m.as_str())
        .map(str::to_owned)
    {
        settings["mandate"] = toml_edit::value(absolute(&mandate));
    }
    let receipts = doc
        .entry("receipts")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .context("[receipts] is not a table")?;
    receipts["syslog"] = toml_edit::value(false);
    receipts.remove("otlp");
    if let Some(paths) = doc
        .get_mut("protect")
        .and_then(|p| p.get_mut("paths"))
        .and_then(|p| p.as_array_mut())
    {
        for path in paths.iter_mut() {
            if let Some(text) = path.as_str().map(str::to_owned) {
                *path = absolute(&text).into();
            }
        }
    }
    let mut entries: Vec<&mut dyn toml_edit::TableLike> = Vec::new();
    match doc.get_mut("guardrail") {
        Some(toml_edit::Item::ArrayOfTables(tables)) => {
            entries.extend(
                tables
                    .iter_mut()
                    .map(|t| t as &mut dyn toml_edit::TableLike),
            );
        }
        // `guardrail = [{ … }, …]`: the same entries, written inline.
        Some(toml_edit::Item::Value(toml_edit::Value::Array(inline))) => {
            entries.extend(
                inline
                    .iter_mut()
                    .filter_map(|v| v.as_inline_table_mut())
                    .map(|t| t as &mut dyn toml_edit::TableLike),
            );
        }
        _ => {}
    }
    for entry in entries {
        if entry.contains_key("gate") {
            entry.insert("gate", toml_edit::value("observe"));
        }
        let source = entry
            .get("source")
            .and_then(|s| s.as_str())
            .map(str::to_owned);
        if let Some(source) = source {
            entry.insert("source", toml_edit::value(absolute(&source)));
        }
        if let Some(data) = entry.get_mut("data").and_then(|d| d.as_array_mut()) {
            for grant in data.iter_mut() {
                if let Some(text) = grant.as_str().map(str::to_owned) {
                    *grant = absolute(&text).into();
                }
            }
        }
    }
    Ok(doc.to_string())
}

/// The hook payload of a step, as Claude Code would have sent it.
fn payload(step: &Step, session: &str, transcript: &Path, project: &Path) -> Value {
    let mut payload = json!({
        "session_id": session,
        "transcript_path": transcript,
        "cwd": step.cwd.clone().unwrap_or_else(|| project.display().to_string()),
        "permission_mode": "default",
        "hook_event_name": step.kind.name(),
    });
    if let (Some(payload), Some(fields)) = (payload.as_object_mut(), step.fields.as_object()) {
        for (key, value) in fields {
            payload.insert(key.clone(), value.clone());
        }
    }
    payload
}

fn row(n: usize, step: &Step, receipt: Option<&Receipt>) -> Row {
    let mut row = Row {
        n,
        turn: step.turn,
        event: step.kind.name().to_owned(),
        tool: step.tool.clone(),
        summary: step.summary.clone(),
        subagent: step.subagent,
        decision: "-".into(),
        guardrail: None,
        rule: None,
        level: None,
        message: None,
    };
    let Some(receipt) = receipt else {
        return row;
    };
    let runs = &receipt.guardrails;
    // The guardrail that decided: the first refusing one, else the first with a word.
    let decisive = runs.iter().find(|r| r.refuses).or_else(|| {
        runs.iter()
            .find(|r| r.verdict == "violation" || r.verdict == "note")
    });
    row.decision = match (&receipt.observed, receipt.decision.as_str()) {
        (Some(refused), _) => format!("would {refused}"),
        (None, "allow") if decisive.is_some() => "note".into(),
        (None, decision) => decision.to_owned(),
    };
    if let Some(run) = decisive {
        row.guardrail = Some(run.name.clone());
        row.rule = run.rule.clone();
        row.level = run.level.clone();
    } else if receipt.decision != "allow" {
        // Refused by the host itself (self-protection), which observe mode
        // does not soften.
        row.guardrail = Some("sandrail".into());
    }
    row.message = receipt.message.clone();
    row
}

/// The event's name for the table: short, with a subagent's marked.
fn event_label(row: &Row) -> String {
    let short = match row.event.as_str() {
        "UserPromptSubmit" => "prompt",
        "PreToolUse" => "pre",
        "PostToolUse" => "post",
        "SubagentStop" => "subagent-stop",
        "Stop" => "stop",
        other => other,
    };
    if row.subagent && row.event != "SubagentStop" {
        format!("{short} (sub)")
    } else {
        short.to_owned()
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "{:>4}  {:>4}  {:<13}  {:<10}  {:<40}  {:<12}  {:<36}  level",
        "#", "turn", "event", "tool", "summary", "decision", "guardrail"
    );
    for row in rows {
        let guardrail = match (&row.guardrail, &row.rule) {
            (Some(g), Some(r)) => format!("{g}/{r}"),
            (Some(g), None) => g.clone(),
            _ => "-".into(),
        };
        println!(
            "{:>4}  {:>4}  {:<13}  {:<10}  {:<40}  {:<12}  {:<36}  {}",
            row.n,
            row.turn,
            event_label(row),
            clip(row.tool.as_deref().unwrap_or("-"), 10),
            clip(&row.summary, 40),
            row.decision,
            clip(&guardrail, 36),
            row.level.as_deref().unwrap_or("-"),
        );
    }
}

/// `text` on one line, cut to `max` characters, with anything a terminal would
/// act on shown rather than sent: the transcript is the agent's writing.
fn clip(text: &str, max: usize) -> String {
    sandrail::guest_text::one_line(text, max)
}

fn refused(rows: &[Row]) -> Vec<&Row> {
    rows.iter()
        .filter(|r| r.decision.starts_with("would") || r.decision == "ask")
        .collect()
}

/// Rows whose violation came to a level above a nudge.
fn escalated(rows: &[Row]) -> Vec<&Row> {
    rows.iter()
        .filter(|r| {
            matches!(
                r.level.as_deref(),
                Some("warning" | "soft_block" | "hard_block")
            )
        })
        .collect()
}

fn print_summary(rows: &[Row], replayed: &replay::Replayed, transcript: &Path, origin: &str) {
    let turns = rows.iter().map(|r| r.turn).max().unwrap_or(0);
    let tools = rows.iter().filter(|r| r.event == "PreToolUse").count();
    println!();
    println!(
        "{} events from {} ({turns} turns, {tools} tool calls) under {origin}, in observe mode:",
        rows.len(),
        transcript.display()
    );
    let refused = refused(rows);
    println!("  {} would have been refused", refused.len());
    for row in &refused {
        let level = row
            .level
            .as_deref()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        println!(
            "    #{} (turn {}) {} `{}`{level}: {}",
            row.n,
            row.turn,
            row.tool.as_deref().unwrap_or(&row.event),
            clip(&row.summary, 60),
            clip(row.message.as_deref().unwrap_or("-"), 120)
        );
    }
    let escalated = escalated(rows);
    println!("  {} escalated to a warning or beyond", escalated.len());
    let errors = rows.iter().filter(|r| r.decision == "error").count();
    if errors > 0 {
        println!("  {errors} could not be judged (see the message column in --json)");
    }
    if !replayed.passed_over.is_empty() {
        let passed: Vec<String> = replayed
            .passed_over
            .iter()
            .map(|(what, n)| format!("{n} {what}"))
            .collect();
        println!("  lines that cause no event: {}", passed.join(", "));
    }
    for why in &replayed.unreadable {
        println!("  skipped {why}");
    }
}

fn summary_json(rows: &[Row], replayed: &replay::Replayed, origin: &str) -> Value {
    json!({
        "summary": {
            "policy": origin,
            "events": rows.len(),
            "refused": refused(rows).iter().map(|r| r.n).collect::<Vec<_>>(),
            "escalated": escalated(rows).iter().map(|r| r.n).collect::<Vec<_>>(),
            "errors": rows.iter().filter(|r| r.decision == "error").map(|r| r.n).collect::<Vec<_>>(),
            "passed_over": replayed.passed_over,
            "unreadable": replayed.unreadable,
        }
    })
}
