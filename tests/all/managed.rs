//! Managed mode for real: `sandrail serve --system` runs as a service user, the
//! hooks as an agent user, and the agent user can neither read nor change the
//! state, receipts or policy, nor signal the server, nor loosen anything through
//! the socket; its force push is still refused.
//!
//! It needs root (to run processes as two other users). CI runs as root and sets
//! SANDRAIL_REQUIRE_MANAGED=1, so there it fails rather than skips.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::json;

use crate::support::*;

const POLICY: &str = r#"
[settings]
on_error = "deny"

[[guardrail]]
name = "destructive-commands"
source = "builtin:destructive-commands"
events = ["PreToolUse"]
matcher = "Bash"
on_error = "deny"
"#;

/// Two users with no entry in the password database: numeric ids the kernel
/// enforces like any other, and nothing of the machine's is changed.
struct Users {
    service: u32,
    agent: u32,
}

impl Users {
    fn unused() -> Users {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let taken = |uid: u32| {
            passwd
                .lines()
                .any(|l| l.split(':').nth(2) == Some(&uid.to_string()))
        };
        let base = 43_000 + (std::process::id() % 500) * 2;
        let service = (base..).find(|u| !taken(*u)).expect("a free uid");
        let agent = (service + 1..).find(|u| !taken(*u)).expect("a free uid");
        Users { service, agent }
    }
}

/// The machine as `contrib/sandrail.service` and the install steps leave it,
/// under a temporary root.
struct Machine {
    top: tempfile::TempDir,
    users: Users,
}

impl Machine {
    fn set_up() -> Machine {
        let top = tempfile::Builder::new()
            .prefix("sandrail-managed-")
            .tempdir()
            .expect("temp dir");
        let machine = Machine {
            top,
            users: Users::unused(),
        };
        mode(machine.top.path(), 0o755);
        // The binary where every user can run it (the build's own directory may
        // be private to root).
        std::fs::create_dir(machine.path("bin")).expect("bin");
        copy_program(BIN, &machine.bin());
        mode(&machine.bin(), 0o755);
        copy_program(HOOK_BIN, &machine.path("bin/sandrail-hook"));
        mode(&machine.path("bin/sandrail-hook"), 0o755);
        // /etc/sandrail: root's, readable by all.
        std::fs::create_dir(machine.path("etc")).expect("etc");
        mode(&machine.path("etc"), 0o755);
        std::fs::write(machine.policy(), POLICY).expect("policy");
        mode(&machine.policy(), 0o644);
        // The service user's directories (StateDirectory=, CacheDirectory=,
        // RuntimeDirectory=).
        for (dir, m) in [("state", 0o700), ("cache", 0o700), ("run", 0o755)] {
            std::fs::create_dir(machine.path(dir)).expect("dir");
            mode(&machine.path(dir), m);
            chown(&machine.path(dir), machine.users.service);
        }
        // The agent's home and project.
        std::fs::create_dir_all(machine.project()).expect("project");
        chown(&machine.path("agent"), machine.users.agent);
        chown(&machine.project(), machine.users.agent);
        // Readable by others, as many homes are: what the server could read of
        // the agent's files must still not decide its policy.
        mode(&machine.path("agent"), 0o755);
        machine
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.top.path().join(rel)
    }

    fn bin(&self) -> PathBuf {
        self.path("bin/sandrail")
    }

    fn policy(&self) -> PathBuf {
        self.path("etc/sandrail.toml")
    }

    fn project(&self) -> PathBuf {
        self.path("agent/project")
    }

    fn socket(&self) -> PathBuf {
        self.path("run/hook.sock")
    }

    /// `sandrail serve --system` as the service user, with systemd's variables.
    fn serve_command(&self, uid: u32) -> Command {
        let mut cmd = Command::new(self.bin());
        cmd.args(["serve", "--system"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("CONFIGURATION_DIRECTORY", self.path("etc"))
            .env("STATE_DIRECTORY", self.path("state"))
            .env("CACHE_DIRECTORY", self.path("cache"))
            .env("RUNTIME_DIRECTORY", self.path("run"))
            .current_dir("/")
            .uid(uid)
            .gid(uid);
        cmd
    }

    fn start_server(&self) -> Served {
        let mut serve = self.serve_command(self.users.service);
        serve.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = busy_retried(|| serve.spawn());
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the serving line");
        assert!(
            line.contains(&format!("unix:{}", self.socket().display())),
            "{line}"
        );
        Served(child)
    }

    /// A command as the agent user, in its project, with the environment
    /// Claude Code's managed hook gives `sandrail hook`.
    fn as_agent(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.path("agent"))
            .env("CLAUDE_PROJECT_DIR", self.project())
            .env("SANDRAIL_SERVE_SOCKET", self.socket())
            .env("SANDRAIL_SERVE_REQUIRED", "1")
            .current_dir(self.project())
            .uid(self.users.agent)
            .gid(self.users.agent);
        cmd
    }

    fn agent_sh(&self, script: &str) -> Output {
        self.as_agent("sh")
            .args(["-c", script])
            .output()
            .expect("sh as the agent")
    }

    /// The managed hook as the agent (`sandrail-hook`, as docs/managed.md
    /// registers it), `payload` on stdin.
    fn agent_hook(&self, payload: &[u8], extra_env: &[(&str, &Path)]) -> Run {
        let mut cmd = self.as_agent(self.path("bin/sandrail-hook"));
        for (name, value) in extra_env {
            cmd.env(name, value);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = busy_retried(|| cmd.spawn());
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(payload)
            .expect("payload");
        Run(child.wait_with_output().expect("hook output"))
    }

    /// `sandrail ARGS` as the agent, pointed at the server's state and policy.
    fn agent_sandrail(&self, args: &[&str]) -> Output {
        let mut cmd = self.as_agent(self.bin());
        cmd.args(args)
            .env("SANDRAIL_STATE_DIR", self.path("state"))
            .env("SANDRAIL_CACHE_DIR", self.path("cache"))
            .env("SANDRAIL_CONFIG", self.policy())
            .stdin(Stdio::null());
        busy_retried(|| cmd.output())
    }

    /// Every file under the state directory, looked at as root.
    fn state_files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, into: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, into);
                } else {
                    into.push(path);
                }
            }
        }
        let mut files = Vec::new();
        walk(&self.path("state"), &mut files);
        files
    }
}

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `start`, again while the copied binary is "busy": a process another
/// test forked while the copy was open for writing holds it until it execs.
fn busy_retried<T>(mut start: impl FnMut() -> std::io::Result<T>) -> T {
    for _ in 0..100 {
        match start() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other.expect("start the copied sandrail"),
        }
    }
    panic!("the copied sandrail stayed busy for 2 s")
}

fn mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).expect("chown");
}

/// Whether this test can run: root, on a machine that lets root take other
/// users' ids. Under SANDRAIL_REQUIRE_MANAGED=1 it must.
fn runnable() -> bool {
    let required = std::env::var_os("SANDRAIL_REQUIRE_MANAGED").is_some_and(|v| v == "1");
    let root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    if !root {
        assert!(
            !required,
            "the managed-mode test runs processes as two users: run it as root"
        );
        eprintln!("skipped: the managed-mode test needs root");
        return false;
    }
    true
}

fn force_push(session: &str) -> Vec<u8> {
    bash(session, "git push --force origin main")
}

fn refused(run: &Run) -> String {
    run.deny_reason().unwrap_or_else(|| {
        panic!(
            "the force push was not refused: {} / {}",
            run.stdout(),
            run.stderr()
        )
    })
}

#[test]
fn the_agent_user_cannot_reach_the_managed_servers_state_policy_or_process() {
    if !runnable() {
        return;
    }
    let machine = Machine::set_up();
    let server = machine.start_server();
    // The agent's project carries a config of its own (one that judges only
    // edits) from before its first session: root's policy is the one in force.
    std::fs::write(
        machine.project().join("sandrail.toml"),
        "[[guardrail]]\nname = \"session-budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\nmatcher = \"Write\"\n",
    )
    .expect("the agent's config");
    chown(
        &machine.project().join("sandrail.toml"),
        machine.users.agent,
    );

    // The agent's force push is refused, and so are the spellings that try to
    // hide it.
    let first = machine.agent_hook(&force_push("managed-1"), &[]);
    assert!(refused(&first).contains("force"), "{}", first.stdout());
    // A harmless command passes.
    machine
        .agent_hook(&bash("managed-1", "git status"), &[])
        .assert_silent();

    // One user holding more connections than the server has (here root,
    // connecting and sending nothing) does not shut another out: each user has
    // a share, and the rest of the first one's are closed at once.
    let held: Vec<_> = (0..300)
        .filter_map(|_| std::os::unix::net::UnixStream::connect(machine.socket()).ok())
        .collect();
    assert!(held.len() > 256, "{} connections", held.len());
    let started = std::time::Instant::now();
    let crowded = machine.agent_hook(&force_push("managed-1"), &[]);
    refused(&crowded);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the agent waited {:?} behind another user's connections",
        started.elapsed()
    );
    drop(held);

    // What the server keeps is the service user's alone.
    let files = machine.state_files();
    let receipts = files
        .iter()
        .find(|f| f.to_string_lossy().contains("receipts"))
        .unwrap_or_else(|| panic!("no receipts among {files:?}"));
    for file in [receipts, &files[0]] {
        let read = machine.agent_sh(&format!("cat '{}'", file.display()));
        assert!(!read.status.success(), "the agent read {}", file.display());
    }
    for attempt in [
        format!("ls '{}'", machine.path("state").display()),
        format!("touch '{}/x'", machine.path("state").display()),
        format!("rm -rf '{}'/*", machine.path("state").display()),
        format!("ls '{}'", machine.path("cache").display()),
        // The policy: rewritten, replaced, or joined by a lock of the agent's.
        format!("echo '' > '{}'", machine.policy().display()),
        format!("mv '{0}' '{0}.old'", machine.policy().display()),
        format!("touch '{}'", machine.path("etc/sandrail.lock").display()),
        // The socket replaced by one of the agent's.
        format!("rm -f '{}'", machine.socket().display()),
        // The server signalled.
        format!("kill -TERM {}", server.0.id()),
        format!("kill -STOP {}", server.0.id()),
    ] {
        let out = machine.agent_sh(&attempt);
        assert!(
            !out.status.success(),
            "the agent user could `{attempt}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        std::fs::read_to_string(machine.policy()).expect("policy"),
        POLICY
    );
    assert!(!machine.path("etc/sandrail.lock").exists());
    assert_eq!(machine.state_files().len(), files.len());

    // The commands that loosen, run by the agent user against the server's
    // state and policy, are refused by the files' owners.
    for args in [
        vec![
            "state",
            "set",
            "k",
            "v",
            "--session",
            "managed-1",
            "--guardrail",
            "destructive-commands",
        ],
        vec!["guardrail", "off", "destructive-commands"],
        vec![
            "guardrail",
            "off",
            "destructive-commands",
            "--session",
            "managed-1",
        ],
        vec!["trust"],
        vec!["flag", "set", "ready", "--session", "managed-1"],
    ] {
        let out = machine.agent_sandrail(&args);
        assert!(
            !out.status.success(),
            "`sandrail {}` succeeded for the agent user: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout)
        );
    }

    // Through the socket: only hook payloads are answered.
    for (method, path, status) in [
        ("GET", "/", "405"),
        ("PUT", "/hook", "405"),
        ("POST", "/trust", "404"),
        ("POST", "/state", "404"),
    ] {
        let mut stream =
            std::os::unix::net::UnixStream::connect(machine.socket()).expect("connect");
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        )
        .expect("request");
        let mut answer = String::new();
        let _ = std::io::Read::read_to_string(&mut stream, &mut answer);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{method} {path}: {answer}"
        );
    }
    let settings_change = payload(
        "ConfigChange",
        "managed-2",
        json!({"source": "project_settings", "file_path": machine.project().join(".claude/settings.json")}),
    );
    let _ = machine.agent_hook(&settings_change, &[]);
    let agent_config = machine.project().join("sandrail.toml");
    let later = machine.agent_hook(
        &force_push("managed-2"),
        &[("SANDRAIL_CONFIG", agent_config.as_path())],
    );
    assert!(refused(&later).contains("force"), "{}", later.stdout());

    // A script the server may not read is not a way past it.
    let hidden =
        machine.agent_sh("printf 'git push --force origin main\\n' > push.sh && chmod 700 push.sh");
    assert!(hidden.status.success(), "{hidden:?}");
    let mut run_it: serde_json::Value =
        serde_json::from_slice(&bash("managed-1", "bash push.sh")).expect("json");
    run_it["cwd"] = json!(machine.project());
    let hidden = machine.agent_hook(&serde_json::to_vec(&run_it).expect("json"), &[]);
    assert!(
        refused(&hidden).contains("cannot be read"),
        "{}",
        hidden.stdout()
    );

    // After all that, the server is still up and still refuses.
    let last = machine.agent_hook(&force_push("managed-1"), &[]);
    refused(&last);
    drop(server);
}

#[test]
fn a_managed_server_will_not_start_on_a_policy_others_can_change_or_as_root() {
    if !runnable() {
        return;
    }
    let machine = Machine::set_up();
    let start = |uid: u32| {
        let mut serve = machine.serve_command(uid);
        serve.stdout(Stdio::null()).stderr(Stdio::piped());
        busy_retried(|| serve.output())
    };
    let as_root = start(0);
    assert!(!as_root.status.success());
    assert!(
        String::from_utf8_lossy(&as_root.stderr).contains("not root"),
        "{}",
        String::from_utf8_lossy(&as_root.stderr)
    );
    // The agent could rewrite a policy open to every user.
    mode(&machine.policy(), 0o666);
    let open = start(machine.users.service);
    let said = String::from_utf8_lossy(&open.stderr);
    assert!(!open.status.success(), "{said}");
    assert!(said.contains("can be written by any user"), "{said}");
    // Or one reached through a link in a directory it owns, even a link that
    // leads back to root's file: it could point it elsewhere at any moment.
    mode(&machine.policy(), 0o644);
    let real = machine.path("etc/real.toml");
    std::fs::rename(machine.policy(), &real).expect("move the policy");
    let theirs = machine.path("agent/link.toml");
    std::os::unix::fs::symlink(&real, &theirs).expect("their link");
    std::os::unix::fs::lchown(
        &theirs,
        Some(machine.users.agent),
        Some(machine.users.agent),
    )
    .expect("chown the link");
    std::os::unix::fs::symlink(&theirs, machine.policy()).expect("root's link");
    let linked = start(machine.users.service);
    let said = String::from_utf8_lossy(&linked.stderr);
    assert!(!linked.status.success(), "{said}");
    assert!(said.contains("not root"), "{said}");
    std::fs::remove_file(machine.policy()).expect("unlink");
    std::fs::rename(&real, machine.policy()).expect("move back");
    // Or one in a directory it owns.
    chown(&machine.path("etc"), machine.users.agent);
    let owned = start(machine.users.service);
    let said = String::from_utf8_lossy(&owned.stderr);
    assert!(!owned.status.success(), "{said}");
    assert!(said.contains("not root"), "{said}");
}

/// Claude Code's managed settings as docs/managed.md writes them, for `events`,
/// each hook forwarding to `socket` (refusing when it does not answer unless
/// `required` is false for that event).
fn managed_settings(events: &[&str], socket: &Path, open: &[&str]) -> serde_json::Value {
    let mut hooks = serde_json::Map::new();
    for event in events {
        let required = if open.contains(event) {
            ""
        } else {
            "SANDRAIL_SERVE_REQUIRED=1 "
        };
        let command = format!(
            "SANDRAIL_SERVE_SOCKET={} {required}/usr/local/bin/sandrail-hook",
            socket.display()
        );
        hooks.insert(
            (*event).to_owned(),
            json!([{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]),
        );
    }
    json!({"allowManagedHooksOnly": true, "hooks": hooks})
}

/// `sandrail doctor --managed`, run as the agent's user, checks the managed
/// settings (root's alone, all nine events forwarded, each refusing when the
/// server does not answer), that the socket answers, and that root's policy is
/// root's alone; and `status` under managed mode does not advise `protect`.
#[test]
fn doctor_checks_the_managed_set_up_from_the_agents_side() {
    if !runnable() {
        return;
    }
    let machine = Machine::set_up();
    let server = machine.start_server();
    let settings = machine.path("etc/managed-settings.json");
    let doctor = |settings: &Path| {
        let mut cmd = machine.as_agent(machine.bin());
        cmd.args(["doctor", "--managed", "--settings"])
            .arg(settings)
            .env("CONFIGURATION_DIRECTORY", machine.path("etc"))
            .stdin(Stdio::null());
        busy_retried(|| cmd.output())
    };
    const NINE: [&str; 9] = [
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
        "Stop",
        "SubagentStop",
        "SessionStart",
        "SessionEnd",
        "PreCompact",
        "ConfigChange",
    ];
    std::fs::write(
        &settings,
        managed_settings(&NINE, &machine.socket(), &[]).to_string(),
    )
    .expect("settings");
    mode(&settings, 0o644);
    let good = doctor(&settings);
    let said = String::from_utf8_lossy(&good.stdout);
    assert!(good.status.success(), "{said}");
    assert!(
        said.contains("every event sandrail handles (9) is forwarded")
            && said.contains("answers hook payloads")
            && said.contains("is root's alone: the server judges by it"),
        "{said}"
    );

    // The seven events the documentation once listed, one of them failing open.
    std::fs::write(
        &settings,
        managed_settings(&NINE[..7], &machine.socket(), &["Stop"]).to_string(),
    )
    .expect("settings");
    let short = doctor(&settings);
    let said = String::from_utf8_lossy(&short.stdout);
    assert_eq!(short.status.code(), Some(1), "{said}");
    assert!(
        said.contains("do not forward PreCompact, ConfigChange")
            && said.contains("the hooks of Stop do not set SANDRAIL_SERVE_REQUIRED=1"),
        "{said}"
    );

    // A settings file the agent's user could write, and a server that is down.
    std::fs::write(
        &settings,
        managed_settings(&NINE, &machine.socket(), &[]).to_string(),
    )
    .expect("settings");
    chown(&settings, machine.users.agent);
    drop(server);
    let open = doctor(&settings);
    let said = String::from_utf8_lossy(&open.stdout);
    assert_eq!(open.status.code(), Some(1), "{said}");
    assert!(
        said.contains("whoever can write it can unregister sandrail")
            && said.contains("the forwarding hooks refuse every event while it does not answer"),
        "{said}"
    );
}
