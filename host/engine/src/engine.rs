//! What outlives one event. The one-shot hook judges one event and exits, so its
//! engine makes a runtime per event that links only the WASI interfaces that
//! event's components import; a resident engine (`sandrail serve`) keeps one
//! runtime for its whole life, each component compiled and linked once.
//!
//! Either way the per-event pipeline ([`crate::evaluate`]) is the same: it asks
//! the engine for a runtime for the components it is about to run.

use std::ops::Deref;
use std::path::PathBuf;

use crate::deadline::Watchdog;
use crate::locations::Places;
use crate::receipts::otlp::Exporter;
use crate::runtime::{LoadError, Prepared, Runtime};

/// Where the compiled components come from, and where the process keeps its
/// files and finds its policy.
pub struct Engine {
    /// One runtime for every event (`sandrail serve`); none: a runtime is made
    /// for each event (`sandrail hook`).
    resident: Option<Box<Runtime>>,
    pub places: Places,
    /// Where receipts are copied to a collector (`[receipts] otlp`): the
    /// server's, never the one-shot hook's.
    exporter: Option<Exporter>,
    /// The one-shot hook's watchdog, which answers for it before the
    /// harness's timeout ([`crate::deadline`]).
    watchdog: Option<Watchdog>,
}

impl Engine {
    /// The engine of a process that judges one event.
    pub fn one_shot() -> Engine {
        Engine {
            resident: None,
            places: Places::User,
            exporter: None,
            watchdog: None,
        }
    }

    /// This engine, telling `watchdog` what the event falls back to once its
    /// policy is known.
    pub fn watched(self, watchdog: Watchdog) -> Engine {
        Engine {
            watchdog: Some(watchdog),
            ..self
        }
    }

    pub fn watchdog(&self) -> Option<&Watchdog> {
        self.watchdog.as_ref()
    }

    /// The engine of a long-lived process: the runtime starts now.
    pub fn resident(places: Places) -> wasmtime::Result<Engine> {
        // Each session's events are judged by the same policy: parse it once.
        crate::policy::manifest::keep_loaded();
        let cache = places.cache();
        Ok(Engine {
            resident: Some(Box::new(Runtime::resident(cache)?)),
            places,
            exporter: None,
            watchdog: None,
        })
    }

    /// This engine, copying receipts to collectors with `exporter`.
    pub fn exporting(self, exporter: Exporter) -> Engine {
        Engine {
            exporter: Some(exporter),
            ..self
        }
    }

    pub fn exporter(&self) -> Option<&Exporter> {
        self.exporter.as_ref()
    }

    /// Reads a guardrail's component for an event: from its source each time for
    /// the one-shot hook; the resident runtime remembers what it has compiled.
    pub fn prepare(&self, guardrail: &crate::config::Guardrail) -> Result<Prepared, LoadError> {
        match &self.resident {
            None => crate::runtime::prepare_guardrail(guardrail),
            Some(runtime) => runtime.prepare(guardrail),
        }
    }

    /// A runtime that can run `components`.
    pub fn runtime_for<'a, 'p>(
        &'a self,
        cache_dir: Option<PathBuf>,
        components: impl IntoIterator<Item = &'p Prepared>,
    ) -> wasmtime::Result<EventRuntime<'a>> {
        match &self.resident {
            None => Ok(EventRuntime::Own(Box::new(Runtime::for_components(
                cache_dir, components,
            )?))),
            Some(runtime) => Ok(EventRuntime::Shared(runtime)),
        }
    }
}

/// The runtime one event runs its components on: its own, or the engine's.
pub enum EventRuntime<'a> {
    Own(Box<Runtime>),
    Shared(&'a Runtime),
}

impl EventRuntime<'_> {
    /// Whether the event owns its runtime (and may leave its teardown to exit).
    pub fn is_own(&self) -> bool {
        matches!(self, EventRuntime::Own(_))
    }
}

impl Deref for EventRuntime<'_> {
    type Target = Runtime;

    fn deref(&self) -> &Runtime {
        match self {
            EventRuntime::Own(runtime) => runtime,
            EventRuntime::Shared(runtime) => runtime,
        }
    }
}
