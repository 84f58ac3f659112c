//! How long the harnesses registered in a project wait for sandrail's hook:
//! what [`crate::deadline`] bounds a policy and an event by.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Harness;
use crate::deadline::HookTimeouts;
use crate::event::EventKind;

/// Claude Code's managed settings, where a managed set-up registers the hook.
const CLAUDE_MANAGED: &str = "/etc/claude-code/managed-settings.json";

/// The shortest timeout any harness gives sandrail's hook on each event, over
/// every settings file registering it for `project`: the project's, the
/// user's (`HOME` and the account's home) and Claude Code's managed settings.
/// A registration naming no timeout has its harness's default; an event no
/// harness registers has Claude Code's default (the harness the payloads are
/// read as).
pub fn of_project(project: Option<&Path>) -> HookTimeouts {
    let mut found = BTreeMap::<EventKind, Duration>::new();
    let homes = homes();
    for harness in Harness::ALL {
        let settings = harness.settings();
        let mut files: Vec<PathBuf> = Vec::new();
        if let Some(project) = project {
            files.push(project.join(settings.file));
            files.extend(settings.also.iter().map(|f| project.join(f)));
        }
        for home in &homes {
            files.extend(settings.in_home.iter().map(|f| home.join(f)));
        }
        if harness == Harness::Claude {
            files.push(PathBuf::from(CLAUDE_MANAGED));
        }
        for file in files {
            let Ok(Some(doc)) = crate::os_sandbox::read(&file) else {
                continue;
            };
            for (event, named) in settings.timeouts(&doc) {
                let Some(kind) = harness.kind_of(&event) else {
                    continue;
                };
                for timeout in named {
                    let timeout = timeout.unwrap_or((settings.default_timeout)(kind));
                    let shortest = found.entry(kind).or_insert(timeout);
                    *shortest = (*shortest).min(timeout);
                }
            }
        }
    }
    let claude = Harness::Claude.settings();
    let mut timeouts = HookTimeouts::default();
    for kind in EventKind::ALL {
        let timeout = found
            .get(&kind)
            .copied()
            .unwrap_or_else(|| (claude.default_timeout)(kind));
        timeouts.shorten(kind, timeout);
    }
    timeouts
}

fn homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = crate::locations::home().into_iter().collect();
    if let Some(account) = crate::locations::account_home()
        && !homes.contains(&account)
    {
        homes.push(account);
    }
    homes
}
