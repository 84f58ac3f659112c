//! The WebAssembly runtime: one wasmtime engine, components compiled once and cached,
//! and a fresh sandbox per guardrail per event.
//!
//! A guardrail reaches its WIT imports and a WASI that grants nothing: WASI is
//! linked because Rust guests import it, but with no preopened directories, no
//! environment, no arguments and no network (clocks and random numbers remain).
//! Its stdout and stderr are captured (bounded) and forwarded to the host's stderr.
//!
//! Each run has a wall-clock deadline enforced twice: epoch interruption stops
//! guest code that computes past it, and the call runs as a future under a timeout,
//! so a guest blocked in a host call (a WASI sleep) is abandoned at the same
//! deadline. Memory is limited across all of a component's memories.

mod cache;
mod capture;
mod host;
mod output;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, Store, Trap};
use wasmtime_wasi::WasiCtxBuilder;

use capture::Capture;

pub use host::HostState;

use crate::config::{Limits, Source};
use crate::store::Keyspace;

/// Bindings generated from `wit/guardrail.wit`: the host side of the contract.
pub mod wit {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "guardrail",
        // Async only so that a call can be abandoned at its deadline even while
        // the guest waits in a host call; the host functions themselves are sync.
        exports: { default: async },
    });

    pub use self::sandrail::guardrail::types::{EventKind, Turn, Violation};
}

impl From<crate::event::EventKind> for wit::EventKind {
    fn from(kind: crate::event::EventKind) -> Self {
        use crate::event::EventKind as K;
        match kind {
            K::SessionStart => wit::EventKind::SessionStart,
            K::UserPromptSubmit => wit::EventKind::UserPromptSubmit,
            K::PreToolUse => wit::EventKind::PreToolUse,
            K::PostToolUse => wit::EventKind::PostToolUse,
            K::Stop => wit::EventKind::Stop,
            K::SubagentStop => wit::EventKind::SubagentStop,
            K::PreCompact => wit::EventKind::PreCompact,
            K::SessionEnd => wit::EventKind::SessionEnd,
        }
    }
}

/// The interfaces that reach the session's state (any version): a component that
/// imports one needs the session held while it runs.
const SESSION_INTERFACES: [&str; 2] = ["sandrail:guardrail/state@", "sandrail:guardrail/flags@"];

/// The largest component file loaded.
pub const MAX_COMPONENT_BYTES: u64 = 64 << 20;

/// How often the epoch ticks; deadlines are counted in these.
const EPOCH_TICK: Duration = Duration::from_millis(1);
/// How much of a guardrail's stdout, and of its stderr, is kept per event.
pub const CAPTURE_BYTES: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "{0} does not exist; give the path of a .wasm component (relative paths start at the config's directory) or builtin:<name>"
    )]
    Missing(PathBuf),
    #[error("{0}")]
    Read(crate::files::FileError),
    #[error("no bundled guardrail is called '{0}'")]
    UnknownBuiltin(String),
    #[error("sha256 mismatch: the config pins {expected} but the component is {actual}")]
    PinMismatch { expected: String, actual: String },
    #[error("not a valid component: {0:#}")]
    Compile(wasmtime::Error),
    #[error("does not fit the sandrail:guardrail world: {0:#}")]
    Link(wasmtime::Error),
}

/// Why a guardrail produced no verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("did not finish within its deadline of {0:?}")]
    Timeout(Duration),
    #[error("tried to grow its memory past its limit of {} MiB", .0 >> 20)]
    MemoryLimit(usize),
    #[error("could not be instantiated: {0}")]
    Instantiate(String),
    #[error("trapped: {0}")]
    Trap(String),
}

/// A component read and checked against its pin, not yet compiled: enough to know
/// what it needs before anything costly starts.
pub struct Prepared {
    bytes: Cow<'static, [u8]>,
    pub sha256: String,
    /// Whether the component imports `state` or `flags` at all. One that does not
    /// never needs the database, so an event whose guardrails are all stateless
    /// never opens it.
    pub uses_state: bool,
}

/// A component ready to instantiate.
pub struct Loaded {
    pub sha256: String,
    pub uses_state: bool,
    pre: wit::GuardrailPre<HostState>,
}

/// What one guardrail run produced.
pub struct RunOutcome {
    pub result: Result<wit::Verdict, RunError>,
    /// The keyspace, handed back so the caller decides whether its writes stand.
    pub keyspace: Keyspace,
}

pub struct Runtime {
    engine: Engine,
    ticker: &'static Ticker,
    linker: Linker<HostState>,
    cache: cache::ComponentCache,
    executor: tokio::runtime::Runtime,
}

impl Runtime {
    /// Sets up the runtime on the process's engine. `cache_dir` holds compiled
    /// components; `None` compiles every time.
    pub fn new(cache_dir: Option<PathBuf>) -> wasmtime::Result<Runtime> {
        let engine = shared_engine()?;
        let ticker = ticker(&engine)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wit::Guardrail::add_to_linker::<_, HasSelf<HostState>>(&mut linker, |s| s)?;
        let cache = cache::ComponentCache::new(&engine, cache_dir);
        let executor = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| wasmtime::format_err!("cannot start the executor: {e}"))?;
        Ok(Runtime {
            engine,
            ticker,
            linker,
            cache,
            executor,
        })
    }

    /// Compiles a prepared component (or loads it from the cache) and links it.
    pub fn load(&self, prepared: &Prepared) -> Result<Loaded, LoadError> {
        let component =
            self.cache
                .get_or_compile(&self.engine, &prepared.bytes, &prepared.sha256)?;
        let instance_pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(LoadError::Link)?;
        let pre = wit::GuardrailPre::new(instance_pre).map_err(LoadError::Link)?;
        Ok(Loaded {
            sha256: prepared.sha256.clone(),
            uses_state: prepared.uses_state,
            pre,
        })
    }

    /// Runs one guardrail on one event in a fresh sandbox.
    pub fn run(
        &self,
        loaded: &Loaded,
        name: &str,
        event: &wit::Event,
        keyspace: Keyspace,
        data: &[(String, PathBuf)],
        limits: Limits,
    ) -> RunOutcome {
        let stdout = Capture::new(CAPTURE_BYTES);
        let stderr = Capture::new(CAPTURE_BYTES);
        let wasi = WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let state = HostState::new(name, keyspace, data.to_vec(), wasi, limits.memory_bytes);
        let mut store = Store::new(&self.engine, state);
        // The epoch advances only while some guardrail runs.
        let _ticking = self.ticker.hold();
        store.limiter(|s| s);
        store.set_epoch_deadline(ticks(limits.timeout));
        store.epoch_deadline_trap();

        let call = async {
            let instance = loaded
                .pre
                .instantiate_async(&mut store)
                .await
                .map_err(CallFailed::Instantiate)?;
            instance
                .call_evaluate(&mut store, event)
                .await
                .map_err(CallFailed::Call)
        };
        let started = std::time::Instant::now();
        let result = self
            .executor
            .block_on(async { tokio::time::timeout(limits.timeout, call).await });
        if crate::debug_logging() {
            eprintln!(
                "sandrail: [{name}] ran in {:.2} ms",
                started.elapsed().as_secs_f64() * 1000.0
            );
        }
        let result = match result {
            Ok(Ok(verdict)) => Ok(verdict),
            Ok(Err(failed)) => Err(failed.classify(&store, limits)),
            Err(_elapsed) => Err(RunError::Timeout(limits.timeout)),
        };
        let (keyspace, mut output) = store.into_data().into_parts();
        let mut dropped = 0;
        for (label, capture) in [("stdout", &stdout), ("stderr", &stderr)] {
            let (bytes, past_capture) = capture.contents();
            if !bytes.is_empty() {
                output.print(label, &String::from_utf8_lossy(&bytes));
            }
            dropped += past_capture;
        }
        output.finish(dropped);
        RunOutcome { result, keyspace }
    }
}

/// Reads a guardrail's component, checks its pin and finds out whether it keeps
/// state — without an engine, so a process that must first wait for the state has
/// started nothing else.
pub fn prepare(source: &Source, pin: Option<&str>) -> Result<Prepared, LoadError> {
    let (bytes, sha256) = read_source(source)?;
    if let Some(expected) = pin
        && expected != sha256
    {
        return Err(LoadError::PinMismatch {
            expected: expected.to_owned(),
            actual: sha256,
        });
    }
    let uses_state = imports_state(&bytes)
        .map_err(|e| LoadError::Compile(wasmtime::format_err!("cannot read its imports: {e}")))?;
    Ok(Prepared {
        bytes,
        sha256,
        uses_state,
    })
}

/// Whether a component imports the `state` interface (any version). Only the
/// outer component's own imports count; nested modules and components are skipped.
fn imports_state(bytes: &[u8]) -> Result<bool, wasmparser::BinaryReaderError> {
    use wasmparser::{Parser, Payload};
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) if depth == 0 => break,
            Payload::End(_) => depth -= 1,
            Payload::ComponentImportSection(imports) if depth == 0 => {
                for import in imports {
                    let name = import?.name.name;
                    if SESSION_INTERFACES.iter().any(|i| name.starts_with(i)) {
                        return Ok(true);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(false)
}

/// A component's bytes and their sha256: builtins hashed at build time, files now.
pub fn read_source(source: &Source) -> Result<(Cow<'static, [u8]>, String), LoadError> {
    match source {
        Source::Builtin(name) => {
            let (bytes, sha256) = crate::builtins::get_with_sha256(name)
                .ok_or_else(|| LoadError::UnknownBuiltin(name.clone()))?;
            Ok((Cow::Borrowed(bytes), sha256.to_owned()))
        }
        Source::File(path) => {
            let bytes =
                crate::files::read_regular(path, MAX_COMPONENT_BYTES).map_err(|e| match e {
                    crate::files::FileError::Missing { .. } => LoadError::Missing(path.clone()),
                    other => LoadError::Read(other),
                })?;
            let sha256 = crate::sha256_hex(&bytes);
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
    /// Names the cause: the deadline and the memory limit are recognised by the
    /// trap's type and the limiter's record, never by message text.
    fn classify(self, store: &Store<HostState>, limits: Limits) -> RunError {
        let (error, instantiating) = match self {
            CallFailed::Instantiate(e) => (e, true),
            CallFailed::Call(e) => (e, false),
        };
        if error.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            return RunError::Timeout(limits.timeout);
        }
        if store.data().memory_exceeded() {
            return RunError::MemoryLimit(limits.memory_bytes);
        }
        if instantiating {
            RunError::Instantiate(format!("{error:#}"))
        } else {
            RunError::Trap(format!("{error:#}"))
        }
    }
}

fn ticks(timeout: Duration) -> u64 {
    (timeout.as_micros() / EPOCH_TICK.as_micros()).max(1) as u64
}

/// The process's one engine, created on first use.
fn shared_engine() -> wasmtime::Result<Engine> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    let engine = ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config.epoch_interruption(true);
        Engine::new(&config).map_err(|e| format!("{e:#}"))
    });
    engine.clone().map_err(wasmtime::Error::msg)
}

/// Advances the engine's epoch every [`EPOCH_TICK`] while at least one guardrail
/// runs, and sleeps otherwise: a process waiting for the state, or done with its
/// guardrails, costs no wakeups.
struct Ticker {
    running: Mutex<usize>,
    wake: Condvar,
}

/// One guardrail run's claim on the ticker.
struct Ticking(&'static Ticker);

impl Ticker {
    fn hold(&'static self) -> Ticking {
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.wake.notify_one();
        Ticking(self)
    }

    fn tick_while_running(&self, engine: &Engine) {
        loop {
            {
                let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
                while *running == 0 {
                    running = self
                        .wake
                        .wait(running)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
            std::thread::sleep(EPOCH_TICK);
            engine.increment_epoch();
        }
    }
}

impl Drop for Ticking {
    fn drop(&mut self) {
        let mut running = self
            .0
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *running = running.saturating_sub(1);
    }
}

/// The process's ticker, started with its first runtime: no guest runs without it.
fn ticker(engine: &Engine) -> wasmtime::Result<&'static Ticker> {
    static TICKER: OnceLock<Result<&'static Ticker, String>> = OnceLock::new();
    let ticker = TICKER.get_or_init(|| {
        let ticker: &'static Ticker = Box::leak(Box::new(Ticker {
            running: Mutex::new(0),
            wake: Condvar::new(),
        }));
        let engine = engine.clone();
        std::thread::Builder::new()
            .name("sandrail-epoch".into())
            .spawn(move || ticker.tick_while_running(&engine))
            .map(|_| ticker)
            .map_err(|e| format!("cannot start the deadline timer: {e}"))
    });
    ticker.clone().map_err(wasmtime::Error::msg)
}
