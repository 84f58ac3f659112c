//! `sandrail pin`: writes the sha256 of every component in force to `sandrail.lock`
//! beside the config, so that a component whose bytes change afterwards is not run.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{anyhow, bail};

use sandrail::config::Origin;
use sandrail::lock::{self, Entry};
use sandrail::runtime::read_source;

use super::project_config;

pub fn run() -> anyhow::Result<ExitCode> {
    let config = project_config()?;
    let Origin::File(config_file) = &config.origin else {
        bail!(
            "no sandrail.toml is in force, and the embedded default runs only bundled guardrails, which are part of the sandrail binary. To pin, write a sandrail.toml (`sandrail list` shows what the default configures) and run `sandrail pin` again."
        );
    };
    let path = lock::beside(config_file);
    // An unreadable old lock only loses the comparison below.
    let previous = lock::read(&path).ok().flatten();
    let mut entries = BTreeMap::new();
    let mut lines = Vec::new();
    for g in &config.guardrails {
        let (_, sha256) = read_source(&g.source).map_err(|e| {
            anyhow!(
                "guardrail '{}': {e}; {} was not written",
                g.name,
                path.display()
            )
        })?;
        if let Some(pin) = g.sha256.as_deref().filter(|pin| *pin != sha256) {
            bail!(
                "guardrail '{}': the config pins {pin} but the component is {sha256}; correct or remove its `sha256` first. {} was not written",
                g.name,
                path.display()
            );
        }
        let was = previous
            .as_ref()
            .and_then(|lock| lock.entries.get(&g.name))
            .map(|e| &e.sha256);
        let change = match was {
            None => "new".to_owned(),
            Some(old) if *old == sha256 => "unchanged".to_owned(),
            Some(old) => format!("was {old}"),
        };
        lines.push(format!("pinned  {}  {sha256}  ({change})", g.name));
        entries.insert(
            g.name.clone(),
            Entry {
                source: g.source_text.clone(),
                sha256,
            },
        );
    }
    let n = entries.len();
    lock::write(&path, entries)?;
    for line in lines {
        println!("{line}");
    }
    let noun = if n == 1 { "guardrail" } else { "guardrails" };
    println!("{}: {n} {noun} pinned", path.display());
    Ok(ExitCode::SUCCESS)
}
