//! Builds the bundled guardrails (plugins/) as wasm32-wasip2 components and embeds
//! them in the binary; also builds the test guardrails under tests/guardrails/ when
//! they are present, for the integration tests.
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
        .parent()
        .expect("host/ sits in the workspace root")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));

    link_without_pie();
    link_hot_code_together(&manifest_dir);
    link_forwarder_statically(&out_dir);

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

    // Tests find their guardrails through these, e.g. env!("SANDRAIL_TEST_GUARDRAIL_PROBE").
    for (name, _) in &test_guardrails {
        let var = name.to_uppercase().replace('-', "_");
        println!(
            "cargo:rustc-env=SANDRAIL_TEST_GUARDRAIL_{var}={}",
            artifact(name).display()
        );
    }
}

/// `sandrail hook` starts once per tool call, so its start-up is on every call's
/// path. As a position-independent executable, the dynamic loader would first
/// relocate some 40,000 pointers (about 200 page faults, most of a warm hook's
/// time outside the guardrails); linked at a fixed address it has none to do.
fn link_without_pie() {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-link-arg-bin=sandrail=-no-pie");
    }
}

/// The C libraries Rust's standard library links on Linux with glibc, each
/// with the static archive(s) it is linked from in `sandrail-hook`.
const STATIC_IN_PLACE_OF: &[(&str, &[&str])] = &[
    ("gcc_s", &["libgcc_eh.a", "libgcc.a"]),
    ("c", &["libc.a", "libgcc.a", "libgcc_eh.a"]),
    ("m", &["libm.a"]),
    ("dl", &["libdl.a"]),
    ("rt", &["librt.a"]),
    ("pthread", &["libpthread.a"]),
    ("util", &["libutil.a"]),
];

/// `sandrail-hook` starts on every tool call and does little else: linked
/// against glibc's shared libraries, the dynamic loader's work (loading and
/// relocating libc and libgcc_s) is most of its time. Statically linked it
/// starts faster than `/bin/true` does. Rust links statically only with
/// `-C target-feature=+crt-static` for the whole build, which proc macros
/// cannot take, so the one binary is linked as a static PIE and each shared
/// library the standard library asks for (`-lc`, `-lgcc_s`, …) is found
/// first as a linker script in OUT_DIR naming the static archives instead.
/// The forwarder resolves no names and no users, so static glibc's NSS
/// caveat does not reach it. Where the archives are not there (no libc6-dev's
/// `libc.a`), another linker is configured or the build is a cross build, it
/// is linked as usual, and the build says so.
fn link_forwarder_statically(out_dir: &Path) {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os != "linux" || target_env != "gnu" {
        return;
    }
    let dynamic_because = if env::var("TARGET").ok() != env::var("HOST").ok() {
        Some("this is a cross build".to_string())
    } else if other_linker_configured() {
        Some("another linker is configured".to_string())
    } else {
        static_library_scripts(&out_dir.join("static-libs")).err()
    };
    match dynamic_because {
        None => {
            println!("cargo:rustc-link-arg-bin=sandrail-hook=-static-pie");
            println!(
                "cargo:rustc-link-arg-bin=sandrail-hook=-L{}",
                out_dir.join("static-libs").display()
            );
        }
        Some(why) => println!(
            "cargo:warning=sandrail-hook is linked dynamically ({why}): it starts about 0.3 ms slower per tool call"
        ),
    }
}

/// Writes `lib<name>.so` into `dir` for each library of [`STATIC_IN_PLACE_OF`]:
/// a linker script naming the static archives `cc` links from.
fn static_library_scripts(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Each archive found once, though several scripts name it.
    let mut found = std::collections::BTreeMap::new();
    for (library, archives) in STATIC_IN_PLACE_OF {
        let mut quoted = Vec::new();
        for archive in *archives {
            if !found.contains_key(archive) {
                found.insert(*archive, archive_path(archive)?);
            }
            quoted.push(format!("\"{}\"", found[archive]));
        }
        let script = format!("GROUP ( {} )\n", quoted.join(" "));
        let path = dir.join(format!("lib{library}.so"));
        std::fs::write(&path, script)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Where the C compiler finds `archive`; an error when it has none (then
/// `cc -print-file-name` prints the bare name back).
fn archive_path(archive: &str) -> Result<String, String> {
    let output = Command::new("cc")
        .arg(format!("-print-file-name={archive}"))
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    let printed = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let path = Path::new(&printed);
    if !output.status.success() || !path.is_absolute() || !path.is_file() {
        return Err(format!("cc has no {archive}"));
    }
    path.canonicalize()
        .map(|p| p.display().to_string())
        .map_err(|e| format!("cannot resolve {printed}: {e}"))
}

/// Places the functions a hook runs (host/link/hot-symbols.txt, written by
/// host/link/generate.sh) next to one another in the release binary. A hook is a
/// new process each time and pays a page fault for every 64 KiB window of code it
/// touches for the first time; scattered over the binary, the same code costs
/// about twice as many. Only where the linker is known to be LLD (Rust's default
/// on x86-64 Linux) and no other linker is configured; names the list no longer
/// matches are skipped.
fn link_hot_code_together(manifest_dir: &Path) {
    let list = manifest_dir.join("link/hot-symbols.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    let target = env::var("TARGET").unwrap_or_default();
    let profile = env::var("PROFILE").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu" || profile != "release" || other_linker_configured() {
        return;
    }
    if list.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=sandrail=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        println!("cargo:rustc-link-arg-bin=sandrail=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether a linker other than Rust's default is configured for the target
/// (then what the link arguments above assume may not hold).
fn other_linker_configured() -> bool {
    let linker_var = format!(
        "CARGO_TARGET_{}_LINKER",
        env::var("TARGET")
            .unwrap_or_default()
            .to_uppercase()
            .replace('-', "_")
    );
    for var in [linker_var.as_str(), "RUSTC_LINKER"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    env::var_os(&linker_var).is_some()
        || env::var_os("RUSTC_LINKER").is_some()
        || env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|flags| flags.contains("linker"))
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
