//! `sandrail checkpoints`: the project as it was before each call that could
//! change it — when, in which session, before which call, and how many files
//! differ from now; `checkpoints diff ID`, what changed since one, file by
//! file; `checkpoints prune`, what the config's retention no longer keeps.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Subcommand;
use serde_json::json;

use sandrail::checkpoint::{Change, Record, Store, human_bytes};
use sandrail::config::Checkpoints;
use sandrail::locations;

#[derive(Subcommand)]
pub enum Action {
    /// What changed in the project since checkpoint ID, file by file.
    Diff {
        /// A checkpoint's id, or the start of one.
        id: String,
        /// One JSON object per changed file.
        #[arg(long)]
        json: bool,
    },
    /// Remove the checkpoints the config no longer keeps ([checkpoints]
    /// keep_last and keep_days), and what only they held.
    Prune,
}

/// How long a command waits for the store and for a look at the project.
pub const PATIENCE: Duration = Duration::from_secs(600);

/// The project's checkpoint store and what the config in force says of
/// checkpoints. The project is the one a hook names (`CLAUDE_PROJECT_DIR`),
/// else the nearest directory from here up that has checkpoints.
pub fn store() -> anyhow::Result<(Store, Checkpoints)> {
    let state =
        locations::state_dir().context("no state directory: set SANDRAIL_STATE_DIR (or HOME)")?;
    let here = super::project_dir().context("cannot tell the current directory")?;
    let store = here
        .ancestors()
        .map(|dir| Store::of(&state, dir))
        .find(|store| store.dir().join("records").is_dir())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "there is no checkpoint of {} or of any directory above it: checkpoints are taken by `sandrail hook` before each call that can change the project (run `sandrail doctor` to see whether they are on)",
                here.display()
            )
        })?;
    let config = super::policy_in_force().config;
    Ok((store, config.checkpoints))
}

pub fn run(
    session: Option<String>,
    as_json: bool,
    action: Option<Action>,
) -> anyhow::Result<ExitCode> {
    match action {
        Some(Action::Diff { id, json }) => diff(&id, json),
        Some(Action::Prune) => prune(),
        None => list(session.as_deref(), as_json),
    }
}

fn list(session: Option<&str>, as_json: bool) -> anyhow::Result<ExitCode> {
    let (store, checkpoints) = store()?;
    let records: Vec<Record> = store
        .records()?
        .into_iter()
        .filter(|r| session.is_none_or(|s| r.session == s))
        .collect();
    let now = store.now(&checkpoints.rules, Instant::now() + PATIENCE)?;
    let mut out = std::io::stdout().lock();
    if as_json {
        for record in &records {
            let changes = store.changes_since(record, &now)?;
            let mut value = serde_json::to_value(record)?;
            value["differs"] = json!(changes.len());
            value["differs_in_repository"] = json!(
                changes
                    .iter()
                    .any(|c| c.path == b".git" || c.path.starts_with(b".git/"))
            );
            writeln!(out, "{value}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "checkpoints of {} ({} in {}; kept: the last {} of each session and every one from the last {} days)",
        store.project().display(),
        human_bytes(store.size()),
        store.dir().display(),
        checkpoints.retention.keep_last,
        checkpoints.retention.keep_for.as_secs() / 86_400,
    )?;
    if records.is_empty() {
        writeln!(
            out,
            "none{}",
            session.map_or(String::new(), |s| format!(" in session {s}"))
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<12}  {:<20}  {:<12}  {:<10}  {:>16}  before",
        "id", "time", "session", "tool", "differs from now"
    )?;
    for record in &records {
        let changes = store.changes_since(record, &now)?;
        writeln!(
            out,
            "{:<12}  {:<20}  {:<12}  {:<10}  {:>16}  {}",
            record.id,
            record.time,
            short(&record.session, 12),
            short(record.tool.as_deref().unwrap_or("-"), 10),
            differs(&changes),
            what_before(record),
        )?;
    }
    writeln!(
        out,
        "`sandrail checkpoints diff ID` shows what changed since one; `sandrail undo ID` brings the project back to it."
    )?;
    Ok(ExitCode::SUCCESS)
}

/// What `[checkpoints]` says, in a sentence.
pub fn describe(checkpoints: &Checkpoints) -> String {
    if !checkpoints.enabled {
        return "OFF ([checkpoints] enabled = false): what a call destroys in the project cannot be brought back with `sandrail undo`".to_owned();
    }
    let mut said = format!(
        "on: the project is kept before each call that can change it; files over {} left out; kept: the last {} of each session and every one from the last {} days",
        human_bytes(checkpoints.rules.max_file_bytes),
        checkpoints.retention.keep_last,
        checkpoints.retention.keep_for.as_secs() / 86_400
    );
    if !checkpoints.rules.ignore.is_empty() {
        said.push_str(&format!(
            "; also left out: {}",
            checkpoints.rules.ignore.join(", ")
        ));
    }
    said
}

/// `[checkpoints]` as JSON, for `audit --json` and `status --json`.
pub fn describe_json(checkpoints: &Checkpoints) -> serde_json::Value {
    json!({
        "enabled": checkpoints.enabled,
        "max_file_bytes": checkpoints.rules.max_file_bytes,
        "ignore": checkpoints.rules.ignore,
        "keep_last": checkpoints.retention.keep_last,
        "keep_days": checkpoints.retention.keep_for.as_secs() / 86_400,
        "timeout_ms": u64::try_from(checkpoints.timeout.as_millis()).unwrap_or(u64::MAX),
    })
}

/// How a project's checkpoints stand, for `status` and `doctor`.
pub struct Standing {
    pub store: Store,
    pub records: Vec<Record>,
    /// Every project's stores together.
    pub all_bytes: u64,
}

impl Standing {
    /// The project's store (`project`) in `state`.
    pub fn of(state: &std::path::Path, project: &std::path::Path) -> Standing {
        let store = Store::of(state, project);
        let records = store.records().unwrap_or_default();
        Standing {
            all_bytes: sandrail::checkpoint::total_size(state),
            store,
            records,
        }
    }

    /// One line: how many checkpoints (of `session`, when given), the latest,
    /// and what the store takes.
    pub fn line(&self, session: Option<&str>) -> String {
        let mine: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| session.is_none_or(|s| r.session == s))
            .collect();
        let whose = if session.is_some() {
            "in this session"
        } else {
            "of this project"
        };
        let latest = mine.last().map_or(String::new(), |r| {
            format!(", the latest {} ({})", r.id, r.time)
        });
        format!(
            "{} {whose}{latest}; this project's store takes {}, every project's {}",
            mine.len(),
            human_bytes(self.store.size()),
            human_bytes(self.all_bytes)
        )
    }

    pub fn json(&self, session: Option<&str>) -> serde_json::Value {
        let mine: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| session.is_none_or(|s| r.session == s))
            .collect();
        json!({
            "count": mine.len(),
            "latest": mine.last().map(|r| &r.id),
            "store": self.store.dir(),
            "store_bytes": self.store.size(),
            "all_stores_bytes": self.all_bytes,
        })
    }
}

/// What a checkpoint was taken before, in a few words.
pub fn what_before(record: &Record) -> String {
    use sandrail::checkpoint::Occasion;
    match record.occasion {
        Occasion::SessionStart => "the session's start".to_owned(),
        Occasion::Undo => format!(
            "an undo{}",
            record
                .call
                .as_deref()
                .map_or(String::new(), |c| format!(" (`{c}`)"))
        ),
        Occasion::Call => match (&record.tool, &record.call) {
            (Some(tool), Some(call)) => format!("{tool} `{}`", short(call, 80)),
            (Some(tool), None) => tool.clone(),
            (None, _) => "a call".to_owned(),
        },
    }
}

/// A repository's changed files in a few words: refs, HEAD, the index and
/// the stash by name, objects and the rest counted.
pub fn repository_summary(paths: &[&String]) -> String {
    let mut named = Vec::new();
    let mut objects = 0;
    let mut other = 0;
    for path in paths {
        let inside = path.strip_prefix(".git/").unwrap_or(path);
        if inside.starts_with("objects/") {
            objects += 1;
        } else if inside == "HEAD"
            || inside == "index"
            || inside == "packed-refs"
            || inside.starts_with("refs/")
        {
            named.push(inside.to_owned());
        } else {
            other += 1;
        }
    }
    let shown = named.len().min(8);
    let mut parts: Vec<String> = named[..shown].to_vec();
    if named.len() > shown {
        parts.push(format!("{} more refs", named.len() - shown));
    }
    if objects > 0 {
        parts.push(format!(
            "{objects} object file{}",
            if objects == 1 { "" } else { "s" }
        ));
    }
    if other > 0 {
        parts.push(format!(
            "{other} other file{}",
            if other == 1 { "" } else { "s" }
        ));
    }
    parts.join(", ")
}

/// How a checkpoint differs from now: the working tree's files counted, the
/// repository (`.git`) said once.
fn differs(changes: &[Change]) -> String {
    let in_git = |c: &&Change| c.path == b".git" || c.path.starts_with(b".git/");
    let repository = changes.iter().any(|c| in_git(&c));
    let files = changes.iter().filter(|c| !in_git(c)).count();
    let files = match files {
        0 if repository => String::new(),
        0 => "same".to_owned(),
        1 => "1 file".to_owned(),
        n => format!("{n} files"),
    };
    match (files.is_empty(), repository) {
        (_, false) => files,
        (true, true) => ".git".to_owned(),
        (false, true) => format!("{files} + .git"),
    }
}

fn short(text: &str, max: usize) -> String {
    sandrail::guest_text::one_line(text, max)
}

fn diff(id: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let (store, checkpoints) = store()?;
    let record = store.find(id)?;
    let now = store.now(&checkpoints.rules, Instant::now() + PATIENCE)?;
    let changes = store.changes_since(&record, &now)?;
    let mut out = std::io::stdout().lock();
    if as_json {
        for change in &changes {
            writeln!(out, "{}", change_json(change))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "since checkpoint {} ({}, session {}, before {}):",
        record.id,
        record.time,
        record.session,
        what_before(&record)
    )?;
    for change in &changes {
        writeln!(out, "{}", change_line(change))?;
    }
    match changes.len() {
        0 => writeln!(out, "nothing changed")?,
        n => writeln!(
            out,
            "{n} file{} differ; `sandrail undo {}` brings the project back to the checkpoint",
            if n == 1 { "" } else { "s" },
            record.id
        )?,
    }
    for left in &record.left_out {
        writeln!(out, "not in the checkpoint: {left}")?;
    }
    for warning in &record.warnings {
        writeln!(out, "note: {warning}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `M  path  (5 B → 0 B)`, as git's name-status says it.
pub fn change_line(change: &Change) -> String {
    let path = String::from_utf8_lossy(&change.path);
    let size = |b: &Option<sandrail::checkpoint::tree::Blob>| b.map(|b| human_bytes(b.size));
    let sizes = match (size(&change.before), size(&change.after)) {
        (Some(before), Some(after)) if before != after => format!("{before} → {after}"),
        (Some(before), Some(_)) => before,
        (Some(before), None) => before,
        (None, Some(after)) => after,
        (None, None) => String::new(),
    };
    format!("{}  {path}  ({sizes})", change.status())
}

fn change_json(change: &Change) -> serde_json::Value {
    let side = |b: &Option<sandrail::checkpoint::tree::Blob>| {
        b.map(|b| json!({"sha256": b.digest.to_hex(), "bytes": b.size, "mode": format!("{:o}", b.mode)}))
    };
    json!({
        "status": change.status().to_string(),
        "path": String::from_utf8_lossy(&change.path),
        "checkpoint": side(&change.before),
        "now": side(&change.after),
    })
}

fn prune() -> anyhow::Result<ExitCode> {
    let (store, checkpoints) = store()?;
    let pruned = store.prune(&checkpoints.retention, Instant::now() + PATIENCE)?;
    println!(
        "removed {} checkpoint{} and {} object{} ({}); the store of {} now takes {}",
        pruned.checkpoints,
        if pruned.checkpoints == 1 { "" } else { "s" },
        pruned.objects,
        if pruned.objects == 1 { "" } else { "s" },
        human_bytes(pruned.bytes),
        store.project().display(),
        human_bytes(store.size())
    );
    Ok(ExitCode::SUCCESS)
}
