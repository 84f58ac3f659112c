//! dotforge's behavior files, unchanged, imported and enforced: its scenario tests
//! ported, through the real binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

fn dotforge_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/dotforge")
}

/// A project with dotforge's behaviors imported (and the given ones switched on).
fn imported(enable: &[&str]) -> Project {
    let project = Project::new();
    let dir = dotforge_dir();
    let run = project.run(&["import", "dotforge", &dir.display().to_string()]);
    assert!(run.ok(), "{}", run.stderr());
    for name in enable {
        let run = project.run(&["guardrail", "on", name]);
        assert!(run.ok(), "{}", run.stderr());
    }
    // A person who imports behaviors and switches them on accepts the result.
    project.trust();
    project
}

fn tool(session: &str, tool: &str, input: Value) -> Vec<u8> {
    payload(
        "PreToolUse",
        session,
        json!({"tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1"}),
    )
}

/// What the agent was told: (decision, text).
fn told(run: &Run) -> (String, String) {
    run.told()
}

fn counter(project: &Project, session: &str, guardrail: &str) -> u64 {
    let run = project.run(&["status", "--json", "--session", session]);
    let status: Value = serde_json::from_str(&run.stdout()).expect("status");
    status["guardrails"]
        .as_array()
        .and_then(|gs| gs.iter().find(|g| g["name"] == guardrail))
        .and_then(|g| g["rules"][0]["counter"].as_u64())
        .unwrap_or(0)
}

#[test]
fn the_import_keeps_order_and_enabled_state_and_a_second_import_changes_nothing() {
    let project = imported(&[]);
    let config = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("config");
    // The bundled protections were kept, and dotforge's behaviors follow them.
    let names: Vec<&str> = config
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .map(|l| l.trim_end_matches('"'))
        .collect();
    assert_eq!(
        names,
        [
            "destructive-commands",
            "session-budget",
            "no-destructive-git",
            "search-first",
            "verify-before-done",
            "respect-todo-state",
            "plan-before-code",
            "objection-format"
        ]
    );
    let list = project.run(&["list", "--json"]);
    let entries: Vec<Value> = list
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let enabled: Vec<bool> = entries.iter().map(|e| e["enabled"] == true).collect();
    assert_eq!(enabled, [true, true, true, false, true, true, false, false]);
    assert!(
        entries[3]["data"][0]
            .as_str()
            .is_some_and(|d| d.ends_with("search-first/behavior.yaml"))
    );
    let again = project.run(&["import", "dotforge", &dotforge_dir().display().to_string()]);
    assert!(
        again.stdout().contains("nothing changed"),
        "{}",
        again.stdout()
    );
    assert_eq!(
        std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("config"),
        config
    );
    assert!(project.run(&["check-config"]).ok());
}

/// A person's `guardrail on|off` since the last import survives importing again.
#[test]
fn importing_again_keeps_the_switches_a_person_set() {
    let project = imported(&["search-first"]);
    assert!(
        project
            .run(&["guardrail", "off", "verify-before-done"])
            .ok()
    );
    let again = project.run(&["import", "dotforge", &dotforge_dir().display().to_string()]);
    assert!(again.ok(), "{}", again.stderr());
    assert!(
        again
            .stdout()
            .contains("imported verify-before-done: off (as the config had it)"),
        "{}",
        again.stdout()
    );
    // Switching a guardrail off is a change of policy: in force once accepted.
    project.trust();
    let list = project.run(&["list", "--json"]);
    let enabled: BTreeMap<String, bool> = list
        .stdout()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .map(|e| {
            (
                e["name"].as_str().unwrap_or_default().to_owned(),
                e["enabled"] == true,
            )
        })
        .collect();
    assert!(enabled["search-first"], "switched on by the person");
    assert!(!enabled["verify-before-done"], "switched off by the person");
    assert!(!enabled["plan-before-code"], "as index.yaml has it");
}

#[test]
fn search_first_escalates_and_a_reinvocation_is_an_override() {
    // dotforge's scenario_override_reinvocation, and scenario_escalation's texts.
    let project = imported(&["search-first"]);
    let write = tool(
        "sess-sf",
        "Write",
        json!({"file_path": "/src/target.py", "content": "new impl"}),
    );
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(told(&project.hook(&write)));
    }
    assert_eq!(
        seen.iter().map(|(d, _)| d.as_str()).collect::<Vec<_>>(),
        ["context", "context", "context", "context", "deny"]
    );
    assert_eq!(
        seen[0].1,
        "[search-first/search-first] Search Before Writing: consider searching first (violation 1)"
    );
    assert_eq!(
        seen[2].1,
        "[search-first/search-first] [search-first] repeated write without search: counter=3"
    );
    assert_eq!(
        seen[4].1,
        "[search-first/search-first] [search-first] BLOCKED: search the codebase before writing."
    );
    assert_eq!(counter(&project, "sess-sf", "search-first"), 5);
    // The user approved: the same input again passes silently, the counter stays 5.
    assert_eq!(told(&project.hook(&write)).0, "silent");
    assert_eq!(counter(&project, "sess-sf", "search-first"), 5);
    let trail = std::fs::read_to_string(project.dir().join(".sandrail/audit/overrides.jsonl"))
        .expect("trail");
    assert_eq!(trail.lines().count(), 1);
    // The next identical write escalates again.
    assert_eq!(told(&project.hook(&write)).0, "deny");
    assert_eq!(counter(&project, "sess-sf", "search-first"), 6);
}

#[test]
fn search_first_is_satisfied_by_a_search_and_consumes_it() {
    // scenario_flag_happy_path, scenario_idempotent_set and scenario_alternating.
    let project = imported(&["search-first"]);
    let s = "sess-happy";
    for search in ["Grep", "Glob", "Read"] {
        assert_eq!(
            told(&project.hook(&tool(s, search, json!({"pattern": "x"})))).0,
            "silent"
        );
    }
    let write = tool(
        s,
        "Write",
        json!({"file_path": "/src/a.py", "content": "x"}),
    );
    assert_eq!(told(&project.hook(&write)).0, "silent");
    assert_eq!(counter(&project, s, "search-first"), 0);
    // Consumed: the next write has no search behind it.
    assert_eq!(told(&project.hook(&write)).0, "context");
    assert_eq!(counter(&project, s, "search-first"), 1);
    project.hook(&tool(s, "Glob", json!({"pattern": "*.rs"})));
    assert_eq!(
        told(&project.hook(&tool(
            s,
            "Edit",
            json!({"file_path": "/src/a.py", "old_string": "a", "new_string": "b"})
        )))
        .0,
        "silent"
    );
    assert_eq!(counter(&project, s, "search-first"), 1);
}

#[test]
fn verify_before_done_wants_a_test_run_before_a_push() {
    let project = imported(&[]);
    let bash_in = |s: &str, command: &str| bash(s, command);
    // scenario_verified_push
    assert_eq!(
        told(&project.hook(&bash_in("sess-v", "pytest tests/"))).0,
        "silent"
    );
    assert_eq!(
        told(&project.hook(&bash_in("sess-v", "git push origin main"))).0,
        "silent"
    );
    assert_eq!(counter(&project, "sess-v", "verify-before-done"), 0);
    // scenario_unverified_escalation: nudge, warning, soft_block.
    let levels: Vec<String> = [
        "git push",
        "git push origin feature",
        "git push origin main",
    ]
    .iter()
    .map(|c| told(&project.hook(&bash_in("sess-u", c))).0)
    .collect();
    assert_eq!(levels, ["context", "context", "deny"]);
    assert_eq!(counter(&project, "sess-u", "verify-before-done"), 3);
    // scenario_unrelated_bash_noop
    for c in ["ls -la", "cat README.md"] {
        assert_eq!(told(&project.hook(&bash_in("sess-n", c))).0, "silent");
    }
    assert_eq!(counter(&project, "sess-n", "verify-before-done"), 0);
}

#[test]
fn plan_before_code_keeps_its_flag_and_exempts_non_source_files() {
    let project = imported(&["plan-before-code"]);
    // scenario_plan_then_code: the flag is kept, so every write after the plan passes.
    project.hook(&tool("sess-plan", "ExitPlanMode", json!({"plan": "do X"})));
    for file in ["src/foo.py", "src/bar.py", "src/baz.py"] {
        let write = tool(
            "sess-plan",
            "Write",
            json!({"file_path": file, "content": "x"}),
        );
        assert_eq!(told(&project.hook(&write)).0, "silent");
    }
    assert_eq!(counter(&project, "sess-plan", "plan-before-code"), 0);
    // scenario_non_source_exempt
    for file in ["README.md", "package.json", "config.yaml", "notes.txt"] {
        let write = tool(
            "sess-docs",
            "Write",
            json!({"file_path": file, "content": "x"}),
        );
        assert_eq!(told(&project.hook(&write)).0, "silent");
    }
    // scenario_unplanned_writes: 1 nudge, 3 warning, 6 soft_block.
    let mut last = String::new();
    for i in 1..=6 {
        let write = tool(
            "sess-unplanned",
            "Write",
            json!({"file_path": format!("src/a{i}.py"), "content": "x"}),
        );
        last = told(&project.hook(&write)).0;
        if i == 5 {
            assert_eq!(last, "context");
        }
    }
    assert_eq!(last, "deny");
    assert_eq!(counter(&project, "sess-unplanned", "plan-before-code"), 6);
}

/// dotforge purges an expired session inline, on its next access and before the
/// behavior judges: a plan approved over 24 hours ago lets no source write through, and
/// the ladder starts again from its first rung. Within the 24 hours it holds.
#[test]
fn a_session_returning_after_its_ttl_has_lost_its_plan() {
    let project = imported(&["plan-before-code"]);
    let write = |n: u32| {
        tool(
            "sess-back",
            "Write",
            json!({"file_path": format!("src/a{n}.py"), "content": "x"}),
        )
    };
    let plan = tool("sess-back", "ExitPlanMode", json!({"plan": "do X"}));
    project.hook_at("2026-11-01T10:00:00Z", &plan);
    let mut outcomes = vec![
        told(&project.hook_at("2026-11-01T10:00:01Z", &write(1))).0,
        // 23 hours later: still the same session, the plan holds.
        told(&project.hook_at("2026-11-02T09:00:00Z", &write(2))).0,
    ];
    // Another session's hook runs the hourly purge while this one is 23.5 h idle,
    // so only its own return can find it expired.
    project.hook_at(
        "2026-11-03T08:30:00Z",
        &tool("sess-other", "Grep", json!({"pattern": "x"})),
    );
    // 24.5 hours after its last use: a session that starts clean.
    for (now, n) in [("2026-11-03T09:30:01Z", 3), ("2026-11-03T09:30:02Z", 4)] {
        outcomes.push(told(&project.hook_at(now, &write(n))).0);
    }
    assert_eq!(outcomes, ["silent", "silent", "context", "context"]);
    // A plan approved again is kept again.
    project.hook_at("2026-11-03T09:30:03Z", &plan);
    assert_eq!(
        told(&project.hook_at("2026-11-03T09:30:04Z", &write(5))).0,
        "silent"
    );
}

#[test]
fn respect_todo_state_and_objection_format() {
    let project = imported(&["objection-format"]);
    project.hook(&tool(
        "sess-todo",
        "TaskUpdate",
        json!({"taskId": "1", "status": "completed"}),
    ));
    assert_eq!(
        told(&project.hook(&tool("sess-todo", "TaskCreate", json!({"subject": "a"})))).0,
        "silent"
    );
    let levels: Vec<String> = (0..5)
        .map(|_| told(&project.hook(&tool("sess-todo2", "TaskCreate", json!({"subject": "a"})))).0)
        .collect();
    assert_eq!(levels, ["context", "context", "context", "context", "deny"]);
    // objection-format: UserPromptSubmit, default nudge.
    let prompt = |text: &str| payload("UserPromptSubmit", "sess-obj", json!({"prompt": text}));
    for text in [
        "Please continue with the plan.",
        "What does the function do?",
    ] {
        assert_eq!(told(&project.hook(&prompt(text))).0, "silent");
    }
    for (i, text) in [
        "no, that's not what I meant",
        "don't touch that file",
        "stop, revert that change",
    ]
    .iter()
    .enumerate()
    {
        let (decision, said) = told(&project.hook(&prompt(text)));
        assert_eq!(decision, "context");
        let expected = if i < 2 {
            format!(
                "Objection Awareness: user objection detected — restate understanding before acting ({})",
                i + 1
            )
        } else {
            "[objection-format] 3 objections this session. Slow down, ask a clarifying question before implementing.".to_owned()
        };
        assert_eq!(
            said,
            format!("[objection-format/objection-format] {expected}")
        );
    }
    assert_eq!(counter(&project, "sess-obj", "objection-format"), 3);
}

#[test]
fn dotforges_no_destructive_git_hard_blocks_what_it_lists() {
    let project = imported(&[]);
    // The bundled destructive-commands judges first; switch it off to see dotforge's.
    assert!(
        project
            .run(&["guardrail", "off", "destructive-commands"])
            .ok()
    );
    // A push with no test run before it is verify-before-done's business.
    assert!(
        project
            .run(&["guardrail", "off", "verify-before-done"])
            .ok()
    );
    project.trust();
    for command in [
        "git push origin main --force",
        "git push origin main -f",
        "git push --force-with-lease origin feature",
        "git reset --hard HEAD~3",
        "git clean -fd",
        "git branch -D feature/old",
    ] {
        let (decision, said) = told(&project.hook(&bash("sess-g", command)));
        assert_eq!(decision, "deny", "{command}");
        assert_eq!(
            said,
            "[no-destructive-git/no-destructive-git] Destructive git operation blocked: force push, hard reset, clean -f, and forced branch delete are not allowed."
        );
    }
    for command in [
        "ls -la",
        "git status",
        "git push origin main",
        "git clean -n",
        "git branch -d feature/old",
    ] {
        assert_eq!(
            told(&project.hook(&bash("sess-g", command))).0,
            "silent",
            "{command}"
        );
    }
}

#[test]
fn an_edited_behavior_file_takes_effect_on_the_next_event() {
    let project = Project::new();
    let dir = project.root.path().join("dotforge");
    std::fs::create_dir_all(dir.join("behaviors/verify-before-done")).expect("dir");
    std::fs::copy(
        dotforge_dir().join("behaviors/verify-before-done/behavior.yaml"),
        dir.join("behaviors/verify-before-done/behavior.yaml"),
    )
    .expect("copy");
    std::fs::write(
        dir.join("behaviors/index.yaml"),
        "schema_version: \"1\"\nbehaviors:\n  - id: verify-before-done\n    enabled: true\n",
    )
    .expect("index");
    assert!(
        project
            .run(&["import", "dotforge", &dir.display().to_string()])
            .ok()
    );
    assert_eq!(
        told(&project.hook(&bash("sess-e", "make deploy"))).0,
        "silent"
    );
    let file = dir.join("behaviors/verify-before-done/behavior.yaml");
    let text = std::fs::read_to_string(&file).expect("read");
    std::fs::write(&file, text.replace(r"git\s+push(\s|$)", r"make\s+deploy")).expect("edit");
    assert_eq!(
        told(&project.hook(&bash("sess-e", "make deploy"))).0,
        "context"
    );
}

/// dotforge: "on timeout, the hook proceeds using default_level for all
/// behaviors". With the session's lock held past the timeout by another sandrail
/// process, an imported `hard_block` behavior (stateful, for its flags) still
/// blocks, and nothing is counted.
#[test]
fn a_held_lock_judges_an_imported_behavior_at_its_default_level() {
    let project = imported(&[]);
    for name in ["destructive-commands", "verify-before-done"] {
        assert!(project.run(&["guardrail", "off", name]).ok());
    }
    // A Read spins with the session's state open for up to 3 s: sandrail at work.
    let config = std::fs::read_to_string(project.dir().join("sandrail.toml")).expect("config");
    project.reconfigure(&format!(
        "[settings]\nlock_timeout_ms = 200\n{config}\n[[guardrail]]\nname = \"spinner\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Read\"\n[guardrail.config]\naction = \"spin\"\n[guardrail.limits]\ntimeout_ms = 3000\n"
    ));
    let mut holder = project.cmd();
    holder
        .arg("hook")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut holder = holder.spawn().expect("spawn holder");
    {
        use std::io::Write;
        let mut stdin = holder.stdin.take().expect("stdin");
        stdin
            .write_all(&tool(
                "sess-held",
                "Read",
                json!({"file_path": "/home/dev/project/a.rs"}),
            ))
            .expect("payload");
    }
    // Wait until it holds the session (however long its first compile takes).
    let lock = project.session_db("sess-held").with_extension("lock");
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(20) {
        // Read from the kernel's record, without taking the lock ourselves.
        let held = std::fs::metadata(&lock).is_ok_and(|meta| {
            use std::os::unix::fs::MetadataExt;
            let inode = format!(":{} ", meta.ino());
            std::fs::read_to_string("/proc/locks")
                .is_ok_and(|locks| locks.lines().any(|l| l.contains(&inode)))
        });
        if held {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let run = project.hook(&bash("sess-held", "git push origin main --force"));
    let (decision, said) = told(&run);
    assert_eq!(decision, "deny", "{}", run.stderr());
    assert!(
        said.starts_with(
            "[no-destructive-git/no-destructive-git] Destructive git operation blocked"
        ),
        "{said}"
    );
    assert!(
        run.stderr().contains("judge without it for this event"),
        "{}",
        run.stderr()
    );
    let _ = holder.wait_with_output();
    assert_eq!(counter(&project, "sess-held", "no-destructive-git"), 0);
}

/// The same with the session's lock held by a program that is not sandrail
/// (`flock` in the agent's shell): the person is told, and the behaviors still
/// judge at their default levels — the imported `hard_block` refuses the force
/// push, and a behavior that checks a flag judges its trigger without the flag
/// rather than failing.
#[test]
fn a_lock_held_by_another_program_still_judges_imported_behaviors_at_default_levels() {
    let project = imported(&["search-first"]);
    for name in ["destructive-commands", "verify-before-done"] {
        assert!(project.run(&["guardrail", "off", name]).ok());
    }
    project.trust();
    // Each session's state exists once it has been judged.
    project.hook(&bash("sess-flock", "ls"));
    let mut flock = project.hold_session_lock("sess-flock");
    let push = project.hook(&bash("sess-flock", "git push origin main --force"));
    let write = project.hook(&tool(
        "sess-flock",
        "Write",
        json!({"file_path": "/home/dev/project/src/new.rs", "content": "fn main() {}\n"}),
    ));
    let _ = flock.kill();
    let _ = flock.wait();
    let (decision, said) = told(&push);
    assert_eq!(decision, "deny", "{}", push.stderr());
    assert!(
        said.starts_with(
            "[no-destructive-git/no-destructive-git] Destructive git operation blocked"
        ),
        "{said}"
    );
    assert!(
        push.stderr().contains("not a sandrail process"),
        "{}",
        push.stderr()
    );
    for run in [&push, &write] {
        for name in ["no-destructive-git", "search-first"] {
            assert!(
                !run.stderr().contains(&format!("guardrail '{name}' failed")),
                "judged, not failed: {}",
                run.stderr()
            );
        }
    }
    // search-first's default level is silent: without its flag it judges the
    // write a violation, said at that level (nothing), and the write proceeds.
    let receipt = project.last_receipt();
    let search_first = receipt["guardrails"]
        .as_array()
        .and_then(|gs| gs.iter().find(|g| g["name"] == "search-first"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(search_first["verdict"], "violation", "{receipt}");
    assert_eq!(search_first["level"], "silent", "{receipt}");
    // The agent is told nothing and the write goes on; the person hears who
    // holds the lock.
    let answer = write.answer();
    assert_eq!(
        answer["hookSpecificOutput"],
        json!({"hookEventName": "PreToolUse"}),
        "{answer}"
    );
    assert!(
        answer["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("not a sandrail process")),
        "{answer}"
    );
}
