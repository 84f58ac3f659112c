//! `sandrail check-config`: validate the config in force, load every component, and
//! have each guardrail that exports `configure` check its own config; with a
//! `sandrail.lock`, report where the config and the lock part ways.

use std::process::ExitCode;

use anyhow::bail;

use sandrail::config::LockStatus;
use sandrail::locations;
use sandrail::runtime::{ConfigureError, Runtime, prepare_guardrail};

use super::project_config;

pub fn run() -> anyhow::Result<ExitCode> {
    let config = project_config()?;
    if config.guardrails.is_empty() {
        bail!(
            "{} configures no guardrails: no event would be judged. Add [[guardrail]] entries, or remove the file to use the embedded default.",
            config.origin
        );
    }
    let lines = check(&config)?;
    let failed = lines.iter().filter(|l| l.is_problem()).count();
    for line in &lines {
        println!("{:<6} {}", line.kind, line.text);
    }
    let n = config.guardrails.len();
    if failed > 0 {
        bail!(
            "{}: {failed} problem(s) among {n} guardrails: components that cannot be loaded or do not match their pins, problems in their config, or drift from sandrail.lock",
            config.origin
        );
    }
    let noun = if n == 1 { "guardrail" } else { "guardrails" };
    println!("{}: {n} {noun}, all valid", config.origin);
    Ok(ExitCode::SUCCESS)
}

/// One line of the check: `ok`, `warn`, `error` or `drift`, and what it says.
pub struct Line {
    pub kind: &'static str,
    pub text: String,
}

impl Line {
    /// An error or drift: the config is not valid as it stands.
    pub fn is_problem(&self) -> bool {
        !matches!(self.kind, "ok" | "warn")
    }

    /// Valid, but worth a look.
    pub fn is_warning(&self) -> bool {
        self.kind == "warn"
    }
}

/// Loads every component of `config` and has each check its own config; with a
/// lock, compares the two.
pub fn check(config: &sandrail::config::Config) -> anyhow::Result<Vec<Line>> {
    let runtime = Runtime::looking(locations::cache_dir())
        .map_err(|e| anyhow::anyhow!("cannot start the WebAssembly runtime: {e:#}"))?;
    let mut lines = Vec::new();
    let mut say = |kind: &'static str, text: String| lines.push(Line { kind, text });
    for g in &config.guardrails {
        let loaded = prepare_guardrail(g).and_then(|p| runtime.load(&p));
        let loaded = match loaded {
            Ok(loaded) => loaded,
            Err(e) => {
                say("error", format!("{}: {e}", g.name));
                continue;
            }
        };
        if let Some(problem) = unpaired_gate(config, g) {
            say("error", format!("{}: {problem}", g.name));
            continue;
        }
        let config_json = g.config.to_string();
        match runtime.configure(&loaded, &g.name, &config_json, &g.data, g.limits) {
            Ok(needs) => {
                let (unset, unknown): (Vec<_>, Vec<_>) =
                    unknown_facts(needs.as_ref(), config.mandate.as_ref())
                        .into_iter()
                        .partition(|fact| fact.is_mandate_field());
                // A mandate field the mandate does not set yet is a valid rule
                // (seed: it fails closed until the mandate sets the field); a
                // fact that does not exist, or a near miss of one, is a mistake.
                for fact in unset {
                    say(
                        "warn",
                        format!(
                            "{}: {fact}; until the mandate sets it, a rule reading it finds it absent (a `require` over it refuses, a `when` over it never applies)",
                            g.name
                        ),
                    );
                }
                if !unknown.is_empty() {
                    for problem in unknown {
                        say(
                            "error",
                            format!("{}: {problem}; a rule reading it can never hold", g.name),
                        );
                    }
                    continue;
                }
                // What a configured guardrail reads that costs state to keep.
                let reads = needs
                    .filter(|n| !n.facts.is_empty())
                    .map(|n| {
                        let names: Vec<&str> = n.facts.iter().copied().collect();
                        format!(", reads {} facts", names.join(" and "))
                    })
                    .unwrap_or_default();
                say(
                    "ok",
                    format!("{} ({}, sha256 {}{reads})", g.name, g.source, loaded.sha256),
                );
            }
            Err(ConfigureError::Problems(problems)) => {
                for problem in problems {
                    say("error", format!("{}: {problem}", g.name));
                }
            }
            Err(e @ ConfigureError::Run(_)) => {
                say("error", format!("{}: {e}", g.name));
            }
        }
    }
    match &config.lock {
        LockStatus::None => {}
        LockStatus::Unusable(why) => {
            say("error", why.to_string());
        }
        LockStatus::Read(lock) => {
            for drift in lock.drift(
                config
                    .guardrails
                    .iter()
                    .map(|g| (g.name.as_str(), g.source_text.as_str())),
            ) {
                say(
                    "drift",
                    format!("{drift}; run `sandrail pin` once the change is reviewed"),
                );
            }
        }
    }
    Ok(lines)
}

/// The fact paths a guardrail declared it reads that the host never derives: at
/// run time each is absent at every event, and absent never passes.
fn unknown_facts(
    needs: Option<&sandrail::runtime::Needs>,
    mandate: Option<&sandrail::mandate::Mandate>,
) -> Vec<sandrail::facts::schema::UnknownFact> {
    needs
        .iter()
        .flat_map(|n| &n.paths)
        .filter_map(|path| sandrail::facts::schema::check(path, mandate).err())
        .collect()
}

/// The bundled Stop gate judges the claim of one context it requires: the one its
/// `context` names, or the only context in its `requires`. Its own check cannot
/// see `requires`, so the pairing is checked here rather than failing at a Stop.
fn unpaired_gate(
    config: &sandrail::config::Config,
    g: &sandrail::config::Guardrail,
) -> Option<String> {
    if g.source_text != "builtin:verify-artifact-produced" {
        return None;
    }
    let contexts = config.required_contexts(g);
    match g.config.get("context").and_then(|c| c.as_str()) {
        Some(named) if !contexts.iter().any(|c| c == named) => Some(format!(
            "its context '{named}' is not a context in its requires ({}); add it there",
            if contexts.is_empty() {
                "none".to_owned()
            } else {
                contexts.join(", ")
            }
        )),
        Some(_) => None,
        None if contexts.len() == 1 => None,
        None if contexts.is_empty() => Some(
            "its requires names no context: add the context whose entering is the claim (a tag-declared entry)".to_owned(),
        ),
        None => Some(format!(
            "its requires names several contexts ({}): say which one is the claim with `context = \"NAME\"` in [guardrail.config]",
            contexts.join(", ")
        )),
    }
}
