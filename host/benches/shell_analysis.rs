//! In-process cost of the shell analysis and the tool facts derived from it, on
//! the lines `hook-latency` sends: a short command, the 40-command line, and a
//! variable referenced past the expansion budget. Reports figures; it does not
//! pass or fail.
//!
//! `cargo bench -p sandrail --bench shell-analysis`; `SANDRAIL_BENCH_RUNS` sets
//! the number of runs (default 2,000).

use std::time::Instant;

use sandrail::facts::Patterns;
use sandrail::protocol::HookInput;

fn main() {
    let runs: usize = std::env::var("SANDRAIL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
        .max(10);
    let long_line = format!(
        "git add -A && git commit -m \"$(cat <<'EOF'\nFix the parser (see #12)\n\nDon't rm -rf anything.\nEOF\n)\" && {} && curl -fsS https://example.com/health | jq .status > status.json",
        (0..36)
            .map(|i| format!("FOO={i} timeout 5 bash -c 'grep -r pattern{i} src/ | head -n 5'"))
            .collect::<Vec<_>>()
            .join(" && ")
    );
    let value = vec!["a"; 2048].join(" ");
    let expanded = format!(
        "x='{value}'; echo {}; git push --force",
        "$x ".repeat(5_000)
    );
    let patterns = Patterns::default();
    println!(
        "{:<34} {:>10} {:>10} {:>10}",
        "tool facts of", "median", "p95", "max"
    );
    for (name, line) in [
        ("ls -la", "ls -la".to_owned()),
        ("the 40-command line", long_line),
        ("5,000 references past the budget", expanded),
    ] {
        let payload = serde_json::json!({
            "session_id": "bench",
            "cwd": "/home/dev/project",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": line},
        })
        .to_string();
        let input = HookInput::parse(payload).expect("a PreToolUse payload");
        let runs = if line.len() > 10_000 { runs / 20 } else { runs };
        let mut times: Vec<f64> = (0..runs.max(5))
            .map(|_| {
                let started = Instant::now();
                let facts = sandrail::facts::derive(
                    &input,
                    &patterns,
                    None,
                    Some(std::path::Path::new("/home/dev/project")),
                );
                std::hint::black_box(&facts);
                started.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
        println!(
            "{name:<34} {:>7.3} ms {:>7.3} ms {:>7.3} ms",
            at(0.5),
            at(0.95),
            at(1.0)
        );
    }
}
