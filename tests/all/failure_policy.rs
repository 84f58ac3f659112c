//! A guardrail's `on_error`: when it cannot judge, "allow" lets the event proceed
//! and "deny" refuses it, naming the guardrail and the cause.

use serde_json::json;

use crate::support::*;

fn failing(body: &str) -> String {
    probe_config(&[("probe", &format!("on_error = \"deny\"\n{body}"))])
}

#[track_caller]
fn assert_refused_for(run: &Run, cause: &str) {
    let reason = run.deny_reason().expect("refused");
    assert!(
        reason.starts_with(
            "[sandrail] Refused because guardrail 'probe' could not judge this call ("
        ),
        "{reason}"
    );
    assert!(reason.contains(cause), "{reason}");
    assert!(reason.contains("on_error is \"deny\""), "{reason}");
    assert!(
        run.stderr()
            .contains("the event is refused (its on_error = \"deny\")"),
        "{}",
        run.stderr()
    );
}

#[test]
fn every_way_of_failing_refuses_under_deny() {
    let project = Project::new();
    for (body, cause) in [
        (
            "[guardrail.limits]\ntimeout_ms = 100\n[guardrail.config]\naction = \"spin\"\n",
            "did not finish within its deadline of 100ms",
        ),
        (
            "[guardrail.limits]\nmemory_mib = 16\n[guardrail.config]\naction = \"hog\"\n",
            "tried to grow its memory past its limit of 16 MiB",
        ),
        // A trap is given by its cause: a Rust guest's panic, where and why.
        (
            "[guardrail.config]\naction = \"panic\"\n",
            "panicked at tests/guardrails/probe/src/lib.rs:",
        ),
        (
            "[guardrail.config]\naction = \"huge\"\ncount = 1048576\n",
            "malformed verdict",
        ),
    ] {
        project.reconfigure(&failing(body));
        let run = project.hook(&bash("sess-fail", "ls"));
        assert_refused_for(&run, cause);
    }
}

#[test]
fn a_missing_or_altered_component_refuses_under_deny() {
    let project = Project::new();
    project.reconfigure("[[guardrail]]\nname = \"probe\"\nsource = \"guards/gone.wasm\"\nevents = [\"PreToolUse\"]\non_error = \"deny\"\n");
    let run = project.hook(&bash("sess-gone", "ls"));
    assert_refused_for(&run, "does not exist");

    let pin = "0".repeat(64);
    project.reconfigure(&format!(
        "[[guardrail]]\nname = \"probe\"\nsource = \"{PROBE}\"\nsha256 = \"{pin}\"\nevents = [\"PreToolUse\"]\non_error = \"deny\"\n"
    ));
    let run = project.hook(&bash("sess-pin", "ls"));
    assert_refused_for(
        &run,
        &format!("the config pins {pin} but the component is "),
    );

    // The same failures under the default policy only cost the guardrail.
    project.reconfigure("[[guardrail]]\nname = \"probe\"\nsource = \"guards/gone.wasm\"\nevents = [\"PreToolUse\"]\n");
    let run = project.hook(&bash("sess-gone", "ls"));
    run.assert_silent();
    assert!(
        run.stderr().contains("guardrail 'probe' not run:"),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_stop_is_blocked_and_a_session_start_told() {
    let project = Project::new();
    project.reconfigure(&failing("[guardrail.config]\naction = \"panic\"\n"));
    let run = project.hook(&payload(
        "Stop",
        "sess-stop",
        json!({"stop_hook_active": false}),
    ));
    let answer = run.answer();
    assert_eq!(answer["decision"], "block", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap_or("")
            .contains("guardrail 'probe' could not judge"),
        "{answer}"
    );
    // A SessionStart cannot be refused: the user is told instead.
    let run = project.hook(&payload(
        "SessionStart",
        "sess-stop",
        json!({"source": "startup"}),
    ));
    assert!(run.ok());
    assert!(run.stdout().contains("could not judge"), "{}", run.stdout());
}

#[test]
fn the_embedded_default_fails_closed_where_the_agent_writes_the_input() {
    let project = Project::new();
    let run = project.run(&["list", "--json"]);
    assert!(run.ok(), "{}", run.stderr());
    let policies: Vec<(String, String)> = run
        .stdout()
        .lines()
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).expect("json line");
            (
                entry["name"].as_str().unwrap_or("").to_owned(),
                entry["on_error"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        policies,
        [
            ("destructive-commands".to_owned(), "deny".to_owned()),
            ("session-budget".to_owned(), "allow".to_owned())
        ]
    );
    let run = project.run(&["list"]);
    assert!(
        run.stdout().contains("on_error deny (fails closed)"),
        "{}",
        run.stdout()
    );
}

/// A guardrail that panics costs stderr one line — where it panicked and why —
/// not wasmtime's backtrace of unnamed functions; `SANDRAIL_LOG=debug` shows that.
#[test]
fn a_panicking_guardrail_is_one_line_on_stderr() {
    let project = Project::new();
    project.reconfigure(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"panic\"\n",
    )]));
    let run = project.hook(&bash("sess-panic", "ls"));
    run.assert_silent();
    let stderr = run.stderr();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("probe") || l.contains("wasm") || l.contains("panicked"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("sandrail: guardrail 'probe' failed and was skipped")
            && lines[0].contains("panicked at tests/guardrails/probe/src/lib.rs:")
            && lines[0].ends_with("probe asked to panic"),
        "{stderr}"
    );
    let mut cmd = project.cmd();
    cmd.env("SANDRAIL_LOG", "debug");
    let debug = project.hook_with(cmd, &bash("sess-panic", "ls")).stderr();
    assert!(debug.contains("wasm backtrace"), "{debug}");
}
