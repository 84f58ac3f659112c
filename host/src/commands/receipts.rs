//! `sandrail receipts`: list the decision receipts, or verify their hash chain.

use std::io::Write;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};

use sandrail::locations;
use sandrail::receipts::{self, Receipt};

pub struct Filter<'a> {
    pub session: Option<&'a str>,
    pub since: Option<&'a str>,
    pub guardrail: Option<&'a str>,
    /// A project directory, as given; compared after resolving it.
    pub project: Option<&'a std::path::Path>,
}

/// What to check the receipts against, beyond their own chain.
pub struct Verify<'a> {
    /// A capture of the system log the receipts also went to.
    pub against: Option<&'a std::path::Path>,
}

pub fn run(
    filter: Filter<'_>,
    as_json: bool,
    verify: Option<Verify<'_>>,
) -> anyhow::Result<ExitCode> {
    let state = locations::state_dir()
        .context("no state directory (set SANDRAIL_STATE_DIR or HOME): there are no receipts")?;
    if let Some(verify) = verify {
        let chain = verify_chain(&state)?;
        return match verify.against {
            Some(log) => against(&state, log, chain),
            None => Ok(chain),
        };
    }
    let since = filter.since.map(since_seconds).transpose()?;
    // A receipt names the project as the hook was given it; both sides are
    // compared resolved, so `.` or a symlink finds it.
    let resolved =
        |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let project = filter.project.map(resolved);
    let mut resolved_projects: std::collections::HashMap<String, std::path::PathBuf> =
        std::collections::HashMap::new();
    let mut out = std::io::stdout().lock();
    let mut unreadable = 0;
    let mut shown = 0;
    let mut read = 0;
    for (line, receipt) in receipts::read_all(&state)? {
        read += 1;
        let receipt = match receipt {
            Ok(receipt) => receipt,
            Err(e) => {
                unreadable += 1;
                eprintln!("sandrail: line {line} is not a receipt: {e}");
                continue;
            }
        };
        if filter.session.is_some_and(|s| receipt.session != s)
            || since.is_some_and(|since| seconds(&receipt.time).is_some_and(|t| t < since))
            || filter
                .guardrail
                .is_some_and(|g| !receipt.guardrails.iter().any(|run| run.name == g))
            || project.as_ref().is_some_and(|wanted| {
                receipt.project.as_ref().is_none_or(|p| {
                    resolved_projects
                        .entry(p.clone())
                        .or_insert_with(|| resolved(std::path::Path::new(p)))
                        != wanted
                })
            })
        {
            continue;
        }
        shown += 1;
        if as_json {
            writeln!(out, "{}", serde_json::to_string(&receipt)?)?;
        } else {
            writeln!(out, "{}", one_line(&receipt))?;
        }
    }
    if shown == 0 && !as_json {
        let file = receipts::path(&state);
        // Say which: an empty file, or a filter nothing matches.
        let mut wanted = Vec::new();
        if let Some(session) = filter.session {
            wanted.push(format!("session '{session}'"));
        }
        if let Some(since) = filter.since {
            wanted.push(format!("since {since}"));
        }
        if let Some(guardrail) = filter.guardrail {
            wanted.push(format!("guardrail '{guardrail}'"));
        }
        if let Some(project) = &project {
            wanted.push(format!("project {}", project.display()));
        }
        if read == 0 || wanted.is_empty() {
            writeln!(out, "no receipts in {}", file.display())?;
        } else {
            writeln!(
                out,
                "no receipt of the {read} in {} matches {}",
                file.display(),
                wanted.join(", ")
            )?;
        }
    }
    if unreadable > 0 {
        bail!("{unreadable} line(s) are not receipts; run `sandrail receipts --verify`");
    }
    Ok(ExitCode::SUCCESS)
}

/// `time  session  event tool  decision  guardrail:verdict …`
fn one_line(r: &Receipt) -> String {
    let decision = match &r.observed {
        Some(observed) => format!("{} (observe: would {observed})", r.decision),
        None => r.decision.clone(),
    };
    let guardrails: Vec<String> = r
        .guardrails
        .iter()
        .map(|g| {
            let mut text = format!("{}:{}", g.name, g.verdict);
            if let Some(rule) = &g.rule {
                text.push_str(&format!("/{rule}"));
            }
            if let Some(level) = &g.level {
                text.push_str(&format!("@{level}"));
            }
            if !g.exceeded.is_empty() {
                text.push_str(&format!("[{}]", g.exceeded.join(",")));
            }
            text
        })
        .collect();
    format!(
        "{}  {}  {} {}  {}  {}",
        r.time,
        r.session,
        r.event,
        r.tool.as_deref().unwrap_or("-"),
        decision,
        if guardrails.is_empty() {
            "[sandrail]".to_owned()
        } else {
            guardrails.join(" ")
        }
    )
}

fn verify_chain(state: &std::path::Path) -> anyhow::Result<ExitCode> {
    let verified = receipts::verify(state)?;
    let path = receipts::path(state);
    for problem in &verified.breaks {
        println!("broken  {problem}");
    }
    let last = verified.last.as_ref().map_or(String::new(), |(seq, hash)| {
        format!("; the last is seq {seq}, line hash {hash} (a copy shipped elsewhere that goes further shows lines removed from the end)")
    });
    if verified.breaks.is_empty() {
        println!(
            "{}: {} receipts, chain intact{last}",
            path.display(),
            verified.receipts
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "sandrail: {}: the chain is broken in {} place(s) among {} receipts",
            path.display(),
            verified.breaks.len(),
            verified.receipts
        );
        Ok(ExitCode::FAILURE)
    }
}

/// Compares the receipts file with a capture of the system log: a file an agent
/// rewrote and chained again passes its own check, not this one.
fn against(
    state: &std::path::Path,
    log: &std::path::Path,
    chain: ExitCode,
) -> anyhow::Result<ExitCode> {
    let text = receipts::anchor::read(log)
        .with_context(|| format!("cannot read the log capture {}", log.display()))?;
    let file = receipts::chained(state)?;
    let compared = receipts::anchor::compare(&file, &text);
    if compared.logged == 0 {
        bail!(
            "{} holds no sandrail receipts; capture the log with `journalctl -t sandrail _UID=$(id -u) -o cat` (or grep `sandrail[` from the syslog file)",
            log.display()
        );
    }
    for finding in &compared.findings {
        println!("differs {finding}");
    }
    if compared.older > 0 {
        println!(
            "note    {} receipt(s) older than the log's first were not compared",
            compared.older
        );
    }
    if compared.findings.is_empty() {
        println!(
            "{}: the file agrees with the {} receipts the log holds",
            log.display(),
            compared.logged
        );
        Ok(chain)
    } else {
        eprintln!(
            "sandrail: the receipts file and {} disagree in {} place(s): receipts were dropped, altered or added after they were logged",
            log.display(),
            compared.findings.len()
        );
        Ok(ExitCode::FAILURE)
    }
}

/// `--since`: an RFC 3339 time (`2026-12-01T09:00:00Z`, `2026-12-01 09:00:00`) or
/// a span back from now (`30m`, `2h`, `1day`).
fn since_seconds(text: &str) -> anyhow::Result<u64> {
    let time = humantime::parse_rfc3339_weak(text)
        .or_else(|_| {
            humantime::parse_duration(text).map(|span| {
                UNIX_EPOCH + std::time::Duration::from_secs(sandrail::clock::now())
                    - span.min(std::time::Duration::from_secs(sandrail::clock::now()))
            })
        })
        .map_err(|_| {
            anyhow::anyhow!(
                "--since {text:?} is neither a time (2026-12-01T09:00:00Z) nor a span back from now (30m, 2h, 1day)"
            )
        })?;
    Ok(epoch_seconds(time))
}

fn seconds(rfc3339: &str) -> Option<u64> {
    humantime::parse_rfc3339_weak(rfc3339)
        .ok()
        .map(epoch_seconds)
}

fn epoch_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
