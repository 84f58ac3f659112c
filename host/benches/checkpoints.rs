//! What a checkpoint costs the hook: whole-process latency of `sandrail hook`
//! on a PreToolUse Bash call in a git repository of 10,000 and of 100,000
//! files. Reports figures; it does not pass or fail.
//!
//! For each repository, interleaved so that machine noise hits all alike:
//! - the first checkpoint, taken at SessionStart (every file hashed and kept);
//! - a Bash call that takes a checkpoint, one file edited before each run
//!   (what an agent's session is made of: the target is a median under 40 ms
//!   at 10,000 files);
//! - the same on a tree that did not change since the last checkpoint;
//! - a Bash call that only reads (`git status`), which takes none: the hook
//!   without the checkpoint, so the difference is the checkpoint's cost;
//! - `/bin/true` fed the same payload: the floor of starting any process.
//!
//! Then what the store holds: its size against the repository's, and the
//! bytes one edited file added.
//!
//! `cargo bench -p sandrail --bench checkpoints`; `SANDRAIL_BENCH_RUNS` sets
//! the warm runs (default 100), `SANDRAIL_BENCH_SIZES` the repositories
//! (default `10000,100000`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SANDRAIL: &str = env!("CARGO_BIN_EXE_sandrail");

fn main() {
    let runs: usize = std::env::var("SANDRAIL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
        .max(5);
    let sizes: Vec<usize> = std::env::var("SANDRAIL_BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("git is not installed: the benchmark makes git repositories; skipped");
        return;
    }
    let scratch = tempfile::tempdir().expect("temp dir");
    let dir = std::fs::canonicalize(scratch.path()).expect("temp dir");
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>10}",
        "", "median", "p90", "min", "x floor"
    );
    for files in sizes {
        bench(&dir.join(format!("repo-{files}")), files, runs);
    }
    forget_bindings(&dir);
}

fn bench(root: &Path, files: usize, runs: usize) {
    let project = root.join("project");
    let made = Instant::now();
    make_repository(&project, files);
    let repository_bytes = du(&project);
    eprintln!(
        "made a repository of {files} files ({}) in {:.1} s",
        human(repository_bytes),
        made.elapsed().as_secs_f64()
    );
    let env = Env {
        state: root.join("state"),
        cache: root.join("cache"),
        home: root.join("home"),
        project: project.clone(),
    };
    std::fs::create_dir_all(&env.home).expect("home");
    let start = payload(&project, "SessionStart", None);
    let writes = payload(&project, "PreToolUse", Some("make build"));
    let reads = payload(&project, "PreToolUse", Some("git status"));

    // git packs a new repository's objects in the background after its
    // commit; a file written in the last 2 s is hashed again at each
    // checkpoint (its stat cannot vouch for it yet). Measured as a project is
    // between an agent's calls: settled.
    std::thread::sleep(Duration::from_secs(3));
    let (first, ok) = env.hook(&start);
    assert!(ok, "sandrail hook failed at SessionStart");
    let store_after_first = du(&env.state.join("checkpoints"));
    // Warm the compiled components and the page cache.
    env.hook(&writes);
    env.hook(&reads);

    let edited = project.join("src/mod0/sub0/file0.rs");
    let mut floor = Vec::with_capacity(runs);
    let mut one_edited = Vec::with_capacity(runs);
    let mut clean = Vec::with_capacity(runs);
    let mut read_only = Vec::with_capacity(runs);
    let store_before = du(&env.state.join("checkpoints"));
    for n in 0..runs {
        floor.push(time_true(&writes));
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&edited)
            .expect("the edited file");
        writeln!(file, "// edit {n}").expect("edit");
        drop(file);
        one_edited.push(env.hook(&writes).0);
        clean.push(env.hook(&writes).0);
        read_only.push(env.hook(&reads).0);
    }
    let store_after = du(&env.state.join("checkpoints"));
    let added = added_by_edits(&env.state);
    let floor = Stats::of(floor);
    println!(
        "-- a git repository of {files} files ({})",
        human(repository_bytes)
    );
    println!(
        "{:<44} {:>10}",
        "first checkpoint, at SessionStart",
        ms(first)
    );
    row(
        "Bash call, one file edited before it",
        &Stats::of(one_edited),
        &floor,
    );
    row(
        "Bash call, nothing changed since the last",
        &Stats::of(clean),
        &floor,
    );
    row(
        "Bash call that only reads (no checkpoint)",
        &Stats::of(read_only),
        &floor,
    );
    row("/bin/true (the floor)", &floor, &floor);
    println!(
        "store after the first checkpoint: {} on disk (the repository: {}); {} checkpoints later: {} (+{}); a checkpoint after one edit added {} of objects (median), besides its record",
        human(store_after_first),
        human(repository_bytes),
        runs * 2,
        human(store_after),
        human(store_after.saturating_sub(store_before)),
        human(added),
    );
}

/// The median of what the checkpoints that added anything added to the
/// store (`added_bytes` in their records): the checkpoints after one edit.
fn added_by_edits(state: &Path) -> u64 {
    let mut added: Vec<u64> = Vec::new();
    for store in std::fs::read_dir(state.join("checkpoints"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for record in std::fs::read_dir(store.path().join("records"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let Ok(text) = std::fs::read_to_string(record.path()) else {
                continue;
            };
            let Ok(record) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            let bytes = record["added_bytes"].as_u64().unwrap_or(0);
            if bytes > 0 && record["occasion"] == "call" {
                added.push(bytes);
            }
        }
    }
    added.sort_unstable();
    added.get(added.len() / 2).copied().unwrap_or(0)
}

struct Env {
    state: PathBuf,
    cache: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

impl Env {
    /// `sandrail hook` with `payload` on stdin: its wall time, and whether it
    /// succeeded.
    fn hook(&self, payload: &str) -> (Duration, bool) {
        let started = Instant::now();
        let mut child = Command::new(SANDRAIL)
            .arg("hook")
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("SANDRAIL_STATE_DIR", &self.state)
            .env("SANDRAIL_CACHE_DIR", &self.cache)
            .env("CLAUDE_PROJECT_DIR", &self.project)
            .env("SANDRAIL_SYSLOG_SOCKET", self.home.join("no-syslog.sock"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sandrail");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(payload.as_bytes())
            .expect("payload");
        let status = child.wait().expect("wait");
        (started.elapsed(), status.success())
    }
}

fn time_true(payload: &str) -> Duration {
    let started = Instant::now();
    let mut child = Command::new("/bin/true")
        .stdin(Stdio::piped())
        .spawn()
        .expect("true");
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(payload.as_bytes());
    let _ = child.wait();
    started.elapsed()
}

fn payload(project: &Path, event: &str, command: Option<&str>) -> String {
    let mut payload = serde_json::json!({
        "session_id": "bench-session",
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": event,
    });
    match command {
        Some(command) => {
            payload["tool_name"] = serde_json::json!("Bash");
            payload["tool_input"] = serde_json::json!({"command": command});
            payload["tool_use_id"] = serde_json::json!("toolu_01ABC");
        }
        None => payload["source"] = serde_json::json!("startup"),
    }
    payload.to_string()
}

/// A repository of `files` source files of a few hundred bytes to a few
/// KiB, 20 to a directory, committed, with build output git ignores.
fn make_repository(project: &Path, files: usize) {
    std::fs::create_dir_all(project).expect("project");
    let mut seed = 0x2545_f491_u64;
    for n in 0..files {
        let dir = project.join(format!("src/mod{}/sub{}", n / 1000, n / 20));
        if n % 20 == 0 {
            std::fs::create_dir_all(&dir).expect("dir");
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let lines = 5 + (seed % 60) as usize;
        let body: String = (0..lines)
            .map(|l| {
                format!(
                    "pub fn f{n}_{l}() -> u64 {{ {} }}\n",
                    seed.wrapping_mul(l as u64 + 1) % 1000
                )
            })
            .collect();
        std::fs::write(dir.join(format!("file{}.rs", n % 20)), body).expect("file");
    }
    std::fs::write(project.join(".gitignore"), "target/\n").expect("gitignore");
    std::fs::create_dir_all(project.join("target/debug")).expect("target");
    for n in 0..200 {
        std::fs::write(project.join(format!("target/debug/obj{n}.o")), [0u8; 4096]).expect("obj");
    }
    git(project, &["init", "-q"]);
    git(project, &["add", "-A"]);
    git(project, &["commit", "-q", "-m", "the repository"]);
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .args(args)
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

/// The bytes a directory's files take on disk (as `du` counts them).
fn du(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => du(&entry.path()),
            Ok(meta) => meta.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

/// The bindings the hooks made for the scratch projects, under this
/// account's home, removed.
fn forget_bindings(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let project = entry.path().join("project");
        if let Some(record) = sandrail::locations::binding::record_of(&project) {
            let _ = std::fs::remove_file(record);
        }
    }
}

struct Stats {
    median: Duration,
    p90: Duration,
    min: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Stats {
        samples.sort();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Stats {
            median: at(0.5),
            p90: at(0.9),
            min: samples[0],
        }
    }
}

fn row(name: &str, s: &Stats, floor: &Stats) {
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>9.2}x",
        name,
        ms(s.median),
        ms(s.p90),
        ms(s.min),
        s.median.as_secs_f64() / floor.median.as_secs_f64()
    );
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn human(bytes: u64) -> String {
    sandrail::checkpoint::human_bytes(bytes)
}
