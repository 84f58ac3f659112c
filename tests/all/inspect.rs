//! `sandrail inspect` and `sandrail audit`: what a reviewer reads about each plugin.

use serde_json::Value;

use crate::support::*;

fn old_probe() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/probe-0.1.0.wasm")
        .display()
        .to_string()
}

#[test]
fn inspect_a_builtin_under_the_embedded_default() {
    let project = Project::new();
    let sha = sandrail::builtins::get_with_sha256("destructive-commands")
        .expect("builtin")
        .1;
    let run = project.run(&["inspect", "builtin:destructive-commands"]);
    assert!(run.ok(), "{}", run.stderr());
    let out = run.stdout();
    for line in [
        format!("sha256     {sha}"),
        "world      sandrail:guardrail/guardrail@0.1.4".to_owned(),
        "loads      yes".to_owned(),
        "  sandrail:guardrail/types@0.1.4  event-kind, turn, event, violation, verdict".to_owned(),
        "  evaluate  func".to_owned(),
        "under (embedded default)".to_owned(),
        "  guardrail 'destructive-commands'".to_owned(),
        "    on_error   deny    gate enforce".to_owned(),
    ] {
        assert!(out.contains(&line), "missing {line:?} in {out}");
    }
    let json = project.run(&["inspect", "builtin:destructive-commands", "--json"]);
    let value: Value = serde_json::from_str(&json.stdout()).expect("json");
    assert_eq!(value["component"]["sha256"], sha);
    assert_eq!(value["component"]["loads"]["Ok"], Value::Null);
    assert_eq!(value["configured"][0]["name"], "destructive-commands");
    assert_eq!(value["configured"][0]["on_error"], "deny");
}

#[test]
fn inspect_names_every_import_and_what_it_reaches() {
    let project = Project::new();
    let run = project.run(&["inspect", &old_probe()]);
    assert!(run.ok(), "{}", run.stderr());
    let out = run.stdout();
    for line in [
        "world      sandrail:guardrail/guardrail@0.1.0",
        "  sandrail:guardrail/state@0.1.0  entry, state-error, get, set, list, list-owner",
        "      reaches: its own keyspace in the session; read-only listings of the guardrails its entry requires",
        "  sandrail:guardrail/log@0.1.0  level, log",
        "  wasi:cli/environment@0.2.6  get-environment\n      reaches: nothing: no environment variables, no arguments",
        "  not configured: it runs on no event",
    ] {
        assert!(out.contains(line), "missing {line:?} in {out}");
    }
}

#[test]
fn inspect_refuses_what_is_not_a_component() {
    let project = Project::new();
    let junk = project.dir().join("junk.wasm");
    std::fs::write(&junk, b"\0asm\x01\0\0\0").expect("write");
    let run = project.run(&["inspect", junk.to_str().expect("utf-8")]);
    assert_eq!(run.code(), Some(1));
    assert!(
        run.stderr().contains("not a valid component"),
        "{}",
        run.stderr()
    );
    let run = project.run(&["inspect", "builtin:nope"]);
    assert_eq!(run.code(), Some(1));
    assert!(
        run.stderr()
            .contains("no bundled guardrail is called 'nope'"),
        "{}",
        run.stderr()
    );
}

#[test]
fn audit_shows_what_a_reviewer_signs_off_on() {
    let project = Project::new();
    std::fs::write(project.dir().join("rules.yaml"), "x: 1\n").expect("data");
    project.config(&format!(
        r#"[settings]
gate = "observe"

[[guardrail]]
name = "recorder"
source = "builtin:session-budget"
events = ["PreToolUse"]

[[guardrail]]
name = "probe"
source = "{}"
events = ["PreToolUse", "Stop"]
matcher = "Bash"
requires = ["recorder"]
data = ["rules.yaml"]
on_error = "deny"
gate = "enforce"
[guardrail.limits]
fuel = 1000000
log_kib = 8
[guardrail.flags]
set = ["reviewed"]
consume = ["approved"]
"#,
        old_probe()
    ));
    assert!(project.run(&["pin"]).ok());
    // The pins are a change of policy: in force once a person accepts them.
    project.trust();
    let run = project.run(&["audit"]);
    assert!(run.ok(), "{}", run.stderr());
    let out = run.stdout();
    for line in [
        "settings   gate observe, on_error allow",
        "protect    on",
        "  guardrail 'probe'",
        "    pin        sandrail.lock matches",
        "    events     PreToolUse, Stop (matcher Bash)",
        "    on_error   deny    gate enforce",
        "    limits     timeout 100 ms, memory 64 MiB, state 4 MiB, log 8 KiB, fuel 1000000",
        "    reads      owners: recorder",
        "    flags      set: reviewed; check: none; consume: approved",
        "    data       rules.yaml (",
        "    reaches    its own keyspace in the session; read-only listings of the guardrails its entry requires (sandrail:guardrail/state)",
        "  guardrail 'recorder'",
        "    on_error   allow    gate observe",
    ] {
        assert!(out.contains(line), "missing {line:?} in {out}");
    }
    assert!(
        out.contains("lock       ") && out.contains("sandrail.lock (2 entries)"),
        "{out}"
    );

    // A changed plugin shows as a mismatch.
    let copy = project.dir().join("probe.wasm");
    std::fs::copy(PROBE, &copy).expect("copy");
    let config = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("read");
    project.config(&config.replace(&old_probe(), copy.to_str().expect("utf-8")));
    let json = project.run(&["audit", "--json"]);
    let value: Value = serde_json::from_str(&json.stdout()).expect("json");
    let probe = &value["guardrails"][1];
    assert_eq!(probe["name"], "probe");
    assert_eq!(probe["flags"]["set"][0], "reviewed");
    assert_eq!(probe["limits"]["fuel"], 1000000);
    assert!(
        probe["pin"]
            .as_str()
            .is_some_and(|p| p.starts_with("UNUSABLE LOCK: ") && p.contains("pins it as")),
        "{probe}"
    );
    assert_eq!(value["gate"], "observe");
}

/// A component that reads its rules' standing (contract 0.1.4) shows the import,
/// and an auditor reads what it reaches.
#[test]
fn inspect_says_what_the_escalation_import_reaches() {
    let project = Project::new();
    let run = project.run(&["inspect", PROBE]);
    assert!(run.ok(), "{}", run.stderr());
    let out = run.stdout();
    assert!(
        out.contains("  sandrail:guardrail/escalation@0.1.4"),
        "{out}"
    );
    assert!(
        out.contains("read-only: the counts, levels and overrides of its own rules in the session"),
        "{out}"
    );
    assert!(!out.contains("not provided by sandrail"), "{out}");
}

/// `audit` says whether the OS sandbox is on for the project, and whether the
/// policy in force switched it off (`[protect] os_sandbox = false`) — a config
/// on disk that does so is held and changes nothing until accepted.
#[test]
fn audit_says_whether_the_os_sandbox_is_on_and_whether_the_policy_switched_it_off() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().expect("dir")).expect("dir");
    std::fs::write(
        &settings,
        serde_json::json!({
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "sandrail hook"}]}]}
        })
        .to_string(),
    )
    .expect("settings");
    let audit = |project: &Project| -> (String, Value) {
        let text = project.run(&["audit"]).stdout();
        let json = serde_json::from_str(&project.run(&["audit", "--json"]).stdout()).expect("json");
        (text, json)
    };
    let (text, json) = audit(&project);
    assert!(
        text.contains("\nsandbox    OFF for claude (below): the project relies on it"),
        "{text}"
    );
    assert_eq!(json["os_sandbox_on"], false);
    assert_eq!(json["os_sandbox_switched_off"], false);

    let off = "[protect]\nos_sandbox = false\n[[guardrail]]\nname = \"destructive-commands\"\nsource = \"builtin:destructive-commands\"\nevents = [\"PreToolUse\"]\n";
    project.write_config(off);
    let (text, json) = audit(&project);
    assert!(
        text.contains("the project relies on it") && text.contains("on disk    HELD"),
        "{text}"
    );
    assert_eq!(json["os_sandbox_switched_off"], false);

    project.config(off);
    let (text, json) = audit(&project);
    assert!(
        text.contains(
            "\nsandbox    OFF for claude, as the policy in force chose ([protect] os_sandbox = false)"
        ),
        "{text}"
    );
    assert_eq!(json["os_sandbox_on"], false);
    assert_eq!(json["os_sandbox_switched_off"], true);

    let mut protect = project.cmd();
    protect
        .env("PATH", project.path_with_sandbox_tools())
        .args(["protect", "--harness", "claude"]);
    let run = Run(protect.output().expect("sandrail protect"));
    assert!(run.ok(), "{}", run.stderr());
    let (text, json) = audit(&project);
    assert!(
        text.contains("\nsandbox    on for every harness registered"),
        "{text}"
    );
    assert_eq!(json["os_sandbox_on"], true);
}
