//! `sandrail list`: the guardrails in force.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use sandrail::config::Config;
use sandrail::runtime::read_source;

use super::project_config;

/// Zero guardrails in force is never said quietly.
pub fn warn_if_empty(config: &Config) {
    if config.guardrails.is_empty() {
        eprintln!(
            "sandrail: WARNING: {} configures no guardrails: no event is judged. Add [[guardrail]] entries, or remove the file to use the embedded default.",
            config.origin
        );
    }
}

pub fn run(as_json: bool) -> anyhow::Result<ExitCode> {
    let config = project_config()?;
    warn_if_empty(&config);
    let mut out = std::io::stdout().lock();
    if !as_json {
        writeln!(out, "config: {}", config.origin)?;
        if config.guardrails.is_empty() {
            writeln!(out, "\nNO GUARDRAILS: nothing is judged")?;
        }
    }
    for g in &config.guardrails {
        let (_, sha256) = read_source(&g.source)?;
        let events: Vec<&str> = g.events.iter().map(|e| e.name()).collect();
        let matcher = g.matcher_text.as_deref().unwrap_or("*");
        if as_json {
            let line = json!({
                "name": g.name,
                "source": g.source.to_string(),
                "sha256": sha256,
                "pinned": g.sha256.is_some(),
                "events": events,
                "matcher": matcher,
                "requires": g.requires,
            });
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "\n{}", g.name)?;
            writeln!(out, "  source   {}", g.source)?;
            let pin = if g.sha256.is_some() { " (pinned)" } else { "" };
            writeln!(out, "  sha256   {sha256}{pin}")?;
            writeln!(out, "  events   {}", events.join(", "))?;
            writeln!(out, "  matcher  {matcher}")?;
            if !g.requires.is_empty() {
                writeln!(out, "  requires {}", g.requires.join(", "))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
