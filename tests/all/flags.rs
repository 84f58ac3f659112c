//! Flags: set by one guardrail, checked or consumed by another, only as granted;
//! consuming is race-free; and a guardrail built against the 0.1.0 contract still
//! loads and judges under the host that serves 0.1.3.

use std::path::Path;

use crate::support::*;

/// A probe entry with an action on the flag `ready` and the given grants.
fn flagger(name: &str, action: &str, grants: &str, tool: &str) -> String {
    format!(
        "[[guardrail]]\nname = \"{name}\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"{tool}\"\n[guardrail.flags]\n{grants}\n[guardrail.config]\naction = \"{action}\"\nkey = \"ready\"\n"
    )
}

fn grep(session: &str) -> Vec<u8> {
    payload(
        "PreToolUse",
        session,
        serde_json::json!({"tool_name": "Grep", "tool_input": {"pattern": "fn main"}}),
    )
}

#[test]
fn one_guardrail_sets_a_flag_another_consumes_it() {
    let project = Project::new();
    project.reconfigure(&format!(
        "{}{}",
        flagger("searcher", "flag-set", "set = [\"ready\"]", "Grep"),
        flagger("writer", "flag-consume", "consume = [\"ready\"]", "Write")
    ));
    let write_file = write("sess-flags", "/home/dev/project/a.rs");
    assert_eq!(
        project.hook(&write_file).context(),
        "[writer] ready consumed: false"
    );
    assert_eq!(
        project.hook(&grep("sess-flags")).context(),
        "[searcher] set ready"
    );
    assert_eq!(
        project.hook(&write_file).context(),
        "[writer] ready consumed: true"
    );
    assert_eq!(
        project.hook(&write_file).context(),
        "[writer] ready consumed: false"
    );
    // Flags are per session.
    project.hook(&grep("sess-flags"));
    assert_eq!(
        project
            .hook(&write("other", "/home/dev/project/a.rs"))
            .context(),
        "[writer] ready consumed: false"
    );
    let list = project.run(&["list"]);
    assert!(
        list.stdout()
            .contains("ready: set by searcher; consumed by writer; checked by nobody"),
        "{}",
        list.stdout()
    );
    // `status` shows the flags set in a session, and when.
    let mut cmd = project.cmd();
    cmd.env("SANDRAIL_NOW", "2026-11-30T10:00:00Z");
    project.hook_with(cmd, &grep("sess-shown"));
    let status = project.run(&["status", "--json", "--session", "sess-shown"]);
    let status: serde_json::Value = serde_json::from_str(&status.stdout()).expect("status");
    assert_eq!(
        status["flags"],
        serde_json::json!([{"name": "ready", "set_at": "2026-11-30T10:00:00Z"}])
    );
    let text = project.run(&["status", "--session", "sess-shown"]).stdout();
    assert!(
        text.contains("ready") && text.contains("set 2026-11-30T10:00:00Z"),
        "{text}"
    );
    let none = project.run(&["status", "--session", "other"]).stdout();
    assert!(none.contains("flags: none set"), "{none}");
}

#[test]
fn a_guardrail_touches_only_the_flags_it_is_granted() {
    let project = Project::new();
    project.reconfigure(&format!(
        "{}{}",
        flagger("checker", "flag-check", "check = [\"ready\"]", "Grep"),
        flagger("thief", "flag-consume", "check = [\"ready\"]", "Write")
    ));
    assert_eq!(
        project.hook(&grep("s")).context(),
        "[checker] ready is set: false"
    );
    assert_eq!(
        project
            .hook(&write("s", "/home/dev/project/a.rs"))
            .context(),
        "[thief] flag error: this guardrail's entry does not grant it to consume 'ready'"
    );
    let bad = project
        .config(&flagger("bad", "flag-set", "set = [\"two words\"]", "Grep"))
        .run(&["check-config"]);
    assert_eq!(bad.code(), Some(1));
    assert!(
        bad.stderr().contains("'two words' is not a flag name"),
        "{}",
        bad.stderr()
    );
}

#[test]
fn of_two_racing_consumers_exactly_one_sees_the_flag() {
    let project = Project::alone();
    project.reconfigure(&format!(
        "{}{}",
        flagger("searcher", "flag-set", "set = [\"ready\"]", "Grep"),
        flagger("writer", "flag-consume", "consume = [\"ready\"]", "Write")
    ));
    for round in 0..10 {
        let session = format!("race-{round}");
        project.hook(&grep(&session));
        let write_file = write(&session, "/home/dev/project/a.rs");
        let runs = crate::concurrency::hooks_at_once_on(&project, &[&write_file, &write_file]);
        let saw: Vec<bool> = runs
            .iter()
            .map(|run| run.context() == "[writer] ready consumed: true")
            .collect();
        assert_eq!(
            saw.iter().filter(|s| **s).count(),
            1,
            "round {round}: {saw:?}"
        );
    }
}

#[test]
fn flag_setters_still_run_when_a_block_cuts_the_chain() {
    let project = Project::new();
    project.reconfigure(&format!(
        "[[guardrail]]\nname = \"blocker\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\naction = \"deny\"\nvalue = \"no\"\n{}{}{}",
        probe_config(&[("counter", "[guardrail.config]\naction = \"count\"\n")])
            .replace("\"SessionStart\", \"UserPromptSubmit\", \"PreToolUse\", \"PostToolUse\", \"Stop\", \"SubagentStop\", \"PreCompact\", \"SessionEnd\"", "\"PreToolUse\""),
        flagger("searcher", "flag-set", "set = [\"ready\"]", "Grep"),
        flagger("reader", "flag-check", "check = [\"ready\"]", "Read")
    ));
    let run = project.hook(&grep("sess-cut"));
    assert_eq!(run.deny_reason().as_deref(), Some("[blocker] no"));
    // The counter after the block did not count; the flag setter did set.
    assert!(project.state("sess-cut", "counter").is_empty());
    let read = payload(
        "PreToolUse",
        "sess-cut",
        serde_json::json!({"tool_name": "Read", "tool_input": {"file_path": "/a"}}),
    );
    assert_eq!(
        project.hook(&read).deny_reason().as_deref(),
        Some("[blocker] no")
    );
    let mut only_reader = String::new();
    only_reader.push_str(&flagger(
        "reader",
        "flag-check",
        "check = [\"ready\"]",
        "Read",
    ));
    project.reconfigure(&only_reader);
    assert_eq!(project.hook(&read).context(), "[reader] ready is set: true");
}

/// The probe as it was built against the 0.1.0 contract.
fn old_probe() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/probe-0.1.0.wasm")
        .display()
        .to_string()
}

#[test]
fn a_guardrail_built_against_0_1_0_still_loads_and_judges() {
    let project = Project::new();
    let old = old_probe();
    project.reconfigure(&format!(
        "[[guardrail]]\nname = \"old-counter\"\nsource = \"{old}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash\"\n[guardrail.config]\naction = \"count\"\n\
         [[guardrail]]\nname = \"old-rule\"\nsource = \"{old}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Write\"\n[guardrail.enforcement]\ndefault_level = \"nudge\"\nescalation = [{{after = 2, level = \"hard_block\"}}]\n[guardrail.config]\naction = \"violation\"\nkey = \"r\"\nvalue = \"old but judged\"\n"
    ));
    let check = project.run(&["check-config"]);
    assert!(check.ok(), "{}{}", check.stdout(), check.stderr());
    assert_eq!(
        project.hook(&bash("sess-old", "ls")).context(),
        "[old-counter] n=1"
    );
    assert_eq!(
        project.hook(&bash("sess-old", "ls")).context(),
        "[old-counter] n=2"
    );
    let write_file = write("sess-old", "/home/dev/project/a.rs");
    assert_eq!(
        project.hook(&write_file).context(),
        "[old-rule/r] old but judged"
    );
    assert_eq!(
        project.hook(&write_file).deny_reason().as_deref(),
        Some("[old-rule/r] old but judged")
    );
}
