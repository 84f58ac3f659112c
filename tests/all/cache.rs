//! Compiled components are cached on disk and reused by later runs.

use crate::support::*;

/// The compiled components in a cache directory (not their records).
fn cache_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn the_second_run_loads_from_the_cache() {
    let project = Project::new();
    let cache = project.root.path().join("own-cache");
    let run = |project: &Project| {
        let mut cmd = project.cmd();
        cmd.env("SANDRAIL_CACHE_DIR", &cache)
            .env("SANDRAIL_LOG", "debug");
        project.hook_with(cmd, &bash("sess-cache", "git push --force"))
    };

    let first = run(&project);
    assert!(first.deny_reason().is_some());
    assert!(
        first.stderr().contains("sandrail: compiled "),
        "{}",
        first.stderr()
    );
    let files = cache_files(&cache);
    assert_eq!(files.len(), 1, "one component compiled: {files:?}");
    let written = std::fs::metadata(&files[0])
        .and_then(|m| m.modified())
        .expect("mtime");

    let second = run(&project);
    assert!(second.deny_reason().is_some());
    assert!(
        second.stderr().contains("from the cache"),
        "{}",
        second.stderr()
    );
    assert!(!second.stderr().contains("compiled"), "{}", second.stderr());
    assert_eq!(cache_files(&cache), files);
    assert_eq!(
        std::fs::metadata(&files[0])
            .and_then(|m| m.modified())
            .expect("mtime"),
        written
    );
}

#[test]
fn a_corrupt_cache_file_is_replaced() {
    let project = Project::new();
    let cache = project.root.path().join("own-cache");
    let mut cmd = project.cmd();
    cmd.env("SANDRAIL_CACHE_DIR", &cache);
    project
        .hook_with(cmd, &bash("sess-cache", "ls"))
        .assert_silent();
    let files = cache_files(&cache);
    assert_eq!(files.len(), 1);
    for file in &files {
        std::fs::write(file, b"garbage").expect("corrupt the cache");
    }

    let mut cmd = project.cmd();
    cmd.env("SANDRAIL_CACHE_DIR", &cache);
    let run = project.hook_with(cmd, &bash("sess-cache", "git reset --hard"));
    assert!(
        run.deny_reason().is_some(),
        "still judged: {}",
        run.stderr()
    );
    assert!(
        run.stderr()
            .contains("discarding unusable cached component"),
        "{}",
        run.stderr()
    );
    for file in &files {
        assert!(std::fs::metadata(file).expect("rewritten").len() > 1000);
    }
}

#[test]
fn a_directory_opened_to_others_is_made_private_again() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    let cache = project.root.path().join("shared-cache");
    let hook = |payload: &[u8]| {
        let mut cmd = project.cmd();
        cmd.env("SANDRAIL_CACHE_DIR", &cache)
            .env("SANDRAIL_LOG", "debug");
        project.hook_with(cmd, payload)
    };
    // Made by sandrail: its owner's alone, and used.
    let run = hook(&write("sess-perm", "/home/dev/project/a.rs"));
    assert!(run.ok(), "{}", run.stderr());
    assert!(!cache_files(&cache).is_empty(), "{}", run.stderr());
    assert!(project.session_db("sess-perm").exists());

    // Opened to everyone (`chmod 777`), with the cache's code replaced meanwhile:
    // both are made the user's alone again and the person hears of it; the
    // cache's code, which anyone could have written, is thrown away; the state
    // goes on being used, so nothing is skipped.
    for dir in [&cache, &project.state_dir()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    }
    for file in cache_files(&cache) {
        std::fs::write(&file, b"planted").expect("plant");
    }
    let run = hook(&write("sess-perm", "/home/dev/project/b.rs"));
    assert!(run.ok(), "{}", run.stderr());
    let told = run.stderr();
    for (what, dir) in [
        ("compiled-code cache", &cache),
        ("state directory", &project.state_dir()),
    ] {
        assert!(
            told.contains(&format!(
                "the {what} {} had been given mode 777; it is the user's alone again (700)",
                dir.display()
            )),
            "{told}"
        );
        let mode = std::fs::metadata(dir).expect("dir").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{what}");
    }
    let said = run.answer()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(said.contains("it is the user's alone again"), "{said}");
    assert!(!told.contains("skipping the guardrails"), "{told}");
    assert_eq!(
        project.state("sess-perm", "session-budget"),
        [("edits".to_owned(), "2".to_owned())]
    );
    for file in cache_files(&cache) {
        assert_ne!(std::fs::read(&file).expect("read"), b"planted");
    }
    let last = project.last_receipt();
    assert!(
        last["alerts"]
            .to_string()
            .contains("had been given mode 777"),
        "{last}"
    );
    // Closed to its owner (`chmod 000`): the same.
    std::fs::set_permissions(project.state_dir(), std::fs::Permissions::from_mode(0o000))
        .expect("chmod");
    let run = hook(&write("sess-perm", "/home/dev/project/c.rs"));
    assert!(
        run.stderr().contains("had been given mode 0;"),
        "{}",
        run.stderr()
    );
    assert_eq!(
        project.state("sess-perm", "session-budget"),
        [("edits".to_owned(), "3".to_owned())]
    );
}

/// A run with its own cache directory and debug logging.
fn hook_cached(project: &Project, cache: &std::path::Path, payload: &[u8]) -> Run {
    let mut cmd = project.cmd();
    cmd.env("SANDRAIL_CACHE_DIR", cache)
        .env("SANDRAIL_LOG", "debug");
    project.hook_with(cmd, payload)
}

#[test]
fn a_planted_or_swapped_cache_file_is_never_loaded() {
    let project = Project::new();
    project.config(
        r#"
[[guardrail]]
name = "destructive-commands"
source = "builtin:destructive-commands"
events = ["PreToolUse"]
matcher = "Bash"

[[guardrail]]
name = "session-budget"
source = "builtin:session-budget"
events = ["UserPromptSubmit"]
"#,
    );
    let cache = project.root.path().join("own-cache");
    let prompt = payload(
        "UserPromptSubmit",
        "sess-plant",
        serde_json::json!({"prompt": "hi"}),
    );
    assert!(hook_cached(&project, &cache, &prompt).ok());
    let budget = cache_files(&cache);
    assert_eq!(budget.len(), 1);
    let first = hook_cached(&project, &cache, &bash("sess-plant", "git push --force"));
    assert!(first.deny_reason().is_some(), "{}", first.stderr());
    let destructive: Vec<_> = cache_files(&cache)
        .into_iter()
        .filter(|f| !budget.contains(f))
        .collect();
    assert_eq!(destructive.len(), 1);
    let (budget, destructive) = (&budget[0], &destructive[0]);

    // Touched, not changed: its identity moved but its sha256 holds, so it loads.
    let bytes = std::fs::read(destructive).expect("read");
    std::fs::write(destructive, &bytes).expect("rewrite the same bytes");
    let run = hook_cached(&project, &cache, &bash("sess-plant", "git push --force"));
    assert!(run.deny_reason().is_some(), "{}", run.stderr());
    assert!(run.stderr().contains("from the cache"), "{}", run.stderr());

    // Another component's valid compiled code copied over this one's: the
    // record's sha256 no longer matches, so it is discarded and recompiled, and
    // destructive-commands (not session-budget's code) judges.
    std::fs::copy(budget, destructive).expect("swap");
    let run = hook_cached(&project, &cache, &bash("sess-plant", "git push --force"));
    let told = run.stderr();
    assert!(
        run.deny_reason().is_some_and(|r| r.contains("force-push")),
        "{told}"
    );
    assert!(
        told.contains("recorded when it was written (altered or replaced)"),
        "{told}"
    );
    assert!(told.contains("sandrail: compiled "), "{told}");
    assert_eq!(std::fs::read(destructive).expect("read"), bytes);

    // One byte of native code patched: discarded too.
    let mut patched = bytes.clone();
    let middle = patched.len() / 2;
    patched[middle] ^= 0x01;
    std::fs::write(destructive, &patched).expect("patch");
    let run = hook_cached(&project, &cache, &bash("sess-plant", "git push --force"));
    assert!(run.deny_reason().is_some(), "{}", run.stderr());
    assert!(
        run.stderr().contains("altered or replaced"),
        "{}",
        run.stderr()
    );

    // Planted: a file (here a valid one) with no record is never loaded.
    std::fs::remove_file(destructive.with_extension("record")).expect("drop the record");
    let run = hook_cached(&project, &cache, &bash("sess-plant", "git push --force"));
    let told = run.stderr();
    assert!(run.deny_reason().is_some(), "{told}");
    assert!(
        told.contains("has no record of being written by sandrail"),
        "{told}"
    );
    assert!(!told.contains("from the cache"), "{told}");
    assert!(destructive.with_extension("record").exists());
}

/// The agent's way to run code of its choosing under an accepted component's
/// name: have sandrail compile its component — with a read-only command, or as
/// a guardrail it adds — then rename the compiled file and its record into the
/// accepted one's place. A look compiles nothing into the cache; a file and
/// record renamed from another component are discarded, and the accepted
/// component judges.
#[test]
fn another_components_code_renamed_into_place_is_never_run() {
    let project = Project::new();
    let cache = project.root.path().join("own-cache");
    // The embedded default: destructive-commands judges Bash, session-budget
    // Write.
    let push = bash("sess-swap", "git push --force origin main");
    let first = hook_cached(&project, &cache, &push);
    assert!(first.deny_reason().is_some(), "{}", first.stderr());
    let destructive = cache_files(&cache);
    assert_eq!(destructive.len(), 1);

    // A look at another config (`check-config`, `inspect`, `audit`) compiles
    // in memory: nothing new in the cache the hook runs code from.
    let other = project.root.path().join("other.toml");
    std::fs::write(
        &other,
        format!("[[guardrail]]\nname = \"mine\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\naction = \"note\"\n"),
    )
    .expect("other config");
    for args in [
        &["check-config"][..],
        &["audit"][..],
        &["inspect", PROBE][..],
    ] {
        let mut cmd = project.cmd();
        cmd.env("SANDRAIL_CACHE_DIR", &cache)
            .env("SANDRAIL_CONFIG", &other)
            .args(args);
        let out = cmd.output().expect("sandrail");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            cache_files(&cache),
            destructive,
            "{args:?} wrote to the cache"
        );
    }

    // Another component the hook did compile (session-budget, on a Write),
    // renamed with its record into destructive-commands' place.
    let write = write("sess-swap", "/home/dev/project/a.rs");
    hook_cached(&project, &cache, &write);
    let budget: Vec<_> = cache_files(&cache)
        .into_iter()
        .filter(|f| !destructive.contains(f))
        .collect();
    assert_eq!(budget.len(), 1);
    let (budget, destructive) = (&budget[0], &destructive[0]);
    std::fs::rename(budget, destructive).expect("rename the code");
    std::fs::rename(
        budget.with_extension("record"),
        destructive.with_extension("record"),
    )
    .expect("rename its record");
    let run = hook_cached(&project, &cache, &push);
    let told = run.stderr();
    assert!(
        run.deny_reason().is_some_and(|r| r.contains("force-push")),
        "session-budget's code judged in destructive-commands' place: {} {told}",
        run.stdout()
    );
    assert!(
        told.contains("its record says it was compiled from component"),
        "{told}"
    );
    assert!(told.contains("sandrail: compiled "), "{told}");
}

/// A state directory the user made with `mkdir` (755 under the usual umask) is
/// made private without a word: only a mode that lets others write, or shuts
/// its owner out, is news.
#[test]
fn a_state_directory_made_with_mkdir_is_made_private_quietly() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    let state = project.state_dir();
    std::fs::create_dir_all(&state).expect("mkdir");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let run = project.hook(&write("sess-mkdir", "/home/dev/project/a.rs"));
    assert!(run.ok(), "{}", run.stderr());
    assert!(
        !run.stderr().contains("had been given mode"),
        "{}",
        run.stderr()
    );
    assert!(
        !run.stdout().contains("had been given mode"),
        "{}",
        run.stdout()
    );
    let mode = std::fs::metadata(&state)
        .expect("state")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700);
}
