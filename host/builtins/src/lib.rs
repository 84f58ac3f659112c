//! The bundled guardrails (the crates under plugins/), built as components by
//! this crate's build script and embedded: their names, which a config may name
//! as `builtin:<name>`, and their bytes, which the runtime loads.

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// The component bytes of a bundled guardrail.
pub fn get(name: &str) -> Option<&'static [u8]> {
    get_with_sha256(name).map(|(bytes, _)| bytes)
}

/// The component bytes of a bundled guardrail and their sha256, computed at build
/// time so that loading a builtin costs no hashing.
pub fn get_with_sha256(name: &str) -> Option<(&'static [u8], &'static str)> {
    BUILTINS
        .iter()
        .find(|(builtin, _, _)| *builtin == name)
        .map(|(_, bytes, sha256)| (*bytes, *sha256))
}

/// Whether `name` is a bundled guardrail.
pub fn is_bundled(name: &str) -> bool {
    BUILTINS.iter().any(|(builtin, _, _)| *builtin == name)
}

/// The names of every bundled guardrail, sorted.
pub fn names() -> Vec<&'static str> {
    BUILTINS.iter().map(|(name, _, _)| *name).collect()
}

/// The bundled guardrails that export `configure` (checked against their bytes by
/// the runtime's tests): `check-config` runs their check.
pub const CONFIGURABLE: &[&str] = &[
    "contracts",
    "dotforge",
    "session-budget",
    "verify-artifact-produced",
];

/// Those of them whose check can answer which state-costing facts their config
/// reads, asked at events; the others only validate their config, so a config
/// with none of these never reads a component to ask.
pub const ANSWERS_NEEDS: &[&str] = &["contracts", "verify-artifact-produced"];
