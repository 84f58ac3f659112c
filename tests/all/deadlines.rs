//! Deadlines never reach the harness's hook timeout: a harness that times a
//! hook out lets the call through. What can run on one event is bounded over
//! the whole policy when a new session takes it, and at run time the hook
//! answers before the timeout, each guardrail it could not finish answered by
//! its `on_error`.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

/// The embedded default's entries, written out: the floor every addition
/// builds on.
const DEFAULT: &str = "[[guardrail]]\nname = \"destructive-commands\"\nsource = \"builtin:destructive-commands\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash|PowerShell\"\non_error = \"deny\"\n\n[[guardrail]]\nname = \"session-budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\nmatcher = \"Write|Edit|MultiEdit|NotebookEdit\"\n[guardrail.config]\nwarn_at = 200\n";

fn slow_addition(n: usize) -> String {
    format!(
        "\n[[guardrail]]\nname = \"slow-{n}\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\naction = \"note\"\nvalue = \"slow-{n} judged\"\n[guardrail.limits]\ntimeout_ms = 5000\n"
    )
}

/// Fourteen sessions, each finding one more 5 s guardrail added to the
/// config: each addition alone is within what a new session takes by itself,
/// but counted over the whole policy they pass the budget below Claude Code's
/// 60 s timeout (50 s, the lock's 2 s wait included) at the tenth, which is
/// held and said, and so is every one after it.
#[test]
fn additions_one_session_at_a_time_stop_at_the_budget() {
    let project = Project::new();
    project.config(DEFAULT);
    let mut text = DEFAULT.to_owned();
    let mut taken = Vec::new();
    for n in 1..=14 {
        text.push_str(&slow_addition(n));
        project.write_config(&text);
        let run = project.hook(&bash(&format!("s{n}"), "ls"));
        let context = run.stdout();
        if context.contains(&format!("slow-{n} judged")) {
            taken.push(n);
        } else {
            let said = run.answer()["systemMessage"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(
                said.contains("what can run on one PreToolUse could take")
                    && said.contains(
                        "past the 50.0 s sandrail keeps below the harness's 60.0 s hook timeout"
                    ),
                "session {n}: {said}"
            );
        }
    }
    assert_eq!(taken, (1..=9).collect::<Vec<_>>());
}

/// Claude Code's settings registering the hook with these timeouts, by event.
fn registered_with(project: &Project, timeouts: &[(&str, f64)]) {
    let mut hooks = serde_json::Map::new();
    for (event, seconds) in timeouts {
        let group = json!({"matcher": "*", "hooks": [{"type": "command", "command": "sandrail hook", "timeout": seconds}]});
        match hooks
            .get_mut(*event)
            .and_then(serde_json::Value::as_array_mut)
        {
            Some(groups) => groups.push(group),
            None => {
                hooks.insert((*event).to_owned(), json!([group]));
            }
        }
    }
    let dir = project.dir().join(".claude");
    std::fs::create_dir_all(&dir).expect(".claude");
    std::fs::write(
        dir.join("settings.json"),
        json!({"hooks": hooks}).to_string(),
    )
    .expect("settings");
}

/// A policy a person accepted whose guardrails together run past the hook's
/// own deadline (3 s registered: sandrail keeps 2.4 s) is answered before the
/// harness gives up: the first spinner stops at its own 2 s, the second is cut
/// at the deadline and, failing closed, refuses the call. A second
/// registration beside it with a timeout too short to answer in (its answer
/// is lost, the first one's stands) does not cut the first one's judging short.
#[test]
fn guardrails_past_the_hooks_deadline_are_answered_by_their_on_error() {
    let project = Project::new();
    registered_with(&project, &[("PreToolUse", 3.0), ("PreToolUse", 0.01)]);
    let spinner = |name: &str, on_error: &str| {
        format!(
            "[[guardrail]]\nname = \"{name}\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\non_error = \"{on_error}\"\n[guardrail.config]\naction = \"spin\"\n[guardrail.limits]\ntimeout_ms = 2000\n"
        )
    };
    project.write_config(&format!(
        "{}\n{}",
        spinner("first", "allow"),
        spinner("second", "deny")
    ));
    let trust = project.at_terminal(&["trust"], None);
    assert!(
        trust.stdout().contains("could take")
            && trust.stdout().contains("answered by its on_error"),
        "the person is told: {}",
        trust.stdout()
    );
    let started = Instant::now();
    let run = project.hook_within(&bash("s1", "ls"), Duration::from_secs(10));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    let reason = run.deny_reason().expect("refused");
    assert!(
        reason.contains("guardrail 'second' could not judge"),
        "{reason}"
    );
    assert!(
        run.stderr().contains("sandrail's deadline"),
        "{}",
        run.stderr()
    );
    let receipt = project.last_receipt();
    assert_eq!(
        receipt["guardrails"][0]["exceeded"],
        json!(["timeout_ms"]),
        "{receipt}"
    );
    assert_eq!(
        receipt["guardrails"][1]["exceeded"],
        json!(["deadline"]),
        "{receipt}"
    );
}

/// What stalls outside a guardrail — here the session's lock, held by another
/// hook of the session for longer than this event's timeout, under a lock
/// timeout a person set longer still — is answered before the harness's
/// timeout (2 s for a prompt here): the wait for the session ends at half the
/// time the event has left, and the event is refused, as the guardrail that
/// cannot judge without its state fails closed.
#[test]
fn a_stalled_hook_is_answered_before_the_harness_gives_up() {
    let project = Project::alone();
    registered_with(&project, &[("PreToolUse", 10.0), ("UserPromptSubmit", 2.0)]);
    project.config(&format!(
        "[settings]\nlock_timeout_ms = 8000\n\n\
         [[guardrail]]\nname = \"spinner\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Read\"\n[guardrail.config]\naction = \"spin\"\n[guardrail.limits]\ntimeout_ms = 5000\n\n\
         [[guardrail]]\nname = \"counter\"\nsource = \"{PROBE}\"\nevents = [\"UserPromptSubmit\"]\non_error = \"deny\"\n[guardrail.config]\naction = \"count\"\n"
    ));
    project.hook(&bash("s1", "ls")).code();
    let read = payload(
        "PreToolUse",
        "s1",
        json!({"tool_name": "Read", "tool_input": {"file_path": "/etc/hostname"}, "tool_use_id": "toolu_r"}),
    );
    let holder = {
        let cmd = project.cmd();
        let read = read.clone();
        std::thread::spawn(move || {
            let mut cmd = cmd;
            cmd.arg("hook")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            let mut child = cmd.spawn().expect("spawn");
            std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), &read)
                .expect("payload");
            drop(child.stdin.take());
            child.wait().expect("wait")
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let prompt = payload("UserPromptSubmit", "s1", json!({"prompt": "go on"}));
    let started = Instant::now();
    let run = project.hook_within(&prompt, Duration::from_secs(10));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    assert_eq!(run.answer()["decision"], "block", "{}", run.stderr());
    assert!(
        run.stderr()
            .contains("as long as this event could wait for it")
            && run.stderr().contains("guardrail 'counter' could not judge")
            && run.stderr().contains("the event is refused"),
        "{}",
        run.stderr()
    );
    holder.join().expect("the holder");
}

/// `sandrail hook` started by a forwarding hook that already waited on the
/// server (`SANDRAIL_HOOK_STARTED`, which `sandrail-hook` sets) counts its
/// deadline from the forwarding hook's start: with more than a 10 s timeout
/// spent there, it is answered at once by its fallback rather than judged
/// afresh past the harness's timeout. A stamp past the forwarding deadline is
/// not taken.
#[test]
fn a_hook_started_by_a_forwarding_hook_counts_the_time_spent_there() {
    let project = Project::new();
    registered_with(&project, &[("PreToolUse", 10.0)]);
    let ago = |secs: u64| {
        (std::time::SystemTime::now() - Duration::from_secs(secs))
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after the epoch")
            .as_micros()
            .to_string()
    };
    let mut cmd = project.cmd();
    cmd.env("SANDRAIL_HOOK_STARTED", ago(20));
    let started = Instant::now();
    let run = project.hook_with(cmd, &bash("s-late", "ls"));
    assert!(started.elapsed() < Duration::from_secs(5));
    // The watchdog answers, or the guardrails find their deadline gone: which
    // comes first is the scheduler's choice.
    let past_the_deadline = |stderr: &str| {
        stderr.contains("before its deadline")
            || stderr.contains("sandrail's deadline for this event came first")
    };
    assert!(past_the_deadline(&run.stderr()), "{}", run.stderr());
    let mut cmd = project.cmd();
    cmd.env("SANDRAIL_HOOK_STARTED", ago(600));
    let run = project.hook_with(cmd, &bash("s-stale", "ls"));
    assert!(!past_the_deadline(&run.stderr()), "{}", run.stderr());
}
