//! The WebAssembly runtime: one wasmtime engine, components compiled once and cached,
//! and a fresh sandbox per guardrail per event.
//!
//! A guardrail reaches its WIT imports and a WASI that grants nothing: WASI is
//! linked because Rust guests import it, but with no preopened directories, no
//! environment, no arguments and no network (clocks and random numbers remain).
//! Its stdout and stderr are captured (bounded) and forwarded to the host's stderr.
//!
//! Each run has a wall-clock deadline. The call runs as a future under a timeout,
//! and guest code yields to it every [`YIELD_FUEL`] units of fuel, so a guest
//! that computes past the deadline is stopped at its next yield and one blocked in
//! a host call (a WASI sleep) is abandoned at the same deadline. Fuel rather than
//! epoch interruption: an epoch needs a thread to advance it, and starting one
//! costs every hook more than counting fuel costs a guardrail. Memory is limited
//! across all of a component's memories.
//!
//! A component may also export `configure` (contract 0.1.2): [`Runtime::configure`]
//! runs its config check in the same sandbox, and [`Runtime::needs`] /
//! [`cached_needs`] tell the evaluation which state-costing facts it reads.

mod cache;
mod capture;
mod configure;
mod context;
mod host;
mod output;
mod pool;
mod wasi;

use std::borrow::Cow;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::WasiCtxBuilder;

use capture::Capture;

pub use configure::{ConfigureError, Needs, Problem, STATE_COSTING, kept_facts};
pub use context::wit::Transition;
pub use host::{HostState, MAX_DATA_BYTES};
pub use pool::SANDBOXES_AT_ONCE;

use sandrail_files::Identity;
use sandrail_policy::config::{Limits, Source};
use sandrail_store::Keyspace;

/// The contract this host serves, as WIT text: what `sandrail new` gives a
/// guardrail written in a language whose toolchain reads WIT files.
pub const CONTRACT_WIT: &str = include_str!("../../../wit/guardrail.wit");

/// Bindings generated from `wit/guardrail.wit` (the `guardrail` world): the host
/// side of the contract. The `configure` export has its own, in `configure::wit`.
pub mod wit {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "guardrail",
        // Async only so that a call can be abandoned at its deadline even while
        // the guest waits in a host call; the host functions themselves are sync.
        exports: { default: async },
    });

    pub use self::sandrail::guardrail::types::{EventKind, Turn, Violation};
}

impl From<sandrail_event::EventKind> for wit::EventKind {
    fn from(kind: sandrail_event::EventKind) -> Self {
        use sandrail_event::EventKind as K;
        match kind {
            K::SessionStart => wit::EventKind::SessionStart,
            K::UserPromptSubmit => wit::EventKind::UserPromptSubmit,
            K::PreToolUse => wit::EventKind::PreToolUse,
            K::PostToolUse => wit::EventKind::PostToolUse,
            K::Stop => wit::EventKind::Stop,
            K::SubagentStop => wit::EventKind::SubagentStop,
            K::PreCompact => wit::EventKind::PreCompact,
            K::SessionEnd => wit::EventKind::SessionEnd,
            // No guardrail can subscribe to it (config validation), and the hook
            // answers it before evaluation.
            K::ConfigChange => unreachable!("ConfigChange is judged by the host alone"),
        }
    }
}

/// The interfaces that reach the session's state (any version): a component that
/// imports one needs the session held while it runs.
const SESSION_INTERFACES: [&str; 2] = ["sandrail:guardrail/state@", "sandrail:guardrail/flags@"];

/// The largest component file loaded (a policy's limit: its snapshot keeps no
/// larger copy).
pub use sandrail_policy::MAX_COMPONENT_BYTES;

/// How much fuel (about one unit per wasm instruction) guest code burns between
/// yields to the deadline: well under a millisecond of work.
const YIELD_FUEL: u64 = 200_000;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "{0} does not exist; give the path of a .wasm component (relative paths start at the config's directory) or builtin:<name>"
    )]
    Missing(PathBuf),
    #[error("{0}")]
    Read(sandrail_files::FileError),
    #[error("no bundled guardrail is called '{0}'")]
    UnknownBuiltin(String),
    #[error("sha256 mismatch: the config pins {expected} but the component is {actual}")]
    PinMismatch { expected: String, actual: String },
    #[error(
        "sha256 mismatch: sandrail.lock pins {expected} but the component is {actual}; if the change is intended, review it with `sandrail inspect` and run `sandrail pin`"
    )]
    LockMismatch { expected: String, actual: String },
    #[error("{0}")]
    LockUnusable(String),
    /// The session's policy holds it as unreadable, or its copy was altered.
    #[error("{0}")]
    Snapshot(String),
    #[error("not a valid component: {0:#}")]
    Compile(wasmtime::Error),
    #[error("does not fit the sandrail:guardrail world: {0:#}")]
    Link(wasmtime::Error),
    #[error(
        "its entry says kind = \"{configured}\" but the component is a {built} (it exports `{export}`): give the entry kind = \"{built}\""
    )]
    KindMismatch {
        configured: &'static str,
        built: &'static str,
        export: &'static str,
    },
}

/// Why a guardrail produced no verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("did not finish within its deadline of {0:?} (limits.timeout_ms)")]
    Timeout(Duration),
    #[error("tried to grow its memory past its limit of {} MiB (limits.memory_mib)", .0 >> 20)]
    MemoryLimit(usize),
    #[error("ran out of its fuel budget of {0} units (limits.fuel)")]
    OutOfFuel(u64),
    #[error("could not be instantiated: {0}")]
    Instantiate(String),
    /// `detail` is wasmtime's whole account, backtrace included (for stderr);
    /// `cause` is the trap alone (for the agent).
    #[error("trapped: {detail}")]
    Trap { cause: String, detail: String },
}

impl RunError {
    /// The failure in one short line: a trap without its backtrace.
    pub fn brief(&self) -> String {
        match self {
            RunError::Trap { cause, .. } => format!("trapped: {cause}"),
            other => sandrail_event::text::one_line(&other.to_string(), BRIEF_CHARS),
        }
    }
}

/// The longest account of a failure the agent is given.
pub const BRIEF_CHARS: usize = 300;

/// A component read and checked against its pin, not yet compiled: enough to know
/// what it needs before anything costly starts.
pub struct Prepared {
    pub bytes: Cow<'static, [u8]>,
    pub sha256: String,
    /// Whether the component imports `state` or `flags` at all. One that does not
    /// never needs the database, so an event whose guardrails are all stateless
    /// never opens it.
    pub uses_state: bool,
    /// Whether the component exports `configure` (contract 0.1.2): it checks its
    /// own config and declares the state-costing facts it reads.
    pub configurable: bool,
    /// Whether it exports `context` (contract 0.1.3): a context, not a gate.
    pub context: bool,
    /// The interfaces it imports, without their versions (`wasi:cli/stdout`).
    imports: Vec<String>,
}

impl Prepared {
    /// What was found reading it, without its bytes: what a resident runtime
    /// keeps of a component it has compiled.
    fn without_bytes(&self) -> Prepared {
        Prepared {
            bytes: Cow::Borrowed(&[]),
            sha256: self.sha256.clone(),
            uses_state: self.uses_state,
            configurable: self.configurable,
            context: self.context,
            imports: self.imports.clone(),
        }
    }

    /// Whether it reads the cycle (the span, the contexts it requires).
    pub fn reads_cycle(&self) -> bool {
        self.imports.iter().any(|i| i == context::CYCLE_INTERFACE)
    }
}

/// A component ready to instantiate. Cloning shares the compiled, linked component.
#[derive(Clone)]
pub struct Loaded {
    pub sha256: String,
    pub uses_state: bool,
    pre: wasmtime::component::InstancePre<HostState>,
    entry: Entry,
    /// Where its `configure` export is, when it has one.
    configure: Option<configure::wit::ConfigureIndices>,
}

/// Where a component's entry point is: `evaluate` for a gate, the `context`
/// interface for a context.
#[derive(Clone)]
enum Entry {
    Gate(wit::GuardrailIndices),
    Context(context::wit::ContextIndices),
}

impl Loaded {
    /// Whether the component exports `configure`.
    pub fn configurable(&self) -> bool {
        self.configure.is_some()
    }
}

/// What a component imports and exports: each name with what it holds.
pub struct Shape {
    pub imports: Vec<(String, Vec<String>)>,
    pub exports: Vec<(String, Vec<String>)>,
    /// Whether it links against the host: `Err` says why not.
    pub links: Result<(), String>,
}

/// What one guardrail run produced.
pub struct RunOutcome<R = wit::Verdict> {
    pub result: Result<R, RunError>,
    /// The keyspace, handed back so the caller decides whether its writes stand.
    pub keyspace: Keyspace,
    /// The limits it reached, by their config names (`timeout_ms`, `log_kib`…).
    pub exceeded: Vec<&'static str>,
}

pub struct Runtime {
    engine: Engine,
    linker: Linker<HostState>,
    cache: cache::ComponentCache,
    needs_cache: configure::NeedsCache,
    executor: tokio::runtime::Runtime,
    /// A resident runtime's loaded components, by content hash and entry kind:
    /// each is compiled and linked once for the life of the process.
    loaded: Option<std::sync::Mutex<std::collections::HashMap<(String, bool), Loaded>>>,
    /// A resident runtime's policy copies already read, by path: the identity
    /// each had then and what reading it found (without its bytes).
    remembered: Option<std::sync::Mutex<std::collections::HashMap<PathBuf, (Identity, Prepared)>>>,
}

/// The executor of a runtime used by one thread (the one-shot hook, the commands).
fn current_thread_executor() -> wasmtime::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| wasmtime::format_err!("cannot start the executor: {e}"))
}

static LEAVE_TEARDOWN_TO_EXIT: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// For a process that exits as soon as it has answered (`sandrail hook`): the
/// instances' memories, tables and stacks, the compiled code and the engine are
/// left to the exit instead of being torn down. Unmapping each would cost a TLB
/// shootdown on the path of the answer; the kernel reclaims them at once when the
/// process ends. A long-lived process must not call this.
pub fn leave_teardown_to_exit() {
    LEAVE_TEARDOWN_TO_EXIT.store(true, std::sync::atomic::Ordering::Relaxed);
}

pub fn leaves_teardown_to_exit() -> bool {
    LEAVE_TEARDOWN_TO_EXIT.load(std::sync::atomic::Ordering::Relaxed)
}

/// One fresh sandbox: a store and what its guest prints.
struct Sandbox {
    store: Store<HostState>,
    stdout: Capture,
    stderr: Capture,
}

impl Runtime {
    /// Sets up the runtime on the process's engine. `cache_dir` holds compiled
    /// components; `None` compiles every time.
    pub fn new(cache_dir: Option<PathBuf>) -> wasmtime::Result<Runtime> {
        Runtime::linking(
            shared_engine()?,
            cache_dir,
            true,
            &|_| true,
            current_thread_executor()?,
        )
    }

    /// A runtime for a command that looks at a policy (`check-config`,
    /// `inspect`, `audit`): it loads what the hook compiled into `cache_dir`
    /// and compiles anything else in memory, storing nothing there. A
    /// component the hook never ran then leaves no file behind that could be
    /// moved into an accepted one's place.
    pub fn looking(cache_dir: Option<PathBuf>) -> wasmtime::Result<Runtime> {
        Runtime::linking(
            shared_engine()?,
            cache_dir,
            false,
            &|_| true,
            current_thread_executor()?,
        )
    }

    /// A runtime for a long-lived process serving events from several threads at
    /// once: it links every WASI interface, keeps each component it loads, and
    /// keeps its deadlines on an executor thread of its own, so a call's deadline
    /// holds whichever thread waits on it.
    pub fn resident(cache_dir: Option<PathBuf>) -> wasmtime::Result<Runtime> {
        let executor = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sandrail-deadlines")
            .enable_time()
            .build()
            .map_err(|e| wasmtime::format_err!("cannot start the executor: {e}"))?;
        let mut runtime =
            Runtime::linking(resident_engine()?, cache_dir, true, &|_| true, executor)?;
        runtime.loaded = Some(Default::default());
        runtime.remembered = Some(Default::default());
        Ok(runtime)
    }

    /// A runtime for these components only: it links just the WASI interfaces
    /// they import.
    pub fn for_components<'a>(
        cache_dir: Option<PathBuf>,
        components: impl IntoIterator<Item = &'a Prepared>,
    ) -> wasmtime::Result<Runtime> {
        let imports: std::collections::BTreeSet<&str> = components
            .into_iter()
            .flat_map(|p| p.imports.iter().map(String::as_str))
            .collect();
        Runtime::linking(
            shared_engine()?,
            cache_dir,
            true,
            &|interface| imports.contains(interface),
            current_thread_executor()?,
        )
    }

    fn linking(
        engine: Engine,
        cache_dir: Option<PathBuf>,
        stores_compiled: bool,
        wasi_imported: &dyn Fn(&str) -> bool,
        executor: tokio::runtime::Runtime,
    ) -> wasmtime::Result<Runtime> {
        let mut linker = Linker::new(&engine);
        wasi::add_to_linker(&mut linker, wasi_imported)?;
        wit::Guardrail::add_to_linker::<_, HasSelf<HostState>>(&mut linker, |s| s)?;
        let needs_cache = configure::NeedsCache::new(cache_dir.as_deref());
        let cache = cache::ComponentCache::new(&engine, cache_dir, stores_compiled);
        Ok(Runtime {
            engine,
            linker,
            cache,
            needs_cache,
            executor,
            loaded: None,
            remembered: None,
        })
    }

    /// [`prepare_guardrail`] for this runtime. A resident runtime does not read,
    /// hash and scan again a policy's copy of a component it has compiled and
    /// linked, while the copy's identity is what it was when read: a write moves
    /// the file's change time, which only root can set back. What a large
    /// component costs per event is then its instance, not its size.
    ///
    /// Only what was verified against the policy's sha256 is remembered, and the
    /// compiled component is keyed by that sha256: a change the identity misses
    /// (a write through a shared mapping to a page already dirty moves neither
    /// time) leaves the server running the policy's own bytes, never others.
    pub fn prepare(
        &self,
        guardrail: &sandrail_policy::config::Guardrail,
    ) -> Result<Prepared, LoadError> {
        let (Some(remembered), Some(sandrail_policy::policy::Frozen::Copy { blob, .. })) =
            (&self.remembered, &guardrail.frozen)
        else {
            return prepare_guardrail(guardrail);
        };
        let lock = || {
            remembered
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let identity = Identity::of(blob).ok();
        if let Some(identity) = &identity {
            let known = lock()
                .get(blob)
                .filter(|(was, _)| was.same(identity))
                .map(|(_, known)| known.without_bytes());
            if let Some(known) = known
                && self.holds(&known)
            {
                return admit(guardrail, known);
            }
        }
        let prepared = prepare_guardrail(guardrail)?;
        if let Some(identity) = identity {
            lock().insert(blob.clone(), (identity, prepared.without_bytes()));
        }
        Ok(prepared)
    }

    /// Whether this runtime has the component compiled and linked.
    fn holds(&self, prepared: &Prepared) -> bool {
        self.loaded.as_ref().is_some_and(|loaded| {
            loaded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains_key(&(prepared.sha256.clone(), prepared.context))
        })
    }

    /// Compiles a prepared component (or loads it from the cache) and links it;
    /// a resident runtime does so once per component.
    pub fn load(&self, prepared: &Prepared) -> Result<Loaded, LoadError> {
        let Some(loaded) = &self.loaded else {
            return self.compile_and_link(prepared);
        };
        let lock = || {
            loaded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let key = (prepared.sha256.clone(), prepared.context);
        if let Some(component) = lock().get(&key) {
            return Ok(component.clone());
        }
        let component = self.compile_and_link(prepared)?;
        lock().insert(key, component.clone());
        Ok(component)
    }

    fn compile_and_link(&self, prepared: &Prepared) -> Result<Loaded, LoadError> {
        let component =
            self.cache
                .get_or_compile(&self.engine, &prepared.bytes, &prepared.sha256)?;
        let instance_pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(LoadError::Link)?;
        // A component that names `configure` among its exports must export it
        // in the contract's shape; one that does not simply has none.
        let configure = match configure::wit::ConfigureIndices::new(&instance_pre) {
            Ok(indices) => Some(indices),
            Err(e) if prepared.configurable => return Err(LoadError::Link(e)),
            Err(_) => None,
        };
        let entry = if prepared.context {
            Entry::Context(
                context::wit::ContextIndices::new(&instance_pre).map_err(LoadError::Link)?,
            )
        } else {
            Entry::Gate(wit::GuardrailIndices::new(&instance_pre).map_err(LoadError::Link)?)
        };
        Ok(Loaded {
            sha256: prepared.sha256.clone(),
            uses_state: prepared.uses_state,
            pre: instance_pre,
            entry,
            configure,
        })
    }

    /// A component's imports and exports as wasmtime sees them — each with the
    /// functions of an interface, `"func"` for a function, or its kind — and
    /// whether it links against what the host provides (`Err`: why not, naming
    /// the import). Compiles the component, or takes it from the cache.
    pub fn shape(&self, prepared: &Prepared) -> Result<Shape, LoadError> {
        use wasmtime::component::types::ComponentItem;
        let component =
            self.cache
                .get_or_compile(&self.engine, &prepared.bytes, &prepared.sha256)?;
        let ty = component.component_type();
        let items = |item: &ComponentItem| -> Vec<String> {
            match item {
                ComponentItem::ComponentInstance(instance) => instance
                    .exports(&self.engine)
                    .map(|(name, _)| name.to_owned())
                    .collect(),
                ComponentItem::ComponentFunc(_) => vec!["func".to_owned()],
                ComponentItem::CoreFunc(_) => vec!["core func".to_owned()],
                ComponentItem::Module(_) => vec!["core module".to_owned()],
                ComponentItem::Component(_) => vec!["component".to_owned()],
                ComponentItem::Type(_) => vec!["type".to_owned()],
                ComponentItem::Resource(_) => vec!["resource".to_owned()],
            }
        };
        let imports = ty
            .imports(&self.engine)
            .map(|(name, e)| (name.to_owned(), items(&e.ty)))
            .collect();
        let exports = ty
            .exports(&self.engine)
            .map(|(name, e)| (name.to_owned(), items(&e.ty)))
            .collect();
        let links = self.load(prepared).map(|_| ()).map_err(|e| e.to_string());
        Ok(Shape {
            imports,
            exports,
            links,
        })
    }

    /// Runs one guardrail on one event in a fresh sandbox.
    pub fn run(
        &self,
        loaded: &Loaded,
        name: &str,
        event: &wit::Event,
        keyspace: Keyspace,
        data: &[sandrail_policy::config::DataGrant],
        limits: Limits,
    ) -> RunOutcome {
        let mut sandbox = self.sandbox(name, keyspace, data, limits);
        let store = &mut sandbox.store;
        let call = async {
            let Entry::Gate(indices) = &loaded.entry else {
                return Err(CallFailed::Instantiate(wasmtime::format_err!(
                    "it is a context (it exports `context`, not `evaluate`): give its entry kind = \"context\""
                )));
            };
            let instance = loaded
                .pre
                .instantiate_async(&mut *store)
                .await
                .map_err(CallFailed::Instantiate)?;
            let guest = indices
                .load(&mut *store, &instance)
                .map_err(CallFailed::Instantiate)?;
            guest
                .call_evaluate(&mut *store, event)
                .await
                .map_err(CallFailed::Call)
        };
        let finished = self.within_deadline(name, "ran", limits, call);
        let result = settle(finished, &sandbox.store, limits);
        self.outcome(name, sandbox, result, limits)
    }

    /// Runs one context on one event in a fresh sandbox: `Observe` gives its
    /// transition, `Leave` (at Stop, while it is active) whether it holds the Stop.
    pub fn run_context(
        &self,
        loaded: &Loaded,
        name: &str,
        call: ContextCall<'_>,
        keyspace: Keyspace,
        data: &[sandrail_policy::config::DataGrant],
        limits: Limits,
    ) -> RunOutcome<ContextAnswer> {
        let mut sandbox = self.sandbox(name, keyspace, data, limits);
        let store = &mut sandbox.store;
        let run = async {
            let Entry::Context(indices) = &loaded.entry else {
                return Err(CallFailed::Instantiate(wasmtime::format_err!(
                    "it is not a context (it exports `evaluate`, not `context`): give its entry kind = \"gate\""
                )));
            };
            let instance = loaded
                .pre
                .instantiate_async(&mut *store)
                .await
                .map_err(CallFailed::Instantiate)?;
            let guest = indices
                .load(&mut *store, &instance)
                .map_err(CallFailed::Instantiate)?;
            match call {
                ContextCall::Observe { event, payload } => guest
                    .call_observe(&mut *store, event, payload)
                    .await
                    .map(ContextAnswer::Transition),
                ContextCall::Leave { event, payload } => guest
                    .call_leave(&mut *store, event, payload)
                    .await
                    .map(ContextAnswer::Holds),
            }
            .map_err(CallFailed::Call)
        };
        let finished = self.within_deadline(name, "ran", limits, run);
        let result = settle(finished, &sandbox.store, limits);
        self.outcome(name, sandbox, result, limits)
    }

    /// Closes a run's sandbox and names the limits it reached.
    fn outcome<R>(
        &self,
        name: &str,
        sandbox: Sandbox,
        result: Result<R, RunError>,
        limits: Limits,
    ) -> RunOutcome<R> {
        // A Rust guest that panicked printed where and why: that is the trap's
        // cause, in one line (the backtrace stays for SANDRAIL_LOG=debug).
        let mut result = result;
        if let Err(RunError::Trap { cause, .. }) = &mut result {
            let (printed, _) = sandbox.stderr.contents();
            if let Some((panic, rest)) = capture::panic_in(&String::from_utf8_lossy(&printed)) {
                *cause = sandrail_event::text::one_line(&panic, BRIEF_CHARS);
                if !sandrail_event::debug_logging() {
                    let rest = if rest.trim().is_empty() { "" } else { &rest };
                    sandbox.stderr.replace(rest.as_bytes());
                }
            }
        }
        let (keyspace, log_exceeded) = sandbox.close();
        let mut exceeded = Vec::new();
        match &result {
            Err(RunError::Timeout(_)) => exceeded.push(Limits::TIMEOUT),
            Err(RunError::MemoryLimit(_)) => exceeded.push(Limits::MEMORY),
            Err(RunError::OutOfFuel(_)) => exceeded.push(Limits::FUEL),
            _ => {}
        }
        if log_exceeded {
            exceeded.push(Limits::LOG);
        }
        if keyspace.went_over_budget() {
            eprintln!(
                "sandrail: [{name}] limit reached: state_mib: a write was refused because the keyspace would exceed its {} MiB in this session",
                limits.state_bytes >> 20
            );
            exceeded.push(Limits::STATE);
        }
        RunOutcome {
            result,
            keyspace,
            exceeded,
        }
    }

    /// Runs a guardrail's `configure.check` on `config_json` (its entry's config,
    /// as `evaluate` receives it) in a fresh sandbox, under the same deadline and
    /// memory limit as `evaluate`, with its data grants; its state and flag calls
    /// answer `unavailable`. `Ok(None)`: the component does not export
    /// `configure`. What it prints goes to stderr as it does at `evaluate`.
    pub fn configure(
        &self,
        loaded: &Loaded,
        name: &str,
        config_json: &str,
        data: &[sandrail_policy::config::DataGrant],
        limits: Limits,
    ) -> Result<Option<Needs>, ConfigureError> {
        let Some(indices) = &loaded.configure else {
            return Ok(None);
        };
        let mut keyspace = Keyspace::new(name, Vec::new(), limits.state_bytes);
        keyspace.set_unavailable("a config check runs outside any session".to_owned());
        let mut sandbox = self.sandbox(name, keyspace, data, limits);
        let store = &mut sandbox.store;
        let call = async {
            let instance = loaded
                .pre
                .instantiate_async(&mut *store)
                .await
                .map_err(CallFailed::Instantiate)?;
            let guest = indices
                .load(&mut *store, &instance)
                .map_err(CallFailed::Instantiate)?;
            guest
                .call_check(&mut *store, config_json)
                .await
                .map_err(CallFailed::Call)
        };
        let finished = self.within_deadline(name, "checked its config", limits, call);
        let result = settle(finished, &sandbox.store, limits);
        let _ = sandbox.close();
        configure::from_wit(result.map_err(ConfigureError::Run)?).map(Some)
    }

    /// Which state-costing fact namespaces (`session`, `case`) a configured
    /// guardrail reads, for the evaluation to decide what to keep for an event.
    ///
    /// `None`: the component does not export `configure`, so it declares nothing
    /// (the entry's own declaration is all there is). Otherwise the answer of its
    /// check on `config_json`, remembered in the cache directory per component
    /// and config, so only the first event of a pair pays for the call. A check
    /// that finds problems (remembered too) or fails (not remembered: it may be
    /// passing) is taken to read everything, so a broken declaration never
    /// starves a rule of its facts; the check's output is on stderr.
    pub fn needs(
        &self,
        loaded: &Loaded,
        name: &str,
        config_json: &str,
        data: &[sandrail_policy::config::DataGrant],
        limits: Limits,
    ) -> Option<Needs> {
        loaded.configure.as_ref()?;
        if let Some(needs) = self.needs_cache.get(&loaded.sha256, config_json) {
            return Some(needs);
        }
        match self.configure(loaded, name, config_json, data, limits) {
            Ok(needs) => {
                let needs = needs.unwrap_or_default();
                self.needs_cache.put(&loaded.sha256, config_json, &needs);
                Some(needs)
            }
            Err(ConfigureError::Problems(problems)) => {
                eprintln!(
                    "sandrail: guardrail '{name}' has {} problem(s) in its config (see `sandrail check-config`); taken to read every state-costing fact",
                    problems.len()
                );
                self.needs_cache
                    .put(&loaded.sha256, config_json, &Needs::all());
                Some(Needs::all())
            }
            Err(ConfigureError::Run(e)) => {
                eprintln!(
                    "sandrail: guardrail '{name}': its config check {e}; taken to read every state-costing fact"
                );
                Some(Needs::all())
            }
        }
    }

    /// A fresh sandbox for one call: WASI that grants nothing but clocks and
    /// randomness, captured output, the memory limiter, and fuel that makes the
    /// guest yield to the deadline.
    fn sandbox(
        &self,
        name: &str,
        keyspace: Keyspace,
        data: &[sandrail_policy::config::DataGrant],
        limits: Limits,
    ) -> Sandbox {
        // Each stream keeps at most what the guardrail may print in all.
        let stdout = Capture::new(limits.log_bytes);
        let stderr = Capture::new(limits.log_bytes);
        let wasi = WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let state = HostState::new(
            name,
            keyspace,
            data.to_vec(),
            wasi,
            limits.memory_bytes,
            limits.log_bytes,
        );
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| s);
        // Fuel is the clock's chance to stop the guest and, when the config sets
        // one, a budget that does not depend on the machine's speed.
        store
            .set_fuel(limits.fuel.unwrap_or(u64::MAX))
            .and_then(|()| store.fuel_async_yield_interval(Some(YIELD_FUEL)))
            .expect("the engine consumes fuel");
        Sandbox {
            store,
            stdout,
            stderr,
        }
    }

    /// Drives a call to its end or to the deadline, whichever comes first; `None`
    /// when the deadline came first.
    fn within_deadline<R>(
        &self,
        name: &str,
        what: &str,
        limits: Limits,
        call: impl Future<Output = Result<R, CallFailed>>,
    ) -> Option<Result<R, CallFailed>> {
        let started = std::time::Instant::now();
        let result = self
            .executor
            .block_on(async { tokio::time::timeout(limits.timeout, call).await });
        if sandrail_event::debug_logging() {
            eprintln!(
                "sandrail: [{name}] {what} in {:.2} ms",
                started.elapsed().as_secs_f64() * 1000.0
            );
        }
        result.ok()
    }
}

impl Sandbox {
    /// Ends the sandbox: what the guest printed goes to stderr, prefixed, and
    /// the keyspace is handed back, with whether the output went over its limit.
    fn close(mut self) -> (Keyspace, bool) {
        let (keyspace, mut output) = self.store.data_mut().take_parts();
        if leaves_teardown_to_exit() {
            std::mem::forget(self.store);
        }
        let mut dropped = 0;
        for (label, capture) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let (bytes, past_capture) = capture.contents();
            if !bytes.is_empty() {
                output.print(label, &String::from_utf8_lossy(&bytes));
            }
            dropped += past_capture;
        }
        let exceeded = output.finish(dropped);
        (keyspace, exceeded)
    }
}

/// A call's result, its failure put into words.
fn settle<R>(
    finished: Option<Result<R, CallFailed>>,
    store: &Store<HostState>,
    limits: Limits,
) -> Result<R, RunError> {
    match finished {
        Some(Ok(value)) => Ok(value),
        Some(Err(failed)) => Err(failed.classify(store, limits)),
        None => Err(RunError::Timeout(limits.timeout)),
    }
}

/// What a component is known to read without starting the engine: `Some` when
/// it declares nothing (no `configure` export: `Needs::none()`; the entry's own
/// declaration is all there is) or when [`Runtime::needs`] already remembered
/// the answer for this component and config in `cache_dir`; `None` when only
/// [`Runtime::needs`] can tell.
pub fn cached_needs(
    cache_dir: Option<&Path>,
    prepared: &Prepared,
    config_json: &str,
) -> Option<Needs> {
    if !prepared.configurable {
        return Some(Needs::none());
    }
    configure::NeedsCache::new(cache_dir).get(&prepared.sha256, config_json)
}

/// [`prepare`] for a configured guardrail: its component must also match its
/// entry in `sandrail.lock`, and is not read at all when the lock cannot vouch
/// for it.
pub fn prepare_guardrail(
    guardrail: &sandrail_policy::config::Guardrail,
) -> Result<Prepared, LoadError> {
    if let Some(sandrail_policy::lock::Locked::Unusable(why)) = &guardrail.locked {
        return Err(LoadError::LockUnusable(why.clone()));
    }
    let (bytes, sha256) = read_guardrail(guardrail)?;
    let prepared = prepare_bytes(bytes, sha256, guardrail.sha256.as_deref())?;
    admit(guardrail, prepared)
}

/// The ratchet's question, whether a configured guardrail's component loads,
/// answered by preparing it as an event would ([`prepare_guardrail`]).
#[derive(Debug, Clone, Copy)]
pub struct Prepares;

impl sandrail_policy::policy::ratchet::Loads for Prepares {
    fn cannot_load(&self, guardrail: &sandrail_policy::config::Guardrail) -> Option<String> {
        prepare_guardrail(guardrail).err().map(|e| e.to_string())
    }
}

/// [`prepare`] of what an entry runs, checked against no pin: for a reviewer,
/// who must see the component whatever its pins say.
pub fn prepare_unpinned(
    guardrail: &sandrail_policy::config::Guardrail,
) -> Result<Prepared, LoadError> {
    let (bytes, sha256) = read_guardrail(guardrail)?;
    prepare_bytes(bytes, sha256, None)
}

/// The bytes an entry runs and their sha256: the copy its policy keeps when
/// it belongs to a kept policy (what a session runs, whatever became of the
/// file since), else its source as it is now.
pub fn read_guardrail(
    guardrail: &sandrail_policy::config::Guardrail,
) -> Result<(Cow<'static, [u8]>, String), LoadError> {
    match &guardrail.frozen {
        Some(frozen) => {
            let (bytes, sha256) = frozen
                .read_hashed(MAX_COMPONENT_BYTES)
                .map_err(LoadError::Snapshot)?;
            Ok((Cow::Owned(bytes), sha256))
        }
        None => read_source(&guardrail.source),
    }
}

/// Whether the entry may run what was prepared for it: the lock is usable, the
/// component is the kind the entry says, and it is what the lock pins.
fn admit(
    guardrail: &sandrail_policy::config::Guardrail,
    prepared: Prepared,
) -> Result<Prepared, LoadError> {
    use sandrail_policy::lock::Locked;
    if let Some(Locked::Unusable(why)) = &guardrail.locked {
        return Err(LoadError::LockUnusable(why.clone()));
    }
    // The entry's own pin, checked here too: a remembered component may have
    // been prepared for another entry with the same bytes and no pin.
    if let Some(expected) = guardrail.sha256.as_deref()
        && expected != prepared.sha256
    {
        return Err(LoadError::PinMismatch {
            expected: expected.to_owned(),
            actual: prepared.sha256,
        });
    }
    if prepared.context != guardrail.is_context() {
        let (built, export) = if prepared.context {
            ("context", "context")
        } else {
            ("gate", "evaluate")
        };
        return Err(LoadError::KindMismatch {
            configured: guardrail.kind.name(),
            built,
            export,
        });
    }
    match &guardrail.locked {
        Some(Locked::Sha256(expected)) if *expected != prepared.sha256 => {
            Err(LoadError::LockMismatch {
                expected: expected.clone(),
                actual: prepared.sha256,
            })
        }
        _ => Ok(prepared),
    }
}

/// Reads a guardrail's component, checks its pin and finds out whether it keeps
/// state — without an engine, so a process that must first wait for the state has
/// started nothing else.
pub fn prepare(source: &Source, pin: Option<&str>) -> Result<Prepared, LoadError> {
    let (bytes, sha256) = read_source(source)?;
    prepare_bytes(bytes, sha256, pin)
}

/// [`prepare`] for a component already read.
fn prepare_bytes(
    bytes: Cow<'static, [u8]>,
    sha256: String,
    pin: Option<&str>,
) -> Result<Prepared, LoadError> {
    if let Some(expected) = pin
        && expected != sha256
    {
        return Err(LoadError::PinMismatch {
            expected: expected.to_owned(),
            actual: sha256,
        });
    }
    let interfaces = scan_interfaces(&bytes).map_err(|e| {
        LoadError::Compile(wasmtime::format_err!(
            "cannot read its imports and exports: {e}"
        ))
    })?;
    Ok(Prepared {
        bytes,
        sha256,
        uses_state: interfaces.uses_state,
        configurable: interfaces.configurable,
        context: interfaces.context,
        imports: interfaces.imports,
    })
}

/// What a context is asked.
pub enum ContextCall<'a> {
    /// One of its events; `payload` is its payload while it is active.
    Observe {
        event: &'a wit::Event,
        payload: Option<&'a str>,
    },
    /// A Stop, while it is active.
    Leave {
        event: &'a wit::Event,
        payload: &'a str,
    },
}

/// What a context answered.
pub enum ContextAnswer {
    Transition(Transition),
    /// From `leave`: the reason it holds the Stop, or `None` to exit.
    Holds(Option<String>),
}

/// What a component's own imports and exports say about it.
#[derive(Debug, Default, PartialEq, Eq)]
struct Interfaces {
    /// It imports `state` or `flags` (any version).
    uses_state: bool,
    /// It exports `configure` (any 0.1 version).
    configurable: bool,
    /// It exports `context` (any 0.1 version).
    context: bool,
    /// Every interface it imports, without its version.
    imports: Vec<String>,
}

/// Reads a component's imports and exports. Only the outer component's own count;
/// nested modules and components are skipped.
fn scan_interfaces(bytes: &[u8]) -> Result<Interfaces, wasmparser::BinaryReaderError> {
    use wasmparser::{Chunk, Parser, Payload};
    let mut found = Interfaces::default();
    let mut parser = Parser::new(0);
    let mut rest = bytes;
    // `NeedMoreData` is not possible with `eof = true`: the whole component is at hand.
    while let Chunk::Parsed { consumed, payload } = parser.parse(rest, true)? {
        rest = &rest[consumed..];
        match payload {
            // Nested modules and components are skipped unread: their imports
            // are satisfied inside the component, and reading them is most of
            // the component's bytes.
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => {
                rest = rest.get(unchecked_range.len()..).unwrap_or_default();
            }
            Payload::End(_) => break,
            Payload::ComponentImportSection(imports) => {
                for import in imports {
                    let name = import?.name.name;
                    if SESSION_INTERFACES.iter().any(|i| name.starts_with(i)) {
                        found.uses_state = true;
                    }
                    let unversioned = name.split_once('@').map_or(name, |(i, _)| i);
                    found.imports.push(unversioned.to_owned());
                }
            }
            Payload::ComponentExportSection(exports) => {
                for export in exports {
                    let name = export?.name.name;
                    if name.starts_with(configure::EXPORT_PREFIX) {
                        found.configurable = true;
                    }
                    if name.starts_with(context::EXPORT_PREFIX) {
                        found.context = true;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(found)
}

/// A component's bytes and their sha256: builtins hashed at build time, files now.
pub fn read_source(source: &Source) -> Result<(Cow<'static, [u8]>, String), LoadError> {
    match source {
        Source::Builtin(name) => {
            let (bytes, sha256) = sandrail_builtins::get_with_sha256(name)
                .ok_or_else(|| LoadError::UnknownBuiltin(name.clone()))?;
            Ok((Cow::Borrowed(bytes), sha256.to_owned()))
        }
        Source::File(path) => {
            let bytes =
                sandrail_files::read_regular(path, MAX_COMPONENT_BYTES).map_err(|e| match e {
                    sandrail_files::FileError::Missing { .. } => LoadError::Missing(path.clone()),
                    other => LoadError::Read(other),
                })?;
            let sha256 = sandrail_event::sha256_hex(&bytes);
            Ok((Cow::Owned(bytes), sha256))
        }
    }
}

/// A call that failed, before it is put into words.
enum CallFailed {
    Instantiate(wasmtime::Error),
    Call(wasmtime::Error),
}

impl CallFailed {
    /// Names the cause: the memory limit is recognised by the limiter's record,
    /// never by message text (the deadline never gets here: its timeout drops the
    /// call).
    fn classify(self, store: &Store<HostState>, limits: Limits) -> RunError {
        let (error, instantiating) = match self {
            CallFailed::Instantiate(e) => (e, true),
            CallFailed::Call(e) => (e, false),
        };
        if store.data().memory_exceeded() {
            return RunError::MemoryLimit(limits.memory_bytes);
        }
        if let (Some(fuel), Some(wasmtime::Trap::OutOfFuel)) =
            (limits.fuel, error.downcast_ref::<wasmtime::Trap>())
        {
            return RunError::OutOfFuel(fuel);
        }
        if instantiating {
            RunError::Instantiate(format!("{error:#}"))
        } else {
            // The trap itself (`wasm trap: …`), or the innermost cause.
            let cause = error
                .downcast_ref::<wasmtime::Trap>()
                .map(|trap| format!("wasm trap: {trap}"))
                .unwrap_or_else(|| error.root_cause().to_string());
            RunError::Trap {
                cause: sandrail_event::text::one_line(&cause, BRIEF_CHARS),
                detail: format!("{error:#}"),
            }
        }
    }
}

/// The process's one engine, created on first use.
fn shared_engine() -> wasmtime::Result<Engine> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    let engine = ENGINE.get_or_init(|| Engine::new(&engine_config()).map_err(|e| format!("{e:#}")));
    engine.clone().map_err(wasmtime::Error::msg)
}

/// What every engine compiles with: the pooled one runs the same compiled code,
/// so both read the same cache.
fn engine_config() -> Config {
    let mut config = Config::new();
    config.consume_fuel(true);
    config
}

/// A long-lived process's engine: instances come from a pool made once, so an
/// event's sandbox costs no map and unmap of its memories. Where the pool cannot
/// be reserved (an address-space limit, say) the shared engine serves, as fast
/// as the one-shot hook's.
fn resident_engine() -> wasmtime::Result<Engine> {
    let mut config = engine_config();
    config.allocation_strategy(pool::sized());
    match Engine::new(&config) {
        Ok(engine) => Ok(engine),
        Err(e) => {
            eprintln!(
                "sandrail: cannot reserve the pool of guardrail instances ({e:#}); each instance is mapped on its own instead"
            );
            shared_engine()
        }
    }
}
