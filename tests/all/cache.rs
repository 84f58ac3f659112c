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
