//! Write sandrail guardrails in Rust.
//!
//! A guardrail is a type implementing [`Guardrail`], exported with [`export!`]:
//!
//! ```no_run
//! use sandrail_guest::{Event, Guardrail, Verdict};
//!
//! struct NoSudo;
//!
//! impl Guardrail for NoSudo {
//!     fn evaluate(event: &Event) -> sandrail_guest::Result<Verdict> {
//!         Ok(match event.command() {
//!             Some(cmd) if cmd.starts_with("sudo ") => Verdict::deny("no sudo here"),
//!             _ => Verdict::pass(),
//!         })
//!     }
//! }
//!
//! sandrail_guest::export!(NoSudo);
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2`; the `.wasm` file in
//! `target/wasm32-wasip2/release/` is the component sandrail loads.
//!
//! Native unit tests run the guardrail's code as it is, `state` and `flags`
//! included, on an in-memory host: see [`testing`]. `sandrail test` then runs
//! case files against the built component in the real sandbox
//! (docs/authoring.md).
//!
//! A guardrail whose config can be wrong in ways worth reporting before any event
//! (rules in a language of their own, say) also implements [`Configure`] and is
//! exported with [`export_configurable!`] instead: `sandrail check-config` then
//! reports its problems, and the host learns which state-costing facts it reads.
//!
//! ```no_run
//! use sandrail_guest::{Configure, Event, Guardrail, Needs, Problem, Verdict};
//!
//! struct Banned;
//!
//! impl Guardrail for Banned {
//!     fn evaluate(event: &Event) -> sandrail_guest::Result<Verdict> {
//!         let word = event.config()["word"].as_str().unwrap_or_default();
//!         Ok(match event.command() {
//!             Some(cmd) if cmd.contains(word) => Verdict::violation("banned", "not that"),
//!             _ => Verdict::pass(),
//!         })
//!     }
//! }
//!
//! impl Configure for Banned {
//!     fn check(config: &serde_json::Value) -> Result<Needs, Vec<Problem>> {
//!         match config["word"].as_str() {
//!             Some(w) if !w.is_empty() => Ok(Needs::none()),
//!             _ => Err(vec![Problem::new(Some("word"), "give a non-empty word")]),
//!         }
//!     }
//! }
//!
//! sandrail_guest::export_configurable!(Banned);
//! ```

extern crate self as sandrail_guest;

pub mod cycle;
pub mod data;
pub mod escalation;
mod event;
pub mod flags;
mod imports;
pub mod log;
pub mod state;
#[cfg(not(target_family = "wasm"))]
pub mod testing;

pub use event::{Event, EventKind, Turn};

/// The raw bindings generated from `wit/guardrail.wit`.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "guardrail",
        pub_export_macro: true,
        export_macro_name: "__export_guardrail_world",
        default_bindings_module: "sandrail_guest::bindings",
        runtime_path: "sandrail_guest::__wit_bindgen::rt",
        additional_derives: [PartialEq, Clone],
    });
}

/// The raw bindings of the `configurable-guardrail` world: the `guardrail` world's
/// interfaces (shared with [`bindings`]) plus the `configure` export. The `with`
/// keys carry the contract's version: bump them with the WIT package.
#[doc(hidden)]
pub mod configurable_bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "configurable-guardrail",
        pub_export_macro: true,
        export_macro_name: "__export_configurable_guardrail_world",
        default_bindings_module: "sandrail_guest::configurable_bindings",
        runtime_path: "sandrail_guest::__wit_bindgen::rt",
        additional_derives: [PartialEq, Clone],
        with: {
            "sandrail:guardrail/types@0.1.4": crate::bindings::sandrail::guardrail::types,
            "sandrail:guardrail/state@0.1.4": crate::bindings::sandrail::guardrail::state,
            "sandrail:guardrail/flags@0.1.4": crate::bindings::sandrail::guardrail::flags,
            "sandrail:guardrail/data@0.1.4": crate::bindings::sandrail::guardrail::data,
            "sandrail:guardrail/log@0.1.4": crate::bindings::sandrail::guardrail::log,
            "sandrail:guardrail/cycle@0.1.4": crate::bindings::sandrail::guardrail::cycle,
            "sandrail:guardrail/escalation@0.1.4": crate::bindings::sandrail::guardrail::escalation,
        },
    });
}

/// The raw bindings of the `context-guardrail` world: the same imports, and the
/// `context` export instead of `evaluate`.
#[doc(hidden)]
pub mod context_bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "context-guardrail",
        pub_export_macro: true,
        export_macro_name: "__export_context_guardrail_world",
        default_bindings_module: "sandrail_guest::context_bindings",
        runtime_path: "sandrail_guest::__wit_bindgen::rt",
        additional_derives: [PartialEq, Clone],
        with: {
            "sandrail:guardrail/types@0.1.4": crate::bindings::sandrail::guardrail::types,
            "sandrail:guardrail/state@0.1.4": crate::bindings::sandrail::guardrail::state,
            "sandrail:guardrail/flags@0.1.4": crate::bindings::sandrail::guardrail::flags,
            "sandrail:guardrail/data@0.1.4": crate::bindings::sandrail::guardrail::data,
            "sandrail:guardrail/log@0.1.4": crate::bindings::sandrail::guardrail::log,
            "sandrail:guardrail/cycle@0.1.4": crate::bindings::sandrail::guardrail::cycle,
        },
    });
}

#[doc(hidden)]
pub use wit_bindgen as __wit_bindgen;

/// The README's Rust snippets (if it shows any), compiled and run as doc tests
/// so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeSnippets;

/// The authoring guide's Rust snippets, likewise.
#[cfg(doctest)]
#[doc = include_str!("../../docs/authoring.md")]
struct AuthoringSnippets;

/// The contract reference's Rust snippets, likewise.
#[cfg(doctest)]
#[doc = include_str!("../../docs/contract.md")]
struct ContractSnippets;

pub use configurable_bindings::exports::sandrail::guardrail::configure::{Needs, Problem};
pub use context_bindings::exports::sandrail::guardrail::context::Transition;

pub use bindings::sandrail::guardrail::types::Verdict;
pub use state::StateError;

/// A guardrail: judges each event it subscribed to.
pub trait Guardrail {
    /// Judges one event. An `Err` is a failure of the guardrail itself, not a
    /// verdict: the host reports it with the guardrail's name and lets the event
    /// proceed.
    fn evaluate(event: &Event) -> Result<Verdict>;
}

/// A context: records a mode of the session rather than judging events. Exported
/// with [`export_context!`]; its entry says `kind = "context"`.
///
/// The host keeps its state per session (active, payload, the turn it last
/// entered) and shows it to the gates that list it in `requires` ([`cycle::contexts`]).
/// A context never refuses the events it observes: an `Err` is a failure the host
/// reports, and what it would have recorded is lost — the gate that needed it then
/// refuses a claim it cannot check, which is the safe direction.
pub trait Context {
    /// One event it subscribed to; `payload` is its payload while it is active.
    fn observe(event: &Event, payload: Option<&serde_json::Value>) -> Result<Transition>;

    /// At each Stop while it is active: `None` lets it exit; `Some(reason)` keeps it
    /// active and refuses the Stop. By default it lets go.
    fn leave(event: &Event, payload: &serde_json::Value) -> Result<Option<String>> {
        let _ = (event, payload);
        Ok(None)
    }
}

impl Transition {
    /// Enter (or enter again) with `payload`, stored as JSON.
    pub fn enter<T: serde::Serialize + ?Sized>(payload: &T) -> Result<Self> {
        Ok(Transition::Enter(serde_json::to_string(payload)?))
    }

    /// Leave things as they are.
    pub fn stay() -> Self {
        Transition::Stay
    }

    /// Become inactive.
    pub fn exit() -> Self {
        Transition::Exit
    }
}

/// A guardrail that checks its own config: exported with [`export_configurable!`].
///
/// `sandrail check-config` calls [`Configure::check`] with the entry's
/// `[guardrail.config]` and prints every [`Problem`] (as `error  <guardrail>: rule
/// <item>: <message>`), failing the check. The host may also call it to learn which
/// fact namespaces the guardrail reads that cost a state write per event to keep
/// (`"session"`, `"case"`), and keep those only when some guardrail reads them.
/// `check` sees no event and no session: state calls answer `unavailable`, flag
/// calls `not-granted`; [`data::read`] works as in `evaluate`.
pub trait Configure {
    /// Checks a config (the same JSON `evaluate` finds in [`Event::config`]; `Null`
    /// when the entry has none): what it makes the guardrail read, or every problem.
    fn check(config: &serde_json::Value) -> Result<Needs, Vec<Problem>>;
}

impl Needs {
    /// Reads no fact that costs state to keep.
    pub fn none() -> Self {
        Needs { facts: Vec::new() }
    }

    /// Reads these facts: state-costing namespaces (`"session"`, `"case"`), which
    /// the host then keeps, and dotted paths (`"tool.command"`), which
    /// `sandrail check-config` checks against the facts the host derives (a path
    /// under `session` or `case` also keeps its namespace).
    pub fn facts<I, S>(namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Needs {
            facts: namespaces.into_iter().map(Into::into).collect(),
        }
    }
}

impl Problem {
    /// A problem with `item` (for a rule language: the rule's name), or with the
    /// config as a whole when `None`.
    pub fn new(item: Option<&str>, message: impl Into<String>) -> Self {
        Problem {
            item: item.map(str::to_owned),
            message: message.into(),
        }
    }
}

/// What went wrong inside a guardrail. Returned from `evaluate`, it makes the
/// host report the guardrail as failed (its `on_error` decides); a guardrail that
/// can judge without its state checks [`Error::is_state_unavailable`] instead.
#[derive(Debug)]
pub struct Error {
    message: String,
    state_unavailable: bool,
}

impl Error {
    pub fn msg(message: impl std::fmt::Display) -> Self {
        Error {
            message: message.to_string(),
            state_unavailable: false,
        }
    }

    /// The session's state (keys or flags) could not be had for this event: the
    /// lock was busy or held by another program, or the store is unusable.
    /// Nothing was read or written; the host answers violations at their rule's
    /// default level.
    pub fn is_state_unavailable(&self) -> bool {
        self.state_unavailable
    }

    pub(crate) fn unavailable(message: String) -> Self {
        Error {
            message,
            state_unavailable: true,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::msg(format!("JSON: {e}"))
    }
}

impl From<StateError> for Error {
    fn from(e: StateError) -> Self {
        let message = format!("state: {}", e.message());
        if e.is_unavailable() {
            Error::unavailable(message)
        } else {
            Error::msg(message)
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Verdict {
    /// Nothing to say.
    pub fn pass() -> Self {
        Verdict::Pass
    }

    /// Context for the agent; the event proceeds.
    pub fn note(text: impl Into<String>) -> Self {
        Verdict::Note(text.into())
    }

    /// A broken rule, named so one guardrail can report several.
    pub fn violation(rule: impl Into<String>, message: impl Into<String>) -> Self {
        Verdict::Violation(bindings::sandrail::guardrail::types::Violation {
            rule: rule.into(),
            message: message.into(),
        })
    }

    /// Refuse the event outright.
    pub fn deny(reason: impl Into<String>) -> Self {
        Verdict::Deny(reason.into())
    }
}

/// Exports a [`Guardrail`] implementation as the component's `evaluate`, targeting the
/// plain `guardrail` world. A guardrail that is also [`Configure`] uses
/// [`export_configurable!`] instead.
#[macro_export]
macro_rules! export {
    ($guardrail:ty) => {
        #[doc(hidden)]
        pub struct __SandrailExport;

        impl $crate::bindings::Guest for __SandrailExport {
            fn evaluate(
                event: $crate::bindings::sandrail::guardrail::types::Event,
            ) -> $crate::Verdict {
                $crate::__run::<$guardrail>(event)
            }
        }

        $crate::bindings::__export_guardrail_world!(__SandrailExport);
    };
}

/// Exports a [`Guardrail`] that is also [`Configure`]: `evaluate` and the
/// `configure` interface, as the `configurable-guardrail` world. Use it instead of
/// [`export!`], not beside it.
#[macro_export]
macro_rules! export_configurable {
    ($guardrail:ty) => {
        #[doc(hidden)]
        pub struct __SandrailExport;

        impl $crate::configurable_bindings::Guest for __SandrailExport {
            fn evaluate(
                event: $crate::bindings::sandrail::guardrail::types::Event,
            ) -> $crate::Verdict {
                $crate::__run::<$guardrail>(event)
            }
        }

        impl $crate::configurable_bindings::exports::sandrail::guardrail::configure::Guest
            for __SandrailExport
        {
            fn check(
                config: ::std::string::String,
            ) -> ::std::result::Result<$crate::Needs, ::std::vec::Vec<$crate::Problem>> {
                $crate::__check::<$guardrail>(&config)
            }
        }

        $crate::configurable_bindings::__export_configurable_guardrail_world!(__SandrailExport);
    };
}

/// Exports a [`Context`] implementation as the `context-guardrail` world.
#[macro_export]
macro_rules! export_context {
    ($context:ty) => {
        #[doc(hidden)]
        pub struct __SandrailExport;

        impl $crate::context_bindings::exports::sandrail::guardrail::context::Guest
            for __SandrailExport
        {
            fn observe(
                event: $crate::bindings::sandrail::guardrail::types::Event,
                payload: ::std::option::Option<::std::string::String>,
            ) -> $crate::Transition {
                $crate::__observe::<$context>(event, payload)
            }

            fn leave(
                event: $crate::bindings::sandrail::guardrail::types::Event,
                payload: ::std::string::String,
            ) -> ::std::option::Option<::std::string::String> {
                $crate::__leave::<$context>(event, &payload)
            }
        }

        $crate::context_bindings::__export_context_guardrail_world!(__SandrailExport);
    };
}

/// Parses a raw event and sets the current turn for the stamping helpers.
fn event_of(raw: bindings::sandrail::guardrail::types::Event) -> Event {
    let event = match Event::from_raw(raw) {
        Ok(event) => event,
        Err(e) => panic!("sandrail-guest: the host sent an event that does not parse: {e}"),
    };
    state::set_current_turn(event.turn().map(|t| t.id.clone()));
    event
}

/// Parses a payload the host kept (its own JSON), `Null` when there is none.
fn payload_of(text: Option<&str>) -> serde_json::Value {
    text.and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// Runs a context's `observe`; used by [`export_context!`].
#[doc(hidden)]
pub fn __observe<C: Context>(
    raw: bindings::sandrail::guardrail::types::Event,
    payload: Option<String>,
) -> Transition {
    let event = event_of(raw);
    let payload = payload.as_deref().map(|p| payload_of(Some(p)));
    match C::observe(&event, payload.as_ref()) {
        Ok(transition) => transition,
        Err(e) => panic!("{e}"),
    }
}

/// Runs a context's `leave`; used by [`export_context!`].
#[doc(hidden)]
pub fn __leave<C: Context>(
    raw: bindings::sandrail::guardrail::types::Event,
    payload: &str,
) -> Option<String> {
    let event = event_of(raw);
    match C::leave(&event, &payload_of(Some(payload))) {
        Ok(holds) => holds,
        Err(e) => panic!("{e}"),
    }
}

/// Checks a raw config; used by [`export_configurable!`].
#[doc(hidden)]
pub fn __check<C: Configure>(config: &str) -> Result<Needs, Vec<Problem>> {
    let config = if config.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(config)
            .map_err(|e| vec![Problem::new(None, format!("the config is not JSON: {e}"))])?
    };
    C::check(&config)
}

/// Runs a guardrail on one raw event; used by [`export!`].
#[doc(hidden)]
pub fn __run<G: Guardrail>(raw: bindings::sandrail::guardrail::types::Event) -> Verdict {
    let event = event_of(raw);
    match G::evaluate(&event) {
        Ok(verdict) => verdict,
        // A failed guardrail traps, so the host reports it as a failure rather than
        // reading a verdict the guardrail never reached.
        Err(e) => panic!("{e}"),
    }
}
