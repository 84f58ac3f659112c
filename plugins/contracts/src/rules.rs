//! The config: rules read from `[[guardrail.config.rules]]`, their expressions
//! compiled, and every problem with them named by rule and position.

use std::collections::BTreeSet;

use cel::Program;
use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

/// The fact namespaces, each bound as a CEL variable.
pub const NAMESPACES: [&str; 6] = ["tool", "session", "case", "platform", "env", "mandate"];
/// The namespaces whose upkeep costs the host a state write per event.
pub const STATE_COSTING: [&str; 2] = ["session", "case"];
/// Identifiers CEL resolves without a variable: the type names.
const TYPE_NAMES: [&str; 10] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];
/// The keys a rule takes.
const RULE_KEYS: [&str; 4] = ["name", "when", "require", "message"];
/// The longest rule name the host accepts in a violation, in bytes.
const MAX_NAME_BYTES: usize = 128;

/// One CEL expression of a rule, compiled.
#[derive(Debug)]
pub struct Expression {
    pub source: String,
    pub program: Program,
}

/// One rule: when it applies, what must hold, what to say when it does not.
#[derive(Debug)]
pub struct Rule {
    pub name: String,
    pub when: Option<Expression>,
    pub require: Expression,
    pub message: Option<String>,
}

/// Something wrong with the config; `item` names the rule when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub item: Option<String>,
    pub message: String,
}

impl Problem {
    fn new(item: Option<&str>, message: impl Into<String>) -> Self {
        Problem {
            item: item.map(str::to_owned),
            message: message.into(),
        }
    }
}

/// The rules of a config: those that compiled, and the problems of the rest.
#[derive(Debug, Default)]
pub struct Rules {
    pub rules: Vec<Rule>,
    pub problems: Vec<Problem>,
}

impl Rules {
    /// What the rules read, for the host: the state-costing namespaces (`session`,
    /// `case`), so it keeps them, then every fact path (`tool.command`) in rule
    /// order, so `sandrail check-config` can check each against the facts it
    /// derives. Paths tested by `has()` are left out: they never fail.
    pub fn needs(&self) -> Vec<String> {
        let mut namespaces = BTreeSet::new();
        let mut paths: Vec<String> = Vec::new();
        for rule in &self.rules {
            for expression in rule.when.iter().chain([&rule.require]) {
                for (name, _) in free_identifiers(&expression.program) {
                    if STATE_COSTING.contains(&name.as_str()) {
                        namespaces.insert(name);
                    }
                }
                for path in selected_paths(&expression.program) {
                    paths.push(path.join("."));
                }
            }
            if let Some(message) = &rule.message {
                for placeholder in crate::message::placeholders(message) {
                    if let Some(ns) = STATE_COSTING
                        .iter()
                        .find(|ns| placeholder.split('.').next() == Some(**ns))
                    {
                        namespaces.insert((*ns).to_owned());
                    }
                    if placeholder.contains('.') {
                        paths.push(placeholder.to_owned());
                    }
                }
            }
        }
        let mut seen = BTreeSet::new();
        paths.retain(|path| seen.insert(path.clone()));
        namespaces.into_iter().chain(paths).collect()
    }
}

/// Reads and compiles the rules of `config` (the entry's `[guardrail.config]`).
/// A rule with a problem is left out; the others stand.
pub fn parse(config: &Value) -> Rules {
    let mut out = Rules::default();
    let table = match config {
        Value::Object(table) => table,
        Value::Null => {
            out.problems.push(Problem::new(
                None,
                "no rules: give each in a [[guardrail.config.rules]] table",
            ));
            return out;
        }
        _ => {
            out.problems.push(Problem::new(
                None,
                "the config must be a table holding `rules`",
            ));
            return out;
        }
    };
    for key in table.keys().filter(|k| *k != "rules") {
        out.problems.push(Problem::new(
            None,
            format!("unknown key `{key}`: the config takes only `rules`"),
        ));
    }
    let rules = match table.get("rules") {
        Some(Value::Array(rules)) if !rules.is_empty() => rules,
        Some(Value::Array(_)) | None => {
            out.problems.push(Problem::new(
                None,
                "no rules: give each in a [[guardrail.config.rules]] table",
            ));
            return out;
        }
        Some(_) => {
            out.problems.push(Problem::new(
                None,
                "`rules` must be an array of tables ([[guardrail.config.rules]])",
            ));
            return out;
        }
    };
    let mut names = BTreeSet::new();
    for (index, rule) in rules.iter().enumerate() {
        let label = format!("#{}", index + 1);
        match parse_rule(rule, &label) {
            Ok(rule) => {
                if !names.insert(rule.name.clone()) {
                    out.problems.push(Problem::new(
                        Some(&rule.name),
                        "another rule already has this name; each rule needs its own",
                    ));
                } else {
                    out.rules.push(rule);
                }
            }
            Err(problems) => {
                if let Some(name) = rule.get("name").and_then(Value::as_str) {
                    names.insert(name.to_owned());
                }
                out.problems.extend(problems);
            }
        }
    }
    out
}

/// One rule, or everything wrong with it. `label` (`#3`) names a rule that has no
/// usable name of its own.
fn parse_rule(rule: &Value, label: &str) -> Result<Rule, Vec<Problem>> {
    let Value::Object(table) = rule else {
        return Err(vec![Problem::new(
            Some(label),
            "a rule must be a table with `name` and `require`",
        )]);
    };
    let mut problems = Vec::new();
    let text = |key: &str, problems: &mut Vec<Problem>, item: &str| match table.get(key) {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            problems.push(Problem::new(
                Some(item),
                format!("`{key}` must be a string"),
            ));
            None
        }
    };
    let name = text("name", &mut problems, label);
    let name = match name {
        Some(name) => match name_problem(&name) {
            Some(why) => {
                problems.push(Problem::new(Some(label), why));
                None
            }
            None => Some(name),
        },
        None => {
            if !table.contains_key("name") {
                problems.push(Problem::new(Some(label), "the rule has no `name`"));
            }
            None
        }
    };
    let item = name.clone().unwrap_or_else(|| label.to_owned());
    for key in table.keys().filter(|k| !RULE_KEYS.contains(&k.as_str())) {
        problems.push(Problem::new(
            Some(&item),
            format!("unknown key `{key}`: a rule takes name, when, require and message"),
        ));
    }
    let when = text("when", &mut problems, &item).and_then(|source| {
        compile("when", &source)
            .map_err(|messages| {
                problems.extend(messages.into_iter().map(|m| Problem::new(Some(&item), m)))
            })
            .ok()
    });
    let require = match text("require", &mut problems, &item) {
        Some(source) => match compile("require", &source) {
            Ok(expression) => Some(expression),
            Err(messages) => {
                problems.extend(messages.into_iter().map(|m| Problem::new(Some(&item), m)));
                None
            }
        },
        None => {
            if !table.contains_key("require") {
                problems.push(Problem::new(
                    Some(&item),
                    "the rule has no `require`: the expression that must hold",
                ));
            }
            None
        }
    };
    let message = text("message", &mut problems, &item);
    if let Some(message) = &message {
        for placeholder in crate::message::placeholders(message) {
            if placeholder != "rule" && !is_namespace_path(&placeholder) {
                problems.push(Problem::new(
                    Some(&item),
                    format!(
                        "message: unknown placeholder {{{placeholder}}}: use {{rule}} or a fact such as {{tool.name}} (namespaces: {})",
                        NAMESPACES.join(", ")
                    ),
                ));
            }
        }
    }
    match (name, require) {
        (Some(name), Some(require)) if problems.is_empty() => Ok(Rule {
            name,
            when,
            require,
            message,
        }),
        _ => Err(problems),
    }
}

/// Why `name` cannot name a rule, if it cannot: the host takes a rule name of
/// 1–128 bytes without spaces.
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("the rule's `name` is empty".into())
    } else if name.len() > MAX_NAME_BYTES {
        Some(format!(
            "the rule's `name` is longer than {MAX_NAME_BYTES} bytes"
        ))
    } else if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some(format!(
            "the rule's `name` {name:?} holds a space or a control character"
        ))
    } else {
        None
    }
}

/// Whether `text` is a dotted path starting at a namespace: `tool.name`.
fn is_namespace_path(text: &str) -> bool {
    let mut parts = text.split('.');
    parts.next().is_some_and(|ns| NAMESPACES.contains(&ns))
        && parts.all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

/// Compiles one expression of a rule (`what` is `when` or `require`) and checks
/// what the parser cannot: every variable is a fact namespace, every function
/// exists. Each message says where, as line and column inside the expression.
pub fn compile(what: &str, source: &str) -> Result<Expression, Vec<String>> {
    let program = Program::compile(source).map_err(|errors| {
        errors
            .errors
            .iter()
            .map(|e| {
                // The parser's positions are 1-based lines and columns.
                format!("{what}: line {}, column {}: {}", e.pos.0, e.pos.1, e.msg)
            })
            .collect::<Vec<_>>()
    })?;
    let mut problems = Vec::new();
    for (name, id) in free_identifiers(&program) {
        if NAMESPACES.contains(&name.as_str()) || TYPE_NAMES.contains(&name.as_str()) {
            continue;
        }
        problems.push(format!(
            "{what}: {}unknown variable `{name}`: the facts are {}",
            position(&program, source, id),
            NAMESPACES.join(", ")
        ));
    }
    for (name, id) in unknown_functions(&program) {
        problems.push(format!(
            "{what}: {}unknown function `{name}`",
            call_position(&program, source, id, &name),
        ));
    }
    if problems.is_empty() {
        Ok(Expression {
            source: source.to_owned(),
            program,
        })
    } else {
        Err(problems)
    }
}

/// `line L, column C: ` for the node `id`, or nothing when the parser kept no
/// position for it.
fn position(program: &Program, source: &str, id: u64) -> String {
    let Some((start, _)) = program.source_info().offset_for(id) else {
        return String::new();
    };
    let (line, column) = line_column(source, start as usize);
    format!("line {line}, column {column}: ")
}

/// Like [`position`], for a call of `name`: the parser places a call at its `(`,
/// and the name written before it is where a reader looks.
fn call_position(program: &Program, source: &str, id: u64, name: &str) -> String {
    let Some((start, _)) = program.source_info().offset_for(id) else {
        return String::new();
    };
    let mut start = start as usize;
    if source.get(start..).is_some_and(|s| s.starts_with('('))
        && source.get(..start).is_some_and(|s| s.ends_with(name))
    {
        start -= name.len();
    }
    let (line, column) = line_column(source, start);
    format!("line {line}, column {column}: ")
}

/// The 1-based line and column (in characters) of a byte offset.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut column = 1;
    for (at, c) in source.char_indices() {
        if at >= offset {
            break;
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    (line, column)
}

/// The identifiers an expression reads that no comprehension binds, in the order
/// they are written, each once, with the node of its first use.
pub fn free_identifiers(program: &Program) -> Vec<(String, u64)> {
    let mut found: Vec<(String, u64)> = Vec::new();
    let mut bound = Vec::new();
    walk_identifiers(program.expression(), &mut bound, &mut found);
    let info = program.source_info();
    found.sort_by_key(|(_, id)| info.offset_for(*id).map(|(start, _)| start));
    let mut seen = BTreeSet::new();
    found.retain(|(name, _)| seen.insert(name.clone()));
    found
}

fn walk_identifiers(expr: &IdedExpr, bound: &mut Vec<String>, found: &mut Vec<(String, u64)>) {
    match &expr.expr {
        Expr::Ident(name) => {
            // Names beginning with '@' are the parser's own (macro accumulators).
            if !name.starts_with('@') && !bound.contains(name) {
                found.push((name.clone(), expr.id));
            }
        }
        Expr::Select(select) => walk_identifiers(&select.operand, bound, found),
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                walk_identifiers(target, bound, found);
            }
            for arg in &call.args {
                walk_identifiers(arg, bound, found);
            }
        }
        Expr::List(list) => {
            for element in &list.elements {
                walk_identifiers(element, bound, found);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                walk_entry(&entry.expr, bound, found);
            }
        }
        Expr::Struct(st) => {
            for entry in &st.entries {
                walk_entry(&entry.expr, bound, found);
            }
        }
        Expr::Comprehension(comp) => {
            walk_identifiers(&comp.iter_range, bound, found);
            walk_identifiers(&comp.accu_init, bound, found);
            let depth = bound.len();
            bound.push(comp.iter_var.clone());
            bound.extend(comp.iter_var2.iter().cloned());
            bound.push(comp.accu_var.clone());
            walk_identifiers(&comp.loop_cond, bound, found);
            walk_identifiers(&comp.loop_step, bound, found);
            walk_identifiers(&comp.result, bound, found);
            bound.truncate(depth);
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn walk_entry(entry: &EntryExpr, bound: &mut Vec<String>, found: &mut Vec<(String, u64)>) {
    match entry {
        EntryExpr::StructField(field) => walk_identifiers(&field.value, bound, found),
        EntryExpr::MapEntry(entry) => {
            walk_identifiers(&entry.key, bound, found);
            walk_identifiers(&entry.value, bound, found);
        }
    }
}

/// Functions called by name that the standard environment does not have.
/// Operators (`_==_`, `!_`, `@in`) are the parser's and always exist.
fn unknown_functions(program: &Program) -> Vec<(String, u64)> {
    let mut calls = Vec::new();
    walk_calls(program.expression(), &mut calls);
    let mut seen = BTreeSet::new();
    calls.retain(|(name, _)| {
        name.starts_with(|c: char| c.is_ascii_alphabetic())
            && seen.insert(name.clone())
            && !is_standard_function(name)
    });
    calls
}

fn walk_calls(expr: &IdedExpr, calls: &mut Vec<(String, u64)>) {
    match &expr.expr {
        Expr::Call(call) => {
            calls.push((call.func_name.clone(), expr.id));
            if let Some(target) = &call.target {
                walk_calls(target, calls);
            }
            for arg in &call.args {
                walk_calls(arg, calls);
            }
        }
        Expr::Select(select) => walk_calls(&select.operand, calls),
        Expr::List(list) => list.elements.iter().for_each(|e| walk_calls(e, calls)),
        Expr::Map(map) => map
            .entries
            .iter()
            .for_each(|e| walk_entry_calls(&e.expr, calls)),
        Expr::Struct(st) => st
            .entries
            .iter()
            .for_each(|e| walk_entry_calls(&e.expr, calls)),
        Expr::Comprehension(comp) => {
            for e in [
                &comp.iter_range,
                &comp.accu_init,
                &comp.loop_cond,
                &comp.loop_step,
                &comp.result,
            ] {
                walk_calls(e, calls);
            }
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn walk_entry_calls(entry: &EntryExpr, calls: &mut Vec<(String, u64)>) {
    match entry {
        EntryExpr::StructField(field) => walk_calls(&field.value, calls),
        EntryExpr::MapEntry(entry) => {
            walk_calls(&entry.key, calls);
            walk_calls(&entry.value, calls);
        }
    }
}

/// Whether the standard environment declares a function of this name. The crate
/// does not say so directly; it refuses to add a function whose name an overload
/// of its standard library already takes, and that refusal is the answer. One
/// scratch context serves every question (building one costs more than asking).
fn is_standard_function(name: &str) -> bool {
    thread_local! {
        static SCRATCH: std::cell::RefCell<cel::Context<'static, 'static>> =
            std::cell::RefCell::new(cel::Context::default());
    }
    SCRATCH.with(|scratch| scratch.borrow_mut().add_function(name, |a: i64| a).is_err())
}

/// The dotted paths an expression selects from the namespaces (`session.files`,
/// `tool.input.command`, also `tool["name"]`), each as its segments, in the order
/// they are written. Paths under a `has()` test are left out: they never fail.
pub fn selected_paths(program: &Program) -> Vec<Vec<String>> {
    let mut paths: Vec<(Vec<String>, u64)> = Vec::new();
    let mut bound = Vec::new();
    walk_paths(program.expression(), &mut bound, &mut paths);
    let info = program.source_info();
    paths.sort_by_key(|(_, id)| info.offset_for(*id).map(|(start, _)| start));
    paths.into_iter().map(|(path, _)| path).collect()
}

/// The path `expr` spells from a free namespace variable, if it spells one.
fn path_of(expr: &IdedExpr, bound: &[String]) -> Option<Vec<String>> {
    match &expr.expr {
        Expr::Ident(name) if NAMESPACES.contains(&name.as_str()) && !bound.contains(name) => {
            Some(vec![name.clone()])
        }
        Expr::Select(select) if !select.test => {
            let mut path = path_of(&select.operand, bound)?;
            path.push(select.field.clone());
            Some(path)
        }
        Expr::Call(call) if call.func_name == "_[_]" && call.target.is_none() => {
            let [operand, index] = call.args.as_slice() else {
                return None;
            };
            let Expr::Literal(LiteralValue::String(key)) = &index.expr else {
                return None;
            };
            let mut path = path_of(operand, bound)?;
            path.push(key.inner().to_owned());
            Some(path)
        }
        _ => None,
    }
}

fn walk_paths(expr: &IdedExpr, bound: &mut Vec<String>, paths: &mut Vec<(Vec<String>, u64)>) {
    if let Some(path) = path_of(expr, bound)
        && path.len() > 1
    {
        paths.push((path, expr.id));
        return;
    }
    match &expr.expr {
        // A `has()` test reads its operand's path but never fails on its field.
        Expr::Select(select) => walk_paths(&select.operand, bound, paths),
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                walk_paths(target, bound, paths);
            }
            for arg in &call.args {
                walk_paths(arg, bound, paths);
            }
        }
        Expr::List(list) => list
            .elements
            .iter()
            .for_each(|e| walk_paths(e, bound, paths)),
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(entry) = &entry.expr {
                    walk_paths(&entry.key, bound, paths);
                    walk_paths(&entry.value, bound, paths);
                }
            }
        }
        Expr::Struct(st) => {
            for entry in &st.entries {
                if let EntryExpr::StructField(field) = &entry.expr {
                    walk_paths(&field.value, bound, paths);
                }
            }
        }
        Expr::Comprehension(comp) => {
            walk_paths(&comp.iter_range, bound, paths);
            walk_paths(&comp.accu_init, bound, paths);
            let depth = bound.len();
            bound.push(comp.iter_var.clone());
            bound.extend(comp.iter_var2.iter().cloned());
            bound.push(comp.accu_var.clone());
            walk_paths(&comp.loop_cond, bound, paths);
            walk_paths(&comp.loop_step, bound, paths);
            walk_paths(&comp.result, bound, paths);
            bound.truncate(depth);
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(config: Value) -> Vec<(Option<String>, String)> {
        parse(&config)
            .problems
            .into_iter()
            .map(|p| (p.item, p.message))
            .collect()
    }

    #[test]
    fn a_good_rule_compiles() {
        let rules = parse(&json!({"rules": [{
            "name": "max-files-written",
            "when": "tool.is_write",
            "require": "session.files_written < mandate.max_files_written",
            "message": "At most {mandate.max_files_written} files.",
        }]}));
        assert!(rules.problems.is_empty(), "{:?}", rules.problems);
        assert_eq!(rules.rules.len(), 1);
        assert_eq!(
            rules.needs(),
            vec![
                "session",
                "tool.is_write",
                "session.files_written",
                "mandate.max_files_written"
            ]
        );
    }

    #[test]
    fn a_parse_error_names_the_rule_and_the_position() {
        let problems = messages(json!({"rules": [{"name": "broken", "require": "tool.name == "}]}));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0.as_deref(), Some("broken"));
        assert!(
            problems[0].1.starts_with("require: line 1, column 14: "),
            "{}",
            problems[0].1
        );
    }

    #[test]
    fn a_parse_error_on_a_later_line_counts_lines() {
        let problems = messages(json!({"rules": [{"name": "r", "require": "true &&\n  )"}]}));
        assert!(
            problems[0].1.starts_with("require: line 2, column 3: "),
            "{problems:?}"
        );
    }

    #[test]
    fn unknown_variables_are_reported_where_they_are() {
        let problems = messages(json!({"rules": [{
            "name": "typo",
            "when": "tool.name == 'Bash'",
            "require": "sesion.files_written < 3 && [1].all(x, x > 0)",
        }]}));
        assert_eq!(
            problems,
            vec![(
                Some("typo".to_owned()),
                "require: line 1, column 1: unknown variable `sesion`: the facts are tool, session, case, platform, env, mandate".to_owned()
            )]
        );
    }

    #[test]
    fn columns_count_characters() {
        let problems = compile("when", "'é' == sesion.x").unwrap_err();
        assert!(
            problems[0].starts_with("when: line 1, column 8: unknown variable `sesion`"),
            "{problems:?}"
        );
        let problems = compile("when", "'é' == )").unwrap_err();
        assert!(
            problems[0].starts_with("when: line 1, column 8: "),
            "{problems:?}"
        );
    }

    #[test]
    fn unknown_functions_are_reported() {
        let problems = messages(json!({"rules": [{
            "name": "f",
            "require": "size(tool.name) > 0 && tool.name.startsWith('B') && sizee(tool.name) > 0",
        }]}));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].1.contains("unknown function `sizee`"),
            "{problems:?}"
        );
        assert!(
            problems[0].1.starts_with("require: line 1, column 53: "),
            "{problems:?}"
        );
    }

    #[test]
    fn standard_functions_and_macros_are_known() {
        for source in [
            "size(tool.name) > 0",
            "tool.name.contains('a') || tool.name.endsWith('h') || tool.name.startsWith('B')",
            "int(session.files) < 3 && double(session.files) < 3.0 && string(1) == '1'",
            "uint(1) == 1u && type(1) == int && dyn(1) == 1",
            "has(tool.name) && ['a'].exists(x, x == tool.name) && ['a'].map(x, x).size() == 1",
            "['a'].filter(x, x == 'a').size() == 1 && ['a'].exists_one(x, x == 'a')",
            "'a' in ['a'] && {'a': 1}['a'] == 1 && (true ? 1 : 2) == 1 && 1 in [1]",
        ] {
            let result = compile("require", source);
            assert!(result.is_ok(), "{source}: {:?}", result.err());
        }
    }

    #[test]
    fn missing_duplicate_and_unknown_keys() {
        let problems = messages(json!({
            "rule": [],
            "rules": [
                {"when": "true", "require": "true"},
                {"name": "a", "require": "true"},
                {"name": "a", "require": "false"},
                {"name": "b", "requires": "true"},
                {"name": "has space", "require": "true"},
                {"name": "c", "require": 3},
            ],
        }));
        assert_eq!(
            problems,
            vec![
                (
                    None,
                    "unknown key `rule`: the config takes only `rules`".into()
                ),
                (Some("#1".into()), "the rule has no `name`".into()),
                (
                    Some("a".into()),
                    "another rule already has this name; each rule needs its own".into()
                ),
                (
                    Some("b".into()),
                    "unknown key `requires`: a rule takes name, when, require and message".into()
                ),
                (
                    Some("b".into()),
                    "the rule has no `require`: the expression that must hold".into()
                ),
                (
                    Some("#5".into()),
                    "the rule's `name` \"has space\" holds a space or a control character".into()
                ),
                (Some("c".into()), "`require` must be a string".into()),
            ]
        );
    }

    #[test]
    fn a_config_without_rules_is_a_problem() {
        assert_eq!(messages(json!({})).len(), 1);
        assert_eq!(messages(Value::Null).len(), 1);
        assert_eq!(messages(json!({"rules": []})).len(), 1);
        assert_eq!(messages(json!({"rules": "x"})).len(), 1);
    }

    #[test]
    fn unknown_placeholders_are_problems() {
        let problems = messages(json!({"rules": [{
            "name": "m", "require": "true",
            "message": "{rule} {tool.name} {sesion.files} {not a placeholder}",
        }]}));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .1
                .starts_with("message: unknown placeholder {sesion.files}"),
            "{problems:?}"
        );
    }

    #[test]
    fn needs_are_the_state_costing_namespaces_then_the_paths_read() {
        let rules = parse(&json!({"rules": [
            {"name": "a", "when": "case.open", "require": "tool.name != ''"},
            {"name": "b", "require": "true", "message": "{session.files}"},
            {"name": "c", "require": "[1].all(session, session > 0)"},
        ]}));
        assert!(rules.problems.is_empty(), "{:?}", rules.problems);
        assert_eq!(
            rules.needs(),
            vec!["case", "session", "case.open", "tool.name", "session.files"]
        );
    }

    #[test]
    fn selected_paths_in_source_order() {
        let expression = compile(
            "require",
            "has(platform.x) && session.files_written < mandate['max'] && [1].all(tool, tool.y)",
        )
        .unwrap();
        assert_eq!(
            selected_paths(&expression.program),
            vec![
                vec!["session".to_owned(), "files_written".to_owned()],
                vec!["mandate".to_owned(), "max".to_owned()],
            ]
        );
    }
}
