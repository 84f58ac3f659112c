//! `sandrail status`: where each guardrail and rule stands in a session.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::json;

use sandrail::clock;
use sandrail::locations;
use sandrail::store::{SessionStore, lifecycle};

use super::{project_config, session_or_latest};

pub fn run(session: Option<String>, as_json: bool) -> anyhow::Result<ExitCode> {
    let config = project_config()?;
    let state =
        locations::state_dir().context("no state directory: set SANDRAIL_STATE_DIR (or HOME)")?;
    let session = session_or_latest(session, &state)?;
    let last_access = lifecycle::last_access(&state, &session);
    if last_access.is_none() {
        eprintln!(
            "sandrail: no session '{session}' in {}: it was never seen there, or was forgotten after its TTL",
            state.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    let (rules, flags) = match SessionStore::open_existing(&state, &session, config.lock_timeout)? {
        Some(store) => {
            let reader = store.read()?;
            (reader.rules()?, reader.flags()?)
        }
        None => (Vec::new(), Vec::new()),
    };
    let flags: Vec<serde_json::Value> = flags
        .into_iter()
        .map(|(name, set_at)| json!({"name": name, "set_at": clock::rfc3339(set_at)}))
        .collect();
    let off = lifecycle::switched_off(&state, &session);
    let (managed, sandbox) = super::sandbox_reports();
    let checkpoints =
        super::project_dir().map(|project| super::checkpoints::Standing::of(&state, &project));
    let checkpoints_json = {
        let mut value = super::checkpoints::describe_json(&config.checkpoints);
        if let Some(standing) = &checkpoints {
            value["taken"] = standing.json(Some(&session));
        }
        value
    };
    let policy = sandrail::policy::session_record(&state, &session).map(|record| {
        json!({
            "id": record.policy.id(),
            "config": record.policy.origin(),
            "held": record.held,
            "differs": record.seen.differs,
            "changes": record.seen.changes,
        })
    });
    let mut guardrails = Vec::new();
    for g in &config.guardrails {
        let session_off = off.contains(&g.name);
        let rows: Vec<serde_json::Value> = rules
            .iter()
            .filter(|r| r.guardrail == g.name)
            .map(|r| {
                json!({
                    "rule": r.rule,
                    "counter": r.state.counter,
                    "level": r.state.level.name(),
                    "last_violation_at": r.state.last_violation_at.map(clock::rfc3339),
                    "last_violation_tool": r.state.last_violation_tool,
                    "overrides": r.state.overrides,
                    "pending_block": r.state.pending.is_some(),
                })
            })
            .collect();
        guardrails.push(json!({
            "name": g.name,
            "enabled": g.enabled && !session_off,
            "enabled_in_config": g.enabled,
            "switched_off_for_session": session_off,
            "escalates": g.enforcement.is_some(),
            "rules": rows,
        }));
    }
    let mut out = std::io::stdout().lock();
    if as_json {
        let status = json!({
            "session": session,
            "last_access": last_access.map(clock::rfc3339),
            "config": config.origin.to_string(),
            "policy": policy,
            "os_sandbox": sandbox,
            "managed": managed,
            "checkpoints": checkpoints_json,
            "flags": flags,
            "guardrails": guardrails,
        });
        writeln!(out, "{status}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "session {session}")?;
    if let Some(at) = last_access {
        writeln!(out, "last used {}", clock::rfc3339(at))?;
    }
    writeln!(out, "config {}", config.origin)?;
    if let Some(policy) = &policy {
        writeln!(
            out,
            "policy {} ({}), kept since the session started",
            policy["id"].as_str().unwrap_or_default(),
            policy["config"].as_str().unwrap_or_default()
        )?;
        let list = |key: &str| -> Vec<String> {
            policy[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect()
        };
        if policy["differs"].is_string() {
            writeln!(
                out,
                "  the policy on disk differs: {}",
                list("changes").join("; ")
            )?;
        }
        let held = list("held");
        if !held.is_empty() {
            writeln!(
                out,
                "  held at the start (not accepted for this project): {}",
                held.join("; ")
            )?;
        }
    }
    for line in super::sandbox_lines(managed, &sandbox) {
        writeln!(out, "{line}")?;
    }
    writeln!(
        out,
        "checkpoints: {}",
        super::checkpoints::describe(&config.checkpoints)
    )?;
    if let Some(standing) = &checkpoints {
        writeln!(out, "  {}", standing.line(Some(&session)))?;
    }
    if flags.is_empty() {
        writeln!(out, "flags: none set")?;
    } else {
        writeln!(out, "flags:")?;
        for flag in &flags {
            writeln!(
                out,
                "  {:<28} set {}",
                flag["name"].as_str().unwrap_or_default(),
                flag["set_at"].as_str().unwrap_or_default()
            )?;
        }
    }
    for g in &guardrails {
        let enabled = if g["enabled"] == true {
            "on"
        } else if g["switched_off_for_session"] == true {
            "off for this session"
        } else {
            "off in the config"
        };
        writeln!(
            out,
            "\n{}  {enabled}",
            g["name"].as_str().unwrap_or_default()
        )?;
        let rows = g["rules"].as_array().map(Vec::as_slice).unwrap_or_default();
        if rows.is_empty() {
            writeln!(out, "  no violations")?;
        }
        // A guardrail without `enforcement` refuses each violation outright.
        let refuses_outright = g["escalates"] == false;
        for r in rows {
            let last = match (
                r["last_violation_at"].as_str(),
                r["last_violation_tool"].as_str(),
            ) {
                (Some(at), Some(tool)) => format!("last {at} ({tool})"),
                (Some(at), None) => format!("last {at}"),
                _ => String::new(),
            };
            writeln!(
                out,
                "  {:<28} counter {:<5} level {:<11} overrides {:<3} {last}",
                r["rule"].as_str().unwrap_or_default(),
                r["counter"],
                if refuses_outright {
                    "refuses"
                } else {
                    r["level"].as_str().unwrap_or_default()
                },
                r["overrides"],
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
