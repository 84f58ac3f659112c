//! Adopting sandrail: `sandrail init` registers it with each harness and writes a
//! starter policy, `sandrail doctor` finds what a silent failure would hide, and
//! `sandrail replay` tries a policy on a past session without touching the
//! user's own state.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::*;

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .expect("JSON")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// This binary, as `init` names it: by its absolute, resolved path.
/// The registered `command`, run as Claude Code runs it, refuses a force push.
#[track_caller]
fn assert_registered_refuses_a_force_push(project: &Project, command: &str) {
    let push = json!({
        "session_id": "s-registered", "cwd": project.dir(), "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git push --force origin main"}
    });
    let run = run_registered(project, command, &push);
    assert_eq!(
        run.answer()["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        run.stderr()
    );
}

fn binary() -> String {
    std::fs::canonicalize(BIN)
        .expect("the binary")
        .display()
        .to_string()
}

/// Runs a registered hook command line as the harness does (`sh -c`), with
/// `payload` on stdin, in the project.
fn run_registered(project: &Project, command: &str, payload: &Value) -> Run {
    let mut sh = Command::new("sh");
    sh.args(["-c", command]);
    let mut child = project
        .with_env(sh)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the registered command");
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(payload.to_string().as_bytes())
        .expect("write payload");
    Run(child.wait_with_output().expect("wait"))
}

/// `init` beside hooks of the team's own: every event sandrail handles is added
/// (ConfigChange included) with this binary by absolute path, the other hook and
/// keys are kept, a second run changes nothing, a starter policy is written that
/// checks clean and holds the embedded default's guardrails, and the registered
/// command refuses a force push when the harness runs it.
#[test]
fn init_merges_into_claude_settings_and_is_idempotent() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let before = json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}]}
    });
    std::fs::write(&settings, before.to_string()).unwrap();

    let first = project.init(&[]);
    assert!(first.ok(), "{}", first.stderr());
    assert!(
        first.stdout().contains("run `sandrail trust`"),
        "{}",
        first.stdout()
    );
    let after = read_json(&settings);
    assert_eq!(after["model"], "opus");
    assert_eq!(
        after["permissions"]["allow"],
        before["permissions"]["allow"]
    );
    // The OS sandbox is on, with sandrail's own files denied to it.
    assert_eq!(after["sandbox"]["enabled"], true);
    assert_eq!(after["sandbox"]["allowUnsandboxedCommands"], false);
    assert_eq!(after["sandbox"]["failIfUnavailable"], true);
    let denied = after["sandbox"]["filesystem"]["denyWrite"].to_string();
    for path in [
        "./sandrail.toml",
        "./.claude/settings.json",
        "./.claude/settings.local.json",
    ] {
        assert!(denied.contains(path), "{path} in {denied}");
    }
    assert!(
        after["permissions"]["deny"]
            .to_string()
            .contains("Edit(/.claude/settings.json)"),
        "{after:#}"
    );
    let pre = after["hooks"]["PreToolUse"].as_array().expect("PreToolUse");
    assert_eq!(
        pre,
        before["hooks"]["PreToolUse"]
            .as_array()
            .expect("PreToolUse"),
        "the team's own hook is kept, and the committed file names no machine's binary"
    );
    // This machine's registration: in the file kept out of the repository.
    let local = project.dir().join(".claude/settings.local.json");
    let after = read_json(&local);
    let command = format!("{} hook", binary());
    for event in [
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
        "Stop",
        "SubagentStop",
        "SessionStart",
        "SessionEnd",
        "PreCompact",
        "ConfigChange",
    ] {
        let groups = after["hooks"][event].as_array().expect(event);
        let ours: Vec<&Value> = groups
            .iter()
            .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
            .filter(|h| h["command"] == command.as_str())
            .collect();
        assert_eq!(ours.len(), 1, "{event}: {after:#}");
    }

    let text = std::fs::read(&settings).unwrap();
    let local_text = std::fs::read(&local).unwrap();
    let second = project.init(&[]);
    assert!(second.ok(), "{}", second.stderr());
    assert_eq!(
        std::fs::read(&settings).unwrap(),
        text,
        "a second run changes nothing"
    );
    assert_eq!(std::fs::read(&local).unwrap(), local_text);
    assert!(
        second.stdout().contains("already registers sandrail"),
        "{}",
        second.stdout()
    );

    let starter = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("starter");
    assert!(
        starter.contains("gate = \"enforce\"") && starter.contains("# [guardrail.enforcement]")
    );
    let check = project.run(&["check-config"]);
    assert!(check.ok(), "{}{}", check.stdout(), check.stderr());
    let guardrails = |project: &Project| -> Vec<(Value, Value)> {
        project
            .run(&["list", "--json"])
            .stdout()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a listed guardrail"))
            .map(|g| (g["name"].clone(), g["source"].clone()))
            .collect()
    };
    assert_eq!(
        guardrails(&project),
        guardrails(&Project::new()),
        "the embedded default's guardrails"
    );

    assert_registered_refuses_a_force_push(&project, &command);
}

/// At a terminal, `init` goes on to `sandrail trust`: the person sees the policy
/// and accepts it with the code shown.
#[test]
fn init_at_a_terminal_accepts_the_starter_policy() {
    let project = Project::new();
    let tools = project.path_with_sandbox_tools();
    let run = project.at_terminal_with(&["init"], None, |cmd| {
        cmd.env("PATH", &tools);
    });
    assert!(run.ok(), "{}{}", run.stdout(), run.stderr());
    assert!(run.stdout().contains("Accepted policy"), "{}", run.stdout());
    let doctor = project.run(&["doctor", "--json"]);
    let findings = doctor.answer();
    assert!(
        findings["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["check"] == "policy" && f["level"] == "ok"),
        "{findings:#}"
    );
}

/// For every other harness, `init` writes that harness's own hook file with this
/// binary's command in its dialect, idempotently, and the command it registers
/// refuses that harness's force push in that harness's words.
#[test]
fn init_registers_every_other_harness_in_its_own_file() {
    let cases = [
        (
            "codex",
            ".codex/hooks.json",
            "PreToolUse",
            "codex/PreToolUse-force-push.json",
        ),
        (
            "cursor",
            ".cursor/hooks.json",
            "preToolUse",
            "cursor/preToolUse-shell-force-push.json",
        ),
        (
            "gemini",
            ".gemini/settings.json",
            "BeforeTool",
            "gemini/BeforeTool-force-push.json",
        ),
        (
            "copilot",
            ".github/hooks/sandrail.json",
            "preToolUse",
            "copilot/preToolUse-force-push.json",
        ),
    ];
    for (harness, file, event, fixture) in cases {
        let project = Project::new();
        let run = project.init(&["--harness", harness]);
        assert!(run.ok(), "{harness}: {}", run.stderr());
        let path = project.dir().join(file);
        let doc = read_json(&path);
        let entries = doc["hooks"][event]
            .as_array()
            .unwrap_or_else(|| panic!("{harness}: {doc:#}"));
        let hook = match harness {
            // Cursor and Copilot list hooks directly; the others in groups.
            "cursor" | "copilot" => {
                assert_eq!(doc["version"], 1, "{harness}");
                entries[0].clone()
            }
            _ => entries[0]["hooks"][0].clone(),
        };
        let key = if harness == "copilot" {
            "bash"
        } else {
            "command"
        };
        let command = hook[key]
            .as_str()
            .unwrap_or_else(|| panic!("{harness}: {hook}"));
        assert_eq!(command, format!("{} hook --harness {harness}", binary()));
        if harness == "cursor" {
            assert_eq!(
                hook["failClosed"], true,
                "a crash refuses rather than lets through"
            );
        }

        let text = std::fs::read(&path).unwrap();
        let again = project.init(&["--harness", harness]);
        assert!(again.ok(), "{}", again.stderr());
        assert_eq!(
            std::fs::read(&path).unwrap(),
            text,
            "{harness}: a second run changes nothing"
        );

        let fixture = read_json(&fixtures().join("harnesses").join(fixture));
        let run = run_registered(&project, command, &fixture["payload"]);
        let answer = run.answer();
        let refused = answer["permission"] == "deny"
            || answer["decision"] == "deny"
            || answer["permissionDecision"] == "deny"
            || answer["hookSpecificOutput"]["permissionDecision"] == "deny";
        assert!(refused, "{harness}: {answer} {}", run.stderr());
    }
}

/// `--dry-run` prints the settings and the starter it would write and writes
/// neither; `--http` registers a running server for Claude Code and is refused
/// for a harness without http hooks; a settings file that is not JSON is
/// reported and left alone.
#[test]
fn init_dry_run_http_and_broken_settings() {
    let project = Project::new();
    let run = project.init(&["--dry-run"]);
    assert!(run.ok(), "{}", run.stderr());
    assert!(run.stdout().contains("would write") && run.stdout().contains("\"ConfigChange\""));
    assert!(
        !project.dir().join(".claude").exists() && !project.dir().join("sandrail.toml").exists()
    );

    let run = project.init(&["--http", "http://127.0.0.1:8787/"]);
    assert!(run.ok(), "{}", run.stderr());
    let doc = read_json(&project.dir().join(".claude/settings.local.json"));
    let hook = &doc["hooks"]["Stop"][0]["hooks"][0];
    assert_eq!(hook["type"], "http");
    assert_eq!(hook["url"], "http://127.0.0.1:8787/");
    assert_eq!(
        hook["headers"]["x-sandrail-project-dir"],
        "$CLAUDE_PROJECT_DIR"
    );

    let run = project.run(&[
        "init",
        "--harness",
        "gemini",
        "--http",
        "http://127.0.0.1:8787/",
    ]);
    assert_eq!(run.code(), Some(1));
    assert!(
        run.stderr().contains("Gemini CLI does not have"),
        "{}",
        run.stderr()
    );

    let broken = Project::new();
    let settings = broken.dir().join(".cursor/hooks.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{ not json").unwrap();
    let run = broken.init(&["--harness", "cursor"]);
    assert_eq!(run.code(), Some(1));
    assert!(
        run.stderr().contains("nothing was written"),
        "{}",
        run.stderr()
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{ not json");
    assert!(!broken.dir().join("sandrail.toml").exists());
}

/// An existing policy is never replaced, and the agent cannot run `init` itself:
/// the shell analysis names it among the commands that change sandrail's
/// config, so self-protection refuses it, however the binary is spelt.
#[test]
fn init_keeps_a_policy_and_is_refused_to_the_agent() {
    let project = Project::new();
    project.config("[[guardrail]]\nname = \"mine\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\n");
    let run = project.init(&[]);
    assert!(run.ok(), "{}", run.stderr());
    assert!(
        std::fs::read_to_string(project.dir().join("sandrail.toml"))
            .unwrap()
            .contains("\"mine\"")
    );
    for line in [
        "sandrail init",
        "/tmp/x/sandrail init --harness claude",
        "env X=1 sandrail init",
    ] {
        let run = project.hook(&bash("s-agent", line));
        assert!(
            run.deny_reason()
                .is_some_and(|r| r.contains("sandrail init")),
            "{line}: {}",
            run.stdout()
        );
    }
}

/// `doctor` on a wired project finds nothing wrong; on an unwired one it says to
/// run `init` and exits 1; with a registered binary that does not exist it says
/// the harness skips the hook silently; with the Stop a gate needs missing it
/// names the event.
#[test]
fn doctor_on_wired_unwired_and_broken_projects() {
    let wired = Project::new();
    assert!(wired.init(&[]).ok());
    let run = wired.run(&["doctor"]);
    assert!(run.ok(), "{}", run.stdout());
    assert!(run.stdout().contains("0 error(s)"), "{}", run.stdout());
    assert!(
        run.stdout().contains("runs this binary"),
        "{}",
        run.stdout()
    );

    let unwired = Project::new();
    let run = unwired.run(&["doctor"]);
    assert_eq!(run.code(), Some(1), "{}", run.stdout());
    assert!(
        run.stdout().contains("run `sandrail init`"),
        "{}",
        run.stdout()
    );

    let stale = Project::new();
    assert!(stale.init(&[]).ok());
    let settings = stale.dir().join(".claude/settings.local.json");
    let text = std::fs::read_to_string(&settings)
        .unwrap()
        .replace(&binary(), "/opt/gone/sandrail");
    std::fs::write(&settings, text).unwrap();
    let run = stale.run(&["doctor", "--json"]);
    assert_eq!(run.code(), Some(1));
    let report = run.answer();
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "command")
        .cloned()
        .unwrap_or_default();
    assert_eq!(finding["level"], "error", "{report:#}");
    assert!(
        finding["said"]
            .as_str()
            .unwrap()
            .contains("skips the hook silently"),
        "{finding}"
    );

    let partial = Project::new();
    partial.config(&probe_config(&[(
        "gate",
        "config = { action = \"deny\", value = \"no\" }",
    )]));
    let settings = partial.dir().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let only_pre = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": format!("{} hook", binary())}]}]}});
    std::fs::write(&settings, only_pre.to_string()).unwrap();
    let run = partial.run(&["doctor"]);
    assert_eq!(run.code(), Some(1), "{}", run.stdout());
    let missing = run.stdout();
    assert!(
        missing.contains("do not register sandrail for")
            && missing.contains("Stop")
            && missing.contains("ConfigChange"),
        "{missing}"
    );
}

/// A registration that only looks like sandrail's (`echo sandrail hook`)
/// counts for nothing, and one narrowed to some tools is a warning naming them.
#[test]
fn doctor_sees_through_lookalike_and_narrowed_registrations() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().expect("dir")).expect("mkdir");
    let lookalike = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo sandrail hook"}]}]}});
    std::fs::write(&settings, lookalike.to_string()).expect("write");
    let run = project.run(&["doctor"]);
    assert_eq!(run.code(), Some(1), "{}", run.stdout());
    assert!(
        run.stdout().contains("no harness settings"),
        "{}",
        run.stdout()
    );

    assert!(project.init(&[]).ok());
    let local = project.dir().join(".claude/settings.local.json");
    let mut doc = read_json(&local);
    doc["hooks"]["PreToolUse"][0]["matcher"] = json!("Write|Edit");
    std::fs::write(&local, doc.to_string()).expect("write");
    let run = project.run(&["doctor"]);
    assert!(
        run.stdout().contains("only on tools matching Write|Edit"),
        "{}",
        run.stdout()
    );
}

fn rows_of(run: &Run) -> (Vec<Value>, Value) {
    let mut lines: Vec<Value> = run
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let summary = lines.pop().expect("the summary");
    (lines, summary["summary"].clone())
}

/// A replayed row as `[turn, event, tool, decision, guardrail, rule, level]`.
fn columns(row: &Value) -> Value {
    json!([
        row["turn"],
        row["event"],
        row["tool"],
        row["decision"],
        row["guardrail"],
        row["rule"],
        row["level"]
    ])
}

/// A realistic transcript — three turns, a subagent's sidechain, assistant
/// messages streamed one block per line, summary, system, meta, slash-command
/// and compact-summary lines, a failed tool result, a last line cut off — is
/// replayed event by event under the embedded default in observe mode: the
/// subagent's hard reset and the force push would have been refused, the rest
/// proceeds, and the user's own state and system log are untouched.
#[test]
fn replay_a_session_under_the_default() {
    let project = Project::new();
    let transcript = fixtures().join("transcripts/session.jsonl");
    let run = project.run(&["replay", transcript.to_str().unwrap(), "--json"]);
    assert!(run.ok(), "{}", run.stderr());
    let (rows, summary) = rows_of(&run);
    let expected = vec![
        json!([1, "UserPromptSubmit", null, "-", null, null, null]),
        json!([1, "PreToolUse", "Bash", "allow", null, null, null]),
        json!([1, "PostToolUse", "Bash", "-", null, null, null]),
        json!([1, "PreToolUse", "Agent", "-", null, null, null]),
        json!([1, "PreToolUse", "Grep", "-", null, null, null]),
        json!([1, "PostToolUse", "Grep", "-", null, null, null]),
        json!([
            1,
            "PreToolUse",
            "Bash",
            "would deny",
            "destructive-commands",
            "reset-hard",
            null,
        ]),
        json!([1, "PostToolUse", "Bash", "-", null, null, null]),
        json!([1, "SubagentStop", null, "-", null, null, null]),
        json!([1, "PostToolUse", "Agent", "-", null, null, null]),
        json!([1, "PreToolUse", "Edit", "allow", null, null, null]),
        json!([1, "PostToolUse", "Edit", "-", null, null, null]),
        json!([
            1,
            "PreToolUse",
            "Bash",
            "would deny",
            "destructive-commands",
            "force-push",
            null,
        ]),
        json!([1, "PostToolUse", "Bash", "-", null, null, null]),
        json!([1, "Stop", null, "-", null, null, null]),
        json!([2, "UserPromptSubmit", null, "-", null, null, null]),
        // Destructive before it touches what sandrail depends on: its rule first.
        json!([
            2,
            "PreToolUse",
            "Bash",
            "deny",
            "destructive-commands",
            "recursive-delete",
            null
        ]),
        json!([2, "PreToolUse", "Bash", "allow", null, null, null]),
        json!([2, "PostToolUse", "Bash", "-", null, null, null]),
        json!([2, "Stop", null, "-", null, null, null]),
        json!([3, "UserPromptSubmit", null, "-", null, null, null]),
        json!([3, "Stop", null, "-", null, null, null]),
    ];
    let got: Vec<Value> = rows.iter().map(columns).collect();
    assert_eq!(got, expected, "{}", run.stdout());
    assert!(rows[6]["subagent"] == true && rows[6]["summary"] == "git reset --hard origin/main");
    assert!(
        rows[12]["message"].as_str().unwrap().contains("force push"),
        "{}",
        rows[12]
    );
    assert_eq!(summary["refused"], json!([7, 13]));
    assert_eq!(
        summary["passed_over"],
        json!({"compact summary": 1, "failed tool result": 1, "meta": 1, "slash command": 1,
               "subagent prompt": 1, "summary": 1, "system": 1})
    );
    assert!(
        summary["unreadable"][0]
            .as_str()
            .unwrap()
            .contains("cut off mid-line")
    );

    // The table a person reads says the same.
    let table = project.run(&["replay", transcript.to_str().unwrap()]);
    assert!(table.ok());
    let text = table.stdout();
    assert!(text.contains("2 would have been refused"), "{text}");
    assert!(text.contains("destructive-commands/force-push"), "{text}");

    // Nothing of the user's: no session, no receipt, nothing in the system log.
    assert!(!project.state_dir().join("receipts.jsonl").exists());
    assert!(!project.state_dir().join("sessions").exists());
    assert!(project.syslog().is_empty(), "{}", project.syslog());
}

/// With a policy given by `--config` that escalates, each row carries the level
/// the violation came to: the reset a nudge (let through with a note), the
/// force push refused at its own hard_block.
#[test]
fn replay_shows_the_levels_of_an_escalating_policy() {
    let project = Project::new();
    let policy = project.dir().join("ladder.toml");
    std::fs::write(
        &policy,
        "[[guardrail]]\nname = \"destructive-commands\"\nsource = \"builtin:destructive-commands\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash|PowerShell\"\n\n[guardrail.enforcement]\ndefault_level = \"silent\"\nescalation = [{ after = 1, level = \"nudge\" }, { after = 2, level = \"warning\" }]\n\n[guardrail.enforcement.rules.force-push]\ndefault_level = \"hard_block\"\n",
    )
    .unwrap();
    let transcript = fixtures().join("transcripts/session.jsonl");
    let run = project.run(&[
        "replay",
        transcript.to_str().unwrap(),
        "--config",
        policy.to_str().unwrap(),
        "--json",
    ]);
    assert!(run.ok(), "{}", run.stderr());
    let (rows, summary) = rows_of(&run);
    assert_eq!(
        (rows[6]["decision"].as_str(), rows[6]["level"].as_str()),
        (Some("note"), Some("nudge"))
    );
    assert_eq!(
        (rows[12]["decision"].as_str(), rows[12]["level"].as_str()),
        (Some("would deny"), Some("hard_block"))
    );
    assert_eq!(summary["refused"], json!([13]));
    assert_eq!(summary["escalated"], json!([13]));
}

/// A file that is not a transcript is refused with what to give instead.
#[test]
fn replay_refuses_what_is_not_a_transcript() {
    let project = Project::new();
    let file = project.dir().join("notes.jsonl");
    std::fs::write(&file, "{\"type\":\"summary\",\"summary\":\"x\"}\n").unwrap();
    let run = project.run(&["replay", file.to_str().unwrap()]);
    assert_eq!(run.code(), Some(1));
    assert!(
        run.stderr().contains("records no prompt or tool call"),
        "{}",
        run.stderr()
    );
}

/// Replay observes every gate, an inline entry's own `gate = "enforce"`
/// included, and what it shows of the transcript cannot drive the terminal: a
/// command carrying escape sequences is printed with them made visible.
#[test]
fn replay_observes_inline_entries_and_shows_no_escapes() {
    let project = Project::new();
    let policy = project.dir().join("inline.toml");
    std::fs::write(
        &policy,
        "guardrail = [{ name = \"dc\", source = \"builtin:destructive-commands\", events = [\"PreToolUse\"], gate = \"enforce\" }]\n",
    )
    .expect("write");
    let transcript = project.dir().join("t.jsonl");
    let lines = [
        json!({"type": "user", "sessionId": "s-esc", "message": {"content": "push it"}}),
        json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
            "input": {"command": "git push --force origin main \u{1b}[2K\r\u{1b}[8m harmless"}}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&transcript, text).expect("write");
    let args = [
        "replay",
        transcript.to_str().expect("path"),
        "--config",
        policy.to_str().expect("path"),
    ];
    let run = project.run(&args);
    assert!(run.ok(), "{}", run.stderr());
    assert!(!run.stdout().contains('\u{1b}'), "{:?}", run.stdout());
    assert!(
        run.stdout().contains("1 would have been refused"),
        "{}",
        run.stdout()
    );
}

/// `init` turns the harness's OS sandbox on unless told not to, and `doctor`
/// says which: `--no-sandbox` writes no sandbox, says what that leaves open and
/// records the choice, which doctor warns of; a sandbox switched off by hand in
/// a project that relies on it is an error; and where the sandbox cannot run,
/// init names the install command and does not claim protection.
#[test]
fn init_turns_the_sandbox_on_unless_told_not_to_and_doctor_says_which() {
    let without = Project::new();
    let run = without.init(&["--no-sandbox"]);
    assert!(run.ok(), "{}", run.stderr());
    assert!(
        run.stdout().contains("The OS sandbox is left off")
            && run.stdout().contains("pseudo-terminal"),
        "{}",
        run.stdout()
    );
    assert!(
        !without.dir().join(".claude/settings.json").exists(),
        "no sandbox, and the registration is in settings.local.json"
    );
    let config = std::fs::read_to_string(without.dir().join("sandrail.toml")).expect("config");
    assert!(config.contains("os_sandbox = false"), "{config}");
    without.trust();
    let doctor = without.run(&["doctor"]);
    assert!(
        doctor.stdout().contains("warning sandbox")
            && doctor.stdout().contains("as the project chose"),
        "{}",
        doctor.stdout()
    );

    let switched_off = Project::new();
    assert!(switched_off.init(&[]).ok());
    switched_off.trust();
    let path = switched_off.dir().join(".claude/settings.json");
    let mut settings = read_json(&path);
    settings["sandbox"]["enabled"] = json!(false);
    std::fs::write(&path, settings.to_string()).expect("settings");
    let doctor = switched_off.run(&["doctor"]);
    assert_eq!(doctor.code(), Some(1), "{}", doctor.stdout());
    assert!(
        doctor
            .stdout()
            .contains("error   sandbox  Claude Code: not in force (the Bash sandbox is off)")
            && doctor
                .stdout()
                .contains("run `sandrail protect --harness claude`"),
        "{}",
        doctor.stdout()
    );

    // No bubblewrap, socat or ripgrep; apt-get to install them with.
    let bare = Project::new();
    let tools = bare.root.path().join("bare-tools");
    std::fs::create_dir_all(&tools).expect("tools");
    let apt = tools.join("apt-get");
    std::fs::write(&apt, "#!/bin/sh\nexit 0\n").expect("apt-get");
    std::fs::set_permissions(&apt, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let mut cmd = bare.cmd();
    cmd.env("PATH", &tools).arg("init");
    let run = Run(cmd.output().expect("init"));
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    assert!(
        run.stderr().contains("NOT PROTECTED YET")
            && run
                .stderr()
                .contains("`sudo apt-get install -y bubblewrap socat ripgrep`"),
        "{}",
        run.stderr()
    );
    let settings = read_json(&bare.dir().join(".claude/settings.json"));
    assert_eq!(settings["sandbox"]["failIfUnavailable"], true);
}

/// Codex gets its workspace sandbox in the project's `.codex/config.toml`;
/// a harness with none sandrail can use says so.
#[test]
fn init_uses_what_each_harness_offers() {
    let project = Project::new();
    let run = project.init(&["--harness", "codex"]);
    assert!(run.ok(), "{}", run.stderr());
    let config =
        std::fs::read_to_string(project.dir().join(".codex/config.toml")).expect("codex config");
    assert!(
        config.contains("sandbox_mode = \"workspace-write\""),
        "{config}"
    );
    assert!(
        run.stdout().contains("Codex's workspace sandbox is on"),
        "{}",
        run.stdout()
    );
    let status = project.run(&["doctor"]);
    assert!(
        status
            .stdout()
            .contains("Codex CLI: in force: Codex's sandbox (workspace-write"),
        "{}",
        status.stdout()
    );
    let gemini = Project::new();
    let run = gemini.init(&["--harness", "gemini"]);
    assert!(run.ok(), "{}", run.stderr());
    assert!(
        run.stdout().contains("Gemini CLI's sandbox") && run.stdout().contains("left off"),
        "{}",
        run.stdout()
    );
    let doctor = gemini.run(&["doctor"]);
    assert!(
        doctor
            .stdout()
            .contains("warning sandbox  Gemini CLI: none:"),
        "{}",
        doctor.stdout()
    );
}

/// What a team commits names no one's binary: an earlier registration of this
/// machine's binary in `.claude/settings.json` moves to `settings.local.json`,
/// the committed file keeps every other key where it was, and `doctor` says
/// when the committed file carries a machine's path, or a bare name the agent
/// could put first on PATH.
#[test]
fn init_keeps_the_committed_settings_free_of_this_machines_path_and_in_its_order() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let command = format!("{} hook", binary());
    let before = format!(
        r#"{{
  "zeta": 1,
  "permissions": {{"deny": ["Bash(curl:*)"], "allow": ["Bash(npm test)"]}},
  "hooks": {{"Stop": [{{"hooks": [{{"type": "command", "command": "{command}"}}]}}],
             "PreToolUse": [{{"matcher": "Bash", "hooks": [{{"type": "command", "command": "./lint.sh"}}]}}]}},
  "model": "opus"
}}"#
    );
    std::fs::write(&settings, &before).unwrap();
    assert!(project.doctor_finds("settings", "warning", "this machine's binary"));

    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(project.dir())
            .output()
            .expect("git")
    };
    git(&["init", "-q"]);
    let run = project.init(&[]);
    assert!(run.ok(), "{}", run.stderr());
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(!text.contains(&command), "{text}");
    // This machine's file stays out of the repository.
    let untracked =
        String::from_utf8_lossy(&git(&["status", "--porcelain", "-uall"]).stdout).into_owned();
    assert!(
        untracked.contains(".claude/settings.json") && !untracked.contains("settings.local.json"),
        "{untracked}"
    );
    let order: Vec<usize> = [
        "\"zeta\"",
        "\"permissions\"",
        "\"deny\"",
        "\"allow\"",
        "\"hooks\"",
        "\"model\"",
        "\"sandbox\"",
    ]
    .iter()
    .map(|key| text.find(key).unwrap_or_else(|| panic!("{key} in {text}")))
    .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "keys kept in their order: {text}"
    );
    let after = read_json(&settings);
    assert!(after["hooks"].get("Stop").is_none(), "{after:#}");
    assert_eq!(
        after["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "./lint.sh"
    );
    let local = read_json(&project.dir().join(".claude/settings.local.json"));
    assert_eq!(
        local["hooks"]["Stop"][0]["hooks"][0]["command"],
        command.as_str(),
        "{local:#}"
    );
    let doctor = project.run(&["doctor", "--json"]).answer();
    let said: Vec<String> = doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["level"] != "ok")
        .map(|f| f["said"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        !said
            .iter()
            .any(|s| s.contains("binary") || s.contains("PATH")),
        "{said:#?}"
    );
    // The hook registered there judges.
    assert_registered_refuses_a_force_push(&project, &command);

    // A bare name in the committed file runs whatever `sandrail` is first on PATH.
    let mut shared = read_json(&settings);
    shared["hooks"]["Stop"] = json!([{"hooks": [{"type": "command", "command": "sandrail hook"}]}]);
    std::fs::write(&settings, shared.to_string()).unwrap();
    assert!(project.doctor_finds("command", "error", "first `sandrail` on PATH"));
    // A relative path, or a link in the project, is this binary only until the
    // agent puts another program there.
    std::fs::create_dir_all(project.dir().join("bin")).unwrap();
    std::os::unix::fs::symlink(binary(), project.dir().join("bin/sandrail")).unwrap();
    let inside = format!("{}/bin/sandrail hook", project.dir().display());
    for (registered, said) in [
        ("bin/sandrail hook", "a relative path"),
        (inside.as_str(), "a path inside the project"),
    ] {
        shared["hooks"]["Stop"] = json!([{"hooks": [{"type": "command", "command": registered}]}]);
        std::fs::write(&settings, shared.to_string()).unwrap();
        assert!(
            project.doctor_finds("command", "error", said),
            "{registered}"
        );
    }
}
