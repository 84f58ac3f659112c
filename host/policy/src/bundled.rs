//! The bundled guardrails a config may name as `builtin:<name>`: their names
//! only. The component bytes are the binary's (`sandrail::builtins`), built from
//! the same crates under plugins/.

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// Whether `name` is a bundled guardrail.
pub fn is_bundled(name: &str) -> bool {
    NAMES.contains(&name)
}

/// The names of every bundled guardrail.
pub fn names() -> Vec<&'static str> {
    NAMES.to_vec()
}
