//! `sandrail hook`: one event in, the harness's answer out.
//!
//! Whatever goes wrong, the harness gets a complete answer or nothing, and every
//! problem is explained on stderr. A payload is read leniently and judged; one that
//! truly cannot be read follows the config's `on_error`: proceed (exit 0), or block
//! with exit code 2 and the reason on stderr, which is how Claude Code takes a
//! refusal it has no JSON for. A config that cannot be used is replaced by the
//! embedded default rather than by nothing, and a config with no guardrails at all
//! says so on every event.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use crate::config::{Config, OnError};
use crate::deadline::{Deadline, Fallback};
use crate::engine::Engine;
use crate::evaluate::{self, Dirs};
use crate::event::EventKind;
use crate::locations::{self, Places};
use crate::policy;
use crate::protect;
use crate::protocol::{self, HookInput, PayloadError};
use crate::store::{SessionStore, StoreError, lifecycle};

pub mod dialect;
mod receipt;
mod settle;

use receipt::write_receipt;
use settle::{Decided, UnsavedEvent};
pub use settle::{Owed, Unsettled};

/// What `sandrail hook` does once an event is judged.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The answer to print on stdout, if there is anything to say.
    pub answer: Option<String>,
    /// Block without an answer, for this reason (already on stderr): a command
    /// hook exits 2, the way Claude Code takes a refusal it has no JSON for.
    pub block: Option<String>,
    /// The payload could not be read, and the config lets the event proceed:
    /// why (already on stderr).
    pub unreadable: Option<String>,
}

pub use sandrail_forward::Origin;

/// Reads one payload from `stdin` and judges it on `engine`, within the
/// deadline of a hook that `started` then ([`crate::deadline`]).
pub fn run(stdin: impl Read, origin: &Origin, engine: &Engine, started: Instant) -> Outcome {
    judge(HookInput::read(stdin), origin, engine, started)
}

/// Judges a payload already read, as [`run`] does: the event's state and
/// receipt are saved before it is answered, and a failure to save them is this
/// event's (`on_error` decides its answer).
pub fn judge(
    read: Result<HookInput, PayloadError>,
    origin: &Origin,
    engine: &Engine,
    started: Instant,
) -> Outcome {
    match decide(read, origin, engine, started, Owed::default()) {
        Decided::Done(outcome) => outcome,
        Decided::Unsaved(event) => event.save_then_answer(),
    }
}

/// Judges a payload as `sandrail serve` does, answering before the event's
/// state is committed and its receipt written: the caller hands the answer to
/// the harness, then [`Unsettled::settle`]s the event before the session's
/// next one is judged, so counts and the receipts' chain stay exact. What
/// settling owes the next event (a failure, an alert) comes in as `owed`.
pub fn judge_answering_first<'e>(
    read: Result<HookInput, PayloadError>,
    origin: &Origin,
    engine: &'e Engine,
    started: Instant,
    owed: Owed,
) -> (Outcome, Option<Unsettled<'e>>) {
    match decide(read, origin, engine, started, owed) {
        Decided::Done(outcome) => (outcome, None),
        Decided::Unsaved(event) => {
            let outcome = event.answer();
            (outcome, Some(Unsettled(event)))
        }
    }
}

/// Judges the event as far as its answer.
fn decide<'e>(
    read: Result<HookInput, PayloadError>,
    origin: &Origin,
    engine: &'e Engine,
    started: Instant,
    owed: Owed,
) -> Decided<'e> {
    let input = match read {
        Ok(input) => input,
        Err(e) if e.is_unjudged_event() => {
            if crate::debug_logging() {
                eprintln!("sandrail: {e}; nothing to do");
            }
            return Decided::Done(Outcome::default());
        }
        Err(e) => return Decided::Done(unreadable(&e.to_string(), origin, &engine.places)),
    };
    let mut input = input;
    for repair in &input.repairs {
        eprintln!("sandrail: {repair}; the event is judged");
    }
    let project = origin
        .project
        .clone()
        .or_else(|| input.cwd.as_ref().map(Into::into))
        .map(|p| locations::canonical(&p));
    let places = engine.places.for_event(project.as_deref());
    let state = places.state;
    let cache = places.cache;
    // The session's policy: what it started with, whatever the files say now.
    let in_force = policy::in_force(
        &engine.places.policy(),
        &crate::runtime::Prepares,
        state.as_deref(),
        project.as_deref(),
        &input.session_id,
        input.transcript_path.as_deref(),
        &|| crate::harness::timeouts::of_harness(project.as_deref(), harness_of(&input)),
    );
    let config = in_force.config;
    let deadline = Deadline::of(started, input.kind, &in_force.timeouts);
    if let Some(watchdog) = engine.watchdog() {
        watchdog.watch(
            input.kind,
            &in_force.timeouts,
            Fallback::under(&config, input.kind),
        );
    }
    // The session's transcript is the one its first event named: a payload naming
    // another (a forged event pointing at a file of its own) is read against the
    // session's own, so no fabricated history decides a turn or a Stop.
    if let Some(pinned) = &in_force.transcript
        && input.transcript_path.as_ref() != Some(pinned)
    {
        eprintln!(
            "sandrail: this event names the transcript {}, not its session's; the session's own ({pinned}) is read",
            input.transcript_path.as_deref().unwrap_or("(none)")
        );
        input.transcript_path = Some(pinned.clone());
    }
    for alert in &in_force.alerts {
        eprintln!("{alert}");
    }
    if config.guardrails.is_empty() {
        eprintln!(
            "sandrail: {} configures no guardrails: nothing is judged. Add [[guardrail]] entries, or remove the file to use the embedded default.",
            config.origin
        );
    }
    let dirs = Dirs {
        state,
        cache,
        project: project.clone(),
        log: places.log,
    };
    if let Some(state) = &dirs.state {
        keep_session(state, project.as_deref(), &input, &config);
    }
    // Places other than the bound ones are said once, at the session's start.
    let moved = places.moved.filter(|_| in_force.started);
    if let Some(moved) = &moved {
        eprintln!("{moved}");
    }
    let trail = Trail {
        policy: in_force.id,
        alerts: places
            .repairs
            .into_iter()
            .chain(moved)
            .chain(in_force.alerts)
            .collect(),
    };
    if input.kind == EventKind::ConfigChange {
        return Decided::Done(config_change(&input, &config, &dirs, trail, owed, engine));
    }
    if input.kind == EventKind::SessionStart
        && config.protect.enabled
        && let Some(state) = &dirs.state
    {
        protect::remember_registrations(state, project.as_deref());
    }
    // Copilot's `write_bash`: judged as the line the shell assembles.
    let (input, typed) = match dirs
        .state
        .as_deref()
        .and_then(|state| crate::harness::typed::join(&input, state))
    {
        Some((joined, pending)) => (joined, Some(pending)),
        None => (input, None),
    };
    let (mut decision, unsaved) = evaluate::evaluate(&input, &config, &dirs, engine, deadline);
    if let Some(pending) = &typed
        && decision.refusals.is_empty()
    {
        crate::harness::typed::keep(pending);
    }
    decision.alerts.splice(0..0, trail.alerts);
    owed.charge(&mut decision, &config);
    Decided::Unsaved(Box::new(UnsavedEvent {
        input,
        config,
        dirs,
        policy: trail.policy,
        decision,
        unsaved,
        engine,
    }))
}

/// The harness that sent the event: the translation at the edge names it in
/// the payload (`harness`); a payload naming none is Claude Code's.
fn harness_of(input: &HookInput) -> crate::harness::Harness {
    input
        .fields
        .get("harness")
        .and_then(|v| v.as_str())
        .and_then(|name| {
            crate::harness::Harness::ALL
                .into_iter()
                .find(|h| h.name() == name)
        })
        .unwrap_or_default()
}

/// A settings change (Claude Code's ConfigChange): refused when it would switch
/// sandrail's hooks off, unless self-protection is off.
fn config_change(
    input: &HookInput,
    config: &Config,
    dirs: &Dirs,
    trail: Trail,
    owed: Owed,
    engine: &Engine,
) -> Outcome {
    let state = dirs.state.as_deref();
    let mut decision = protocol::Decision {
        alerts: trail.alerts,
        ..protocol::Decision::default()
    };
    owed.charge(&mut decision, config);
    if !config.protect.enabled {
        return Outcome {
            answer: protocol::render(input.kind, &decision).map(|answer| answer.to_string()),
            ..Outcome::default()
        };
    }
    if let Some(reason) = protect::config_change_refusal(input, state, dirs.project.as_deref()) {
        decision.trace.host_refused = true;
        decision.refusals.push(crate::guest_text::attributed(
            evaluate::HOST_AUTHOR,
            &reason,
        ));
    }
    if let Err(why) = write_receipt(input, config, dirs, trail.policy, &mut decision, engine) {
        evaluate::host_failure(&mut decision, config, &why);
    }
    Outcome {
        answer: protocol::render(input.kind, &decision).map(|answer| answer.to_string()),
        ..Outcome::default()
    }
}

/// What the receipt must carry beyond the decision: the policy in force and what
/// the person was told about it.
struct Trail {
    policy: Option<String>,
    alerts: Vec<String>,
}

/// The session's life: marks it used, purges idle sessions when that is due,
/// lets a session that continues another take over its counters, and notes it as
/// its project's latest. All best effort: a state directory that cannot be used
/// is reported when a guardrail needs it.
fn keep_session(state: &Path, project: Option<&Path>, input: &HookInput, config: &Config) {
    let now = crate::clock::now();
    // A session resumed after its TTL starts clean, before anything judges it.
    if let Some(idle) = lifecycle::expire_if_idle(state, &input.session_id, config.session_ttl, now)
    {
        eprintln!(
            "sandrail: session {} returned after {} h unused (the TTL is {} h): its counters, levels, flags and pending blocks are forgotten",
            input.session_id,
            idle / 3600,
            config.session_ttl / 3600
        );
    }
    let _ = lifecycle::touch(state, &input.session_id, now);
    // The purge forgets every project's idle sessions, so no one config may
    // shorten it below the default: a config of the agent's (say, a first-seen
    // one in a directory of its own) would otherwise wipe others' counters.
    let ttl = config.session_ttl.max(crate::config::DEFAULT_SESSION_TTL);
    if let Ok(Some(purged)) = lifecycle::purge_if_due(state, ttl, now) {
        // The forgotten sessions' policy copies go with them, or the store grows
        // by every config ever written.
        policy::collect_garbage(state, now);
        if crate::debug_logging() {
            eprintln!("sandrail: forgot {} idle sessions", purged.sessions);
        }
    }
    let Some(project) = project else {
        return;
    };
    let source = input.fields.get("source").and_then(|v| v.as_str());
    let continues = input.kind == EventKind::SessionStart
        && config
            .inherit_on
            .iter()
            .any(|on| Some(on.source()) == source);
    if continues
        && let Some(previous) = lifecycle::last_session(state, project)
        && previous != input.session_id
    {
        match inherit(state, &previous, &input.session_id, config.lock_timeout) {
            Ok(rules) => eprintln!(
                "sandrail: session {} continues {previous} ({}): took over {rules} rule counters",
                input.session_id,
                source.unwrap_or_default()
            ),
            Err(e) => eprintln!(
                "sandrail: session {} could not take over the counters of {previous}: {e}",
                input.session_id
            ),
        }
    }
    let _ = lifecycle::note_session(state, project, &input.session_id);
}

/// Copies the counters and levels of session `from` into session `to`.
fn inherit(
    state: &Path,
    from: &str,
    to: &str,
    timeout: std::time::Duration,
) -> Result<usize, StoreError> {
    let rules = match SessionStore::open_existing(state, from, timeout)? {
        Some(store) => store.read()?.rules()?,
        None => return Ok(0),
    };
    let mut txn = SessionStore::open(state, to, timeout)?.begin()?;
    let taken = txn.inherit_rules(&rules)?;
    txn.commit()?;
    Ok(taken)
}

/// A payload that cannot be read: the config's `on_error` decides.
pub fn unreadable(why: &str, origin: &Origin, places: &Places) -> Outcome {
    let on_error = match places {
        // No session to hold a policy for: the stricter of the files on disk
        // and the project's accepted policy decides.
        Places::User => {
            let project = origin
                .project
                .clone()
                .or_else(|| origin.cwd.clone())
                .map(|p| locations::canonical(&p));
            unreadable_on_error(project.as_deref())
        }
        // Root's policy decides; one that cannot be read refuses.
        Places::System(system) => Config::load(&system.config())
            .map(|config| config.on_error)
            .unwrap_or(OnError::Deny),
    };
    match on_error {
        OnError::Allow => {
            eprintln!("sandrail: {why}; the event proceeds unjudged (on_error = \"allow\")");
            Outcome {
                unreadable: Some(why.to_owned()),
                ..Outcome::default()
            }
        }
        OnError::Deny => {
            eprintln!(
                "sandrail: {why}; the event is refused (on_error = \"deny\"). Ask the user to look at sandrail's stderr."
            );
            Outcome {
                block: Some(format!(
                    "sandrail: {why}; the event is refused (on_error = \"deny\")"
                )),
                ..Outcome::default()
            }
        }
    }
}

/// What a payload that cannot be read follows: `deny` if the config on disk or
/// the project's accepted policy says so, so that neither an edit nor a deleted
/// file makes an unreadable payload pass.
fn unreadable_on_error(project: Option<&Path>) -> OnError {
    let on_disk = policy::from_disk(project).on_error;
    let accepted = locations::state_dir()
        .zip(project)
        .and_then(|(state, project)| policy::accepted_config(&state, project))
        .map(|c| c.on_error);
    if on_disk == OnError::Deny || accepted == Some(OnError::Deny) {
        OnError::Deny
    } else {
        OnError::Allow
    }
}
