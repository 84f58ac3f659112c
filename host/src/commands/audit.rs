//! `sandrail audit`: every configured guardrail with its source, hash, pin status,
//! grants, limits, failure policy, gate, flags, owners, events and what its
//! imports reach — what a security reviewer signs off on.

use std::io::Write;
use std::process::ExitCode;

use anyhow::anyhow;

use sandrail::config::LockStatus;
use sandrail::inspect::{self, Granted};
use sandrail::locations;
use sandrail::runtime::Runtime;

use super::inspect::print_granted;
use super::project_config;

pub fn run(as_json: bool) -> anyhow::Result<ExitCode> {
    let config = project_config()?;
    let runtime = Runtime::looking(locations::cache_dir())
        .map_err(|e| anyhow!("cannot start the WebAssembly runtime: {e:#}"))?;
    let lock = match &config.lock {
        LockStatus::None => "none".to_owned(),
        LockStatus::Read(lock) => {
            format!("{} ({} entries)", lock.path.display(), lock.entries.len())
        }
        LockStatus::Unusable(why) => format!("UNUSABLE: {why}"),
    };
    let protect = if config.protect.enabled {
        let extra: Vec<String> = config
            .protect
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        if extra.is_empty() {
            "on".to_owned()
        } else {
            format!("on, also {}", extra.join(", "))
        }
    } else {
        "OFF: the agent can change sandrail's files and hook settings".to_owned()
    };
    let (managed, sandbox) = super::sandbox_reports();
    let mut entries = Vec::new();
    for g in &config.guardrails {
        let description = inspect::describe(&runtime, &g.source);
        let actual = description.as_ref().ok().map(|d| d.sha256.clone());
        entries.push((Granted::of(&config, g, actual.as_deref()), description));
    }
    let mut out = std::io::stdout().lock();
    if as_json {
        let guardrails: Vec<serde_json::Value> = entries
            .iter()
            .map(|(granted, description)| {
                let mut value = serde_json::to_value(granted).unwrap_or_default();
                value["component"] = match description {
                    Ok(d) => serde_json::to_value(d).unwrap_or_default(),
                    Err(e) => serde_json::json!({ "error": e.to_string() }),
                };
                value
            })
            .collect();
        let json = serde_json::json!({
            "config": config.origin.to_string(),
            "lock": lock,
            "gate": config.gate,
            "on_error": config.on_error.name(),
            "protect": protect,
            "os_sandbox": sandbox,
            "managed": managed,
            "guardrails": guardrails,
        });
        writeln!(out, "{json}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "config     {}", config.origin)?;
    writeln!(out, "lock       {lock}")?;
    writeln!(
        out,
        "settings   gate {}, on_error {} (for sandrail's own failures)",
        config.gate.name(),
        config.on_error.name()
    )?;
    writeln!(out, "protect    {protect}")?;
    for line in super::sandbox_lines(managed, &sandbox) {
        writeln!(out, "{line}")?;
    }
    for (granted, description) in &entries {
        writeln!(out)?;
        print_granted(&mut out, granted)?;
        match description {
            Ok(d) => {
                writeln!(out, "    sha256     {}", d.sha256)?;
                if let Err(why) = &d.loads {
                    writeln!(out, "    loads      NO: {why}")?;
                }
                // Grouped by what they reach, so the few that reach something stand out.
                let mut reach: Vec<(&str, Vec<&str>)> = Vec::new();
                for import in &d.imports {
                    let interface = import
                        .name
                        .split_once('@')
                        .map_or(import.name.as_str(), |(i, _)| i);
                    match reach.iter_mut().find(|(r, _)| *r == import.reaches) {
                        Some((_, names)) => names.push(interface),
                        None => reach.push((import.reaches, vec![interface])),
                    }
                }
                for (what, names) in reach {
                    writeln!(out, "    reaches    {what} ({})", names.join(", "))?;
                }
            }
            Err(e) => writeln!(out, "    component  CANNOT BE READ: {e}")?,
        }
    }
    Ok(ExitCode::SUCCESS)
}
