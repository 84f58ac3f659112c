//! Facts the host derives once per event and hands to every guardrail, so that no
//! guardrail re-derives them (and all of them agree). Seven namespaces, each a
//! top-level key of the document:
//!
//! - `tool`: this call, flattened out of the tool input, with what the host worked
//!   out about it (reads, writes, secrets, egress, destructive commands), through
//!   the shell analysis for command tools ([`tool`]);
//! - `session`: what the session did before this call ([`SessionFacts`]);
//! - `case`: the case folder this call touches, and its markers ([`case`]);
//! - `platform`: the snapshot the payload's author supplied;
//! - `env`: where and as whom the call runs;
//! - `mandate`: the mandate file's `limits`;
//! - `turn`: the turn the event belongs to (`count`, `uuid`, `id`), from the
//!   transcript ([`crate::transcript`]); absent when it cannot be established.
//!
//! A fact the host cannot establish is absent, never defaulted, so a rule that
//! reads it fails its check instead of passing by accident. `session` and `case`
//! cost a state write per tool call; the host keeps them only while a configured
//! guardrail declares it reads them ([`Costly`]).
//!
//! The facts layer: it sits on the shell analysis, the event and the file
//! readers, and imports nothing of the store, the policy or the runtime; what
//! the session did before comes in as [`SessionFacts`] its caller read.

pub mod case;
mod contents;
mod destructive;
pub mod mandate;
pub mod packs;
pub mod patterns;
pub mod places;
mod read_only;
pub mod schema;
pub mod system_programs;
mod tool;
pub mod transcript;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use destructive::is_critical;
pub use patterns::Patterns;
pub use tool::{ChangedPath, Changes, absolute};

use sandrail_event::payload::HookInput;

use crate::mandate::Mandate;

/// Namespaces whose upkeep costs a state write per tool call, kept only while a
/// configured guardrail declares it reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Costly {
    Session,
    Case,
}

impl Costly {
    pub fn name(self) -> &'static str {
        match self {
            Costly::Session => "session",
            Costly::Case => "case",
        }
    }

    pub fn from_name(name: &str) -> Option<Costly> {
        match name {
            "session" => Some(Costly::Session),
            "case" => Some(Costly::Case),
            _ => None,
        }
    }
}

/// The session counters, in the order the document lists them.
pub const COUNTERS: &[&str] = &[
    "tool_calls",
    "files_read",
    "files_written",
    "secrets_read",
    "secrets_written",
    "commands_run",
    "destructive_attempts",
    "egress_calls",
    "subagents_spawned",
    "case_files_read",
    "payments_attempted",
    "refused_calls",
];

/// What the host keeps about a session for the `session` and `case` facts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct SessionFacts {
    pub counters: BTreeMap<String, u64>,
    /// The case folder most recently touched (its id), for calls without a path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_case: Option<String>,
}

impl SessionFacts {
    /// The `session` namespace: every counter, zero when never advanced.
    pub fn namespace(&self) -> Value {
        let counters: Map<String, Value> = COUNTERS
            .iter()
            .map(|name| {
                let n = self.counters.get(*name).copied().unwrap_or(0);
                ((*name).to_owned(), json!(n))
            })
            .collect();
        Value::Object(counters)
    }

    /// Advances the counters for a call. `refused`: the call was stopped, so it
    /// never happened (seed 001: "a call that was stopped does not advance the
    /// counters") and only `refused_calls` moves.
    pub fn advance(&mut self, tool: &Map<String, Value>, case_touched: bool, refused: bool) {
        let fact = |name: &str| tool.get(name).and_then(Value::as_bool) == Some(true);
        let mut bump = |name: &str, when: bool| {
            if when {
                *self.counters.entry(name.to_owned()).or_default() += 1;
            }
        };
        if refused {
            bump("refused_calls", true);
            return;
        }
        bump("destructive_attempts", fact("is_destructive"));
        bump("tool_calls", true);
        bump("files_read", fact("is_read"));
        bump("files_written", fact("is_write"));
        bump("secrets_read", fact("touches_secret") && fact("is_read"));
        bump(
            "secrets_written",
            fact("touches_secret") && fact("is_write"),
        );
        bump("commands_run", fact("is_command"));
        bump("egress_calls", fact("is_egress"));
        bump("subagents_spawned", fact("is_agent"));
        bump("case_files_read", case_touched && fact("is_read"));
        bump("payments_attempted", fact("is_payment"));
    }
}

/// The facts document of one event, before the costly namespaces are added.
#[derive(Debug, Clone)]
pub struct Facts {
    pub document: Map<String, Value>,
    /// What the call would change, for self-protection (not part of the document).
    pub changes: Changes,
}

impl Facts {
    /// The `tool` namespace, when the event is about a tool.
    pub fn tool(&self) -> Option<&Map<String, Value>> {
        self.document.get("tool").and_then(Value::as_object)
    }

    /// The call's absolute path, if it has one.
    pub fn path_abs(&self) -> Option<&str> {
        self.tool()?.get("path_abs")?.as_str()
    }

    /// Adds the `turn` namespace: the turn the event belongs to.
    pub fn set_turn(&mut self, turn: &crate::transcript::Turn) {
        self.document.insert(
            "turn".into(),
            json!({"count": turn.count, "uuid": turn.uuid, "id": turn.id()}),
        );
    }

    pub fn set(&mut self, namespace: Costly, value: Value) {
        self.document.insert(namespace.name().to_owned(), value);
    }

    /// The case folder this call's own path lies in.
    pub fn case_of_this_call(&self, mandate: Option<&Mandate>) -> Option<String> {
        let root = mandate?.case_root.as_ref()?;
        case::resolve(std::path::Path::new(self.path_abs()?), root)
    }

    /// Adds the kept namespaces from what the session's state holds.
    pub fn add_kept(
        &mut self,
        kept: &SessionFacts,
        mandate: Option<&Mandate>,
        session: bool,
        case: bool,
    ) {
        if session {
            self.set(Costly::Session, kept.namespace());
        }
        if case {
            let this_call = self.case_of_this_call(mandate);
            let id = this_call.clone().or_else(|| kept.last_case.clone());
            self.set(
                Costly::Case,
                case::namespace(mandate, id.as_deref(), this_call.is_some()),
            );
        }
    }

    pub fn to_json(&self) -> String {
        Value::Object(self.document.clone()).to_string()
    }
}

/// Derives the facts that need no state: `tool`, `env`, `platform`, `mandate`.
/// `project` is where the call's deletions are judged from (see [`places`]).
pub fn derive(
    input: &HookInput,
    patterns: &Patterns,
    mandate: Option<&Mandate>,
    project: Option<&std::path::Path>,
) -> Facts {
    let mut document = Map::new();
    let mut changes = Changes::default();
    if let Some((tool, changed)) = tool::derive(input, patterns, project) {
        document.insert("tool".into(), Value::Object(tool));
        changes = changed;
    }
    document.insert("env".into(), env(input, mandate));
    document.insert("platform".into(), platform(input));
    if let Some(mandate) = mandate {
        document.insert("mandate".into(), Value::Object(mandate.limits.clone()));
    }
    Facts { document, changes }
}

/// Where and as whom the call runs, as the harness reported it.
fn env(input: &HookInput, mandate: Option<&Mandate>) -> Value {
    let mut env = Map::new();
    env.insert("session_id".into(), json!(input.session_id));
    for field in ["cwd", "permission_mode", "agent_id", "agent_type"] {
        if let Some(value) = input.fields.get(field).and_then(Value::as_str) {
            env.insert(field.into(), json!(value));
        }
    }
    if let Some(mode) = input.fields.get("permission_mode").and_then(Value::as_str) {
        // Modes that run without asking cannot put a question to a person.
        let can_ask = !matches!(mode, "bypassPermissions" | "dontAsk" | "auto");
        env.insert("can_ask".into(), json!(can_ask));
    }
    if let Some(mandate) = mandate {
        if let Some(id) = &mandate.id {
            env.insert("mandate_id".into(), json!(id));
        }
        if let Some(mode) = &mandate.mode {
            env.insert("mode".into(), json!(mode));
        }
    }
    Value::Object(env)
}

/// The platform's snapshot from the payload's top-level key, plus `present`. Only
/// the payload's author writes top-level keys, so the agent cannot supply or
/// shadow it (the tool input is one member, read only into `tool`).
fn platform(input: &HookInput) -> Value {
    let snapshot = input
        .platform
        .as_deref()
        .and_then(|raw| serde_json::from_str::<Value>(raw).ok());
    match snapshot {
        Some(Value::Object(mut fields)) => {
            fields.insert("present".into(), json!(true));
            Value::Object(fields)
        }
        other => {
            if other.is_some() {
                eprintln!(
                    "sandrail: `{}` in the payload is not a JSON object; platform.present is false",
                    sandrail_event::payload::PLATFORM_KEY
                );
            }
            json!({ "present": false })
        }
    }
}

/// Every command line a tool call runs: the shell analysis applied to a Bash
/// command, for callers outside the facts (e.g. `sandrail facts`' tests).
pub fn destructive_reason(command_line: &str, patterns: &Patterns) -> Option<String> {
    destructive::find(command_line, patterns).map(|r| r.into_owned())
}
