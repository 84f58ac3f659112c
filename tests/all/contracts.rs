//! The bundled `contracts` guardrail: rules in CEL over the facts, refusing what
//! breaks them and never passing on a field that is absent; and `check-config`
//! reporting, through the `configure` export, each rule that does not parse or
//! reads an unknown variable, by name and position.

use serde_json::json;

use crate::support::*;

/// A config with one contracts entry on PreToolUse and Stop, holding `rules`
/// (each a `[[guardrail.config.rules]]` table, as TOML text).
fn contracts(rules: &[&str]) -> String {
    let mut text = String::from(
        "[[guardrail]]\nname = \"contracts\"\nsource = \"builtin:contracts\"\nevents = [\"PreToolUse\", \"Stop\"]\n",
    );
    for rule in rules {
        text.push_str("\n[[guardrail.config.rules]]\n");
        text.push_str(rule);
        text.push('\n');
    }
    text
}

const NO_DESTRUCTIVE: &str = r#"name = "no-destructive"
when = "tool.name == 'Bash'"
require = "!tool.is_destructive"
message = "{rule}: {tool.name} would destroy work ({tool.destructive_reason}); approved: {platform.approved}""#;

/// `sandrail check-config`, which must fail (exit 1).
fn failed_check(project: &Project) -> Run {
    let check = project.run(&["check-config"]);
    assert_eq!(
        check.code(),
        Some(1),
        "{}{}",
        check.stdout(),
        check.stderr()
    );
    check
}

fn stop(session: &str) -> Vec<u8> {
    payload(
        "Stop",
        session,
        json!({"stop_hook_active": false, "last_assistant_message": "Done."}),
    )
}

#[test]
fn a_rule_over_tool_facts_refuses_a_force_push_and_passes_a_safe_command() {
    let project = Project::new();
    project.config(&contracts(&[NO_DESTRUCTIVE]));
    let check = project.run(&["check-config"]);
    assert!(check.ok(), "{}{}", check.stdout(), check.stderr());
    assert!(
        check
            .stdout()
            .starts_with("ok     contracts (builtin:contracts, sha256 "),
        "{}",
        check.stdout()
    );

    // Placeholders render: strings unquoted, an absent fact as (absent).
    assert_eq!(
        project
            .hook(&bash("sess-c", "git push --force origin main"))
            .deny_reason()
            .as_deref(),
        Some(
            "[contracts/no-destructive] no-destructive: Bash would destroy work (force-push); approved: (absent)"
        )
    );
    project
        .hook(&bash("sess-c", "git status && cargo test"))
        .assert_silent();
    // The rule's guard reads the tool; a Stop has none, so the rule is silent.
    project.hook(&stop("sess-c")).assert_silent();
    // A Write is not a Bash call: the guard does not hold.
    project
        .hook(&write("sess-c", "/home/dev/project/a.rs"))
        .assert_silent();
}

#[test]
fn a_rule_over_an_absent_field_is_refused_naming_the_field() {
    let project = Project::new();
    project.config(&contracts(&[r#"name = "approved"
require = "platform.approved == true""#]));
    let expected =
        "[contracts/approved] approved: platform.approved is absent, so the rule cannot hold";
    assert_eq!(
        project.hook(&bash("sess-a", "ls")).deny_reason().as_deref(),
        Some(expected)
    );
    // At Stop the same rule (no guard) refuses the stop, with the same words.
    let answer = project.hook(&stop("sess-a")).answer();
    assert_eq!(answer["decision"], "block");
    assert_eq!(answer["reason"], expected);
}

#[test]
fn the_first_broken_rule_in_config_order_is_reported() {
    let project = Project::new();
    project.config(&contracts(&[
        r#"name = "holds"
require = "tool.name == 'Bash'""#,
        r#"name = "first"
when = "has(tool.name)"
require = "tool.name != 'Bash'""#,
        r#"name = "second"
require = "false""#,
    ]));
    assert_eq!(
        project.hook(&bash("sess-o", "ls")).deny_reason().as_deref(),
        Some("[contracts/first] Contract \"first\" does not hold: tool.name != 'Bash'")
    );
}

#[test]
fn check_config_reports_a_rule_that_does_not_parse_by_name_and_position() {
    let project = Project::new();
    project.config(&contracts(&[
        NO_DESTRUCTIVE,
        r#"name = "broken"
require = "tool.name ==""#,
    ]));
    let check = failed_check(&project);
    assert!(
        check
            .stdout()
            .contains("error  contracts: rule broken: require: line 1, column 13: Syntax error: "),
        "{}",
        check.stdout()
    );
    assert!(
        check.stderr().contains("1 problem(s) among 1 guardrails"),
        "{}",
        check.stderr()
    );

    // The rules that compile still judge; the broken one is named on stderr.
    let run = project.hook(&bash("sess-b", "git push -f origin main"));
    assert_eq!(
        run.deny_reason().as_deref(),
        Some(
            "[contracts/no-destructive] no-destructive: Bash would destroy work (force-push); approved: (absent)"
        )
    );
    assert!(
        run.stderr()
            .contains("rule broken: require: line 1, column 13"),
        "{}",
        run.stderr()
    );
}

#[test]
fn check_config_reports_unknown_variables_functions_and_keys() {
    let project = Project::new();
    project.config(&contracts(&[
        r#"name = "typo"
when = "tool.name == 'Bash'"
require = """
[1].all(x, x > 0)
  && sesion.files_written < 3""""#,
        r#"name = "fn"
require = "sizee(tool.name) > 0""#,
        r#"name = "keys"
require = "true"
severity = "high""#,
        r#"when = "true"
require = "true""#,
    ]));
    let check = failed_check(&project);
    let out = check.stdout();
    for line in [
        "error  contracts: rule typo: require: line 2, column 6: unknown variable `sesion`: the facts are tool, session, case, platform, env, mandate",
        "error  contracts: rule fn: require: line 1, column 1: unknown function `sizee`",
        "error  contracts: rule keys: unknown key `severity`: a rule takes name, when, require and message",
        "error  contracts: rule #4: the rule has no `name`",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "missing {line:?} in:\n{out}"
        );
    }
}

#[test]
fn check_config_says_which_state_costing_facts_the_rules_read() {
    let project = Project::new();
    project.config(&contracts(&[
        NO_DESTRUCTIVE,
        r#"name = "few-writes"
when = "case.present"
require = "session.files_written < 10""#,
    ]));
    let check = project.run(&["check-config"]);
    assert!(check.ok(), "{}{}", check.stdout(), check.stderr());
    assert!(
        check.stdout().contains(", reads case and session facts)"),
        "{}",
        check.stdout()
    );
}

/// A rule reading a field the facts never have finds it absent at every event,
/// and absent never passes: every Bash call would be refused. `check-config`
/// names each such path, with the field meant, before the first event; and the
/// mandate's own limits and markers are fields too.
#[test]
fn check_config_reports_fields_the_facts_do_not_have() {
    let project = Project::new();
    std::fs::write(
        project.dir().join("mandate.yaml"),
        "case_root: cases\nmarkers:\n  evidence: \"evidence/*.pdf\"\nlimits:\n  max_files_written: 3\n",
    )
    .expect("write the mandate");
    let rules = contracts(&[
        r#"name = "no-force"
when = "tool.name == 'Bash'"
require = "!tool.comand.contains('--force')""#,
        r#"name = "few-writes"
when = "tool.is_write && case.evidence_count > 0"
require = "session.file_written < mandate.max_file_written"
message = "{rule}: at most {mandate.max_files_written}, approved: {platform.approved}""#,
    ]);
    project.config(&format!(
        "[settings]\nmandate = \"mandate.yaml\"\n\n{rules}"
    ));
    let check = failed_check(&project);
    let out = check.stdout();
    for line in [
        "error  contracts: `tool.comand` is no fact: `tool` has no field `comand` (did you mean `command`?); a rule reading it can never hold",
        "error  contracts: `session.file_written` is no fact: `session` has no field `file_written` (did you mean `files_written`?); a rule reading it can never hold",
        // A near miss of a field the mandate sets is a misspelling.
        "error  contracts: `mandate.max_file_written` is no fact: `mandate` has no field `max_file_written` (did you mean `max_files_written`?); a rule reading it can never hold",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "missing {line:?} in:\n{out}"
        );
    }
    assert_eq!(
        out.lines().filter(|l| l.starts_with("error")).count(),
        3,
        "{out}"
    );
    // What the check said, the hook would have done to every Bash call.
    let run = project.hook(&bash("s1", "ls"));
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.contains("tool.comand is absent")),
        "{}",
        run.stdout()
    );
    // Spelt right, the config is valid and the call passes.
    project.reconfigure(&format!(
        "[settings]\nmandate = \"mandate.yaml\"\n\n{}",
        rules
            .replace("tool.comand", "tool.command")
            .replace("file_written", "files_written")
    ));
    let check = project.run(&["check-config"]);
    assert!(check.ok(), "{}{}", check.stdout(), check.stderr());
    project.hook(&bash("s2", "ls")).assert_silent();
    // Without a mandate, `mandate` is empty: the check says to name one.
    project.reconfigure(
        &rules
            .replace("tool.comand", "tool.command")
            .replace("file_written", "files_written"),
    );
    let out = failed_check(&project).stdout();
    assert!(
        out.contains("`mandate.max_files_written` is no fact: no mandate is configured"),
        "{out}"
    );
    assert!(out.contains("`case.evidence_count` is no fact"), "{out}");
}

/// A rule over a mandate field the mandate does not set is a valid rule that
/// fails closed until the mandate sets it: `check-config` warns and passes, and
/// the hook refuses what the rule governs; set in the mandate, the rule holds.
#[test]
fn a_rule_over_a_mandate_field_not_set_yet_is_a_warning_and_fails_closed() {
    let project = Project::new();
    std::fs::write(
        project.dir().join("mandate.yaml"),
        "id: task-1\nlimits:\n  max_files_written: 3\n",
    )
    .expect("write the mandate");
    let rules = contracts(&[r#"name = "ticketed"
when = "tool.name == 'Bash'"
require = "mandate.ticket_id != ''""#]);
    project.config(&format!(
        "[settings]\nmandate = \"mandate.yaml\"\n\n{rules}"
    ));
    let check = project.run(&["check-config"]);
    assert!(check.ok(), "{}{}", check.stdout(), check.stderr());
    assert!(
        check
            .stdout()
            .lines()
            .any(|l| l.starts_with("warn   contracts: `mandate.ticket_id`")
                && l.ends_with("a `when` over it never applies)")),
        "{}",
        check.stdout()
    );
    assert!(project.doctor_finds("config", "warning", "mandate.ticket_id"));
    assert!(project.hook(&bash("s1", "ls")).deny_reason().is_some());
    std::fs::write(
        project.dir().join("mandate.yaml"),
        "id: task-1\nlimits:\n  max_files_written: 3\n  ticket_id: ENG-42\n",
    )
    .expect("write the mandate");
    project.trust();
    project.hook(&bash("s2", "ls")).assert_silent();
}

/// The seed's contract: `session.files_written < mandate.max_files_written` with
/// a limit of 3. Three writes pass, the fourth and fifth are refused, and the
/// refused ones do not advance the count. Nothing declares `facts = ["session"]`:
/// the contracts guardrail's rules do, through its `configure` answer.
#[test]
fn the_seeds_files_written_contract_holds_the_mandates_limit() {
    let project = Project::new();
    std::fs::write(
        project.dir().join("mandate.yaml"),
        "id: docs-task\nlimits:\n  max_files_written: 3\n",
    )
    .expect("write the mandate");
    project.config(&format!(
        "[settings]\nmandate = \"mandate.yaml\"\n\n{}",
        contracts(&[r#"name = "max-files-written"
when = "tool.is_write"
require = "session.files_written < mandate.max_files_written"
message = "This task may write at most {mandate.max_files_written} files.""#])
    ));
    let outcomes: Vec<Option<String>> = (1..=5)
        .map(|n| {
            let run = project.hook(&write("sess-seed", &format!("/home/dev/project/doc{n}.md")));
            // An allowed write is silent: no answer at all.
            (!run.stdout().trim().is_empty())
                .then(|| run.deny_reason())
                .flatten()
        })
        .collect();
    assert_eq!(outcomes[..3], [None, None, None], "{outcomes:?}");
    for refused in &outcomes[3..] {
        assert_eq!(
            refused.as_deref(),
            Some("[contracts/max-files-written] This task may write at most 3 files.")
        );
    }
    // Reads and commands pass the rule (its `when` does not hold) and count as calls.
    project.hook(&bash("sess-seed", "ls")).assert_silent();
    let facts = project.session_facts("sess-seed");
    assert_eq!(facts["session"]["files_written"], json!(3), "{facts:#}");
    assert_eq!(facts["session"]["tool_calls"], json!(4), "{facts:#}");
}

#[test]
fn a_contract_over_session_facts_without_the_state_fails_closed() {
    let project = Project::new();
    // No mandate: `mandate.max_files_written` is absent, so the rule cannot hold.
    project.config(&contracts(&[r#"name = "max-files-written"
when = "tool.is_write"
require = "session.files_written < mandate.max_files_written""#]));
    let refused = project
        .hook(&write("sess-nomandate", "/home/dev/project/a.md"))
        .deny_reason()
        .expect("refused");
    assert!(
        refused.contains("mandate.max_files_written is absent"),
        "{refused}"
    );
}
