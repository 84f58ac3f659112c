//! The operator's commands: list, check-config and state.

use serde_json::Value;

use crate::support::*;

#[test]
fn list_shows_the_embedded_default() {
    let project = Project::new();
    let run = project.run(&["list"]);
    assert!(run.ok(), "{}", run.stderr());
    let out = run.stdout();
    assert!(out.starts_with("config: (embedded default)"), "{out}");
    assert!(
        out.contains("destructive-commands\n  source   builtin:destructive-commands\n  sha256   "),
        "{out}"
    );
    assert!(
        out.contains("  events   PreToolUse\n  matcher  Bash|PowerShell"),
        "{out}"
    );

    let run = project.run(&["list", "--json"]);
    let first: Value =
        serde_json::from_str(run.stdout().lines().next().expect("a line")).expect("json");
    assert_eq!(first["name"], "destructive-commands");
    assert_eq!(first["sha256"].as_str().map(str::len), Some(64));
    assert_eq!(first["events"], serde_json::json!(["PreToolUse"]));
}

#[test]
fn list_and_check_config_report_a_pinned_file_guardrail() {
    let project = Project::new();
    let sha = sandrail::sha256_hex(&std::fs::read(PROBE).expect("probe"));
    project.config(&format!(
        "[[guardrail]]\nname = \"probe\"\nsource = \"{PROBE}\"\nsha256 = \"{sha}\"\nevents = [\"Stop\"]\n[guardrail.config]\naction = \"note\"\nvalue = \"x\"\n"
    ));
    let run = project.run(&["list"]);
    assert!(
        run.stdout().contains(&format!("sha256   {sha} (pinned)")),
        "{}",
        run.stdout()
    );
    let check = project.run(&["check-config"]);
    assert!(check.ok(), "{}", check.stderr());
    assert!(
        check
            .stdout()
            .contains("sandrail.toml: 1 guardrail, all valid"),
        "{}",
        check.stdout()
    );

    let wrong = "0".repeat(64);
    project.config(&format!(
        "[[guardrail]]\nname = \"probe\"\nsource = \"{PROBE}\"\nsha256 = \"{wrong}\"\nevents = [\"Stop\"]\n[guardrail.config]\naction = \"deny\"\nvalue = \"x\"\n"
    ));
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1));
    assert!(
        check.stdout().contains(&format!(
            "sha256 mismatch: the config pins {wrong} but the component is {sha}"
        )),
        "{}",
        check.stdout()
    );
    // A mismatched component is not run.
    let run = project.hook(&payload(
        "Stop",
        "sess-pin",
        serde_json::json!({"stop_hook_active": false}),
    ));
    run.assert_silent();
    assert!(
        run.stderr()
            .contains("guardrail 'probe' not run: sha256 mismatch"),
        "{}",
        run.stderr()
    );
}

#[test]
fn check_config_reports_a_require_cycle() {
    let project = Project::new();
    project.config(&format!(
        "[[guardrail]]\nname = \"a\"\nsource = \"{PROBE}\"\nevents = [\"Stop\"]\nrequires = [\"b\"]\n\
         [[guardrail]]\nname = \"b\"\nsource = \"{PROBE}\"\nevents = [\"Stop\"]\nrequires = [\"a\"]\n"
    ));
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1));
    assert!(
        check
            .stderr()
            .contains("`requires` forms a cycle: a -> b -> a"),
        "{}",
        check.stderr()
    );
}

#[test]
fn state_commands_round_trip() {
    let project = Project::new();
    let scope = ["--session", "s1", "--guardrail", "g"];
    // `set` and `delete` are a person's, at a terminal.
    let state = |args: &[&str]| {
        let mut all = vec!["state"];
        all.extend_from_slice(args);
        all.extend_from_slice(&scope);
        if matches!(args[0], "set" | "delete") {
            let run = project.at_terminal(&all, None);
            // What a terminal shows goes to one stream: keep stderr's lines there.
            let printed = run.stdout().replace("\r\n", "\n");
            let (out, err): (Vec<&str>, Vec<&str>) = printed
                .lines()
                .filter(|l| !l.contains(" to confirm: "))
                .partition(|l| !l.starts_with("sandrail: "));
            return Run(std::process::Output {
                status: run.0.status,
                stdout: out.join("\n").into_bytes(),
                stderr: err.join("\n").into_bytes(),
            });
        }
        project.run(&all)
    };
    assert!(state(&["set", "seen", "3"]).ok());
    assert!(state(&["set", "tag:a", "1:u"]).ok());
    assert_eq!(state(&["get", "seen"]).stdout(), "3\n");
    assert_eq!(
        state(&["list"]).stdout(),
        "{\"key\":\"seen\",\"value\":\"3\"}\n{\"key\":\"tag:a\",\"value\":\"1:u\"}\n"
    );
    assert_eq!(
        state(&["list", "tag:"]).stdout(),
        "{\"key\":\"tag:a\",\"value\":\"1:u\"}\n"
    );
    assert!(state(&["delete", "seen"]).ok());
    let missing = state(&["get", "seen"]);
    assert_eq!(missing.code(), Some(1));
    assert!(
        missing.stderr().contains("no key 'seen'"),
        "{}",
        missing.stderr()
    );
    let missing = state(&["delete", "seen"]);
    assert_eq!(missing.code(), Some(1));
    // Limits apply to the operator too.
    let long = "k".repeat(1025);
    let run = state(&["set", &long, "v"]);
    assert_eq!(run.code(), Some(1));
    assert!(
        run.stderr().contains("key is longer than 1024 bytes"),
        "{}",
        run.stderr()
    );
    // Another session sees none of it.
    let other = project.run(&["state", "list", "--session", "s2", "--guardrail", "g"]);
    assert_eq!(other.stdout(), "");
}
