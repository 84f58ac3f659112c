//! `sandrail cycle`: where a session's cycle stands — the read mark, the Stops
//! refused in a row, each context's state and the span since the mark.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use sandrail::locations;
use sandrail::store::SessionStore;
use sandrail::store::cycle::CycleSnapshot;

use super::{project_config, session_or_latest};

pub fn run(session: Option<String>, as_json: bool) -> anyhow::Result<ExitCode> {
    let config = project_config().ok();
    let lock_timeout = config
        .as_ref()
        .map_or(sandrail::config::DEFAULT_LOCK_TIMEOUT, |c| c.lock_timeout);
    let keeps_cycles = config.as_ref().map(|c| c.keeps_cycles());
    let state =
        locations::state_dir().context("no state directory: set SANDRAIL_STATE_DIR (or HOME)")?;
    let session = session_or_latest(session, &state)?;
    let snapshot = match SessionStore::open_existing(&state, &session, lock_timeout)? {
        Some(store) => store.read()?.cycle()?,
        None => CycleSnapshot::default(),
    };
    let mut out = std::io::stdout().lock();
    if as_json {
        let mut value = serde_json::to_value(&snapshot)?;
        value["session"] = serde_json::json!(session);
        value["config_keeps_cycles"] = serde_json::json!(keeps_cycles);
        writeln!(out, "{value}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "session {session}")?;
    if keeps_cycles == Some(false) {
        writeln!(
            out,
            "the config keeps no cycle: it has no context (`kind = \"context\"`) and no guardrail on Stop, so nothing is recorded here"
        )?;
    }
    writeln!(
        out,
        "read mark {} of {} recorded; {} event(s) in the span",
        snapshot.mark,
        snapshot.seq,
        snapshot.span.len()
    )?;
    if snapshot.refused.count > 0 {
        writeln!(
            out,
            "{} Stop(s) refused in a row (turn {})",
            snapshot.refused.count,
            snapshot.refused.turn.as_deref().unwrap_or("unknown")
        )?;
    }
    for (name, context) in &snapshot.contexts {
        let state = if context.active { "active" } else { "inactive" };
        let since = if context.entered_seq > snapshot.mark {
            "entered this cycle"
        } else {
            "not entered this cycle"
        };
        writeln!(
            out,
            "context {name}: {state}, {since} (turn {}){}",
            context.entered_turn.as_deref().unwrap_or("unknown"),
            context
                .payload
                .as_deref()
                .filter(|_| context.active)
                .map(|p| format!(", payload {p}"))
                .unwrap_or_default()
        )?;
    }
    for event in &snapshot.span {
        writeln!(
            out,
            "{:>6}  {} {}  turn {}",
            event.seq,
            event.event,
            event.tool.as_deref().unwrap_or("-"),
            event.turn.as_deref().unwrap_or("unknown")
        )?;
        for file in &event.files {
            match &file.sha256 {
                Some(hash) => writeln!(out, "        changed {} ({})", file.path, &hash[..12])?,
                None => writeln!(out, "        gone    {}", file.path)?,
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
