//! `sandrail trust`: a person accepts the policy on disk for this project.
//!
//! Shows how the policy on disk differs from the one accepted (what new sessions
//! start from) and, once the person confirms at a terminal, accepts it: new
//! sessions start from it, the project's running sessions take it from their
//! next event, and the hook registrations remembered for ConfigChange become what
//! the settings files hold now.

use std::process::ExitCode;

use anyhow::{Context, bail};

use sandrail::locations;
use sandrail::policy::{self, blobs::Blobs};

use super::{person, project_dir};

pub fn run() -> anyhow::Result<ExitCode> {
    // The places this terminal names: accepting moves the project's records
    // there when they are bound elsewhere.
    let state = locations::state_dir_from_env()
        .and_then(locations::usable_state_dir)
        .context("no usable state directory: set SANDRAIL_STATE_DIR (or HOME)")?;
    let log = locations::log_from_env();
    let here = project_dir().context("no project directory: run it in the project")?;
    let project = policy::project_for(&state, &here);
    let binding = locations::binding::bound(&project);
    let moves = binding
        .as_ref()
        .filter(|b| b.state != state || b.log != log);
    let blobs = Blobs::new(&state);
    let captured = policy::on_disk(Some(&project), Some(&blobs));
    if let Err(why) = &captured.config {
        bail!(
            "the config on disk cannot be used: {why}; fix it first (`sandrail check-config` says where)"
        );
    }
    let on_disk = &captured.manifest;
    let timeouts = sandrail::harness::timeouts::of_project(Some(&project));
    let accepted = policy::accepted(&state, &project);
    println!("project   {}", project.display());
    match &accepted {
        Some(record) => println!(
            "accepted  policy {} ({}), accepted {} ({})",
            record.policy.id(),
            record.policy.origin(),
            record.accepted_at,
            record.how
        ),
        None => println!("accepted  none yet"),
    }
    println!("on disk   policy {} ({})", on_disk.id(), on_disk.origin());
    if let Some(binding) = moves {
        println!(
            "\nIt moves the project's records: its state directory from {} to {}, its receipts' system log from {} to {}.",
            binding.state.display(),
            state.display(),
            binding.log.display(),
            log.display()
        );
    }
    let dropped = sandrail::protect::dropped_registrations(&state, Some(&project));
    if !dropped.is_empty() {
        println!("\nThe hook settings no longer register sandrail for:");
        for registration in &dropped {
            println!("  - {registration}");
        }
    }
    if let Some(record) = &accepted {
        if &record.policy == on_disk && dropped.is_empty() && moves.is_none() {
            println!("\nThe policy on disk is the one accepted; nothing to do.");
            return Ok(ExitCode::SUCCESS);
        }
        let compared = (&record.policy != on_disk).then(|| {
            policy::compare_with(
                &record.policy,
                &captured,
                &blobs,
                &sandrail::runtime::Prepares,
                &timeouts,
            )
        });
        match compared {
            None => {}
            Some(Ok(comparison)) => {
                if !comparison.added.is_empty() {
                    println!("\nIt adds: {}", comparison.added.join(", "));
                }
                if !comparison.changes.is_empty() {
                    println!("\nIt changes what the agent is held to:");
                    for change in &comparison.changes {
                        println!("  - {change}");
                    }
                }
                if comparison.added.is_empty() && comparison.changes.is_empty() {
                    println!("\nIt differs in comments or layout only.");
                }
            }
            Some(Err(why)) => println!("\nThe two cannot be compared: {why}"),
        }
    }
    if let Ok(config) = &captured.config {
        if let Some(why) = policy::ratchet::unfit_to_start(config) {
            println!("\nNote: {why}.");
        }
        for over in sandrail::deadline::over_budget(config, None, &timeouts) {
            println!(
                "\nNote: {over}. The hook answers at its deadline regardless: a guardrail still to run then is answered by its on_error."
            );
        }
    }
    println!();
    if let Err(code) = person::confirm(
        "trust",
        "accepts the policy on disk as what the agent is held to",
    ) {
        return Ok(code);
    }
    // Each write must hold, or the person is told what was not kept: under
    // the harness's OS sandbox an agent-driven `trust` ends here.
    if binding.is_none() || moves.is_some() {
        let anchors = locations::binding::anchors_root().unwrap_or_default();
        locations::binding::bind(&project, &state, &log).map_err(|e| {
            person::not_saved(
                "trust",
                &anchors,
                "the binding of the project to this state directory",
                "nothing was accepted",
                e,
            )
        })?;
    }
    policy::accept(&state, &project, on_disk, "person").map_err(|e| {
        person::not_saved(
            "trust",
            &state,
            &format!("the acceptance of policy {}", on_disk.id()),
            "the policy was not accepted: new sessions keep the one accepted before",
            e,
        )
    })?;
    let sessions = policy::retake(&state, &project, on_disk).map_err(|e| {
        person::not_saved(
            "trust",
            &state,
            "the running sessions' policy",
            "new sessions take the policy, but running sessions may keep the one they started with",
            e,
        )
    })?;
    sandrail::protect::reset_registrations(&state, Some(&project)).map_err(|e| {
        person::not_saved(
            "trust",
            &state,
            "the hook registrations",
            "the policy is accepted, but ConfigChange still compares settings with the registrations remembered before",
            e,
        )
    })?;
    println!(
        "Accepted policy {} for {}: new sessions start from it, and {sessions} running session(s) take it from their next event.",
        on_disk.id(),
        project.display()
    );
    Ok(ExitCode::SUCCESS)
}
