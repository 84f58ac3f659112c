//! Lists the bundled guardrails' names (the crates under plugins/), so that a
//! config naming `builtin:<name>` is checked here without the guardrails being
//! built: their bytes are embedded by the `sandrail` crate's build script,
//! which builds the same crates.

use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let plugins = manifest_dir.join("../../plugins");
    println!("cargo:rerun-if-changed={}", plugins.display());
    let mut names: Vec<String> = std::fs::read_dir(&plugins)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("Cargo.toml").is_file())
                .filter_map(|p| Some(p.file_name()?.to_str()?.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut generated =
        String::from("/// The bundled guardrails' names, sorted.\npub const NAMES: &[&str] = &[\n");
    for name in &names {
        writeln!(generated, "    {name:?},").expect("writing to a String");
    }
    generated.push_str("];\n");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    std::fs::write(out_dir.join("bundled.rs"), generated).expect("write bundled.rs");
}
