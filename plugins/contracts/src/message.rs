//! A rule's message: `{rule}` and `{namespace.field}` placeholders filled in.

use serde_json::Value;

/// What an absent fact renders as.
pub const ABSENT: &str = "(absent)";

/// The placeholders a message holds, as written between the braces: `{rule}` and
/// dotted names such as `{mandate.max_files_written}`. Braces around anything
/// else (spaces, quotes, nothing) are text, left as written.
pub fn placeholders(message: &str) -> Vec<String> {
    pieces(message)
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Placeholder(name) => Some(name.to_owned()),
            Piece::Text(_) => None,
        })
        .collect()
}

/// `message` with `{rule}` replaced by `rule` and each `{namespace.field}` by that
/// fact in `facts`: a string as it is, anything else as JSON, `(absent)` when the
/// facts do not hold it.
pub fn render(message: &str, rule: &str, facts: &Value) -> String {
    let mut out = String::with_capacity(message.len());
    for piece in pieces(message) {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Placeholder("rule") => out.push_str(rule),
            Piece::Placeholder(path) => match lookup(facts, path) {
                Some(Value::String(s)) => out.push_str(s),
                Some(value) => out.push_str(&value.to_string()),
                None => out.push_str(ABSENT),
            },
        }
    }
    out
}

/// The fact at a dotted path, when the facts hold it.
pub fn lookup<'a>(facts: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(facts, |value, part| value.get(part))
}

enum Piece<'a> {
    Text(&'a str),
    Placeholder(&'a str),
}

fn pieces(message: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut rest = message;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find(['{', '}']) {
            Some(close) if after[close..].starts_with('}') && is_name(&after[..close]) => {
                if open > 0 {
                    pieces.push(Piece::Text(&rest[..open]));
                }
                pieces.push(Piece::Placeholder(&after[..close]));
                rest = &after[close + 1..];
            }
            _ => {
                pieces.push(Piece::Text(&rest[..=open]));
                rest = after;
            }
        }
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    pieces
}

/// A placeholder's name: identifiers joined by dots.
fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text.split('.').all(|part| {
            part.starts_with(|c: char| c.is_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_are_filled_in() {
        let facts = json!({
            "tool": {"name": "Bash", "is_destructive": true},
            "mandate": {"max_files_written": 3, "scope": ["src"]},
        });
        assert_eq!(
            render(
                "{rule}: {tool.name} may write {mandate.max_files_written} files in {mandate.scope}; destructive: {tool.is_destructive}; {session.files_written} so far",
                "max-files",
                &facts
            ),
            "max-files: Bash may write 3 files in [\"src\"]; destructive: true; (absent) so far"
        );
    }

    #[test]
    fn other_braces_are_text() {
        let facts = json!({"tool": {"name": "Bash"}});
        assert_eq!(
            render(
                "{ not one } {} {\"a\":1} {{tool.name}} {tool.name",
                "r",
                &facts
            ),
            "{ not one } {} {\"a\":1} {Bash} {tool.name"
        );
        assert_eq!(
            placeholders("{rule} {tool.name} {x y} {a.b.c}"),
            vec!["rule", "tool.name", "a.b.c"]
        );
    }
}
