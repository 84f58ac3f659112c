//! The policy in force cannot be loosened by the agent: a session keeps the policy
//! it started with whatever happens to the files, a new session takes a change
//! only when it adds guardrails, and only a person at a terminal accepts anything
//! else (`sandrail trust`) or loosens a running session.

use serde_json::Value;

use crate::support::*;

const BUDGET_3: &str = r#"[[guardrail]]
name = "destructive-commands"
source = "builtin:destructive-commands"
events = ["PreToolUse"]
matcher = "Bash"

[[guardrail]]
name = "budget"
source = "builtin:session-budget"
events = ["PreToolUse"]
matcher = "Write"
[guardrail.config]
limit = 3
"#;

/// What the person was told (`systemMessage`), if anything.
fn told(run: &Run) -> String {
    if run.stdout().trim().is_empty() {
        return String::new();
    }
    run.answer()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn force_push_refused(run: &Run) -> bool {
    run.deny_reason()
        .is_some_and(|r| r.contains("force-push") || r.contains("force push"))
}

#[test]
fn touching_a_config_or_a_lock_mid_session_changes_nothing() {
    let project = Project::new();
    // The embedded default is in force: a force push is refused.
    assert!(force_push_refused(
        &project.hook(&bash("s1", "git push --force"))
    ));
    // An empty sandrail.toml appears (`touch sandrail.toml`).
    project.write_config("");
    let run = project.hook(&bash("s1", "git push --force"));
    assert!(force_push_refused(&run), "{}", run.stderr());
    let said = told(&run);
    assert!(
        said.contains("changed since this session started") && said.contains("no guardrails"),
        "{said}"
    );
    // Said once per change, not on every event.
    let run = project.hook(&bash("s1", "git push --force"));
    assert!(force_push_refused(&run));
    assert!(!told(&run).contains("changed since"), "{}", told(&run));
    // A lock appears too (`touch sandrail.lock`): nothing stops running.
    std::fs::write(project.dir().join("sandrail.lock"), "").expect("touch lock");
    let run = project.hook(&bash("s1", "git push --force"));
    assert!(force_push_refused(&run), "{}", run.stderr());

    // The next session does not take it either, and the person is told how to.
    let run = project.hook(&bash("s2", "git push --force"));
    assert!(force_push_refused(&run), "{}", run.stderr());
    let said = told(&run);
    assert!(
        said.contains("is not the one accepted for this project")
            && said.contains("sandrail trust"),
        "{said}"
    );
    // The agent cannot accept it: `trust` without a terminal changes nothing.
    let trust = project.run(&["trust"]);
    assert_eq!(trust.code(), Some(2), "{}", trust.stderr());
    assert!(
        trust.stderr().contains("needs a person at a terminal"),
        "{}",
        trust.stderr()
    );
    assert!(force_push_refused(
        &project.hook(&bash("s3", "git push --force"))
    ));
    // A wrong code at the terminal changes nothing either.
    let wrong = project.at_terminal(&["trust"], Some("nope"));
    assert_eq!(wrong.code(), Some(1), "{}", wrong.stdout());
    assert!(force_push_refused(
        &project.hook(&bash("s4", "git push --force"))
    ));
}

#[test]
fn a_rewritten_config_mid_session_keeps_the_limit_and_the_refusals() {
    let project = Project::new();
    project.config(BUDGET_3);
    for n in 1..=3 {
        project
            .hook(&write("s1", &format!("/home/dev/project/{n}.rs")))
            .code();
    }
    // The agent raises the limit from 3 to 300000 and drops the force-push rule.
    project.write_config(
        &BUDGET_3
            .replace("limit = 3", "limit = 300000")
            .replace("builtin:destructive-commands", "builtin:session-budget"),
    );
    let run = project.hook(&write("s1", "/home/dev/project/4.rs"));
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.contains("budget of 3 file edits")),
        "limit 3 stays 3: {} / {}",
        run.stdout(),
        run.stderr()
    );
    assert!(
        told(&run).contains("guardrail 'budget' changed"),
        "{}",
        told(&run)
    );
    assert!(force_push_refused(
        &project.hook(&bash("s1", "git push --force"))
    ));
    // Deleted outright: the same.
    std::fs::remove_file(project.dir().join("sandrail.toml")).expect("rm");
    assert!(
        project
            .hook(&write("s1", "/home/dev/project/5.rs"))
            .deny_reason()
            .is_some_and(|r| r.contains("budget of 3"))
    );

    // A new session holds to the accepted policy too.
    project.write_config(&BUDGET_3.replace("limit = 3", "limit = 300000"));
    let run = project.hook(&bash("s2", "git push --force"));
    assert!(force_push_refused(&run));
    assert!(
        run.stderr()
            .contains("guardrail 'budget' changed: `config`"),
        "{}",
        run.stderr()
    );
    for n in 1..=3 {
        project
            .hook(&write("s2", &format!("/home/dev/project/{n}.rs")))
            .code();
    }
    assert!(
        project
            .hook(&write("s2", "/home/dev/project/4.rs"))
            .deny_reason()
            .is_some_and(|r| r.contains("budget of 3"))
    );

    // A person accepts it: the running session takes it from its next event.
    let trust = project.trust();
    assert!(
        trust
            .stdout()
            .contains("guardrail 'budget' changed: `config`")
            && trust.stdout().contains("1 running session(s)")
            || trust.stdout().contains("running session(s)"),
        "{}",
        trust.stdout()
    );
    let run = project.hook(&write("s2", "/home/dev/project/5.rs"));
    assert!(
        run.stdout().trim().is_empty() || run.deny_reason().is_none(),
        "the limit a person raised: {}",
        run.stdout()
    );
}

#[test]
fn a_pure_addition_is_taken_by_the_next_session() {
    let project = Project::new();
    project.config(BUDGET_3);
    assert!(force_push_refused(
        &project.hook(&bash("s1", "git push --force"))
    ));
    project.write_config(&format!(
        "{BUDGET_3}\n[[guardrail]]\nname = \"counter\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash\"\n[guardrail.config]\naction = \"count\"\n"
    ));
    // Not in the running session...
    let run = project.hook(&bash("s1", "ls"));
    assert!(
        told(&run).contains("New sessions take it"),
        "{}",
        told(&run)
    );
    assert!(!run.stdout().contains("[counter]"), "{}", run.stdout());
    // ...in the next, without a word.
    let run = project.hook(&bash("s2", "ls"));
    assert_eq!(run.context(), "[counter] n=1");
    assert_eq!(told(&run), "");
}

#[test]
fn a_replaced_component_or_data_file_runs_as_the_session_started_with_it() {
    let project = Project::new();
    let guards = project.dir().join("guards");
    std::fs::create_dir_all(&guards).expect("dir");
    let component = guards.join("probe.wasm");
    std::fs::copy(PROBE, &component).expect("copy");
    // dotforge's no-destructive-git, as a data grant dotforge reads on each event.
    let behavior = guards.join("no-force.yaml");
    let rules = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/dotforge/behaviors/no-destructive-git/behavior.yaml"),
    )
    .expect("behavior");
    std::fs::write(&behavior, &rules).expect("data");
    project.config(
        "[[guardrail]]\nname = \"no-force\"\nsource = \"builtin:dotforge\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash\"\ndata = [\"guards/no-force.yaml\"]\n[guardrail.config]\nbehavior = \"guards/no-force.yaml\"\n\n\
         [[guardrail]]\nname = \"probe\"\nsource = \"guards/probe.wasm\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\naction = \"note\"\nvalue = \"probe judged\"\n",
    );
    let run = project.hook(&bash("s1", "git push --force"));
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.starts_with("[no-force/")),
        "{} {}",
        run.stdout(),
        run.stderr()
    );
    // The behavior loses its trigger and the component is replaced, on disk.
    std::fs::write(
        &behavior,
        rules
            .replace("reset\\s+--hard", "nothing")
            .replace("push", "nothing"),
    )
    .expect("data");
    std::fs::write(&component, b"\0asm\x01\0\0\0").expect("replace");
    let run = project.hook(&bash("s1", "git push --force"));
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.starts_with("[no-force/")),
        "the session's copy of the behavior still refuses: {} {}",
        run.stdout(),
        run.stderr()
    );
    let said = told(&run);
    assert!(
        said.contains("its component's bytes") && said.contains("its data files' contents"),
        "{said}"
    );
    let run = project.hook(&bash("s1", "ls"));
    assert_eq!(run.context(), "[probe] probe judged", "{}", run.stderr());
}

/// The ratchet asks the runtime whether a changed component still loads (the
/// policy layer has no wasmtime of its own): a component replaced by one that
/// does not load is held for a new session, which runs the accepted one.
#[test]
fn a_component_replaced_by_one_that_does_not_load_is_held_for_a_new_session() {
    let project = Project::new();
    let guards = project.dir().join("guards");
    std::fs::create_dir_all(&guards).expect("dir");
    let component = guards.join("probe.wasm");
    std::fs::copy(PROBE, &component).expect("copy");
    project.config(
        "[[guardrail]]\nname = \"probe\"\nsource = \"guards/probe.wasm\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\naction = \"note\"\nvalue = \"probe judged\"\n",
    );
    assert_eq!(
        project.hook(&bash("s1", "ls")).context(),
        "[probe] probe judged"
    );
    // Bytes that read but are no WebAssembly at all: its imports cannot be read.
    std::fs::write(&component, b"not a component").expect("replace");
    let run = project.hook(&bash("s2", "ls"));
    assert_eq!(run.context(), "[probe] probe judged", "{}", run.stderr());
    let said = format!("{} {}", told(&run), run.stderr());
    assert!(said.contains("guardrail 'probe' no longer loads"), "{said}");
}

#[test]
fn a_renamed_binary_cannot_switch_a_guardrail_off_or_set_state() {
    let project = Project::new();
    project.config(&probe_config(&[(
        "counter",
        "[guardrail.config]\naction = \"count\"\n",
    )]));
    assert_eq!(project.hook(&bash("s1", "ls")).context(), "[counter] n=1");
    let renamed = project.root.path().join("sr");
    copy_program(BIN, &renamed);
    let run = |args: &[&str]| {
        let output = std::process::Command::new(&renamed)
            .args(args)
            .current_dir(project.dir())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", project.root.path())
            .env("CLAUDE_PROJECT_DIR", project.dir())
            .env("SANDRAIL_STATE_DIR", project.state_dir())
            .env("SANDRAIL_CACHE_DIR", project.cache_dir())
            .output()
            .expect("run the copy");
        Run(output)
    };
    for args in [
        &["guardrail", "off", "counter", "--session", "s1"][..],
        &[
            "state",
            "set",
            "n",
            "0",
            "--session",
            "s1",
            "--guardrail",
            "counter",
        ],
        &[
            "state",
            "delete",
            "n",
            "--session",
            "s1",
            "--guardrail",
            "counter",
        ],
    ] {
        let out = run(args);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.stderr());
        assert!(
            out.stderr().contains("needs a person at a terminal")
                && out.stderr().contains("Nothing was changed"),
            "{args:?}: {}",
            out.stderr()
        );
    }
    // The guardrail still runs, and its count went on.
    assert_eq!(project.hook(&bash("s1", "ls")).context(), "[counter] n=2");
    // `sandrail hook` run through the agent's own tool is refused like the
    // other commands that change what sandrail holds.
    let forged = project.hook(&bash("s1", "echo '{}' | sandrail hook"));
    assert!(
        forged
            .deny_reason()
            .is_some_and(|r| r.contains("sandrail refused `sandrail hook`")),
        "{}",
        forged.stdout()
    );
}

#[test]
fn trust_shows_the_difference_and_applies_to_running_sessions() {
    let project = Project::new();
    project.config(BUDGET_3);
    project.hook(&bash("s1", "ls"));
    project.write_config(&BUDGET_3.replace("limit = 3", "limit = 5"));
    let trust = project.trust();
    let out = trust.stdout();
    assert!(out.contains("accepted  policy "), "{out}");
    assert!(out.contains("on disk   policy "), "{out}");
    assert!(
        out.contains("guardrail 'budget' changed: `config`"),
        "{out}"
    );
    assert!(out.contains("1 running session(s)"), "{out}");
    // Again: nothing to do.
    let again = project.run(&["trust"]);
    assert!(again.ok(), "{}", again.stderr());
    assert!(
        again.stdout().contains("nothing to do"),
        "{}",
        again.stdout()
    );
    let status: Value = serde_json::from_str(
        &project
            .run(&["status", "--session", "s1", "--json"])
            .stdout(),
    )
    .expect("status json");
    assert_eq!(status["policy"]["differs"], Value::Null, "{status}");
}

/// Force pushes nudge twice, then refuse from the third in a session.
const ESCALATING: &str = r#"[[guardrail]]
name = "git"
source = "builtin:no-destructive-git"
events = ["PreToolUse"]
matcher = "Bash"
[guardrail.enforcement]
default_level = "nudge"
escalation = [{ after = 3, level = "hard_block" }]
"#;

#[test]
fn a_truncated_vanished_or_replaced_database_is_reported_and_its_counters_restored() {
    let project = Project::new();
    project.config(ESCALATING);
    let push = |session: &str| project.hook(&bash(session, "git push --force origin main"));
    for _ in 0..2 {
        let (said, _) = push("s1").told();
        assert_eq!(said, "context", "a nudge");
    }
    // Truncated to nothing: the next force push would be the first again.
    let db = project.session_db("s1");
    std::fs::write(&db, b"").expect("truncate");
    let run = push("s1");
    assert!(
        run.deny_reason().is_some_and(|r| r.contains("force-push")),
        "counted from the receipts, the third refuses: {} {}",
        run.stdout(),
        run.stderr()
    );
    let said = told(&run);
    assert!(
        said.contains("not what its last event left")
            && said.contains("it was emptied or replaced")
            && said.contains("restored from its receipts"),
        "{said}"
    );
    let last = project.last_receipt();
    assert!(
        last["alerts"].to_string().contains("emptied or replaced"),
        "{last}"
    );
    // Deleted outright, the same.
    std::fs::remove_file(&db).expect("rm");
    let run = push("s1");
    assert!(run.deny_reason().is_some());
    assert!(told(&run).contains("it vanished after"), "{}", told(&run));
    // Another session's database put in its place.
    push("s2");
    std::fs::copy(project.session_db("s2"), &db).expect("swap");
    let run = push("s1");
    assert!(run.deny_reason().is_some(), "{}", run.stderr());
    assert!(
        told(&run).contains("replaced by another session's database"),
        "{}",
        told(&run)
    );
    // Left alone, it is said no more.
    let run = push("s1");
    assert!(
        !told(&run).contains("not what its last event left"),
        "{}",
        told(&run)
    );
}

/// A person's terminal has no `CLAUDE_PROJECT_DIR`, and may stand in a
/// subdirectory: `trust` still accepts for the project the sessions run in.
#[test]
fn trust_from_a_subdirectory_accepts_for_the_project() {
    let project = Project::new();
    project.config(BUDGET_3);
    project.hook(&bash("s1", "ls"));
    project.write_config(&BUDGET_3.replace("limit = 3", "limit = 5"));
    let src = project.dir().join("src");
    std::fs::create_dir_all(&src).expect("src");
    let trust = project.at_terminal_with(&["trust"], None, |cmd| {
        cmd.current_dir(&src).env_remove("CLAUDE_PROJECT_DIR");
    });
    assert!(trust.ok(), "{}", trust.stdout());
    assert!(
        trust
            .stdout()
            .contains(&format!("project   {}", project.dir().display())),
        "{}",
        trust.stdout()
    );
    let run = project.hook(&bash("s2", "ls"));
    assert!(
        !run.stderr().contains("is not the one accepted"),
        "{}",
        run.stderr()
    );
}

/// An observe-only policy: what the agent would have a new session take.
const OBSERVE_ONLY: &str = "[settings]\ngate = \"observe\"\n\n[[guardrail]]\nname = \"destructive-commands\"\nsource = \"builtin:destructive-commands\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash|PowerShell\"\non_error = \"deny\"\n";

/// A new session whose harness settings' `env` moves `SANDRAIL_STATE_DIR` — to a
/// fresh directory, or to one where the agent had its own config accepted —
/// with an observe-only `sandrail.toml` on disk still refuses the force push:
/// the project's records stay where it was first seen, and the person is told.
#[test]
fn a_state_directory_moved_by_the_environment_is_not_a_fresh_start() {
    let project = Project::new();
    // The project as `init` and `trust` leave it: the embedded default.
    assert!(force_push_refused(
        &project.hook(&bash("s1", "git push --force origin main"))
    ));
    project.write_config(OBSERVE_ONLY);
    let moved = |to: &std::path::Path, session: &str| {
        let mut cmd = project.cmd();
        cmd.env("SANDRAIL_STATE_DIR", to);
        project.hook_with(cmd, &bash(session, "git push --force origin main"))
    };
    let fresh = project.root.path().join("fresh");
    let run = moved(&fresh, "s2");
    assert!(
        force_push_refused(&run),
        "{} / {}",
        run.stdout(),
        run.stderr()
    );
    let said = told(&run);
    assert!(
        said.contains(&format!("its state directory at {}", fresh.display()))
            && said.contains("those are used")
            && said.contains("sandrail trust"),
        "{said}"
    );
    assert!(!fresh.join("receipts.jsonl").exists(), "nothing goes there");

    // A directory where the observe-only policy was accepted, the binding put
    // back as it was: the agent's own records do not decide.
    let forged = project.root.path().join("forged");
    let binding = sandrail::locations::binding::record_of(&project.dir()).expect("binding");
    let bound = std::fs::read(&binding).expect("the project is bound");
    let accepted = project.at_terminal_with(&["trust"], None, |cmd| {
        cmd.env("SANDRAIL_STATE_DIR", &forged);
    });
    assert!(accepted.ok(), "{}", accepted.stdout());
    assert!(
        accepted.stdout().contains("It moves the project's records"),
        "{}",
        accepted.stdout()
    );
    std::fs::write(&binding, bound).expect("the binding as it was");
    let run = moved(&forged, "s3");
    assert!(
        force_push_refused(&run),
        "{} / {}",
        run.stdout(),
        run.stderr()
    );

    // An environment stripped of the variables that name a state directory
    // (`HOME` emptied too) still finds the project's bound records: the
    // loosened config on disk is held, not judged unchecked.
    let mut stripped = project.cmd();
    stripped.env("SANDRAIL_STATE_DIR", "").env("HOME", "");
    let run = project.hook_with(stripped, &bash("s5", "git push --force origin main"));
    assert!(
        force_push_refused(&run),
        "{} / {}",
        run.stdout(),
        run.stderr()
    );

    // The project spelled another way (a trailing `/.`, a link to it) is the
    // same project, bound as it is.
    let link = project.root.path().join("link");
    std::os::unix::fs::symlink(project.dir(), &link).expect("link");
    for (session, alias) in [("s6", project.dir().join(".")), ("s7", link)] {
        let mut cmd = project.cmd();
        cmd.env("CLAUDE_PROJECT_DIR", &alias).env(
            "SANDRAIL_STATE_DIR",
            project.root.path().join("alias-state"),
        );
        let run = project.hook_with(cmd, &bash(session, "git push --force origin main"));
        assert!(force_push_refused(&run));
        assert!(
            told(&run).contains("those are used"),
            "{}: {}",
            alias.display(),
            told(&run)
        );
    }

    // The system log moved the same way: the receipt still reaches the
    // project's own, so cutting the file back is caught against it.
    let mut cmd = project.cmd();
    cmd.env(
        "SANDRAIL_SYSLOG_SOCKET",
        project.root.path().join("dead.sock"),
    );
    let run = project.hook_with(cmd, &bash("s4", "git push --force origin main"));
    assert!(force_push_refused(&run));
    assert!(told(&run).contains("receipts logged to"), "{}", told(&run));
    let file = project.state_dir().join("receipts.jsonl");
    let text = std::fs::read_to_string(&file).expect("receipts");
    let last = text.lines().last().expect("a receipt").to_owned();
    assert!(
        project.syslog().contains(&last),
        "the receipt reached the bound log"
    );
    let cut: String = text
        .lines()
        .take(text.lines().count() - 1)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, cut).expect("cut back");
    let capture = project.root.path().join("log.txt");
    std::fs::write(&capture, project.syslog()).expect("capture");
    let verified = project.run(&[
        "receipts",
        "--verify",
        "--against",
        capture.to_str().expect("utf-8"),
    ]);
    assert_eq!(verified.code(), Some(1), "{}", verified.stdout());
}

/// `sandrail trust` whose acceptance cannot be written says so and exits 1:
/// nobody is told a policy was accepted when it was not.
#[test]
fn trust_that_cannot_save_its_acceptance_fails_loudly() {
    let project = Project::new();
    project.config(BUDGET_3);
    project.write_config(&BUDGET_3.replace("limit = 3", "limit = 5"));
    // Where the project's accepted policy goes, a directory: the write fails
    // whoever runs it (root too).
    let projects = project.state_dir().join("policy/projects");
    let record = std::fs::read_dir(&projects)
        .expect("accepted policies")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("the project's record");
    std::fs::remove_file(&record).expect("rm");
    std::fs::create_dir(&record).expect("a directory in its place");
    let run = project.at_terminal(&["trust"], None);
    assert_eq!(run.code(), Some(1), "{}", run.stdout());
    assert!(
        run.stdout().contains("could not be saved")
            && run.stdout().contains("the policy was not accepted")
            && !run.stdout().contains("Accepted policy"),
        "{}",
        run.stdout()
    );
}

/// A probe noting `value` on every event.
fn noting(value: &str) -> String {
    probe_config(&[(
        "probe",
        &format!("[guardrail.config]\naction = \"note\"\nvalue = \"{value}\"\n"),
    )])
}

/// `list` and `audit` show what a new session would run, decided as the hook
/// decides it: while the config on disk is held, the accepted policy, with
/// what is held and how to accept it; once accepted, the config on disk.
#[test]
fn list_and_audit_show_the_policy_in_force_not_a_held_config() {
    let project = Project::new();
    project.config(&noting("accepted"));
    project.write_config(&noting("on disk"));
    // What the hook runs for a new session.
    assert_eq!(
        project.hook(&bash("s-new", "ls")).context(),
        "[probe] accepted"
    );
    let config = project.dir().join("sandrail.toml");
    let list = project.run(&["list"]);
    assert!(list.ok(), "{}", list.stderr());
    let out = list.stdout();
    assert!(
        out.starts_with(&format!("config: {} as accepted ", config.display()))
            && out
                .lines()
                .next()
                .is_some_and(|l| l.ends_with(", not as it is on disk")),
        "{out}"
    );
    assert!(
        out.contains("\nheld: the policy on disk (")
            && out.contains("is held, not in force: guardrail 'probe' changed: `config`")
            && out.contains("run `sandrail trust` in a terminal"),
        "{out}"
    );
    let json = project.run(&["list", "--json"]);
    let lines: Vec<Value> = json
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one guardrail a line"))
        .collect();
    assert_eq!(lines.len(), 1);
    assert!(
        json.stderr().contains("is held, not in force"),
        "{}",
        json.stderr()
    );
    let audit = project.run(&["audit", "--json"]);
    let audit: Value = serde_json::from_str(&audit.stdout()).expect("audit");
    assert_eq!(
        audit["guardrails"][0]["config"],
        serde_json::json!({"action": "note", "value": "accepted"})
    );
    let policy = &audit["policy"];
    assert_eq!(policy["held"], true, "{policy}");
    assert_eq!(policy["how"], "person", "{policy}");
    assert!(policy["accepted_at"].is_string(), "{policy}");
    assert_eq!(
        policy["changes"],
        serde_json::json!(["guardrail 'probe' changed: `config`"])
    );
    assert_eq!(policy["on_disk"]["config"], config.display().to_string());
    assert!(policy["on_disk"]["modified"].is_string(), "{policy}");
    assert_ne!(policy["on_disk"]["id"], policy["id"]);
    let text = project.run(&["audit"]).stdout();
    for line in [
        "\npolicy     ",
        " (person)\n",
        "\non disk    HELD (its config last written ",
        "guardrail 'probe' changed: `config`",
        "\n    config     {\"action\":\"note\",\"value\":\"accepted\"}\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in {text}");
    }

    // Accepted, it is what runs and what is shown.
    project.trust();
    let audit = project.run(&["audit", "--json"]);
    let audit: Value = serde_json::from_str(&audit.stdout()).expect("audit");
    assert_eq!(audit["policy"]["held"], false);
    assert_eq!(audit["policy"]["on_disk"]["id"], audit["policy"]["id"]);
    assert_eq!(audit["guardrails"][0]["config"]["value"], "on disk");
    let list = project.run(&["list"]).stdout();
    assert!(!list.contains("held"), "{list}");
    assert!(
        list.starts_with(&format!("config: {}\n", config.display())),
        "{list}"
    );
    assert_eq!(
        project.hook(&bash("s-after", "ls")).context(),
        "[probe] on disk"
    );

    // An addition is taken by a new session: shown as in force, not yet accepted.
    let mut added = noting("on disk");
    added.push_str(&noting("added").replace("name = \"probe\"", "name = \"second\""));
    project.write_config(&added);
    let audit = project.run(&["audit", "--json"]);
    let audit: Value = serde_json::from_str(&audit.stdout()).expect("audit");
    assert_eq!(audit["policy"]["held"], false);
    assert_eq!(audit["policy"]["how"], "addition");
    assert_eq!(audit["guardrails"][1]["name"], "second");
    assert!(
        project
            .run(&["audit"])
            .stdout()
            .contains("not accepted yet: a new session takes it and accepts it (addition)")
    );
}

/// With nothing accepted, a config on disk that does more than add to the
/// embedded default is held, and the embedded default is shown as what runs.
#[test]
fn list_and_audit_show_the_embedded_default_while_a_first_config_is_held() {
    let project = Project::new();
    project.write_config(
        "[settings]\ngate = \"observe\"\n[[guardrail]]\nname = \"destructive-commands\"\nsource = \"builtin:destructive-commands\"\nevents = [\"PreToolUse\"]\n",
    );
    assert!(force_push_refused(
        &project.hook(&bash("s-first", "git push --force"))
    ));
    let list = project.run(&["list"]).stdout();
    assert!(list.starts_with("config: (embedded default)\n"), "{list}");
    assert!(
        list.contains("does more than add guardrails to the embedded default")
            && list.contains("New sessions run the embedded default.")
            && list.contains("session-budget"),
        "{list}"
    );
    let audit = project.run(&["audit", "--json"]);
    let audit: Value = serde_json::from_str(&audit.stdout()).expect("audit");
    assert_eq!(audit["config"], "(embedded default)");
    assert_eq!(audit["gate"], "enforce");
    assert_eq!(audit["policy"]["held"], true);
    assert_eq!(audit["policy"]["accepted_at"], Value::Null);
}

/// While the component file on disk is replaced (and so held), `list` and
/// `audit` show the sha256 of the copy accepted with the policy, which is what
/// a new session runs.
#[test]
fn a_held_component_shows_the_accepted_copys_hash() {
    let project = Project::new();
    let component = project.dir().join("guard.wasm");
    std::fs::copy(PROBE, &component).expect("copy the probe");
    let accepted = sandrail::sha256_hex(&std::fs::read(PROBE).expect("probe"));
    project.config(
        "[[guardrail]]\nname = \"guard\"\nsource = \"guard.wasm\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\naction = \"note\"\nvalue = \"accepted copy\"\n",
    );
    let other =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/probe-0.1.0.wasm");
    std::fs::copy(&other, &component).expect("replace the component");
    let replaced = sandrail::sha256_hex(&std::fs::read(&other).expect("fixture"));
    assert_ne!(accepted, replaced);
    let list = project.run(&["list"]).stdout();
    assert!(
        list.contains(&format!("sha256   {accepted}"))
            && !list.contains(&replaced)
            && list.contains("guardrail 'guard' changed: its component's bytes"),
        "{list}"
    );
    let audit = project.run(&["audit", "--json"]);
    let audit: Value = serde_json::from_str(&audit.stdout()).expect("audit");
    assert_eq!(audit["guardrails"][0]["component"]["sha256"], accepted);
    assert_eq!(
        project.hook(&bash("s-copy", "ls")).context(),
        "[guard] accepted copy"
    );
}
