//! `sandrail list`: the guardrails in force — what a new session of the project
//! would run now, which is not the config on disk while that is held for a
//! person to accept.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use sandrail::config::{Config, OnError};
use sandrail::policy::Standing;
use sandrail::runtime::read_guardrail;

use super::{held_notice, policy_in_force};

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
    let prospect = policy_in_force();
    let config = &prospect.config;
    warn_if_empty(config);
    let held = held_notice(&prospect);
    let mut out = std::io::stdout().lock();
    if as_json {
        // Each line is a guardrail in force; what is held is the person's to hear.
        if let Some(held) = &held {
            eprintln!("sandrail: {held}");
        }
    } else {
        match (&prospect.standing, &prospect.accepted) {
            (Standing::Held { .. }, Some(accepted)) => writeln!(
                out,
                "config: {} as accepted {} (policy {}), not as it is on disk",
                config.origin,
                accepted.accepted_at,
                prospect.policy.id()
            )?,
            _ => writeln!(out, "config: {}", config.origin)?,
        }
        if let Some(held) = &held {
            writeln!(out, "held: {held}")?;
        }
        if config.guardrails.is_empty() {
            writeln!(out, "\nNO GUARDRAILS: nothing is judged")?;
        }
    }
    for g in &config.guardrails {
        let (_, sha256) = read_guardrail(g)?;
        let events: Vec<&str> = g.events.iter().map(|e| e.name()).collect();
        let matcher = g.matcher_text.as_deref().unwrap_or("*");
        // By its own `sha256`, or by sandrail.lock.
        let pinned =
            g.sha256.is_some() || matches!(g.locked, Some(sandrail::lock::Locked::Sha256(_)));
        let gate = config.gate_of(g);
        if as_json {
            let line = json!({
                "name": g.name,
                "source": g.source.to_string(),
                "sha256": sha256,
                "pinned": pinned,
                "gate": gate,
                "kind": g.kind.name(),
                "events": events,
                "matcher": matcher,
                "requires": g.requires,
                "enabled": g.enabled,
                "on_error": g.on_error.name(),
                "escalates": g.enforcement.is_some(),
                "flags": g.flags,
                "data": g.data.iter().map(|d| &d.written).collect::<Vec<_>>(),
            });
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "\n{}", g.name)?;
            writeln!(out, "  source   {}", g.source)?;
            let pin = if pinned { " (pinned)" } else { "" };
            writeln!(out, "  sha256   {sha256}{pin}")?;
            if g.is_context() {
                writeln!(
                    out,
                    "  kind     context (records; only its leave at Stop may refuse)"
                )?;
            }
            writeln!(out, "  events   {}", events.join(", "))?;
            writeln!(out, "  matcher  {matcher}")?;
            if !g.requires.is_empty() {
                writeln!(out, "  requires {}", g.requires.join(", "))?;
            }
            if !g.enabled {
                writeln!(out, "  enabled  false")?;
            }
            if g.on_error == OnError::Deny {
                writeln!(out, "  on_error deny (fails closed)")?;
            }
            if gate == sandrail::receipts::Gate::Observe {
                writeln!(out, "  gate     observe (records, never refuses)")?;
            }
            for grant in &g.data {
                if std::path::Path::new(&grant.written) == grant.path.as_path() {
                    writeln!(out, "  data     {}", grant.written)?;
                } else {
                    writeln!(
                        out,
                        "  data     {} ({})",
                        grant.written,
                        grant.path.display()
                    )?;
                }
            }
            for (what, flags) in [
                ("sets", &g.flags.set),
                ("checks", &g.flags.check),
                ("consumes", &g.flags.consume),
            ] {
                if !flags.is_empty() {
                    writeln!(out, "  flags    {what} {}", flags.join(", "))?;
                }
            }
        }
    }
    if !as_json {
        flag_table(config, &mut out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Who may set, check and consume each flag: what a reviewer needs to see that a
/// flag cannot be set or cleared by a guardrail that should not.
fn flag_table(config: &Config, out: &mut impl Write) -> std::io::Result<()> {
    let mut flags: Vec<&str> = config
        .guardrails
        .iter()
        .flat_map(|g| g.flags.names())
        .collect();
    flags.sort_unstable();
    flags.dedup();
    if flags.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nflags")?;
    for flag in flags {
        let who = |may: &dyn Fn(&sandrail::store::FlagGrants) -> bool| -> String {
            let names: Vec<&str> = config
                .guardrails
                .iter()
                .filter(|g| may(&g.flags))
                .map(|g| g.name.as_str())
                .collect();
            if names.is_empty() {
                "nobody".to_owned()
            } else {
                names.join(", ")
            }
        };
        writeln!(
            out,
            "  {flag}: set by {}; consumed by {}; checked by {}",
            who(&|f| f.may_set(flag)),
            who(&|f| f.may_consume(flag)),
            who(&|f| f.check.iter().any(|c| c == flag)),
        )?;
    }
    Ok(())
}
