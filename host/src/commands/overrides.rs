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
        "{:<20}  {:<24}  {:<28}  {:>7}  {:<10}  {:<24}  input",
        "time", "session", "guardrail/rule", "counter", "tool", "how"
    )?;
    for r in &records {
        // Whether a person is known to have approved it, or it was inferred from
        // the same call coming again (which the agent itself can do in deny mode).
        let how = match r.detected {
            audit::Detected::Confirmed => "confirmed by the user",
            audit::Detected::Reinvocation => "reinvoked (inferred)",
        };
        writeln!(
            out,
            "{:<20}  {:<24}  {:<28}  {:>7}  {:<10}  {:<24}  {}",
            r.time,
            r.session,
            format!("{}/{}", r.guardrail, r.rule),
            r.counter,
            r.tool.as_deref().unwrap_or("-"),
            how,
            r.summary
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
