//! verify-artifact-produced: a Stop gate that holds the agent to a declared claim.
//! When the context it requires (the one in its `requires`, or the one its
//! `context` names) entered during this
//! cycle, some file matching `artifact_glob` (relative to the project) must have
//! been created or changed — by content — in the claim's turn or after it.
//!
//! The evidence comes from the span the host keeps since the read mark, so a file
//! written before an accepted Stop never counts again, and one written in an
//! earlier turn of the same cycle does not count either. A rewrite that leaves a
//! file as it was is no change, so it proves nothing. When the turn cannot be
//! told, it does not judge (and says so): no claim can be tied to a turn then.

use globset::{GlobBuilder, GlobMatcher};
use sandrail_guest::{
    Configure, Event, EventKind, Guardrail, Needs, Problem, Result, Verdict, cycle, log,
};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Where the artifact must appear, relative to the project (`reports/*.md`).
    artifact_glob: String,
    /// The context whose entering is the claim; it must be in `requires`. Left
    /// out, it is the one context `requires` names, whatever that entry is called.
    #[serde(default)]
    context: Option<String>,
}

fn config_of(value: &serde_json::Value) -> std::result::Result<(Config, GlobMatcher), String> {
    let config: Config = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    let glob = GlobBuilder::new(config.artifact_glob.trim_start_matches("./"))
        .literal_separator(true)
        .build()
        .map_err(|e| format!("artifact_glob: {e}"))?;
    Ok((config, glob.compile_matcher()))
}

struct VerifyArtifactProduced;

impl Guardrail for VerifyArtifactProduced {
    fn evaluate(event: &Event) -> Result<Verdict> {
        if event.kind() != EventKind::Stop {
            return Ok(Verdict::pass());
        }
        let (config, glob) = config_of(event.config()).map_err(sandrail_guest::Error::msg)?;
        let contexts = cycle::contexts()?;
        let claim = match (&config.context, contexts.as_slice()) {
            (Some(name), _) => contexts.iter().find(|c| &c.name == name).ok_or_else(|| {
                sandrail_guest::Error::msg(format!(
                    "'{name}' is not in this guardrail's `requires`; add it there"
                ))
            })?,
            (None, [only]) => only,
            (None, []) => {
                return Err(sandrail_guest::Error::msg(
                    "`requires` names no context: add the context whose entering is the claim (tag-declared, say)",
                ));
            }
            (None, _) => {
                return Err(sandrail_guest::Error::msg(
                    "`requires` names several contexts: say which one is the claim with `context = \"NAME\"` in [guardrail.config]",
                ));
            }
        };
        let context_name = claim.name.clone();
        if !claim.active || !claim.entered_this_cycle {
            return Ok(Verdict::pass());
        }
        let (Some(claim_turn), Some(_)) = (claim.entered_turn_count(), event.turn()) else {
            log::warn(
                "the turn is unknown, so the claim cannot be tied to its evidence; not judging this Stop",
            );
            return Ok(Verdict::pass());
        };
        let span = cycle::span()?;
        let produced = cycle::changed_files(&span, Some(claim_turn))
            .into_iter()
            .any(|file| glob.is_match(&file.path));
        if produced {
            return Ok(Verdict::pass());
        }
        let declared = claim
            .payload_as::<serde_json::Value>()?
            .and_then(|p| {
                let tag = p.get("tag")?.as_str()?.to_owned();
                let file = p.get("file").and_then(|f| f.as_str());
                Some(match file {
                    Some(file) => format!("'{tag}' (in {file})"),
                    None => format!("'{tag}'"),
                })
            })
            .unwrap_or_else(|| format!("by '{context_name}'"));
        Ok(Verdict::violation(
            "artifact-missing",
            format!(
                "The tag {declared} was declared, but no file matching `{}` was created or changed in that turn or after it. Produce the artifact (rewriting an existing one unchanged does not count), then stop.",
                config.artifact_glob
            ),
        ))
    }
}

impl Configure for VerifyArtifactProduced {
    fn check(config: &serde_json::Value) -> std::result::Result<Needs, Vec<Problem>> {
        match config_of(config) {
            Ok(_) => Ok(Needs::none()),
            Err(message) => Err(vec![Problem::new(None, message)]),
        }
    }
}

sandrail_guest::export_configurable!(VerifyArtifactProduced);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_glob_is_checked_and_star_stays_in_its_directory() {
        let (_, glob) = config_of(&json!({"artifact_glob": "reports/*.md"})).expect("valid");
        assert!(glob.is_match("reports/run.md"));
        assert!(!glob.is_match("reports/old/run.md"));
        let (_, deep) = config_of(&json!({"artifact_glob": "./reports/**/*.md"})).expect("valid");
        assert!(deep.is_match("reports/old/run.md"));
        assert!(config_of(&json!({"artifact_glob": "reports/[.md"})).is_err());
        assert!(config_of(&json!({})).is_err());
    }
}
