//! `sandrail inspect FILE.wasm | builtin:NAME`: what a component is, what each of
//! its imports reaches in sandrail, and what the config in force grants it.

use std::io::Write;
use std::process::ExitCode;

use anyhow::anyhow;

use sandrail::config::Source;
use sandrail::inspect::{self, Description, Granted};
use sandrail::locations;
use sandrail::runtime::{Runtime, read_source};

use super::project_config;

pub fn run(target: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let source = match target.strip_prefix("builtin:") {
        Some(name) => Source::Builtin(name.to_owned()),
        None => Source::File(std::path::absolute(target)?),
    };
    let runtime = Runtime::looking(locations::cache_dir())
        .map_err(|e| anyhow!("cannot start the WebAssembly runtime: {e:#}"))?;
    let description = inspect::describe(&runtime, &source).map_err(|e| anyhow!("{target}: {e}"))?;
    // The entries that run these bytes (or name this source) in the config in force.
    let (origin, granted) = match project_config() {
        Ok(config) => {
            let granted: Vec<Granted> = config
                .guardrails
                .iter()
                .filter_map(|g| {
                    let actual = read_source(&g.source).ok().map(|(_, sha)| sha);
                    let runs_it =
                        g.source == source || actual.as_deref() == Some(&description.sha256);
                    runs_it.then(|| Granted::of(&config, g, actual.as_deref()))
                })
                .collect();
            (config.origin.to_string(), granted)
        }
        Err(e) => {
            eprintln!("sandrail: {e:#}; shown without the config's grants");
            (String::new(), Vec::new())
        }
    };
    let mut out = std::io::stdout().lock();
    if as_json {
        let json = serde_json::json!({
            "component": &description,
            "config": origin,
            "configured": granted,
        });
        writeln!(out, "{json}")?;
    } else {
        print_description(&mut out, &description)?;
        writeln!(out, "under {origin}")?;
        if granted.is_empty() {
            writeln!(
                out,
                "  not configured: it runs on no event (an entry would grant it what its imports reach, above, and no more)"
            )?;
        }
        for g in &granted {
            print_granted(&mut out, g)?;
        }
    }
    Ok(if description.loads.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn print_description(out: &mut impl Write, d: &Description) -> std::io::Result<()> {
    writeln!(out, "component  {}", d.source)?;
    writeln!(out, "sha256     {}", d.sha256)?;
    writeln!(out, "size       {} bytes", d.size)?;
    match (&d.world, &d.contract) {
        (Some(world), Some(version)) => writeln!(out, "world      {world}@{version}")?,
        (Some(world), None) => writeln!(out, "world      {world}")?,
        (None, _) => writeln!(
            out,
            "world      none: it exports no `evaluate`, so it is not a guardrail"
        )?,
    }
    match &d.loads {
        Ok(()) => writeln!(out, "loads      yes")?,
        Err(why) => writeln!(out, "loads      NO: {why}")?,
    }
    writeln!(out, "imports")?;
    if d.imports.is_empty() {
        writeln!(out, "  none")?;
    }
    for import in &d.imports {
        writeln!(out, "  {}  {}", import.name, import.items.join(", "))?;
        writeln!(out, "      reaches: {}", import.reaches)?;
    }
    writeln!(out, "exports")?;
    for export in &d.exports {
        writeln!(out, "  {}  {}", export.name, export.items.join(", "))?;
    }
    Ok(())
}

pub fn print_granted(out: &mut impl Write, g: &Granted) -> std::io::Result<()> {
    let none = |v: &[String]| {
        if v.is_empty() {
            "none".to_owned()
        } else {
            v.join(", ")
        }
    };
    writeln!(
        out,
        "  guardrail '{}'{}",
        g.name,
        if g.enabled { "" } else { " (disabled)" }
    )?;
    writeln!(out, "    source     {}", g.source)?;
    writeln!(out, "    pin        {}", g.pin)?;
    writeln!(
        out,
        "    events     {} (matcher {})",
        g.events.join(", "),
        g.matcher
    )?;
    writeln!(out, "    kind       {}", g.kind)?;
    writeln!(
        out,
        "    on_error   {}    gate {}",
        g.on_error,
        g.gate.name()
    )?;
    let l = &g.limits;
    writeln!(
        out,
        "    limits     timeout {} ms, memory {} MiB, state {} MiB, log {} KiB, fuel {}",
        l["timeout_ms"],
        l["memory_mib"],
        l["state_mib"],
        l["log_kib"],
        l["fuel"]
            .as_u64()
            .map_or("none".to_owned(), |f| f.to_string())
    )?;
    writeln!(out, "    reads      owners: {}", none(&g.reads_owners))?;
    writeln!(
        out,
        "    flags      set: {}; check: {}; consume: {}",
        none(&g.flags.set),
        none(&g.flags.check),
        none(&g.flags.consume)
    )?;
    let data: Vec<String> = g
        .data
        .iter()
        .map(|(written, path)| format!("{written} ({path})"))
        .collect();
    writeln!(out, "    data       {}", none(&data))?;
    Ok(())
}
