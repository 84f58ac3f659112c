//! Judging an event: each rule's `when`, then its `require`, over the facts.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::Key;
use cel::{Context, ExecutionError};
use serde_json::Value;

use crate::message;
use crate::rules::{NAMESPACES, Rule, selected_paths};

/// What a rule says about one event.
#[derive(Debug, PartialEq)]
pub enum Judgement {
    /// `when` did not hold (or could not be read): the rule has nothing to say.
    NotApplicable,
    /// `require` held.
    Holds,
    /// The rule is broken; the message says how.
    Broken(String),
}

/// The CEL variables of one event: each namespace of the facts document, bound
/// to an empty map when absent so that reading any of its fields is an absent
/// field, never an unknown variable.
pub fn context(facts: &Value) -> Context<'static, 'static> {
    let mut context = Context::default();
    for ns in NAMESPACES {
        let value = match facts.get(ns) {
            Some(value @ Value::Object(_)) => to_cel(value),
            _ => cel::Value::Map(HashMap::<Key, cel::Value>::new().into()),
        };
        context.add_variable_from_value(ns, value);
    }
    context
}

/// A JSON value as a CEL value: integers as `int` (or `uint` past its range),
/// other numbers as `double`.
pub fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(members) => cel::Value::Map(
            members
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect::<HashMap<Key, cel::Value>>()
                .into(),
        ),
    }
}

/// Judges one rule. A `when` that is not `true` (false, an absent field, an
/// error, not a boolean) means the rule does not apply. A `require` must be
/// `true`: anything else breaks the rule, and an absent field never passes.
pub fn judge(rule: &Rule, facts: &Value, context: &Context) -> Judgement {
    if let Some(when) = &rule.when
        && !matches!(when.program.execute(context), Ok(cel::Value::Bool(true)))
    {
        return Judgement::NotApplicable;
    }
    let require = &rule.require;
    match require.program.execute(context) {
        Ok(cel::Value::Bool(true)) => Judgement::Holds,
        Ok(cel::Value::Bool(false)) => Judgement::Broken(match &rule.message {
            Some(text) => message::render(text, &rule.name, facts),
            None => format!(
                "Contract \"{}\" does not hold: {}",
                rule.name, require.source
            ),
        }),
        Ok(other) => Judgement::Broken(format!(
            "{}: `{}` gave {}, not true or false, so the rule cannot hold",
            rule.name,
            require.source,
            describe(&other)
        )),
        Err(ExecutionError::NoSuchKey(key) | ExecutionError::UndeclaredReference(key)) => {
            Judgement::Broken(format!(
                "{}: {} is absent, so the rule cannot hold",
                rule.name,
                absent_path(rule, facts, &key)
            ))
        }
        Err(error) => Judgement::Broken(format!(
            "{}: `{}` could not be evaluated ({error}), so the rule cannot hold",
            rule.name, require.source
        )),
    }
}

/// Names the field whose absence failed `require`: the first path the expression
/// selects that the facts do not hold, ending at the missing `key`. When no
/// such path is found, the key alone.
pub fn absent_path(rule: &Rule, facts: &Value, key: &str) -> String {
    for path in selected_paths(&rule.require.program) {
        let mut value = facts;
        for (depth, part) in path.iter().enumerate() {
            match value.get(part) {
                Some(inner) => value = inner,
                None => {
                    // An absent namespace is an empty map: its first field is missing.
                    if depth == 0 {
                        if path.get(1).map(String::as_str) == Some(key) {
                            return path[..2].join(".");
                        }
                    } else if part == key {
                        return path[..=depth].join(".");
                    }
                    break;
                }
            }
        }
    }
    if NAMESPACES.contains(&key) {
        key.to_owned()
    } else {
        format!("the field `{key}`")
    }
}

fn describe(value: &cel::Value) -> String {
    match value {
        cel::Value::Null => "null".into(),
        cel::Value::String(s) => format!("the string {s:?}"),
        cel::Value::Int(i) => format!("the number {i}"),
        cel::Value::UInt(u) => format!("the number {u}"),
        cel::Value::Float(f) => format!("the number {f}"),
        cel::Value::List(_) => "a list".into(),
        cel::Value::Map(_) => "a map".into(),
        other => format!("a value of type {}", other.type_of()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::parse;
    use serde_json::json;

    fn judge_all(rules: Value, facts: Value) -> Vec<Judgement> {
        let rules = parse(&json!({ "rules": rules }));
        assert!(rules.problems.is_empty(), "{:?}", rules.problems);
        let context = context(&facts);
        rules
            .rules
            .iter()
            .map(|rule| judge(rule, &facts, &context))
            .collect()
    }

    #[test]
    fn when_guards_and_require_judges() {
        let rules = json!([{
            "name": "no-destructive",
            "when": "tool.name == 'Bash'",
            "require": "!tool.is_destructive",
            "message": "{rule}: {tool.name} would destroy work ({tool.destructive_reason})",
        }]);
        assert_eq!(
            judge_all(
                rules.clone(),
                json!({"tool": {"name": "Bash", "is_destructive": true, "destructive_reason": "force-push"}})
            ),
            vec![Judgement::Broken(
                "no-destructive: Bash would destroy work (force-push)".into()
            )]
        );
        assert_eq!(
            judge_all(
                rules.clone(),
                json!({"tool": {"name": "Bash", "is_destructive": false}})
            ),
            vec![Judgement::Holds]
        );
        assert_eq!(
            judge_all(rules.clone(), json!({"tool": {"name": "Write"}})),
            vec![Judgement::NotApplicable]
        );
        // A Stop event has no tool: the guard reads an absent field and is silent.
        assert_eq!(
            judge_all(rules, json!({"env": {"cwd": "/p"}})),
            vec![Judgement::NotApplicable]
        );
    }

    #[test]
    fn an_absent_field_never_passes() {
        assert_eq!(
            judge_all(
                json!([{"name": "approved", "require": "platform.approved == true"}]),
                json!({"tool": {"name": "Bash"}})
            ),
            vec![Judgement::Broken(
                "approved: platform.approved is absent, so the rule cannot hold".into()
            )]
        );
        assert_eq!(
            judge_all(
                json!([{"name": "max-files-written",
                        "require": "session.files_written < mandate.max_files_written"}]),
                json!({"mandate": {"max_files_written": 3}, "session": {}})
            ),
            vec![Judgement::Broken(
                "max-files-written: session.files_written is absent, so the rule cannot hold"
                    .into()
            )]
        );
        assert_eq!(
            judge_all(
                json!([{"name": "deep", "require": "tool.input.command != ''"}]),
                json!({"tool": {"input": {}}})
            ),
            vec![Judgement::Broken(
                "deep: tool.input.command is absent, so the rule cannot hold".into()
            )]
        );
        // `!` of an absent field is no way around it.
        assert_eq!(
            judge_all(
                json!([{"name": "n", "require": "!platform.blocked"}]),
                json!({})
            ),
            vec![Judgement::Broken(
                "n: platform.blocked is absent, so the rule cannot hold".into()
            )]
        );
    }

    #[test]
    fn has_tests_for_presence() {
        assert_eq!(
            judge_all(
                json!([{"name": "h", "require": "!has(platform.approved) || platform.approved"}]),
                json!({})
            ),
            vec![Judgement::Holds]
        );
    }

    #[test]
    fn numbers_compare_across_int_and_double() {
        assert_eq!(
            judge_all(
                json!([{"name": "n", "require": "session.files_written < mandate.max && session.ratio < 0.5"}]),
                json!({"session": {"files_written": 2, "ratio": 0.25}, "mandate": {"max": 3}})
            ),
            vec![Judgement::Holds]
        );
    }

    #[test]
    fn a_default_message_quotes_the_rule() {
        assert_eq!(
            judge_all(
                json!([{"name": "bash-only", "require": "tool.name == 'Bash'"}]),
                json!({"tool": {"name": "Write"}})
            ),
            vec![Judgement::Broken(
                "Contract \"bash-only\" does not hold: tool.name == 'Bash'".into()
            )]
        );
    }

    #[test]
    fn errors_and_non_booleans_break_the_rule() {
        let judged = judge_all(
            json!([
                {"name": "not-bool", "require": "tool.name"},
                {"name": "error", "require": "1 / session.zero == 1"},
            ]),
            json!({"tool": {"name": "Bash"}, "session": {"zero": 0}}),
        );
        assert_eq!(
            judged[0],
            Judgement::Broken(
                "not-bool: `tool.name` gave the string \"Bash\", not true or false, so the rule cannot hold"
                    .into()
            )
        );
        match &judged[1] {
            Judgement::Broken(m) => assert!(
                m.starts_with("error: `1 / session.zero == 1` could not be evaluated ("),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
