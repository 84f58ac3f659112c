//! `sandrail overrides`: the project's override trail.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use sandrail::audit;

use super::project_dir;

pub fn run(session: Option<&str>, as_json: bool) -> anyhow::Result<ExitCode> {
    let project = project_dir().context("no project directory: run it in the project")?;
    let records: Vec<audit::Override> = audit::read(&project)?
        .into_iter()
        .filter(|r| session.is_none_or(|s| r.session == s))
        .collect();
    let mut out = std::io::stdout().lock();
    if as_json {
        for record in &records {
            writeln!(out, "{}", serde_json::to_string(record)?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if records.is_empty() {
        writeln!(out, "no overrides in {}", audit::trail(&project).display())?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<20}  {:<24}  {:<28}  {:>7}  {:<10}  input",
        "time", "session", "guardrail/rule", "counter", "tool"
    )?;
    for r in &records {
        writeln!(
            out,
            "{:<20}  {:<24}  {:<28}  {:>7}  {:<10}  {}",
            r.time,
            r.session,
            format!("{}/{}", r.guardrail, r.rule),
            r.counter,
            r.tool.as_deref().unwrap_or("-"),
            r.summary
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
