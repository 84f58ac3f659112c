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
    project.reconfigure(&probe_with(
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
    project.reconfigure(&probe_with(
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
    project.reconfigure(&probe_with("[guardrail.limits]\ntimeout_ms = 20000\n[guardrail.config]\naction = \"limits\"\ncount = 10001\n"));
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
    project.reconfigure(&probe_with(
        "[guardrail.config]\naction = \"write-then-panic\"\nkey = \"half\"\nvalue = \"written\"\n",
    ));
    let run = project.hook(&bash("sess-trap", "ls"));
    run.assert_silent();
    // Its panic is the failure's one line, not repeated as its output.
    assert!(
        run.stderr()
            .lines()
            .any(|l| l.contains("guardrail 'probe' failed")
                && l.contains("panicked at")
                && l.ends_with("probe failed after writing")),
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
    project.reconfigure(&probe_with(&format!(
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
        stderr.contains("[probe] limit reached: log_kib: "),
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
    project.reconfigure(&probe_with(
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
    project.reconfigure(&probe_with(
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
    project.reconfigure(&probe_with(
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
    project.reconfigure(&probe_with(
        "[guardrail.config]\naction = \"flood\"\ncount = 1024\n",
    ));
    let run = project.hook(&bash("sess-flood", "ls"));
    assert_eq!(run.context(), "[probe] flooded");
    let stderr = run.stderr();
    // 64 KiB of 1 KiB lines are captured; each printed line costs 1,023 bytes plus
    // 64, so 60 fit the 64 KiB output budget.
    assert_eq!(stderr.matches("[probe] stdout: zzz").count(), 60);
    assert!(
        stderr
            .contains("[probe] limit reached: log_kib: 4 more lines and 983040 more bytes dropped"),
        "{stderr}"
    );
}

#[test]
fn a_keyspace_cannot_grow_past_its_byte_budget() {
    let project = Project::new();
    // The attack that once made one listing cost seconds and a gigabyte: 10,000
    // values of 64 KiB. The default budget (4 MiB) stops it at 63.
    project.reconfigure(&probe_with(
        "[guardrail.limits]\ntimeout_ms = 20000\n[guardrail.config]\naction = \"fill\"\ncount = 10000\nsize = 65536\n",
    ));
    let started = Instant::now();
    let run = project.hook(&bash("sess-fill", "ls"));
    assert!(
        run.stderr().contains("sandrail: [probe] limit reached: state_mib: a write was refused because the keyspace would exceed its 4 MiB in this session"),
        "{}",
        run.stderr()
    );
    let receipts =
        std::fs::read_to_string(project.state_dir().join("receipts.jsonl")).expect("receipts");
    assert!(
        receipts.contains("\"exceeded\":[\"state_mib\"]"),
        "{receipts}"
    );
    let context = run.context();
    assert_eq!(
        context,
        "[probe] refused: Some(\"at 63: state unavailable: the keyspace would exceed its budget of 4194304 bytes (keys plus values) in this session; delete entries or raise limits.state_mib\"); listed: 63"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // Stored usage counts on the next event: nothing more fits.
    let context = project.hook(&bash("sess-fill", "ls")).context();
    assert!(
        context.starts_with("[probe] refused: Some(\"at 63: "),
        "{context}"
    );
    // The file holds the budget with redb's page overhead, and no more: the second
    // event, refused at once, added nothing.
    let db = std::fs::metadata(project.session_db("sess-fill"))
        .expect("db")
        .len();
    assert!(db < 32 << 20, "the session's database is {db} bytes");
}

#[test]
fn the_keyspace_budget_is_configurable_and_listings_stay_within_it() {
    let project = Project::new();
    project.reconfigure(&format!(
        "{}[[guardrail]]\nname = \"reader\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nrequires = [\"filler\"]\n[guardrail.config]\naction = \"list-owner-size\"\nowner = \"filler\"\n",
        probe_config(&[(
            "filler",
            "[guardrail.limits]\nstate_mib = 1\n[guardrail.config]\naction = \"fill\"\ncount = 100\nsize = 65536\n",
        )])
    ));
    let run = project.hook(&bash("sess-budget", "ls"));
    let context = run.context();
    // 15 entries of 10 + 65,536 bytes fit in 1 MiB; the 16th does not.
    assert!(
        context.starts_with("[filler] refused: Some(\"at 15: state unavailable: the keyspace would exceed its budget of 1048576 bytes"),
        "{context}"
    );
    assert!(
        context.ends_with("[reader] entries: 15, bytes: 983190"),
        "{context}"
    );
    let bad = project.config(&probe_with("[guardrail.limits]\nstate_mib = 9\n[guardrail.config]\naction = \"note\"\nvalue = \"x\"\n"))
        .run(&["check-config"]);
    assert_eq!(bad.code(), Some(1));
    assert!(
        bad.stderr()
            .contains("limits.state_mib must be between 1 and 8"),
        "{}",
        bad.stderr()
    );
}

#[test]
fn empty_log_messages_count_against_the_budget() {
    let project = Project::new();
    project.reconfigure(&probe_with(
        "[guardrail.config]\naction = \"log-empty\"\ncount = 18000\n",
    ));
    let run = project.hook(&bash("sess-empty-log", "ls"));
    run.assert_silent();
    let stderr = run.stderr();
    // 64 bytes per line against 64 KiB: 1,024 lines, then one notice.
    assert_eq!(stderr.matches("sandrail: [probe] warn: \n").count(), 1024);
    assert!(
        stderr
            .contains("[probe] limit reached: log_kib: 16976 more lines and 0 more bytes dropped"),
        "{stderr}"
    );
}

#[test]
fn a_fuel_budget_stops_a_guardrail_by_name_whatever_the_machine_speed() {
    let project = Project::new();
    project.reconfigure(&probe_with(
        "on_error = \"deny\"\n[guardrail.limits]\ntimeout_ms = 20000\nfuel = 5000000\n[guardrail.config]\naction = \"spin\"\n",
    ));
    let started = Instant::now();
    let run = project.hook(&bash("sess-fuel", "ls"));
    let reason = run.deny_reason().expect("refused under on_error = deny");
    assert!(
        reason.contains("ran out of its fuel budget of 5000000 units"),
        "{reason}"
    );
    assert!(
        run.stderr()
            .contains("guardrail 'probe' could not judge: ran out of its fuel budget"),
        "{}",
        run.stderr()
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "fuel, not the deadline, stopped it"
    );

    // Enough fuel for its work: it judges.
    project.reconfigure(&probe_with(
        "[guardrail.limits]\nfuel = 50000000\n[guardrail.config]\naction = \"note\"\nvalue = \"ok\"\n",
    ));
    assert_eq!(
        project.hook(&bash("sess-fuel", "ls")).context(),
        "[probe] ok"
    );

    project.config(&probe_with("[guardrail.limits]\nfuel = 0\n"));
    let check = project.run(&["check-config"]);
    assert!(
        check.stderr().contains("limits.fuel must be at least 1"),
        "{}",
        check.stderr()
    );
}

#[test]
fn the_log_budget_is_configurable() {
    let project = Project::new();
    project.reconfigure(&probe_with(
        "[guardrail.limits]\nlog_kib = 4\n[guardrail.config]\naction = \"flood\"\ncount = 1024\n",
    ));
    let run = project.hook(&bash("sess-logkib", "ls"));
    assert_eq!(run.context(), "[probe] flooded");
    let stderr = run.stderr();
    // 4 KiB of stdout is kept; each printed 1,023-byte line costs 1,087 bytes, so 3 fit.
    assert_eq!(stderr.matches("[probe] stdout: zzz").count(), 3, "{stderr}");
    assert!(
        stderr.contains("[probe] limit reached: log_kib: ")
            && stderr.contains("may print 4 KiB per event"),
        "{stderr}"
    );
    project.config(&probe_with("[guardrail.limits]\nlog_kib = 2048\n"));
    let check = project.run(&["check-config"]);
    assert!(
        check
            .stderr()
            .contains("limits.log_kib must be between 1 and 1024"),
        "{}",
        check.stderr()
    );
}
