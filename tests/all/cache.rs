//! Compiled components are cached on disk and reused by later runs.

use crate::support::*;

fn cache_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
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
fn a_directory_others_can_write_is_not_used() {
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

    // Opened to everyone: neither the cache nor the state is used, and the hook
    // says so and still judges.
    for dir in [&cache, &project.state_dir()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    }
    for file in cache_files(&cache) {
        std::fs::write(&file, b"planted").expect("plant");
    }
    let run = hook(&bash("sess-perm", "git push --force origin main"));
    assert!(
        run.deny_reason().is_some_and(|r| r.contains("force-push")),
        "{}",
        run.stdout()
    );
    let told = run.stderr();
    assert!(
        told.contains(&format!(
            "the compiled-code cache {} can be written by other users, so it is not used",
            cache.display()
        )),
        "{told}"
    );
    assert!(!told.contains("loaded"), "{told}");
    let run = hook(&write("sess-perm", "/home/dev/project/b.rs"));
    assert!(
        run.stderr().contains(&format!(
            "the state directory {} can be written by other users, so it is not used",
            project.state_dir().display()
        )),
        "{}",
        run.stderr()
    );
    for file in cache_files(&cache) {
        assert_eq!(std::fs::read(&file).expect("read"), b"planted");
    }
}
