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
    at_once(payloads, || {
        let mut cmd = project.cmd();
        cmd.arg("hook");
        cmd
    })
}

/// Starts one process `command` makes per payload, all at once, each given its
/// payload on stdin, and collects their outputs.
pub fn at_once(payloads: &[&[u8]], command: impl Fn() -> Command) -> Vec<Run> {
    let children: Vec<_> = payloads
        .iter()
        .map(|_| {
            let mut cmd = command();
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn sandrail")
        })
        .collect();
    // Every payload is handed over before any output is waited for: each
    // process is running, blocked on its stdin, and all of them go at once.
    let mut children = children;
    for (child, payload) in children.iter_mut().zip(payloads) {
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(payload).expect("write payload");
    }
    children
        .into_iter()
        .map(|child| Run(child.wait_with_output().expect("wait")))
        .collect()
}

/// A Write budget of 60, under the default settings (the lock timeout is not
/// raised for the tests that use it).
pub const BUDGET_OF_SIXTY: &str = "[[guardrail]]\nname = \"budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\nmatcher = \"Write\"\n[guardrail.config]\nlimit = 60\n";

#[test]
fn two_hundred_parallel_hooks_on_one_session_keep_an_exact_budget() {
    let project = Project::alone();
    project.config(BUDGET_OF_SIXTY);
    let runs = hooks_at_once(&project, 200, &write("sess-200", "/home/dev/project/a.rs"));
    assert_sixty_allowed(&project, "sess-200", &runs);
}

/// The same with four CPU-bound processes per core beside the hooks: every
/// core is busy, the session's events queue for far longer than the lock
/// timeout in all, and still none is judged without the session's state.
#[test]
fn two_hundred_parallel_hooks_on_a_busy_machine_keep_an_exact_budget() {
    let project = Project::alone();
    project.config(BUDGET_OF_SIXTY);
    let _busy = BusyMachine::per_core(4);
    let runs = hooks_at_once(&project, 200, &write("sess-busy", "/home/dev/project/a.rs"));
    assert_sixty_allowed(&project, "sess-busy", &runs);
}

/// Of 200 Writes under [`BUDGET_OF_SIXTY`], exactly 60 allowed and 140 refused
/// by the budget, none judged without the session's state, and 60 stored.
pub fn assert_sixty_allowed(project: &Project, session: &str, runs: &[Run]) {
    let mut allowed = 0;
    let mut refused = 0;
    for run in runs {
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
        project.state(session, "budget"),
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
    // A Read spins with the state transaction open, for up to 3 s: sandrail at
    // work, holding the session.
    project.config(&format!(
        "[settings]\nlock_timeout_ms = 200\n\
         [[guardrail]]\nname = \"no-destructive-git\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\n\
         [[guardrail]]\nname = \"counter\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash\"\n[guardrail.config]\naction = \"count\"\n\
         [[guardrail]]\nname = \"spinner\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Read\"\n[guardrail.config]\naction = \"spin\"\n[guardrail.limits]\ntimeout_ms = 3000\n"
    ));
    let read = payload(
        "PreToolUse",
        "sess-lock",
        serde_json::json!({"tool_name": "Read", "tool_input": {"file_path": "/home/dev/project/a.rs"}}),
    );
    let mut holder = project.cmd();
    holder
        .arg("hook")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut holder = holder.spawn().expect("spawn holder");
    let mut stdin = holder.stdin.take().expect("stdin");
    stdin.write_all(&read).expect("payload");
    drop(stdin);
    std::thread::sleep(std::time::Duration::from_millis(500));

    let run = project.hook(&bash("sess-lock", "git push --force"));
    // The stateless guardrail refuses first; the stateful one would judge without
    // its state, and the lock timeout is one line.
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.starts_with("[no-destructive-git/force-push]")),
        "{}",
        run.stderr()
    );
    let stderr = run.stderr();
    let lock_lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("lock timeout"))
        .collect();
    assert_eq!(
        lock_lines,
        [
            "sandrail: this session's state stayed busy for longer than the lock timeout (200ms): other events of this session, judged one at a time (contention, not tampering); the guardrails that keep state (counter) judge without it for this event: violations answer at their rule's default level, and one that cannot judge without its state follows its on_error"
        ]
    );
    assert!(!stderr.contains("failed"), "{stderr}");
    let _ = holder.wait_with_output();
    // The next event that holds the state tells the person, once, how many
    // were judged without it.
    let next = project.hook(&bash("sess-lock", "ls"));
    let told = "sandrail: 1 event(s) of this session were judged without its state, because it stayed busy past the lock timeout";
    assert!(
        next.answer()["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains(told)),
        "{}",
        next.stdout()
    );
    let after = project.hook(&bash("sess-lock", "ls"));
    assert!(
        !after.stdout().contains("judged without"),
        "{}",
        after.stdout()
    );
}

/// A session's lock held by something that is not sandrail at work — `flock` in
/// the agent's shell — keeps nothing from being judged: the guardrails judge as
/// at a lock timeout, one that cannot judge without its state fails under its
/// `on_error`, and stderr and the person name the holder.
#[test]
fn a_lock_held_by_another_program_is_tampering_and_fails_closed_under_deny() {
    let project = Project::new();
    project.config(&format!(
        "[[guardrail]]\nname = \"counter\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\non_error = \"deny\"\n[guardrail.config]\naction = \"count\"\n"
    ));
    assert_eq!(
        project.hook(&bash("sess-held", "ls")).context(),
        "[counter] n=1"
    );
    let mut flock = project.hold_session_lock("sess-held");
    let started = std::time::Instant::now();
    let run = project.hook(&bash("sess-held", "ls"));
    let waited = started.elapsed();
    let _ = flock.kill();
    let _ = flock.wait();
    let reason = run.deny_reason().expect("refused under on_error = deny");
    assert!(
        reason.starts_with(
            "[sandrail] Refused because guardrail 'counter' could not judge this call ("
        ) && reason.contains("state unavailable"),
        "{reason}"
    );
    let stderr = run.stderr();
    assert!(
        stderr.contains("this session's lock is held by pid ")
            && stderr.contains("`flock ")
            && stderr.contains("not a sandrail process"),
        "{stderr}"
    );
    // Plainly not sandrail at work: no wait for the lock timeout.
    assert!(
        waited < std::time::Duration::from_millis(1500),
        "{waited:?}"
    );
    // The person hears of it too, and the receipt records it.
    let told = run.answer()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(told.contains("not a sandrail process"), "{told}");
    let last = project.last_receipt();
    assert!(
        last["alerts"][0]
            .as_str()
            .is_some_and(|a| a.contains("held by pid")),
        "{last}"
    );
    // Once let go, the session counts on.
    assert_eq!(
        project.hook(&bash("sess-held", "ls")).context(),
        "[counter] n=2"
    );
}

/// A process that takes the session's lock and then becomes `sandrail hook`
/// (waiting on a stdin that never ends) is not sandrail at work: sandrail names
/// itself in the lock file when it takes the lock, and this one never did.
#[test]
fn a_lock_taken_before_becoming_sandrail_is_tampering() {
    let project = Project::new();
    project.config(&format!(
        "[settings]\nlock_timeout_ms = 500\n[[guardrail]]\nname = \"counter\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\non_error = \"deny\"\n[guardrail.config]\naction = \"count\"\n"
    ));
    assert_eq!(
        project.hook(&bash("sess-exec", "ls")).context(),
        "[counter] n=1"
    );
    let lock = project.session_db("sess-exec").with_extension("lock");
    // perl keeps the locked file open across exec ($^F), then runs sandrail
    // in its own place.
    let mut holder = project
        .with_env(Command::new("perl"))
        .args([
            "-e",
            "use Fcntl ':flock'; $^F = 255; open(my $f, '>>', $ARGV[0]) or die; flock($f, LOCK_EX) or die; exec($ARGV[1], 'hook') or die",
        ])
        .arg(&lock)
        .arg(BIN)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("perl");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let run = project.hook(&bash("sess-exec", "ls"));
    let _ = holder.kill();
    let _ = holder.wait();
    let reason = run.deny_reason().expect("refused under on_error = deny");
    assert!(
        reason.contains("could not judge this call (") && reason.contains("state unavailable"),
        "{reason}"
    );
    assert!(
        run.stderr().contains("this session's lock is held by pid"),
        "{}",
        run.stderr()
    );
}

/// A lock taken by a process that then exits, leaving it to a child that kept
/// the file open, is not a sandrail process on its way out: the holder the
/// kernel names is gone and the lock lives on. Tampering, told to the person.
#[test]
fn a_lock_left_to_the_child_of_an_exited_holder_is_tampering() {
    let project = Project::new();
    project.config(&format!(
        "[settings]\nlock_timeout_ms = 300\n[[guardrail]]\nname = \"counter\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\naction = \"count\"\n"
    ));
    project.hook(&bash("sess-orphan", "ls"));
    let lock = project.session_db("sess-orphan").with_extension("lock");
    // Read-only, so a state directory the sandbox denies writes to is no bar.
    let script = "import os, sys, fcntl, time\nf = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(f, fcntl.LOCK_EX)\nif os.fork() == 0:\n    os.setsid(); time.sleep(20); os._exit(0)\nos._exit(0)\n";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&lock)
        .status()
        .expect("python3");
    assert!(status.success());
    std::thread::sleep(std::time::Duration::from_millis(200));
    let run = project.hook(&bash("sess-orphan", "ls"));
    let told = run.answer()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // Let the child go.
    let _ = Command::new("pkill").args(["-f", "fcntl.flock"]).status();
    assert!(
        told.contains("this session's lock is held by"),
        "{told}\n{}",
        run.stderr()
    );
    assert!(!run.stderr().contains("contention"), "{}", run.stderr());
}
