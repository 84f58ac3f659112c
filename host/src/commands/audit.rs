//! `sandrail audit`: every guardrail in force with its source, hash, pin status,
//! grants, limits, failure policy, gate, flags, owners, events, config and what
//! its imports reach; whether the policy on disk is held, and whether the OS
//! sandbox is on — what a security reviewer signs off on.
//!
//! The policy shown is the one a new session would run now
//! ([`super::policy_in_force`]), not the config on disk while that is held.

use std::io::Write;
use std::process::ExitCode;

use anyhow::anyhow;

use sandrail::config::LockStatus;
use sandrail::inspect::{self, Granted};
use sandrail::locations;
use sandrail::os_sandbox::Report;
use sandrail::policy::{Prospect, Standing, manifest::ConfigRef};
use sandrail::runtime::Runtime;

use super::inspect::print_granted;
use super::{held_notice, policy_in_force};

pub fn run(as_json: bool) -> anyhow::Result<ExitCode> {
    let prospect = policy_in_force();
    let config = &prospect.config;
    let policy = Policy::of(&prospect);
    let runtime = Runtime::looking(locations::cache_dir())
        .map_err(|e| anyhow!("cannot start the WebAssembly runtime: {e:#}"))?;
    let lock = match &config.lock {
        LockStatus::None => "none".to_owned(),
        LockStatus::Read(lock) => {
            format!("{} ({} entries)", lock.path.display(), lock.entries.len())
        }
        LockStatus::Unusable(why) => format!("UNUSABLE: {why}"),
    };
    let protect = if config.protect.enabled {
        let extra: Vec<String> = config
            .protect
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        if extra.is_empty() {
            "on".to_owned()
        } else {
            format!("on, also {}", extra.join(", "))
        }
    } else {
        "OFF: the agent can change sandrail's files and hook settings".to_owned()
    };
    let (managed, sandbox) = super::sandbox_reports();
    let sandbox_on = managed || (!sandbox.is_empty() && sandbox.iter().all(|r| r.in_force));
    let sandbox_switched_off = !config.protect.os_sandbox;
    let mut entries = Vec::new();
    for g in &config.guardrails {
        // What the entry runs: the accepted policy's copy while the one on disk is held.
        let description = inspect::describe_guardrail(&runtime, g);
        let actual = description.as_ref().ok().map(|d| d.sha256.clone());
        entries.push((g, Granted::of(config, g, actual.as_deref()), description));
    }
    let mut out = std::io::stdout().lock();
    if as_json {
        let guardrails: Vec<serde_json::Value> = entries
            .iter()
            .map(|(g, granted, description)| {
                let mut value = serde_json::to_value(granted).unwrap_or_default();
                value["config"] = g.config.clone();
                value["component"] = match description {
                    Ok(d) => serde_json::to_value(d).unwrap_or_default(),
                    Err(e) => serde_json::json!({ "error": e.to_string() }),
                };
                value
            })
            .collect();
        let json = serde_json::json!({
            "config": config.origin.to_string(),
            "policy": policy.json(),
            "lock": lock,
            "gate": config.gate,
            "on_error": config.on_error.name(),
            "protect": protect,
            "os_sandbox": sandbox,
            "os_sandbox_on": sandbox_on,
            "os_sandbox_switched_off": sandbox_switched_off,
            "managed": managed,
            "checkpoints": super::checkpoints::describe_json(&config.checkpoints),
            "guardrails": guardrails,
        });
        writeln!(out, "{json}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "config     {}", config.origin)?;
    writeln!(out, "policy     {}", policy.in_force_line())?;
    writeln!(out, "on disk    {}", policy.on_disk_line())?;
    writeln!(out, "lock       {lock}")?;
    writeln!(
        out,
        "settings   gate {}, on_error {} (for sandrail's own failures)",
        config.gate.name(),
        config.on_error.name()
    )?;
    writeln!(out, "protect    {protect}")?;
    writeln!(
        out,
        "sandbox    {}",
        sandbox_line(managed, &sandbox, sandbox_on, sandbox_switched_off)
    )?;
    for line in super::sandbox_lines(managed, &sandbox) {
        writeln!(out, "{line}")?;
    }
    writeln!(
        out,
        "checkpoints {}",
        super::checkpoints::describe(&config.checkpoints)
    )?;
    for (g, granted, description) in &entries {
        writeln!(out)?;
        print_granted(&mut out, granted)?;
        // As the guardrail receives it: the entry's `config` table, as JSON.
        writeln!(out, "    config     {}", g.config)?;
        match description {
            Ok(d) => {
                writeln!(out, "    sha256     {}", d.sha256)?;
                if let Err(why) = &d.loads {
                    writeln!(out, "    loads      NO: {why}")?;
                }
                // Grouped by what they reach, so the few that reach something stand out.
                let mut reach: Vec<(&str, Vec<&str>)> = Vec::new();
                for import in &d.imports {
                    let interface = import
                        .name
                        .split_once('@')
                        .map_or(import.name.as_str(), |(i, _)| i);
                    match reach.iter_mut().find(|(r, _)| *r == import.reaches) {
                        Some((_, names)) => names.push(interface),
                        None => reach.push((import.reaches, vec![interface])),
                    }
                }
                for (what, names) in reach {
                    writeln!(out, "    reaches    {what} ({})", names.join(", "))?;
                }
            }
            Err(e) => writeln!(out, "    component  CANNOT BE READ: {e}")?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether the OS sandbox is on for the project, in one line: on, off as the
/// policy in force chose (`[protect] os_sandbox = false`), or off where it
/// should be on.
fn sandbox_line(managed: bool, reports: &[Report], on: bool, switched_off: bool) -> String {
    if managed {
        return "not needed: managed mode (below)".to_owned();
    }
    if on {
        let chosen = if switched_off {
            " (the policy in force does not require it: [protect] os_sandbox = false)"
        } else {
            ""
        };
        return format!("on for every harness registered{chosen}");
    }
    let off: Vec<&str> = reports
        .iter()
        .filter(|r| !r.in_force)
        .map(|r| r.harness)
        .collect();
    if switched_off {
        format!(
            "OFF for {}, as the policy in force chose ([protect] os_sandbox = false): an agent running as you can rewrite the hook settings the next session starts from, sandrail's records and its compiled code",
            off.join(", ")
        )
    } else {
        format!(
            "OFF for {} (below): the project relies on it; `sandrail doctor` says how to turn it on",
            off.join(", ")
        )
    }
}

/// The policy in force and how the one on disk stands, for the reviewer.
struct Policy {
    id: String,
    origin: String,
    /// When and how it was accepted, when it is the project's accepted policy.
    accepted: Option<(String, String)>,
    /// How a new session takes it, when it is the policy on disk not yet accepted.
    taken: Option<&'static str>,
    held: bool,
    on_disk_id: String,
    on_disk_origin: String,
    /// When the config file on disk was last written.
    on_disk_modified: Option<String>,
    /// What the policy on disk changes that is held (or why it cannot run).
    changes: Vec<String>,
    notice: Option<String>,
}

impl Policy {
    fn of(prospect: &Prospect) -> Policy {
        let accepted = prospect
            .accepted
            .as_ref()
            .filter(|a| a.policy == prospect.policy)
            .map(|a| (a.accepted_at.clone(), a.how.clone()));
        let taken = match &prospect.standing {
            Standing::Taken { how } if accepted.is_none() => Some(*how),
            _ => None,
        };
        let changes = match &prospect.standing {
            Standing::Taken { .. } => Vec::new(),
            Standing::Held { changes } => changes.clone(),
            Standing::Default { why } => vec![why.clone()],
        };
        let on_disk_modified = match &prospect.on_disk.config {
            ConfigRef::File(file) => std::fs::metadata(&file.path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|m| sandrail::clock::rfc3339(m.as_secs())),
            ConfigRef::Embedded { .. } => None,
        };
        Policy {
            id: prospect.policy.id(),
            origin: prospect.policy.origin(),
            accepted,
            taken,
            held: prospect.standing.is_held(),
            on_disk_id: prospect.on_disk.id(),
            on_disk_origin: prospect.on_disk.origin(),
            on_disk_modified,
            changes,
            notice: held_notice(prospect),
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "config": self.origin,
            "accepted_at": self.accepted.as_ref().map(|(at, _)| at),
            "how": self.accepted.as_ref().map(|(_, how)| how.as_str()).or(self.taken),
            "held": self.held,
            "on_disk": {
                "id": self.on_disk_id,
                "config": self.on_disk_origin,
                "modified": self.on_disk_modified,
            },
            "changes": self.changes,
            "notice": self.notice,
        })
    }

    fn in_force_line(&self) -> String {
        match (&self.accepted, self.taken) {
            (Some((at, how)), _) => {
                format!("{} from {}, accepted {at} ({how})", self.id, self.origin)
            }
            (None, Some(how)) => format!(
                "{} from {}, not accepted yet: a new session takes it and accepts it ({how})",
                self.id, self.origin
            ),
            (None, None) => format!("{} from {}", self.id, self.origin),
        }
    }

    fn on_disk_line(&self) -> String {
        if !self.held {
            return "the policy in force (nothing held)".to_owned();
        }
        let modified = self
            .on_disk_modified
            .as_deref()
            .map_or_else(String::new, |at| format!(" (its config last written {at})"));
        format!(
            "HELD{modified}: {}",
            self.notice.as_deref().unwrap_or_default()
        )
    }
}
