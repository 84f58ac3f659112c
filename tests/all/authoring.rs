//! The guardrail author's loop: `sandrail new` writes a project that builds,
//! `cargo test` runs its stateful code natively on the SDK's in-memory host, and
//! `sandrail test` runs its cases against the built component in the real sandbox
//! — in Rust, Python and JavaScript.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::*;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ sits in the root")
        .to_path_buf()
}

/// One target directory for every scaffolded crate, so the SDK and its
/// dependencies are compiled once per checkout, not once per test run.
fn scaffold_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("scaffold-target")
}

/// `cargo` in `dir` with the scaffold target directory, offline: the
/// workspace's build already fetched everything a scaffold depends on.
fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(dir)
        .args(args)
        .arg("--offline")
        .env("CARGO_TARGET_DIR", scaffold_target())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET");
    cmd.output().expect("run cargo")
}

fn sandrail_in(project: &Project, dir: &Path, args: &[&str]) -> Run {
    let mut cmd = project.cmd();
    cmd.current_dir(dir).args(args);
    Run(cmd.output().expect("run sandrail"))
}

/// The round trip: `new` outside the repository, then `cargo test` (native, with
/// state and flags), the component build and `sandrail test`; then the same
/// cases made wrong, and a run with no case, each failing with what was wrong.
#[test]
fn new_builds_tests_natively_and_passes_its_cases_outside_the_repository() {
    // Two cargo builds load both cores: alone, so no other test's guardrail
    // misses its deadline meanwhile.
    let project = Project::alone();
    let dir = project.root.path().join("no-aws-keys");
    let made = project.run(&["new", "no-aws-keys", "--path", &dir.display().to_string()]);
    assert!(made.ok(), "{}", made.stderr());
    assert!(
        made.stdout()
            .contains("cargo build --release --target wasm32-wasip2")
    );
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    let sdk = root().join("guest-sdk");
    assert!(
        manifest.contains(&format!(
            "sandrail-guest = {{ path = {:?} }}",
            sdk.display().to_string()
        )),
        "outside the checkout the SDK is named by its absolute path:\n{manifest}"
    );
    // The versions the workspace resolved, so the build needs nothing new.
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).expect("lock");

    let native = cargo(&dir, &["test"]);
    let out = String::from_utf8_lossy(&native.stdout);
    assert!(
        native.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&native.stderr)
    );
    assert!(out.contains("test result: ok. 4 passed"), "{out}");

    let built = cargo(&dir, &["build", "--release", "--target", "wasm32-wasip2"]);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    // The cases name the component where a plain `cargo build` leaves it.
    let artifact = Path::new("target/wasm32-wasip2/release/no_aws_keys.wasm");
    std::fs::create_dir_all(dir.join(artifact.parent().expect("dir"))).expect("dir");
    std::fs::copy(
        scaffold_target().join("wasm32-wasip2/release/no_aws_keys.wasm"),
        dir.join(artifact),
    )
    .expect("component");

    let passed = sandrail_in(&project, &dir, &["test"]);
    assert!(passed.ok(), "{}\n{}", passed.stdout(), passed.stderr());
    assert!(
        passed.stdout().contains("2 cases: 2 passed, 0 failed"),
        "{}",
        passed.stdout()
    );
    assert!(
        passed
            .stdout()
            .contains("verdicts exercised: pass 1, violation 4")
    );
    let json = sandrail_in(&project, &dir, &["test", "--json"]);
    let report: Value = serde_json::from_str(&json.stdout()).expect("JSON report");
    assert_eq!(report["passed"], 2);
    assert_eq!(report["failed"], 0);

    // A wrong expectation fails the run and says what was expected and got.
    let cases = std::fs::read_to_string(dir.join("cases.toml")).expect("cases");
    std::fs::write(
        dir.join("wrong.toml"),
        cases.replace("keys-seen = 1 }", "keys-seen = 7 }"),
    )
    .expect("wrong cases");
    let failed = sandrail_in(&project, &dir, &["test", "wrong.toml"]);
    assert_eq!(failed.code(), Some(1), "{}", failed.stdout());
    let out = failed.stdout();
    assert!(
        out.contains("FAIL  wrong.toml: a key in a write is refused"),
        "{out}"
    );
    assert!(out.contains("state.keys-seen: expected 7"), "{out}");
    assert!(out.contains("got 1"), "{out}");
    assert!(out.contains("1 failed"), "{out}");

    // A run that runs no case is a failure, not a pass.
    let first_entry = cases.split("[[case]]").next().expect("entry");
    std::fs::write(dir.join("empty.toml"), first_entry).expect("empty cases");
    let empty = sandrail_in(&project, &dir, &["test", "empty.toml"]);
    assert_eq!(empty.code(), Some(1));
    assert!(empty.stderr().contains("no case ran"), "{}", empty.stderr());
}

/// A case file that cannot be run says why, and runs nothing.
#[test]
fn a_case_file_that_cannot_run_says_what_is_wrong() {
    let project = Project::new();
    let dir = project.dir();
    let entry = "[[guardrail]]\nname = \"g\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\n";
    for (text, said) in [
        (
            format!("{entry}[[case]]\nname = \"x\"\n[[case.event]]\ntool = \"Bash\"\n"),
            "expects nothing",
        ),
        (
            format!(
                "{entry}[[case]]\nname = \"x\"\n[[case.event]]\ntool = \"Bash\"\nexpect = {{ decision = \"refuse\" }}\n"
            ),
            "decision `refuse` is none of allow, deny, ask, block",
        ),
        (
            format!("{entry}data = [\"../secret\"]\n"),
            "must lie beside the file or below it",
        ),
        (
            "[[case]]\nname = \"x\"\n".to_owned(),
            "no [[guardrail]] entry",
        ),
    ] {
        std::fs::write(dir.join("cases.toml"), &text).expect("cases");
        let run = project.run(&["test"]);
        assert_eq!(run.code(), Some(1), "{text}");
        assert!(run.stderr().contains(said), "{text}\n{}", run.stderr());
    }
    std::fs::remove_file(dir.join("cases.toml")).expect("rm");
    let none = project.run(&["test"]);
    assert_eq!(none.code(), Some(1));
    assert!(
        none.stderr().contains("no cases.toml here"),
        "{}",
        none.stderr()
    );
}

/// An event gives the short form or a whole payload, not both: the payload is
/// sent as it is, so an `event` (or `tool`, `input`, …) beside it would be
/// dropped and the case would judge another event than it names. Nor does an
/// `input` without its `tool` pass unsent. Each is refused before anything
/// runs, naming the case and what to do.
#[test]
fn a_case_giving_both_the_short_form_and_a_payload_is_refused() {
    let project = Project::new();
    let dir = project.dir();
    let entry = "[[guardrail]]\nname = \"g\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\", \"Stop\"]\n";
    let payload = "payload = { hook_event_name = \"PreToolUse\", tool_name = \"Bash\", tool_input = { command = \"ls\" } }\n";
    for (event, said) in [
        (
            format!("event = \"Stop\"\n{payload}"),
            "both `payload` and `event` are given",
        ),
        (
            format!("tool = \"Bash\"\ninput = {{ command = \"git push --force\" }}\n{payload}"),
            "both `payload` and `tool`, `input` are given",
        ),
        (
            "event = \"PostToolUse\"\ninput = { command = \"ls\" }\n".to_owned(),
            "`input` is given without `tool`",
        ),
    ] {
        let text = format!(
            "{entry}[[case]]\nname = \"mixed forms\"\n[[case.event]]\ntool = \"Bash\"\ninput = {{ command = \"ls\" }}\nexpect = {{ decision = \"allow\" }}\n[[case.event]]\n{event}expect = {{ decision = \"allow\" }}\n"
        );
        std::fs::write(dir.join("cases.toml"), &text).expect("cases");
        let run = project.run(&["test"]);
        assert_eq!(run.code(), Some(1), "{text}\n{}", run.stdout());
        let err = run.stderr();
        assert!(
            err.contains("case 1 (mixed forms): event 2: ") && err.contains(said),
            "{text}\n{err}"
        );
        if said.starts_with("both") {
            assert!(err.contains("use one or the other"), "{err}");
        }
        assert!(
            !run.stdout().contains("ok "),
            "nothing runs: {}",
            run.stdout()
        );
    }
}

/// Every bundled guardrail's own cases, and the authoring guide's worked
/// examples, pass through the real binary.
#[test]
fn the_bundled_guardrails_and_the_guides_examples_pass_their_cases() {
    let project = Project::new();
    let plugins = root().join("plugins");
    let mut files: Vec<String> = std::fs::read_dir(&plugins)
        .expect("plugins")
        .filter_map(|e| e.ok().map(|e| e.path().join("cases.toml")))
        .filter(|p| p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    assert_eq!(
        files.len(),
        7,
        "every bundled guardrail has cases: {files:?}"
    );
    let examples = root().join("docs/examples").display().to_string();
    let mut args = vec!["test", "--json", &examples];
    args.extend(files.iter().map(String::as_str));
    let run = project.run(&args);
    let report: Value = serde_json::from_str(&run.stdout()).expect("JSON report");
    assert!(run.ok(), "{report:#}\n{}", run.stderr());
    assert_eq!(report["failed"], 0);
    assert!(report["ran"].as_u64().expect("ran") >= 18, "{report:#}");
    for verdict in ["pass", "note", "violation", "held", "enter", "stay"] {
        assert!(
            report["verdicts"][verdict].as_u64().is_some(),
            "{verdict}: {report:#}"
        );
    }
}

/// The sha256 of the component `guardrail` ran from in the project's last
/// receipt, if it ran.
fn ran_from(project: &Project, guardrail: &str) -> Option<String> {
    let receipt = project.last_receipt();
    receipt["guardrails"]
        .as_array()?
        .iter()
        .find(|g| g["name"] == guardrail)?["sha256"]
        .as_str()
        .map(str::to_owned)
}

/// What runs when an author rebuilds a pinned guardrail's component, as the
/// guide's section 4 says: every session, running or new, keeps the copy of
/// the component that was accepted; `sandrail pin` alone changes nothing that
/// runs; after `sandrail trust` new sessions run the rebuilt one, and running
/// sessions from their next event.
#[test]
fn a_rebuilt_component_runs_only_once_pinned_and_trusted() {
    let project = Project::new();
    let plugins = project.dir().join("plugins");
    std::fs::create_dir_all(&plugins).expect("dir");
    let component = plugins.join("probe.wasm");
    std::fs::copy(PROBE, &component).expect("copy");
    let old = sandrail::sha256_hex(&std::fs::read(PROBE).expect("probe"));
    // Another valid component with the same behavior: which one ran is told by
    // the receipt's hash.
    let rebuilt = std::fs::read(root().join("tests/fixtures/probe-0.1.0.wasm")).expect("fixture");
    let new = sandrail::sha256_hex(&rebuilt);
    project.config(
        "[[guardrail]]\nname = \"probe\"\nsource = \"plugins/probe.wasm\"\nevents = [\"PreToolUse\"]\non_error = \"deny\"\n[guardrail.config]\naction = \"note\"\nvalue = \"probe judged\"\n",
    );
    assert!(project.run(&["pin"]).ok());
    project.trust();
    let judged = |session: &str| {
        let run = project.hook(&bash(session, "ls"));
        assert_eq!(run.context(), "[probe] probe judged", "{}", run.stderr());
        (ran_from(&project, "probe").expect("the probe ran"), run)
    };
    assert_eq!(judged("running").0, old);

    // Rebuilt: the running session and a new one keep the accepted copy, and
    // the new one is told what to run.
    std::fs::write(&component, &rebuilt).expect("rebuild");
    assert_eq!(judged("running").0, old);
    let (ran, run) = judged("new-before-pin");
    assert_eq!(ran, old);
    assert!(
        run.stderr().contains("its component's bytes")
            && run.stderr().contains("run `sandrail trust`"),
        "{}",
        run.stderr()
    );

    // Pinned again, not yet trusted: still the accepted copy.
    assert!(project.run(&["pin"]).ok());
    assert_eq!(judged("new-after-pin").0, old);
    assert_eq!(judged("running").0, old);

    // Trusted: new sessions run the rebuilt component, and so does the running
    // one from its next event.
    project.trust();
    assert_eq!(judged("new-after-trust").0, new);
    assert_eq!(judged("running").0, new);
}

/// The examples under examples/ are what `sandrail new` writes there, so the
/// scaffold and the documented examples cannot drift apart.
#[test]
fn the_examples_are_what_new_writes() {
    let project = Project::new();
    for (name, lang, files) in [
        (
            "rust-guardrail",
            "rust",
            &["Cargo.toml", "src/lib.rs", "cases.toml", "README.md"][..],
        ),
        (
            "python-guardrail",
            "python",
            &[
                "logic.py",
                "test_logic.py",
                "app.py",
                "cases.toml",
                "README.md",
            ][..],
        ),
        (
            "js-guardrail",
            "js",
            &["app.js", "package.json", "cases.toml", "README.md"][..],
        ),
    ] {
        // Written at the same depth inside the checkout (target/new-…), so the
        // relative paths to the SDK and the contract match.
        let scratch = tempfile::Builder::new()
            .prefix("new-")
            .tempdir_in(root().join("target"))
            .expect("scratch in the checkout");
        let dir = scratch.path().to_path_buf();
        let run = project.run(&[
            "new",
            name,
            "--lang",
            lang,
            "--path",
            &dir.display().to_string(),
        ]);
        assert!(run.ok(), "{}", run.stderr());
        for file in files {
            let written = std::fs::read_to_string(dir.join(file)).expect("written");
            let example = std::fs::read_to_string(root().join("examples").join(name).join(file))
                .expect("example");
            assert_eq!(
                written, example,
                "examples/{name}/{file} differs from what `sandrail new` writes"
            );
        }
    }
}

/// Where a guardrail toolchain is, or `None` (the test skips, unless
/// `SANDRAIL_REQUIRE_POLYGLOT=1`, which `.ci/run` sets; `tests/run` installs
/// them).
fn toolchain(name: &str, candidates: &[PathBuf], install: &str) -> Option<PathBuf> {
    let found = candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .or_else(|| {
            std::env::var_os("PATH").and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join(name))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        let required = std::env::var_os("SANDRAIL_REQUIRE_POLYGLOT").is_some_and(|v| v == "1");
        assert!(!required, "{name} is not installed: {install}");
        eprintln!("skipped: {name} is not installed ({install})");
    }
    found
}

/// A copy of an example's files in `project`, where it is built and tested.
fn copy_example(project: &Project, example: &str) -> PathBuf {
    let dir = project.root.path().join(example);
    std::fs::create_dir_all(&dir).expect("dir");
    for entry in std::fs::read_dir(root().join("examples").join(example)).expect("example") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            std::fs::copy(&path, dir.join(path.file_name().expect("name"))).expect("copy");
        }
    }
    dir
}

/// Builds an example in a copy of its directory and runs its cases there.
fn build_and_test(example: &str, build: impl FnOnce(&Path) -> std::process::Output) {
    // The toolchain and the first compile of a large component load the machine.
    let project = Project::alone();
    let dir = copy_example(&project, example);
    build_and_test_in(&project, &dir, build);
}

/// Builds the example copied to `dir` and runs its cases there.
fn build_and_test_in(
    project: &Project,
    dir: &Path,
    build: impl FnOnce(&Path) -> std::process::Output,
) {
    let built = build(dir);
    assert!(
        built.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    let run = sandrail_in(project, dir, &["test", "--json"]);
    let report: Value = serde_json::from_str(&run.stdout()).expect("JSON report");
    assert!(run.ok(), "{report:#}\n{}", run.stderr());
    assert_eq!(report["passed"], 2, "{report:#}");
    assert_eq!(report["verdicts"]["violation"], 4, "{report:#}");
    assert_eq!(report["verdicts"]["pass"], 1, "{report:#}");
}

/// How many tests the Python example's test_logic.py holds: a run that
/// collects fewer (a file not found, a test renamed out of pytest's sight) fails.
const PYTHON_NATIVE_TESTS: usize = 4;

/// `pytest -q` in `dir`: its exit code and what it printed.
fn pytest(pytest: &Path, dir: &Path) -> (Option<i32>, String) {
    let out = Command::new(pytest)
        .current_dir(dir)
        .args(["-q", "-p", "no:cacheprovider"])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run pytest");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The Python guardrail's loop: its decision (logic.py) passes its native tests
/// under pytest, without the component's bindings, and fails them when the
/// decision is broken; the component built from that same module passes its
/// cases in the real sandbox.
#[test]
fn the_python_guardrails_logic_passes_pytest_natively_and_its_component_its_cases() {
    let venv = root().join("target/polyglot/venv/bin");
    let (Some(pytest_bin), Some(componentize_py)) = (
        toolchain(
            "pytest",
            &[venv.join("pytest")],
            "tests/run installs it into target/polyglot/venv",
        ),
        toolchain(
            "componentize-py",
            &[venv.join("componentize-py")],
            "tests/run installs it into target/polyglot/venv",
        ),
    ) else {
        return;
    };
    let project = Project::alone();
    let dir = copy_example(&project, "python-guardrail");

    // Natively: the bindings (wit_world) exist only inside the component, so
    // the decision module must not need them.
    let logic = std::fs::read_to_string(dir.join("logic.py")).expect("logic.py");
    assert!(!logic.contains("wit_world"), "{logic}");
    let (code, out) = pytest(&pytest_bin, &dir);
    assert_eq!(code, Some(0), "{out}");
    let summary = format!("{PYTHON_NATIVE_TESTS} passed in ");
    assert!(
        out.lines().any(|l| l.starts_with(&summary)) && !out.contains("failed"),
        "{out}"
    );

    // The same tests catch a broken decision: a key pattern that matches nothing.
    let broken = project.root.path().join("broken");
    std::fs::create_dir_all(&broken).expect("dir");
    for file in ["logic.py", "test_logic.py"] {
        std::fs::copy(dir.join(file), broken.join(file)).expect("copy");
    }
    std::fs::write(
        broken.join("logic.py"),
        logic.replace("AKIA[0-9A-Z]{16}", "NEVER[0-9A-Z]{16}"),
    )
    .expect("broken logic");
    let (code, out) = pytest(&pytest_bin, &broken);
    assert_eq!(code, Some(1), "pytest passed a broken decision:\n{out}");
    assert!(out.contains("failed"), "{out}");

    // The component, built from the same module, in the real sandbox.
    build_and_test_in(&project, &dir, |dir| {
        Command::new(componentize_py)
            .current_dir(dir)
            .arg("-d")
            .arg(root().join("wit"))
            .args([
                "-w",
                "guardrail",
                "componentize",
                "app",
                "-o",
                "guardrail.wasm",
            ])
            .output()
            .expect("run componentize-py")
    });
}

/// The JavaScript guardrail (ComponentizeJS) refuses what the Rust one does.
#[test]
fn the_javascript_guardrail_refuses_what_it_should() {
    let Some(componentize_js) = toolchain(
        "componentize-js",
        &[root().join("examples/js-guardrail/node_modules/.bin/componentize-js")],
        "tests/run installs it: npm ci --prefix examples/js-guardrail",
    ) else {
        return;
    };
    build_and_test("js-guardrail", |dir| {
        Command::new(componentize_js)
            .current_dir(dir)
            .arg("app.js")
            .arg("--wit")
            .arg(root().join("wit"))
            .args([
                "--world-name",
                "guardrail",
                "--disable",
                "stdio",
                "random",
                "clocks",
                "http",
                "fetch-event",
            ])
            .args(["-o", "guardrail.wasm"])
            .output()
            .expect("run componentize-js")
    });
}

/// A case passes only on events that were judged: a component that cannot be
/// loaded, a config the hook could not use, or a payload the hook cannot read
/// must not pass as "allow".
#[test]
fn a_case_whose_guardrail_never_judged_does_not_pass() {
    let project = Project::new();
    let dir = project.dir();
    std::fs::write(dir.join("broken.wasm"), b"not a component").expect("component");
    let case = "[[case]]\nname = \"ls is allowed\"\n[[case.event]]\ntool = \"Bash\"\ninput = { command = \"ls\" }\nexpect = { decision = \"allow\" }\n";
    let entry = |source: &str, extra: &str| {
        format!(
            "[[guardrail]]\nname = \"g\"\nsource = \"{source}\"\nevents = [\"PreToolUse\"]\n{extra}{case}"
        )
    };
    for (text, said) in [
        (entry("broken.wasm", ""), "a judgement from `g`"),
        (entry("missing.wasm", ""), "does not exist"),
        (
            entry(PROBE, "bogus_field = 1\n"),
            "unknown field `bogus_field`",
        ),
        (
            entry(
                PROBE,
                "[guardrail.config]\naction = \"note\"\nvalue = \"x\"\n",
            )
            .replace(
                "tool = \"Bash\"\ninput = { command = \"ls\" }",
                "payload = { hook_event_name = 7 }",
            ),
            "no receipt",
        ),
    ] {
        std::fs::write(dir.join("cases.toml"), &text).expect("cases");
        let run = project.run(&["test"]);
        assert_eq!(run.code(), Some(1), "{text}\n{}", run.stdout());
        let said_somewhere = format!("{}{}", run.stdout(), run.stderr());
        assert!(said_somewhere.contains(said), "{text}\n{said_somewhere}");
    }
}
