//! Claude Code runs matching hooks in parallel: many `sandrail hook` processes on one
//! session must serialise on the state without losing a write.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::*;

/// Starts `n` hook processes at once on `payload` and collects their outputs.
fn hooks_at_once(project: &Project, n: usize, payload: &[u8]) -> Vec<Run> {
    let payloads: Vec<&[u8]> = (0..n).map(|_| payload).collect();
    hooks_at_once_on(project, &payloads)
}

/// Starts one hook process per payload, all at once, and collects their outputs.
pub fn hooks_at_once_on(project: &Project, payloads: &[&[u8]]) -> Vec<Run> {
    let children: Vec<_> = payloads
        .iter()
        .map(|_| {
            let mut cmd: Command = project.cmd();
            cmd.arg("hook")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn sandrail")
        })
        .collect();
    children
        .into_iter()
        .zip(payloads)
        .map(|(mut child, payload)| {
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(payload).expect("write payload");
            drop(stdin);
            Run(child.wait_with_output().expect("wait"))
        })
        .collect()
}

#[test]
fn two_hundred_parallel_hooks_on_one_session_keep_an_exact_budget() {
    let project = Project::alone();
    // Default settings: the lock timeout is not raised for this.
    project.config(
        "[[guardrail]]\nname = \"budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\nmatcher = \"Write\"\n[guardrail.config]\nlimit = 60\n",
    );
    let runs = hooks_at_once(&project, 200, &write("sess-200", "/home/dev/project/a.rs"));
    let mut allowed = 0;
    let mut refused = 0;
    for run in &runs {
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
        assert!(!run.stderr().contains("lock timeout"), "{}", run.stderr());
        if run.stdout().is_empty() {
            allowed += 1;
        } else {
            let reason = run.deny_reason().expect("a refusal");
            assert!(reason.starts_with("[budget/edit-limit]"), "{reason}");
            refused += 1;
        }
    }
    assert_eq!((allowed, refused), (60, 140));
    assert_eq!(
        project.state("sess-200", "budget"),
        [("edits".to_owned(), "60".to_owned())]
    );
}

#[test]
fn two_hundred_parallel_hooks_over_twenty_sessions_never_wait_out_the_lock() {
    let project = Project::alone();
    project.config(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"count\"\n",
    )]));
    let payloads: Vec<Vec<u8>> = (0..200)
        .map(|i| bash(&format!("sess-spread-{}", i % 20), "ls"))
        .collect();
    let borrowed: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
    let runs = hooks_at_once_on(&project, &borrowed);
    for run in &runs {
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
        assert!(!run.stderr().contains("lock timeout"), "{}", run.stderr());
        assert!(run.context().starts_with("[probe] n="), "{}", run.stderr());
    }
    for session in 0..20 {
        assert_eq!(
            project.state(&format!("sess-spread-{session}"), "probe"),
            [("n".to_owned(), "10".to_owned())]
        );
    }
}

#[test]
fn parallel_counters_count_every_event() {
    let project = Project::alone();
    project.config(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"count\"\n",
    )]));
    let runs = hooks_at_once(&project, 50, &bash("sess-count", "ls"));
    let mut seen: Vec<u64> = runs
        .iter()
        .map(|run| {
            let context = run.context();
            context
                .trim_start_matches("[probe] n=")
                .parse()
                .expect("a count")
        })
        .collect();
    seen.sort_unstable();
    // Each process saw a distinct count: 1 through 50, none lost or repeated.
    assert_eq!(seen, (1..=50).collect::<Vec<u64>>());
    assert_eq!(
        project.state("sess-count", "probe"),
        [("n".to_owned(), "50".to_owned())]
    );
}

#[test]
fn a_held_lock_times_out_and_the_event_is_still_judged() {
    let project = Project::new();
    // The holder spins with the state transaction open, for up to 3 s.
    let holder_dir = project.another();
    let holder_config = probe_config(&[(
        "probe",
        "[limits]\ntimeout_ms = 3000\n[guardrail.config]\naction = \"spin\"\n",
    )])
    .replace("[limits]", "[guardrail.limits]");
    holder_dir.config(&holder_config);
    let mut holder = holder_dir.cmd();
    holder
        .env("SANDRAIL_STATE_DIR", project.state_dir())
        .arg("hook")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut holder = holder.spawn().expect("spawn holder");
    let mut stdin = holder.stdin.take().expect("stdin");
    stdin.write_all(&bash("sess-lock", "ls")).expect("payload");
    drop(stdin);
    std::thread::sleep(std::time::Duration::from_millis(500));

    project.config(&format!(
        "[settings]\nlock_timeout_ms = 200\n\
         [[guardrail]]\nname = \"no-destructive-git\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\n\
         [[guardrail]]\nname = \"counter\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\naction = \"count\"\n"
    ));
    let run = project.hook(&bash("sess-lock", "git push --force"));
    // The stateless guardrail still refuses; the stateful one is skipped, in one line.
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.starts_with("[no-destructive-git/force-push]"))
    );
    let stderr = run.stderr();
    let lock_lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("lock timeout"))
        .collect();
    assert_eq!(
        lock_lines,
        [
            "sandrail: another sandrail process held this session's state for longer than the lock timeout (200ms); skipping the guardrails that keep state (counter) for this event"
        ]
    );
    assert!(!stderr.contains("failed"), "{stderr}");
    project.hook(&bash("sess-lock", "ls")).assert_silent();
    let _ = holder.wait_with_output();
}
