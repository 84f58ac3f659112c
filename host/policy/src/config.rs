//! `sandrail.toml`: which guardrails run, on what, with which settings.
//!
//! Found through `SANDRAIL_CONFIG`, else by walking up from the project directory;
//! without one the embedded default (`default.toml`, naming the bundled guardrails)
//! is in force. Unknown keys are errors, so a typo never silently disables a rule.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;

use sandrail_event::EventKind;

/// The file name looked for in the project.
pub const CONFIG_FILE: &str = "sandrail.toml";
/// The configuration in force when a project has none.
pub const EMBEDDED_DEFAULT: &str = include_str!("default.toml");

/// How long to wait for another process's hold on the state database.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(2);
const DEFAULT_TIMEOUT_MS: u64 = 100;
const DEFAULT_MEMORY_MIB: u64 = 64;
const MAX_NAME_LEN: usize = 64;
const DEFAULT_OVERRIDE_WINDOW_SECONDS: u64 = 60;
const DEFAULT_SESSION_TTL_HOURS: u64 = 24;
/// The default session TTL, in seconds: also the shortest the hourly purge of
/// every project's idle sessions uses, whatever one config says.
pub const DEFAULT_SESSION_TTL: u64 = DEFAULT_SESSION_TTL_HOURS * 3600;
/// The one name no guardrail may have.
const RESERVED_NAME: &str = "sandrail";
/// The largest config file read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config: {0}")]
    Read(#[from] sandrail_files::FileError),
    #[error("SANDRAIL_CONFIG names {0}, which does not exist")]
    MissingExplicit(PathBuf),
    #[error("invalid config {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("invalid config {origin}: guardrail '{guardrail}': {message}")]
    Guardrail {
        origin: String,
        guardrail: String,
        message: String,
    },
}

/// How a config's mandate file is read: from disk, or from a session's snapshot.
pub type ReadMandate<'a> = dyn FnMut(&Path) -> Result<sandrail_facts::mandate::Mandate, sandrail_facts::mandate::MandateError>
    + 'a;

/// Where a project's configuration is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    File(PathBuf),
    Embedded,
}

/// Where the configuration in force came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Embedded,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Embedded => f.write_str("(embedded default)"),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    settings: RawSettings,
    #[serde(default, rename = "guardrail")]
    guardrails: Vec<RawGuardrail>,
    /// Additions to the fact layer's pattern lists.
    #[serde(default)]
    facts: sandrail_facts::patterns::RawPatterns,
    #[serde(default)]
    protect: RawProtect,
    #[serde(default)]
    receipts: RawReceipts,
    #[serde(default)]
    checkpoints: RawCheckpoints,
}

/// `[checkpoints]`: the project kept before each call that can write.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheckpoints {
    #[serde(default = "yes")]
    enabled: bool,
    max_file_mib: Option<u64>,
    #[serde(default)]
    ignore: Vec<String>,
    keep_last: Option<usize>,
    keep_days: Option<u64>,
    timeout_ms: Option<u64>,
}

impl Default for RawCheckpoints {
    fn default() -> Self {
        RawCheckpoints {
            enabled: true,
            max_file_mib: None,
            ignore: Vec::new(),
            keep_last: None,
            keep_days: None,
            timeout_ms: None,
        }
    }
}

/// How long a checkpoint may take before a call by default: the first one
/// of a large project hashes every file; later ones, only what changed.
pub const DEFAULT_CHECKPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// What `[checkpoints]` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoints {
    /// A checkpoint before each call that can write (on by default).
    pub enabled: bool,
    /// What a checkpoint holds beyond git's rules: the cap, more patterns.
    pub rules: sandrail_checkpoint::Rules,
    /// How long checkpoints are kept.
    pub retention: sandrail_checkpoint::Retention,
    /// How long one may take before a call proceeds without it.
    pub timeout: Duration,
}

impl Default for Checkpoints {
    fn default() -> Self {
        Checkpoints {
            enabled: true,
            rules: sandrail_checkpoint::Rules::default(),
            retention: sandrail_checkpoint::Retention::default(),
            timeout: DEFAULT_CHECKPOINT_TIMEOUT,
        }
    }
}

impl RawCheckpoints {
    fn resolve(self) -> Result<Checkpoints, String> {
        let defaults = Checkpoints::default();
        let max_file_mib = self
            .max_file_mib
            .unwrap_or(defaults.rules.max_file_bytes >> 20);
        if max_file_mib == 0 {
            return Err("checkpoints.max_file_mib must be at least 1".into());
        }
        let rules = sandrail_checkpoint::Rules {
            max_file_bytes: max_file_mib.saturating_mul(1 << 20),
            ignore: self.ignore,
            exclude: Vec::new(),
        };
        rules.check().map_err(|e| e.to_string())?;
        let keep_last = self.keep_last.unwrap_or(defaults.retention.keep_last);
        if keep_last == 0 {
            return Err("checkpoints.keep_last must be at least 1: the checkpoint before the latest call is what `sandrail undo` restores".into());
        }
        let keep_for = self.keep_days.map_or(defaults.retention.keep_for, |days| {
            Duration::from_secs(days.saturating_mul(86_400))
        });
        let timeout = self
            .timeout_ms
            .map_or(defaults.timeout, Duration::from_millis);
        if timeout.is_zero() {
            return Err("checkpoints.timeout_ms must be at least 1".into());
        }
        Ok(Checkpoints {
            enabled: self.enabled,
            rules,
            retention: sandrail_checkpoint::Retention {
                keep_last,
                keep_for,
            },
            timeout,
        })
    }
}

/// `[receipts]`: where receipts go besides their file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReceipts {
    /// Each receipt also to the system log, out of the agent's reach.
    #[serde(default = "yes")]
    syslog: bool,
    /// Each receipt also to an OpenTelemetry collector (`sandrail serve` only).
    #[serde(default)]
    otlp: Option<String>,
}

impl Default for RawReceipts {
    fn default() -> Self {
        RawReceipts {
            syslog: true,
            otlp: None,
        }
    }
}

/// `[protect]`: the host's self-protection.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProtect {
    #[serde(default = "yes")]
    enabled: bool,
    /// More paths the agent may not change (relative to the config; `~` is home).
    #[serde(default)]
    paths: Vec<String>,
    /// Whether the project relies on the harness's OS sandbox (`sandrail init`
    /// turns it on; `doctor` says so where it is off).
    #[serde(default = "yes")]
    os_sandbox: bool,
}

impl Default for RawProtect {
    fn default() -> Self {
        RawProtect {
            enabled: true,
            paths: Vec::new(),
            os_sandbox: true,
        }
    }
}

fn yes() -> bool {
    true
}

/// What self-protection guards beyond its built-in list (`sandrail::protect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protect {
    pub enabled: bool,
    /// Extra protected paths, absolute.
    pub paths: Vec<PathBuf>,
    /// The project relies on the harness's OS sandbox: off only where a person
    /// chose to go without (`sandrail init --no-sandbox`).
    pub os_sandbox: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    lock_timeout_ms: Option<u64>,
    on_error: Option<OnError>,
    override_window_seconds: Option<u64>,
    session_ttl_hours: Option<u64>,
    #[serde(default)]
    inherit_on: Vec<InheritOn>,
    mandate: Option<String>,
    gate: Option<crate::receipts::Gate>,
    max_refused_stops: Option<u32>,
}

/// SessionStart sources after which a new session takes over the counters and
/// levels of the project's previous session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InheritOn {
    Compact,
    Clear,
}

impl InheritOn {
    pub fn source(self) -> &'static str {
        match self {
            InheritOn::Compact => "compact",
            InheritOn::Clear => "clear",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuardrail {
    name: String,
    source: String,
    sha256: Option<String>,
    events: Vec<String>,
    matcher: Option<String>,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default)]
    config: toml::Table,
    #[serde(default)]
    limits: RawLimits,
    enforcement: Option<sandrail_store::escalation::RawEnforcement>,
    enabled: Option<bool>,
    #[serde(default)]
    flags: sandrail_store::FlagGrants,
    #[serde(default)]
    data: Vec<String>,
    #[serde(default)]
    facts: Vec<String>,
    on_error: Option<OnError>,
    gate: Option<crate::receipts::Gate>,
    #[serde(default)]
    kind: Kind,
}

/// What a guardrail is: a gate judges events and may refuse them; a context
/// records a mode of the session and never refuses (only its `leave` may hold a
/// Stop).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    #[default]
    Gate,
    Context,
}

impl Kind {
    /// As the config writes it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Gate => "gate",
            Kind::Context => "context",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    timeout_ms: Option<u64>,
    memory_mib: Option<u64>,
    state_mib: Option<u64>,
    fuel: Option<u64>,
    log_kib: Option<u64>,
}

/// What sandrail does when it fails itself (the payload cannot be read, the state
/// cannot be saved): let the event proceed, or refuse it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Fail open: say why on stderr; the event proceeds as decided.
    #[default]
    Allow,
    /// Fail closed: refuse the event, giving the cause.
    Deny,
}

impl OnError {
    /// As the config writes it.
    pub fn name(self) -> &'static str {
        match self {
            OnError::Allow => "allow",
            OnError::Deny => "deny",
        }
    }
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub origin: Origin,
    pub lock_timeout: Duration,
    pub on_error: OnError,
    /// How long after a soft_block the same call again is the user's override.
    pub override_window: u64,
    /// How long a session may stay unused before it is forgotten, in seconds.
    pub session_ttl: u64,
    pub inherit_on: Vec<InheritOn>,
    pub guardrails: Vec<Guardrail>,
    /// The pattern lists the facts are derived from, with the config's additions.
    pub patterns: sandrail_facts::Patterns,
    /// The mandate `[settings] mandate` names.
    pub mandate: Option<sandrail_facts::mandate::Mandate>,
    pub protect: Protect,
    /// Whether refusals stand (`enforce`) or are only recorded (`observe`), for
    /// every guardrail that does not set its own.
    pub gate: crate::receipts::Gate,
    /// The config file's `sandrail.lock`, as it stands.
    pub lock: LockStatus,
    /// Stops refused in a row within one turn after which the host lets the next
    /// one through (Claude Code's own cap is 8).
    pub max_refused_stops: u32,
    /// Whether each receipt also goes to the system log (`[receipts] syslog`).
    pub receipts_to_syslog: bool,
    /// The OpenTelemetry collector `sandrail serve` sends each receipt to
    /// (`[receipts] otlp`).
    pub receipts_otlp: Option<crate::receipts::otlp::Endpoint>,
    /// The project kept before each call that can write (`[checkpoints]`).
    pub checkpoints: Checkpoints,
}

/// The default of `[settings] max_refused_stops`.
pub const DEFAULT_MAX_REFUSED_STOPS: u32 = 8;

/// Whether the config in force has a lock, and whether it could be read.
#[derive(Debug, Clone)]
pub enum LockStatus {
    /// The embedded default (its builtins are part of the binary), or a config
    /// file with no `sandrail.lock` beside it.
    None,
    Read(crate::lock::Lock),
    /// There is one, but it cannot be read: no component is vouched for.
    Unusable(String),
}

/// Where a guardrail's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Compiled into the sandrail binary.
    Builtin(String),
    /// A component file; relative paths are resolved against the config's directory.
    File(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Builtin(name) => write!(f, "builtin:{name}"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Per-guardrail resource limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub memory_bytes: usize,
    /// The byte budget of the guardrail's keyspace in each session.
    pub state_bytes: u64,
    /// Fuel per event (about one unit per wasm instruction), for a budget that
    /// does not depend on the machine's speed; `None`: only the deadline.
    pub fuel: Option<u64>,
    /// What its log calls, stdout and stderr may print per event.
    pub log_bytes: usize,
}

/// The default budget of a guardrail's printed output per event.
pub const DEFAULT_LOG_KIB: u64 = 64;

impl Limits {
    /// The names of the limits as the config writes them, for what reports them.
    pub const TIMEOUT: &'static str = "timeout_ms";
    pub const MEMORY: &'static str = "memory_mib";
    pub const STATE: &'static str = "state_mib";
    pub const FUEL: &'static str = "fuel";
    pub const LOG: &'static str = "log_kib";
}

/// Which tools a guardrail wants to see, in Claude Code's matcher syntax.
#[derive(Debug, Clone)]
pub enum ToolMatcher {
    Any,
    Names(BTreeSet<String>),
    Pattern(Regex),
}

impl ToolMatcher {
    /// Claude Code's rules: `*`, empty or missing matches everything; letters, digits,
    /// `_` and `|` only is a list of exact names; anything else is an unanchored regex.
    pub fn parse(text: Option<&str>) -> Result<Self, regex::Error> {
        let text = match text.map(str::trim) {
            None | Some("") | Some("*") => return Ok(ToolMatcher::Any),
            Some(t) => t,
        };
        if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            let names = text
                .split('|')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            return Ok(ToolMatcher::Names(names));
        }
        Regex::new(text).map(ToolMatcher::Pattern)
    }

    pub fn matches(&self, tool: &str) -> bool {
        match self {
            ToolMatcher::Any => true,
            ToolMatcher::Names(names) => names.contains(tool),
            ToolMatcher::Pattern(re) => re.is_match(tool),
        }
    }
}

/// One configured guardrail.
#[derive(Debug, Clone)]
pub struct Guardrail {
    /// Also the name of its keyspace.
    pub name: String,
    pub source: Source,
    /// The source as the config wrote it (how `sandrail.lock` names it).
    pub source_text: String,
    /// Expected sha256 of the component, lowercase hex.
    pub sha256: Option<String>,
    /// What `sandrail.lock` says about it; `None`: no lock, or no entry.
    pub locked: Option<crate::lock::Locked>,
    pub events: Vec<EventKind>,
    /// The matcher as written, for display.
    pub matcher_text: Option<String>,
    pub matcher: ToolMatcher,
    pub requires: Vec<String>,
    /// The `config` table, handed to the guardrail as JSON.
    pub config: serde_json::Value,
    pub limits: Limits,
    /// How this guardrail's violations escalate; `None`: every violation refuses.
    pub enforcement: Option<sandrail_store::escalation::Enforcement>,
    /// `enabled = false` keeps the entry but runs it on nothing.
    pub enabled: bool,
    /// The flags it may set, check and consume.
    pub flags: sandrail_store::FlagGrants,
    /// Files the host reads for it.
    pub data: Vec<DataGrant>,
    /// The fact namespaces it reads whose upkeep costs state (`facts = ["session"]`).
    pub reads_facts: Vec<sandrail_facts::Costly>,
    /// When it cannot judge (missing, unloadable, crashed, out of time or memory,
    /// malformed verdict): let the event proceed, or refuse it.
    pub on_error: OnError,
    /// Its own gate mode; `None`: the config's.
    pub gate: Option<crate::receipts::Gate>,
    pub kind: Kind,
    /// The session's copy of its component, when a policy snapshot is in force:
    /// what runs, whatever has become of the file since.
    pub frozen: Option<crate::policy::Frozen>,
}

/// A file the host reads for a guardrail when the guardrail asks for it.
#[derive(Debug, Clone)]
pub struct DataGrant {
    /// The path as the config writes it, which is how the guardrail names it.
    pub written: String,
    /// Where it is.
    pub path: PathBuf,
    /// The session's copy of it, when a policy snapshot is in force.
    pub frozen: Option<crate::policy::Frozen>,
}

impl Guardrail {
    pub fn is_context(&self) -> bool {
        self.kind == Kind::Context
    }

    /// Whether this guardrail subscribes to an event about `tool` (None for events
    /// that are not about a tool, where the matcher does not apply).
    pub fn wants(&self, kind: EventKind, tool: Option<&str>) -> bool {
        if !self.enabled || !self.events.contains(&kind) {
            return false;
        }
        match (kind.is_tool_event(), tool) {
            (true, Some(tool)) => self.matcher.matches(tool),
            (true, None) => matches!(self.matcher, ToolMatcher::Any),
            (false, _) => true,
        }
    }
}

impl Config {
    /// Finds and loads the configuration on disk for a project directory.
    pub fn discover(project_dir: Option<&Path>) -> Result<Config, ConfigError> {
        match Config::locate(project_dir)? {
            Located::File(path) => Config::load(&path),
            Located::Embedded => Config::embedded(),
        }
    }

    /// Where the configuration for a project directory is: `SANDRAIL_CONFIG`, else
    /// the nearest `sandrail.toml` walking up, else the embedded default.
    pub fn locate(project_dir: Option<&Path>) -> Result<Located, ConfigError> {
        if let Some(explicit) = std::env::var_os("SANDRAIL_CONFIG").filter(|v| !v.is_empty()) {
            let path = PathBuf::from(explicit);
            if !path.exists() {
                return Err(ConfigError::MissingExplicit(path));
            }
            return Ok(Located::File(path));
        }
        if let Some(dir) = project_dir {
            for ancestor in dir.ancestors() {
                let candidate = ancestor.join(CONFIG_FILE);
                // Anything by that name counts, so that a FIFO or a dangling link
                // there is reported rather than skipped for a config further up.
                if candidate.symlink_metadata().is_ok() {
                    return Ok(Located::File(candidate));
                }
            }
        }
        Ok(Located::Embedded)
    }

    pub fn embedded() -> Result<Config, ConfigError> {
        Config::parse(EMBEDDED_DEFAULT, Origin::Embedded, None)
    }

    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let bytes = sandrail_files::read_regular(path, MAX_CONFIG_BYTES)?;
        let mut config = Config::from_bytes(&bytes, path, &mut |mandate: &Path| {
            sandrail_facts::mandate::Mandate::load(mandate)
        })?;
        config.apply_lock(crate::lock::read(&crate::lock::beside(path)));
        Ok(config)
    }

    /// Parses the bytes of the config file at `path`, reading the mandate it
    /// names with `mandate` (from disk, or from a session's snapshot).
    pub fn from_bytes(
        bytes: &[u8],
        path: &Path,
        read_mandate: &mut ReadMandate,
    ) -> Result<Config, ConfigError> {
        let text = std::str::from_utf8(bytes).map_err(|e| ConfigError::Parse {
            origin: path.display().to_string(),
            message: format!(
                "not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
        })?;
        let base = path.parent().map(Path::to_path_buf);
        Config::parse_with(
            text,
            Origin::File(path.to_path_buf()),
            base.as_deref(),
            read_mandate,
        )
    }

    /// Gives each guardrail its entry of the lock as read. An unreadable lock
    /// vouches for nothing: every guardrail is then not run, and its `on_error`
    /// decides.
    pub fn apply_lock(&mut self, read: Result<Option<crate::lock::Lock>, crate::lock::LockError>) {
        use crate::lock::Locked;
        self.lock = match read {
            Ok(None) => LockStatus::None,
            Ok(Some(lock)) => {
                for g in &mut self.guardrails {
                    g.locked = lock.pin_of(&g.name, &g.source_text);
                }
                LockStatus::Read(lock)
            }
            Err(e) => {
                for g in &mut self.guardrails {
                    g.locked = Some(Locked::Unusable(e.to_string()));
                }
                LockStatus::Unusable(e.to_string())
            }
        };
    }

    /// Parses and validates config text. `base` resolves relative component paths.
    pub fn parse(text: &str, origin: Origin, base: Option<&Path>) -> Result<Config, ConfigError> {
        Config::parse_with(text, origin, base, &mut |mandate: &Path| {
            sandrail_facts::mandate::Mandate::load(mandate)
        })
    }

    /// [`Config::parse`], reading the mandate with `mandate`.
    pub fn parse_with(
        text: &str,
        origin: Origin,
        base: Option<&Path>,
        read_mandate: &mut ReadMandate,
    ) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.to_string(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        let receipts_otlp = match &raw.receipts.otlp {
            None => None,
            Some(url) => Some(crate::receipts::otlp::Endpoint::parse(url).map_err(|why| {
                ConfigError::Parse {
                    origin: origin.to_string(),
                    message: format!("[receipts] otlp: {why}"),
                }
            })?),
        };
        let session_ttl = raw
            .settings
            .session_ttl_hours
            .unwrap_or(DEFAULT_SESSION_TTL_HOURS);
        if session_ttl == 0 {
            return Err(ConfigError::Parse {
                origin: origin.to_string(),
                message: "settings.session_ttl_hours must be at least 1".into(),
            });
        }
        let lock_timeout = raw
            .settings
            .lock_timeout_ms
            .map_or(DEFAULT_LOCK_TIMEOUT, Duration::from_millis);
        let mut guardrails = Vec::with_capacity(raw.guardrails.len());
        let mut seen = HashSet::new();
        for g in raw.guardrails {
            let name = g.name.clone();
            let err = |message: String| ConfigError::Guardrail {
                origin: origin.to_string(),
                guardrail: name.clone(),
                message,
            };
            validate_name(&name).map_err(&err)?;
            if !seen.insert(name.clone()) {
                return Err(err("the name is used by more than one guardrail".into()));
            }
            guardrails.push(resolve_guardrail(g, base).map_err(&err)?);
        }
        for g in &guardrails {
            for owner in &g.requires {
                if !seen.contains(owner) {
                    return Err(ConfigError::Guardrail {
                        origin: origin.to_string(),
                        guardrail: g.name.clone(),
                        message: format!("requires '{owner}', which is not configured"),
                    });
                }
            }
        }
        let guardrails = order_by_requires(guardrails).map_err(|cycle| ConfigError::Parse {
            origin: origin.to_string(),
            message: format!("`requires` forms a cycle: {}", cycle.join(" -> ")),
        })?;
        let patterns =
            sandrail_facts::Patterns::with(&raw.facts).map_err(|message| ConfigError::Parse {
                origin: origin.to_string(),
                message,
            })?;
        let mandate = match &raw.settings.mandate {
            Some(written) => Some(read_mandate(&relative_to_config(base, written)).map_err(
                |e| ConfigError::Parse {
                    origin: origin.to_string(),
                    message: format!("settings.mandate: {e}"),
                },
            )?),
            None => None,
        };
        let max_refused_stops = raw
            .settings
            .max_refused_stops
            .unwrap_or(DEFAULT_MAX_REFUSED_STOPS);
        if !(1..=1000).contains(&max_refused_stops) {
            return Err(ConfigError::Parse {
                origin: origin.to_string(),
                message: "settings.max_refused_stops must be between 1 and 1000".into(),
            });
        }
        let checkpoints = raw
            .checkpoints
            .resolve()
            .map_err(|message| ConfigError::Parse {
                origin: origin.to_string(),
                message,
            })?;
        let protect = Protect {
            enabled: raw.protect.enabled,
            paths: raw
                .protect
                .paths
                .iter()
                .map(|p| relative_to_config(base, &expand_home(p)))
                .collect(),
            os_sandbox: raw.protect.os_sandbox,
        };
        Ok(Config {
            protect,
            origin,
            lock_timeout,
            on_error: raw.settings.on_error.unwrap_or_default(),
            override_window: override_window(raw.settings.override_window_seconds),
            session_ttl: session_ttl.saturating_mul(3600),
            inherit_on: raw.settings.inherit_on,
            guardrails,
            patterns,
            mandate,
            lock: LockStatus::None,
            gate: raw.settings.gate.unwrap_or_default(),
            max_refused_stops,
            receipts_to_syslog: raw.receipts.syslog,
            receipts_otlp,
            checkpoints,
        })
    }

    /// Whether this config keeps the session's cycle (the span, the contexts'
    /// states, the read mark): it has a context, or a gate that judges Stop.
    pub fn keeps_cycles(&self) -> bool {
        self.guardrails
            .iter()
            .any(|g| g.enabled && (g.is_context() || g.events.contains(&EventKind::Stop)))
    }

    /// The contexts among a guardrail's `requires`.
    pub fn required_contexts(&self, guardrail: &Guardrail) -> Vec<String> {
        guardrail
            .requires
            .iter()
            .filter(|owner| {
                self.guardrails
                    .iter()
                    .any(|g| &g.name == *owner && g.is_context())
            })
            .cloned()
            .collect()
    }

    /// The enabled contexts, in evaluation order.
    pub fn contexts(&self) -> impl Iterator<Item = &Guardrail> {
        self.guardrails
            .iter()
            .filter(|g| g.enabled && g.is_context())
    }

    /// A guardrail's gate mode: its own, else the config's.
    pub fn gate_of(&self, guardrail: &Guardrail) -> crate::receipts::Gate {
        guardrail.gate.unwrap_or(self.gate)
    }

    /// The guardrails that want this event, in evaluation order.
    pub fn matching(&self, kind: EventKind, tool: Option<&str>) -> Vec<&Guardrail> {
        self.guardrails
            .iter()
            .filter(|g| g.wants(kind, tool))
            .collect()
    }
}

/// The override window: `SANDRAIL_OVERRIDE_WINDOW_SECONDS`, else dotforge's
/// `FORGE_OVERRIDE_WINDOW_SECONDS` (so a dotforge user's setting keeps working),
/// else the config's, else 60 s.
fn override_window(configured: Option<u64>) -> u64 {
    [
        "SANDRAIL_OVERRIDE_WINDOW_SECONDS",
        "FORGE_OVERRIDE_WINDOW_SECONDS",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse().ok())
    .or(configured)
    .unwrap_or(DEFAULT_OVERRIDE_WINDOW_SECONDS)
}

fn validate_name(name: &str) -> Result<(), String> {
    if name == RESERVED_NAME {
        return Err(format!(
            "the name '{RESERVED_NAME}' is reserved: sandrail signs its own messages with it"
        ));
    }
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "a name is 1 to {MAX_NAME_LEN} characters of a-z, 0-9, '-' and '_', starting with a letter or digit"
        ))
    }
}

fn resolve_guardrail(g: RawGuardrail, base: Option<&Path>) -> Result<Guardrail, String> {
    let source = match g.source.strip_prefix("builtin:") {
        Some(name) => {
            if !sandrail_builtins::is_bundled(name) {
                return Err(format!(
                    "source 'builtin:{name}' is not a bundled guardrail; bundled: {}",
                    sandrail_builtins::names().join(", ")
                ));
            }
            Source::Builtin(name.to_owned())
        }
        None => {
            // Whether the file exists is checked when it is loaded, so that a missing
            // component costs only its own guardrail.
            Source::File(relative_to_config(base, &g.source))
        }
    };
    let sha256 = match g.sha256 {
        Some(pin) => {
            let pin = pin.trim().to_ascii_lowercase();
            if pin.len() != 64 || !pin.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err("sha256 must be 64 hexadecimal characters".into());
            }
            Some(pin)
        }
        None => None,
    };
    if g.events.is_empty() {
        return Err(format!(
            "events is empty; list at least one of {}",
            EventKind::all_names()
        ));
    }
    let events = g
        .events
        .iter()
        .map(|name| {
            EventKind::from_name(name).ok_or_else(|| {
                format!(
                    "unknown event '{name}'; events are {}",
                    EventKind::all_names()
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let matcher = ToolMatcher::parse(g.matcher.as_deref())
        .map_err(|e| format!("matcher is not a valid regular expression: {e}"))?;
    if g.requires.iter().any(|r| r == &g.name) {
        return Err("a guardrail cannot require itself".into());
    }
    let config = serde_json::to_value(&g.config)
        .map_err(|e| format!("config cannot be expressed as JSON: {e}"))?;
    let timeout_ms = g.limits.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(1..=60_000).contains(&timeout_ms) {
        return Err("limits.timeout_ms must be between 1 and 60000".into());
    }
    let memory_mib = g.limits.memory_mib.unwrap_or(DEFAULT_MEMORY_MIB);
    if !(1..=4096).contains(&memory_mib) {
        return Err("limits.memory_mib must be between 1 and 4096".into());
    }
    let max_state_mib = sandrail_store::MAX_KEYSPACE_BYTES >> 20;
    let state_mib = g
        .limits
        .state_mib
        .unwrap_or(sandrail_store::DEFAULT_KEYSPACE_BYTES >> 20);
    if !(1..=max_state_mib).contains(&state_mib) {
        return Err(format!(
            "limits.state_mib must be between 1 and {max_state_mib}"
        ));
    }
    if g.limits.fuel == Some(0) {
        return Err("limits.fuel must be at least 1 (leave it out for no fuel budget)".into());
    }
    let log_kib = g.limits.log_kib.unwrap_or(DEFAULT_LOG_KIB);
    if !(1..=1024).contains(&log_kib) {
        return Err("limits.log_kib must be between 1 and 1024".into());
    }
    let enforcement = g.enforcement.map(|e| e.validate()).transpose()?;
    if g.kind == Kind::Context {
        if let Some(stop) = events
            .iter()
            .find(|e| matches!(e, EventKind::Stop | EventKind::SubagentStop))
        {
            return Err(format!(
                "a context cannot subscribe to {}: a context records, and at a Stop the gates judge while each active context's `leave` runs; remove {} from its events",
                stop.name(),
                stop.name()
            ));
        }
        if enforcement.is_some() {
            return Err(
                "a context never refuses, so it has no enforcement; remove [guardrail.enforcement] or make it kind = \"gate\"".into(),
            );
        }
    }
    g.flags.validate()?;
    let data = g
        .data
        .iter()
        .map(|written| DataGrant {
            written: written.clone(),
            path: relative_to_config(base, written),
            frozen: None,
        })
        .collect();
    let mut reads_facts = Vec::new();
    for namespace in &g.facts {
        match sandrail_facts::Costly::from_name(namespace) {
            Some(costly) if !reads_facts.contains(&costly) => reads_facts.push(costly),
            Some(_) => {}
            None => {
                return Err(format!(
                    "facts: '{namespace}' is not a namespace that needs declaring; the namespaces whose upkeep costs state are \"session\" and \"case\" (the others are always derived)"
                ));
            }
        }
    }
    Ok(Guardrail {
        name: g.name,
        source,
        source_text: g.source,
        sha256,
        locked: None,
        events,
        matcher_text: g.matcher,
        matcher,
        requires: g.requires,
        config,
        limits: Limits {
            timeout: Duration::from_millis(timeout_ms),
            memory_bytes: (memory_mib as usize) << 20,
            state_bytes: state_mib << 20,
            fuel: g.limits.fuel,
            log_bytes: (log_kib as usize) << 10,
        },
        enforcement,
        enabled: g.enabled.unwrap_or(true),
        flags: g.flags,
        data,
        reads_facts,
        on_error: g.on_error.unwrap_or_default(),
        gate: g.gate,
        kind: g.kind,
        frozen: None,
    })
}

/// A path as written in the config: relative ones start at the config's directory.
/// `~/…` with the home directory in front; anything else as written.
fn expand_home(written: &str) -> String {
    match (written.strip_prefix("~/"), crate::locations::home()) {
        (Some(rest), Some(home)) => home.join(rest).to_string_lossy().into_owned(),
        _ => written.to_owned(),
    }
}

fn relative_to_config(base: Option<&Path>, written: &str) -> PathBuf {
    let path = PathBuf::from(written);
    match base {
        Some(base) if path.is_relative() => base.join(path),
        _ => path,
    }
}

/// Orders guardrails so that each runs after those it requires, keeping config order
/// otherwise. Returns the cycle when there is one.
fn order_by_requires(guardrails: Vec<Guardrail>) -> Result<Vec<Guardrail>, Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Unvisited,
        Visiting,
        Done,
    }
    fn visit(
        i: usize,
        all: &[Guardrail],
        index: &HashMap<&str, usize>,
        marks: &mut [Mark],
        path: &mut Vec<usize>,
        order: &mut Vec<usize>,
    ) -> Result<(), Vec<String>> {
        match marks[i] {
            Mark::Done => return Ok(()),
            Mark::Visiting => {
                let start = path.iter().position(|&p| p == i).unwrap_or(0);
                let mut cycle: Vec<String> =
                    path[start..].iter().map(|&p| all[p].name.clone()).collect();
                cycle.push(all[i].name.clone());
                return Err(cycle);
            }
            Mark::Unvisited => {}
        }
        marks[i] = Mark::Visiting;
        path.push(i);
        for owner in &all[i].requires {
            if let Some(&j) = index.get(owner.as_str()) {
                visit(j, all, index, marks, path, order)?;
            }
        }
        path.pop();
        marks[i] = Mark::Done;
        order.push(i);
        Ok(())
    }

    let index: HashMap<&str, usize> = guardrails
        .iter()
        .enumerate()
        .map(|(i, g)| (g.name.as_str(), i))
        .collect();
    let mut marks = vec![Mark::Unvisited; guardrails.len()];
    let mut order = Vec::with_capacity(guardrails.len());
    for i in 0..guardrails.len() {
        visit(
            i,
            &guardrails,
            &index,
            &mut marks,
            &mut Vec::new(),
            &mut order,
        )?;
    }
    drop(index);
    let mut slots: Vec<Option<Guardrail>> = guardrails.into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|i| slots[i].take()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Origin::Embedded, None)
    }

    #[test]
    fn embedded_default_is_valid() {
        let config = Config::embedded().expect("embedded default parses");
        assert!(
            config
                .guardrails
                .iter()
                .any(|g| g.name == "destructive-commands")
        );
    }

    #[test]
    fn matcher_follows_claude_code_rules() {
        let names = ToolMatcher::parse(Some("Write|Edit")).unwrap();
        assert!(names.matches("Edit") && !names.matches("NotebookEdit"));
        let pattern = ToolMatcher::parse(Some("Edit.*")).unwrap();
        assert!(pattern.matches("NotebookEdit"));
        assert!(ToolMatcher::parse(Some("*")).unwrap().matches("Bash"));
        assert!(ToolMatcher::parse(None).unwrap().matches("Bash"));
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_place() {
        let err = parse(
            "[[guardrail]]\nname='a'\nsource='builtin:no-destructive-git'\nevents=['PreToolUse']\nmatchr='Bash'\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown field `matchr`"), "{err}");
        assert!(err.contains("line 5"), "{err}");
    }

    #[test]
    fn requires_orders_and_rejects_cycles() {
        let base = "source='builtin:no-destructive-git'\nevents=['Stop']\n";
        let ordered = parse(&format!(
            "[[guardrail]]\nname='gate'\nrequires=['ctx']\n{base}[[guardrail]]\nname='ctx'\n{base}"
        ))
        .unwrap();
        let names: Vec<_> = ordered.guardrails.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["ctx", "gate"]);
        let err = parse(&format!(
            "[[guardrail]]\nname='a'\nrequires=['b']\n{base}[[guardrail]]\nname='b'\nrequires=['a']\n{base}"
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("cycle: a -> b -> a"), "{err}");
    }

    #[test]
    fn bad_values_name_the_guardrail() {
        let err = parse("[[guardrail]]\nname='x'\nsource='builtin:nope'\nevents=['Stop']\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("guardrail 'x'") && err.contains("builtin:nope"),
            "{err}"
        );
        let err = parse(
            "[[guardrail]]\nname='x'\nsource='builtin:no-destructive-git'\nevents=['BeforeTool']\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown event 'BeforeTool'"), "{err}");
    }
}
