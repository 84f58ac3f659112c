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

/// A command asked about something that is not there says so plainly: a session
/// never seen is an error for `status`; `receipts` tells a filter that matches
/// nothing from an empty file; `cycle` says when the config keeps no cycle.
#[test]
fn commands_say_what_they_did_not_find() {
    let project = Project::new();
    project.hook(&bash("seen", "ls"));
    let status = project.run(&["status", "--session", "never-seen"]);
    assert_eq!(status.code(), Some(1), "{}", status.stdout());
    assert!(
        status.stderr().contains("no session 'never-seen'"),
        "{}",
        status.stderr()
    );
    assert!(project.run(&["status", "--session", "seen"]).ok());

    let receipts = project.run(&["receipts", "--session", "never-seen"]);
    assert!(receipts.ok(), "{}", receipts.stderr());
    assert!(
        receipts.stdout().contains("matches session 'never-seen'"),
        "{}",
        receipts.stdout()
    );

    // The embedded default has no context and nothing on Stop.
    let cycle = project.run(&["cycle", "--session", "seen"]);
    assert!(cycle.ok(), "{}", cycle.stderr());
    assert!(
        cycle.stdout().contains("the config keeps no cycle"),
        "{}",
        cycle.stdout()
    );
}

/// The README's `.claude/settings.local.json` snippet registers `sandrail hook` by path for
/// every event sandrail handles, ConfigChange included (self-protection needs it),
/// so a person who copies it gets all of sandrail.
#[test]
fn the_readmes_settings_snippet_registers_every_event() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README");
    let start = readme
        .find("```json\n{\n  \"hooks\"")
        .expect("the settings snippet");
    let body = &readme[start + "```json\n".len()..];
    let snippet: Value =
        serde_json::from_str(&body[..body.find("```").expect("its end")]).expect("JSON");
    for event in [
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
        "Stop",
        "SubagentStop",
        "SessionStart",
        "SessionEnd",
        "PreCompact",
        "ConfigChange",
    ] {
        assert_eq!(
            snippet["hooks"][event][0]["hooks"][0]["command"], "/usr/local/bin/sandrail hook",
            "{event} is not registered"
        );
    }
}

/// Every option of every subcommand (nested ones included) says what it does in
/// `-h`: an option without a word of help is a guess for the person using it.
#[test]
fn every_flag_of_every_subcommand_has_help() {
    let project = Project::new();
    let commands_of = |args: &[&str]| -> Vec<String> {
        let mut args = args.to_vec();
        args.push("-h");
        let help = project.run(&args).stdout();
        help.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| *c != "help")
            .map(str::to_owned)
            .collect()
    };
    let mut paths: Vec<Vec<String>> = commands_of(&[]).into_iter().map(|c| vec![c]).collect();
    let mut undocumented = Vec::new();
    let mut seen = 0;
    while let Some(path) = paths.pop() {
        seen += 1;
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        for sub in commands_of(&words) {
            let mut deeper = path.clone();
            deeper.push(sub);
            paths.push(deeper);
        }
        let mut args = words.clone();
        args.push("-h");
        let help = project.run(&args).stdout();
        for line in help
            .lines()
            .skip_while(|l| !l.starts_with("Options:"))
            .skip(1)
            .filter(|l| l.trim_start().starts_with('-'))
        {
            // `  --flag <VALUE>  What it does`: two spaces part the flag from its help.
            // (`[possible values: …]` alone is not help.)
            let has_text = line
                .trim()
                .split("  ")
                .filter(|p| !p.trim().is_empty() && !p.trim().starts_with('['))
                .count()
                > 1;
            if !has_text {
                undocumented.push(format!("sandrail {}: {}", words.join(" "), line.trim()));
            }
        }
    }
    assert!(seen > 15, "only {seen} subcommands were found");
    assert!(undocumented.is_empty(), "{}", undocumented.join("\n"));
}

/// `check-config` catches what would fail at run time: a misspelt key of a bundled
/// guardrail is reported by its own `configure` check, naming the key, not found
/// by a failure on every event.
#[test]
fn check_config_reports_a_misspelt_key_of_a_bundled_guardrail() {
    let project = Project::new();
    project.config(
        "[[guardrail]]\nname = \"budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\nmatcher = \"Write\"\n[guardrail.config]\nlimt = 5\n",
    );
    let run = project.run(&["check-config"]);
    assert_eq!(run.code(), Some(1), "{}", run.stdout());
    assert!(
        run.stdout().contains("error  budget:") && run.stdout().contains("limt"),
        "{}",
        run.stdout()
    );
    project.config(
        "[[guardrail]]\nname = \"budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\nmatcher = \"Write\"\n[guardrail.config]\nlimit = 5\nwarn_at = 3\n",
    );
    assert!(project.run(&["check-config"]).ok());
    // dotforge's entry, with its key misspelt.
    project.config(
        "[[guardrail]]\nname = \"behavior\"\nsource = \"builtin:dotforge\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\nbehaviour = \"b.yaml\"\n",
    );
    let run = project.run(&["check-config"]);
    assert_eq!(run.code(), Some(1), "{}", run.stdout());
    assert!(
        run.stdout().contains("error  behavior:") && run.stdout().contains("behaviour"),
        "{}",
        run.stdout()
    );
}
