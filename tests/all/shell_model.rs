//! The shell model through the real binary: what a command line runs (wrappers,
//! bash's grammar, git's own ways, deletions however spelled) and writes, judged
//! by the embedded default's destructive-commands and listed in `tool` facts;
//! everyday look-alikes that must pass; and the bounds on time and memory.

use serde_json::{Value, json};

use crate::facts::{at, facts, tool_call};
use crate::support::*;

/// The `destructive_reason` the host gives a Bash line, or None.
fn reason(project: &Project, line: &str) -> Option<String> {
    let (f, _) = facts(project, &tool_call("Bash", json!({"command": line})), None);
    at(&f, "tool.destructive_reason")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Every line of `table` gets the reason it names (None: it passes).
fn assert_table(table: &[(&str, Option<&str>)]) {
    let project = Project::new();
    let wrong: Vec<String> = table
        .iter()
        .filter_map(|(line, expected)| {
            let got = reason(&project, line);
            (got.as_deref() != *expected)
                .then(|| format!("{line:?}: {got:?}, expected {expected:?}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A variable of 2,048 words referenced 15,000 times expands to 30 million words:
/// past the expansion budget the line is unanalysable, and the hook answers
/// within its deadline under a memory limit instead of being killed (which would
/// let the call run).
#[test]
fn expansion_is_bounded_in_time_and_memory() {
    let project = Project::new();
    let value = vec!["a"; 2048].join(" ");
    let line = format!(
        "x='{value}'; echo {}; git push --force",
        "$x ".repeat(15_000)
    );
    // wasmtime reserves 4 GiB of address space per guardrail instance: the limit
    // leaves it that and 2 GiB besides.
    let cmd = project.cmd_after(&format!("ulimit -v {}", 6 << 20));
    let started = std::time::Instant::now();
    let run = project.hook_with(cmd, &bash("sess-budget", &line));
    let took = started.elapsed();
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    let refused = run.deny_reason().expect("refused");
    assert!(refused.starts_with("[destructive-commands/"), "{refused}");
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
}
