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

extern crate self as sandrail_guest;

pub mod data;
mod event;
pub mod flags;
pub mod log;
pub mod state;

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
    });
}

#[doc(hidden)]
pub use wit_bindgen as __wit_bindgen;

pub use bindings::sandrail::guardrail::types::Verdict;
pub use state::StateError;

/// A guardrail: judges each event it subscribed to.
pub trait Guardrail {
    /// Judges one event. An `Err` is a failure of the guardrail itself, not a
    /// verdict: the host reports it with the guardrail's name and lets the event
    /// proceed.
    fn evaluate(event: &Event) -> Result<Verdict>;
}

/// What went wrong inside a guardrail.
#[derive(Debug)]
pub struct Error(String);

impl Error {
    pub fn msg(message: impl std::fmt::Display) -> Self {
        Error(message.to_string())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error(format!("JSON: {e}"))
    }
}

impl From<StateError> for Error {
    fn from(e: StateError) -> Self {
        Error(format!("state: {}", e.message()))
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

/// Exports a [`Guardrail`] implementation as the component's `evaluate`.
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

/// Runs a guardrail on one raw event; used by [`export!`].
#[doc(hidden)]
pub fn __run<G: Guardrail>(raw: bindings::sandrail::guardrail::types::Event) -> Verdict {
    let event = match Event::from_raw(raw) {
        Ok(event) => event,
        Err(e) => panic!("sandrail-guest: the host sent an event that does not parse: {e}"),
    };
    state::set_current_turn(event.turn().map(|t| t.id.clone()));
    match G::evaluate(&event) {
        Ok(verdict) => verdict,
        // A failed guardrail traps, so the host reports it as a failure rather than
        // reading a verdict the guardrail never reached.
        Err(e) => panic!("{e}"),
    }
}
