//! `sandrail undo [ID]`: brings the project's files and repository back to a
//! checkpoint — by default the one before the latest call that changed
//! something, in the project's latest session — after a checkpoint of the
//! project as it is, so the undo can itself be undone (a second `sandrail
//! undo` does).
//!
//! It is a person's command, confirmed at a terminal as `trust` is
//! ([`super::person`]): an undo rewrites the project wholesale, a person's own
//! edits since the checkpoint included, and the agent has no business
//! deciding that (it can name the checkpoint for the person to restore).
//! Under the harness's OS sandbox the agent could not run it anyway: the
//! checkpoint taken first is written where the sandbox denies it.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use sandrail::checkpoint::{Call, Occasion, Record, Restored, human_bytes};

use super::checkpoints::{PATIENCE, what_before};
use super::person;

/// The most paths listed of each kind before the rest are counted.
const LISTED: usize = 40;

pub fn run(id: Option<String>, session: Option<String>, dry_run: bool) -> anyhow::Result<ExitCode> {
    let (store, checkpoints) = super::checkpoints::store()?;
    let rules = &checkpoints.rules;
    let now = store.now(rules, Instant::now() + PATIENCE)?;
    let target = match &id {
        Some(id) => store.find(id)?,
        None => store.default_target(session.as_deref(), &now)?,
    };
    let plan = store.plan(&target, &now)?;
    let preview = plan.preview();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "checkpoint {} of {} ({}, session {}, before {}):",
        target.id,
        store.project().display(),
        target.time,
        target.session,
        what_before(&target)
    )?;
    if plan.is_empty() {
        writeln!(
            out,
            "the project is as the checkpoint holds it: nothing to undo"
        )?;
        say_left(&mut out, &target, &preview)?;
        return Ok(ExitCode::SUCCESS);
    }
    list(&mut out, "writes back", &preview.written)?;
    list(&mut out, "removes", &preview.removed)?;
    say_left(&mut out, &target, &preview)?;
    if dry_run {
        writeln!(out, "(--dry-run: nothing was changed)")?;
        return Ok(ExitCode::SUCCESS);
    }
    drop(out);
    let what = format!(
        "writes back {} and removes {} in {} (a checkpoint of it as it is now is taken first, so `sandrail undo` can bring it back)",
        count(preview.written.len()),
        count(preview.removed.len()),
        store.project().display()
    );
    if let Err(code) = person::confirm("undo", &what) {
        return Ok(code);
    }
    let call_text = format!("sandrail undo {}", target.id);
    let before = Call {
        session: &target.session,
        occasion: Occasion::Undo,
        harness: None,
        tool: None,
        call: Some(&call_text),
        tool_use_id: None,
    };
    let (taken, restored) = store
        .undo(&target, Some(&preview), &before, rules, Instant::now() + PATIENCE)
        .map_err(|e| {
            anyhow::anyhow!(
                "{e}. The project as it was before this undo is kept if a checkpoint named `an undo` is the newest in `sandrail checkpoints`"
            )
        })?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "restored {} and removed {} from checkpoint {}",
        count(restored.written.len()),
        count(restored.removed.len()),
        target.id
    )?;
    for (path, why) in &restored.left {
        writeln!(out, "left as it is: {path}: {why}")?;
    }
    writeln!(
        out,
        "the project as it was before this undo is checkpoint {} ({} added to the store): `sandrail undo {}` brings it back",
        taken.id,
        human_bytes(taken.added_bytes),
        taken.id
    )?;
    Ok(
        if restored
            .left
            .iter()
            .any(|(_, why)| why.starts_with("could not"))
        {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        },
    )
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 file".to_owned()
    } else {
        format!("{n} files")
    }
}

/// The paths, the repository's summed up: its refs, HEAD and index by name
/// (what a person recognises), its objects and the rest counted.
fn list(out: &mut impl Write, verb: &str, paths: &[String]) -> std::io::Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    writeln!(out, "  {verb} {}:", count(paths.len()))?;
    let (git, tree): (Vec<&String>, Vec<&String>) = paths
        .iter()
        .partition(|p| p.as_str() == ".git" || p.starts_with(".git/"));
    for path in tree.iter().take(LISTED) {
        writeln!(out, "    {path}")?;
    }
    if tree.len() > LISTED {
        writeln!(out, "    … and {} more", tree.len() - LISTED)?;
    }
    if !git.is_empty() {
        writeln!(
            out,
            "    .git: {}",
            super::checkpoints::repository_summary(&git)
        )?;
    }
    Ok(())
}

/// What the undo leaves as it is, and what the checkpoint never held.
fn say_left(out: &mut impl Write, target: &Record, preview: &Restored) -> std::io::Result<()> {
    for (path, why) in &preview.left {
        writeln!(out, "  leaves {path}: {why}")?;
    }
    for left in &target.left_out {
        writeln!(out, "  not in the checkpoint, so not brought back: {left}")?;
    }
    Ok(())
}
