//! A session's life: last access, TTL purge (driven by `SANDRAIL_NOW`), counters
//! taken over after /clear, status, and switching guardrails off.

use serde_json::{Value, json};

use crate::support::*;

const COUNTING: &str = "[[guardrail]]\nname = \"counted\"\nsource = \"PROBE\"\nevents = [\"SessionStart\", \"PreToolUse\"]\n[guardrail.enforcement]\ndefault_level = \"nudge\"\nescalation = [{after = 3, level = \"warning\"}]\nnudge = \"{counter}\"\nwarning = \"{counter}!\"\n[guardrail.config]\naction = \"violation\"\nkey = \"r\"\nvalue = \"x\"\n";

fn counting(settings: &str) -> String {
    format!("{settings}{}", COUNTING.replace("PROBE", PROBE))
}

fn at(project: &Project, now: &str, payload: &[u8]) -> Run {
    project.hook_at(now, payload)
}

fn context(run: &Run) -> String {
    let answer = run.answer();
    answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn status(project: &Project, session: Option<&str>) -> Value {
    let mut args = vec!["status", "--json"];
    if let Some(session) = session {
        args.extend(["--session", session]);
    }
    let run = project.run(&args);
    assert!(run.ok(), "{}", run.stderr());
    serde_json::from_str(&run.stdout()).expect("status is JSON")
}

#[test]
fn an_idle_session_is_purged_after_its_ttl() {
    let project = Project::new();
    project.config(&counting(""));
    assert_eq!(
        context(&at(&project, "2026-11-01T10:00:00Z", &bash("old", "ls"))),
        "[counted/r] 1"
    );
    assert_eq!(
        context(&at(&project, "2026-11-01T10:00:01Z", &bash("old", "ls"))),
        "[counted/r] 2"
    );
    // Another session, 23 hours on: the first is idle but within its 24 hours.
    at(&project, "2026-11-02T09:00:01Z", &bash("other", "ls"));
    assert_eq!(
        status(&project, Some("old"))["guardrails"][0]["rules"][0]["counter"],
        2
    );
    // 25 hours after its last use it is forgotten, by whichever hook comes next.
    at(&project, "2026-11-02T11:00:02Z", &bash("other", "ls"));
    assert!(!project.session_db("old").exists());
    let forgotten = project.run(&["status", "--session", "old"]);
    assert_eq!(forgotten.code(), Some(1));
    assert!(
        forgotten.stderr().contains("no session 'old'")
            && forgotten.stderr().contains("forgotten after its TTL"),
        "{}",
        forgotten.stderr()
    );
    // Its next event starts it afresh.
    assert_eq!(
        context(&at(&project, "2026-11-02T11:00:03Z", &bash("old", "ls"))),
        "[counted/r] 1"
    );
}

#[test]
fn the_ttl_is_configurable_and_use_keeps_a_session() {
    let project = Project::new();
    project.config(&counting("[settings]\nsession_ttl_hours = 48\n"));
    at(&project, "2026-11-01T10:00:00Z", &bash("kept", "ls"));
    // Used every 40 hours: never idle for two days.
    for (i, time) in [
        "2026-11-03T02:00:00Z",
        "2026-11-04T18:00:00Z",
        "2026-11-06T10:00:00Z",
    ]
    .iter()
    .enumerate()
    {
        let run = at(&project, time, &bash("kept", "ls"));
        assert_eq!(
            context(&run),
            format!("[counted/r] {}", i + 2)
                .replace("3", "3!")
                .replace("4", "4!")
        );
    }
    at(&project, "2026-11-08T14:00:00Z", &bash("another", "ls"));
    assert!(!project.session_db("kept").exists(), "idle for 52 hours");
}

/// The hourly purge forgets every project's idle sessions, so a config cannot
/// shorten it below 24 hours: a config of the agent's, in a directory of its
/// own, would otherwise wipe other sessions' counters.
#[test]
fn no_config_purges_other_sessions_sooner_than_a_day() {
    let project = Project::new();
    project.config(&counting("[settings]\nsession_ttl_hours = 1\n"));
    at(&project, "2026-11-01T10:00:00Z", &bash("kept", "ls"));
    at(&project, "2026-11-01T14:00:00Z", &bash("another", "ls"));
    assert!(
        project.session_db("kept").exists(),
        "idle for 4 hours, kept"
    );
    at(&project, "2026-11-02T11:00:00Z", &bash("third", "ls"));
    assert!(!project.session_db("kept").exists(), "idle for 25 hours");
}

#[test]
fn after_clear_a_session_takes_over_the_counters_when_asked() {
    let start =
        |session: &str, source: &str| payload("SessionStart", session, json!({ "source": source }));
    // Without inherit_on, /clear starts from zero (the seed's escape hatch).
    let project = Project::new();
    project.config(&counting(""));
    for _ in 0..3 {
        project.hook(&bash("before-clear", "ls"));
    }
    project.hook(&start("after-clear", "clear"));
    // Only the SessionStart's own violation.
    assert_eq!(
        status(&project, Some("after-clear"))["guardrails"][0]["rules"][0]["counter"],
        1
    );
    // With it, the new session goes on from where the old one stood.
    let project = Project::new();
    project.config(&counting(
        "[settings]\ninherit_on = [\"clear\", \"compact\"]\n",
    ));
    for _ in 0..3 {
        project.hook(&bash("before-clear", "ls"));
    }
    let run = project.hook(&start("after-clear", "clear"));
    assert!(
        run.stderr().contains(
            "session after-clear continues before-clear (clear): took over 1 rule counters"
        ),
        "{}",
        run.stderr()
    );
    // The SessionStart itself violated once more: 4.
    let rules = &status(&project, Some("after-clear"))["guardrails"][0]["rules"][0];
    assert_eq!(rules["counter"], 4);
    assert_eq!(rules["level"], "warning");
    assert_eq!(
        context(&project.hook(&bash("after-clear", "ls"))),
        "[counted/r] 5!"
    );
    // A plain startup does not inherit.
    project.hook(&start("fresh", "startup"));
    assert_eq!(
        status(&project, Some("fresh"))["guardrails"][0]["rules"][0]["counter"],
        1
    );
}

#[test]
fn status_shows_each_rule_and_defaults_to_the_latest_session() {
    let project = Project::new();
    project.config(&counting(""));
    at(
        &project,
        "2026-11-30T09:00:00Z",
        &write("s1", "/home/dev/project/a.rs"),
    );
    at(&project, "2026-11-30T09:00:05Z", &bash("s2", "ls"));
    at(&project, "2026-11-30T09:00:06Z", &bash("s2", "ls"));
    let latest = status(&project, None);
    assert_eq!(latest["session"], "s2");
    assert_eq!(latest["last_access"], "2026-11-30T09:00:06Z");
    assert_eq!(
        latest["guardrails"][0],
        json!({
            "name": "counted",
            "enabled": true,
            "enabled_in_config": true,
            "switched_off_for_session": false,
            "escalates": true,
            "rules": [{
                "rule": "r",
                "counter": 2,
                "level": "nudge",
                "last_violation_at": "2026-11-30T09:00:06Z",
                "last_violation_tool": "Bash",
                "overrides": 0,
                "pending_block": false,
            }]
        })
    );
    let text = project.run(&["status", "--session", "s1"]);
    assert!(
        text.stdout().contains("counter 1")
            && text.stdout().contains("level nudge")
            && text.stdout().contains("last 2026-11-30T09:00:00Z (Write)"),
        "{}",
        text.stdout()
    );
}

#[test]
fn a_guardrail_switched_off_for_a_session_is_not_run_there() {
    let project = Project::new();
    project.config(&counting(""));
    // Only a person at a terminal switches a guardrail off for a running session.
    let refused = project.run(&["guardrail", "off", "counted", "--session", "quiet"]);
    assert_eq!(refused.code(), Some(2), "{}", refused.stderr());
    assert!(refused.stderr().contains("needs a person at a terminal"));
    let off = project.at_terminal(&["guardrail", "off", "counted", "--session", "quiet"], None);
    assert!(off.ok(), "{}", off.stdout());
    project.hook(&bash("quiet", "ls")).assert_silent();
    assert_eq!(context(&project.hook(&bash("loud", "ls"))), "[counted/r] 1");
    assert_eq!(
        status(&project, Some("quiet"))["guardrails"][0]["enabled"],
        false
    );
    assert!(
        project
            .run(&["guardrail", "on", "counted", "--session", "quiet"])
            .ok()
    );
    assert_eq!(
        context(&project.hook(&bash("quiet", "ls"))),
        "[counted/r] 1"
    );
    let unknown = project.run(&["guardrail", "off", "nope"]);
    assert_eq!(unknown.code(), Some(1));
    assert!(
        unknown.stderr().contains("no guardrail called 'nope'"),
        "{}",
        unknown.stderr()
    );
}

#[test]
fn a_guardrail_switched_off_in_the_config_keeps_the_file_as_written() {
    let project = Project::new();
    let text = format!(
        "# The team's rules.\n{}",
        counting("").replace("[guardrail.config]", "# why this one\n[guardrail.config]")
    );
    project.config(&text);
    assert!(project.run(&["guardrail", "off", "counted"]).ok());
    let edited = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("config");
    assert!(
        edited.starts_with("# The team's rules.\n") && edited.contains("# why this one"),
        "{edited}"
    );
    assert!(edited.contains("enabled = false"), "{edited}");
    project.trust();
    project.hook(&bash("s", "ls")).assert_silent();
    assert!(project.run(&["guardrail", "on", "counted"]).ok());
    let restored = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("config");
    assert_eq!(restored, text);
}

#[test]
fn switching_a_bundled_guardrail_off_writes_the_embedded_default_first() {
    let project = Project::new();
    let run = project.run(&["guardrail", "off", "session-budget"]);
    assert!(run.ok(), "{}", run.stderr());
    let written = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("config");
    assert!(
        written.contains("name = \"destructive-commands\""),
        "{written}"
    );
    assert!(written.contains("enabled = false"), "{written}");
    // The other bundled protection still holds.
    assert!(
        project
            .hook(&bash("s", "git push -f"))
            .deny_reason()
            .is_some()
    );
}

/// The policy copies a purged session ran from are removed with it, once no
/// session or project refers to them; the ones in force stay.
#[test]
fn a_purged_sessions_policy_copies_are_removed() {
    let project = Project::new();
    let first = counting("");
    project.config(&first);
    at(&project, "2027-01-01T10:00:00Z", &bash("old", "ls"));
    let blob = |text: &str| {
        project
            .state_dir()
            .join("policy/blobs")
            .join(sandrail::sha256_hex(text.as_bytes()))
    };
    assert!(blob(&first).is_file(), "the config in force is kept");
    // An added guardrail: a pure addition the next session takes.
    let second = format!(
        "{first}{}",
        COUNTING.replace("PROBE", PROBE).replace("counted", "more")
    );
    project.reconfigure(&second);
    at(&project, "2027-01-03T10:00:00Z", &bash("new", "ls"));
    at(&project, "2027-01-03T11:30:00Z", &bash("new", "ls"));
    assert!(!project.session_db("old").exists(), "idle for two days");
    assert!(!blob(&first).exists(), "no session or project refers to it");
    assert!(blob(&second).is_file(), "the policy in force stays");
}

/// A session resumed after its TTL starts clean — counters and flags gone — even
/// when the hourly purge ran just before it crossed the TTL (dotforge forgets an
/// expired session on its own next access, before judging).
#[test]
fn a_session_returning_after_its_ttl_starts_clean() {
    let project = Project::new();
    let flagger = |name: &str, action: &str, grants: &str, tool: &str| {
        format!(
            "[[guardrail]]\nname = \"{name}\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"{tool}\"\n[guardrail.flags]\n{grants}\n[guardrail.config]\naction = \"{action}\"\nkey = \"ready\"\n"
        )
    };
    project.reconfigure(&format!(
        "{}{}{}",
        counting(""),
        flagger("setter", "flag-set", "set = [\"ready\"]", "Grep"),
        flagger("checker", "flag-check", "check = [\"ready\"]", "Write")
    ));
    let grep = payload(
        "PreToolUse",
        "back",
        json!({"tool_name": "Grep", "tool_input": {"pattern": "x"}}),
    );
    at(&project, "2026-11-01T10:00:00Z", &grep);
    at(&project, "2026-11-01T10:00:01Z", &bash("back", "ls"));
    // Another session's hook runs the hourly purge while "back" is 23.5 h idle.
    at(&project, "2026-11-02T09:30:00Z", &bash("other", "ls"));
    assert!(project.session_db("back").exists());
    // "back" returns 24.5 h after its last use, within the hour after that purge.
    let returned = at(
        &project,
        "2026-11-02T10:30:01Z",
        &write("back", "/home/dev/project/a.rs"),
    );
    let told = returned.context();
    assert!(
        told.contains("[checker] ready is set: false") && told.contains("[counted/r] 1"),
        "{told}"
    );
    assert!(
        returned.stderr().contains("returned after 24 h unused"),
        "{}",
        returned.stderr()
    );
    // Within its TTL a session keeps them.
    at(&project, "2026-11-02T10:30:03Z", &grep);
    let kept = at(
        &project,
        "2026-11-03T10:00:00Z",
        &write("back", "/home/dev/project/a.rs"),
    )
    .context();
    assert!(
        kept.contains("[checker] ready is set: true") && kept.contains("[counted/r] 3"),
        "{kept}"
    );
}
