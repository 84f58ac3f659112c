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

/// A checker of `ready` on Grep and a consumer of it on Write.
fn reader_and_consumer() -> String {
    format!(
        "{}{}",
        flagger("reader", "flag-check", "check = [\"ready\"]", "Grep"),
        flagger("writer", "flag-consume", "consume = [\"ready\"]", "Write")
    )
}

/// `sandrail flag set|clear`, confirmed by a person at a terminal: the
/// guardrails that check or consume the flag see the change at the session's
/// next event, and only in that session.
#[test]
fn a_person_sets_and_clears_a_flag_the_guardrails_see_it_at_the_next_event() {
    let project = Project::new();
    project.reconfigure(&reader_and_consumer());
    assert_eq!(
        project.hook(&grep("sess-person")).context(),
        "[reader] ready is set: false"
    );
    let set = project.at_terminal(&["flag", "set", "ready", "--session", "sess-person"], None);
    assert!(set.ok(), "{}", set.stdout());
    assert!(
        set.stdout()
            .contains("This sets the flag 'ready' in session sess-person (checked by reader; consumed by writer)."),
        "{}",
        set.stdout()
    );
    assert!(
        set.stdout()
            .contains("Set flag 'ready' in session sess-person at "),
        "{}",
        set.stdout()
    );
    assert_eq!(
        project.hook(&grep("sess-person")).context(),
        "[reader] ready is set: true"
    );
    let status = project.run(&["status", "--json", "--session", "sess-person"]);
    let status: serde_json::Value = serde_json::from_str(&status.stdout()).expect("status");
    assert_eq!(status["flags"][0]["name"], "ready");
    // Another session does not see it.
    assert_eq!(
        project.hook(&grep("sess-other")).context(),
        "[reader] ready is set: false"
    );
    let clear = project.at_terminal(
        &["flag", "clear", "ready", "--session", "sess-person"],
        None,
    );
    assert!(clear.ok(), "{}", clear.stdout());
    assert!(
        clear
            .stdout()
            .contains("Cleared flag 'ready' in session sess-person."),
        "{}",
        clear.stdout()
    );
    assert_eq!(
        project.hook(&grep("sess-person")).context(),
        "[reader] ready is set: false"
    );
    // Set by a person, consumed by a guardrail like any other.
    assert!(
        project
            .at_terminal(&["flag", "set", "ready", "--session", "sess-person"], None)
            .ok()
    );
    let write_file = write("sess-person", "/home/dev/project/a.rs");
    assert_eq!(
        project.hook(&write_file).context(),
        "[writer] ready consumed: true"
    );
    assert_eq!(
        project.hook(&write_file).context(),
        "[writer] ready consumed: false"
    );
    // What would change nothing is said, and nothing is asked.
    let again = project.at_terminal(
        &["flag", "clear", "ready", "--session", "sess-person"],
        None,
    );
    assert_eq!(again.code(), Some(1), "{}", again.stdout());
    assert!(
        again
            .stdout()
            .contains("flag 'ready' is not set in session sess-person"),
        "{}",
        again.stdout()
    );
    let unknown = project.at_terminal(&["flag", "set", "redy", "--session", "sess-person"], None);
    assert_eq!(unknown.code(), Some(1), "{}", unknown.stdout());
    assert!(
        unknown
            .stdout()
            .contains("sets, checks or consumes a flag 'redy'")
            && !unknown.stdout().contains("to confirm"),
        "{}",
        unknown.stdout()
    );
    let unseen = project.at_terminal(&["flag", "set", "ready", "--session", "never-seen"], None);
    assert_eq!(unseen.code(), Some(1), "{}", unseen.stdout());
    assert!(
        unseen.stdout().contains("no session 'never-seen'"),
        "{}",
        unseen.stdout()
    );
}

/// The agent runs its commands on pipes: `flag set` and `flag clear` are turned
/// away there (exit 2, saying why) and change nothing, and a code typed wrong
/// at a terminal changes nothing either.
#[test]
fn flag_commands_without_a_person_are_refused_and_change_nothing() {
    let project = Project::new();
    project.reconfigure(&reader_and_consumer());
    assert_eq!(
        project.hook(&grep("sess-piped")).context(),
        "[reader] ready is set: false"
    );
    let set = project.run(&["flag", "set", "ready", "--session", "sess-piped"]);
    assert_eq!(set.code(), Some(2), "{}", set.stderr());
    assert!(
        set.stderr().contains(
            "`sandrail flag set` sets the flag 'ready' in session sess-piped (checked by reader; consumed by writer), so it needs a person at a terminal"
        ) && set.stderr().contains("Nothing was changed."),
        "{}",
        set.stderr()
    );
    assert_eq!(set.stdout(), "");
    assert_eq!(
        project.hook(&grep("sess-piped")).context(),
        "[reader] ready is set: false"
    );
    let wrong = project.at_terminal(
        &["flag", "set", "ready", "--session", "sess-piped"],
        Some("not-the-code"),
    );
    assert_eq!(wrong.code(), Some(1), "{}", wrong.stdout());
    assert_eq!(
        project.hook(&grep("sess-piped")).context(),
        "[reader] ready is set: false"
    );
    assert!(
        project
            .at_terminal(&["flag", "set", "ready", "--session", "sess-piped"], None)
            .ok()
    );
    let clear = project.run(&["flag", "clear", "ready", "--session", "sess-piped"]);
    assert_eq!(clear.code(), Some(2), "{}", clear.stderr());
    assert!(
        clear
            .stderr()
            .contains("`sandrail flag clear` clears the flag 'ready'")
            && clear.stderr().contains("needs a person at a terminal"),
        "{}",
        clear.stderr()
    );
    assert_eq!(
        project.hook(&grep("sess-piped")).context(),
        "[reader] ready is set: true"
    );
    // Asked of the hook, the command itself is refused to the agent.
    let asked = project.hook(&bash(
        "sess-piped",
        "sandrail flag clear ready --session sess-piped",
    ));
    assert!(
        asked
            .deny_reason()
            .is_some_and(|r| r.contains("sandrail refused `sandrail flag clear`")),
        "{}",
        asked.stdout()
    );
}
