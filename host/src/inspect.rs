//! The reviewer's view of a guardrail, for `sandrail inspect` and `sandrail audit`:
//! what a component is (hash, size, the contract it targets, every import and
//! export), what each import lets it reach inside sandrail, and what its entry in
//! the config in force grants it.

use serde::Serialize;

use crate::config::{Config, Guardrail, LockStatus, Source};
use crate::lock::Locked;
use crate::runtime::{self, LoadError, Runtime};

/// The contract's package, as import and export names spell it.
const CONTRACT: &str = "sandrail:guardrail";

/// What a component is.
#[derive(Debug, Serialize)]
pub struct Description {
    pub source: String,
    pub sha256: String,
    pub size: usize,
    /// The world it fits: `sandrail:guardrail/guardrail`,
    /// `…/configurable-guardrail` when it also exports `configure`, or
    /// `…/context-guardrail` for a context; `None`: it exports neither `evaluate`
    /// nor `context`, so it is no guardrail.
    pub world: Option<String>,
    /// The highest contract version it names (`0.1.2`).
    pub contract: Option<String>,
    pub imports: Vec<Import>,
    pub exports: Vec<Export>,
    /// Whether it links against the host; otherwise why not (naming the import).
    pub loads: Result<(), String>,
}

#[derive(Debug, Serialize)]
pub struct Import {
    pub name: String,
    /// The functions of an imported interface, or the kind of anything else.
    pub items: Vec<String>,
    /// What it reaches through this import, in sandrail.
    pub reaches: &'static str,
}

#[derive(Debug, Serialize)]
pub struct Export {
    pub name: String,
    pub items: Vec<String>,
}

/// Reads, compiles (or takes from the cache) and describes the component.
pub fn describe(runtime: &Runtime, source: &Source) -> Result<Description, LoadError> {
    let prepared = runtime::prepare(source, None)?;
    describe_prepared(runtime, source, &prepared)
}

/// [`describe`] for what a configured entry runs: its policy's kept copy when it
/// has one, which may no longer be what its source file holds.
pub fn describe_guardrail(
    runtime: &Runtime,
    guardrail: &Guardrail,
) -> Result<Description, LoadError> {
    let prepared = runtime::prepare_unpinned(guardrail)?;
    describe_prepared(runtime, &guardrail.source, &prepared)
}

fn describe_prepared(
    runtime: &Runtime,
    source: &Source,
    prepared: &runtime::Prepared,
) -> Result<Description, LoadError> {
    let shape = runtime.shape(prepared)?;
    let mut versions = Vec::new();
    let mut exports_evaluate = false;
    let mut exports_configure = false;
    let mut exports_context = false;
    for (name, _) in shape.imports.iter().chain(&shape.exports) {
        if let Some(version) = name
            .strip_prefix(CONTRACT)
            .and_then(|rest| rest.split_once('@'))
            .map(|(_, v)| v.to_owned())
        {
            versions.push(version);
        }
    }
    for (name, _) in &shape.exports {
        exports_evaluate |= name == "evaluate";
        exports_configure |= name.starts_with(&format!("{CONTRACT}/configure@"));
        exports_context |= name.starts_with(&format!("{CONTRACT}/context@"));
    }
    versions.sort_by_key(|v| {
        v.split('.')
            .map(|n| n.parse::<u64>().unwrap_or(0))
            .collect::<Vec<_>>()
    });
    let world = match (exports_evaluate, exports_configure, exports_context) {
        (true, true, _) => Some(format!("{CONTRACT}/configurable-guardrail")),
        (true, false, _) => Some(format!("{CONTRACT}/guardrail")),
        (false, _, true) => Some(format!("{CONTRACT}/context-guardrail")),
        _ => None,
    };
    Ok(Description {
        source: source.to_string(),
        sha256: prepared.sha256.clone(),
        size: prepared.bytes.len(),
        world,
        contract: versions.pop(),
        imports: shape
            .imports
            .into_iter()
            .map(|(name, items)| Import {
                reaches: reaches(&name),
                name,
                items,
            })
            .collect(),
        exports: shape
            .exports
            .into_iter()
            .map(|(name, items)| Export { name, items })
            .collect(),
        loads: shape.links,
    })
}

/// What an import reaches inside sandrail's sandbox.
pub fn reaches(import: &str) -> &'static str {
    let interface = import.split_once('@').map_or(import, |(i, _)| i);
    match interface {
        "sandrail:guardrail/types" => "type definitions only",
        "sandrail:guardrail/state" => {
            "its own keyspace in the session; read-only listings of the guardrails its entry requires"
        }
        "sandrail:guardrail/flags" => "the flags its entry grants (set, check, consume), no others",
        "sandrail:guardrail/data" => "the files its entry grants, read by the host; no others",
        "sandrail:guardrail/cycle" => {
            "read-only: the session's span since the read mark, and the states of the contexts its entry requires"
        }
        "sandrail:guardrail/escalation" => {
            "read-only: the counts, levels and overrides of its own rules in the session"
        }
        "sandrail:guardrail/log" => {
            "sandrail's stderr, prefixed with its name, within its log_kib per event"
        }
        "wasi:cli/stdout" | "wasi:cli/stderr" => {
            "sandrail's stderr, prefixed with its name, within its log_kib per event"
        }
        "wasi:cli/stdin" => "nothing: stdin is empty",
        "wasi:cli/environment" => "nothing: no environment variables, no arguments",
        "wasi:cli/exit" => "ending its own run (a failure to judge)",
        i if i.starts_with("wasi:cli/terminal") => "nothing: no terminal",
        i if i.starts_with("wasi:filesystem/") => "nothing: no directory is preopened",
        i if i.starts_with("wasi:sockets/") => "nothing: the network is denied",
        i if i.starts_with("wasi:clocks/") => "the time",
        i if i.starts_with("wasi:random/") => "random bytes",
        i if i.starts_with("wasi:io/") => "streams and polling of the above",
        _ => "not provided by sandrail: the component does not load",
    }
}

/// What a guardrail's entry in the config in force grants it.
#[derive(Debug, Serialize)]
pub struct Granted {
    pub name: String,
    pub source: String,
    pub enabled: bool,
    /// `gate` or `context`.
    pub kind: &'static str,
    pub events: Vec<&'static str>,
    pub matcher: String,
    /// Owners whose keyspaces it may list (`requires`).
    pub reads_owners: Vec<String>,
    pub flags: crate::store::FlagGrants,
    /// Files the host reads for it: (as written, where).
    pub data: Vec<(String, String)>,
    pub limits: serde_json::Value,
    pub on_error: &'static str,
    pub gate: crate::receipts::Gate,
    /// How its component stands against its pins.
    pub pin: String,
}

impl Granted {
    /// `actual`: the component's sha256 when it could be read.
    pub fn of(config: &Config, g: &Guardrail, actual: Option<&str>) -> Granted {
        Granted {
            name: g.name.clone(),
            source: g.source_text.clone(),
            enabled: g.enabled,
            kind: g.kind.name(),
            events: g.events.iter().map(|e| e.name()).collect(),
            matcher: g.matcher_text.clone().unwrap_or_else(|| "*".to_owned()),
            reads_owners: g.requires.clone(),
            flags: g.flags.clone(),
            data: g
                .data
                .iter()
                .map(|d| (d.written.clone(), d.path.display().to_string()))
                .collect(),
            limits: serde_json::json!({
                "timeout_ms": g.limits.timeout.as_millis() as u64,
                "memory_mib": g.limits.memory_bytes >> 20,
                "state_mib": g.limits.state_bytes >> 20,
                "log_kib": g.limits.log_bytes >> 10,
                "fuel": g.limits.fuel,
            }),
            on_error: g.on_error.name(),
            gate: config.gate_of(g),
            pin: pin_status(config, g, actual),
        }
    }
}

/// How a guardrail's component stands against its `sha256` and `sandrail.lock`.
pub fn pin_status(config: &Config, g: &Guardrail, actual: Option<&str>) -> String {
    let mut parts = Vec::new();
    let matches = |expected: &str| match actual {
        Some(actual) if actual == expected => "matches".to_owned(),
        Some(_) => format!("MISMATCH: pins {expected}; the component is not run"),
        None => format!("pins {expected}; the component cannot be read"),
    };
    if let Some(pin) = &g.sha256 {
        parts.push(format!("config sha256 {}", matches(pin)));
    }
    match (&config.lock, &g.locked) {
        (LockStatus::None, _) if matches!(config.origin, crate::config::Origin::Embedded) => {
            parts.push("bundled with the binary (the embedded default)".to_owned());
        }
        (LockStatus::None, _) => parts.push("no sandrail.lock".to_owned()),
        (_, Some(Locked::Sha256(pin))) => parts.push(format!("sandrail.lock {}", matches(pin))),
        (_, Some(Locked::Unusable(why))) => parts.push(format!("UNUSABLE LOCK: {why}")),
        (_, None) => parts.push("NOT PINNED: sandrail.lock has no entry".to_owned()),
    }
    parts.join("; ")
}
