//! destructive-commands on destructive_command_guard's own test corpus (at the
//! MIT-licensed commit 1a52415), labelled as dcg labels it: see
//! tests/data/dcg-corpus/README.md.

use serde_json::{Value, json};

use crate::facts::{at, facts, tool_call};
use crate::support::*;

/// Destructive by dcg's labels but outside sandrail's vocabulary (the reasons
/// table in tests/data/destructive-corpus/README.md): printed apart, still counted.
const OUTSIDE_VOCABULARY: &[&str] = &["rm -rf *", "rm -rf .*", "rm -rf ./build"];

/// destructive-commands on tests/data/dcg-corpus (dcg's true- and false-positive
/// suites), through `sandrail facts`: prints recall and specificity, and holds
/// them at the figures measured when the corpus was added.
#[test]
fn destructive_commands_on_the_dcg_corpus() {
    let project = Project::new();
    let corpus = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/dcg-corpus/corpus.jsonl"),
    )
    .expect("read the corpus");
    let (mut caught, mut missed, mut passed, mut false_alarms) =
        (0u32, Vec::new(), 0u32, Vec::new());
    for line in corpus.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("corpus line");
        let command = case["command"].as_str().expect("command");
        let p = tool_call("Bash", json!({"command": command}));
        let (f, _) = facts(&project, &p, None);
        let flagged = at(&f, "tool.is_destructive") == Some(&json!(true));
        match (case["destructive"].as_bool(), flagged) {
            (Some(true), true) => caught += 1,
            (Some(true), false) => missed.push(command.to_owned()),
            (_, false) => passed += 1,
            (_, true) => false_alarms.push(command.to_owned()),
        }
    }
    let recall = f64::from(caught) / (f64::from(caught) + missed.len() as f64);
    let specificity = f64::from(passed) / (f64::from(passed) + false_alarms.len() as f64);
    let outside = |c: &String| OUTSIDE_VOCABULARY.contains(&c.as_str());
    // Every OUTSIDE_VOCABULARY line is a destructive case of the corpus.
    let inside = caught as usize + missed.len() - OUTSIDE_VOCABULARY.len();
    let missed_inside = missed.iter().filter(|c| !outside(c)).count();
    let mark = |c: &String| {
        if outside(c) {
            format!("{c:?}  (outside sandrail's vocabulary)")
        } else {
            format!("{c:?}")
        }
    };
    eprintln!(
        "dcg corpus: recall {:.1}% ({caught} of {}; {} of {inside} inside sandrail's vocabulary), specificity {:.1}% ({passed} of {})\nmissed:\n  {}\nfalse alarms:\n  {}",
        recall * 100.0,
        caught as usize + missed.len(),
        inside - missed_inside,
        specificity * 100.0,
        passed as usize + false_alarms.len(),
        missed.iter().map(mark).collect::<Vec<_>>().join("\n  "),
        false_alarms
            .iter()
            .map(mark)
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    assert!(recall >= 0.812, "recall fell to {recall:.3}");
    assert!(specificity >= 1.0, "specificity fell to {specificity:.3}");
}
