//! The sandbox's limits: deadline, memory, state sizes, log volume, verdict sizes.
//! A guardrail that breaks one is reported by name and the event proceeds.

use std::time::{Duration, Instant};

use crate::support::*;

fn probe_with(body: &str) -> String {
    probe_config(&[("probe", body)])
}

#[test]
fn an_endless_loop_is_stopped_by_its_deadline() {
    let project = Project::new();
    project.config(&probe_with(
        "[guardrail.limits]\ntimeout_ms = 100\n[guardrail.config]\naction = \"spin\"\n",
    ));
    let started = Instant::now();
    let run = project.hook(&bash("sess-spin", "ls"));
    run.assert_silent();
    assert!(
        run.stderr().contains("guardrail 'probe' failed and was skipped (the event proceeds): did not finish within its deadline of 100ms"),
        "{}",
        run.stderr()
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the deadline stopped it"
    );
}

#[test]
fn allocating_past_the_memory_limit_is_stopped() {
    let project = Project::new();
    project.config(&probe_with(
        "[guardrail.limits]\nmemory_mib = 16\n[guardrail.config]\naction = \"hog\"\n",
    ));
    let run = project.hook(&bash("sess-hog", "ls"));
    run.assert_silent();
    assert!(
        run.stderr().contains("guardrail 'probe' failed and was skipped (the event proceeds): tried to grow its memory past its limit of 16 MiB"),
        "{}",
        run.stderr()
    );
}

#[test]
fn state_limits_are_errors_the_guardrail_sees() {
    let project = Project::new();
    project.config(&probe_with("[guardrail.limits]\ntimeout_ms = 20000\n[guardrail.config]\naction = \"limits\"\ncount = 10001\n"));
    let context = project.hook(&bash("sess-lim", "ls")).context();
    assert!(
        context.contains("key: Some(\"key is longer than 1024 bytes\")"),
        "{context}"
    );
    assert!(
        context.contains("value: Some(\"value is larger than 65536 bytes\")"),
        "{context}"
    );
    assert!(
        context.contains("keys: Some(\"at 10000: the keyspace already holds 10000 keys\")"),
        "{context}"
    );
    assert_eq!(project.state("sess-lim", "probe").len(), 10_000);
}

#[test]
fn a_trap_after_writing_leaves_no_write_behind() {
    let project = Project::new();
    project.config(&probe_with(
        "[guardrail.config]\naction = \"write-then-panic\"\nkey = \"half\"\nvalue = \"written\"\n",
    ));
    let run = project.hook(&bash("sess-trap", "ls"));
    run.assert_silent();
    assert!(
        run.stderr().contains("[probe] stderr: ")
            && run.stderr().contains("probe failed after writing"),
        "{}",
        run.stderr()
    );
    assert!(
        run.stderr()
            .contains("guardrail 'probe' failed and was skipped"),
        "{}",
        run.stderr()
    );
    assert!(project.state("sess-trap", "probe").is_empty());
}

#[test]
fn guest_output_and_logs_are_forwarded_and_bounded() {
    let project = Project::new();
    let value = "y".repeat(1000);
    project.config(&probe_with(&format!(
        "[guardrail.config]\naction = \"log\"\ncount = 200\nvalue = \"{value}\"\n"
    )));
    let run = project.hook(&bash("sess-log", "ls"));
    run.assert_silent();
    let stderr = run.stderr();
    assert!(
        stderr.contains("sandrail: [probe] warn: log line 0: yyy"),
        "{stderr}"
    );
    assert!(
        stderr.contains("log limit of 64 KiB for this event reached"),
        "{stderr}"
    );
    assert!(!stderr.contains("log line 199"), "later lines are dropped");
    assert!(
        stderr.contains("sandrail: [probe] stdout: to stdout"),
        "{stderr}"
    );
    assert!(
        stderr.contains("sandrail: [probe] stderr: to stderr"),
        "{stderr}"
    );
}

#[test]
fn an_oversized_verdict_is_malformed() {
    let project = Project::new();
    project.config(&probe_with(
        "[guardrail.config]\naction = \"huge\"\ncount = 1048576\n",
    ));
    let run = project.hook(&bash("sess-huge", "ls"));
    run.assert_silent();
    assert!(
        run.stderr().contains(
            "malformed verdict: the deny reason is 1048576 characters; the limit is 10000"
        ),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_guardrail_error_is_reported_by_name() {
    let project = Project::new();
    project.config(&probe_with(
        "[guardrail.config]\naction = \"no-such-action\"\n",
    ));
    let run = project.hook(&bash("sess-err", "ls"));
    run.assert_silent();
    assert!(
        run.stderr().contains("unknown action no-such-action"),
        "{}",
        run.stderr()
    );
    assert!(
        run.stderr()
            .contains("guardrail 'probe' failed and was skipped"),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_guardrail_blocked_in_a_host_call_is_stopped_by_its_deadline() {
    let project = Project::new();
    project.config(&probe_with(
        "[guardrail.limits]\ntimeout_ms = 200\n[guardrail.config]\naction = \"sleep\"\ncount = 60000\n",
    ));
    let started = Instant::now();
    let run = project.hook(&bash("sess-sleep", "ls"));
    run.assert_silent();
    assert!(
        run.stderr()
            .contains("did not finish within its deadline of 200ms"),
        "{}",
        run.stderr()
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn flooding_stdout_is_truncated_not_fatal() {
    let project = Project::new();
    project.config(&probe_with(
        "[guardrail.config]\naction = \"flood\"\ncount = 1024\n",
    ));
    let run = project.hook(&bash("sess-flood", "ls"));
    assert_eq!(run.context(), "[probe] flooded");
    let stderr = run.stderr();
    assert_eq!(
        stderr.matches("[probe] stdout: zzz").count(),
        64,
        "64 KiB of 1 KiB lines kept"
    );
    assert!(
        stderr.contains("[probe] stdout: 983040 more bytes dropped"),
        "{stderr}"
    );
}
