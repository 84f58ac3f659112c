//! `sandrail doctor [--json]`: checks what a silent failure would hide. A hook
//! the harness cannot start is skipped without a word, an event not registered
//! is never judged, a state directory that cannot be written loses counters;
//! each finding says how to fix it, and the exit status says whether any is an
//! error.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;

use sandrail::config::{Config, Located};
use sandrail::event::EventKind;
use sandrail::harness::Harness;
use sandrail::harness::settings::{
    FORWARDING_HOOK, hook_dialect, hook_program, matches_every_tool,
};
use sandrail::locations;
use sandrail::policy::{self, blobs::Blobs};

use super::project_dir;

mod managed;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Warning,
    Error,
}

#[derive(Debug, serde::Serialize)]
struct Finding {
    level: Level,
    /// What was checked: `settings`, `command`, `state`, `cache`, `policy`, `config`.
    check: &'static str,
    said: String,
    /// How to fix it (none for a finding that is fine).
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

#[derive(Default)]
pub(super) struct Findings(Vec<Finding>);

impl Findings {
    pub(super) fn ok(&mut self, check: &'static str, said: String) {
        self.push(Level::Ok, check, said, None);
    }
    pub(super) fn warn(&mut self, check: &'static str, said: String, fix: String) {
        self.push(Level::Warning, check, said, Some(fix));
    }
    pub(super) fn error(&mut self, check: &'static str, said: String, fix: String) {
        self.push(Level::Error, check, said, Some(fix));
    }
    fn push(&mut self, level: Level, check: &'static str, said: String, fix: Option<String>) {
        self.0.push(Finding {
            level,
            check,
            said,
            fix,
        });
    }
}

/// With `managed` (the managed settings to read, or Claude Code's), checks the
/// managed set-up instead of the project's.
pub fn run(json: bool, managed: Option<Option<PathBuf>>) -> anyhow::Result<ExitCode> {
    let mut findings = Findings::default();
    if let Some(settings) = managed {
        let settings =
            settings.unwrap_or_else(|| PathBuf::from(sandrail::managed::CLAUDE_MANAGED_SETTINGS));
        managed::check(&settings, &mut findings);
        return Ok(finish(None, &findings, json));
    }
    let project = project_dir();
    let config = config(project.as_deref(), &mut findings);
    if let Some(project) = &project {
        settings(project, config.as_ref(), &mut findings);
        sandbox(project, &mut findings);
        if let Some(config) = &config {
            deadlines(project, config, &mut findings);
        }
    }
    directories(&mut findings);
    system_log(project.as_deref(), &mut findings);
    if let (Some(project), Some(state)) = (&project, locations::state_dir()) {
        policy_in_force(project, &state, &mut findings);
        checkpoints(project, &state, &mut findings);
    }
    Ok(finish(project.as_deref(), &findings, json))
}

/// Prints the findings; the exit status says whether any is an error.
fn finish(project: Option<&Path>, findings: &Findings, json: bool) -> ExitCode {
    let worst = findings
        .0
        .iter()
        .map(|f| f.level)
        .max()
        .unwrap_or(Level::Ok);
    if json {
        println!(
            "{}",
            json!({"project": project, "worst": worst, "findings": findings.0})
        );
    } else {
        for finding in &findings.0 {
            let tag = match finding.level {
                Level::Ok => "ok     ",
                Level::Warning => "warning",
                Level::Error => "error  ",
            };
            println!("{tag} {:<8} {}", finding.check, finding.said);
            if let Some(fix) = &finding.fix {
                println!("        {:<8} fix: {fix}", "");
            }
        }
        let errors = findings
            .0
            .iter()
            .filter(|f| f.level == Level::Error)
            .count();
        let warnings = findings
            .0
            .iter()
            .filter(|f| f.level == Level::Warning)
            .count();
        println!("{errors} error(s), {warnings} warning(s)");
    }
    if worst == Level::Error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The config in force, and its own check (components load, their configs hold).
fn config(project: Option<&Path>, findings: &mut Findings) -> Option<Config> {
    let located = Config::locate(project);
    let config = match Config::discover(project) {
        Ok(config) => config,
        Err(e) => {
            findings.error(
                "config",
                format!(
                    "the config cannot be used: {e}; the hook falls back to the embedded default"
                ),
                "fix it; `sandrail check-config` says where".into(),
            );
            return None;
        }
    };
    if let Ok(Located::Embedded) = located {
        findings.warn(
            "config",
            "no sandrail.toml: the embedded default is in force".into(),
            "run `sandrail init` for a starter policy to adapt".into(),
        );
    }
    match super::check_config::check(&config) {
        Ok(lines) => {
            for warning in lines.iter().filter(|l| l.is_warning()) {
                findings.warn(
                    "config",
                    warning.text.clone(),
                    "set the field in the mandate, or leave the rule refusing until it is".into(),
                );
            }
            let problems: Vec<String> = lines
                .iter()
                .filter(|l| l.is_problem())
                .map(|l| l.text.clone())
                .collect();
            if problems.is_empty() {
                findings.ok(
                    "config",
                    format!(
                        "{}: {} guardrails load and their configs hold",
                        config.origin,
                        config.guardrails.len()
                    ),
                );
            } else {
                for problem in problems {
                    findings.error(
                        "config",
                        problem,
                        "run `sandrail check-config` and fix what it names".into(),
                    );
                }
            }
        }
        Err(e) => findings.error(
            "config",
            format!("the components could not be checked: {e:#}"),
            "run `sandrail check-config`".into(),
        ),
    }
    Some(config)
}

/// The events the config needs the harness to send.
fn needed_events(config: Option<&Config>) -> BTreeSet<EventKind> {
    let mut needed = BTreeSet::new();
    let Some(config) = config else {
        needed.insert(EventKind::PreToolUse);
        return needed;
    };
    for g in config.guardrails.iter().filter(|g| g.enabled) {
        needed.extend(g.events.iter().copied());
        // A context records what the turn did; its gate judges at Stop.
        if g.is_context() {
            needed.extend([EventKind::PostToolUse, EventKind::Stop]);
        }
        if !g.requires.is_empty() {
            needed.insert(EventKind::Stop);
        }
    }
    if config.protect.enabled {
        needed.insert(EventKind::ConfigChange);
    }
    needed
}

/// Each harness's project settings that exist: sandrail registered for every
/// event the config needs, each registered command this binary.
fn settings(project: &Path, config: Option<&Config>, findings: &mut Findings) {
    let needed = needed_events(config);
    let this = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .ok();
    let mut any = false;
    let home = locations::home();
    for harness in Harness::ALL {
        let settings = harness.settings();
        let path = project.join(settings.file);
        let files = std::iter::once(settings.file)
            .chain(settings.also.iter().copied())
            .map(|f| project.join(f))
            .chain(
                settings
                    .in_home
                    .iter()
                    .filter_map(|f| home.as_ref().map(|h| h.join(f))),
            );
        let mut registered = std::collections::BTreeMap::<String, Vec<String>>::new();
        let mut matchers = std::collections::BTreeMap::<String, Vec<String>>::new();
        for file in files {
            match sandrail::harness::settings::read(&file) {
                Ok(Some(doc)) => {
                    if doc
                        .get("disableAllHooks")
                        .and_then(serde_json::Value::as_bool)
                        == Some(true)
                    {
                        findings.error(
                            "settings",
                            format!(
                                "{} sets disableAllHooks: {} runs no hook at all",
                                file.display(),
                                harness.title()
                            ),
                            "remove disableAllHooks".into(),
                        );
                    }
                    for (event, commands) in settings.registrations(&doc) {
                        registered.entry(event).or_default().extend(commands);
                    }
                    for (event, found) in settings.matchers(&doc) {
                        matchers.entry(event).or_default().extend(found);
                    }
                }
                Ok(None) => {}
                Err(why) => findings.error(
                    "settings",
                    format!("{why}: {} reads no hooks from it", harness.title()),
                    format!(
                        "fix the file, then `sandrail init --harness {}`",
                        harness.name()
                    ),
                ),
            }
        }
        if registered.is_empty() {
            continue;
        }
        any = true;
        let missing: Vec<&str> = needed
            .iter()
            .filter_map(|kind| match harness.event_name(*kind) {
                Some(name) => (!registered.contains_key(name)).then_some(name),
                // The harness has no such event: nothing to register.
                None => None,
            })
            .collect();
        if missing.is_empty() {
            findings.ok(
                "settings",
                format!(
                    "{} registers sandrail for every event the config needs",
                    harness.title()
                ),
            );
        } else {
            findings.error(
                "settings",
                format!(
                    "{}'s settings ({} and the others it reads) do not register sandrail for {}: those events are never judged",
                    harness.title(),
                    path.display(),
                    missing.join(", ")
                ),
                format!("run `sandrail init --harness {}`", harness.name()),
            );
        }
        for (event, found) in &matchers {
            if !found.iter().any(|m| matches_every_tool(m)) {
                findings.warn(
                    "settings",
                    format!(
                        "{} runs sandrail for {event} only on tools matching {}: every other tool call goes unjudged",
                        harness.title(),
                        found.join(", ")
                    ),
                    "set the matcher of sandrail's hook to \"*\"".into(),
                );
            }
        }
        let commands: BTreeSet<&String> = registered.values().flatten().collect();
        for command in commands {
            check_command(command, this.as_deref(), project, harness, findings);
        }
        committed_registration(project, harness, findings);
    }
    if !any {
        findings.error(
            "settings",
            format!(
                "no harness settings in {} register sandrail: no event is judged",
                project.display()
            ),
            "run `sandrail init` (with --harness for a harness other than Claude Code)".into(),
        );
    }
}

/// The file a team commits must not carry a machine's registration where the
/// harness reads a local file for it: a teammate's binary is elsewhere (their
/// hook never runs), and a bare name instead would run whatever `sandrail` comes
/// first on PATH.
fn committed_registration(project: &Path, harness: Harness, findings: &mut Findings) {
    let settings = harness.settings();
    if settings.registration == settings.file {
        return;
    }
    let shared = project.join(settings.file);
    let Ok(Some(doc)) = sandrail::harness::settings::read(&shared) else {
        return;
    };
    let commands: BTreeSet<String> = settings
        .registrations(&doc)
        .into_values()
        .flatten()
        .collect();
    let machine: Vec<&String> = commands
        .iter()
        .filter(|c| hook_program(c).is_some_and(|p| p.contains('/')))
        .collect();
    if !machine.is_empty() {
        findings.warn(
            "settings",
            format!(
                "{} registers this machine's binary ({}): the file is committed, and a teammate whose binary is elsewhere gets a hook that never runs",
                shared.display(),
                machine.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
            ),
            format!(
                "run `sandrail init`: it moves the registration to {}, which stays out of the repository",
                settings.registration
            ),
        );
    }
}

/// A registered command must start this binary: a missing one is skipped by
/// the harness without a word, and another one judges by its own rules.
fn check_command(
    command: &str,
    this: Option<&Path>,
    project: &Path,
    harness: Harness,
    findings: &mut Findings,
) {
    if command.starts_with("http://") || command.starts_with("https://") {
        let host = command
            .split_once("://")
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .split(['/', '?'])
            .next()
            .unwrap_or_default();
        let host = host.rsplit_once(':').map_or(host, |(host, _)| host);
        if matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
            findings.ok(
                "command",
                format!("{command} (sandrail serve) is registered; while it is down, events go unjudged unless a command hook forwards with SANDRAIL_SERVE_REQUIRED=1"),
            );
        } else {
            findings.warn(
                "command",
                format!("{command} is a server on another machine: every event goes there, and while it cannot be reached events go unjudged"),
                "register the local `sandrail serve`, or the command hook".into(),
            );
        }
        return;
    }
    if let Some(dialect) = hook_dialect(command)
        && dialect != harness.name()
    {
        findings.error(
            "command",
            format!(
                "`{command}` reads {dialect}'s payloads, but {} sends its own: its events go unjudged",
                harness.title()
            ),
            format!("run `sandrail hook --harness {}` there", harness.name()),
        );
        return;
    }
    let Some(program) = hook_program(command) else {
        return;
    };
    let fix = format!(
        "run `sandrail init --harness {}` from this binary after removing the stale hook, or correct the path in the settings",
        harness.name()
    );
    let program = program.as_str();
    if !program.contains('/') {
        findings.error(
            "command",
            format!(
                "`{command}` names sandrail without a path: the harness runs the first `{program}` on PATH, which the agent can put there itself"
            ),
            format!(
                "register this binary by its absolute path: `sandrail init --harness {}` does, after the bare entry is removed",
                harness.name()
            ),
        );
        return;
    }
    // A path the agent can change: relative (to wherever the harness runs it),
    // or through the project, where the agent writes — a link or a copy there
    // that is this binary today can be another program tomorrow.
    let written = expand_home(program);
    let replaceable = if written.is_relative() {
        Some("a relative path, looked up from the directory the harness runs it in")
    } else if written
        .parent()
        .is_some_and(|dir| locations::canonical(dir).starts_with(project))
    {
        Some("a path inside the project, where the agent can put another program")
    } else {
        None
    };
    if let Some(why) = replaceable {
        findings.error(
            "command",
            format!("`{command}` names sandrail by {why}"),
            format!(
                "register this binary by its absolute path outside the project: `sandrail init --harness {}` does, after the entry is removed",
                harness.name()
            ),
        );
        return;
    }
    let Some(resolved) = resolve(program) else {
        findings.error(
            "command",
            format!("`{command}`: {program} does not resolve to a program, so {} skips the hook silently", harness.title()),
            fix,
        );
        return;
    };
    let forwards = resolved
        .file_name()
        .is_some_and(|name| name == FORWARDING_HOOK);
    // The forwarding hook must be the one installed beside this binary: it runs
    // `sandrail hook` from beside itself while the server is down.
    let expected = match this {
        Some(this) if forwards => {
            let beside = this.with_file_name(FORWARDING_HOOK);
            match beside.canonicalize() {
                Ok(beside) => Some(beside),
                Err(_) => {
                    findings.error(
                        "command",
                        format!(
                            "`{command}` runs a forwarding hook, but none is installed beside this binary ({}): the one it runs judges by another sandrail while the server is down",
                            beside.display()
                        ),
                        "install sandrail-hook beside sandrail (`cargo install --path host` does both), then run `sandrail init --serve` again".into(),
                    );
                    return;
                }
            }
        }
        this => this.map(Path::to_path_buf),
    };
    match expected {
        Some(expected) if resolved != expected => findings.warn(
            "command",
            format!(
                "`{command}` runs {}, not {}",
                resolved.display(),
                expected.display()
            ),
            fix,
        ),
        _ if forwards => check_server(command, project, findings),
        _ => findings.ok("command", format!("`{command}` runs this binary")),
    }
}

/// The server a forwarding hook hands its events to: one that does not answer
/// costs each event the start of a local hook, never its judgement.
fn check_server(command: &str, project: &Path, findings: &mut Findings) {
    let Some((socket, required)) = sandrail::managed::forwarding_hook(command) else {
        findings.warn(
            "command",
            format!("`{command}` names no server (SANDRAIL_SERVE_SOCKET): every event is judged by the local hook"),
            "run `sandrail init --serve` again".into(),
        );
        return;
    };
    if socket.is_relative() || locations::canonical(&socket).starts_with(project) {
        findings.error(
            "command",
            format!(
                "`{command}` hands events to a socket by a relative path or inside the project, where the agent can put a server of its own"
            ),
            "run `sandrail init --serve`: it registers the socket in your state directory".into(),
        );
        return;
    }
    // The server must run this binary, as the forwarding hook beside it checks.
    let this = Path::new(sandrail::forward::THIS_BINARY);
    let answers = sandrail::forward::serves(&socket, this, std::time::Duration::from_secs(1));
    if let Err(e @ sandrail::forward::ForwardError::NotSandrail { .. }) = &answers {
        findings.error(
            "command",
            format!("{e}: the forwarding hook does not use it, and judges each event locally"),
            "stop whatever listens there, then restart the service: `systemctl --user restart sandrail.service` (macOS: `launchctl kickstart -k gui/$(id -u)/dev.sandrail.serve`)".into(),
        );
        return;
    }
    match (answers.is_ok(), required) {
        (true, _) => findings.ok(
            "command",
            format!(
                "`{command}` hands each event to sandrail serve at {}, which answers",
                socket.display()
            ),
        ),
        (false, false) => findings.warn(
            "command",
            format!(
                "sandrail serve does not answer at {}: each event is judged by the local hook instead, which is slower",
                socket.display()
            ),
            "start the service: `systemctl --user enable --now sandrail.service` (macOS: `launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/dev.sandrail.serve.plist`), or run `sandrail init --serve` again".into(),
        ),
        (false, true) => findings.error(
            "command",
            format!(
                "sandrail serve does not answer at {}, and the hook requires it (SANDRAIL_SERVE_REQUIRED=1): every event is refused",
                socket.display()
            ),
            "start the server".into(),
        ),
    }
}

/// Where a command's program is: a path as written (`~` and `$HOME` expanded),
/// else the first match on PATH.
fn resolve(program: &str) -> Option<PathBuf> {
    let expanded = expand_home(program);
    let is_program = |path: &Path| {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if program.contains('/') {
        Some(expanded).filter(|p| is_program(p))
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(program))
                .find(|p| is_program(p))
        })
    };
    found.and_then(|p| p.canonicalize().ok())
}

/// A program's path with `~/` or `$HOME/` replaced by the home directory.
fn expand_home(program: &str) -> PathBuf {
    let rest = program
        .strip_prefix("~/")
        .or(program.strip_prefix("$HOME/"));
    match (rest, locations::home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(program),
    }
}

/// The state and cache directories exist (or can be made) and take a file.
fn directories(findings: &mut Findings) {
    for (check, dir, loses) in [
        (
            "state",
            locations::state_dir(),
            "counters, flags, policies and receipts",
        ),
        ("cache", locations::cache_dir(), "compiled components"),
    ] {
        let Some(dir) = dir else {
            findings.error(
                check,
                format!("no {check} directory: {loses} have nowhere to go"),
                format!("set SANDRAIL_{}_DIR, or HOME", check.to_uppercase()),
            );
            continue;
        };
        let usable = locations::create_private_dir(&dir)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                tempfile::tempfile_in(&dir)
                    .map(drop)
                    .map_err(|e| e.to_string())
            });
        match usable {
            Ok(()) => findings.ok(check, format!("{} is usable", dir.display())),
            Err(e) => findings.error(
                check,
                format!("{} cannot be used ({e}): {loses} are lost", dir.display()),
                format!(
                    "make it a directory this user can write, or set SANDRAIL_{}_DIR",
                    check.to_uppercase()
                ),
            ),
        }
    }
}

/// Whether the system log the project's receipts go to takes them: without it
/// receipts are in their files only, with nothing outside the agent's reach to
/// check them against (`sandrail receipts --verify --against`).
fn system_log(project: Option<&Path>, findings: &mut Findings) {
    let socket = project
        .and_then(locations::binding::bound)
        .map_or_else(locations::log_from_env, |b| b.log);
    let last_failure =
        locations::state_dir().and_then(|state| sandrail::receipts::anchor::last_failure(&state));
    match sandrail::receipts::anchor::reachable(&socket) {
        Ok(()) => match last_failure {
            Some((failed, why)) => findings.warn(
                "log",
                format!(
                    "the last receipt did not reach the system log at {failed} ({why}), and none has since: receipts are in their files only"
                ),
                "see that the log reads what it is sent (a full queue drops receipts); the next receipt that reaches it clears this".into(),
            ),
            None => findings.ok(
                "log",
                format!("receipts also go to the system log at {}", socket.display()),
            ),
        },
        Err(e) => findings.warn(
            "log",
            format!(
                "the system log at {} cannot be reached ({e}): receipts are kept in their files only, and a rewritten file cannot be caught against the log",
                socket.display()
            ),
            "run a syslog daemon (or journald) listening there, or point SANDRAIL_SYSLOG_SOCKET at one and run `sandrail trust` in a terminal started with it".into(),
        ),
    }
}

/// The policy new sessions start from, and whether a newer one waits on disk.
fn policy_in_force(project: &Path, state: &Path, findings: &mut Findings) {
    let project = policy::project_for(state, project);
    let on_disk = policy::on_disk(Some(&project), Some(&Blobs::new(state)));
    match policy::accepted(state, &project) {
        Some(record) if record.policy == on_disk.manifest => findings.ok(
            "policy",
            format!(
                "policy {} ({}) is accepted and is what is on disk",
                record.policy.id(),
                record.policy.origin()
            ),
        ),
        Some(record) => findings.warn(
            "policy",
            format!(
                "new sessions start from the accepted policy {} ({}); the policy on disk ({}) differs and is not in force",
                record.policy.id(),
                record.policy.origin(),
                on_disk.manifest.id()
            ),
            "review it with `sandrail trust` in a terminal, which shows the difference and accepts it".into(),
        ),
        None => findings.warn(
            "policy",
            format!(
                "no policy accepted yet for {}: a new session takes the policy on disk ({}) only where it adds guardrails to the embedded default, and runs the embedded default otherwise",
                project.display(),
                on_disk.manifest.id()
            ),
            "run `sandrail trust` in a terminal to accept it".into(),
        ),
    }
}

/// A checkpoint slower than this is said: every call that can change the
/// project waits for it.
const SLOW_CHECKPOINT_MS: u64 = 500;

/// Whether the project is checkpointed before each call that can change it,
/// what the store takes, and whether the latest attempt failed.
fn checkpoints(project: &Path, state: &Path, findings: &mut Findings) {
    let config = super::policy_in_force().config;
    if !config.checkpoints.enabled {
        findings.warn(
            "checkpts",
            super::checkpoints::describe(&config.checkpoints),
            "remove `enabled = false` from [checkpoints] in sandrail.toml and run `sandrail trust` in a terminal".into(),
        );
        return;
    }
    let standing = super::checkpoints::Standing::of(state, project);
    let writable = locations::create_private_dir(standing.store.dir())
        .and_then(|()| tempfile::tempfile_in(standing.store.dir()).map(drop));
    if let Err(e) = writable {
        findings.error(
            "checkpts",
            format!(
                "the checkpoint store {} cannot be written ({e}): no call is checkpointed, and what a call destroys cannot be undone",
                standing.store.dir().display()
            ),
            format!(
                "make {} a directory this user can write, with room to spare",
                state.join(sandrail::checkpoint::STORES).display()
            ),
        );
        return;
    }
    match standing.store.last_failure() {
        Some((at, why)) => findings.error(
            "checkpts",
            format!(
                "the latest checkpoint of this project could not be taken ({}): {why}; calls since are judged as before, but what they change cannot be undone",
                sandrail::clock::rfc3339(at)
            ),
            format!(
                "make {} writable with room to spare (`sandrail checkpoints prune` frees what the retention no longer keeps), or raise [checkpoints] timeout_ms for a project whose first checkpoint takes long",
                standing.store.dir().display()
            ),
        ),
        None => {
            let calls: Vec<u64> = standing
                .records
                .iter()
                .rev()
                .filter(|r| r.occasion == sandrail::checkpoint::Occasion::Call)
                .take(10)
                .map(|r| r.took_ms)
                .collect();
            let mut sorted = calls.clone();
            sorted.sort_unstable();
            let typical = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
            if typical >= SLOW_CHECKPOINT_MS {
                findings.warn(
                    "checkpts",
                    format!(
                        "a checkpoint of this project takes {typical} ms (the median of its last {}): every call that can change the project waits that long",
                        calls.len()
                    ),
                    "leave out what need not come back (generated data, vendored trees) with [checkpoints] ignore, and run `sandrail trust`".into(),
                );
            } else {
                findings.ok(
                    "checkpts",
                    format!(
                        "{}; {}",
                        super::checkpoints::describe(&config.checkpoints),
                        standing.line(None)
                    ),
                );
            }
        }
    }
}

/// The harness's OS sandbox, for each harness registered: an error where the
/// project relies on it and it is off or cannot run here, a warning where the
/// project chose to go without or the harness has none.
fn sandbox(project: &Path, findings: &mut Findings) {
    if sandrail::managed::registered_in_managed_settings() {
        findings.ok(
            "sandbox",
            "Claude Code's managed settings hand every event to sandrail running as a user of its own (managed mode): sandrail's own files are out of the agent's reach without a sandbox; `sandrail doctor --managed` checks that set-up".into(),
        );
        return;
    }
    let places = sandrail::os_sandbox::Places::here(project);
    let asked = sandrail::os_sandbox::asked_for(project, places.state.as_deref());
    for harness in sandrail::os_sandbox::registered_harnesses(project, places.home.as_deref()) {
        let report = sandrail::os_sandbox::report(harness, &places);
        let said = format!("{}: {}", harness.title(), report.said);
        if report.in_force {
            if harness == Harness::Claude
                && let Some(why) = sandrail::os_sandbox::prerequisites::check().said()
            {
                findings.error(
                    "sandbox",
                    format!("{said}; but it cannot run here, so Claude Code will not start: {why}"),
                    "install what it needs, then run `sandrail doctor` again".into(),
                );
            } else {
                findings.ok("sandbox", said);
            }
        } else if !report.offered {
            findings.warn(
                "sandbox",
                said,
                "managed mode puts sandrail out of the agent's reach instead (docs/managed.md)"
                    .into(),
            );
        } else if asked {
            findings.error(
                "sandbox",
                format!(
                    "{said}: an agent running as you can then rewrite the hook settings the next session starts from, sandrail's records and its compiled code"
                ),
                report.fix.unwrap_or_default(),
            );
        } else {
            findings.warn(
                "sandbox",
                format!(
                    "{said}, as the project chose ([protect] os_sandbox = false). {}",
                    super::init::WITHOUT_SANDBOX
                ),
                format!(
                    "to turn it on, remove os_sandbox = false, run `sandrail protect --harness {}` and `sandrail trust`",
                    harness.name()
                ),
            );
        }
    }
}

/// The config's deadlines against the harness's hook timeout: what can run on
/// one event must fit well within it, or the hook answers by `on_error` at its
/// own deadline.
fn deadlines(project: &Path, config: &Config, findings: &mut Findings) {
    let timeouts = sandrail::harness::timeouts::of_project(Some(project));
    let over = sandrail::deadline::over_budget(config, None, &timeouts);
    if over.is_empty() {
        findings.ok(
            "deadline",
            "what can run on each event fits within the harness's hook timeout".into(),
        );
    }
    for over in over {
        findings.warn(
            "deadline",
            format!("{over}: the guardrails still running at sandrail's deadline are answered by their on_error"),
            "lower the guardrails' timeout_ms, or subscribe fewer to that event".into(),
        );
    }
}
