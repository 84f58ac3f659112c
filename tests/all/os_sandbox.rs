//! `sandrail protect`: the harness's own OS sandbox keeps sandrail's paths from
//! the agent however a write is spelled. Anthropic's sandbox runtime (`srt`, the
//! engine of Claude Code's Bash sandbox) runs each spelling with the entries
//! `sandrail protect` wrote; each one, run without the sandbox on a copy of the
//! project, does change what it aims at.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::*;

#[test]
fn protect_merges_into_the_settings_and_status_says_whether_it_is_in_force() {
    let project = Project::new();
    let settings = project.dir().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().expect("dir")).expect("dir");
    std::fs::write(
        &settings,
        json!({
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "sandrail hook"}]}]},
            "permissions": {"allow": ["Bash(cargo test:*)"]}
        })
        .to_string(),
    )
    .expect("settings");
    project.hook(&bash("s1", "ls"));
    let status = project.run(&["status", "--session", "s1"]);
    assert!(
        status
            .stdout()
            .contains("os sandbox (claude): not in force (the Bash sandbox is off)"),
        "{}",
        status.stdout()
    );
    let dry = project.run(&["protect", "--harness", "claude", "--dry-run"]);
    assert!(dry.ok(), "{}", dry.stderr());
    assert!(dry.stdout().contains("\"denyWrite\""), "{}", dry.stdout());
    let untouched: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("read")).expect("json");
    assert_eq!(
        untouched["sandbox"],
        Value::Null,
        "--dry-run writes nothing"
    );

    let protect = || {
        let mut cmd = project.cmd();
        cmd.env("PATH", project.path_with_sandbox_tools())
            .args(["protect", "--harness", "claude"]);
        Run(cmd.output().expect("sandrail protect"))
    };
    let run = protect();
    assert!(run.ok(), "{}", run.stderr());
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("read")).expect("json");
    assert_eq!(
        written["hooks"]["Stop"][0]["hooks"][0]["command"],
        "sandrail hook"
    );
    assert_eq!(written["permissions"]["allow"][0], "Bash(cargo test:*)");
    assert_eq!(written["sandbox"]["enabled"], true);
    assert_eq!(written["sandbox"]["allowUnsandboxedCommands"], false);
    let deny: Vec<&str> = written["sandbox"]["filesystem"]["denyWrite"]
        .as_array()
        .expect("denyWrite")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for wanted in [
        "./sandrail.toml",
        "./sandrail.lock",
        "./.sandrail/audit",
        "~/state",
    ] {
        assert!(deny.contains(&wanted), "{wanted} in {deny:?}");
    }
    let rules = written["permissions"]["deny"].to_string();
    assert!(
        rules.contains("Edit(/sandrail.toml)") && rules.contains("Edit(~/state/**)"),
        "{rules}"
    );
    let again = protect();
    assert!(
        again.stdout().contains("Already set up"),
        "{}",
        again.stdout()
    );
    let status = project.run(&["status", "--session", "s1"]);
    assert!(
        status.stdout().contains("os sandbox (claude): in force"),
        "{}",
        status.stdout()
    );
    // The agent does not get to run it.
    let refused = project.hook(&bash("s1", "sandrail protect --harness claude"));
    assert!(
        refused
            .deny_reason()
            .is_some_and(|r| r.contains("sandrail refused `sandrail protect`")),
        "{}",
        refused.stdout()
    );
}

/// The sandbox runtime, if it can run here: `None` (with the reason on stderr)
/// where it is not installed (unless CI requires it) or user namespaces are not
/// available.
fn sandbox_runtime(project: &Project) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("srt"))
            .find(|p| p.is_file())
    });
    let required = std::env::var_os("SANDRAIL_REQUIRE_SANDBOX").is_some_and(|v| v == "1");
    let Some(srt) = found else {
        assert!(
            !required,
            "srt is not installed: `npm install -g @anthropic-ai/sandbox-runtime` (with bubblewrap, ripgrep and socat) is what .ci/run does"
        );
        eprintln!("skipped: srt (@anthropic-ai/sandbox-runtime) is not installed");
        return None;
    };
    let settings = project.root.path().join("srt-probe.json");
    std::fs::write(&settings, srt_settings(&[], &[])).expect("settings");
    let probe = Command::new(&srt)
        .arg("-s")
        .arg(&settings)
        .args(["-c", "echo SRT_OK"])
        .current_dir(project.dir())
        .output()
        .expect("run srt");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&probe.stdout),
        String::from_utf8_lossy(&probe.stderr)
    );
    if said.trim() == "SRT_OK" {
        return Some(srt);
    }
    let no_namespaces = [
        "namespace",
        "CAP_SETFCAP",
        "Operation not permitted",
        "ENOSPC",
    ]
    .iter()
    .any(|m| said.contains(m));
    assert!(no_namespaces, "srt cannot run here: {said}");
    eprintln!("skipped: user namespaces are not available here, so no OS sandbox can run: {said}");
    None
}

fn srt_settings(deny_write: &[String], allow_write: &[String]) -> String {
    json!({
        "network": {"allowedDomains": [], "deniedDomains": []},
        "filesystem": {"denyRead": [], "allowWrite": allow_write, "denyWrite": deny_write}
    })
    .to_string()
}

/// Sandrail's paths in one tree, as the agent would aim at them.
struct Tree {
    project: PathBuf,
    state: PathBuf,
    binary: PathBuf,
}

impl Tree {
    /// What every protected path holds: content hashes, a directory's mode and
    /// entries, or nothing.
    fn snapshot(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for relative in [
            "sandrail.toml",
            "sandrail.lock",
            ".claude/settings.json",
            "guards/probe.wasm",
            "guards/words.txt",
        ] {
            out.push((relative.to_owned(), look(&self.project.join(relative))));
        }
        out.push(("state".to_owned(), look(&self.state)));
        out.push(("binary".to_owned(), look(&self.binary)));
        out
    }

    /// The variables a spelling's command line uses.
    fn env(&self, scratch: &Path) -> Vec<(&'static str, String)> {
        vec![
            ("STATE", self.state.display().to_string()),
            ("BIN", self.binary.display().to_string()),
            ("X", scratch.join("settings.json").display().to_string()),
            ("TAR", scratch.join("evil.tar").display().to_string()),
            ("HL", scratch.join("hardlink").display().to_string()),
        ]
    }
}

fn look(path: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::symlink_metadata(path) {
        Err(_) => "absent".to_owned(),
        Ok(meta) if meta.is_dir() => {
            let mut names: Vec<String> = std::fs::read_dir(path)
                .map(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            format!("dir {:o} {names:?}", meta.permissions().mode() & 0o777)
        }
        Ok(_) => sandrail::sha256_hex(&std::fs::read(path).unwrap_or_default()),
    }
}

/// The write spellings that got past shell analysis, each a bash command run in
/// the project with `$STATE`, `$BIN`, `$X` (a settings.json elsewhere), `$TAR`
/// (an archive holding a sandrail.toml) and `$HL` (where a hard link goes).
const SPELLINGS: &[&str] = &[
    ": > sandrail.toml",
    "echo '[protect]' > sandrail.toml",
    "cp \"$X\" .claude/",
    "cp -t .claude \"$X\"",
    "mv \"$X\" sandrail.lock",
    "install \"$X\" sandrail.toml",
    "rsync \"$X\" sandrail.toml",
    "tar -C . -xf \"$TAR\"",
    "sed -ri s/a/b/ sandrail.toml",
    "perl -pi -e s/a/b/ sandrail.toml",
    "shopt -s failglob; echo x > sandrail.t?ml",
    "git checkout -q HEAD~1 -- .",
    "cd .claude && rm settings.json",
    "rm -rf .claude",
    "echo x >> guards/probe.wasm",
    "echo x >> guards/words.txt",
    "chmod 777 \"$STATE\"",
    "rm -rf \"$STATE\"",
    "mv \"$STATE\" \"$STATE.old\"",
    "echo x >> \"$BIN\"",
    // A hard link made in one call, written through in the next.
    "ln sandrail.toml \"$HL\"",
    "echo x >> \"$HL\"",
];

#[test]
fn write_spellings_leave_protected_files_unchanged_under_the_sandbox() {
    let project = Project::new();
    let Some(srt) = sandbox_runtime(&project) else {
        return;
    };
    let root = project.root.path().to_path_buf();
    let real = lay_out(&project, &root.join("bin"));
    // `sandrail protect`, run by the copy of the binary the tree names.
    let protect = project
        .with_env(Command::new(&real.binary))
        .args(["protect", "--harness", "claude"])
        .output()
        .expect("sandrail protect");
    assert!(
        protect.status.success(),
        "{}",
        String::from_utf8_lossy(&protect.stderr)
    );
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(real.project.join(".claude/settings.json")).expect("settings"),
    )
    .expect("json");
    assert_eq!(written["sandbox"]["enabled"], true);
    // Claude Code's path forms, as the sandbox runtime reads them: `./` is the
    // project (srt runs there), `~/` the home directory.
    let deny_write: Vec<String> = written["sandbox"]["filesystem"]["denyWrite"]
        .as_array()
        .expect("denyWrite")
        .iter()
        .filter_map(Value::as_str)
        .map(|p| match p.strip_prefix("~/") {
            Some(rest) => root.join(rest).display().to_string(),
            None => p.to_owned(),
        })
        .collect();
    let settings = root.join("srt.json");
    std::fs::write(
        &settings,
        srt_settings(
            &deny_write,
            &[root.display().to_string(), "/tmp".to_owned()],
        ),
    )
    .expect("srt settings");
    let scratch = root.join("scratch");
    std::fs::create_dir_all(&scratch).expect("scratch");
    make_scratch(&scratch);

    let before = real.snapshot();
    let mut changed_uncontained = 0;
    for (i, spelling) in SPELLINGS.iter().enumerate() {
        // Without the sandbox, on a copy: the spelling does what it aims at.
        let control_root = root.join(format!("control-{i}"));
        let control = copy_tree(&real, &root, &control_root);
        let control_scratch = control_root.join("scratch");
        make_scratch(&control_scratch);
        let control_before = control.snapshot();
        if *spelling == "echo x >> \"$HL\"" {
            run_bash(
                &control.project,
                "ln sandrail.toml \"$HL\"",
                &control.env(&control_scratch),
            );
        }
        run_bash(&control.project, spelling, &control.env(&control_scratch));
        if control.snapshot() != control_before {
            changed_uncontained += 1;
        } else {
            assert_eq!(
                *spelling, "ln sandrail.toml \"$HL\"",
                "{spelling} changes nothing even unsandboxed"
            );
        }
        // With it, on the real tree: nothing changes.
        make_scratch(&scratch);
        let out = Command::new(&srt)
            .arg("-s")
            .arg(&settings)
            .arg("--")
            .args(["bash", "-c", spelling])
            .current_dir(&real.project)
            .env("HOME", &root)
            .envs(real.env(&scratch))
            .output()
            .expect("run srt");
        let after = real.snapshot();
        assert_eq!(
            after,
            before,
            "`{spelling}` changed a protected path under the sandbox: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(changed_uncontained, SPELLINGS.len() - 1);
    // The protected files stay readable.
    let read = Command::new(&srt)
        .arg("-s")
        .arg(&settings)
        .args(["--", "cat", "sandrail.toml"])
        .current_dir(&real.project)
        .env("HOME", &root)
        .output()
        .expect("run srt");
    assert!(
        String::from_utf8_lossy(&read.stdout).contains("[[guardrail]]"),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    // And sandrail still judges as it did.
    let run = project.hook(&bash("s1", "git push --force"));
    assert!(run.deny_reason().is_some(), "{}", run.stderr());
}

/// The project: a config with a component and a data file, a lock, hook
/// settings, a git history where the config was once different; a state
/// directory with a session in it; and a copy of the binary at `bin`.
fn lay_out(project: &Project, bin: &Path) -> Tree {
    let dir = project.dir();
    std::fs::create_dir_all(dir.join("guards")).expect("dir");
    std::fs::copy(PROBE, dir.join("guards/probe.wasm")).expect("component");
    std::fs::write(dir.join("guards/words.txt"), "alpha\n").expect("data");
    std::fs::create_dir_all(dir.join(".claude")).expect("dir");
    std::fs::write(
        dir.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "sandrail hook"}]}]}}).to_string(),
    )
    .expect("settings");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("git")
    };
    std::fs::write(dir.join("sandrail.toml"), "[settings]\n").expect("old config");
    git(&["init", "-q"]);
    git(&["add", "sandrail.toml"]);
    git(&["commit", "-q", "-m", "old"]);
    project.config(
        "[[guardrail]]\nname = \"git\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash\"\n\n\
         [[guardrail]]\nname = \"probe\"\nsource = \"guards/probe.wasm\"\nevents = [\"PreToolUse\"]\nmatcher = \"Read\"\ndata = [\"guards/words.txt\"]\n"
    );
    git(&["add", "sandrail.toml"]);
    git(&["commit", "-q", "-m", "new"]);
    assert!(project.run(&["pin"]).ok());
    project.hook(&bash("s1", "ls"));
    std::fs::create_dir_all(bin).expect("bin");
    let binary = bin.join("sandrail");
    std::fs::copy(BIN, &binary).expect("copy the binary");
    Tree {
        project: dir,
        state: project.state_dir(),
        binary,
    }
}

/// A copy of the tree under `to`, for a spelling to run against unsandboxed.
fn copy_tree(tree: &Tree, root: &Path, to: &Path) -> Tree {
    std::fs::create_dir_all(to).expect("control root");
    for part in ["project", "state", "bin"] {
        let status = Command::new("cp")
            .args(["-a"])
            .arg(root.join(part))
            .arg(to.join(part))
            .status()
            .expect("cp -a");
        assert!(status.success());
    }
    Tree {
        project: to.join("project"),
        state: to.join("state"),
        binary: to.join("bin").join(tree.binary.file_name().expect("name")),
    }
}

/// What the spellings copy from: a settings.json and an archive holding a
/// sandrail.toml.
fn make_scratch(scratch: &Path) {
    std::fs::create_dir_all(scratch.join("t")).expect("scratch");
    std::fs::write(
        scratch.join("settings.json"),
        "{\"disableAllHooks\": true}\n",
    )
    .expect("x");
    std::fs::write(
        scratch.join("t/sandrail.toml"),
        "[protect]\nenabled = false\n",
    )
    .expect("t");
    let status = Command::new("tar")
        .arg("-C")
        .arg(scratch.join("t"))
        .arg("-cf")
        .arg(scratch.join("evil.tar"))
        .arg("sandrail.toml")
        .status()
        .expect("tar");
    assert!(status.success());
}

fn run_bash(dir: &Path, command: &str, env: &[(&'static str, String)]) {
    let _ = Command::new("bash")
        .args(["-c", command])
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("bash");
}
