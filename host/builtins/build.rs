//! Builds the bundled guardrails (plugins/) as wasm32-wasip2 components and
//! writes the table that embeds them; also builds the test guardrails under
//! tests/guardrails/ when they are present, and hands their paths on (as `links`
//! metadata) to the `sandrail` crate's build script, which gives them to the
//! integration tests.
//!
//! The guardrails are built by a nested `cargo build` with its own target directory
//! inside OUT_DIR, so the outer build's lock is not contended.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

const TARGET: &str = "wasm32-wasip2";
const PROFILE: &str = "guardrail";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("host/builtins/ sits two levels under the workspace root")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));

    let plugins = crates_under(&root.join("plugins"));
    let test_guardrails = crates_under(&root.join("tests/guardrails"));

    for dir in ["plugins", "guest-sdk", "wit", "tests/guardrails"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );

    let all: Vec<&(String, PathBuf)> = plugins.iter().chain(&test_guardrails).collect();
    let target_dir = out_dir.join("guardrails");
    build(&root, &target_dir, &all);
    let artifact = |name: &str| {
        target_dir
            .join(TARGET)
            .join(PROFILE)
            .join(format!("{}.wasm", name.replace('-', "_")))
    };

    let mut generated = String::from(
        "/// The bundled guardrails: (name, component bytes, sha256 of the bytes).\n\
         pub static BUILTINS: &[(&str, &[u8], &str)] = &[\n",
    );
    for (name, _) in &plugins {
        let path = artifact(name);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let sha256: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        writeln!(
            generated,
            "    ({name:?}, include_bytes!({:?}), {sha256:?}),",
            path.display().to_string()
        )
        .expect("writing to a String");
    }
    generated.push_str("];\n");
    std::fs::write(out_dir.join("builtins.rs"), generated).expect("write builtins.rs");

    // The `sandrail` crate's build script reads these as
    // DEP_SANDRAIL_BUILTINS_TEST_GUARDRAIL_<NAME> and sets
    // SANDRAIL_TEST_GUARDRAIL_<NAME> for the tests, e.g. the probe's path.
    for (name, _) in &test_guardrails {
        let key = name.to_uppercase().replace('-', "_");
        println!(
            "cargo::metadata=TEST_GUARDRAIL_{key}={}",
            artifact(name).display()
        );
    }
}

/// The (package name, directory) of every crate directly under `dir`. A guardrail
/// crate is named after its directory.
fn crates_under(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut crates: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .filter_map(|p| Some((p.file_name()?.to_str()?.to_owned(), p)))
        .collect();
    crates.sort();
    crates
}

fn build(root: &Path, target_dir: &Path, crates: &[&(String, PathBuf)]) {
    if crates.is_empty() {
        return;
    }
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .arg("build")
        .arg("--target")
        .arg(TARGET)
        .arg("--profile")
        .arg(PROFILE)
        .arg("--target-dir")
        .arg(target_dir);
    for (name, _) in crates {
        cmd.arg("-p").arg(name);
    }
    // What the outer build set for itself must not leak into the guardrails' build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the guardrails: {e}"));
    if !status.success() {
        panic!(
            "building the guardrails for {TARGET} failed (see above). \
             If the target is missing, run `rustup target add {TARGET}`."
        );
    }
}
