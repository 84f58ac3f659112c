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
            "srt is not installed: tests/run installs it (tests/setup-sandbox.sh: @anthropic-ai/sandbox-runtime from npm, with bubblewrap, ripgrep and socat)"
        );
        eprintln!(
            "skipped: srt (@anthropic-ai/sandbox-runtime) is not installed; tests/run installs it"
        );
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
    copy_program(BIN, &binary);
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

/// Claude Code's sandbox settings as the sandbox runtime reads them: Claude
/// Code's path forms (`./` the project, `~/` the home directory, `//` an
/// absolute path) made absolute, the project and the temporary directory
/// writable as Claude Code makes them, and the allowed domains.
fn srt_settings_of(claude: &Value, project: &Path, home: &Path, tmp: &Path) -> String {
    let absolute = |p: &str| -> String {
        if let Some(rest) = p.strip_prefix("~/") {
            home.join(rest).display().to_string()
        } else if let Some(rest) = p.strip_prefix("//") {
            format!("/{rest}")
        } else if let Some(rest) = p.strip_prefix("./") {
            project.join(rest).display().to_string()
        } else {
            p.to_owned()
        }
    };
    let list = |pointer: &str| -> Vec<String> {
        claude
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(absolute)
            .collect()
    };
    let mut allow_write = vec![project.display().to_string(), tmp.display().to_string()];
    allow_write.extend(list("/sandbox/filesystem/allowWrite"));
    json!({
        "network": {
            "allowedDomains": claude["sandbox"]["network"]["allowedDomains"],
            "deniedDomains": []
        },
        "filesystem": {
            "denyRead": [],
            "allowWrite": allow_write,
            "denyWrite": list("/sandbox/filesystem/denyWrite")
        }
    })
    .to_string()
}

/// What the hook settings of the next session hold: each file's sha256, or
/// absent.
fn hook_settings(project: &Path, home: &Path) -> Vec<String> {
    [
        project.join(".claude/settings.json"),
        project.join(".claude/settings.local.json"),
        home.join(".claude/settings.json"),
    ]
    .iter()
    .map(|p| look(p))
    .collect()
}

/// Ways an agent rewrote the hook settings the next session starts from,
/// without the sandbox: plain git from a branch it built (`B`, whose settings
/// set disableAllHooks and add a settings.local.json), a patch, an archive,
/// `cp`, `perl`, `xargs`, and a script of its own.
const NEXT_SESSION_SPELLINGS: &[&str] = &[
    "git merge -q --ff-only B",
    "git checkout -q B",
    "git switch -q B",
    "git cherry-pick B",
    "git pull -q . B",
    "git rebase -q B",
    "git apply evil.patch",
    "git archive B .claude | tar -x",
    "printf '{\"disableAllHooks\": true}' > /tmp/sandrail-x-$$ && cp /tmp/sandrail-x-$$ .claude/settings.json",
    "tar -cf - -C .git/.. .claude | tar -xf - -C . --transform 's/settings.json/settings.local.json/'",
    "perl -0pi -e 's/\"hooks\"/\"hookz\"/' .claude/settings.local.json",
    "echo .claude/settings.json | xargs -I{} cp evil.json {}",
    "python3 -c \"import os; [open(os.path.expanduser(p), 'w').write('{\\\"disableAllHooks\\\": true}') for p in ('.claude/settings.json', '.claude/settings.local.json', '~/.claude/settings.json')]\"",
];

/// A person-only command driven through a pty under the sandbox: it got as far
/// as its prompt, then said its change could not be saved, and did not claim
/// `done` (what it prints on success), exiting 1.
#[track_caller]
fn assert_reached_the_prompt_and_saved_nothing(out: &std::process::Output, done: &str) {
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("to confirm:"),
        "the driver reached the prompt: {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("could not be saved") && !said.contains(done),
        "{said}"
    );
}

fn git_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git")
}

/// A project set up by `sandrail init` in a git repository, with a branch `B`
/// that switches the hooks off, `evil.patch` doing the same and `evil.json`
/// beside it; the home directory with user settings of its own.
fn initialised(project: &Project) -> (PathBuf, PathBuf) {
    let dir = project.dir();
    let home = project.root.path().to_path_buf();
    std::fs::create_dir_all(home.join(".claude")).expect("~/.claude");
    std::fs::write(home.join(".claude/settings.json"), "{}\n").expect("user settings");
    git_in(&dir, &["init", "-q", "-b", "main"]);
    let init = project.run(&["init"]);
    assert!(init.ok(), "{}{}", init.stdout(), init.stderr());
    // The sandbox runtime stands in for Claude Code's sandbox only where the
    // settings turn it on, with no way out for a command.
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".claude/settings.json")).expect("settings"),
    )
    .expect("json");
    assert_eq!(written["sandbox"]["enabled"], true, "{written:#}");
    assert_eq!(written["sandbox"]["allowUnsandboxedCommands"], false);
    project.trust();
    git_in(&dir, &["add", ".claude/settings.json", "sandrail.toml"]);
    git_in(&dir, &["commit", "-q", "-m", "sandrail"]);
    git_in(&dir, &["checkout", "-q", "-b", "B"]);
    // The committed file switches the hooks off (settings.local.json, where
    // init registered this machine's binary, is kept out of the repository).
    let off = "{\"disableAllHooks\": true}\n";
    std::fs::write(dir.join(".claude/settings.json"), off).expect("B");
    git_in(&dir, &["add", ".claude/settings.json"]);
    git_in(&dir, &["commit", "-q", "-m", "hooks off"]);
    let patch = git_in(&dir, &["format-patch", "-1", "--stdout"]);
    git_in(&dir, &["checkout", "-q", "main"]);
    std::fs::write(dir.join("evil.patch"), patch.stdout).expect("patch");
    std::fs::write(dir.join("evil.json"), off).expect("evil.json");
    (dir, home)
}

/// Back to main, whatever a spelling left half done.
fn reset_repository(dir: &Path) {
    for abort in [
        ["merge", "--abort"],
        ["cherry-pick", "--abort"],
        ["rebase", "--abort"],
    ] {
        git_in(dir, &abort);
    }
    git_in(dir, &["checkout", "-q", "-f", "main"]);
    git_in(dir, &["reset", "-q", "--hard", "main"]);
}

/// What `sandrail init` sets up holds against the agent rewriting the next
/// session's hook settings: under the sandbox runtime with the settings it
/// wrote, every spelling leaves the project's settings, its local settings and
/// the user's unchanged; without the sandbox, on a copy, each changes them.
#[test]
fn init_keeps_the_next_sessions_hook_settings_from_git_cp_and_scripts() {
    let project = Project::new();
    let Some(srt) = sandbox_runtime(&project) else {
        return;
    };
    let (dir, home) = initialised(&project);
    let claude: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".claude/settings.json")).expect("settings"),
    )
    .expect("json");
    let tmp = project.root.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let settings = project.root.path().join("srt-init.json");
    std::fs::write(&settings, srt_settings_of(&claude, &dir, &home, &tmp)).expect("srt");
    let before = hook_settings(&dir, &home);
    for (i, spelling) in NEXT_SESSION_SPELLINGS.iter().enumerate() {
        // Without the sandbox, on a copy of the project and home.
        let copy = tempfile::tempdir().expect("copy");
        let status = Command::new("cp")
            .arg("-a")
            .arg(&dir)
            .arg(copy.path().join("project"))
            .status()
            .expect("cp");
        assert!(status.success());
        std::fs::create_dir_all(copy.path().join(".claude")).expect("home");
        std::fs::copy(
            home.join(".claude/settings.json"),
            copy.path().join(".claude/settings.json"),
        )
        .expect("user settings");
        let control_dir = copy.path().join("project");
        let control_before = hook_settings(&control_dir, copy.path());
        let _ = Command::new("bash")
            .args(["-c", spelling])
            .current_dir(&control_dir)
            .env("HOME", copy.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("bash");
        assert_ne!(
            hook_settings(&control_dir, copy.path()),
            control_before,
            "#{i} `{spelling}` changes nothing even without the sandbox"
        );
        // Under the sandbox, on the real project: nothing changes (and the
        // sandbox did run it: it leaves a mark where it may write).
        let ran = dir.join(format!(".ran-{i}"));
        let out = Command::new(&srt)
            .arg("-s")
            .arg(&settings)
            .args(["-c", &format!("{spelling}\ntouch {}", ran.display())])
            .current_dir(&dir)
            .env("HOME", &home)
            .env("TMPDIR", &tmp)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("srt");
        assert_eq!(
            hook_settings(&dir, &home),
            before,
            "`{spelling}` changed the next session's hook settings under the sandbox: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            ran.exists(),
            "the sandbox did not run `{spelling}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::remove_file(&ran).expect("the mark");
        reset_repository(&dir);
    }
    // And the hook still refuses a force push.
    let run = project.hook(&bash("s1", "git push --force origin main"));
    assert!(run.deny_reason().is_some(), "{}", run.stderr());
}

/// Everyday work under the sandbox `init` sets up: a commit, an npm install
/// from the registry, a pip install into a virtual environment, a cargo build
/// that fetches a crate. Each reaches its registry through the sandbox's proxy
/// and writes its cache under the home directory.
#[test]
fn everyday_work_runs_under_the_sandbox_init_sets_up() {
    let project = Project::new();
    let Some(srt) = sandbox_runtime(&project) else {
        return;
    };
    let (dir, home) = initialised(&project);
    let claude: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".claude/settings.json")).expect("settings"),
    )
    .expect("json");
    let tmp = project.root.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let settings = project.root.path().join("srt-everyday.json");
    std::fs::write(&settings, srt_settings_of(&claude, &dir, &home, &tmp)).expect("srt");
    let rustup = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))
        .expect("rustup's home");
    let work: &[(&str, &str)] = &[
        (
            "git",
            "echo hello > notes.txt && git add notes.txt && git commit -q -m notes && git log --oneline | head -1",
        ),
        (
            "npm",
            "mkdir -p web && cd web && npm init -y >/dev/null && npm install --no-audit --no-fund is-number@7.0.0",
        ),
        (
            "python3",
            "python3 -m venv .venv && .venv/bin/pip install -q --disable-pip-version-check six==1.16.0 && .venv/bin/python -c 'import six'",
        ),
        (
            "cargo",
            "cargo new -q --vcs none app && cd app && echo 'itoa = \"1\"' >> Cargo.toml && cargo build -q && cargo test -q",
        ),
    ];
    for (tool, line) in work {
        let out = Command::new(&srt)
            .arg("-s")
            .arg(&settings)
            .args(["-c", line])
            .current_dir(&dir)
            .env("HOME", &home)
            .env("TMPDIR", &tmp)
            .env("RUSTUP_HOME", &rustup)
            .env("CARGO_HOME", home.join(".cargo"))
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("srt");
        assert!(
            out.status.success(),
            "{tool} under the sandbox: `{line}` failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A pseudo-terminal the agent drives, reading the confirmation code off the
/// screen and typing it back: without the sandbox it passes for a person (the
/// threat model says so); under the sandbox `init` sets up, `sandrail trust`
/// cannot write its acceptance, says so and exits 1, and nothing is accepted.
#[test]
fn trust_driven_through_a_pty_under_the_sandbox_changes_nothing_and_says_so() {
    let project = Project::new();
    let Some(srt) = sandbox_runtime(&project) else {
        return;
    };
    let (dir, home) = initialised(&project);
    let claude: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".claude/settings.json")).expect("settings"),
    )
    .expect("json");
    let tmp = project.root.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let settings = project.root.path().join("srt-trust.json");
    std::fs::write(&settings, srt_settings_of(&claude, &dir, &home, &tmp)).expect("srt");
    project.write_config(
        "[settings]\ngate = \"observe\"\n[[guardrail]]\nname = \"destructive-commands\"\nsource = \"builtin:destructive-commands\"\nevents = [\"PreToolUse\"]\n",
    );
    let accepted = || {
        std::fs::read_dir(project.state_dir().join("policy/projects"))
            .expect("accepted policies")
            .filter_map(Result::ok)
            .map(|e| look(&e.path()))
            .collect::<Vec<_>>()
    };
    let before = accepted();
    let out = driven_through_a_pty(&project, &srt, &settings, &home, &tmp, &["trust"]);
    assert_reached_the_prompt_and_saved_nothing(&out, "Accepted policy");
    assert_eq!(accepted(), before, "nothing was accepted");
    let run = project.hook(&bash("s-pty", "git push --force origin main"));
    assert!(run.deny_reason().is_some(), "{}", run.stderr());
}

/// Runs `sandrail ARGS…` under the sandbox runtime with `settings`, on a
/// pseudo-terminal a program drives: it reads the confirmation code off the
/// screen and types it back, as an agent's script could. Its stdout holds what
/// the terminal showed.
fn driven_through_a_pty(
    project: &Project,
    srt: &Path,
    settings: &Path,
    home: &Path,
    tmp: &Path,
    args: &[&str],
) -> std::process::Output {
    let argv: Vec<&str> = std::iter::once(BIN).chain(args.iter().copied()).collect();
    let driver = format!(
        r#"
import os, pty, re, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv({bin:?}, {argv:?})
seen = b""
answered = False
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
    m = re.search(rb"Type (\w+) to confirm: ", seen)
    if m and not answered:
        os.write(fd, m.group(1) + b"\n")
        answered = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#,
        bin = BIN
    );
    project
        .with_env(Command::new(srt))
        .arg("-s")
        .arg(settings)
        .args(["--", "python3", "-c", &driver])
        .env("HOME", home)
        .env("TMPDIR", tmp)
        .output()
        .expect("srt")
}

/// The same for `sandrail flag set`: under the sandbox `init` sets up, a run
/// the agent drives through a pty reaches the prompt, cannot write the
/// session's state, says so and exits 1, and the flag stays unset.
#[test]
fn flag_set_driven_through_a_pty_under_the_sandbox_changes_nothing_and_says_so() {
    let project = Project::new();
    let Some(srt) = sandbox_runtime(&project) else {
        return;
    };
    let (dir, home) = initialised(&project);
    project.reconfigure(&format!(
        "[[guardrail]]\nname = \"reader\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\nmatcher = \"Grep\"\n[guardrail.flags]\ncheck = [\"ready\"]\n[guardrail.config]\naction = \"flag-check\"\nkey = \"ready\"\n"
    ));
    let grep = payload(
        "PreToolUse",
        "s-flag-pty",
        json!({"tool_name": "Grep", "tool_input": {"pattern": "fn main"}}),
    );
    assert_eq!(
        project.hook(&grep).context(),
        "[reader] ready is set: false"
    );
    let claude: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".claude/settings.json")).expect("settings"),
    )
    .expect("json");
    let tmp = project.root.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let settings = project.root.path().join("srt-flag.json");
    std::fs::write(&settings, srt_settings_of(&claude, &dir, &home, &tmp)).expect("srt");
    let out = driven_through_a_pty(
        &project,
        &srt,
        &settings,
        &home,
        &tmp,
        &["flag", "set", "ready", "--session", "s-flag-pty"],
    );
    assert_reached_the_prompt_and_saved_nothing(&out, "Set flag");
    assert_eq!(
        project.hook(&grep).context(),
        "[reader] ready is set: false"
    );
}

/// A hook runs outside the sandbox, so a program it runs from `PATH` must not
/// be one the sandboxed agent could have put there: a `git` planted in a
/// directory others can write, first on `PATH`, is not run when a command
/// makes the hook look up a branch; the system's own is.
#[test]
fn the_hook_runs_no_program_from_a_directory_the_agent_can_write() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    git_in(&project.dir(), &["init", "-q", "-b", "main"]);
    git_in(
        &project.dir(),
        &["commit", "-q", "--allow-empty", "-m", "start"],
    );
    let planted = project.root.path().join("planted-bin");
    std::fs::create_dir(&planted).expect("dir");
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let marker = project.root.path().join("escaped");
    let git = planted.join("git");
    std::fs::write(
        &git,
        format!(
            "#!/bin/sh\ntouch {}\nexec /usr/bin/git \"$@\"\n",
            marker.display()
        ),
    )
    .expect("plant");
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut path = vec![planted];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut cmd = project.cmd();
    cmd.env("PATH", std::env::join_paths(path).expect("PATH"));
    let mut renamed: Value =
        serde_json::from_slice(&bash("s1", "git branch -M main other")).expect("json");
    renamed["cwd"] = json!(project.dir());
    let run = project.hook_with(cmd, renamed.to_string().as_bytes());
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert!(!marker.exists(), "the planted git ran outside the sandbox");
}

/// What the checkpoint store holds: each file's path and sha256.
fn store_contents(state: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![state.join("checkpoints")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n != "lock") {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.push(format!(
                    "{} {}",
                    path.display(),
                    sandrail::sha256_hex(&bytes)
                ));
            }
        }
    }
    out.sort();
    out
}

/// The ways an agent's command could rewrite or delete the checkpoints that
/// would bring its damage back. `$STORE` is the state directory's checkpoints.
const STORE_SPELLINGS: &[&str] = &[
    "rm -rf \"$STORE\"",
    "find \"$STORE\" -type f -delete",
    "for f in $(find \"$STORE\" -type f -path '*objects*'); do chmod u+w \"$f\"; echo x > \"$f\"; done",
    "for f in \"$STORE\"/*/records/*.json; do printf '{}' > \"$f\"; done",
    "mv \"$STORE\" \"$STORE.gone\"",
    "python3 -c 'import os,shutil,sys; shutil.rmtree(os.environ[\"STORE\"])'",
    "d=$(dirname \"$STORE\"); cd \"$d\" && rm -rf ./c*s",
];

/// Under the sandbox `init` sets up, the agent's commands can neither rewrite
/// nor delete the checkpoint store (each spelling does, run without it on a
/// copy), and `sandrail undo` still brings the project back.
#[test]
fn the_agents_commands_cannot_rewrite_or_delete_the_checkpoint_store_under_the_sandbox() {
    let project = Project::new();
    let Some(srt) = sandbox_runtime(&project) else {
        return;
    };
    let (dir, home) = initialised(&project);
    std::fs::write(dir.join("work.txt"), "hours of work\n").expect("write");
    let mut call: Value = serde_json::from_slice(&bash("s1", "rm work.txt")).expect("json");
    call["cwd"] = json!(dir);
    let judged = project.hook(call.to_string().as_bytes());
    assert!(judged.ok(), "{}", judged.stderr());
    let before = store_contents(&project.state_dir());
    assert!(before.iter().any(|f| f.contains("/records/")), "{before:?}");
    let claude: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".claude/settings.json")).expect("settings"),
    )
    .expect("json");
    let tmp = project.root.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let settings = project.root.path().join("srt-store.json");
    std::fs::write(&settings, srt_settings_of(&claude, &dir, &home, &tmp)).expect("srt");
    let store = project.state_dir().join("checkpoints");
    for spelling in STORE_SPELLINGS {
        // Without the sandbox, on a copy of the state: the store changes.
        let copy = tempfile::tempdir().expect("copy");
        let status = Command::new("cp")
            .arg("-a")
            .arg(project.state_dir())
            .arg(copy.path().join("state"))
            .status()
            .expect("cp");
        assert!(status.success());
        let control = copy.path().join("state");
        let control_before = store_contents(&control);
        let _ = Command::new("bash")
            .args(["-c", spelling])
            .env("STORE", control.join("checkpoints"))
            .output()
            .expect("bash");
        assert_ne!(
            store_contents(&control),
            control_before,
            "`{spelling}` changes nothing even without the sandbox"
        );
        // Under the sandbox: nothing changes, though the sandbox ran it.
        let ran = dir.join(".ran");
        let out = Command::new(&srt)
            .arg("-s")
            .arg(&settings)
            .args(["-c", &format!("{spelling}\ntouch {}", ran.display())])
            .current_dir(&dir)
            .env("HOME", &home)
            .env("TMPDIR", &tmp)
            .env("STORE", &store)
            .output()
            .expect("srt");
        assert_eq!(
            store_contents(&project.state_dir()),
            before,
            "`{spelling}` changed the checkpoint store under the sandbox: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            ran.exists(),
            "the sandbox did not run `{spelling}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::remove_file(&ran).expect("the mark");
    }
    // The damage the checkpoint was taken for, brought back.
    std::fs::remove_file(dir.join("work.txt")).expect("rm");
    let undone = project.at_terminal(&["undo"], None);
    assert!(undone.ok(), "{}", undone.stdout());
    assert_eq!(
        std::fs::read_to_string(dir.join("work.txt")).expect("read"),
        "hours of work\n"
    );
}
