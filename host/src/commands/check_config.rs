//! `sandrail check-config`: validate the config in force and load every component.

use std::process::ExitCode;

use anyhow::bail;

use sandrail::locations;
use sandrail::runtime::{Runtime, prepare};

use super::project_config;

pub fn run() -> anyhow::Result<ExitCode> {
    let config = project_config()?;
    if config.guardrails.is_empty() {
        bail!(
            "{} configures no guardrails: no event would be judged. Add [[guardrail]] entries, or remove the file to use the embedded default.",
            config.origin
        );
    }
    let runtime = Runtime::new(locations::cache_dir())
        .map_err(|e| anyhow::anyhow!("cannot start the WebAssembly runtime: {e:#}"))?;
    let mut failed = 0;
    for g in &config.guardrails {
        let loaded = prepare(&g.source, g.sha256.as_deref()).and_then(|p| runtime.load(&p));
        match loaded {
            Ok(loaded) => println!("ok     {} ({}, sha256 {})", g.name, g.source, loaded.sha256),
            Err(e) => {
                failed += 1;
                println!("error  {}: {e}", g.name);
            }
        }
    }
    let n = config.guardrails.len();
    if failed > 0 {
        bail!(
            "{}: {failed} of {n} guardrails cannot be loaded",
            config.origin
        );
    }
    let noun = if n == 1 { "guardrail" } else { "guardrails" };
    println!("{}: {n} {noun}, all valid", config.origin);
    Ok(ExitCode::SUCCESS)
}
