//! The harness's own OS sandbox, set to keep sandrail's paths out of the agent's
//! reach.
//!
//! An agent runs its commands as the same user as sandrail, so no reading of a
//! command line can promise that a write is seen: `cp -t`, `git checkout B`, a
//! script the agent wrote. The harnesses' own sandboxes do not care how a write
//! is spelled. `sandrail init` (and `sandrail protect`) turn on what each
//! harness offers ([`Offer`]): Claude Code's Bash sandbox with sandrail's paths
//! denied to it ([`claude`]), Codex's workspace sandbox ([`codex`]); the others
//! have none sandrail can use, and say so. [`prerequisites`] checks what the
//! sandbox needs on this machine.

pub mod claude;
pub mod codex;
pub mod prerequisites;

use std::path::{Path, PathBuf};

use crate::config::{Config, Located, Origin, Source};
use crate::harness::Harness;
use crate::harness::settings::read;

/// One path to keep from the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub path: PathBuf,
    /// A directory: everything under it too.
    pub dir: bool,
}

/// Where sandrail's own things are, for one project.
#[derive(Debug, Clone)]
pub struct Places {
    pub project: PathBuf,
    /// `HOME`, as the harness resolves `~`.
    pub home: Option<PathBuf>,
    pub state: Option<PathBuf>,
    pub cache: Option<PathBuf>,
    /// This binary and the forwarding hook beside it.
    pub binaries: Vec<PathBuf>,
    /// Where the bindings of projects to state directories live.
    pub anchors: Option<PathBuf>,
}

impl Places {
    /// This process's places for `project`.
    pub fn here(project: &Path) -> Places {
        let binary = std::env::current_exe().ok();
        let forwarder = binary
            .as_ref()
            .and_then(|b| b.parent())
            .map(|dir| dir.join("sandrail-hook"))
            .filter(|f| f.is_file());
        Places {
            project: project.to_path_buf(),
            home: crate::locations::home(),
            state: crate::locations::state_dir(),
            cache: crate::locations::cache_dir(),
            binaries: binary.into_iter().chain(forwarder).collect(),
            anchors: crate::locations::binding::anchors_root(),
        }
    }
}

/// What a harness offers to keep sandrail's files from the agent's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Claude Code's Bash sandbox, with paths denied to it.
    Claude,
    /// Codex's workspace sandbox: writes only inside the project (its `.codex`
    /// and `.git` read-only) and the temporary directory.
    Codex,
    /// Nothing sandrail can use, and why.
    Nothing(&'static str),
}

impl Offer {
    pub fn of(harness: Harness) -> Offer {
        match harness {
            Harness::Claude => Offer::Claude,
            Harness::Codex => Offer::Codex,
            Harness::Gemini => Offer::Nothing(
                "Gemini CLI's sandbox (tools.sandbox, GEMINI_SANDBOX) re-runs the whole CLI, its hooks included, in a container or under Seatbelt, where sandrail cannot keep its state or is not installed; it is left off",
            ),
            Harness::Cursor => {
                Offer::Nothing("Cursor's hooks.json has no sandbox setting for sandrail to turn on")
            }
            Harness::Copilot => Offer::Nothing("GitHub Copilot CLI has no OS sandbox of its own"),
        }
    }
}

/// Every path of sandrail's the agent must not write, for the configs given (the
/// one on disk and the one accepted): each config and its lock (the project's
/// `sandrail.toml` when the embedded default is in force, so none can appear),
/// mandates, components, data, `[protect] paths`, Claude Code's settings, the
/// state, cache, bindings and audit directories and the binaries.
pub fn kept_paths(configs: &[&Config], places: &Places) -> Vec<Kept> {
    let mut kept: Vec<Kept> = Vec::new();
    let mut add = |path: PathBuf, dir: bool| {
        if !kept.iter().any(|k| k.path == path) {
            kept.push(Kept { path, dir });
        }
    };
    for config in configs {
        let file = match &config.origin {
            Origin::File(path) => path.clone(),
            Origin::Embedded => places.project.join(crate::config::CONFIG_FILE),
        };
        add(crate::lock::beside(&file), false);
        add(file, false);
        if let Some(mandate) = &config.mandate {
            add(mandate.path.clone(), false);
        }
        for guardrail in &config.guardrails {
            if let Source::File(path) = &guardrail.source {
                add(path.clone(), false);
            }
            for grant in &guardrail.data {
                add(grant.path.clone(), false);
            }
        }
        for path in &config.protect.paths {
            add(path.clone(), path.is_dir());
        }
    }
    // The hook settings themselves (Claude Code also guards its own): the
    // project's always (setting the sandbox up writes them, so their
    // directory exists), the user's where `~/.claude` exists (a missing
    // directory the sandbox would hold read-only, parent and all).
    for file in claude::SETTINGS_FILES {
        add(places.project.join(file), false);
    }
    if let Some(user) = places.home.as_ref().map(|h| h.join(claude::SETTINGS))
        && user.parent().is_some_and(Path::is_dir)
    {
        add(user, false);
    }
    let audit = crate::audit::trail(&places.project);
    if let Some(dir) = audit.parent() {
        add(dir.to_path_buf(), true);
    }
    for dir in [&places.state, &places.cache, &places.anchors]
        .into_iter()
        .flatten()
    {
        add(dir.clone(), true);
    }
    for binary in &places.binaries {
        add(binary.clone(), false);
    }
    // What decides how the user service runs, where it is there (`init
    // --serve` makes it before the sandbox is planned).
    for place in crate::locations::user_service_places() {
        if place.is_dir() {
            add(place, true);
        } else if place.is_file() {
            add(place, false);
        }
    }
    kept
}

/// The configs whose paths count for a project: the one on disk and the one its
/// ratchet accepted.
pub fn configs_of(project: &Path, state: Option<&Path>) -> Vec<Config> {
    let mut configs = vec![crate::policy::from_disk(Some(project))];
    if let Some(accepted) = state.and_then(|s| crate::policy::accepted_config(s, project)) {
        configs.push(accepted);
    }
    // A project with a config of its own could still have one appear nearer.
    if let Ok(Located::Embedded) = Config::locate(Some(project))
        && let Ok(embedded) = Config::embedded()
    {
        configs.push(embedded);
    }
    configs
}

/// The paths to keep for `project`, from this process's places.
pub fn kept_for(places: &Places) -> Vec<Kept> {
    let configs = configs_of(&places.project, places.state.as_deref());
    kept_paths(&configs.iter().collect::<Vec<_>>(), places)
}

/// Whether the project relies on the OS sandbox: `[protect] os_sandbox` of the
/// policy accepted for it (else of the config on disk).
pub fn asked_for(project: &Path, state: Option<&Path>) -> bool {
    state
        .and_then(|s| crate::policy::accepted_config(s, project))
        .unwrap_or_else(|| crate::policy::from_disk(Some(project)))
        .protect
        .os_sandbox
}

/// How one harness's sandbox stands for a project, for `status`, `doctor` and
/// `audit`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub harness: &'static str,
    /// The harness has a sandbox sandrail can use.
    pub offered: bool,
    pub in_force: bool,
    /// What stands, in words.
    pub said: String,
    /// The command that turns it on, where it is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// How `harness`'s sandbox stands for the project `places` names.
pub fn report(harness: Harness, places: &Places) -> Report {
    let fix = format!("run `sandrail protect --harness {}`", harness.name());
    match Offer::of(harness) {
        Offer::Claude => {
            let kept = kept_for(places);
            let entries = claude::entries(&kept, places);
            let standing = claude::standing(&places.project, places.home.as_deref(), &entries);
            match standing.why_not() {
                None => Report {
                    harness: harness.name(),
                    offered: true,
                    in_force: true,
                    said: format!(
                        "in force: Claude Code's Bash sandbox and Edit rules keep sandrail's {} paths from the agent{}",
                        kept.len(),
                        if standing.fails_closed {
                            ""
                        } else {
                            " (but Claude Code runs commands unsandboxed where the sandbox cannot start: sandbox.failIfUnavailable is not true)"
                        }
                    ),
                    fix: None,
                },
                Some(why) => Report {
                    harness: harness.name(),
                    offered: true,
                    in_force: false,
                    said: format!("not in force ({why})"),
                    fix: Some(fix),
                },
            }
        }
        Offer::Codex => {
            let standing = codex::standing(&places.project, places.home.as_deref());
            let from = standing
                .from
                .as_ref()
                .map_or_else(String::new, |f| format!(", from {}", f.display()));
            Report {
                harness: harness.name(),
                offered: true,
                in_force: standing.in_force(),
                said: if standing.in_force() {
                    format!("in force: Codex's sandbox ({}{from})", standing.mode)
                } else {
                    format!("not in force ({}{from})", standing.mode)
                },
                fix: (!standing.in_force()).then_some(fix),
            }
        }
        Offer::Nothing(why) => Report {
            harness: harness.name(),
            offered: false,
            in_force: false,
            said: format!("none: {why}"),
            fix: None,
        },
    }
}

/// The harnesses whose settings register sandrail for the project (its own
/// files and the user's), Claude Code's when none does.
pub fn registered_harnesses(project: &Path, home: Option<&Path>) -> Vec<Harness> {
    let found: Vec<Harness> = Harness::ALL
        .into_iter()
        .filter(|harness| {
            let settings = harness.settings();
            std::iter::once(project.join(settings.file))
                .chain(settings.also.iter().map(|f| project.join(f)))
                .chain(
                    home.into_iter()
                        .flat_map(|h| settings.in_home.iter().map(move |f| h.join(f))),
                )
                .filter_map(|file| read(&file).ok().flatten())
                .any(|doc| !settings.registrations(&doc).is_empty())
        })
        .collect();
    if found.is_empty() {
        vec![Harness::Claude]
    } else {
        found
    }
}
