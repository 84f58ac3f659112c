//! An adversarial suite, through the real binary: guardrails that recurse without
//! bound, print 100 MB, answer a megabyte, reach for files and sockets or import
//! what the host does not provide; files that are not components; hooks killed
//! with SIGKILL in the middle of a parallel run; payloads whose session id and
//! transcript are built to escape or to hang. Each ends with a clear stderr line,
//! the decision the failure policy asks for, and the session's database intact: a
//! counter that judges beside the adversary goes on counting, event after event.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// Far more than any honest run takes on a loaded machine; a hang is far past it.
const PROMPTLY: Duration = Duration::from_secs(20);

/// The guardrail that proves the state survives: it counts the events it judged.
const COUNTER: (&str, &str) = ("counter", "[guardrail.config]\naction = \"count\"\n");

const POLICIES: [&str; 2] = ["allow", "deny"];

/// The counter, then a probe called `adversary`, under `on_error = policy`, set up by `body`.
fn counted(policy: &str, body: &str) -> String {
    probe_config(&[
        COUNTER,
        ("adversary", &format!("on_error = \"{policy}\"\n{body}")),
    ])
}

/// The counter, then a guardrail `name` whose component is the file `source`.
fn counted_source(name: &str, policy: &str, source: &str) -> String {
    format!(
        "{}[[guardrail]]\nname = \"{name}\"\nsource = \"{source}\"\nevents = [\"PreToolUse\"]\non_error = \"{policy}\"\n",
        probe_config(&[COUNTER])
    )
}

/// What the agent was shown besides a decision: the context of a tool event, the
/// system message of the others.
fn shown(run: &Run) -> String {
    if run.stdout().trim().is_empty() {
        return String::new();
    }
    let answer = run.answer();
    answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .or_else(|| answer["systemMessage"].as_str())
        .unwrap_or("")
        .to_owned()
}

/// The count the counter reported in `run`, if it ran.
fn counted_in(run: &Run) -> Option<u64> {
    shown(run).lines().find_map(|line| {
        line.strip_prefix("[counter] n=")
            .map(|n| n.parse().expect("the counter prints a number"))
    })
}

/// What one session's counter has committed, followed event by event.
struct Tally {
    session: String,
    committed: u64,
}

impl Tally {
    fn new(session: &str) -> Tally {
        Tally {
            session: session.to_owned(),
            committed: 0,
        }
    }

    /// Takes in one event: when the counter ran, it saw every event before.
    #[track_caller]
    fn saw(&mut self, run: &Run) {
        if let Some(n) = counted_in(run) {
            assert_eq!(
                n,
                self.committed + 1,
                "the counter lost or repeated an event; stderr: {}",
                run.stderr()
            );
            self.committed = n;
        }
    }

    /// Takes in one event the counter must have judged: it saw every event before.
    #[track_caller]
    fn counted(&mut self, run: &Run) {
        assert_eq!(
            counted_in(run),
            Some(self.committed + 1),
            "the counter did not judge; stderr: {}",
            run.stderr()
        );
        self.saw(run);
    }

    /// Asserts the database holds exactly what the events committed.
    #[track_caller]
    fn assert_intact(&self, project: &Project) {
        assert_eq!(
            project.state(&self.session, "counter"),
            [("n".to_owned(), self.committed.to_string())],
            "the counter's state"
        );
    }
}

/// Asserts `run` is an event at which guardrail `name` could not judge, with `cause`
/// on stderr, decided as `policy` asks: under "allow" it proceeds with a stderr line
/// naming the guardrail; under "deny" it is refused with a `[sandrail]` reason
/// naming it.
#[track_caller]
fn assert_policy(run: &Run, policy: &str, name: &str, cause: &str) {
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let stderr = run.stderr();
    assert!(stderr.contains(cause), "stderr lacks {cause:?}: {stderr}");
    if policy == "allow" {
        let (told, _) = run.told();
        assert!(told == "context" || told == "silent", "told {told}");
        assert!(
            stderr.contains(&format!(
                "sandrail: guardrail '{name}' failed and was skipped (the event proceeds): "
            )) || stderr.contains(&format!("sandrail: guardrail '{name}' not run: ")),
            "{stderr}"
        );
    } else {
        let reason = run.deny_reason().expect("refused under on_error = deny");
        assert!(
            reason.starts_with(&format!(
                "[sandrail] Refused because guardrail '{name}' could not judge this call ("
            )),
            "{reason}"
        );
        assert!(
            stderr.contains(&format!("sandrail: guardrail '{name}' could not judge: "))
                && stderr.contains("the event is refused (its on_error = \"deny\")"),
            "{stderr}"
        );
    }
}

// 1. Unbounded recursion.

#[test]
fn unbounded_recursion_is_a_trap_reported_by_name_and_on_error_decides() {
    let project = Project::new();
    let mut tally = Tally::new("sess-recurse");
    // The wasm call stack (wasmtime's own limit), then the shadow stack the
    // guest keeps in its linear memory (which overflows below address 0).
    for (key, cause) in [
        ("calls", "wasm trap: call stack exhausted"),
        ("frames", "wasm trap: out of bounds memory access"),
    ] {
        for policy in POLICIES {
            project.reconfigure(&counted(
                policy,
                &format!("[guardrail.config]\naction = \"recurse\"\nkey = \"{key}\"\n"),
            ));
            let run = project.hook_within(&bash(&tally.session, "ls"), PROMPTLY);
            assert_policy(&run, policy, "adversary", cause);
            assert!(
                run.stderr().contains("sandrail: guardrail 'adversary' ")
                    && run.stderr().contains("trapped: "),
                "{}",
                run.stderr()
            );
            if policy == "deny" {
                let reason = run.deny_reason().unwrap_or_default();
                let trap = cause.trim_start_matches("wasm trap: ");
                assert!(reason.contains(trap), "{reason}");
            }
            // However deep it went, what it costs stderr is bounded.
            assert!(
                run.stderr().len() < 64 << 10,
                "{} bytes of stderr",
                run.stderr().len()
            );
            // The counter judged before the adversary, and its count stands.
            assert!(counted_in(&run).is_some(), "{}", run.stderr());
            tally.saw(&run);
        }
    }
    assert_eq!(tally.committed, 4);
    tally.assert_intact(&project);
}

// 2. A hundred megabytes of output.

/// The `log_kib` notice's counts: (lines, bytes) dropped.
fn dropped(stderr: &str, name: &str) -> (usize, usize) {
    let prefix = format!("sandrail: [{name}] limit reached: log_kib: ");
    let notices: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .collect();
    assert_eq!(notices.len(), 1, "one notice: {stderr}");
    let words: Vec<&str> = notices[0].split(' ').collect();
    assert_eq!(
        (words[1], words[2], words[5], words[6]),
        ("more", "lines", "more", "bytes"),
        "{}",
        notices[0]
    );
    (
        words[0].parse().expect("lines"),
        words[4].parse().expect("bytes"),
    )
}

#[test]
fn a_hundred_megabytes_of_output_is_cut_to_the_log_budget_promptly() {
    const HUNDRED_MB: usize = 100 << 20;
    let project = Project::new();
    let mut tally = Tally::new("sess-blast");
    // stdout and stderr in writes of 1 MiB, logs in messages of 4 KiB (the most
    // one message may carry); each 1,024-byte chunk is a line.
    for (stream, size) in [("stdout", 1 << 20), ("stderr", 1 << 20), ("log", 4096)] {
        // on_error = "deny": had the flood cost the guardrail its verdict, the
        // event would be refused.
        project.reconfigure(&counted(
            "deny",
            &format!(
                "[guardrail.limits]\ntimeout_ms = 60000\n[guardrail.config]\naction = \"blast\"\nkey = \"{stream}\"\ncount = {HUNDRED_MB}\nsize = {size}\n"
            ),
        ));
        let started = Instant::now();
        let run = project.hook_within(&bash(&tally.session, "ls"), PROMPTLY);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(15), "{stream}: took {took:?}");
        assert_eq!(
            run.context(),
            format!("[counter] n={}\n[adversary] blasted", tally.committed + 1)
        );
        tally.saw(&run);
        let stderr = run.stderr();
        assert!(
            stderr.len() < 200 << 10,
            "{stream}: {} bytes of stderr",
            stderr.len()
        );
        let label = if stream == "log" { "warn" } else { stream };
        let printed = stderr
            .matches(&format!("sandrail: [adversary] {label}: bbbb"))
            .count();
        assert!(printed > 0, "{stderr}");
        let (lines, bytes) = dropped(&stderr, "adversary");
        if stream == "log" {
            // Every message reached the host and was counted: 25,600 messages of
            // four lines, printed or dropped.
            assert_eq!(printed + lines, HUNDRED_MB / 1024, "{stream}");
            assert_eq!(bytes, 0);
        } else {
            // The stream keeps the budget (64 KiB, 64 lines), and counts the rest.
            assert_eq!(printed + lines, 64, "{stream}");
            assert_eq!(bytes, HUNDRED_MB - (64 << 10), "{stream}");
        }
    }
    tally.assert_intact(&project);
}

#[test]
fn a_log_message_cut_to_four_kib_is_reported_as_cut() {
    let project = Project::new();
    project.reconfigure(&counted(
        "allow",
        "[guardrail.limits]\ntimeout_ms = 60000\n[guardrail.config]\naction = \"blast\"\nkey = \"log\"\ncount = 1048576\nsize = 1048576\n",
    ));
    let run = project.hook_within(&bash("sess-one-log", "ls"), PROMPTLY);
    assert_eq!(run.context(), "[counter] n=1\n[adversary] blasted");
    let stderr = run.stderr();
    // Four of the message's 1,024 lines are printed; the rest of its megabyte
    // must not vanish without a trace.
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("sandrail: [adversary] ") && l.contains("dropped")),
        "nothing says the message was cut: {:?}",
        stderr
            .lines()
            .filter(|l| !l.contains("bbbb"))
            .collect::<Vec<_>>()
    );
}

// 3. A megabyte of verdict.

#[test]
fn a_megabyte_verdict_is_malformed_and_the_answer_stays_small() {
    let project = Project::new();
    let mut tally = Tally::new("sess-verdict");
    let long_rule = "r".repeat(100_000);
    for (body, cause) in [
        (
            "[guardrail.config]\naction = \"huge\"\ncount = 1048576\n".to_owned(),
            "malformed verdict: the deny reason is 1048576 characters; the limit is 10000",
        ),
        (
            format!(
                "[guardrail.config]\naction = \"violation\"\nkey = \"{long_rule}\"\nvalue = \"x\"\n"
            ),
            "malformed verdict: the violation's rule name must be 1 to 128 bytes without spaces",
        ),
    ] {
        for policy in POLICIES {
            project.reconfigure(&counted(policy, &body));
            let run = project.hook_within(&bash(&tally.session, "ls"), PROMPTLY);
            assert_policy(&run, policy, "adversary", cause);
            if policy == "deny" {
                let reason = run.deny_reason().unwrap_or_default();
                assert!(reason.contains(cause), "{reason}");
            }
            assert!(
                run.stdout().len() < 2048,
                "an answer of {} bytes",
                run.stdout().len()
            );
            assert!(
                run.stderr().len() < 2048,
                "{} bytes of stderr",
                run.stderr().len()
            );
            assert!(counted_in(&run).is_some(), "{}", run.stderr());
            tally.saw(&run);
        }
    }
    // Just under the limit, but one line per character: the prefix every line
    // gets would make it three times longer. The answer is still capped.
    project.reconfigure(&counted(
        "deny",
        &format!(
            "[guardrail.config]\naction = \"deny\"\nvalue = \"{}\"\n",
            "a\\n".repeat(4999)
        ),
    ));
    let run = project.hook_within(&bash(&tally.session, "ls"), PROMPTLY);
    let reason = run.deny_reason().expect("the deny stands");
    assert!(
        reason.starts_with("[adversary] a\n[adversary] a\n"),
        "{reason}"
    );
    assert!(
        reason.chars().count() <= 10_000,
        "{} characters",
        reason.chars().count()
    );
    assert!(run.stdout().len() < 16 << 10, "{}", run.stdout().len());
    tally.saw(&run);
    assert_eq!(tally.committed, 5);
    tally.assert_intact(&project);
}

// 4. Files and sockets.

#[test]
fn a_guardrail_reads_no_file_and_reaches_no_socket() {
    use std::net::{TcpListener, UdpSocket};
    let project = Project::new();
    let tcp = TcpListener::bind("127.0.0.1:0").expect("tcp listener");
    tcp.set_nonblocking(true).expect("nonblocking");
    let udp = UdpSocket::bind("127.0.0.1:0").expect("udp socket");
    udp.set_nonblocking(true).expect("nonblocking");
    let tcp_port = tcp.local_addr().expect("addr").port();
    let udp_port = udp.local_addr().expect("addr").port();
    let secret = project.root.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET").expect("write secret");
    let config_path = project.dir().join("sandrail.toml");
    let tries: Vec<(&str, String)> = vec![
        (
            "read-config",
            format!(
                "action = \"read-file\"\nvalue = \"{}\"",
                config_path.display()
            ),
        ),
        (
            "read-relative",
            "action = \"read-file\"\nvalue = \"sandrail.toml\"".to_owned(),
        ),
        (
            "read-secret",
            format!("action = \"read-file\"\nvalue = \"{}\"", secret.display()),
        ),
        (
            "read-passwd",
            "action = \"read-file\"\nvalue = \"/etc/passwd\"".to_owned(),
        ),
        (
            "connect-ip",
            format!("action = \"connect\"\nvalue = \"127.0.0.1:{tcp_port}\""),
        ),
        (
            "connect-name",
            format!("action = \"connect\"\nvalue = \"localhost:{tcp_port}\""),
        ),
        (
            "udp",
            format!("action = \"udp-send\"\nvalue = \"127.0.0.1:{udp_port}\""),
        ),
    ];
    let bodies: Vec<(&str, String)> = tries
        .iter()
        .map(|(name, body)| (*name, format!("[guardrail.config]\n{body}\n")))
        .collect();
    let mut guardrails = vec![COUNTER];
    guardrails.extend(bodies.iter().map(|(n, b)| (*n, b.as_str())));
    project.reconfigure(&probe_config(&guardrails));
    let mut tally = Tally::new("sess-reach");
    for _ in 0..2 {
        let run = project.hook_within(&bash(&tally.session, "ls"), PROMPTLY);
        let context = run.context();
        let said = |name: &str| -> String {
            context
                .lines()
                .find_map(|l| l.strip_prefix(&format!("[{name}] ")))
                .unwrap_or_else(|| panic!("{name} said nothing: {context}"))
                .to_owned()
        };
        for name in ["read-config", "read-relative", "read-secret", "read-passwd"] {
            // No preopened directory: no path names a file it can reach.
            let note = said(name);
            assert!(note.starts_with("read error: "), "{name}: {note}");
        }
        assert!(!context.contains("TOP-SECRET"), "{context}");
        // Refused by the sandbox, not by the listener (which would have been a
        // real connection attempt).
        let note = said("connect-ip");
        assert!(
            note.starts_with("connect error: ") && note.contains("Permission denied"),
            "{note}"
        );
        let note = said("connect-name");
        assert!(note.starts_with("connect error: "), "{note}");
        let note = said("udp");
        assert!(note.starts_with("udp error: "), "{note}");
        tally.saw(&run);
    }
    assert_eq!(
        tcp.accept().map(|(_, peer)| peer).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the listener received a connection"
    );
    let mut buf = [0u8; 64];
    assert_eq!(
        udp.recv_from(&mut buf)
            .map(|(_, peer)| peer)
            .map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the socket received a datagram"
    );
    assert_eq!(tally.committed, 2);
    tally.assert_intact(&project);
}

// 5. An import the host does not provide.

/// A minimal component that imports the instance `evil:net/exfil@1.0.0`, whose one
/// function is `send: func()`, and exports nothing.
fn component_importing_exfil() -> Vec<u8> {
    let name = b"evil:net/exfil@1.0.0";
    // An instance type: one type (func()), one export (`send`, of that type).
    let mut instance = vec![0x42, 0x02, 0x01, 0x40, 0x00, 0x01, 0x00];
    instance.extend([0x04, 0x00, 0x04]);
    instance.extend(b"send");
    instance.extend([0x01, 0x00]);
    let mut types = vec![0x01];
    types.extend(instance);
    let mut imports = vec![0x01, 0x00, name.len() as u8];
    imports.extend(name);
    imports.extend([0x05, 0x00]);
    let mut bytes = b"\0asm\x0d\x00\x01\x00".to_vec();
    bytes.extend([0x07, types.len() as u8]);
    bytes.extend(types);
    bytes.extend([0x0a, imports.len() as u8]);
    bytes.extend(imports);
    bytes
}

#[test]
fn a_component_importing_what_the_host_lacks_does_not_load_and_names_the_import() {
    let project = Project::new();
    std::fs::write(project.dir().join("evil.wasm"), component_importing_exfil()).expect("write");
    let mut tally = Tally::new("sess-evil");
    for policy in POLICIES {
        project.reconfigure(&counted_source("evil", policy, "evil.wasm"));
        let run = project.hook_within(&bash(&tally.session, "ls"), PROMPTLY);
        assert_policy(
            &run,
            policy,
            "evil",
            "component imports instance `evil:net/exfil@1.0.0`",
        );
        if policy == "deny" {
            let reason = run.deny_reason().unwrap_or_default();
            assert!(reason.contains("evil:net/exfil"), "{reason}");
        } else {
            // The others still judge.
            assert_eq!(
                counted_in(&run),
                Some(tally.committed + 1),
                "{}",
                run.stderr()
            );
        }
        tally.saw(&run);
    }
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1), "{}", check.stderr());
    assert!(
        check.stdout().contains("error  evil: ") && check.stdout().contains("evil:net/exfil"),
        "{}",
        check.stdout()
    );
    assert!(tally.committed >= 1);
    tally.assert_intact(&project);
}

// 6. Files that are not components.

/// 4 KiB that a fixed xorshift makes look random, never starting with `\0asm`.
fn random_bytes() -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut bytes: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    bytes[0] = 0xa5;
    bytes
}

/// (file name, bytes, what stderr says about it).
fn not_components() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    vec![
        (
            "core",
            b"\0asm\x01\x00\x00\x00".to_vec(),
            "not a valid component: failed to parse WebAssembly module: attempted to parse a wasm module with a component parser",
        ),
        (
            // A core module with one (empty-named, empty) custom section.
            "core-custom",
            b"\0asm\x01\x00\x00\x00\x00\x01\x00".to_vec(),
            "attempted to parse a wasm module with a component parser",
        ),
        (
            "random",
            random_bytes(),
            "not a valid component: cannot read its imports and exports: magic header not detected",
        ),
        (
            "empty",
            Vec::new(),
            "not a valid component: cannot read its imports and exports: unexpected end-of-file",
        ),
        (
            // A valid component with nothing in it.
            "hollow",
            b"\0asm\x0d\x00\x01\x00".to_vec(),
            "does not fit the sandrail:guardrail world: no export `evaluate` found",
        ),
        (
            // A section that claims more bytes than the file has.
            "truncated",
            b"\0asm\x0d\x00\x01\x00\x07\x7f\x01".to_vec(),
            "not a valid component: cannot read its imports and exports: unexpected end-of-file",
        ),
    ]
}

#[test]
fn files_that_are_not_components_cost_only_their_guardrail_under_either_policy() {
    let project = Project::new();
    let mut tally = Tally::new("sess-junk");
    for (name, bytes, _) in not_components() {
        std::fs::write(project.dir().join(format!("{name}.wasm")), bytes).expect("write");
    }
    // All of them in one config, under "allow": each is named, the counter judges.
    let mut config = probe_config(&[COUNTER]);
    for (name, _, _) in not_components() {
        config.push_str(&format!(
            "[[guardrail]]\nname = \"{name}\"\nsource = \"{name}.wasm\"\nevents = [\"PreToolUse\"]\n"
        ));
    }
    project.reconfigure(&config);
    let run = project.hook_within(&bash(&tally.session, "ls"), PROMPTLY);
    for (name, _, cause) in not_components() {
        let line = run
            .stderr()
            .lines()
            .find(|l| l.starts_with(&format!("sandrail: guardrail '{name}' not run: ")))
            .map(str::to_owned);
        assert!(
            line.as_deref().is_some_and(|l| l.contains(cause)),
            "{name}: {line:?} lacks {cause:?}; stderr: {}",
            run.stderr()
        );
    }
    assert_eq!(run.context(), "[counter] n=1");
    tally.saw(&run);
    // Each on its own under "deny": the event is refused, naming it.
    for (name, _, cause) in not_components() {
        project.reconfigure(&counted_source(name, "deny", &format!("{name}.wasm")));
        let run = project.hook_within(&bash(&tally.session, "ls"), PROMPTLY);
        assert_policy(&run, "deny", name, cause);
        tally.saw(&run);
    }
    // And under "allow" again: the counter still sees every event it judged.
    project.reconfigure(&counted_source("core", "allow", "core.wasm"));
    let run = project.hook_within(&bash(&tally.session, "ls"), PROMPTLY);
    assert_policy(&run, "allow", "core", "attempted to parse a wasm module");
    tally.counted(&run);
    tally.assert_intact(&project);
    // check-config names each one.
    project.reconfigure(&config);
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1));
    for (name, _, _) in not_components() {
        assert!(
            check.stdout().contains(&format!("error  {name}: ")),
            "{name}: {}",
            check.stdout()
        );
    }
}

#[test]
fn the_agent_is_told_the_cause_not_a_fragment_of_a_dump() {
    let project = Project::new();
    std::fs::write(project.dir().join("random.wasm"), random_bytes()).expect("write");
    project.reconfigure(&counted_source("random", "deny", "random.wasm"));
    let run = project.hook_within(&bash("sess-brief", "ls"), PROMPTLY);
    let reason = run.deny_reason().expect("refused");
    assert!(
        reason.contains("not a valid component") && reason.contains("magic header not detected"),
        "{reason}"
    );
    project.reconfigure(&counted(
        "deny",
        "[guardrail.config]\naction = \"recurse\"\nkey = \"frames\"\n",
    ));
    let run = project.hook_within(&bash("sess-brief", "ls"), PROMPTLY);
    let reason = run.deny_reason().expect("refused");
    assert!(reason.contains("out of bounds memory access"), "{reason}");
    assert!(
        !reason.contains("wasm function") && !reason.contains("0x"),
        "a backtrace frame in the reason: {reason}"
    );
}

// 7. SIGKILL in the middle of a parallel run.

/// The pids holding an flock on the file with inode `inode` (from /proc/locks).
#[cfg(target_os = "linux")]
fn flock_holders(inode: u64) -> Vec<u32> {
    let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    locks
        .lines()
        .filter(|l| !l.contains("->"))
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
            let (kind, pid, file) = (fields.get(1)?, fields.get(4)?, fields.get(5)?);
            let file_inode: u64 = file.rsplit(':').next()?.parse().ok()?;
            (*kind == "FLOCK" && file_inode == inode).then(|| pid.parse().ok())?
        })
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn hooks_killed_mid_run_leave_a_sound_database_and_a_consistent_count() {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Child, Stdio};

    const STARTED: usize = 200;
    let project = Project::alone();
    // A lock timeout long enough that every hook not killed gets its turn, even
    // on a loaded machine: then each of them must have counted.
    project.reconfigure(&format!(
        "[settings]\nlock_timeout_ms = 20000\n{}",
        probe_config(&[COUNTER])
    ));
    let session = "sess-kill9";
    let payload = bash(session, "ls");
    // The session's lock file exists once one event has run; that event counts too.
    assert_eq!(project.hook(&payload).context(), "[counter] n=1");
    let lock = project.session_db(session).with_extension("lock");
    let lock_inode = std::fs::metadata(&lock).expect("the session's lock").ino();

    let mut children: Vec<Child> = (0..STARTED)
        .map(|_| {
            project
                .cmd()
                .arg("hook")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn sandrail")
        })
        .collect();
    for child in &mut children {
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(&payload).expect("write payload");
    }
    // Every 7th, one every 10 ms, wherever it is; and between them, whichever of
    // ours holds the session at that moment: killed in the middle of its event.
    let pids: Vec<u32> = children.iter().map(Child::id).collect();
    let started = Instant::now();
    let mut holder_kills = 0;
    for i in (3..STARTED).step_by(7) {
        let _ = children[i].kill();
        let pause = Instant::now();
        while pause.elapsed() < Duration::from_millis(10) {
            if holder_kills < 10
                && let Some(at) = flock_holders(lock_inode)
                    .iter()
                    .find_map(|pid| pids.iter().position(|p| p == pid))
            {
                let _ = children[at].kill();
                holder_kills += 1;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let runs: Vec<Run> = children
        .into_iter()
        .map(|child| Run(child.wait_with_output().expect("wait")))
        .collect();
    let took = started.elapsed();

    let killed = runs
        .iter()
        .filter(|r| r.0.status.signal() == Some(9))
        .count();
    let mut seen: Vec<u64> = Vec::new();
    for run in &runs {
        if run.0.status.signal() == Some(9) {
            continue;
        }
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
        assert!(
            !run.stderr().contains("unusable") && !run.stderr().contains("could not be saved"),
            "{}",
            run.stderr()
        );
        // Every hook that was not killed judged, and counted.
        let n = counted_in(run).unwrap_or_else(|| panic!("not counted: {}", run.stderr()));
        seen.push(n);
    }
    assert!(killed >= 10, "only {killed} hooks were killed");
    assert!(
        holder_kills >= 1,
        "no hook was killed while it held the session"
    );

    // Whatever was killed, nothing committed was lost and nothing was counted twice.
    let state = project.state(session, "counter");
    assert_eq!(state.len(), 1, "{state:?}");
    let count: u64 = state[0].1.parse().expect("a count");
    let mut distinct = seen.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), seen.len(), "a count seen twice: {seen:?}");
    // Completed <= count <= started, the first event counted on both sides; the
    // difference is what killed hooks committed before they died.
    assert_eq!(seen.len() + killed, STARTED);
    let (completed, started) = (seen.len() as u64 + 1, STARTED as u64 + 1);
    assert!(
        completed <= count && count <= started,
        "count {count}, {completed} completed, {killed} killed"
    );
    assert!(seen.iter().all(|&n| n <= count), "{seen:?} past {count}");
    // Nothing was moved aside as corrupt.
    let aside: Vec<PathBuf> = std::fs::read_dir(project.state_dir().join("sessions"))
        .expect("sessions dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().contains(".corrupt-"))
        .collect();
    assert!(aside.is_empty(), "{aside:?}");
    // The database opens, and the next event counts exactly one more.
    let run = project.hook_within(&payload, PROMPTLY);
    assert_eq!(run.context(), format!("[counter] n={}", count + 1));
    assert_eq!(
        project.state(session, "counter"),
        [("n".to_owned(), (count + 1).to_string())]
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

// 8. Hostile payloads.

/// Every path under `dir`, but for `except`.
fn tree(dir: &Path, except: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut queue = vec![dir.to_path_buf()];
    while let Some(at) = queue.pop() {
        for entry in std::fs::read_dir(&at).expect("read dir").flatten() {
            let path = entry.path();
            if path == except {
                continue;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push(path.clone());
            }
            found.push(path);
        }
    }
    found.sort();
    found
}

#[test]
fn a_session_id_built_to_escape_stays_in_the_state_directory() {
    let project = Project::new();
    project.reconfigure(&probe_config(&[COUNTER]));
    let session = format!("../../etc/{}", "a/..".repeat(500));
    assert!(session.len() > 2000);
    let outside_before = tree(project.root.path(), &project.state_dir());
    let mut tally = Tally::new(&session);
    for payload in [
        bash(&session, "ls"),
        payload("SessionStart", &session, json!({"source": "startup"})),
        bash(&session, "ls"),
        payload("Stop", &session, json!({"stop_hook_active": false})),
    ] {
        let run = project.hook_within(&payload, PROMPTLY);
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
        tally.counted(&run);
    }
    tally.assert_intact(&project);
    // Nothing was written outside the state directory…
    assert_eq!(
        tree(project.root.path(), &project.state_dir()),
        outside_before
    );
    // …and inside it, only names sandrail made: none from the session id.
    for path in tree(&project.state_dir(), Path::new("")) {
        let name = path.file_name().expect("a name").to_string_lossy();
        assert!(
            name.len() <= 64 && !name.contains(".."),
            "{}",
            path.display()
        );
    }
    assert!(project.session_db(&session).is_file());
    // A different session (the id without its last character) sees none of it.
    let other = &session[..session.len() - 1];
    let run = project.hook_within(&bash(other, "ls"), PROMPTLY);
    assert_eq!(run.context(), "[counter] n=1");
}

/// A force push whose payload names `transcript` (any JSON string) as its transcript.
fn force_push_in(session: &str, transcript: &str) -> Vec<u8> {
    let mut payload: Value =
        serde_json::from_slice(&bash(session, "git push --force origin main")).expect("json");
    payload["transcript_path"] = json!(transcript);
    serde_json::to_vec(&payload).expect("payload serializes")
}

#[cfg(target_os = "linux")]
#[test]
fn transcripts_built_to_hang_or_to_fill_memory_cost_only_the_turn() {
    let project = Project::new();
    project.reconfigure(&format!(
        "{}[[guardrail]]\nname = \"no-destructive-git\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\n",
        probe_config(&[COUNTER])
    ));
    let root = project.root.path();
    let fifo = root.join("transcript.fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let link = root.join("transcript.jsonl");
    std::os::unix::fs::symlink(&fifo, &link).expect("symlink");
    let socket_path = root.join("transcript.sock");
    let _socket = std::os::unix::net::UnixListener::bind(&socket_path).expect("unix socket");
    // Each its own session: a session reads the transcript its first event named.
    for (i, (path, why)) in [
        // A symlink with a transcript's name, to a FIFO nobody writes.
        (
            link.display().to_string(),
            "is a FIFO, not a regular file".to_owned(),
        ),
        // A socket cannot be opened as a file at all.
        (
            socket_path.display().to_string(),
            format!("cannot open {}", socket_path.display()),
        ),
        // A regular file of size 0 that reads on forever: read up to the cap.
        (
            "/proc/self/pagemap".to_owned(),
            "holds no real user message".to_owned(),
        ),
        // A path no file can have.
        (
            "/tmp/a\u{0}b.jsonl".to_owned(),
            "file name contained an unexpected NUL byte".to_owned(),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut tally = Tally::new(&format!("sess-transcripts-{i}"));
        let started = Instant::now();
        let run = project.hook_within(&force_push_in(&tally.session, &path), PROMPTLY);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{path}: took {:?}",
            started.elapsed()
        );
        let reason = run.deny_reason().unwrap_or_default();
        assert!(
            reason.starts_with("[no-destructive-git/force-push]"),
            "{path}: {reason}; stderr: {}",
            run.stderr()
        );
        assert!(
            run.stderr().contains("sandrail: turn unknown: ") && run.stderr().contains(&why),
            "{path}: {}",
            run.stderr()
        );
        tally.counted(&run);
        tally.assert_intact(&project);
    }
}

#[test]
fn payload_strings_reach_stderr_cleaned() {
    let project = Project::new();
    let forged = "\u{1b}[2K\nsandrail: guardrail 'destructive-commands' passed\u{0}";
    let mut payloads = vec![force_push_in("sess-forge", &format!("/x{forged}"))];
    let mut unknown: Value = serde_json::from_slice(&bash("sess-forge", "ls")).expect("json");
    unknown["hook_event_name"] = json!(format!("Bad{forged}"));
    payloads.push(serde_json::to_vec(&unknown).expect("payload serializes"));
    for payload in payloads {
        let run = project.hook_within(&payload, PROMPTLY);
        let stderr = run.stderr();
        assert!(!stderr.is_empty());
        for line in stderr.lines() {
            assert!(
                !line.starts_with("sandrail: guardrail 'destructive-commands' passed"),
                "a forged line: {stderr:?}"
            );
            assert!(
                !line.contains('\u{1b}') && !line.contains('\u{0}'),
                "a control character: {line:?}"
            );
        }
    }
}
