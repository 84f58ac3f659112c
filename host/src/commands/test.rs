//! `sandrail test`: runs case files against components in the real sandbox. Each
//! case gets a fresh project, state directory and session; each of its events goes
//! through this binary's own `sandrail hook`, exactly as a harness would send it,
//! and what followed (the receipt, the state, the flags) is checked against the
//! case's expectations. The compiled-code cache is the user's, so a component is
//! compiled once, not once per case.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::json;

use sandrail::cases::{self, CaseFile, Mismatch, Observed, VERDICTS};
use sandrail::receipts;
use sandrail::store::SessionStore;

/// The case file looked for when none is named.
const DEFAULT_FILE: &str = "cases.toml";

pub fn run(paths: Vec<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let files = case_files(paths)?;
    let hook = std::env::current_exe().context("finding this sandrail binary to run its hook")?;
    let mut report = Report::default();
    for path in &files {
        let file = CaseFile::read(path)?;
        for case in &file.cases {
            let result = run_case(&hook, &file, case)
                .with_context(|| format!("{}: case {:?}", file.path.display(), case.name))?;
            if !json {
                print_case(&file, &result);
            }
            report.add(&file, result);
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report.json())?);
    } else {
        report.print_summary();
    }
    if report.ran == 0 {
        eprintln!(
            "sandrail: no case ran: {} holds no [[case]]",
            files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The case files named: each file as it is, each directory's `*.toml` files.
fn case_files(paths: Vec<PathBuf>) -> anyhow::Result<Vec<PathBuf>> {
    let paths = if paths.is_empty() {
        let default = PathBuf::from(DEFAULT_FILE);
        if !default.is_file() {
            bail!(
                "no {DEFAULT_FILE} here: name the case files or directories to run (`sandrail test cases/`)"
            );
        }
        vec![default]
    } else {
        paths
    };
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(&path)
                .with_context(|| format!("reading {}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
                .collect();
            if found.is_empty() {
                bail!("{} holds no case file (*.toml)", path.display());
            }
            found.sort();
            files.extend(found);
        } else if path.is_file() {
            files.push(path);
        } else {
            bail!("{}: no such case file or directory", path.display());
        }
    }
    Ok(files)
}

/// What became of one case.
struct CaseResult {
    name: String,
    /// (event number, label, what did not hold) for each event that failed.
    failures: Vec<(usize, String, Vec<Mismatch>)>,
    /// The verdicts the guardrail under test gave.
    verdicts: Vec<String>,
}

/// Runs one case in a project, state directory and session of its own.
fn run_case(hook: &Path, file: &CaseFile, case: &cases::Case) -> anyhow::Result<CaseResult> {
    let scratch = tempfile::Builder::new()
        .prefix("sandrail-test-")
        .tempdir()
        .context("making a scratch directory for the case")?;
    let project = scratch.path().join("project");
    let state = scratch.path().join("state");
    std::fs::create_dir_all(&project)?;
    std::fs::write(project.join("sandrail.toml"), &file.config)?;
    let base = file.path.parent().unwrap_or(Path::new("."));
    for name in &file.copies {
        // Read as the host reads a data grant: a regular file, bounded, opened
        // without blocking (a FIFO does not hang the run).
        let bytes = sandrail::files::read_regular(&base.join(name), MAX_COPY_BYTES)
            .with_context(|| format!("reading {name}, which the case's config names"))?;
        let to = project.join(name);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&to, bytes).with_context(|| format!("copying {name}"))?;
    }
    let _scratch = ScratchProject::accepting(&project, &state)?;
    let transcript = scratch.path().join("transcript.jsonl");
    std::fs::write(&transcript, "")?;
    // The scratch directory's name is unique, so no two cases share a session.
    let session = format!(
        "case-{}",
        scratch
            .path()
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    );
    let mut result = CaseResult {
        name: case.name.clone(),
        failures: Vec::new(),
        verdicts: Vec::new(),
    };
    let mut judged = 0;
    for (i, step) in case.events.iter().enumerate() {
        append_transcript(&transcript, &step.transcript_lines(i + 1))?;
        for (path, content) in &step.files {
            let to = project.join(path);
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir).with_context(|| {
                    format!("making the directory of {path} for event {}", i + 1)
                })?;
            }
            std::fs::write(&to, content)
                .with_context(|| format!("writing {path} for event {}", i + 1))?;
        }
        let payload = step.payload(&session, &transcript, &project, i + 1);
        let ran = run_hook(hook, &payload, &project, &state)?;
        let all = receipts::chained(&state).unwrap_or_default();
        let receipt = (all.len() > judged)
            .then(|| all.last().map(|(_, r)| r.clone()))
            .flatten();
        judged = all.len();
        // The hook writes a receipt for every event that wakes a guardrail: none
        // then means nothing was judged (an event it does not handle, a payload
        // it could not read and refused or let through).
        let ran = match (&receipt, ran.failed) {
            (None, None) if file.wakes(&payload) => HookRun {
                failed: Some(format!(
                    "no receipt: {}",
                    ran.refused.as_deref().unwrap_or(ran.stderr.trim())
                )),
                ..ran
            },
            (_, failed) => HookRun { failed, ..ran },
        };
        let observed = Observed {
            receipt,
            state: state_of(&state, &session, &file.under_test)?,
            flags: flags_of(&state, &session)?,
        };
        if let Some(v) = observed.verdict(&file.under_test) {
            result.verdicts.push(v.to_owned());
        }
        let mut mismatches = cases::check(&step.expect, &observed, &file.under_test);
        if let Some(why) = ran.failed {
            mismatches.insert(
                0,
                Mismatch {
                    field: "hook".into(),
                    expected: "the event judged".into(),
                    got: why,
                },
            );
        }
        if !mismatches.is_empty() {
            result.failures.push((i + 1, step.label(), mismatches));
        }
    }
    Ok(result)
}

fn append_transcript(path: &Path, lines: &[serde_json::Value]) -> anyhow::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    for line in lines {
        writeln!(file, "{line}")?;
    }
    Ok(())
}

/// A scratch project (a case's, a replay's) whose config is accepted in its
/// scratch state, as a person accepts a project's: it judges by its own config,
/// not by the embedded default a project with nothing accepted starts from.
/// Dropped, it removes the binding its first event made under the account's
/// home ([`sandrail::locations::binding`]); the rest is in the scratch
/// directory.
pub(super) struct ScratchProject {
    project: PathBuf,
}

impl ScratchProject {
    pub(super) fn accepting(project: &Path, state: &Path) -> anyhow::Result<ScratchProject> {
        sandrail::locations::create_private_dir(state)?;
        let blobs = sandrail::policy::blobs::Blobs::new(state);
        let captured = sandrail::policy::on_disk(Some(project), Some(&blobs));
        if captured.config.is_ok() {
            sandrail::policy::accept(state, project, &captured.manifest, "scratch")
                .context("accepting the scratch project's config in its scratch state")?;
        }
        Ok(ScratchProject {
            project: project.to_path_buf(),
        })
    }
}

impl Drop for ScratchProject {
    fn drop(&mut self) {
        if let Some(record) = sandrail::locations::binding::record_of(&self.project) {
            let _ = std::fs::remove_file(record);
        }
    }
}

/// What running the hook said beyond its receipt.
pub(super) struct HookRun {
    /// The hook could not judge the event the way a harness needs (it crashed, or
    /// printed what is not JSON): why.
    pub(super) failed: Option<String>,
    /// It refused with exit 2 (the reason on stderr).
    pub(super) refused: Option<String>,
    pub(super) stderr: String,
}

/// Runs `sandrail hook` on one payload as the harness would: in the project, with
/// the case's state directory, and never through a server.
pub(super) fn run_hook(
    hook: &Path,
    payload: &serde_json::Value,
    project: &Path,
    state: &Path,
) -> anyhow::Result<HookRun> {
    let mut child = Command::new(hook)
        .arg("hook")
        .current_dir(project)
        .env("CLAUDE_PROJECT_DIR", project)
        .env("SANDRAIL_STATE_DIR", state)
        .env_remove("SANDRAIL_CONFIG")
        .env_remove(sandrail_forward::SOCKET_VAR)
        .env_remove(sandrail_forward::REQUIRED_VAR)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting `sandrail hook`")?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that stops reading early has answered anyway; its output says so.
        let _ = stdin.write_all(payload.to_string().as_bytes());
    }
    let out = child
        .wait_with_output()
        .context("running `sandrail hook`")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let failed = match out.status.code() {
        Some(0) if stdout.trim().is_empty() => None,
        Some(0) => serde_json::from_str::<serde_json::Value>(stdout.trim())
            .err()
            .map(|e| format!("an answer that is not JSON ({e}): {stdout}")),
        // A refusal without JSON is an answer when a receipt says what it was.
        Some(2) => None,
        other => Some(format!(
            "exit {}: {}",
            other.map_or("by signal".to_owned(), |c| c.to_string()),
            stderr.trim()
        )),
    };
    let refused = (out.status.code() == Some(2)).then(|| stderr.trim().to_owned());
    Ok(HookRun {
        failed,
        refused,
        stderr: stderr.into_owned(),
    })
}

const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest file a case's config names that is copied for it (the host reads
/// a data grant up to 1 MiB; a mandate is smaller still).
const MAX_COPY_BYTES: u64 = sandrail::runtime::MAX_DATA_BYTES;

fn state_of(
    state_dir: &Path,
    session: &str,
    guardrail: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    let Some(store) = SessionStore::open_existing(state_dir, session, READ_TIMEOUT)? else {
        return Ok(BTreeMap::new());
    };
    Ok(store
        .read()?
        .list(guardrail, "")?
        .into_iter()
        .map(|e| (e.key, e.value))
        .collect())
}

fn flags_of(state_dir: &Path, session: &str) -> anyhow::Result<Vec<String>> {
    let Some(store) = SessionStore::open_existing(state_dir, session, READ_TIMEOUT)? else {
        return Ok(Vec::new());
    };
    Ok(store.read()?.flags()?.into_iter().map(|(f, _)| f).collect())
}

fn print_case(file: &CaseFile, result: &CaseResult) {
    if result.failures.is_empty() {
        println!("ok    {}: {}", file.path.display(), result.name);
        return;
    }
    println!("FAIL  {}: {}", file.path.display(), result.name);
    for (n, label, mismatches) in &result.failures {
        println!("      event {n} ({label}):");
        for m in mismatches {
            println!("        {}: expected {}", m.field, m.expected);
            println!("        {}       got {}", " ".repeat(m.field.len()), m.got);
        }
    }
}

#[derive(Default)]
struct Report {
    ran: usize,
    failed: usize,
    verdicts: BTreeMap<String, usize>,
    cases: Vec<serde_json::Value>,
}

impl Report {
    fn add(&mut self, file: &CaseFile, result: CaseResult) {
        self.ran += 1;
        if !result.failures.is_empty() {
            self.failed += 1;
        }
        for v in &result.verdicts {
            *self.verdicts.entry(v.clone()).or_default() += 1;
        }
        self.cases.push(json!({
            "file": file.path.display().to_string(),
            "case": result.name,
            "passed": result.failures.is_empty(),
            "failures": result.failures.iter().map(|(n, label, m)| json!({
                "event": n, "label": label, "mismatches": m,
            })).collect::<Vec<_>>(),
        }));
    }

    /// The verdict kinds a gate can give that no case drew out (none when only
    /// contexts ran: they transition, they do not judge).
    fn unexercised(&self) -> Vec<&'static str> {
        let gate = cases::GATE_VERDICTS;
        if !self.verdicts.is_empty() && !gate.iter().any(|v| self.verdicts.contains_key(*v)) {
            return Vec::new();
        }
        // A gate's own verdicts: the ones a case can make it give.
        gate[..4]
            .iter()
            .copied()
            .filter(|v| !self.verdicts.contains_key(*v))
            .collect()
    }

    fn print_summary(&self) {
        let exercised: Vec<String> = VERDICTS
            .iter()
            .filter_map(|v| self.verdicts.get(*v).map(|n| format!("{v} {n}")))
            .collect();
        println!(
            "\n{} case{}: {} passed, {} failed",
            self.ran,
            if self.ran == 1 { "" } else { "s" },
            self.ran - self.failed,
            self.failed
        );
        println!(
            "verdicts exercised: {}",
            if exercised.is_empty() {
                "none".to_owned()
            } else {
                exercised.join(", ")
            }
        );
        let missing = self.unexercised();
        if !missing.is_empty() {
            println!("not exercised: {}", missing.join(", "));
        }
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "cases": self.cases,
            "ran": self.ran,
            "passed": self.ran - self.failed,
            "failed": self.failed,
            "verdicts": self.verdicts,
            "not_exercised": self.unexercised(),
        })
    }
}
