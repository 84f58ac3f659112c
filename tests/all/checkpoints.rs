//! Checkpoints: before each call that can change the project, the project is
//! kept where the agent cannot reach it, and `sandrail undo` brings back what
//! any call destroyed — however it was spelled, by a program whose targets no
//! reading of the command line could see.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::*;

/// `git ARGS…` in `dir`, with no configuration of this machine's.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "dev")
        .env("GIT_AUTHOR_EMAIL", "dev@example.com")
        .env("GIT_COMMITTER_NAME", "dev")
        .env("GIT_COMMITTER_EMAIL", "dev@example.com")
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A PreToolUse Bash payload run in the project itself.
fn bash_here(project: &Project, session: &str, command: &str) -> Vec<u8> {
    let mut payload: Value = serde_json::from_slice(&bash(session, command)).expect("json");
    payload["cwd"] = json!(project.dir());
    serde_json::to_vec(&payload).expect("payload")
}

/// A script that empties, deletes and removes what a data file names: no
/// reading of `python3 wipe.py` can see what it destroys.
const WIPE: &str = r#"
import json, os, shutil
for target in json.load(open("targets.json")):
    if target.startswith("empty:"):
        open(target[len("empty:"):], "w").close()
    elif os.path.isdir(target):
        shutil.rmtree(target)
    else:
        os.remove(target)
"#;

/// A project with a commit, an uncommitted edit, an untracked file and
/// ignored build output.
fn repository(project: &Project) {
    let dir = project.dir();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join(".gitignore"), "build/\n").expect("write");
    std::fs::write(dir.join("lib.rs"), "pub fn committed() {}\n").expect("write");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "first"]);
    std::fs::write(
        dir.join("lib.rs"),
        "pub fn committed() {}\npub fn hours_of_uncommitted_work() {}\n",
    )
    .expect("write");
    std::fs::write(dir.join("notes.md"), "untracked notes\n").expect("write");
    std::fs::create_dir_all(dir.join("build")).expect("dir");
    std::fs::write(dir.join("build/output.bin"), "IGNORED BUILD OUTPUT 1234").expect("write");
    std::fs::write(dir.join("wipe.py"), WIPE).expect("write");
}

/// Runs the call the hook judged, as the harness would once it proceeds.
fn run_in(project: &Project, command: &str) {
    let status = Command::new("sh")
        .current_dir(project.dir())
        .args(["-c", command])
        .status()
        .expect("sh");
    assert!(status.success(), "{command}");
}

/// The checkpoint records of the project's store, oldest first.
fn records(project: &Project) -> Vec<Value> {
    let listed = project.run(&["checkpoints", "--json"]);
    assert!(listed.ok(), "{}", listed.stderr());
    listed
        .stdout()
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON record"))
        .collect()
}

/// Every object file in the project's store.
fn stored_objects(project: &Project) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let stores = project.state_dir().join("checkpoints");
    for store in std::fs::read_dir(stores).expect("stores").flatten() {
        let objects = store.path().join("objects");
        for fan in std::fs::read_dir(objects).into_iter().flatten().flatten() {
            for object in std::fs::read_dir(fan.path()).expect("fan").flatten() {
                out.push(std::fs::read(object.path()).expect("object"));
            }
        }
    }
    out
}

#[test]
fn undo_brings_back_an_edit_an_untracked_file_and_git_itself_that_a_script_destroyed() {
    let project = Project::new();
    repository(&project);
    let dir = project.dir();
    std::fs::write(
        dir.join("targets.json"),
        r#"["empty:lib.rs", "notes.md", ".git"]"#,
    )
    .expect("write");
    let command = "python3 wipe.py";
    let judged = project.hook(&bash_here(&project, "s1", command));
    assert!(judged.ok(), "{}", judged.stderr());
    assert!(judged.stdout().is_empty(), "allowed: {}", judged.stdout());
    run_in(&project, command);
    assert_eq!(
        std::fs::read_to_string(dir.join("lib.rs")).expect("read"),
        ""
    );
    assert!(!dir.join("notes.md").exists() && !dir.join(".git").exists());

    // `checkpoints` names the call each checkpoint preceded.
    let listed = project.run(&["checkpoints"]);
    assert!(listed.ok(), "{}", listed.stderr());
    assert!(
        listed.stdout().contains("Bash `python3 wipe.py`"),
        "{}",
        listed.stdout()
    );
    let taken = records(&project);
    assert_eq!(taken.len(), 1, "{taken:?}");
    let id = taken[0]["id"].as_str().expect("id").to_owned();
    // Ignored build output is never stored.
    assert!(
        !stored_objects(&project)
            .iter()
            .any(|o| o.windows(20).any(|w| w == b"IGNORED BUILD OUTPUT")),
        "the ignored build output is in the store"
    );
    // The receipt names the checkpoint taken before its call.
    let receipts = project.run(&["receipts", "--json"]);
    assert!(
        receipts
            .stdout()
            .contains(&format!("\"checkpoint\":\"{id}\"")),
        "{}",
        receipts.stdout()
    );

    let dry = project.run(&["undo", "--dry-run"]);
    assert!(dry.ok(), "{}", dry.stderr());
    assert!(
        dry.stdout().contains("lib.rs") && dry.stdout().contains("notes.md"),
        "{}",
        dry.stdout()
    );
    assert!(dry.stdout().contains("refs/heads/main"), "{}", dry.stdout());
    assert_eq!(
        std::fs::read_to_string(dir.join("lib.rs")).expect("read"),
        "",
        "--dry-run changes nothing"
    );

    let undone = project.at_terminal(&["undo"], None);
    assert!(undone.ok(), "{}", undone.stdout());
    assert!(
        undone.stdout().contains(&format!("from checkpoint {id}")),
        "{}",
        undone.stdout()
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("lib.rs")).expect("read"),
        "pub fn committed() {}\npub fn hours_of_uncommitted_work() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.md")).expect("read"),
        "untracked notes\n"
    );
    // The repository is whole again: its history, and the edit still uncommitted.
    assert!(git(&dir, &["log", "--oneline"]).contains("first"));
    let status = git(&dir, &["status", "--porcelain"]);
    assert!(
        status.contains(" M lib.rs") && status.contains("?? notes.md"),
        "{status}"
    );
    assert!(git(&dir, &["fsck", "--no-progress"]).is_empty());
    // The ignored output was never touched.
    assert!(dir.join("build/output.bin").exists());
}

#[test]
fn an_undo_is_itself_undone_and_the_checkpoints_of_two_sessions_stay_apart() {
    let project = Project::new();
    repository(&project);
    let dir = project.dir();
    std::fs::write(dir.join("targets.json"), r#"["notes.md"]"#).expect("write");
    // Session a removes the notes; session b, later, writes a file of its own.
    project.hook(&bash_here(&project, "a", "python3 wipe.py"));
    run_in(&project, "python3 wipe.py");
    project.hook(&bash_here(&project, "b", "echo b > b.txt"));
    run_in(&project, "echo b > b.txt");

    let a: Vec<Value> = serde_json::from_str::<Value>(&format!(
        "[{}]",
        project
            .run(&["checkpoints", "--json", "--session", "a"])
            .stdout()
            .trim()
            .replace('\n', ",")
    ))
    .expect("json")
    .as_array()
    .cloned()
    .unwrap_or_default();
    assert_eq!(a.len(), 1, "{a:?}");
    assert!(a.iter().all(|r| r["session"] == "a"));
    let listed = project.run(&["checkpoints", "--session", "b"]);
    assert!(
        listed.stdout().contains("echo b > b.txt") && !listed.stdout().contains("wipe.py"),
        "{}",
        listed.stdout()
    );

    // Session a's undo brings back the notes, and leaves b's file? No: a
    // checkpoint is the whole project, so b.txt (made after it) goes, and is
    // kept in the checkpoint the undo takes first.
    let undone = project.at_terminal(&["undo", "--session", "a"], None);
    assert!(undone.ok(), "{}", undone.stdout());
    assert!(dir.join("notes.md").exists());
    assert!(!dir.join("b.txt").exists());
    // The undo, undone: back to the notes gone and b.txt there.
    let again = project.at_terminal(&["undo", "--session", "a"], None);
    assert!(again.ok(), "{}", again.stdout());
    assert!(!dir.join("notes.md").exists(), "{}", again.stdout());
    assert_eq!(
        std::fs::read_to_string(dir.join("b.txt")).expect("read"),
        "b\n"
    );
    let undos: Vec<Value> = records(&project)
        .into_iter()
        .filter(|r| r["occasion"] == "undo")
        .collect();
    assert_eq!(undos.len(), 2, "each undo took a checkpoint first");
}

#[test]
fn a_project_without_git_is_checkpointed_and_restored_too() {
    let project = Project::new();
    let dir = project.dir();
    std::fs::create_dir_all(dir.join("src")).expect("dir");
    std::fs::write(dir.join("src/main.py"), "print('work')\n").expect("write");
    std::fs::create_dir_all(dir.join("node_modules/left-pad")).expect("dir");
    std::fs::write(
        dir.join("node_modules/left-pad/index.js"),
        "DEPENDENCY CODE 5678",
    )
    .expect("write");
    std::fs::write(dir.join("wipe.py"), WIPE).expect("write");
    std::fs::write(dir.join("targets.json"), r#"["src"]"#).expect("write");
    project.hook(&bash_here(&project, "s1", "python3 wipe.py"));
    run_in(&project, "python3 wipe.py");
    assert!(!dir.join("src").exists());
    assert!(
        !stored_objects(&project)
            .iter()
            .any(|o| o.windows(15).any(|w| w == b"DEPENDENCY CODE")),
        "node_modules is left out by default"
    );
    let undone = project.at_terminal(&["undo"], None);
    assert!(undone.ok(), "{}", undone.stdout());
    assert_eq!(
        std::fs::read_to_string(dir.join("src/main.py")).expect("read"),
        "print('work')\n"
    );
    assert!(dir.join("node_modules/left-pad/index.js").exists());
}

#[test]
fn each_harness_write_tools_are_checkpointed_and_reading_is_not() {
    let project = Project::new();
    let dir = project.dir();
    git(&dir, &["init", "-q"]);
    std::fs::write(dir.join("a.txt"), "a").expect("write");
    let here = dir.display().to_string();
    let calls: Vec<(&str, Value, &str)> = vec![
        (
            "claude",
            json!({"hook_event_name": "PreToolUse", "session_id": "claude-1", "cwd": here, "tool_name": "Write", "tool_input": {"file_path": format!("{here}/a.txt"), "content": "x"}}),
            "Write",
        ),
        (
            "claude",
            json!({"hook_event_name": "PreToolUse", "session_id": "claude-1", "cwd": here, "tool_name": "Edit", "tool_input": {"file_path": format!("{here}/a.txt"), "old_string": "a", "new_string": "b"}}),
            "Edit",
        ),
        (
            "claude",
            json!({"hook_event_name": "PreToolUse", "session_id": "claude-1", "cwd": here, "tool_name": "MultiEdit", "tool_input": {"file_path": format!("{here}/a.txt"), "edits": []}}),
            "MultiEdit",
        ),
        (
            "claude",
            json!({"hook_event_name": "PreToolUse", "session_id": "claude-1", "cwd": here, "tool_name": "NotebookEdit", "tool_input": {"notebook_path": format!("{here}/n.ipynb"), "new_source": "x"}}),
            "NotebookEdit",
        ),
        (
            "claude",
            json!({"hook_event_name": "PreToolUse", "session_id": "claude-1", "cwd": here, "tool_name": "PowerShell", "tool_input": {"command": "Remove-Item a.txt"}}),
            "PowerShell",
        ),
        (
            "codex",
            json!({"session_id": "codex-1", "turn_id": "t", "transcript_path": null, "cwd": here, "hook_event_name": "PreToolUse", "model": "gpt-5", "permission_mode": "default", "tool_name": "apply_patch", "tool_use_id": "c1", "tool_input": {"command": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n"}}),
            "apply_patch",
        ),
        (
            "codex",
            json!({"session_id": "codex-1", "turn_id": "t", "transcript_path": null, "cwd": here, "hook_event_name": "PreToolUse", "model": "gpt-5", "permission_mode": "default", "tool_name": "Bash", "tool_use_id": "c2", "tool_input": {"command": "make clean"}}),
            "Bash",
        ),
        (
            "cursor",
            json!({"conversation_id": "cursor-1", "generation_id": "g", "cursor_version": "2.4.0", "workspace_roots": [here], "hook_event_name": "preToolUse", "tool_name": "Write", "tool_input": {"file_path": format!("{here}/a.txt"), "contents": "x"}, "tool_use_id": "u1", "cwd": here}),
            "Write",
        ),
        (
            "cursor",
            json!({"conversation_id": "cursor-1", "generation_id": "g", "cursor_version": "2.4.0", "workspace_roots": [here], "hook_event_name": "preToolUse", "tool_name": "Delete", "tool_input": {"file_path": format!("{here}/a.txt")}, "tool_use_id": "u2", "cwd": here}),
            "Delete",
        ),
        (
            "cursor",
            json!({"conversation_id": "cursor-1", "generation_id": "g", "cursor_version": "2.4.0", "workspace_roots": [here], "hook_event_name": "beforeShellExecution", "command": "rm a.txt", "cwd": here, "sandbox": false}),
            "Bash",
        ),
        (
            "gemini",
            json!({"session_id": "gemini-1", "transcript_path": null, "cwd": here, "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:01.000Z", "tool_name": "write_file", "tool_input": {"file_path": format!("{here}/a.txt"), "content": "x"}}),
            "Write",
        ),
        (
            "gemini",
            json!({"session_id": "gemini-1", "transcript_path": null, "cwd": here, "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:01.000Z", "tool_name": "replace", "tool_input": {"file_path": format!("{here}/a.txt"), "old_string": "a", "new_string": "b"}}),
            "Edit",
        ),
        (
            "gemini",
            json!({"session_id": "gemini-1", "transcript_path": null, "cwd": here, "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:01.000Z", "tool_name": "run_shell_command", "tool_input": {"command": "rm a.txt"}}),
            "Bash",
        ),
        (
            "copilot",
            json!({"timestamp": 1704614600100u64, "cwd": here, "sessionId": "copilot-1", "toolName": "edit", "toolArgs": json!({"path": format!("{here}/a.txt"), "old_str": "a", "new_str": "b"}).to_string()}),
            "Edit",
        ),
        (
            "copilot",
            json!({"timestamp": 1704614600100u64, "cwd": here, "sessionId": "copilot-1", "toolName": "create", "toolArgs": json!({"path": format!("{here}/c.txt"), "file_text": "c"}).to_string()}),
            "Write",
        ),
        (
            "copilot",
            json!({"timestamp": 1704614600100u64, "cwd": here, "sessionId": "copilot-1", "toolName": "bash", "toolArgs": json!({"command": "rm a.txt"}).to_string()}),
            "Bash",
        ),
        (
            "copilot",
            json!({"timestamp": 1704614600100u64, "cwd": here, "sessionId": "copilot-1", "toolName": "powershell", "toolArgs": json!({"command": "Remove-Item a.txt"}).to_string()}),
            "PowerShell",
        ),
    ];
    let mut expected = 0;
    for (harness, payload, tool) in &calls {
        let judged = project.hook_as(harness, payload.to_string().as_bytes());
        assert!(
            judged.ok() || judged.code() == Some(2),
            "{harness} {tool}: {}",
            judged.stderr()
        );
        expected += 1;
        let taken = records(&project);
        assert_eq!(
            taken.len(),
            expected,
            "{harness} {tool}: no checkpoint; {}",
            judged.stderr()
        );
        let last = &taken[taken.len() - 1];
        assert_eq!(last["tool"], *tool, "{harness}: {last}");
        assert_eq!(last["harness"], *harness, "{last}");
    }
    // What only reads takes none: a Read, a search, a command whose every
    // program reads.
    let reads: Vec<(&str, Value)> = vec![
        (
            "claude",
            json!({"hook_event_name": "PreToolUse", "session_id": "claude-1", "cwd": here, "tool_name": "Read", "tool_input": {"file_path": format!("{here}/a.txt")}}),
        ),
        (
            "claude",
            json!({"hook_event_name": "PreToolUse", "session_id": "claude-1", "cwd": here, "tool_name": "Grep", "tool_input": {"pattern": "x"}}),
        ),
        (
            "claude",
            json!({"hook_event_name": "PreToolUse", "session_id": "claude-1", "cwd": here, "tool_name": "Bash", "tool_input": {"command": "ls -la && cat a.txt | grep a"}}),
        ),
        (
            "gemini",
            json!({"session_id": "gemini-1", "transcript_path": null, "cwd": here, "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:01.000Z", "tool_name": "read_file", "tool_input": {"absolute_path": format!("{here}/a.txt")}}),
        ),
    ];
    for (harness, payload) in &reads {
        project.hook_as(harness, payload.to_string().as_bytes());
    }
    assert_eq!(
        records(&project).len(),
        expected,
        "a call that only reads took a checkpoint"
    );
}

#[test]
fn the_agent_is_told_of_the_checkpoint_where_a_call_removes_and_cannot_undo_itself() {
    let project = Project::new();
    repository(&project);
    let allowed = project.hook(&bash_here(&project, "s1", "rm -rf notes.md"));
    let answer = allowed.answer();
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.contains("[sandrail] checkpoint ") && context.contains("sandrail undo"),
        "{answer}"
    );
    // A call that removes nothing that is there says nothing of it.
    project
        .hook(&bash_here(&project, "s1", "rm -rf no-such-dir"))
        .assert_silent();
    run_in(&project, "rm -rf notes.md");
    // The agent's `sandrail undo` is refused, and run on a pipe it changes nothing.
    let denied = project.hook(&bash_here(&project, "s1", "sandrail undo"));
    assert!(denied.stdout().contains("\"deny\""), "{}", denied.stdout());
    let piped = project.run(&["undo"]);
    assert_eq!(piped.code(), Some(2), "{}", piped.stderr());
    assert!(
        piped.stderr().contains("needs a person at a terminal"),
        "{}",
        piped.stderr()
    );
    assert!(
        !project.dir().join("notes.md").exists(),
        "nothing was restored"
    );
}

#[test]
fn a_store_that_cannot_be_written_is_reported_and_the_call_is_judged_as_before() {
    let project = Project::new();
    repository(&project);
    // Where the stores go, a file: no store can be made.
    std::fs::create_dir_all(project.state_dir()).expect("state");
    std::fs::write(project.state_dir().join("checkpoints"), "not a directory").expect("write");
    // Said to the person once, at the session's start; on each call, on
    // stderr and in the receipt.
    let started = project.hook(&payload(
        "SessionStart",
        "s1",
        json!({"source": "startup", "cwd": project.dir()}),
    ));
    assert!(
        started.answer()["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("no checkpoint was taken")),
        "{}",
        started.stdout()
    );
    let allowed = project.hook(&bash_here(&project, "s1", "make"));
    assert!(allowed.ok(), "{}", allowed.stderr());
    assert!(
        allowed.stderr().contains("no checkpoint was taken"),
        "{}",
        allowed.stderr()
    );
    assert!(
        !allowed.stdout().contains("\"deny\""),
        "judged as before: {}",
        allowed.stdout()
    );
    let refused = project.hook(&bash_here(&project, "s1", "git push --force origin main"));
    assert!(
        refused.stdout().contains("\"deny\""),
        "{}",
        refused.stdout()
    );
    let receipts = project.run(&["receipts", "--json"]);
    assert!(
        receipts.stdout().contains("\"checkpoint_failed\""),
        "{}",
        receipts.stdout()
    );
    assert!(
        project.doctor_finds("checkpts", "error", "cannot be written"),
        "{}",
        project.run(&["doctor"]).stdout()
    );
    // A store that can be written again, whose latest attempt failed: doctor
    // says that too, until a checkpoint is taken.
    std::fs::remove_file(project.state_dir().join("checkpoints")).expect("rm");
    let store = sandrail::checkpoint::Store::of(
        &project.state_dir(),
        &project.dir().canonicalize().expect("dir"),
    );
    store.note_failure("the checkpoint store is full");
    assert!(project.doctor_finds("checkpts", "error", "the checkpoint store is full"));
    project.hook(&bash_here(&project, "s1", "make"));
    assert!(project.doctor_finds("checkpts", "ok", "1 of this project"));
}

#[test]
fn a_file_over_the_cap_is_left_out_and_said() {
    let project = Project::new();
    project.config(&format!(
        "{}\n[checkpoints]\nmax_file_mib = 1\n",
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("policy/src/default.toml")
        )
        .expect("the embedded default")
    ));
    let dir = project.dir();
    std::fs::write(dir.join("big.bin"), vec![7u8; 2 << 20]).expect("write");
    std::fs::write(dir.join("small.txt"), "small").expect("write");
    project.hook(&payload(
        "SessionStart",
        "s1",
        json!({"source": "startup", "cwd": dir}),
    ));
    let start = project.hook(&bash_here(&project, "s1", "make"));
    assert!(start.ok(), "{}", start.stderr());
    let taken = records(&project);
    let last = taken.last().expect("a checkpoint");
    assert_eq!(last["left_out"][0]["path"], "big.bin", "{last}");
    assert_eq!(last["left_out"][0]["why"], "over-cap", "{last}");
    let id = last["id"].as_str().expect("id");
    let diff = project.run(&["checkpoints", "diff", id]);
    assert!(
        diff.stdout()
            .contains("not in the checkpoint: big.bin (2.0 MiB, over the cap)"),
        "{}",
        diff.stdout()
    );
    std::fs::remove_file(dir.join("big.bin")).expect("rm");
    let dry = project.run(&["undo", "--dry-run", id]);
    assert!(
        dry.stdout()
            .contains("not in the checkpoint, so not brought back: big.bin"),
        "{}",
        dry.stdout()
    );
}

#[test]
fn switching_checkpoints_off_waits_for_a_person() {
    let project = Project::new();
    let default = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("policy/src/default.toml"),
    )
    .expect("the embedded default");
    project.config(&default);
    // The agent's edit: held, so the next session is still checkpointed.
    project.write_config(&format!("{default}\n[checkpoints]\nenabled = false\n"));
    project.hook(&payload(
        "SessionStart",
        "s2",
        json!({"source": "startup", "cwd": project.dir()}),
    ));
    project.hook(&bash_here(&project, "s2", "make"));
    assert!(
        records(&project)
            .iter()
            .any(|r| r["session"] == "s2" && r["occasion"] == "call"),
        "a held [checkpoints] enabled = false switched checkpoints off"
    );
    let audit = project.run(&["audit"]);
    assert!(
        audit.stdout().contains("checkpoints on:"),
        "{}",
        audit.stdout()
    );
    // A person accepts it: the next session takes none.
    project.config(&format!("{default}\n[checkpoints]\nenabled = false\n"));
    let before = records(&project).len();
    project.hook(&payload(
        "SessionStart",
        "s3",
        json!({"source": "startup", "cwd": project.dir()}),
    ));
    project.hook(&bash_here(&project, "s3", "make"));
    assert_eq!(records(&project).len(), before);
    assert!(project.run(&["audit"]).stdout().contains("checkpoints OFF"));
    assert!(project.doctor_finds("checkpts", "warning", "OFF"));
}

#[test]
fn parallel_hooks_on_one_project_lose_and_mix_no_checkpoint() {
    let project = Project::alone();
    repository(&project);
    let dir = project.dir();
    for n in 0..200 {
        std::fs::write(dir.join(format!("file{n}.txt")), format!("file {n}")).expect("write");
    }
    let children: Vec<_> = (0..12)
        .map(|n: usize| {
            let mut cmd = project.cmd();
            cmd.arg("hook")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped());
            let mut child = cmd.spawn().expect("spawn");
            let payload = bash_here(
                &project,
                if n.is_multiple_of(2) { "even" } else { "odd" },
                &format!("make target{n}"),
            );
            std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), &payload)
                .expect("payload");
            drop(child.stdin.take());
            child
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("no checkpoint"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let taken = records(&project);
    assert_eq!(taken.len(), 12, "{taken:?}");
    let mut ids: Vec<&str> = taken.iter().filter_map(|r| r["id"].as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 12);
    // Every one names its own call and session, and every one is whole.
    for record in &taken {
        let call = record["call"].as_str().expect("call");
        let n: usize = call.trim_start_matches("make target").parse().expect("n");
        assert_eq!(
            record["session"],
            if n.is_multiple_of(2) { "even" } else { "odd" }
        );
        assert_eq!(record["differs"], 0, "{record}");
    }
}

#[test]
fn the_home_directory_is_not_checkpointed_and_a_state_directory_inside_the_project_is_never_kept() {
    // The agent started in the home directory: every cache and key of the
    // account would be copied on every call. Said once, at the start.
    let project = Project::new();
    let home = project.root.path().to_path_buf();
    let in_home = |payload: &[u8]| {
        let mut cmd = project.cmd();
        cmd.env("CLAUDE_PROJECT_DIR", &home).current_dir(&home);
        project.hook_with(cmd, payload)
    };
    let started = in_home(&payload(
        "SessionStart",
        "h1",
        json!({"source": "startup", "cwd": home}),
    ));
    assert!(
        started.answer()["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("home directory")),
        "{}",
        started.stdout()
    );
    let mut call: Value = serde_json::from_slice(&bash("h1", "make")).expect("json");
    call["cwd"] = json!(home);
    in_home(call.to_string().as_bytes());
    assert!(
        !project.state_dir().join("checkpoints").exists(),
        "a checkpoint of the home directory was taken"
    );

    // A state directory inside the project: the store never keeps itself.
    let project = Project::new();
    let dir = project.dir();
    std::fs::write(dir.join("a.txt"), "a").expect("write");
    let state = dir.join("sandrail-state");
    let hook = |payload: &[u8]| {
        let mut cmd = project.cmd();
        cmd.env("SANDRAIL_STATE_DIR", &state);
        project.hook_with(cmd, payload)
    };
    hook(&bash_here(&project, "s1", "make one"));
    hook(&bash_here(&project, "s1", "make two"));
    let mut listed = project.cmd();
    listed
        .env("SANDRAIL_STATE_DIR", &state)
        .args(["checkpoints", "--json"]);
    let out = Run(listed.output().expect("checkpoints"));
    let records: Vec<Value> = out
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(records.len(), 2, "{}", out.stderr());
    assert_eq!(records[0]["files"], 1, "{}", records[0]);
    assert_eq!(records[1]["differs"], 0, "{}", records[1]);
}

/// Lines whose programs only look like readers — each writes or runs a
/// program by an option its documentation gives it — take a checkpoint.
#[test]
fn lines_that_only_look_as_if_they_read_are_checkpointed() {
    let project = Project::new();
    repository(&project);
    let mut expected = 0;
    for line in [
        "rg --pre rm .",
        "uniq /dev/null notes.md",
        "sort --outp=notes.md lib.rs",
        "git grep --open=vi pub",
        "git config user.name list",
        "printf -v 'a[$(rm notes.md)]' x",
        "x='a[$(rm notes.md)]'; echo $((x))",
        "/usr/bin/../../tmp/cat notes.md",
    ] {
        let judged = project.hook(&bash_here(&project, "s1", line));
        assert!(judged.ok(), "{line}: {}", judged.stderr());
        expected += 1;
        assert_eq!(
            records(&project).len(),
            expected,
            "no checkpoint before `{line}`"
        );
    }
    // What does only read takes none.
    project.hook(&bash_here(
        &project,
        "s1",
        "rg -n committed lib.rs | head -3",
    ));
    assert_eq!(records(&project).len(), expected);
}

/// A FIFO where an ignore file would be neither wedges the hook nor keeps a
/// person's `undo` waiting; the checkpoint keeps everything and says why.
#[test]
fn an_ignore_file_that_is_a_fifo_wedges_nothing() {
    let project = Project::new();
    repository(&project);
    let dir = project.dir();
    std::fs::create_dir_all(dir.join("vendor/lib")).expect("dir");
    std::fs::write(dir.join("vendor/lib/code.c"), "int kept;").expect("write");
    let made = Command::new("mkfifo")
        .arg(dir.join("vendor/lib/.gitignore"))
        .status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo is not available: skipped");
        return;
    }
    let judged = project.hook_within(
        &bash_here(&project, "s1", "make"),
        std::time::Duration::from_secs(20),
    );
    assert!(judged.ok(), "{}", judged.stderr());
    assert!(
        judged
            .stderr()
            .contains("vendor/lib/.gitignore is not a regular file"),
        "{}",
        judged.stderr()
    );
    std::fs::remove_dir_all(dir.join("vendor")).ok();
    let dry = project.run(&["undo", "--dry-run"]);
    assert!(
        dry.stdout().contains("vendor/lib/code.c"),
        "{}{}",
        dry.stdout(),
        dry.stderr()
    );
}
