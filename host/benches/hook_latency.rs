//! Whole-process latency of `sandrail hook`: what every tool call an agent makes
//! waits for. Reports figures; it does not pass or fail.
//!
//! Runs, interleaved so that machine noise hits all of them alike:
//! - `/bin/true` fed the same payload: the floor of starting any process;
//! - `sandrail hook`, embedded default, PreToolUse Bash, warm cache;
//! - the same with a cold cache (a fresh cache directory each run);
//! - `sandrail hook` on a PreToolUse Write, which the default's stateful
//!   session-budget counts: the cost of a state transaction and its commit.
//!
//! `cargo bench -p sandrail --bench hook-latency`; `SANDRAIL_BENCH_RUNS` sets the
//! number of warm runs (default 300; cold runs are a tenth of that).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SANDRAIL: &str = env!("CARGO_BIN_EXE_sandrail");

fn main() {
    let runs: usize = std::env::var("SANDRAIL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
        .max(10);
    let cold_runs = (runs / 10).max(5);
    let scratch = tempfile::tempdir().expect("temp dir");
    let dir = scratch.path();
    let transcript = dir.join("session.jsonl");
    write_transcript(&transcript);
    let pre_tool_use = |tool_name: &str, tool_input: serde_json::Value| {
        serde_json::json!({
            "session_id": "bench-session",
            "transcript_path": transcript,
            "cwd": dir.join("project"),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool_name,
            "tool_input": tool_input,
            "tool_use_id": "toolu_01ABC",
        })
        .to_string()
    };
    let payload = pre_tool_use(
        "Bash",
        serde_json::json!({"command": "npm test -- --watch=false", "description": "Run the tests", "timeout": 120000}),
    );
    let write_payload = pre_tool_use(
        "Write",
        serde_json::json!({"file_path": dir.join("project/src/lib.rs"), "content": "pub fn answer() -> u32 { 42 }\n"}),
    );
    std::fs::create_dir_all(dir.join("project")).expect("project dir");

    let warm_cache = dir.join("cache");
    // One run to fill the cache, and to check the binary answers at all.
    let first = spawn(SANDRAIL, &payload, dir, &warm_cache);
    assert!(first.1, "sandrail hook failed on the benchmark payload");

    let mut floor = Vec::with_capacity(runs);
    let mut warm = Vec::with_capacity(runs);
    let mut cold = Vec::with_capacity(cold_runs);
    let mut stateful = Vec::with_capacity(runs);
    for i in 0..runs {
        floor.push(spawn("/bin/true", &payload, dir, &warm_cache).0);
        warm.push(spawn(SANDRAIL, &payload, dir, &warm_cache).0);
        stateful.push(spawn(SANDRAIL, &write_payload, dir, &warm_cache).0);
        if i % (runs / cold_runs) == 0 && cold.len() < cold_runs {
            let fresh = dir.join(format!("cold-cache-{i}"));
            cold.push(spawn(SANDRAIL, &payload, dir, &fresh).0);
            let _ = std::fs::remove_dir_all(&fresh);
        }
    }

    let floor = Stats::of(floor);
    let warm = Stats::of(warm);
    let cold = Stats::of(cold);
    let stateful = Stats::of(stateful);
    println!("sandrail hook latency, whole process, PreToolUse Bash, embedded default");
    println!(
        "({} warm runs, {} cold; {} cores)",
        runs,
        cold_runs,
        cores()
    );
    println!();
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>12}",
        "case", "median", "p99", "min", "median/floor"
    );
    for (name, s) in [
        ("/bin/true (floor)", &floor),
        ("sandrail hook, warm cache", &warm),
        ("sandrail hook, cold cache", &cold),
        ("Write, state committed", &stateful),
    ] {
        println!(
            "{:<28} {:>10} {:>10} {:>10} {:>11.2}x",
            name,
            ms(s.median),
            ms(s.p99),
            ms(s.min),
            s.median.as_secs_f64() / floor.median.as_secs_f64()
        );
    }
    println!();
    println!(
        "targets: warm median <= 3 ms (is {}), warm <= 5x the floor (is {:.2}x)",
        ms(warm.median),
        warm.median.as_secs_f64() / floor.median.as_secs_f64()
    );
}

/// Runs one process with the payload on stdin; the wall time and whether it succeeded.
fn spawn(program: &str, payload: &str, dir: &Path, cache: &Path) -> (Duration, bool) {
    let started = Instant::now();
    let mut child = Command::new(program);
    if program == SANDRAIL {
        child.arg("hook");
    }
    let mut child = child
        .current_dir(dir)
        .env("SANDRAIL_STATE_DIR", dir.join("state"))
        .env("SANDRAIL_CACHE_DIR", cache)
        .env("CLAUDE_PROJECT_DIR", dir.join("project"))
        .env_remove("SANDRAIL_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    if let Some(mut stdin) = child.stdin.take() {
        // /bin/true may exit before reading; that is part of its floor.
        let _ = stdin.write_all(payload.as_bytes());
    }
    let ok = child.wait().map(|s| s.success()).unwrap_or(false);
    (started.elapsed(), ok)
}

/// A short but real-shaped transcript: a few turns with tool calls and results.
fn write_transcript(path: &Path) {
    let mut lines = String::new();
    for turn in 0..5 {
        lines.push_str(&format!(
            "{{\"type\":\"user\",\"uuid\":\"u-{turn}\",\"sessionId\":\"bench-session\",\"message\":{{\"role\":\"user\",\"content\":\"step {turn}\"}}}}\n"
        ));
        for call in 0..4 {
            lines.push_str(&format!(
                "{{\"type\":\"assistant\",\"uuid\":\"a-{turn}-{call}\",\"message\":{{\"id\":\"m-{turn}\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"t-{turn}-{call}\",\"name\":\"Bash\",\"input\":{{\"command\":\"cargo check\"}}}}]}}}}\n\
                 {{\"type\":\"user\",\"uuid\":\"r-{turn}-{call}\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"t-{turn}-{call}\",\"content\":\"ok\"}}]}}}}\n"
            ));
        }
    }
    std::fs::write(path, lines).expect("write transcript");
}

struct Stats {
    median: Duration,
    p99: Duration,
    min: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Stats {
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Stats {
            median: at(0.5),
            p99: at(0.99),
            min: samples[0],
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
