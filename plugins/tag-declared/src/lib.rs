//! tag-declared: a context that enters when the agent writes a file holding a line
//! `sandrail:tag <tag>` — the agent's claim that the work of this turn is of a
//! kind (a research run, a release) whose gate checks it at Stop.
//!
//! It records and never judges: the payload says which file carried the tag and
//! in which turn, and the tag is stamped with the turn (`tag:<tag>`) so a gate can
//! also ask [`state::stamped_this_turn_by`]. At Stop it lets go: the gate that
//! requires it (verify-artifact-produced) does the judging.

use sandrail_guest::{Context, Event, Result, Transition, state};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The tag whose declaration enters the context.
    tag: String,
}

/// What the context enters with.
#[derive(Serialize)]
struct Declared<'a> {
    tag: &'a str,
    /// The file the tag was written into, as the tool call named it.
    file: Option<&'a str>,
}

/// The marker a line carries, followed by the tag.
const MARKER: &str = "sandrail:tag";

struct TagDeclared;

impl Context for TagDeclared {
    fn observe(event: &Event, _payload: Option<&serde_json::Value>) -> Result<Transition> {
        let config: Config = event.config_as()?;
        let tag = config.tag.trim();
        if tag.is_empty() {
            return Err(sandrail_guest::Error::msg(
                "config `tag` is empty; give the tag whose declaration enters this context",
            ));
        }
        if !written_text(event).iter().any(|text| declares(text, tag)) {
            return Ok(Transition::stay());
        }
        state::stamp(&format!("tag:{tag}"))?;
        Transition::enter(&Declared {
            tag,
            file: event.file_path(),
        })
    }
}

/// The text a write tool puts into a file: Write's content, Edit's new string,
/// each of MultiEdit's, NotebookEdit's new source.
fn written_text(event: &Event) -> Vec<&str> {
    let mut texts: Vec<&str> = ["content", "new_string", "new_source"]
        .into_iter()
        .filter_map(|field| event.tool_field(field))
        .collect();
    if let Some(edits) = event.tool_input().get("edits").and_then(|e| e.as_array()) {
        texts.extend(
            edits
                .iter()
                .filter_map(|edit| edit.get("new_string").and_then(|s| s.as_str())),
        );
    }
    texts
}

/// Whether some line holds `sandrail:tag <tag>`, the tag ending the word.
fn declares(text: &str, tag: &str) -> bool {
    text.lines().any(|line| {
        line.match_indices(MARKER).any(|(at, _)| {
            let rest = &line[at + MARKER.len()..];
            let Some(rest) = rest.strip_prefix(|c: char| c.is_whitespace()) else {
                return false;
            };
            rest.trim_start()
                .split(|c: char| c.is_whitespace())
                .next()
                .is_some_and(|word| word == tag)
        })
    })
}

sandrail_guest::export_context!(TagDeclared);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_declares_the_tag_as_a_whole_word() {
        assert!(declares(
            "# notes\n<!-- sandrail:tag research -->\n",
            "research"
        ));
        assert!(declares("sandrail:tag   research", "research"));
        assert!(!declares("sandrail:tag researcher", "research"));
        assert!(!declares("sandrail:tagresearch", "research"));
        assert!(!declares("no tag here", "research"));
        assert!(declares("a\r\n// sandrail:tag release\r\n", "release"));
    }
}
