//! `sandrail protect [--harness H] [--dry-run]`: turns on the harness's OS
//! sandbox with sandrail's own paths out of the agent's reach, merged into the
//! project's settings (see [`sandrail::os_sandbox`]). `sandrail init` does the
//! same as part of its set-up; `protect` brings the entries up to date after
//! the policy names new files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use sandrail::harness::Harness;
use sandrail::locations;
use sandrail::os_sandbox::prerequisites::{self, Readiness};
use sandrail::os_sandbox::{self, Offer, Places, claude, codex};

use super::project_dir;

pub fn run(harness: Harness, dry_run: bool) -> anyhow::Result<ExitCode> {
    let project = project_dir().context("no project directory: run it in the project")?;
    let plan = plan(harness, &project, None)?;
    let Some(change) = &plan.change else {
        if let Sandbox::Nothing(why) = plan.sandbox {
            eprintln!(
                "sandrail: {why}, so sandrail cannot be protected by it; managed mode puts sandrail out of the agent's reach instead (docs/managed.md)"
            );
            return Ok(ExitCode::FAILURE);
        }
        println!("Already set up, nothing to write.\n{}", plan.summary());
        return Ok(report_readiness(&plan));
    };
    if dry_run {
        println!("would write {}:", change.path.display());
        print!("{}", change.text);
        return Ok(ExitCode::SUCCESS);
    }
    prepare_places(&project)?;
    write(&change.path, &change.text)?;
    println!("{}", plan.summary());
    Ok(report_readiness(&plan))
}

/// What turning a harness's sandbox on writes, and what it then holds.
pub(super) struct Plan {
    pub sandbox: Sandbox,
    /// The file to write, unless it already holds everything.
    pub change: Option<Change>,
}

pub(super) struct Change {
    pub path: PathBuf,
    pub text: String,
}

/// The sandbox a plan turns on.
pub(super) enum Sandbox {
    /// Claude Code's, with this many of sandrail's paths denied to it, and
    /// whether it can run on this machine.
    Claude {
        settings: PathBuf,
        kept: usize,
        readiness: Readiness,
    },
    Codex {
        config: PathBuf,
    },
    Nothing(&'static str),
}

impl Plan {
    /// What is in force once the plan is written, in a few lines a person reads.
    pub fn summary(&self) -> String {
        match &self.sandbox {
            Sandbox::Claude { settings, kept, .. } => format!(
                "{}: Claude Code's Bash sandbox is on. The agent's commands\n  \
                 - write only in the project, the temporary directory and package caches ({}); sandrail's {kept} paths are denied to them, and to the file tools;\n  \
                 - reach package registries and git hosts ({}, …) through the sandbox's proxy, and other domains once you approve them;\n  \
                 - cannot leave the sandbox: what needs more (installing a program into ~/.cargo/bin, a push over SSH) is yours to run; Claude Code does not start where the sandbox cannot run.",
                settings.display(),
                claude::EVERYDAY_WRITES[..4]
                    .iter()
                    .map(|(path, _)| *path)
                    .collect::<Vec<_>>()
                    .join(", ")
                    + ", …",
                claude::EVERYDAY_DOMAINS
                    .iter()
                    .filter(
                        |d| ["crates.io", "registry.npmjs.org", "pypi.org", "github.com"]
                            .contains(d)
                    )
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Sandbox::Codex { config } => format!(
                "{}: Codex's workspace sandbox is on (sandbox_mode = \"{}\", unless the file chose read-only or a permission profile). The agent's commands write only in the project (its .codex and .git read-only) and the temporary directory; sandrail's state, cache and binary and your settings are out of their reach. The project's sandrail.toml stays writable to them: the ratchet holds what they change until you run `sandrail trust`.",
                config.display(),
                codex::MODE
            ),
            Sandbox::Nothing(why) => format!("{why}."),
        }
    }
}

/// What turning `harness`'s sandbox on for `project` would write: into Claude
/// Code's settings as `base` holds them when given (`init` registering the
/// hook in the same file), else as they are on disk.
pub(super) fn plan(
    harness: Harness,
    project: &Path,
    base: Option<serde_json::Value>,
) -> anyhow::Result<Plan> {
    match Offer::of(harness) {
        Offer::Claude => {
            let places = Places::here(project);
            let kept = os_sandbox::kept_for(&places);
            let entries = claude::entries(&kept, &places);
            let path = project.join(claude::SETTINGS);
            let mut settings = match base {
                Some(base) => base,
                None => match sandrail::harness::settings::read(&path) {
                    Ok(settings) => settings.unwrap_or_else(|| serde_json::json!({})),
                    Err(why) => bail!("{why}; fix it first, nothing was written"),
                },
            };
            let changed = claude::merge(&mut settings, &entries);
            Ok(Plan {
                sandbox: Sandbox::Claude {
                    settings: path.clone(),
                    kept: kept.len(),
                    readiness: prerequisites::check(),
                },
                change: changed.then(|| Change {
                    text: sandrail::harness::key_order::pretty_as_on_disk(&path, &settings),
                    path,
                }),
            })
        }
        Offer::Codex => {
            let path = project.join(codex::CONFIG);
            let text = match sandrail::files::read_regular(&path, 1 << 20) {
                Ok(bytes) => String::from_utf8(bytes)
                    .map_err(|_| anyhow::anyhow!("{} is not UTF-8", path.display()))?,
                Err(sandrail::files::FileError::Missing { .. }) => String::new(),
                Err(e) => bail!("{e}; fix it first, nothing was written"),
            };
            let turned_on =
                codex::turned_on(&text).map_err(|e| anyhow::anyhow!("{e}; nothing was written"))?;
            Ok(Plan {
                sandbox: Sandbox::Codex {
                    config: path.clone(),
                },
                change: turned_on.map(|text| Change { path, text }),
            })
        }
        Offer::Nothing(why) => Ok(Plan {
            sandbox: Sandbox::Nothing(why),
            change: None,
        }),
    }
}

/// Whether the sandbox can run here: said, and the exit status to end with (a
/// sandbox that cannot run protects nothing, so the set-up is not done).
pub(super) fn report_readiness(plan: &Plan) -> ExitCode {
    if let Sandbox::Claude { readiness, .. } = &plan.sandbox
        && let Some(said) = readiness.said()
    {
        eprintln!(
            "sandrail: NOT PROTECTED YET. {said}. Until then Claude Code refuses to start in this project (sandbox.failIfUnavailable); or set the project up without the sandbox: `sandrail init --no-sandbox`."
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The directories the sandbox denies, made now: a path the sandbox denies
/// must exist when a command starts, or the sandbox makes its missing parent
/// read-only for the command's whole run.
pub(super) fn prepare_places(project: &Path) -> anyhow::Result<()> {
    let places = Places::here(project);
    for dir in [&places.state, &places.cache, &places.anchors]
        .into_iter()
        .flatten()
    {
        locations::create_private_dir(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    if let Some(audit) = sandrail::audit::trail(project).parent() {
        std::fs::create_dir_all(audit)
            .with_context(|| format!("cannot create {}", audit.display()))?;
    }
    if let Some(home) = &places.home {
        claude::prepare_caches(home)
            .with_context(|| format!("cannot make the package caches under {}", home.display()))?;
    }
    Ok(())
}

/// Writes `text` to `path` whole or not at all.
pub(super) fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().context("the file has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
