//! Each event kind gets the answer shape Claude Code reads; the embedded default
//! refuses destructive git however it is wrapped.

use serde_json::json;

use crate::support::*;

const EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
];

fn event_payload(event: &str) -> Vec<u8> {
    let extra = match event {
        "PreToolUse" => {
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"})
        }
        "PostToolUse" => json!({
            "tool_name": "Write",
            "tool_input": {"file_path": "/home/dev/project/a.rs", "content": "x"},
            "tool_response": {"filePath": "/home/dev/project/a.rs", "success": true},
            "tool_use_id": "toolu_2",
            "duration_ms": 12,
        }),
        "UserPromptSubmit" => json!({"prompt": "refactor the parser"}),
        "SessionStart" => json!({"source": "startup", "model": "claude-sonnet"}),
        "Stop" => json!({"stop_hook_active": false, "last_assistant_message": "Done."}),
        "SubagentStop" => json!({
            "stop_hook_active": false,
            "agent_id": "agent-1",
            "agent_type": "Explore",
            "agent_transcript_path": "/nonexistent/agent-1.jsonl",
        }),
        "PreCompact" => json!({"trigger": "auto", "custom_instructions": ""}),
        "SessionEnd" => json!({"reason": "prompt_input_exit"}),
        other => panic!("no payload for {other}"),
    };
    payload(event, "sess-events", extra)
}

fn probe(action: &str, value: &str) -> String {
    probe_config(&[(
        "probe",
        &format!("[guardrail.config]\naction = \"{action}\"\nvalue = \"{value}\"\n"),
    )])
}

#[test]
fn refusals_take_each_events_own_shape() {
    let project = Project::new();
    project.config(&probe("deny", "not now"));
    for event in EVENTS {
        let run = project.hook(&event_payload(event));
        assert_eq!(run.code(), Some(0), "{event}: {}", run.stderr());
        let answer = run.answer();
        let reason = "[probe] not now";
        match event {
            "PreToolUse" => {
                assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "PreToolUse");
                assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
                assert_eq!(
                    answer["hookSpecificOutput"]["permissionDecisionReason"],
                    reason
                );
            }
            "PostToolUse" | "UserPromptSubmit" | "Stop" | "SubagentStop" | "PreCompact" => {
                assert_eq!(
                    answer,
                    json!({"decision": "block", "reason": reason}),
                    "{event}"
                );
            }
            "SessionStart" | "SessionEnd" => {
                // Cannot be refused: the user is told instead.
                assert_eq!(answer, json!({"systemMessage": reason}), "{event}");
                assert!(
                    run.stderr().contains("cannot be refused"),
                    "{event}: {}",
                    run.stderr()
                );
            }
            _ => unreachable!(),
        }
    }
}

#[test]
fn notes_reach_the_agent_without_refusing() {
    let project = Project::new();
    project.config(&probe("note", "remember the tests"));
    for event in EVENTS {
        let answer = project.hook(&event_payload(event)).answer();
        let text = "[probe] remember the tests";
        assert!(answer.get("decision").is_none(), "{event}: {answer}");
        match event {
            "PreToolUse" | "PostToolUse" | "UserPromptSubmit" | "SessionStart" => {
                assert_eq!(answer["hookSpecificOutput"]["hookEventName"], event);
                assert_eq!(
                    answer["hookSpecificOutput"]["additionalContext"], text,
                    "{event}"
                );
                assert!(
                    answer["hookSpecificOutput"]
                        .get("permissionDecision")
                        .is_none()
                );
            }
            _ => assert_eq!(answer, json!({"systemMessage": text}), "{event}"),
        }
    }
}

#[test]
fn nothing_to_say_prints_nothing() {
    let project = Project::new();
    // Subscribed to Stop only, so every other event has no guardrail to run.
    project.config(&format!(
        "[[guardrail]]\nname = \"probe\"\nsource = \"{PROBE}\"\nevents = [\"Stop\"]\n[guardrail.config]\naction = \"deny\"\nvalue = \"no\"\n"
    ));
    for event in EVENTS.iter().filter(|e| **e != "Stop") {
        project.hook(&event_payload(event)).assert_silent();
    }
}

#[test]
fn violations_name_their_rule() {
    let project = Project::new();
    project.config(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"violation\"\nkey = \"no-todo\"\nvalue = \"TODO left in code\"\n",
    )]));
    let run = project.hook(&write("sess-v", "/home/dev/project/a.rs"));
    assert_eq!(
        run.deny_reason().as_deref(),
        Some("[probe/no-todo] TODO left in code")
    );
}

#[test]
fn default_refuses_destructive_git_however_wrapped() {
    let project = Project::new();
    for (command, rule) in [
        ("git push --force origin main", "force-push"),
        ("git push origin +main", "force-push"),
        ("git reset --hard HEAD~3", "reset-hard"),
        ("git clean -fdx", "clean-force"),
        ("git branch -D feature/old", "branch-force-delete"),
        ("FOO=1 git push -f", "force-push"),
        ("bash -c \"git reset --hard\"", "reset-hard"),
        ("cd sub && git clean -f", "clean-force"),
        ("cd sub&&git branch -D x", "branch-force-delete"),
        (
            "sudo -u dev env GIT_TRACE=1 git -C repo push --force-with-lease",
            "force-push",
        ),
        ("echo start; $(git reset --hard)", "reset-hard"),
    ] {
        let run = project.hook(&bash("sess-git", command));
        let reason = run
            .deny_reason()
            .unwrap_or_else(|| panic!("{command} was not refused"));
        assert!(
            reason.starts_with(&format!("[destructive-commands/{rule}]")),
            "{command}: {reason}"
        );
    }
    for command in [
        "git push origin main",
        "git reset --soft HEAD~1",
        "git clean -n",
        "git branch -d merged",
        "echo 'git push --force'",
        "git commit -m 'do not git reset --hard'",
        "cat <<EOF > notes.md\ngit push --force\nEOF",
    ] {
        project.hook(&bash("sess-git", command)).assert_silent();
    }
}

#[test]
fn default_budget_counts_edits_in_state() {
    let project = Project::new();
    for i in 0..3 {
        project
            .hook(&write("sess-budget", &format!("/home/dev/project/f{i}.rs")))
            .assert_silent();
    }
    assert_eq!(
        project.state("sess-budget", "session-budget"),
        [("edits".to_owned(), "3".to_owned())]
    );
}

#[test]
fn session_budget_refuses_past_its_limit() {
    let project = Project::new();
    project.config(
        "[[guardrail]]\nname = \"budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\nmatcher = \"Write|Edit\"\n[guardrail.config]\nlimit = 2\nwarn_at = 2\n",
    );
    project.hook(&write("sess-limit", "/p/a")).assert_silent();
    let second = project.hook(&write("sess-limit", "/p/b")).answer();
    assert!(
        second["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|t| t.contains("file edit 2 of 2"))
    );
    let third = project.hook(&write("sess-limit", "/p/c"));
    assert!(
        third
            .deny_reason()
            .is_some_and(|r| r.starts_with("[budget/edit-limit]"))
    );
    // A refused edit does not use the budget; a Bash call is not matched at all.
    project.hook(&bash("sess-limit", "ls")).assert_silent();
    assert_eq!(
        project.state("sess-limit", "budget"),
        [("edits".to_owned(), "2".to_owned())]
    );
}

#[test]
fn guardrails_see_the_turn_and_facts() {
    let project = Project::new();
    project.config(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"echo\"\n",
    )]));
    let transcript = project.dir().join("session.jsonl");
    let lines = [
        json!({"type": "user", "uuid": "u-1", "sessionId": "s", "message": {"role": "user", "content": "add a test"}}),
        json!({"type": "assistant", "uuid": "a-1", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]}}),
        json!({"type": "user", "uuid": "r-1", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.rs"}]}}),
        json!({"type": "user", "uuid": "u-2", "sessionId": "s", "message": {"role": "user", "content": "now run it"}}),
        json!({"type": "user", "uuid": "r-2", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2"}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&transcript, text).expect("write transcript");
    let context = project
        .hook(&bash_in_turn("sess-turn", "ls", &transcript))
        .context();
    assert!(context.contains("kind=EventKind::PreToolUse"), "{context}");
    assert!(context.contains("tool=Some(\"Bash\")"), "{context}");
    assert!(context.contains("turn=Some(\"2:u-2\")"), "{context}");
    assert!(
        context.contains("\"permission_mode\":\"default\""),
        "{context}"
    );
    assert!(
        context.contains("\"session_id\":\"sess-turn\""),
        "{context}"
    );

    // Without a transcript (in a session that never named one) the turn is
    // absent, and stderr says why.
    let run = project.hook(&bash("sess-turn-none", "ls"));
    let context = run.context();
    assert!(context.contains("turn=None"), "{context}");
    assert!(run.stderr().contains("turn unknown"), "{}", run.stderr());
}

#[test]
fn matchers_follow_claude_code_rules() {
    let project = Project::new();
    project.config(&format!(
        "[[guardrail]]\nname = \"exact\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Edit\"\n[guardrail.config]\naction = \"note\"\nvalue = \"exact\"\n\
         [[guardrail]]\nname = \"regex\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Edit.*\"\n[guardrail.config]\naction = \"note\"\nvalue = \"regex\"\n"
    ));
    let notebook = payload(
        "PreToolUse",
        "sess-m",
        json!({"tool_name": "NotebookEdit", "tool_input": {"notebook_path": "/p/n.ipynb", "new_source": "x"}}),
    );
    assert_eq!(project.hook(&notebook).context(), "[regex] regex");
}

/// Stateless guardrails that let an event through never open the database; one
/// that refuses opens it only to count the refusal (`sandrail status` shows it).
#[test]
fn stateless_guardrails_open_the_database_only_to_count_a_refusal() {
    let project = Project::new();
    project.hook(&bash("sess-nodb", "ls")).assert_silent();
    assert!(
        !project.session_db("sess-nodb").exists(),
        "destructive-commands does not import state"
    );
    project
        .hook(&write("sess-nodb", "/home/dev/project/a.rs"))
        .assert_silent();
    assert!(
        project.session_db("sess-nodb").is_file(),
        "session-budget does"
    );
    assert!(
        project
            .hook(&bash("sess-refused", "git push --force"))
            .deny_reason()
            .is_some()
    );
    assert!(
        project.session_db("sess-refused").is_file(),
        "the refusal is counted"
    );
}

#[test]
fn the_first_refusal_ends_the_chain() {
    let project = Project::new();
    project.config(&probe_config(&[
        (
            "first",
            "[guardrail.config]\naction = \"note\"\nvalue = \"ran first\"\n",
        ),
        (
            "refuser",
            "[guardrail.config]\naction = \"deny\"\nvalue = \"stop here\"\n",
        ),
        (
            "later",
            "[guardrail.config]\naction = \"write\"\nkey = \"seen\"\nvalue = \"yes\"\n",
        ),
    ]));
    let answer = project.hook(&bash("sess-chain", "ls")).answer();
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(specific["permissionDecisionReason"], "[refuser] stop here");
    // Notes from before the refusal are kept; the guardrail after it never ran.
    assert_eq!(specific["additionalContext"], "[first] ran first");
    assert!(project.state("sess-chain", "later").is_empty());
}
