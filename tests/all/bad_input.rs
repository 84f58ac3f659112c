//! Bad input gets a clear message on stderr, exit 0 from `hook` with nothing on
//! stdout, and loses nothing: state written before is still there afterwards.

use crate::support::*;

/// A project whose probe has already stored one key, to check nothing is lost.
fn project_with_state() -> Project {
    let project = Project::new();
    project.config(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"write\"\nkey = \"kept\"\nvalue = \"yes\"\n",
    )]));
    project.hook(&bash("sess-bad", "ls")).answer();
    project
}

fn assert_rejected(project: &Project, payload: &[u8], expected: &str) {
    let run = project.hook(payload);
    run.assert_silent();
    assert!(
        run.stderr().contains(expected),
        "stderr should mention {expected:?}: {}",
        run.stderr()
    );
    assert_eq!(
        project.state("sess-bad", "probe"),
        [("kept".to_owned(), "yes".to_owned())],
        "state survives bad input"
    );
}

#[test]
fn empty_stdin() {
    let project = project_with_state();
    assert_rejected(&project, b"", "payload on stdin is empty");
    assert_rejected(&project, b"  \n", "payload on stdin is empty");
}

/// Found by the payload reader's fuzz target: a payload whose last byte is a
/// backslash made the reader panic (exit 101, which a harness takes as a pass)
/// rather than find it unreadable, when `on_error` decides.
#[test]
fn a_payload_ending_in_a_backslash_is_unreadable_not_a_crash() {
    let project = project_with_state();
    assert_rejected(
        &project,
        br#"{"session_id": "sess-bad", "hook_event_name": "Stop", "a": "\"#,
        "not valid JSON",
    );
}

#[test]
fn invalid_json() {
    let project = project_with_state();
    assert_rejected(
        &project,
        br#"{"session_id": "sess-bad", "#,
        "not valid JSON",
    );
    assert_rejected(&project, b"[1, 2]", "not a JSON object");
}

#[test]
fn payload_over_16_mib() {
    let project = project_with_state();
    let filler = "a".repeat(16 << 20);
    let payload = String::from_utf8(bash("sess-bad", &filler)).expect("utf-8");
    assert_rejected(&project, payload.as_bytes(), "larger than 16777216 bytes");
}

#[test]
fn unknown_event() {
    let project = project_with_state();
    let unknown = payload("BeforeTool", "sess-bad", serde_json::json!({}));
    assert_rejected(&project, &unknown, "unknown hook event 'BeforeTool'");
    // An event Claude Code has but sandrail does not judge is quietly let through.
    let notification = payload(
        "Notification",
        "sess-bad",
        serde_json::json!({"message": "hi"}),
    );
    let run = project.hook(&notification);
    run.assert_silent();
    assert_eq!(run.stderr(), "");
}

#[test]
fn a_payload_without_a_session_id_is_judged_in_a_derived_session() {
    let project = Project::new();
    let payload =
        br#"{"hook_event_name":"PreToolUse","cwd":"/home/dev/project","tool_name":"Bash","tool_input":{"command":"git push --force"}}"#;
    let run = project.hook(payload);
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.starts_with("[destructive-commands/force-push]"))
    );
    assert!(
        run.stderr()
            .contains("has no `session_id`; the session is "),
        "{}",
        run.stderr()
    );
    // The same harness process, directory and day: the same session, so counters go on.
    let session = |run: &Run| {
        run.stderr()
            .split("the session is ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .map(str::to_owned)
            .expect("the derived id")
    };
    let write = br#"{"hook_event_name":"PreToolUse","session_id":"","cwd":"/home/dev/project","tool_name":"Write","tool_input":{"file_path":"/home/dev/project/a.rs","content":"x"}}"#;
    let first = project.hook(write);
    let second = project.hook(write);
    assert_eq!(session(&first), session(&second));
    assert_eq!(session(&first).len(), 36);
    assert_eq!(
        project.state(&session(&first), "session-budget"),
        [("edits".to_owned(), "2".to_owned())]
    );
}

#[test]
fn config_with_an_unknown_key() {
    let project = project_with_state();
    let config = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("config");
    project.config(&config.replace("source =", "matchr = \"Bash\"\nsource ="));
    // The running session keeps its policy, and the person hears why once.
    let run = project.hook(&bash("sess-bad", "ls"));
    assert_eq!(run.context(), "[probe] keyspace: kept=yes");
    let told = run.answer()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(told.contains("unknown field `matchr`"), "{told}");
    let again = project.hook(&bash("sess-bad", "ls"));
    assert_eq!(
        again.answer()["systemMessage"],
        serde_json::Value::Null,
        "said once per change"
    );
    // A new session holds to the accepted policy while the config is broken.
    let run = project.hook(&bash("sess-bad-next", "ls"));
    assert!(run.context().starts_with("[probe]"), "{}", run.stderr());
    assert!(
        run.stderr().contains("it cannot be used: invalid config")
            && run.stderr().contains("The accepted policy"),
        "{}",
        run.stderr()
    );
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1));
    assert!(
        check.stderr().contains("unknown field `matchr`"),
        "{}",
        check.stderr()
    );
    assert!(
        check.stderr().contains("sandrail.toml"),
        "names the file: {}",
        check.stderr()
    );
}

#[test]
fn a_broken_first_config_leaves_the_embedded_default_in_force() {
    let project = Project::new();
    project.config("[[guardrail]]\nname = \"x\"\nmatchr = \"Bash\"\n");
    // The bundled rules hold while the config is broken.
    let run = project.hook(&bash("sess-bad", "git push --force"));
    assert_the_default_refuses(&run, "the embedded default is in force");
}

#[test]
fn config_with_a_missing_wasm_file() {
    let project = project_with_state();
    let config = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("config");
    project.config(&format!(
        "{config}[[guardrail]]\nname = \"gone\"\nsource = \"guardrails/gone.wasm\"\nevents = [\"PreToolUse\"]\n"
    ));
    // An addition: the next session takes it. Only the missing guardrail is lost;
    // the others in the same file still run.
    let run = project.hook(&bash("sess-bad-next", "ls"));
    assert!(
        run.stderr().contains("guardrail 'gone' not run: ")
            && run.stderr().contains("guardrails/gone.wasm does not exist"),
        "{}",
        run.stderr()
    );
    assert!(run.context().starts_with("[probe] keyspace: kept=yes"));
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1));
    assert!(
        check.stdout().contains("error  gone: "),
        "{}",
        check.stdout()
    );
    assert!(
        check.stderr().contains("1 problem(s) among 2 guardrails"),
        "{}",
        check.stderr()
    );
}

#[test]
fn a_file_that_is_not_a_component() {
    let project = project_with_state();
    std::fs::write(project.dir().join("junk.wasm"), b"\0asm not really").expect("write");
    project.reconfigure(&format!(
        "{}[[guardrail]]\nname = \"junk\"\nsource = \"junk.wasm\"\nevents = [\"PreToolUse\"]\n",
        probe_config(&[(
            "probe",
            "[guardrail.config]\naction = \"read\"\nkey = \"kept\"\n"
        )])
    ));
    let run = project.hook(&bash("sess-bad", "ls"));
    // The broken guardrail is skipped by name; the others still judge.
    assert!(
        run.stderr()
            .contains("guardrail 'junk' not run: not a valid component"),
        "{}",
        run.stderr()
    );
    assert_eq!(run.context(), "[probe] kept=Some(\"yes\")");
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1));
    assert!(
        check
            .stdout()
            .contains("error  junk: not a valid component"),
        "{}",
        check.stdout()
    );
}

#[test]
fn explicit_config_that_does_not_exist() {
    let project = project_with_state();
    let mut cmd = project.cmd();
    cmd.env("SANDRAIL_CONFIG", project.dir().join("nope.toml"));
    // A new session: the accepted policy holds, and the person is told why.
    let run = project.hook_with(cmd, &bash("sess-bad-next", "ls"));
    assert!(run.context().starts_with("[probe]"), "{}", run.stderr());
    assert!(
        run.stderr().contains("SANDRAIL_CONFIG names"),
        "{}",
        run.stderr()
    );
    // With nothing accepted yet, the embedded default.
    let fresh = Project::new();
    let mut cmd = fresh.cmd();
    cmd.env("SANDRAIL_CONFIG", fresh.dir().join("nope.toml"));
    let run = fresh.hook_with(cmd, &bash("sess-bad", "git push --force"));
    assert_the_default_refuses(&run, "SANDRAIL_CONFIG names");
}

/// The embedded default refused the force push, and stderr says `why`.
#[track_caller]
fn assert_the_default_refuses(run: &Run, why: &str) {
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.starts_with("[destructive-commands/")),
        "{}",
        run.stderr()
    );
    assert!(run.stderr().contains(why), "{}", run.stderr());
}

#[test]
fn an_unusable_state_directory_costs_only_state() {
    let project = Project::new();
    std::fs::write(project.state_dir(), b"a file where the directory should be").expect("write");
    let run = project.hook(&write("sess-nostate", "/home/dev/project/a.rs"));
    run.assert_silent();
    assert!(
        run.stderr().contains("cannot create the state directory"),
        "{}",
        run.stderr()
    );
    assert!(
        run.stderr()
            .contains("the guardrails that keep state (session-budget) judge without it"),
        "{}",
        run.stderr()
    );
    // A stateless guardrail still refuses.
    assert!(
        project
            .hook(&bash("sess-nostate", "git push -f"))
            .deny_reason()
            .is_some()
    );
}

#[test]
fn a_corrupt_database_is_moved_aside_and_the_event_judged_in_full() {
    let project = Project::new();
    let db = project.session_db("sess-corrupt");
    std::fs::create_dir_all(db.parent().expect("sessions dir")).expect("sessions dir");
    std::fs::write(&db, b"this is not a redb file").expect("write");
    // One event both needs the state and refuses a force push: the database is
    // moved aside, and the refusal stands.
    project.config(&format!(
        "[[guardrail]]\nname = \"no-destructive-git\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash\"\n{}",
        probe_config(&[("counter", "[guardrail.config]\naction = \"count\"\n")])
    ));
    let run = project.hook(&bash("sess-corrupt", "git push --force"));
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.starts_with("[no-destructive-git/force-push]"))
    );
    assert!(
        run.stderr()
            .contains("this session's state database was unusable")
            && run.stderr().contains("the session starts afresh"),
        "{}",
        run.stderr()
    );
    // The stateful guardrails count again, in the fresh database.
    std::fs::remove_file(project.dir().join("sandrail.toml")).expect("back to the default");
    project.trust();
    project
        .hook(&write("sess-corrupt", "/home/dev/project/a.rs"))
        .assert_silent();
    assert_eq!(
        project.state("sess-corrupt", "session-budget"),
        [("edits".to_owned(), "1".to_owned())]
    );
    let aside: Vec<_> = std::fs::read_dir(db.parent().expect("dir"))
        .expect("read dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".redb.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(
        std::fs::read(aside[0].path()).expect("read"),
        b"this is not a redb file"
    );
}

/// A fill of `count` values of 60 KB each, which needs the database file to grow.
pub(crate) fn fill_config(count: usize, settings: &str) -> String {
    format!(
        "{settings}{}",
        probe_config(&[(
            "probe",
            &format!("[guardrail.config]\naction = \"fill\"\ncount = {count}\nsize = 60000\n"),
        )])
    )
}

#[cfg(unix)]
#[test]
fn a_commit_that_fails_is_reported_and_follows_on_error() {
    let project = Project::new();
    project.reconfigure(&fill_config(3, ""));
    assert_eq!(
        project.hook(&bash("sess-full", "ls")).context(),
        "[probe] refused: None; listed: 3"
    );
    // The disk is full: no file may grow (and the signal that would kill the
    // process for trying is ignored, as a full disk does not send it).
    let disk_full = |project: &Project| {
        let cmd = project.cmd_after("trap '' XFSZ; ulimit -f 1");
        project.hook_with(cmd, &bash("sess-full", "ls"))
    };
    project.reconfigure(&fill_config(10, ""));
    let run = disk_full(&project);
    assert_eq!(run.code(), Some(0));
    // on_error = "allow" (the default): reported, and the event proceeds as decided.
    assert!(
        run.stderr().contains("the state of this event could not be saved")
            && run.stderr().contains("what the guardrails recorded for this event is lost (on_error = \"allow\": the event proceeds as decided)"),
        "{}",
        run.stderr()
    );
    assert_eq!(run.context(), "[probe] refused: None; listed: 10");
    // on_error = "deny": the event is refused, naming the cause.
    project.reconfigure(&fill_config(10, "[settings]\non_error = \"deny\"\n"));
    let run = disk_full(&project);
    let answer = run.answer();
    let reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.starts_with(
            "[sandrail] Refused because sandrail failed (the state of this event could not be saved"
        ),
        "{answer}"
    );
    // Nothing of the failed events was kept, and the database still opens.
    project.reconfigure(&fill_config(0, ""));
    assert_eq!(
        project.hook(&bash("sess-full", "ls")).context(),
        "[probe] refused: None; listed: 3"
    );
}
