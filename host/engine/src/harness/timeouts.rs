//! How long the harnesses registered in a project wait for sandrail's hook:
//! what [`crate::deadline`] bounds a policy and an event by.
//!
//! Several registrations of sandrail for one event each run, and the harness
//! refuses the call if any of them refuses: the one with the longest timeout is
//! the one that answers in full. So within one harness the longest timeout
//! counts — a second registration with a short timeout, added beside the
//! first, does not cut the first one's judging short. Across harnesses the
//! shortest counts: a policy must fit every harness that runs it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Harness;
use crate::deadline::HookTimeouts;
use crate::event::EventKind;

/// Claude Code's managed settings, where a managed set-up registers the hook.
const CLAUDE_MANAGED: &str = "/etc/claude-code/managed-settings.json";

/// How long `harness` waits for sandrail's hook on each event of `project`:
/// the longest timeout among its registrations there (the project's, the
/// user's under `HOME` and the account's home, Claude Code's managed
/// settings), a registration naming none having the harness's default; an
/// event it does not register has the harness's default.
pub fn of_harness(project: Option<&Path>, harness: Harness) -> HookTimeouts {
    let found = registered(project, harness);
    let settings = harness.settings();
    let mut timeouts = HookTimeouts::default();
    for kind in EventKind::ALL {
        let timeout = found
            .get(&kind)
            .copied()
            .unwrap_or_else(|| (settings.default_timeout)(kind));
        timeouts.shorten(kind, timeout);
    }
    timeouts
}

/// The shortest, event by event, over every harness registered for `project`
/// (Claude Code's where none is): what a policy must fit whichever harness runs
/// it.
pub fn of_project(project: Option<&Path>) -> HookTimeouts {
    let harnesses: Vec<Harness> = Harness::ALL
        .into_iter()
        .filter(|h| !registered(project, *h).is_empty())
        .collect();
    let harnesses = if harnesses.is_empty() {
        vec![Harness::Claude]
    } else {
        harnesses
    };
    let mut timeouts = HookTimeouts::default();
    for harness in harnesses {
        let theirs = of_harness(project, harness);
        for kind in EventKind::ALL {
            timeouts.shorten(kind, theirs.timeout(kind));
        }
    }
    timeouts
}

/// The longest timeout of `harness`'s sandrail registrations, by event.
fn registered(project: Option<&Path>, harness: Harness) -> BTreeMap<EventKind, Duration> {
    let settings = harness.settings();
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(project) = project {
        files.push(project.join(settings.file));
        files.extend(settings.also.iter().map(|f| project.join(f)));
    }
    for home in crate::locations::homes() {
        files.extend(settings.in_home.iter().map(|f| home.join(f)));
    }
    if harness == Harness::Claude {
        files.push(PathBuf::from(CLAUDE_MANAGED));
    }
    let mut found = BTreeMap::<EventKind, Duration>::new();
    for file in files {
        let Ok(Some(doc)) = crate::harness::settings::read(&file) else {
            continue;
        };
        for (event, named) in settings.timeouts(&doc) {
            let Some(kind) = harness.kind_of(&event) else {
                continue;
            };
            for timeout in named {
                let timeout = timeout.unwrap_or((settings.default_timeout)(kind));
                let longest = found.entry(kind).or_insert(timeout);
                *longest = (*longest).max(timeout);
            }
        }
    }
    found
}
