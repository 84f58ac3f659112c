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
    let state =
        locations::state_dir().context("no state directory: set SANDRAIL_STATE_DIR (or HOME)")?;
    let here = project_dir().context("no project directory: run it in the project")?;
    let project = policy::project_for(&state, &here);
    let blobs = Blobs::new(&state);
    let captured = policy::on_disk(Some(&project), Some(&blobs));
    if let Err(why) = &captured.config {
        bail!(
            "the config on disk cannot be used: {why}; fix it first (`sandrail check-config` says where)"
        );
    }
    let on_disk = &captured.manifest;
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
    let dropped = sandrail::protect::dropped_registrations(&state, Some(&project));
    if !dropped.is_empty() {
        println!("\nThe hook settings no longer register sandrail for:");
        for registration in &dropped {
            println!("  - {registration}");
        }
    }
    if let Some(record) = &accepted {
        if &record.policy == on_disk && dropped.is_empty() {
            println!("\nThe policy on disk is the one accepted; nothing to do.");
            return Ok(ExitCode::SUCCESS);
        }
        let compared = (&record.policy != on_disk)
            .then(|| policy::compare_with(&record.policy, &captured, &blobs));
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
    if let Ok(config) = &captured.config
        && let Some(why) = policy::ratchet::unfit_to_start(config)
    {
        println!("\nNote: {why}.");
    }
    println!();
    if let Err(code) = person::confirm(
        "trust",
        "accepts the policy on disk as what the agent is held to",
    ) {
        return Ok(code);
    }
    policy::accept(&state, &project, on_disk, "person");
    let sessions = policy::retake(&state, &project, on_disk);
    sandrail::protect::reset_registrations(&state, Some(&project));
    println!(
        "Accepted policy {} for {}: new sessions start from it, and {sessions} running session(s) take it from their next event.",
        on_disk.id(),
        project.display()
    );
    Ok(ExitCode::SUCCESS)
}
