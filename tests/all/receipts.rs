//! Receipts: every judged event leaves one hash-chained JSON line in the state
//! directory; `sandrail receipts` lists and verifies them; observe mode decides and
//! records but never refuses.

use serde_json::{Value, json};

use crate::concurrency::hooks_at_once_on;
use crate::support::*;

fn receipts_file(project: &Project) -> std::path::PathBuf {
    project.state_dir().join("receipts.jsonl")
}

fn receipts(project: &Project) -> Vec<Value> {
    std::fs::read_to_string(receipts_file(project))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

#[test]
fn each_judged_event_leaves_a_receipt_without_the_input() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    let secret = "git push --force origin main # token=hunter2";
    assert!(
        project
            .hook(&bash("sess-r1", secret))
            .deny_reason()
            .is_some()
    );
    project.hook(&bash("sess-r1", "ls -la")).assert_silent();
    project.hook(&bash("sess-r2", "ls -la")).assert_silent();

    let text = std::fs::read_to_string(receipts_file(&project)).expect("receipts");
    assert!(
        !text.contains("hunter2") && !text.contains("push --force"),
        "{text}"
    );
    let mode = std::fs::metadata(receipts_file(&project))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let all = receipts(&project);
    assert_eq!(all.len(), 3, "{text}");
    let denied = &all[0];
    assert_eq!(denied["seq"], 1);
    assert_eq!(denied["session"], "sess-r1");
    assert_eq!(denied["event"], "PreToolUse");
    assert_eq!(denied["tool"], "Bash");
    assert_eq!(denied["decision"], "deny");
    assert_eq!(denied["gate_mode"], "enforce");
    assert_eq!(denied["prev"].as_str().map(str::len), Some(64));
    let builtin = sandrail::builtins::get_with_sha256("destructive-commands")
        .expect("builtin")
        .1;
    let run = &denied["guardrails"][0];
    assert_eq!(run["name"], "destructive-commands");
    assert_eq!(run["sha256"], builtin);
    assert_eq!(run["verdict"], "violation");
    assert_eq!(run["rule"], "force-push");
    assert_eq!(run["refuses"], true);
    assert!(run["us"].as_u64().is_some_and(|us| us > 0), "{run}");
    assert_eq!(all[1]["decision"], "allow");
    assert_eq!(all[1]["guardrails"][0]["verdict"], "pass");
    // The same input hashes the same in another session; another input does not.
    assert_eq!(all[1]["input_sha256"], all[2]["input_sha256"]);
    assert_ne!(all[0]["input_sha256"], all[1]["input_sha256"]);
    assert_ne!(all[0]["id"], all[1]["id"]);

    let listed = project.run(&["receipts", "--session", "sess-r1"]);
    assert!(listed.ok(), "{}", listed.stderr());
    let out = listed.stdout();
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.contains("sess-r1  PreToolUse Bash  deny  destructive-commands:violation/force-push"),
        "{out}"
    );
    let json = project.run(&["receipts", "--json", "--session", "sess-r2"]);
    assert_eq!(json.stdout().lines().count(), 1);
    let future = project.run(&["receipts", "--since", "2999-01-01T00:00:00Z"]);
    assert!(
        future.stdout().contains("no receipt of the 3 in")
            && future
                .stdout()
                .contains("matches since 2999-01-01T00:00:00Z"),
        "{}",
        future.stdout()
    );
    let recent = project.run(&["receipts", "--since", "1h", "--json"]);
    assert_eq!(recent.stdout().lines().count(), 3, "{}", recent.stdout());
    let bad = project.run(&["receipts", "--since", "yesterday-ish"]);
    assert_eq!(bad.code(), Some(1));
    assert!(
        bad.stderr().contains("is neither a time"),
        "{}",
        bad.stderr()
    );
}

#[test]
fn verify_finds_an_edited_or_removed_receipt() {
    let project = Project::new();
    for i in 0..4 {
        project
            .hook(&bash("sess-chain", &format!("ls {i}")))
            .assert_silent();
    }
    let ok = project.run(&["receipts", "--verify"]);
    assert!(ok.ok(), "{}", ok.stderr());
    assert!(
        ok.stdout()
            .contains("4 receipts, chain intact; the last is seq 4"),
        "{}",
        ok.stdout()
    );

    let file = receipts_file(&project);
    let original = std::fs::read_to_string(&file).expect("read");
    // An allow turned into a deny.
    std::fs::write(
        &file,
        original.replacen("\"decision\":\"allow\"", "\"decision\":\"deny\"", 1),
    )
    .expect("edit");
    let edited = project.run(&["receipts", "--verify"]);
    assert_eq!(edited.code(), Some(1));
    assert!(
        edited
            .stdout()
            .contains("broken  line 1 (seq 1) was edited: line 2 (seq 2) chains to"),
        "{}",
        edited.stdout()
    );
    assert!(
        edited
            .stderr()
            .contains("the chain is broken in 1 place(s) among 4 receipts"),
        "{}",
        edited.stderr()
    );

    // The third receipt removed.
    let kept: Vec<&str> = original
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, l)| l)
        .collect();
    std::fs::write(&file, kept.join("\n") + "\n").expect("remove");
    let removed = project.run(&["receipts", "--verify"]);
    assert_eq!(removed.code(), Some(1));
    assert!(
        removed.stdout().contains("broken  line 3 (seq 4)")
            && removed
                .stdout()
                .contains("lines were removed or inserted before it"),
        "{}",
        removed.stdout()
    );

    // Restored, the chain holds and goes on.
    std::fs::write(&file, &original).expect("restore");
    project
        .hook(&bash("sess-chain", "ls again"))
        .assert_silent();
    assert!(
        project
            .run(&["receipts", "--verify"])
            .stdout()
            .contains("5 receipts, chain intact")
    );
}

#[test]
fn parallel_hooks_chain_every_receipt() {
    let project = Project::new();
    let payloads: Vec<Vec<u8>> = (0..40)
        .map(|i| bash(&format!("sess-par-{}", i % 4), &format!("ls {i}")))
        .collect();
    let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
    for run in hooks_at_once_on(&project, &refs) {
        run.assert_silent();
    }
    let verified = project.run(&["receipts", "--verify"]);
    assert!(verified.ok(), "{}{}", verified.stdout(), verified.stderr());
    assert!(
        verified.stdout().contains("40 receipts, chain intact"),
        "{}",
        verified.stdout()
    );
}

const OBSERVED_AND_ENFORCED: &str = r#"
[[guardrail]]
name = "destructive-commands"
source = "builtin:destructive-commands"
events = ["PreToolUse"]
matcher = "Bash"
gate = "observe"

[[guardrail]]
name = "no-destructive-git"
source = "builtin:no-destructive-git"
events = ["PreToolUse"]
matcher = "Bash"
"#;

#[test]
fn observe_mode_records_what_it_would_refuse_and_refuses_nothing() {
    let project = Project::new();
    project.config("[settings]\ngate = \"observe\"\n");
    let mut config = String::from("[settings]\ngate = \"observe\"\n");
    config.push_str(&OBSERVED_AND_ENFORCED.replace("gate = \"observe\"\n", ""));
    project.config(&config);
    let run = project.hook(&bash("sess-obs", "git push --force origin main"));
    run.assert_silent();
    let told = run.stderr();
    assert!(
        told.contains("sandrail: [destructive-commands] observe mode, not refused: [destructive-commands/force-push]"),
        "{told}"
    );
    assert!(
        told.contains("sandrail: [no-destructive-git] observe mode, not refused"),
        "{told}"
    );
    let receipt = receipts(&project).pop().expect("a receipt");
    assert_eq!(receipt["gate_mode"], "observe");
    assert_eq!(receipt["decision"], "allow");
    assert_eq!(receipt["observed"], "deny");
    assert_eq!(receipt["guardrails"][0]["refuses"], true);
    assert_eq!(
        receipt["guardrails"][1]["refuses"], true,
        "an observed refusal does not cut the chain"
    );
    let list = project.run(&["list"]);
    assert!(
        list.stdout()
            .contains("gate     observe (records, never refuses)"),
        "{}",
        list.stdout()
    );
    let listed = project.run(&["receipts"]);
    assert!(
        listed.stdout().contains("allow (observe: would deny)"),
        "{}",
        listed.stdout()
    );
}

#[test]
fn one_guardrail_observed_beside_an_enforced_one() {
    let project = Project::new();
    project.config(OBSERVED_AND_ENFORCED);
    let run = project.hook(&bash("sess-obs2", "git push --force origin main"));
    let reason = run.deny_reason().expect("the enforced guardrail refuses");
    assert!(
        reason.starts_with("[no-destructive-git/force-push]"),
        "{reason}"
    );
    assert!(!reason.contains("[destructive-commands"), "{reason}");
    let receipt = receipts(&project).pop().expect("a receipt");
    assert_eq!(receipt["decision"], "deny");
    assert_eq!(receipt["guardrails"][0]["gate_mode"], "observe");
    assert_eq!(receipt["guardrails"][1]["gate_mode"], "enforce");
    // Only the observed one: the call proceeds.
    let run = project.hook(&bash("sess-obs2", "rm -rf /usr"));
    run.assert_silent();
    assert!(
        run.stderr().contains("observe mode, not refused"),
        "{}",
        run.stderr()
    );

    project.config("[settings]\ngate = \"watch\"\n");
    let check = project.run(&["check-config"]);
    assert!(
        check.stderr().contains("unknown variant `watch`"),
        "{}",
        check.stderr()
    );
}

#[test]
fn a_limit_reached_is_in_the_receipt() {
    let project = Project::new();
    project.config(&probe_config(&[(
        "probe",
        "[guardrail.limits]\nlog_kib = 1\n[guardrail.config]\naction = \"flood\"\ncount = 8\n",
    )]));
    project.hook(&bash("sess-rlimit", "ls"));
    let receipt = receipts(&project).pop().expect("a receipt");
    assert_eq!(
        receipt["guardrails"][0]["exceeded"],
        json!(["log_kib"]),
        "{receipt}"
    );
}

/// Rewrites the receipts file as an agent would: the refusals dropped, the lines
/// after them given their `seq` and `prev` again, so the chain alone holds.
fn rechain_without_denies(project: &Project) {
    let text = std::fs::read_to_string(receipts_file(project)).expect("receipts");
    let mut prev = "0".repeat(64);
    let mut rewritten = String::new();
    let mut seq = 0;
    for line in text.lines() {
        let mut receipt: Value = serde_json::from_str(line).expect("json");
        if receipt["decision"] == "deny" {
            continue;
        }
        seq += 1;
        let line = if receipt["seq"] == json!(seq) && receipt["prev"] == json!(prev) {
            line.to_owned()
        } else {
            receipt["seq"] = json!(seq);
            receipt["prev"] = json!(prev);
            serde_json::to_string(&receipt).expect("json")
        };
        prev = sandrail::sha256_hex(line.as_bytes());
        rewritten.push_str(&line);
        rewritten.push('\n');
    }
    std::fs::write(receipts_file(project), rewritten).expect("rewrite");
}

#[test]
fn a_rechained_receipts_file_is_caught_against_the_system_log() {
    let project = Project::new();
    project.hook(&bash("sess-anchor", "ls -la")).assert_silent();
    assert!(
        project
            .hook(&bash("sess-anchor", "git push --force origin main"))
            .deny_reason()
            .is_some()
    );
    project.hook(&bash("sess-anchor", "ls")).assert_silent();
    let capture = project.root.path().join("journal.txt");
    std::fs::write(&capture, project.syslog()).expect("capture");
    let capture = capture.to_str().expect("utf-8 path");
    let agreed = project.run(&["receipts", "--verify", "--against", capture]);
    assert!(agreed.ok(), "{}{}", agreed.stdout(), agreed.stderr());
    assert!(
        agreed
            .stdout()
            .contains("the file agrees with the 3 receipts the log holds"),
        "{}",
        agreed.stdout()
    );

    rechain_without_denies(&project);
    // The chain alone cannot tell.
    let chain = project.run(&["receipts", "--verify"]);
    assert!(chain.ok(), "{}", chain.stderr());
    assert!(
        chain.stdout().contains("chain intact"),
        "{}",
        chain.stdout()
    );
    // The log can.
    let caught = project.run(&["receipts", "--verify", "--against", capture]);
    assert_eq!(caught.code(), Some(1), "{}", caught.stdout());
    let out = caught.stdout();
    assert!(
        out.contains("differs seq 2: the file's receipt differs from the one logged: altered"),
        "{out}"
    );
    assert!(
        out.contains("differs seq 3: in the log but not in the file: dropped"),
        "{out}"
    );
    assert!(
        caught.stderr().contains("disagree in 2 place(s)"),
        "{}",
        caught.stderr()
    );
    // A line forged into the log for the rewritten seq 2 does not cover it up.
    let forged = std::fs::read_to_string(receipts_file(&project))
        .expect("receipts")
        .lines()
        .nth(1)
        .map(|l| format!("<14>Dec  1 09:14:02 sandrail[1]: {l}\n"))
        .expect("line 2");
    std::fs::write(
        project.root.path().join("journal.txt"),
        format!("{}{forged}", project.syslog()),
    )
    .expect("capture");
    let caught = project.run(&["receipts", "--verify", "--against", capture]);
    assert_eq!(caught.code(), Some(1));
    assert!(
        caught
            .stdout()
            .contains("seq 2: the log holds 2 different receipts under it"),
        "{}",
        caught.stdout()
    );
}

#[test]
fn a_held_receipts_file_keeps_no_event_from_its_receipt() {
    let project = Project::new();
    project.hook(&bash("sess-held-r", "ls")).assert_silent();
    // `-o`: only flock holds the lock, so killing it lets go.
    let mut flock = std::process::Command::new("flock")
        .arg("-o")
        .arg(receipts_file(&project))
        .args(["sleep", "30"])
        .spawn()
        .expect("flock (util-linux)");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let run = project.hook(&bash("sess-held-r", "git push --force origin main"));
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1500),
        "not a sandrail process: no waiting"
    );
    assert!(run.deny_reason().is_some(), "the refusal stands");
    let said = run.answer()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        said.contains("the receipts file is held by pid")
            && said.contains("not a sandrail process")
            && said.contains("the next event chains it"),
        "{said}"
    );
    assert_eq!(receipts(&project).len(), 1, "not in the file yet");
    let _ = flock.kill();
    let _ = flock.wait();
    // The next event chains it, and says so.
    let next = project.hook(&bash("sess-held-r", "ls"));
    assert!(
        next.answer()["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("1 receipt(s) of earlier events were chained late")),
        "{}",
        next.stdout()
    );
    let all = receipts(&project);
    let decisions: Vec<&str> = all.iter().filter_map(|r| r["decision"].as_str()).collect();
    assert_eq!(
        decisions,
        ["allow", "deny", "allow"],
        "the deny chained late"
    );
    assert!(
        all[2]["alerts"][0]
            .as_str()
            .is_some_and(|a| a.contains("1 receipt(s) of earlier events were chained late")),
        "{}",
        all[2]
    );
    assert!(project.run(&["receipts", "--verify"]).ok());
    // The log had it the moment it was made, and it reached the file.
    let capture = project.root.path().join("journal.txt");
    std::fs::write(&capture, project.syslog()).expect("capture");
    let against = [
        "receipts",
        "--verify",
        "--against",
        capture.to_str().expect("utf-8 path"),
    ];
    let agreed = project.run(&against);
    assert!(agreed.ok(), "{}{}", agreed.stdout(), agreed.stderr());
    // A receipt put among the waiting ones by hand is chained by the next event,
    // which says so; the log, which never saw it wait, shows it was added.
    let planted = json!({"id": "planted", "seq": 0, "time": "2026-12-01T00:00:00Z",
        "session": "sess-held-r", "event": "PreToolUse", "guardrails": [],
        "decision": "allow", "gate": "enforce", "prev": ""});
    let waiting = project.state_dir().join("receipts.waiting");
    std::fs::create_dir_all(&waiting).expect("dir");
    std::fs::write(waiting.join("0-planted.json"), planted.to_string()).expect("plant");
    let run = project.hook(&bash("sess-held-r", "ls"));
    assert!(
        run.answer()["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("1 receipt(s) of earlier events were chained late")),
        "{}",
        run.stdout()
    );
    std::fs::write(&capture, project.syslog()).expect("capture");
    let caught = project.run(&against);
    assert_eq!(caught.code(), Some(1), "{}", caught.stdout());
    assert!(
        caught
            .stdout()
            .contains("chained late, but the log never saw it while it waited: added"),
        "{}",
        caught.stdout()
    );
}

#[test]
fn an_unreachable_system_log_is_a_stderr_line_never_a_refusal() {
    let project = Project::new();
    let mut cmd = project.cmd();
    cmd.env(
        "SANDRAIL_SYSLOG_SOCKET",
        project.root.path().join("no-such.sock"),
    );
    // Said once, not at every event (a container has no log at all): `doctor`
    // shows it from then on.
    for i in 0..3 {
        let mut cmd = project.cmd();
        cmd.env(
            "SANDRAIL_SYSLOG_SOCKET",
            project.root.path().join("no-such.sock"),
        );
        let run = project.hook_with(cmd, &bash("sess-nolog", "ls"));
        run.assert_silent();
        assert_eq!(
            run.stderr().contains("the system log cannot be reached"),
            i == 0,
            "{}",
            run.stderr()
        );
    }
    assert_eq!(receipts(&project).len(), 3);
    assert!(project.doctor_finds("log", "warning", "no-such.sock"));
    // Switched off, nothing goes to the log.
    project.config("[receipts]\nsyslog = false\n[[guardrail]]\nname = \"git\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\n");
    let quiet = Project::new();
    quiet.config("[receipts]\nsyslog = false\n[[guardrail]]\nname = \"git\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\n");
    quiet.hook(&bash("sess-nolog", "ls")).assert_silent();
    assert_eq!(receipts(&quiet).len(), 1);
    assert_eq!(quiet.syslog(), "");
}

/// A receipt answers "why" and "where": the message shown, the project and cwd,
/// the `tool_use_id` that finds the call in the transcript, the policy in force,
/// and why a guardrail did not run; `receipts` filters by guardrail and project.
#[test]
fn a_receipt_says_why_and_where_and_can_be_filtered() {
    let project = Project::new();
    let call = payload(
        "PreToolUse",
        "sess-why",
        serde_json::json!({
            "tool_name": "Bash",
            "tool_input": {"command": "git push --force origin main"},
            "tool_use_id": "toolu_01WHY",
        }),
    );
    let said = project.hook(&call).deny_reason().expect("refused");
    let receipt = receipts(&project).pop().expect("a receipt");
    assert_eq!(receipt["message"], said.as_str(), "{receipt}");
    assert_eq!(receipt["tool_use_id"], "toolu_01WHY");
    assert_eq!(receipt["cwd"], "/home/dev/project");
    assert_eq!(
        receipt["project"],
        project.dir().display().to_string().as_str(),
        "{receipt}"
    );
    assert!(
        receipt["policy"].as_str().is_some_and(|p| !p.is_empty()),
        "{receipt}"
    );

    // A guardrail that cannot be run says why.
    project.reconfigure(
        "[[guardrail]]\nname = \"gone\"\nsource = \"missing.wasm\"\nevents = [\"PreToolUse\"]\n",
    );
    project.hook(&bash("sess-why", "ls"));
    let receipt = receipts(&project).pop().expect("a receipt");
    assert_eq!(receipt["guardrails"][0]["verdict"], "not-run", "{receipt}");
    assert!(
        receipt["guardrails"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("missing.wasm")),
        "{receipt}"
    );

    let by_guardrail = project.run(&["receipts", "--guardrail", "gone"]).stdout();
    assert_eq!(by_guardrail.lines().count(), 1, "{by_guardrail}");
    let none = project.run(&["receipts", "--guardrail", "nobody"]).stdout();
    assert!(none.contains("matches guardrail 'nobody'"), "{none}");
    let here = project
        .run(&[
            "receipts",
            "--project",
            &project.dir().display().to_string(),
        ])
        .stdout();
    assert_eq!(here.lines().count(), 2, "{here}");
    let elsewhere = project.run(&["receipts", "--project", "/"]).stdout();
    assert!(elsewhere.contains("matches project /"), "{elsewhere}");
}

/// A system log that takes the connection but drops what it is sent (its queue
/// full) is no better than none: the failed receipt is shown by `doctor` until
/// one gets through, though the log can be connected to.
#[test]
fn a_system_log_that_drops_receipts_is_shown_by_doctor() {
    let project = Project::new();
    let path = project.root.path().join("full.sock");
    let full = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
    let sender = std::os::unix::net::UnixDatagram::unbound().expect("socket");
    sender.set_nonblocking(true).expect("nonblocking");
    let filler = vec![b'x'; 4096];
    while sender.send_to(&filler, &path).is_ok() {}
    let hook = |session: &str| {
        let mut cmd = project.cmd();
        cmd.env("SANDRAIL_SYSLOG_SOCKET", &path);
        project.hook_with(cmd, &bash(session, "ls"))
    };
    hook("sess-full").assert_silent();
    let mut doctor = project.cmd();
    doctor
        .env("SANDRAIL_SYSLOG_SOCKET", &path)
        .args(["doctor", "--json"]);
    let report = Run(doctor.output().expect("doctor")).answer();
    assert!(
        report["findings"]
            .as_array()
            .is_some_and(|fs| fs.iter().any(|f| f["check"] == "log"
                && f["level"] == "warning"
                && f["said"]
                    .as_str()
                    .is_some_and(|s| s.contains("did not reach")))),
        "{report:#}"
    );
    drop(full);
}
