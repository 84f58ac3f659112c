//! How the binaries are linked (no PIE for `sandrail`, the hot functions
//! together, `sandrail-hook` static), and the test guardrails' paths handed to
//! the integration tests. The guardrails themselves are built by the
//! sandrail-builtins crate's build script.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));

    link_without_pie();
    link_hot_code_together(&manifest_dir);
    link_forwarder_statically(&out_dir);
    hand_test_guardrails_to_the_tests();
}

/// The test guardrails are built beside the bundled ones, by sandrail-builtins'
/// build script, which passes their paths up as `links` metadata. Tests find
/// them as e.g. env!("SANDRAIL_TEST_GUARDRAIL_PROBE").
fn hand_test_guardrails_to_the_tests() {
    const FROM_BUILTINS: &str = "DEP_SANDRAIL_BUILTINS_TEST_GUARDRAIL_";
    // vars_os: a variable of the user's that is not UTF-8 must not fail the build.
    for (var, path) in env::vars_os() {
        let (Some(var), Some(path)) = (var.to_str(), path.to_str()) else {
            continue;
        };
        if let Some(name) = var.strip_prefix(FROM_BUILTINS) {
            println!("cargo:rustc-env=SANDRAIL_TEST_GUARDRAIL_{name}={path}");
        }
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
