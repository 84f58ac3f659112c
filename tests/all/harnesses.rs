//! Every harness through `sandrail hook --harness NAME`: a payload fixture per
//! harness and event (tests/fixtures/harnesses/HARNESS/EVENT.json, written from
//! each harness's documented payload) answered as that harness expects, under
//! one policy written in the host's one tool vocabulary.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::serve::Server;
use crate::support::*;

/// The project directory the fixtures are written in, put in a test's own.
const FIXTURE_PROJECT: &str = "/home/dev/project";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/harnesses")
}

/// The fixtures' policy, with the probe guardrail's path filled in.
fn policy() -> String {
    std::fs::read_to_string(fixtures().join("sandrail.toml"))
        .expect("the fixtures' policy")
        .replace("@PROBE@", PROBE)
}

/// Each fixture: (harness, name, payload, expected answer or null).
fn every_fixture() -> Vec<(String, String, Value, Value)> {
    let mut all = Vec::new();
    for harness in ["claude", "codex", "cursor", "gemini", "copilot"] {
        let dir = fixtures().join(harness);
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("entry").path())
            .collect();
        names.sort();
        for path in names {
            let fixture: Value =
                serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
            let name = path
                .file_stem()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            all.push((
                harness.to_owned(),
                name,
                fixture["payload"].clone(),
                fixture["answer"].clone(),
            ));
        }
    }
    all
}

fn answer_of(run: &Run) -> Value {
    let out = run.stdout();
    if out.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }
}

/// Each fixture, in a project of its own, gets exactly its expected answer and
/// exits 0: refusals in each dialect (Codex's, Cursor's permission and messages,
/// Gemini's decision, Copilot's flat permissionDecision), context where the
/// harness takes it, nothing for events sandrail has no verdict for. Tool names
/// and argument fields are read into the host's vocabulary, so one rule on
/// `Write` refuses Gemini's `write_file`, Cursor's `Write` with `contents` and
/// Copilot's `edit` with `path`, the last even beside a decoy `file_path`.
/// Self-protection holds through each harness's own spellings: an indented
/// Codex patch header, Copilot's patch given as bare text, a Gemini or Cursor
/// shell told to run in the hook settings' directory, Copilot's `write_bash`.
#[test]
fn every_harness_fixture_gets_its_answer() {
    let policy = policy();
    let mut failures = Vec::new();
    let all = every_fixture();
    assert!(all.len() >= 45, "only {} fixtures", all.len());
    for (harness, name, payload, expected) in &all {
        let project = Project::new();
        project.config(&policy);
        // The fixtures' project directory is this project's.
        let here =
            |text: String| text.replace(FIXTURE_PROJECT, &project.dir().display().to_string());
        let run = project.hook_as(harness, here(payload.to_string()).as_bytes());
        let got = answer_of(&run);
        let expected: Value =
            serde_json::from_str(&here(expected.to_string())).expect("the expected answer");
        if run.code() != Some(0) || got != expected {
            failures.push(format!(
                "{harness}/{name}: exit {:?}\n  expected {expected}\n  got      {got}\n  stderr {}",
                run.code(),
                run.stderr()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The fixtures cover every event each harness maps to the host's, so a mapping
/// cannot silently go missing: this lists what each harness's fixtures exercise.
#[test]
fn every_harness_has_a_fixture_per_judged_event() {
    let all = every_fixture();
    let covers = |harness: &str, events: &[&str]| {
        for event in events {
            assert!(
                all.iter().any(|(h, n, _, _)| h == harness
                    && (n == event || n.starts_with(&format!("{event}-")))),
                "no {harness} fixture for {event}"
            );
        }
    };
    covers(
        "codex",
        &[
            "PreToolUse",
            "PostToolUse",
            "UserPromptSubmit",
            "Stop",
            "SubagentStop",
            "SessionStart",
            "PreCompact",
            "PermissionRequest",
        ],
    );
    covers(
        "gemini",
        &[
            "BeforeTool",
            "AfterTool",
            "BeforeAgent",
            "AfterAgent",
            "SessionStart",
            "SessionEnd",
            "PreCompress",
            "BeforeModel",
        ],
    );
    covers(
        "cursor",
        &[
            "preToolUse",
            "beforeShellExecution",
            "beforeMCPExecution",
            "beforeReadFile",
            "postToolUse",
            "afterFileEdit",
            "beforeSubmitPrompt",
            "stop",
            "subagentStop",
            "sessionStart",
            "sessionEnd",
        ],
    );
    covers(
        "copilot",
        &[
            "preToolUse",
            "postToolUse",
            "userPromptSubmitted",
            "agentStop",
            "sessionStart",
            "sessionEnd",
            "PreToolUse",
        ],
    );
}

/// Through a running `sandrail serve` (the hook forwards the payload it has read
/// into the host's model), the answer comes back in the harness's dialect.
#[test]
fn a_forwarded_event_is_answered_in_the_harness_dialect() {
    let project = Project::new();
    project.config(&policy());
    let server = Server::start(&project);
    let fixture: Value = serde_json::from_slice(
        &std::fs::read(fixtures().join("gemini/BeforeTool-force-push.json")).expect("read"),
    )
    .expect("JSON");
    let mut cmd = project.cmd();
    cmd.env("SANDRAIL_SERVE_SOCKET", server.socket())
        .env("SANDRAIL_SERVE_REQUIRED", "1");
    let run = project.hook_as_with(cmd, "gemini", fixture["payload"].to_string().as_bytes());
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(answer_of(&run), fixture["answer"], "{}", run.stderr());
}

/// A payload the harness's reading cannot place follows `on_error`: with
/// `deny`, exit 2 and the reason on stderr (every harness blocks on it), naming
/// the harness and the events it sends; with the default, the event proceeds.
#[test]
fn an_unreadable_harness_payload_follows_on_error() {
    let project = Project::new();
    project.config(&format!("[settings]\non_error = \"deny\"\n\n{}", policy()));
    let unknown = json!({"session_id": "g", "cwd": "/tmp", "hook_event_name": "BeforeEverything"});
    let run = project.hook_as("gemini", unknown.to_string().as_bytes());
    assert_eq!(run.code(), Some(2), "{}", run.stderr());
    assert!(
        run.stderr()
            .contains("unknown Gemini CLI hook event 'BeforeEverything'")
            && run.stderr().contains("BeforeTool"),
        "{}",
        run.stderr()
    );
    // A Copilot payload whose fields name no event it sends.
    let run = project.hook_as("copilot", br#"{"timestamp": 1, "cwd": "/tmp"}"#);
    assert_eq!(run.code(), Some(2), "{}", run.stderr());
    assert!(
        run.stderr().contains("GitHub Copilot payload"),
        "{}",
        run.stderr()
    );
    // Not JSON at all.
    let run = project.hook_as("cursor", b"{not json");
    assert_eq!(run.code(), Some(2), "{}", run.stderr());

    let lenient = Project::new();
    lenient.config(&policy());
    let run = lenient.hook_as("gemini", unknown.to_string().as_bytes());
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert!(
        run.stderr().contains("proceeds unjudged"),
        "{}",
        run.stderr()
    );
}

/// Cursor runs the hooks in Claude Code's settings too, sending its own
/// payload: a plain `sandrail hook` reads it as Cursor's (by the top-level
/// `cursor_version` and a Cursor event name) and answers in Claude Code's
/// words, which Cursor maps, instead of letting it through as unreadable.
#[test]
fn a_cursor_payload_to_a_claude_registration_is_judged() {
    let project = Project::new();
    project.config(&policy());
    let fixture = read_fixture("cursor/preToolUse-shell-force-push.json");
    let run = project.hook(fixture["payload"].to_string().as_bytes());
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(
        run.answer()["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        run.stderr()
    );
    // The same words inside the agent's own input do not make a Claude Code
    // payload Cursor's.
    let claude = payload(
        "PreToolUse",
        "s-claude",
        json!({"tool_name": "Bash", "tool_input": {"command": "git push --force origin main", "cursor_version": "1", "hook_event_name": "preToolUse"}}),
    );
    let run = project.hook(&claude);
    assert_eq!(
        run.answer()["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        run.stderr()
    );
}

/// Codex names no project directory: a session standing in a subdirectory
/// still has the repository's hook settings protected, found where the
/// harness's settings file is.
#[test]
fn codex_in_a_subdirectory_protects_the_repositorys_settings() {
    let project = Project::new();
    project.config(&policy());
    let hooks = project.dir().join(".codex/hooks.json");
    std::fs::create_dir_all(hooks.parent().expect("dir")).expect("mkdir");
    std::fs::write(&hooks, "{}").expect("write");
    let sub = project.dir().join("sub");
    std::fs::create_dir_all(&sub).expect("mkdir");
    let push = json!({
        "session_id": "codex-sub", "turn_id": "t1", "transcript_path": null, "cwd": sub,
        "hook_event_name": "PreToolUse", "model": "gpt-5", "tool_name": "Bash",
        "tool_use_id": "call_1", "tool_input": {"command": "rm ../.codex/hooks.json"}
    });
    let mut cmd = project.cmd();
    cmd.env_remove("CLAUDE_PROJECT_DIR").current_dir(&sub);
    let run = project.hook_as_with(cmd, "codex", push.to_string().as_bytes());
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(
        run.answer()["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        run.stderr()
    );
}

/// Only the directory field a harness's shell takes moves where a command's
/// relative paths land: a decoy beside it (Gemini's older `directory` beside
/// `dir_path`) or a field the harness has not (`working_directory` to Copilot's
/// `bash`) changes nothing, and a decoy settings file above the project does not
/// move the guard off the real one.
#[test]
fn decoy_directories_do_not_move_the_guard() {
    let project = Project::new();
    project.config(&policy());
    let dir = project.dir();
    for (harness, call) in [
        (
            "gemini",
            json!({"session_id": "g-decoy", "cwd": dir, "hook_event_name": "BeforeTool",
                   "tool_name": "run_shell_command",
                   "tool_input": {"command": "rm settings.json", "directory": ".", "dir_path": ".gemini"}}),
        ),
        (
            "copilot",
            json!({"sessionId": "c-decoy", "cwd": dir, "timestamp": 1, "toolName": "bash",
                   "toolArgs": json!({"command": "rm .github/hooks/sandrail.json", "working_directory": "/tmp"}).to_string()}),
        ),
    ] {
        let run = project.hook_as(harness, call.to_string().as_bytes());
        let answer = answer_of(&run);
        assert!(
            answer["decision"] == "deny" || answer["permissionDecision"] == "deny",
            "{harness}: {answer} {}",
            run.stderr()
        );
    }
    // A settings file the agent made above the project.
    let above = project.root.path().join(".codex/hooks.json");
    std::fs::create_dir_all(above.parent().expect("dir")).expect("mkdir");
    std::fs::write(&above, "{}").expect("write");
    let codex = project.dir().join(".codex/hooks.json");
    std::fs::create_dir_all(codex.parent().expect("dir")).expect("mkdir");
    std::fs::write(&codex, "{}").expect("write");
    let call = json!({"session_id": "x-decoy", "cwd": dir, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "rm .codex/hooks.json"}});
    // The agent's decoy sits above the project and below the home directory.
    let mut cmd = project.cmd();
    cmd.env_remove("CLAUDE_PROJECT_DIR")
        .env("HOME", project.root.path().join("home"));
    let run = project.hook_as_with(cmd, "codex", call.to_string().as_bytes());
    assert_eq!(
        answer_of(&run)["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        run.stderr()
    );
}

fn read_fixture(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixtures().join(name)).expect("read")).expect("JSON")
}

/// The receipt of a translated event names the host's tool and event, so one
/// review covers every harness.
#[test]
fn a_translated_event_leaves_a_receipt_in_the_hosts_words() {
    let project = Project::new();
    project.config(&policy());
    let fixture: Value = serde_json::from_slice(
        &std::fs::read(fixtures().join("copilot/preToolUse-force-push.json")).expect("read"),
    )
    .expect("JSON");
    let run = project.hook_as("copilot", fixture["payload"].to_string().as_bytes());
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let receipt = project.last_receipt();
    assert_eq!(receipt["event"], "PreToolUse");
    assert_eq!(receipt["tool"], "Bash");
    assert_eq!(receipt["session"], "cop-1");
    assert_eq!(receipt["decision"], "deny");
}
