//! A dotforge v3 behavior file and what its triggers mean, as dotforge's compiled
//! hooks do it: matchers in Claude Code's syntax, conditions over the tool input
//! merged with the payload's other top-level fields (the payload's win), Python
//! `re.search` semantics for `regex_match` (unanchored, case-sensitive unless the
//! pattern says `(?i)`), and a missing or empty field read as "".

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use sandrail_guest::Result;

#[derive(Debug, Deserialize)]
pub struct Behavior {
    pub id: String,
    pub name: Option<String>,
    pub policy: Policy,
    #[serde(default)]
    pub recovery: Option<Recovery>,
}

#[derive(Debug, Deserialize)]
pub struct Policy {
    pub triggers: Vec<Trigger>,
}

#[derive(Debug, Deserialize)]
pub struct Recovery {
    pub hint: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Trigger {
    pub event: String,
    pub matcher: Option<String>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
    pub logic: Option<String>,
    #[serde(default)]
    pub action: Action,
    pub flag: Option<String>,
    pub on_present: Option<String>,
    pub on_absent: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    #[default]
    Evaluate,
    SetFlag,
    CheckFlag,
}

#[derive(Debug, Deserialize)]
pub struct Condition {
    pub field: String,
    pub operator: String,
    #[serde(default)]
    pub value: serde_yaml_ng::Value,
}

impl Behavior {
    pub fn parse(text: &str) -> std::result::Result<Behavior, serde_yaml_ng::Error> {
        serde_yaml_ng::from_str(text)
    }

    /// What a violation says: the recovery hint (what to do instead), else the name.
    pub fn violation_message(&self) -> String {
        let hint = self
            .recovery
            .as_ref()
            .and_then(|r| r.hint.as_deref())
            .map(str::trim)
            .filter(|h| !h.is_empty());
        match hint {
            Some(hint) => hint.split_whitespace().collect::<Vec<_>>().join(" "),
            None => self.name.clone().unwrap_or_else(|| self.id.clone()),
        }
    }
}

impl Trigger {
    /// Claude Code's matcher rules: `*`, empty or missing is every tool; letters,
    /// digits, `_` and `|` only is a list of exact names; else an unanchored regex.
    pub fn matches_tool(&self, tool: Option<&str>) -> bool {
        let matcher = self.matcher.as_deref().map(str::trim).unwrap_or("");
        if matcher.is_empty() || matcher == "*" {
            return true;
        }
        let Some(tool) = tool else {
            // Events without a tool (UserPromptSubmit, Stop) ignore matchers.
            return true;
        };
        if matcher
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            return matcher.split('|').any(|name| name == tool);
        }
        Regex::new(matcher).is_ok_and(|re| re.is_match(tool))
    }

    /// Whether the conditions hold (`logic: any` needs one, anything else all).
    pub fn holds(&self, context: &Map<String, Value>) -> bool {
        if self.conditions.is_empty() {
            return true;
        }
        let mut results = self.conditions.iter().map(|c| c.holds(context));
        if self.logic.as_deref() == Some("any") {
            results.any(|r| r)
        } else {
            results.all(|r| r)
        }
    }

    pub fn flag(&self) -> Result<&str> {
        self.flag
            .as_deref()
            .ok_or_else(|| sandrail_guest::Error::msg("a flag action names no `flag`"))
    }

    pub fn keeps_flag(&self) -> bool {
        self.on_present.as_deref() == Some("keep")
    }

    pub fn violates_when_absent(&self) -> bool {
        self.on_absent.as_deref() == Some("violate")
    }
}

impl Condition {
    fn holds(&self, context: &Map<String, Value>) -> bool {
        let field = field_text(context.get(&self.field));
        let value = yaml_text(&self.value);
        let number = |text: &str| -> Option<f64> {
            if text.is_empty() {
                Some(0.0)
            } else {
                text.trim().parse().ok()
            }
        };
        let compare = |op: fn(f64, f64) -> bool| match (number(&field), number(&value)) {
            (Some(a), Some(b)) => op(a, b),
            _ => false,
        };
        match self.operator.as_str() {
            "regex_match" => Regex::new(&value).is_ok_and(|re| re.is_match(&field)),
            "contains" => field.contains(&value),
            "not_contains" => !field.contains(&value),
            "equals" => field == value,
            "starts_with" => field.starts_with(&value),
            "ends_with" => field.ends_with(&value),
            "exists" => !field.is_empty(),
            "not_exists" => field.is_empty(),
            "gt" => compare(|a, b| a > b),
            "lt" => compare(|a, b| a < b),
            "gte" => compare(|a, b| a >= b),
            "lte" => compare(|a, b| a <= b),
            _ => false,
        }
    }
}

/// A field as dotforge reads it: missing, null, false, 0 and empty are "".
fn field_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(true)) => "True".into(),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => String::new(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Array(a)) if a.is_empty() => String::new(),
        Some(Value::Object(o)) if o.is_empty() => String::new(),
        Some(other) => other.to_string(),
    }
}

fn yaml_text(value: &serde_yaml_ng::Value) -> String {
    match value {
        serde_yaml_ng::Value::Null => String::new(),
        serde_yaml_ng::Value::String(s) => s.clone(),
        serde_yaml_ng::Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        serde_yaml_ng::Value::Number(n) => n.to_string(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_owned(),
    }
}

/// The fields conditions read: the tool input's, then the payload's other top-level
/// ones (which win on a clash), without the envelope.
pub fn context(tool_input: Option<&str>, payload: &str) -> Map<String, Value> {
    let object = |text: &str| -> Map<String, Value> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    };
    let mut context = tool_input.map(object).unwrap_or_default();
    for (key, value) in object(payload) {
        if !matches!(
            key.as_str(),
            "session_id"
                | "tool_name"
                | "tool_input"
                | "transcript_path"
                | "cwd"
                | "hook_event_name"
        ) {
            context.insert(key, value);
        }
    }
    context
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(json: &str) -> Map<String, Value> {
        context(
            Some(json),
            r#"{"session_id":"s","prompt":"from the payload"}"#,
        )
    }

    fn condition(field: &str, operator: &str, value: &str) -> Condition {
        Condition {
            field: field.into(),
            operator: operator.into(),
            value: serde_yaml_ng::from_str(value).unwrap(),
        }
    }

    #[test]
    fn operators_read_fields_as_dotforge_does() {
        let c = ctx(r#"{"command":"git push origin main","n":5,"empty":""}"#);
        assert!(condition("command", "regex_match", r"'(^|\s)git\s+push(\s|$)'").holds(&c));
        assert!(!condition("command", "regex_match", "'^push'").holds(&c));
        assert!(condition("command", "contains", "'origin'").holds(&c));
        assert!(condition("command", "starts_with", "'git'").holds(&c));
        assert!(condition("n", "equals", "5").holds(&c));
        assert!(condition("n", "gt", "4").holds(&c));
        assert!(!condition("n", "lt", "oops").holds(&c));
        assert!(condition("empty", "not_exists", "").holds(&c));
        assert!(condition("missing", "not_exists", "").holds(&c));
        assert!(condition("prompt", "equals", "'from the payload'").holds(&c));
        assert!(!condition("command", "no_such_operator", "'x'").holds(&c));
        assert!(condition("prompt", "regex_match", "'(?i)FROM'").holds(&c));
    }

    #[test]
    fn matchers_follow_claude_code() {
        let trigger = |m: &str| Trigger {
            event: "PreToolUse".into(),
            matcher: Some(m.into()),
            conditions: vec![],
            logic: None,
            action: Action::Evaluate,
            flag: None,
            on_present: None,
            on_absent: None,
        };
        assert!(trigger("Write|Edit").matches_tool(Some("Edit")));
        assert!(!trigger("Write|Edit").matches_tool(Some("NotebookEdit")));
        assert!(trigger("Edit.*").matches_tool(Some("NotebookEdit")));
        assert!(trigger("*").matches_tool(Some("Bash")));
    }
}
