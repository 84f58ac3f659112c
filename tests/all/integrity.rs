//! `sandrail pin` and `sandrail.lock`: a component whose bytes changed after it was
//! pinned is not run, its failure policy decides, and `check-config` reports drift.

use crate::support::*;

/// The 0.1.0 probe: a valid component whose bytes differ from today's probe.
fn other_component() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/probe-0.1.0.wasm")
}

/// A project whose plugin is a copy of the probe at `plugins/probe.wasm`, denying
/// every Bash call, alongside a bundled guardrail.
fn pinned_project(on_error: &str) -> Project {
    let project = Project::new();
    let plugins = project.dir().join("plugins");
    std::fs::create_dir_all(&plugins).expect("mkdir");
    std::fs::copy(PROBE, plugins.join("probe.wasm")).expect("copy");
    project.reconfigure(&format!(
        r#"[[guardrail]]
name = "probe"
source = "plugins/probe.wasm"
events = ["PreToolUse"]
on_error = "{on_error}"
[guardrail.config]
action = "note"
value = "probe judged"

[[guardrail]]
name = "destructive-commands"
source = "builtin:destructive-commands"
events = ["PreToolUse"]
matcher = "Bash"
"#
    ));
    project
}

fn lock_text(project: &Project) -> String {
    std::fs::read_to_string(project.dir().join("sandrail.lock")).expect("lock")
}

#[test]
fn pin_writes_every_component_and_a_changed_one_is_not_run() {
    let project = pinned_project("deny");
    let probe_sha = sandrail::sha256_hex(&std::fs::read(PROBE).expect("probe"));
    let builtin_sha = sandrail::builtins::get_with_sha256("destructive-commands")
        .expect("builtin")
        .1
        .to_owned();

    let pin = project.run(&["pin"]);
    assert!(pin.ok(), "{}", pin.stderr());
    // Pinning changes what the agent is held to: a person accepts it.
    project.trust();
    assert!(
        pin.stdout()
            .contains(&format!("pinned  probe  {probe_sha}  (new)")),
        "{}",
        pin.stdout()
    );
    assert!(
        pin.stdout().contains("2 guardrails pinned"),
        "{}",
        pin.stdout()
    );
    let lock = lock_text(&project);
    assert!(
        lock.contains("[guardrail.probe]\nsource = \"plugins/probe.wasm\""),
        "{lock}"
    );
    assert!(
        lock.contains(&probe_sha) && lock.contains(&builtin_sha),
        "{lock}"
    );
    assert!(project.run(&["check-config"]).ok());
    let list = project.run(&["list"]);
    assert!(
        list.stdout()
            .contains(&format!("sha256   {probe_sha} (pinned)")),
        "{}",
        list.stdout()
    );
    assert_eq!(
        project.hook(&bash("sess-lock", "ls")).context(),
        "[probe] probe judged"
    );
    let again = project.run(&["pin"]);
    assert!(again.stdout().contains("(unchanged)"), "{}", again.stdout());

    // The plugin's bytes change (another valid component) after the pin. The
    // running session goes on with its copy of what was accepted, and the person
    // hears of the change.
    let other = std::fs::read(other_component()).expect("fixture");
    let other_sha = sandrail::sha256_hex(&other);
    std::fs::write(project.dir().join("plugins/probe.wasm"), &other).expect("swap");
    let run = project.hook(&bash("sess-lock", "ls"));
    assert_eq!(run.context(), "[probe] probe judged");
    let told = run.answer()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(told.contains("its component's bytes"), "{told}");
    // A new session holds to it too, saying why.
    let run = project.hook(&bash("sess-lock-next", "ls"));
    assert_eq!(run.context(), "[probe] probe judged");
    assert!(
        run.stderr().contains(&format!(
            "sha256 mismatch: sandrail.lock pins {probe_sha} but the component is {other_sha}"
        )),
        "{}",
        run.stderr()
    );
    // Should a person accept it without pinning it, the lock still refuses it.
    project.trust();
    let run = project.hook(&bash("sess-lock-accepted", "ls"));
    let reason = run.deny_reason().expect("refused under on_error = deny");
    assert!(
        reason.contains("guardrail 'probe' could not judge this call"),
        "{reason}"
    );
    let told = run.stderr();
    assert!(
        told.contains(&format!(
            "sha256 mismatch: sandrail.lock pins {probe_sha} but the component is {other_sha}"
        )),
        "{told}"
    );
    assert!(!told.contains("probe judged"), "{told}");
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1));
    assert!(
        check.stdout().contains(&format!(
            "error  probe: sha256 mismatch: sandrail.lock pins {probe_sha}"
        )),
        "{}",
        check.stdout()
    );
    // Re-pinning is the user's decision: the lock then takes the new bytes.
    let repin = project.run(&["pin"]);
    assert!(
        repin
            .stdout()
            .contains(&format!("pinned  probe  {other_sha}  (was {probe_sha})")),
        "{}",
        repin.stdout()
    );
    assert!(project.run(&["check-config"]).ok());
}

#[test]
fn a_changed_component_under_allow_is_skipped_and_the_others_still_judge() {
    let project = pinned_project("allow");
    assert!(project.run(&["pin"]).ok());
    std::fs::copy(other_component(), project.dir().join("plugins/probe.wasm")).expect("swap");
    project.trust();
    let run = project.hook(&bash("sess-lock-allow", "git push --force origin main"));
    assert!(
        run.deny_reason().is_some_and(|r| r.contains("force-push")),
        "{}",
        run.stdout()
    );
    assert!(
        run.stderr()
            .contains("guardrail 'probe' not run: sha256 mismatch: sandrail.lock pins"),
        "{}",
        run.stderr()
    );
}

#[test]
fn check_config_reports_drift_from_the_lock() {
    let project = pinned_project("allow");
    assert!(project.run(&["pin"]).ok());
    // Rename the bundled guardrail's entry and point the probe elsewhere.
    let config = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("config");
    std::fs::copy(PROBE, project.dir().join("plugins/moved.wasm")).expect("copy");
    project.reconfigure(
        &config
            .replace("name = \"destructive-commands\"", "name = \"destructive\"")
            .replace("plugins/probe.wasm", "plugins/moved.wasm"),
    );
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1), "{}", check.stdout());
    let out = check.stdout();
    for line in [
        "drift  sandrail.lock pins 'probe' as plugins/probe.wasm, but the config names plugins/moved.wasm",
        "drift  'destructive' is not in sandrail.lock",
        "drift  sandrail.lock pins 'destructive-commands', which is not configured",
    ] {
        assert!(out.contains(line), "missing {line:?} in {out}");
    }
    // A moved source is not vouched for, even with the same bytes.
    let run = project.hook(&bash("sess-drift", "ls"));
    assert!(
        run.stderr()
            .contains("pins it as plugins/probe.wasm, but the config names plugins/moved.wasm"),
        "{}",
        run.stderr()
    );
    assert!(
        run.ok() && run.stdout().trim().is_empty(),
        "{}",
        run.stdout()
    );
}

#[test]
fn an_unreadable_lock_vouches_for_nothing() {
    let project = pinned_project("deny");
    std::fs::write(
        project.dir().join("sandrail.lock"),
        "version = 1\n[guardrail.probe\n",
    )
    .expect("write");
    // Not taken by a new session by itself...
    let run = project.hook(&bash("sess-badlock-held", "ls"));
    assert_eq!(run.context(), "[probe] probe judged");
    assert!(
        run.stderr().contains("sandrail.lock cannot be read")
            || run.stderr().contains("is not a valid lock file"),
        "{}",
        run.stderr()
    );
    // ...and once a person accepts it, it vouches for nothing.
    project.trust();
    let run = project.hook(&bash("sess-badlock", "ls"));
    assert!(
        run.deny_reason()
            .is_some_and(|r| r.contains("guardrail 'probe' could not judge")),
        "{}",
        run.stdout()
    );
    assert!(
        run.stderr().contains("is not a valid lock file"),
        "{}",
        run.stderr()
    );
    let check = project.run(&["check-config"]);
    assert_eq!(check.code(), Some(1));
    assert!(
        check
            .stdout()
            .contains("run `sandrail pin` to write it again"),
        "{}",
        check.stdout()
    );
}

#[test]
fn pin_refuses_what_it_cannot_vouch_for_and_writes_nothing() {
    // The embedded default: nothing to write beside.
    let project = Project::new();
    let run = project.run(&["pin"]);
    assert_eq!(run.code(), Some(1));
    assert!(
        run.stderr().contains("no sandrail.toml is in force"),
        "{}",
        run.stderr()
    );

    // A missing component: no lock at all.
    let project = pinned_project("allow");
    std::fs::remove_file(project.dir().join("plugins/probe.wasm")).expect("rm");
    let run = project.run(&["pin"]);
    assert_eq!(run.code(), Some(1));
    assert!(
        run.stderr().contains("guardrail 'probe': ") && run.stderr().contains("was not written"),
        "{}",
        run.stderr()
    );
    assert!(!project.dir().join("sandrail.lock").exists());
}
