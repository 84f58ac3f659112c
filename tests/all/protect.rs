//! Self-protection: the agent cannot change what sandrail depends on, by any tool
//! or spelling, nor run sandrail's state- and config-changing commands; it can
//! read them; ConfigChange cannot switch sandrail's hooks off.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::*;

/// A PreToolUse of `tool` run in the project's own directory.
fn call(project: &Project, tool: &str, input: Value) -> Vec<u8> {
    payload(
        "PreToolUse",
        "sess-protect",
        json!({"cwd": project.dir(), "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_01P"}),
    )
}

fn shell(project: &Project, command: &str) -> Vec<u8> {
    call(project, "Bash", json!({"command": command}))
}

/// The PreToolUse refusal, if any (an allowed call may have no answer at all).
fn refusal(run: &Run) -> Option<String> {
    if run.stdout().trim().is_empty() {
        return None;
    }
    run.deny_reason()
}

/// The call is refused by sandrail itself, telling the agent to ask the user.
#[track_caller]
fn assert_protected(project: &Project, payload: &[u8]) {
    let run = project.hook(payload);
    let reason = refusal(&run).unwrap_or_else(|| {
        panic!(
            "not refused: {}\nstderr: {}",
            String::from_utf8_lossy(payload),
            run.stderr()
        )
    });
    // Self-protection's reason, after a destructive rule's where the call is
    // one (`rm -rf` of sandrail's state directory).
    assert!(
        reason.starts_with("[sandrail] sandrail ")
            || (reason.starts_with("[destructive-commands/")
                && reason.contains("\n[sandrail] sandrail ")),
        "{reason}"
    );
    assert!(
        reason.contains("ask the user") || reason.contains("Ask the user"),
        "{reason}"
    );
}

#[track_caller]
fn assert_allowed(project: &Project, payload: &[u8]) {
    let run = project.hook(payload);
    assert_eq!(
        refusal(&run),
        None,
        "refused: {}",
        String::from_utf8_lossy(payload)
    );
}

fn settings_with_sandrail() -> Value {
    json!({"hooks": {
        "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "sandrail hook"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "sandrail hook"}]}]
    }})
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn the_file_tools_cannot_change_hook_settings_or_sandrails_files() {
    let project = Project::new();
    project.config("[[guardrail]]\nname = \"budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\n");
    let home = project.root.path();
    let targets = [
        project.dir().join(".claude/settings.json"),
        project.dir().join(".claude/settings.local.json"),
        home.join(".claude/settings.json"),
        home.join(".codex/hooks.json"),
        home.join(".gemini/settings.json"),
        project.dir().join(".cursor/hooks.json"),
        project.dir().join(".github/hooks/guard.json"),
        project.dir().join("sandrail.toml"),
        project.dir().join("sandrail.lock"),
        // A config further down would replace the one in force.
        project.dir().join("src/sandrail.toml"),
        project.state_dir().join("sessions/x.redb"),
        project.cache_dir().join("planted.cwasm"),
        project.dir().join(".sandrail/audit/overrides.jsonl"),
    ];
    for target in &targets {
        let path = target.display().to_string();
        assert_protected(
            &project,
            &call(
                &project,
                "Write",
                json!({"file_path": path, "content": "{}"}),
            ),
        );
        assert_protected(
            &project,
            &call(
                &project,
                "Edit",
                json!({"file_path": path, "old_string": "a", "new_string": "b"}),
            ),
        );
    }
    assert_protected(
        &project,
        &call(
            &project,
            "MultiEdit",
            json!({"file_path": ".claude/settings.json", "edits": []}),
        ),
    );
    assert_protected(
        &project,
        &call(
            &project,
            "NotebookEdit",
            json!({"notebook_path": "sandrail.toml", "new_source": "x"}),
        ),
    );
    // An ordinary file is written as before.
    assert_allowed(
        &project,
        &call(
            &project,
            "Write",
            json!({"file_path": "src/lib.rs", "content": "fn f() {}"}),
        ),
    );
}

#[test]
fn every_shell_spelling_of_a_change_is_refused() {
    let project = Project::new();
    put(
        &project.dir().join(".claude/settings.json"),
        &settings_with_sandrail().to_string(),
    );
    let state = project.state_dir().display().to_string();
    let lines = [
        "echo '{}' > .claude/settings.json",
        "echo x >> sandrail.toml",
        "printf '{}' | tee .claude/settings.local.json",
        "rm .claude/settings.json",
        "rm -rf .claude",
        "mv .claude/settings.json /tmp/away.json",
        "cp /tmp/other.json .claude/settings.json",
        "sed -i 's/sandrail hook/true/' .claude/settings.json",
        "truncate -s 0 .claude/settings.json",
        "chmod 000 .claude/settings.json",
        "ln -sf /dev/null .claude/settings.json",
        "git checkout -- .claude/settings.json",
        "git restore .claude/settings.json",
        "git rm .claude/settings.json",
        "git clean -fdx .claude",
        // Spellings that resolve to the same file.
        "echo '{}' > ./.claude/settings.json",
        "echo '{}' > .//.claude//settings.json",
        "echo '{}' > src/../.claude/settings.json",
        "echo '{}' > ~/.claude/settings.json",
        // Through the wrappers the facts see through.
        "bash -c 'echo {} > .claude/settings.json'",
        "FOO=1 sudo -E tee .claude/settings.json < /dev/null",
        "find . -name x -exec rm -rf .claude \\;",
        // sandrail's own files and directories.
        &format!("rm -rf {state}"),
        &format!("echo x > {state}/sessions/forged.redb"),
    ];
    for line in lines {
        assert_protected(&project, &shell(&project, line));
    }
    assert_protected(
        &project,
        &call(
            &project,
            "PowerShell",
            json!({"command": "Remove-Item -Force .claude\\settings.json"}),
        ),
    );
    // The binary the harness runs.
    assert_protected(&project, &shell(&project, &format!("cp /bin/true {BIN}")));
}

#[test]
fn a_symlink_does_not_hide_a_protected_file() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    put(&settings, "{}");
    std::os::unix::fs::symlink(&settings, project.dir().join("notes.json")).expect("symlink");
    std::os::unix::fs::symlink(project.dir().join(".claude"), project.dir().join("cfg"))
        .expect("symlink");
    assert_protected(&project, &shell(&project, "echo '{}' > notes.json"));
    assert_protected(
        &project,
        &call(
            &project,
            "Write",
            json!({"file_path": "cfg/settings.json", "content": "{}"}),
        ),
    );
    assert_protected(&project, &shell(&project, "echo x > cfg/../sandrail.toml"));
    // A spelling the kernel cannot resolve (`notes.json/`) first in the line
    // does not stand for the plain name after it.
    for line in [
        "touch notes.json/; echo '{}' > notes.json",
        "echo hi > notes.json/.; echo '{}' > notes.json",
    ] {
        assert_protected(&project, &shell(&project, line));
    }
}

#[test]
fn reading_is_allowed() {
    let project = Project::new();
    put(&project.dir().join(".claude/settings.json"), "{}");
    project.config("");
    for line in [
        "cat .claude/settings.json",
        "grep -n hook .claude/settings.json sandrail.toml",
        "cp .claude/settings.json /tmp/copy.json",
        "sandrail state get budget count",
        "sandrail list --json",
        "sandrail check-config",
        "git diff -- .claude/settings.json",
        "git checkout main",
    ] {
        assert_allowed(&project, &shell(&project, line));
    }
    assert_allowed(
        &project,
        &call(
            &project,
            "Read",
            json!({"file_path": project.dir().join("sandrail.toml")}),
        ),
    );
}

#[test]
fn sandrails_own_changing_commands_are_refused_to_the_agent() {
    let project = Project::new();
    for line in [
        "sandrail state set budget count 0",
        "sandrail state delete budget count",
        "sandrail guardrail off destructive-commands",
        "sandrail guardrail off destructive-commands --session s1",
        "sandrail import dotforge ./behaviors",
        "sandrail pin",
        "sandrail flag set tests_passed --session s1",
        "sandrail flag clear tests_passed --session s1",
        "cd /tmp && ~/.cargo/bin/sandrail state set x y z",
        "bash -c 'sandrail guardrail off budget'",
    ] {
        let run = project.hook(&shell(&project, line));
        let reason = refusal(&run).unwrap_or_else(|| panic!("{line}"));
        assert!(reason.contains("sandrail refused `sandrail "), "{reason}");
        assert!(reason.contains("Ask the user"), "{reason}");
    }
}

#[test]
fn a_config_adds_paths_and_can_switch_protection_off() {
    let project = Project::new();
    let policy = project.dir().join("policy/rules.txt");
    put(&policy, "no force pushes\n");
    project.config("[protect]\npaths = [\"policy\"]\n\n[[guardrail]]\nname = \"budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\n");
    assert_protected(&project, &shell(&project, "echo '' > policy/rules.txt"));
    assert_protected(&project, &shell(&project, "rm -r policy"));
    assert_allowed(&project, &shell(&project, "echo '' > notes.txt"));

    // A guardrail's component and its data are protected too.
    let guards = project.dir().join("guards");
    std::fs::create_dir_all(&guards).expect("dir");
    std::fs::copy(PROBE, guards.join("probe.wasm")).expect("copy probe");
    put(&guards.join("words.txt"), "x\n");
    project.reconfigure("[[guardrail]]\nname = \"probe\"\nsource = \"guards/probe.wasm\"\nevents = [\"PreToolUse\"]\nmatcher = \"Read\"\ndata = [\"guards/words.txt\"]\n");
    assert_protected(&project, &shell(&project, "rm guards/probe.wasm"));
    assert_protected(&project, &shell(&project, "echo y >> guards/words.txt"));

    // A person may switch it off; the agent then is judged by the guardrails alone.
    project.reconfigure("[protect]\nenabled = false\n\n[[guardrail]]\nname = \"budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\n");
    assert_allowed(&project, &shell(&project, "echo x > .claude/settings.json"));
    let run = project.run(&["check-config"]);
    assert!(run.ok(), "{}", run.stderr());

    // Unknown keys are a config error, not silently ignored.
    project.config("[protect]\nenable = false\n");
    let run = project.run(&["check-config"]);
    assert!(!run.ok());
    assert!(run.stderr().contains("enable"), "{}", run.stderr());
}

fn config_change(project: &Project, extra: Value) -> Run {
    let mut fields = json!({"cwd": project.dir(), "source": "project_settings",
        "file_path": project.dir().join(".claude/settings.json")});
    if let (Some(fields), Some(extra)) = (fields.as_object_mut(), extra.as_object()) {
        fields.extend(extra.clone());
    }
    project.hook(&payload("ConfigChange", "sess-cc", fields))
}

fn blocked(run: &Run) -> Option<String> {
    if run.stdout().trim().is_empty() {
        return None;
    }
    let answer = run.answer();
    (answer["decision"] == "block").then(|| answer["reason"].as_str().unwrap_or("").to_owned())
}

#[test]
fn config_change_cannot_switch_sandrails_hooks_off() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    put(&settings, &settings_with_sandrail().to_string());
    // The session's start remembers the registrations.
    project.hook(&payload(
        "SessionStart",
        "sess-cc",
        json!({"cwd": project.dir(), "source": "startup"}),
    ));

    // Another hook added, sandrail's kept: accepted.
    let mut added = settings_with_sandrail();
    added["hooks"]["PostToolUse"] =
        json!([{"matcher": "Write", "hooks": [{"type": "command", "command": "cargo fmt"}]}]);
    put(&settings, &added.to_string());
    let run = config_change(&project, json!({}));
    assert_eq!(blocked(&run), None, "{}", run.stdout());

    // sandrail's Stop registration dropped (the file as it now is): refused.
    let mut dropped = added.clone();
    dropped["hooks"]
        .as_object_mut()
        .expect("hooks")
        .remove("Stop");
    put(&settings, &dropped.to_string());
    let reason = blocked(&config_change(&project, json!({}))).expect("blocked");
    assert!(reason.contains("Stop|*"), "{reason}");

    // A narrowed matcher is a weaker registration too.
    let mut narrowed = settings_with_sandrail();
    narrowed["hooks"]["PreToolUse"][0]["matcher"] = json!("Write");
    put(&settings, &narrowed.to_string());
    let reason = blocked(&config_change(&project, json!({}))).expect("blocked");
    assert!(reason.contains("PreToolUse|*"), "{reason}");

    // A registration made harmless is a dropped one: the command's answer
    // thrown away or its failure ignored, another harness's dialect, a timeout
    // too short to answer, a hook the harness does not wait for.
    for (hook, what) in [
        (
            json!({"type": "command", "command": "sandrail hook || true"}),
            "|| true",
        ),
        (
            json!({"type": "command", "command": "sandrail hook >/dev/null"}),
            "stdout discarded",
        ),
        (
            json!({"type": "command", "command": "sandrail hook --harness gemini"}),
            "another dialect",
        ),
        (
            json!({"type": "command", "command": "sandrail hook", "timeout": 0.001}),
            "tiny timeout",
        ),
        (
            json!({"type": "command", "command": "sandrail hook", "async": true}),
            "async",
        ),
    ] {
        let mut harmless = settings_with_sandrail();
        harmless["hooks"]["Stop"][0]["hooks"][0] = hook;
        put(&settings, &harmless.to_string());
        let run = config_change(&project, json!({}));
        assert!(
            blocked(&run).is_some_and(|r| r.contains("Stop|*")),
            "{what}: {}",
            run.stdout()
        );
    }

    // disableAllHooks, from the file or from the payload's new_config.
    let mut disabled = settings_with_sandrail();
    disabled["disableAllHooks"] = json!(true);
    put(&settings, &disabled.to_string());
    let reason = blocked(&config_change(&project, json!({}))).expect("blocked");
    assert!(reason.contains("disableAllHooks"), "{reason}");
    let run = config_change(
        &project,
        json!({"source": "user_settings", "file_path": project.root.path().join(".claude/settings.json"),
               "previous_config": settings_with_sandrail(), "new_config": {"hooks": {}}}),
    );
    assert!(blocked(&run).is_some(), "{}", run.stdout());

    // With self-protection off, the change is the user's business.
    project.reconfigure("[protect]\nenabled = false\n");
    assert_eq!(blocked(&config_change(&project, json!({}))), None);
}

/// The registration moved between the project's two settings files still runs,
/// so dropping it from one is not dropping it — but only a copy in the other
/// file as sandrail last accepted it counts: not one planted by a change that
/// was itself refused, not one in a file that switches hooks off, not a copy in
/// the user's own `settings.local.json`, which Claude Code does not read.
#[test]
fn config_change_counts_only_an_accepted_registration_in_the_sibling_file() {
    let project = Project::new();
    let shared = project.dir().join(".claude/settings.json");
    let local = project.dir().join(".claude/settings.local.json");
    put(&shared, &settings_with_sandrail().to_string());
    put(&local, &settings_with_sandrail().to_string());
    project.hook(&payload(
        "SessionStart",
        "sess-cc",
        json!({"cwd": project.dir(), "source": "startup"}),
    ));
    // Moved: gone from the committed file, held by the local one as accepted.
    put(&shared, "{}");
    let run = config_change(&project, json!({}));
    assert_eq!(blocked(&run), None, "{}", run.stdout());

    // A copy planted in the committed file by a refused change does not count.
    let fresh = Project::new();
    let shared = fresh.dir().join(".claude/settings.json");
    let local = fresh.dir().join(".claude/settings.local.json");
    put(&local, &settings_with_sandrail().to_string());
    fresh.hook(&payload(
        "SessionStart",
        "sess-cc",
        json!({"cwd": fresh.dir(), "source": "startup"}),
    ));
    let mut off = settings_with_sandrail();
    off["disableAllHooks"] = json!(true);
    put(&shared, &off.to_string());
    assert!(blocked(&config_change(&fresh, json!({}))).is_some());
    put(&local, "{}");
    let run = config_change(&fresh, json!({"file_path": local}));
    assert!(
        blocked(&run).is_some_and(|r| r.contains("Stop|*")),
        "{}",
        run.stdout()
    );
    // Nor does one the committed file holds without sandrail having accepted it.
    put(&shared, &settings_with_sandrail().to_string());
    let run = config_change(&fresh, json!({"file_path": local}));
    assert!(blocked(&run).is_some(), "{}", run.stdout());

    // The user's settings have no sibling Claude Code reads.
    let user = Project::new();
    let home = user.root.path().join(".claude");
    put(
        &home.join("settings.json"),
        &settings_with_sandrail().to_string(),
    );
    user.hook(&payload(
        "SessionStart",
        "sess-cc",
        json!({"cwd": user.dir(), "source": "startup"}),
    ));
    put(
        &home.join("settings.local.json"),
        &settings_with_sandrail().to_string(),
    );
    put(&home.join("settings.json"), "{}");
    let run = config_change(
        &user,
        json!({"source": "user_settings", "file_path": home.join("settings.json")}),
    );
    assert!(blocked(&run).is_some(), "{}", run.stdout());
}

/// Registered as an http hook (`sandrail serve`), sandrail's registration is its
/// event, matcher and URL: dropping it, narrowing it or pointing it at another
/// server is refused like dropping the command hook.
#[test]
fn config_change_cannot_switch_a_served_registration_off() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    let served = |url: &str, matcher: &str| {
        json!({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [{
            "type": "http", "url": url,
            "headers": {"X-Sandrail-Project-Dir": "$CLAUDE_PROJECT_DIR"},
            "allowedEnvVars": ["CLAUDE_PROJECT_DIR"]}]}]}})
    };
    put(
        &settings,
        &served("http://127.0.0.1:8787/", "*").to_string(),
    );
    project.hook(&payload(
        "SessionStart",
        "sess-cc",
        json!({"cwd": project.dir(), "source": "startup"}),
    ));
    let same = served("http://127.0.0.1:8787/", "*");
    let run = config_change(&project, json!({}));
    assert_eq!(blocked(&run), None, "{}", run.stdout());
    for (weaker, what) in [
        (json!({"hooks": {}}), "dropped"),
        (
            served("http://127.0.0.1:9/", "*"),
            "moved to another server",
        ),
        (served("http://127.0.0.1:8787/", "Read"), "narrowed"),
    ] {
        put(&settings, &weaker.to_string());
        let reason = blocked(&config_change(&project, json!({})))
            .unwrap_or_else(|| panic!("{what}: not refused"));
        assert!(
            reason.contains("PreToolUse|*|http://127.0.0.1:8787/"),
            "{what}: {reason}"
        );
    }
    put(&settings, &same.to_string());
    assert_eq!(blocked(&config_change(&project, json!({}))), None);
}

/// A ConfigChange the agent forges (`sandrail hook` on a payload of its own,
/// past the shell analysis) cannot lower what sandrail remembers of the hook
/// settings: an empty `previous_config` claims nothing was registered, and the
/// real change that drops sandrail afterwards is still refused.
#[test]
fn a_forged_config_change_cannot_lower_the_remembered_registrations() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    put(&settings, &settings_with_sandrail().to_string());
    project.hook(&payload(
        "SessionStart",
        "sess-cc",
        json!({"cwd": project.dir(), "source": "startup"}),
    ));
    // Forged: nothing was registered before, nothing is after.
    let forged = config_change(
        &project,
        json!({"previous_config": {}, "new_config": settings_with_sandrail()}),
    );
    assert_eq!(blocked(&forged), None, "{}", forged.stdout());
    let forged = config_change(
        &project,
        json!({"previous_config": {"hooks": {}}, "new_config": {"hooks": {}}}),
    );
    assert!(blocked(&forged).is_some(), "{}", forged.stdout());
    // The real change that drops sandrail's Stop registration.
    let mut dropped = settings_with_sandrail();
    dropped["hooks"]
        .as_object_mut()
        .expect("hooks")
        .remove("Stop");
    put(&settings, &dropped.to_string());
    let reason = blocked(&config_change(&project, json!({}))).expect("blocked");
    assert!(reason.contains("Stop|*"), "{reason}");
    // A forged SessionStart reading the dropped file remembers nothing less.
    project.hook(&payload(
        "SessionStart",
        "sess-cc",
        json!({"cwd": project.dir(), "source": "startup"}),
    ));
    assert!(blocked(&config_change(&project, json!({}))).is_some());
    // A person who means it accepts what the files hold now.
    project.trust();
    assert_eq!(blocked(&config_change(&project, json!({}))), None);
}

/// Every writer the shell model knows reaches self-protection: in-place editors
/// in every spelling, `touch`, a directory as the destination (the file of the
/// same name inside it), a hard link, `cd` followed within the line, and a file
/// sharing an inode with a protected one.
#[test]
fn every_writer_reaches_self_protection() {
    let project = Project::new();
    put(&project.dir().join(".claude/settings.json"), "{}");
    put(&project.dir().join("incoming/sandrail.toml"), "");
    put(&project.dir().join("incoming/settings.json"), "{}");
    // An archive and a patch that carry a protected file inside.
    let packed = std::process::Command::new("tar")
        .args([
            "czf",
            "update.tgz",
            "-C",
            "incoming",
            "sandrail.toml",
            "settings.json",
        ])
        .current_dir(project.dir())
        .status()
        .expect("tar");
    assert!(packed.success());
    let packed = std::process::Command::new("tar")
        .args(["czf", "notes.tgz", "-C", "incoming", "settings.json"])
        .current_dir(project.dir())
        .status()
        .expect("tar");
    assert!(packed.success());
    put(
        &project.dir().join("cfg.diff"),
        "--- a/sandrail.toml\n+++ b/sandrail.toml\n@@ -1 +1 @@\n-a\n+b\n",
    );
    put(
        &project.dir().join("edit-config.sh"),
        "#!/bin/sh\nsed -i 's/deny/allow/' sandrail.toml\n",
    );
    for line in [
        "touch sandrail.toml",
        "sed -ri 's/a/b/' sandrail.toml",
        "sed -Ei 's/a/b/' .claude/settings.json",
        "sed -ni 's/a/b/p' .claude/settings.json",
        "sed --in-place=.bak 's/a/b/' .claude/settings.json",
        "perl -pi -e 's/a/b/' .claude/settings.json",
        "ruby -i -pe 'x' .claude/settings.json",
        "ex -sc '%s/a/b/|x' .claude/settings.json",
        "vim -es -c 'x' .claude/settings.json",
        "echo x | sponge .claude/settings.json",
        "cp incoming/sandrail.toml .",
        "cp incoming/settings.json .claude",
        "cp -t .claude incoming/settings.json",
        "mv incoming/settings.json .claude/",
        "rsync -a incoming/ .claude/",
        "cd .claude && echo '{}' > settings.json",
        "cd incoming; cd ../.claude && touch settings.json",
        "ln .claude/settings.json notes.json",
        "patch .claude/settings.json fix.diff",
        "chmod -R 777 .claude",
        "find . -name settings.json -delete",
        "find . -name 'sandrail.*' -exec rm {} +",
        "find . -name sandrail.toml | xargs rm",
        "echo x > sandrail.t*",
        "python3 -c 'open(\"sandrail.toml\",\"w\").write(\"x\")'",
        "python3 -c 'import pathlib; pathlib.Path(\".claude/settings.json\").write_text(\"{}\")'",
        "python3 -c 'import os; os.remove(\"sandrail.toml\")'",
        "perl -e 'unlink \"sandrail.toml\"'",
        "ruby -e 'File.write(\"sandrail.toml\",\"x\")'",
        "node -e 'require(\"fs\").writeFileSync(\".claude/settings.json\",\"{}\")'",
        "f=sandrail.toml; echo x > $f",
        "f=sandrail; echo x > $f.toml",
        "echo x > ${F:-sandrail.toml}",
        "rm -f sandrail.toml",
        "rm -f .claude/settings.json",
        "shred -n 3 -u .claude/settings.json",
        "rm -f .claude/*.json",
        "rm -f .clau?e/settings.json",
        // A script the line feeds a shell, writes and runs, or finds on disk.
        "printf 'echo x > sandrail.toml' | sh",
        "bash < <(echo 'cp x .claude/settings.json')",
        "echo 'touch sandrail.toml' > a.sh; bash a.sh",
        "bash edit-config.sh",
        "./edit-config.sh",
        "tar xzf update.tgz",
        "tar -xzf update.tgz -C .claude",
        "patch -p1 < cfg.diff",
        "git apply cfg.diff",
        "script -qc 'cp incoming/sandrail.toml .' /dev/null",
        "awk 'BEGIN { print \"x\" > \"sandrail.toml\" }'",
        "echo .claude/settings.json | xargs cp incoming/settings.json",
    ] {
        assert_protected(&project, &shell(&project, line));
    }
    // PowerShell's writers.
    for line in [
        "Clear-Content .claude/settings.json",
        "New-Item -Force -ItemType File -Path sandrail.toml",
        "ni sandrail.toml -Force",
        "Rename-Item .claude/settings.json old.json",
        "Rename-Item -Path x -NewName sandrail.toml",
        "[IO.File]::WriteAllText('.claude/settings.json', '{}')",
        "[System.IO.File]::AppendAllText(\".claude/settings.json\", 'x')",
    ] {
        assert_protected(
            &project,
            &call(&project, "PowerShell", json!({"command": line})),
        );
    }
    // A hard link made outside the agent's view is the file it links.
    std::fs::hard_link(
        project.dir().join(".claude/settings.json"),
        project.dir().join("linked.json"),
    )
    .expect("hard link");
    assert_protected(&project, &shell(&project, "echo '{}' > linked.json"));
    // Look-alikes pass.
    for line in [
        "touch notes.md",
        "sed -i 's/a/b/' src/main.rs",
        "cp incoming/settings.json backup.json",
        "cd incoming && echo x > other.txt",
        "ln -s .claude/settings.json view.json",
        "find . -name '*.pyc' -delete",
        "find . -name __pycache__ | xargs rm -rf",
        "find . -name __pycache__ -exec rm -rf {} +",
        "tar tzf update.tgz",
        "awk '$1 > 5 { print }' sandrail.toml",
        "echo notes.md | xargs cp incoming/settings.json",
        "tar xzf notes.tgz -C incoming",
        "rm -f src/*.o",
        "python3 -c 'print(open(\"sandrail.toml\").read())'",
        "node -e 'console.log(require(\"fs\").readFileSync(\"package.json\", \"utf8\"))'",
    ] {
        assert_allowed(&project, &shell(&project, line));
    }
}

/// The settings' `env` steers sandrail's hooks too: pointing them at another
/// config or state directory, or dropping SANDRAIL_SERVE_REQUIRED, is refused
/// like dropping a registration, and the refusal says how a person accepts it.
#[test]
fn config_change_cannot_steer_sandrails_environment() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    let mut base = settings_with_sandrail();
    base["env"] = json!({"SANDRAIL_SERVE_REQUIRED": "1", "EDITOR": "vi"});
    put(&settings, &base.to_string());
    project.hook(&payload(
        "SessionStart",
        "sess-cc",
        json!({"cwd": project.dir(), "source": "startup"}),
    ));
    for (key, value) in [
        ("SANDRAIL_STATE_DIR", json!("/tmp/elsewhere")),
        ("SANDRAIL_CONFIG", json!("/tmp/mine.toml")),
        ("SANDRAIL_SERVE_REQUIRED", json!("0")),
        // With none of sandrail's own set, these decide where it looks.
        ("HOME", json!("")),
        ("XDG_STATE_HOME", json!("/tmp/fresh")),
        ("XDG_CACHE_HOME", json!("/tmp/planted")),
    ] {
        let mut steered = base.clone();
        steered["env"][key] = value;
        put(&settings, &steered.to_string());
        let reason = blocked(&config_change(&project, json!({})))
            .unwrap_or_else(|| panic!("{key}: not refused"));
        assert!(
            reason.contains(key) && reason.contains("sandrail trust"),
            "{reason}"
        );
    }
    // Another variable is the user's business.
    let mut other = base.clone();
    other["env"]["EDITOR"] = json!("nano");
    put(&settings, &other.to_string());
    assert_eq!(blocked(&config_change(&project, json!({}))), None);
}

/// A session whose start only a version-1 record remembers (event and matcher)
/// is still guarded on its first ConfigChange under version 2.
#[test]
fn config_change_reads_what_version_one_remembered() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    put(&settings, &settings_with_sandrail().to_string());
    let key = sandrail::sha256_hex(settings.to_string_lossy().as_bytes());
    let legacy = project.state_dir().join("protect").join(&key[..32]);
    put(&legacy, "PreToolUse|*\nStop|*\n");
    let mut dropped = settings_with_sandrail();
    dropped["hooks"]
        .as_object_mut()
        .expect("hooks")
        .remove("Stop");
    put(&settings, &dropped.to_string());
    let reason = blocked(&config_change(&project, json!({}))).expect("blocked");
    assert!(reason.contains("Stop|*"), "{reason}");
}
