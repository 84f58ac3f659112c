//! What a guardrail's imports reach: the per-store host state behind `state` and
//! `log`, and the resource limiter.

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::output::Output;
use super::wit::sandrail::guardrail::{cycle, data, escalation, flags, log, state, types};
use sandrail_store::{self as store, Keyspace, KeyspaceError};

/// Longest single log message forwarded.
pub(super) const LOG_MESSAGE_BYTES: usize = 4 * 1024;
/// Structural limits per component: generous for what a toolchain emits (a Rust
/// guest has a handful of core instances, one or two memories), far below
/// wasmtime's defaults of 10,000.
const MAX_INSTANCES: usize = 100;
const MAX_TABLES: usize = 100;
const MAX_MEMORIES: usize = 16;
const MAX_TABLE_ELEMENTS: usize = 100_000;

/// A store's data: who the guardrail is and what it may touch. Built fresh for every
/// run, so nothing leaks from one event or guardrail to the next.
pub struct HostState {
    keyspace: Keyspace,
    /// The files its entry grants: (the path as written, where it is).
    data: Vec<sandrail_policy::config::DataGrant>,
    wasi: WasiCtx,
    table: ResourceTable,
    memory_limit: usize,
    /// Bytes of linear memory across all of the component's memories.
    memory_total: usize,
    memory_exceeded: bool,
    output: Output,
}

impl HostState {
    pub fn new(
        guardrail: &str,
        keyspace: Keyspace,
        data: Vec<sandrail_policy::config::DataGrant>,
        wasi: WasiCtx,
        memory_limit: usize,
        log_budget: usize,
    ) -> Self {
        HostState {
            keyspace,
            data,
            wasi,
            table: ResourceTable::new(),
            memory_limit,
            memory_total: 0,
            memory_exceeded: false,
            output: Output::new(guardrail, log_budget),
        }
    }

    pub fn memory_exceeded(&self) -> bool {
        self.memory_exceeded
    }

    /// What the run leaves behind: the keyspace and what is left to print,
    /// taken out so the store itself need not be torn down (see `Sandbox::close`).
    pub fn take_parts(&mut self) -> (Keyspace, Output) {
        let keyspace = std::mem::replace(&mut self.keyspace, Keyspace::new("", Vec::new(), 0));
        let output = std::mem::replace(&mut self.output, Output::new("", 0));
        (keyspace, output)
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl ResourceLimiter for HostState {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Each memory's growth is counted against one budget for the component, so
        // several memories cannot add up to more than the limit.
        let total = self.memory_total.saturating_sub(current) + desired;
        if total > self.memory_limit {
            // Refuse the growth; the guest's allocator fails and it traps, and the
            // flag lets the host name the cause.
            self.memory_exceeded = true;
            return Ok(false);
        }
        self.memory_total = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

impl types::Host for HostState {}

fn to_wit(error: KeyspaceError) -> state::StateError {
    match error {
        KeyspaceError::KeyTooLong => state::StateError::KeyTooLong(store::MAX_KEY_BYTES as u32),
        KeyspaceError::ValueTooLarge => {
            state::StateError::ValueTooLarge(store::MAX_VALUE_BYTES as u32)
        }
        KeyspaceError::KeyspaceFull => state::StateError::KeyspaceFull(store::MAX_KEYS as u32),
        // The 0.1 contract has no case of its own for these; the text says which.
        e @ (KeyspaceError::OverBudget { .. } | KeyspaceError::ListTooLarge) => {
            state::StateError::Unavailable(e.to_string())
        }
        KeyspaceError::OwnerNotRequired(owner) => state::StateError::OwnerNotRequired(owner),
        KeyspaceError::Unavailable(why) => state::StateError::Unavailable(why),
    }
}

fn entries(list: Vec<store::Entry>) -> Vec<state::Entry> {
    list.into_iter()
        .map(|e| state::Entry {
            key: e.key,
            value: e.value,
        })
        .collect()
}

impl state::Host for HostState {
    fn get(&mut self, key: String) -> Result<Option<String>, state::StateError> {
        self.keyspace.get(&key).map_err(to_wit)
    }

    fn set(&mut self, key: String, value: String) -> Result<(), state::StateError> {
        self.keyspace.set(&key, &value).map_err(to_wit)
    }

    fn delete(&mut self, key: String) -> Result<bool, state::StateError> {
        self.keyspace.delete(&key).map_err(to_wit)
    }

    fn list(&mut self, prefix: String) -> Result<Vec<state::Entry>, state::StateError> {
        self.keyspace.list(&prefix).map(entries).map_err(to_wit)
    }

    fn list_owner(
        &mut self,
        owner: String,
        prefix: String,
    ) -> Result<Vec<state::Entry>, state::StateError> {
        self.keyspace
            .list_owner(&owner, &prefix)
            .map(entries)
            .map_err(to_wit)
    }
}

fn flag_error(error: store::FlagError) -> flags::FlagError {
    match error {
        store::FlagError::NotGranted(what) => flags::FlagError::NotGranted(what),
        store::FlagError::Unavailable(why) => flags::FlagError::Unavailable(why),
    }
}

impl flags::Host for HostState {
    fn set(&mut self, name: String) -> Result<(), flags::FlagError> {
        self.keyspace.flag_set(&name).map_err(flag_error)
    }

    fn check(&mut self, name: String) -> Result<bool, flags::FlagError> {
        self.keyspace.flag_check(&name).map_err(flag_error)
    }

    fn consume(&mut self, name: String) -> Result<bool, flags::FlagError> {
        self.keyspace.flag_consume(&name).map_err(flag_error)
    }
}

/// The largest file a data grant reads.
pub use sandrail_policy::MAX_DATA_BYTES;

impl cycle::Host for HostState {
    fn span(&mut self) -> Result<Vec<cycle::SpanEvent>, String> {
        Ok(self
            .keyspace
            .span()?
            .into_iter()
            .map(|event| cycle::SpanEvent {
                seq: event.seq,
                kind: sandrail_event::EventKind::from_name(&event.event)
                    .filter(|k| *k != sandrail_event::EventKind::ConfigChange)
                    .unwrap_or(sandrail_event::EventKind::PostToolUse)
                    .into(),
                tool_name: event.tool,
                turn: event.turn,
                facts: event.facts.to_string(),
                files: event
                    .files
                    .into_iter()
                    .map(|f| cycle::FileChange {
                        path: f.path,
                        sha256: f.sha256,
                        before: f.before,
                    })
                    .collect(),
            })
            .collect())
    }

    fn contexts(&mut self) -> Result<Vec<cycle::ContextState>, String> {
        Ok(self
            .keyspace
            .contexts()?
            .into_iter()
            .map(|c| cycle::ContextState {
                name: c.name,
                active: c.active,
                payload: c.payload,
                entered_turn: c.entered_turn,
                entered_this_turn: c.entered_this_turn,
                entered_this_cycle: c.entered_this_cycle,
            })
            .collect())
    }
}

impl escalation::Host for HostState {
    fn rules(&mut self) -> Result<Vec<escalation::RuleStanding>, String> {
        let (rules, escalates) = self.keyspace.standing()?;
        Ok(rules
            .into_iter()
            .map(|(rule, state)| escalation::RuleStanding {
                rule,
                count: state.counter,
                level: escalates.then(|| level_of(state.level)),
                overrides: state.overrides,
            })
            .collect())
    }
}

fn level_of(level: sandrail_store::escalation::Level) -> escalation::Level {
    use sandrail_store::escalation::Level as L;
    match level {
        L::Silent => escalation::Level::Silent,
        L::Nudge => escalation::Level::Nudge,
        L::Warning => escalation::Level::Warning,
        L::SoftBlock => escalation::Level::SoftBlock,
        L::HardBlock => escalation::Level::HardBlock,
    }
}

impl data::Host for HostState {
    fn read(&mut self, path: String) -> Result<String, data::DataError> {
        let Some(grant) = self.data.iter().find(|g| g.written == path) else {
            return Err(data::DataError::NotGranted(path));
        };
        // What the session's policy holds, when a snapshot is in force.
        let bytes = match &grant.frozen {
            Some(frozen) => frozen.read(MAX_DATA_BYTES).map_err(|e| {
                data::DataError::Unreadable(format!("{}: {e}", grant.path.display()))
            })?,
            None => sandrail_files::read_regular(&grant.path, MAX_DATA_BYTES)
                .map_err(|e| data::DataError::Unreadable(e.to_string()))?,
        };
        String::from_utf8(bytes).map_err(|e| {
            data::DataError::Unreadable(format!(
                "{} is not UTF-8 (invalid byte at offset {})",
                grant.path.display(),
                e.utf8_error().valid_up_to()
            ))
        })
    }
}

impl log::Host for HostState {
    fn log(&mut self, level: log::Level, message: String) {
        if level == log::Level::Debug && !sandrail_event::debug_logging() {
            return;
        }
        let level = match level {
            log::Level::Debug => "debug",
            log::Level::Info => "info",
            log::Level::Warn => "warn",
            log::Level::Error => "error",
        };
        let kept = truncate_bytes(&message, LOG_MESSAGE_BYTES);
        if kept.len() < message.len() {
            self.output.cut(message.len() - kept.len());
        }
        self.output.print(level, kept);
    }
}

/// The longest prefix of `text` within `max` bytes that ends on a char boundary.
pub fn truncate_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
