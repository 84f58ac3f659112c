//! Keyspace isolation: a guardrail reaches its own keys in its own session, and
//! another guardrail's only read-only and only when it declared it in `requires`.

use crate::support::*;

#[test]
fn list_owner_on_an_undeclared_owner_is_an_error_not_a_trap() {
    let project = Project::new();
    project.reconfigure(&probe_config(&[
        (
            "owner",
            "[guardrail.config]\naction = \"write\"\nkey = \"secret\"\nvalue = \"42\"\n",
        ),
        (
            "snoop",
            "[guardrail.config]\naction = \"list-owner\"\nowner = \"owner\"\n",
        ),
    ]));
    let context = project.hook(&bash("sess-iso", "ls")).context();
    assert!(
        context.contains(
            "[snoop] list-owner error: 'owner' is not listed in this guardrail's `requires`"
        ),
        "{context}"
    );
}

#[test]
fn list_owner_on_a_required_owner_reads_its_entries() {
    let project = Project::new();
    // The judge comes first in the file; `requires` runs the recorder before it.
    project.reconfigure(&probe_config(&[
        ("judge", "requires = [\"recorder\"]\n[guardrail.config]\naction = \"list-owner\"\nowner = \"recorder\"\n"),
        ("recorder", "[guardrail.config]\naction = \"write\"\nkey = \"tag:research\"\nvalue = \"1:u\"\n"),
    ]));
    let context = project.hook(&bash("sess-iso", "ls")).context();
    // The recorder ran first (requires orders it) and its write is visible.
    assert!(context.contains("[judge] owner entries: 1"), "{context}");

    // The CLI shows what the judge may read, and refuses what it may not.
    let run = project.run(&[
        "state",
        "list",
        "--session",
        "sess-iso",
        "--guardrail",
        "judge",
        "--owner",
        "recorder",
    ]);
    assert!(run.ok(), "{}", run.stderr());
    assert_eq!(
        run.stdout().trim(),
        r#"{"key":"tag:research","value":"1:u"}"#
    );
    let run = project.run(&[
        "state",
        "list",
        "--session",
        "sess-iso",
        "--guardrail",
        "recorder",
        "--owner",
        "judge",
    ]);
    assert_eq!(run.code(), Some(1));
    assert!(
        run.stderr().contains("does not list 'judge' in `requires`"),
        "{}",
        run.stderr()
    );
}

#[test]
fn two_guardrails_writing_one_key_keep_their_own_values() {
    let project = Project::new();
    project.reconfigure(&probe_config(&[
        (
            "alpha",
            "[guardrail.config]\naction = \"write\"\nkey = \"shared\"\nvalue = \"from-alpha\"\n",
        ),
        (
            "beta",
            "[guardrail.config]\naction = \"write\"\nkey = \"shared\"\nvalue = \"from-beta\"\n",
        ),
    ]));
    assert_eq!(
        project.hook(&bash("sess-iso", "ls")).context(),
        "[alpha] keyspace: shared=from-alpha\n[beta] keyspace: shared=from-beta"
    );
    assert_eq!(
        project.state("sess-iso", "alpha"),
        [("shared".to_owned(), "from-alpha".to_owned())]
    );
    assert_eq!(
        project.state("sess-iso", "beta"),
        [("shared".to_owned(), "from-beta".to_owned())]
    );
}

#[test]
fn two_sessions_never_see_each_others_keys() {
    let project = Project::new();
    project.reconfigure(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"write\"\nkey = \"mine\"\nvalue = \"v\"\n",
    )]));
    project.hook(&bash("sess-one", "ls")).answer();
    std::fs::write(
        project.dir().join("sandrail.toml"),
        probe_config(&[(
            "probe",
            "[guardrail.config]\naction = \"read\"\nkey = \"mine\"\n",
        )]),
    )
    .expect("config");
    project.trust();
    assert_eq!(
        project.hook(&bash("sess-one", "ls")).context(),
        "[probe] mine=Some(\"v\")"
    );
    assert_eq!(
        project.hook(&bash("sess-two", "ls")).context(),
        "[probe] mine=None"
    );
    assert!(project.state("sess-two", "probe").is_empty());
}
