//! contracts: rules written in CEL (the Common Expression Language) over the
//! facts the host derives for each event.
//!
//! ```toml
//! [[guardrail.config.rules]]
//! name = "max-files-written"
//! when = "tool.is_write"                                        # optional: default every event
//! require = "session.files_written < mandate.max_files_written" # must hold
//! message = "This task may write at most {mandate.max_files_written} files."
//! ```
//!
//! Each fact namespace (`tool`, `session`, `case`, `platform`, `env`, `mandate`)
//! is a CEL variable; an absent one is an empty map. A rule applies when its
//! `when` is `true` (an absent field, an error or a non-boolean means it does
//! not); then its `require` must be `true`. Anything else breaks the rule: false,
//! an error, a non-boolean, and a field that is absent — which never passes by
//! accident. One verdict per event: the first broken rule, in config order.
//!
//! The guardrail exports `configure`: `sandrail check-config` reports every rule
//! that does not parse, reads an unknown variable or calls an unknown function,
//! with the rule's name and the line and column; and the host learns which
//! state-costing namespaces (`session`, `case`) the rules read, and which fact
//! paths, so it can report a field the facts never hold (`tool.comand`).

mod judge;
mod message;
mod rules;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use sandrail_guest::{Configure, Event, Guardrail, Needs, Problem, Result, Verdict, log};

use judge::Judgement;
use rules::Rules;

/// The rules of each config seen by this instance, compiled once: a config is
/// parsed once per process, not once per rule per event.
fn compiled(config: &serde_json::Value) -> &'static Rules {
    static CACHE: OnceLock<Mutex<HashMap<String, &'static Rules>>> = OnceLock::new();
    let key = config.to_string();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    cache
        .entry(key)
        .or_insert_with(|| Box::leak(Box::new(rules::parse(config))))
}

/// The first rule that `facts` breaks, in config order, as (rule, message).
fn first_broken(rules: &Rules, facts: &serde_json::Value) -> Option<(String, String)> {
    let context = judge::context(facts);
    rules
        .rules
        .iter()
        .find_map(|rule| match judge::judge(rule, facts, &context) {
            Judgement::Broken(message) => Some((rule.name.clone(), message)),
            Judgement::Holds | Judgement::NotApplicable => None,
        })
}

struct Contracts;

impl Guardrail for Contracts {
    fn evaluate(event: &Event) -> Result<Verdict> {
        let rules = compiled(event.config());
        if !rules.problems.is_empty() {
            // The rules that compiled still judge; the others are named once per event.
            let named: Vec<String> = rules
                .problems
                .iter()
                .map(|p| match &p.item {
                    Some(item) => format!("rule {item}: {}", p.message),
                    None => p.message.clone(),
                })
                .collect();
            log::error(&format!(
                "{} problem(s) in the config, rules with problems are skipped (see `sandrail check-config`): {}",
                named.len(),
                named.join("; ")
            ));
        }
        Ok(match first_broken(rules, event.facts()) {
            Some((rule, message)) => Verdict::violation(rule, message),
            None => Verdict::pass(),
        })
    }
}

impl Configure for Contracts {
    fn check(config: &serde_json::Value) -> std::result::Result<Needs, Vec<Problem>> {
        let rules = compiled(config);
        if rules.problems.is_empty() {
            Ok(Needs::facts(rules.needs()))
        } else {
            Err(rules
                .problems
                .iter()
                .map(|p| Problem::new(p.item.as_deref(), p.message.clone()))
                .collect())
        }
    }
}

sandrail_guest::export_configurable!(Contracts);

#[cfg(test)]
mod tests {
    use super::*;
    use sandrail_guest::EventKind;
    use serde_json::json;

    #[test]
    fn the_first_broken_rule_in_config_order_is_reported() {
        let config = json!({"rules": [
            {"name": "holds", "require": "tool.name == 'Bash'"},
            {"name": "first", "require": "tool.name == 'Write'", "message": "first {tool.name}"},
            {"name": "second", "require": "false"},
        ]});
        let rules = compiled(&config);
        assert_eq!(
            first_broken(rules, &json!({"tool": {"name": "Bash"}})),
            Some(("first".into(), "first Bash".into()))
        );
        // Compiled once: the same config gives the same rules.
        assert!(std::ptr::eq(rules, compiled(&config)));
    }

    #[test]
    fn check_reports_problems_or_needs() {
        let bad = json!({"rules": [{"name": "r", "require": "("}]});
        let problems = Contracts::check(&bad).unwrap_err();
        assert_eq!(problems[0].item.as_deref(), Some("r"));
        let good = json!({"rules": [{"name": "r", "require": "case.open == false"}]});
        assert_eq!(
            Contracts::check(&good).unwrap().facts,
            vec!["case", "case.open"]
        );
    }

    #[test]
    fn an_event_is_judged_on_its_facts() {
        let event = Event::for_test(
            EventKind::PreToolUse,
            Some("Bash"),
            json!({"command": "git push --force"}),
            json!({"rules": [{"name": "safe", "when": "tool.name == 'Bash'", "require": "!tool.is_destructive"}]}),
        )
        .with_facts(json!({"tool": {"name": "Bash", "is_destructive": true}}));
        match Contracts::evaluate(&event).unwrap() {
            Verdict::Violation(v) => assert_eq!(v.rule, "safe"),
            _ => panic!("not a violation"),
        }
    }
}
