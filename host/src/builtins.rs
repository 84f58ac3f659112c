//! The bundled guardrails, compiled into the binary by build.rs.

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

/// The names of every bundled guardrail.
pub fn names() -> Vec<&'static str> {
    BUILTINS.iter().map(|(name, _, _)| *name).collect()
}

/// The bundled guardrails that export `configure` (checked against their bytes by
/// a test): `check-config` runs their check.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Source;

    #[test]
    fn the_configurable_list_matches_the_components() {
        for name in names() {
            let prepared = crate::runtime::prepare(&Source::Builtin(name.to_owned()), None)
                .expect("a builtin prepares");
            assert_eq!(
                prepared.configurable,
                CONFIGURABLE.contains(&name),
                "{name}"
            );
        }
    }

    #[test]
    fn the_names_a_config_may_use_are_the_components_embedded() {
        assert_eq!(names(), sandrail_policy::bundled::names());
    }
}
