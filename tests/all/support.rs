//! Shared helpers: a scratch project with its own state and cache directories, the
//! real `sandrail` binary run in it, and real-shaped Claude Code payloads.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_sandrail");
/// The forwarding hook alone (`sandrail-hook`).
pub const HOOK_BIN: &str = env!("CARGO_BIN_EXE_sandrail-hook");
/// The test guardrail; its `config.action` picks what it does.
pub const PROBE: &str = env!("SANDRAIL_TEST_GUARDRAIL_PROBE");

/// One scratch project: a temp dir holding the project, the state and the cache,
/// and a system log of its own that receipts go to.
pub struct Project {
    pub root: tempfile::TempDir,
    syslog: Syslog,
    _machine: MachineShare,
}

/// A datagram socket standing in for `/dev/log`, and what it received.
struct Syslog {
    path: PathBuf,
    received: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Syslog {
    fn listen(path: PathBuf) -> Syslog {
        let socket = std::os::unix::net::UnixDatagram::bind(&path).expect("bind the syslog socket");
        socket
            .set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .expect("timeout");
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let received = received.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 20];
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Ok(n) = socket.recv(&mut buf) {
                        received
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                    }
                }
            });
        }
        Syslog {
            path,
            received,
            stop,
        }
    }
}

impl Drop for Project {
    /// The project's binding to its state directory lives under the account's
    /// home (where no variable moves it): a test leaves none behind.
    fn drop(&mut self) {
        if let Some(record) = sandrail::locations::binding::record_of(&self.dir()) {
            let _ = std::fs::remove_file(record);
        }
    }
}

impl Drop for Syslog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// How a test shares the machine. Guardrails run under wall-clock deadlines, so a
/// test that starts hundreds of processes at once runs alone: the others would
/// otherwise see their guardrails time out for want of CPU.
enum MachineShare {
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code)] RwLockWriteGuard<'static, ()>),
}

static MACHINE: RwLock<()> = RwLock::new(());

impl Project {
    pub fn new() -> Project {
        let share = MachineShare::Shared(MACHINE.read().unwrap_or_else(PoisonError::into_inner));
        Project::with(share)
    }

    /// A project for a test that loads the whole machine: no other test runs meanwhile.
    pub fn alone() -> Project {
        let share = MachineShare::Alone(MACHINE.write().unwrap_or_else(PoisonError::into_inner));
        Project::with(share)
    }

    fn with(share: MachineShare) -> Project {
        let root = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(root.path().join("project")).expect("project dir");
        let syslog = Syslog::listen(root.path().join("syslog.sock"));
        Project {
            root,
            syslog,
            _machine: share,
        }
    }

    pub fn dir(&self) -> PathBuf {
        self.root.path().join("project")
    }

    pub fn state_dir(&self) -> PathBuf {
        self.root.path().join("state")
    }

    pub fn cache_dir(&self) -> PathBuf {
        shared_cache_dir()
    }

    /// The database file holding `session`'s state.
    pub fn session_db(&self, session: &str) -> PathBuf {
        let stem = &sandrail::sha256_hex(session.as_bytes())[..32];
        self.state_dir()
            .join("sessions")
            .join(format!("{stem}.redb"))
    }

    /// Sets the project's policy up as a person does: writes `sandrail.toml`,
    /// then accepts it with `sandrail trust` at a terminal, so this project's
    /// sessions (running ones included) take it from their next event.
    /// A config that cannot be used is written and not accepted, as `trust`
    /// refuses it to a person too.
    #[track_caller]
    pub fn config(&self, text: &str) -> &Self {
        self.write_config(text);
        let run = self.at_terminal(&["trust"], None);
        assert!(
            run.ok() || run.stdout().contains("the config on disk cannot be used"),
            "sandrail trust failed: {}",
            run.stdout()
        );
        self
    }

    /// Writes `sandrail.toml` into the project and nothing else: a change no
    /// person accepted (the agent's, or one still to be trusted).
    pub fn write_config(&self, text: &str) -> &Self {
        std::fs::write(self.dir().join("sandrail.toml"), text).expect("write config");
        self
    }

    /// [`Project::config`] again, for a test that changes the policy.
    #[track_caller]
    pub fn reconfigure(&self, text: &str) -> &Self {
        self.config(text)
    }

    /// `PATH` with stand-ins for what Claude Code's sandbox needs (bubblewrap,
    /// socat, ripgrep) in front: `init` then finds it ready on any machine.
    pub fn path_with_sandbox_tools(&self) -> std::ffi::OsString {
        let tools = self.root.path().join("sandbox-tools");
        std::fs::create_dir_all(&tools).expect("tools dir");
        for tool in ["bwrap", "socat", "rg"] {
            let path = tools.join(tool);
            std::fs::write(&path, "#!/bin/sh\nexit 0\n").expect("tool");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let mut paths = vec![tools];
        paths.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        std::env::join_paths(paths).expect("PATH")
    }

    /// `sandrail init ARGS…` on a machine where the sandbox can run.
    pub fn init(&self, args: &[&str]) -> Run {
        let mut cmd = self.cmd();
        cmd.env("PATH", self.path_with_sandbox_tools())
            .arg("init")
            .args(args);
        Run(cmd.output().expect("run sandrail init"))
    }

    /// A `sandrail` command run in this project.
    pub fn cmd(&self) -> Command {
        self.command(Command::new(BIN))
    }

    /// A `sandrail` command that `sh` starts after running `setup` (such as a
    /// `ulimit`), so the limits it sets are sandrail's.
    pub fn cmd_after(&self, setup: &str) -> Command {
        let mut sh = Command::new("sh");
        sh.args(["-c", &format!("{setup}; exec \"$0\" \"$@\""), BIN]);
        self.command(sh)
    }

    /// `cmd` with this project's directory and environment.
    pub fn with_env(&self, cmd: Command) -> Command {
        self.command(cmd)
    }

    fn command(&self, mut cmd: Command) -> Command {
        cmd.current_dir(self.dir())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.path())
            .env("CLAUDE_PROJECT_DIR", self.dir())
            .env("SANDRAIL_STATE_DIR", self.state_dir())
            .env("SANDRAIL_CACHE_DIR", self.cache_dir())
            .env("SANDRAIL_SYSLOG_SOCKET", &self.syslog.path);
        cmd
    }

    /// Whether `sandrail doctor --json` has a finding of `check` at `level`
    /// whose text contains `said`.
    pub fn doctor_finds(&self, check: &str, level: &str, said: &str) -> bool {
        let doctor = self.run(&["doctor", "--json"]).answer();
        doctor["findings"].as_array().is_some_and(|findings| {
            findings.iter().any(|f| {
                f["check"] == check
                    && f["level"] == level
                    && f["said"].as_str().is_some_and(|s| s.contains(said))
            })
        })
    }

    /// Holds the lock file of `session` with `flock`, as the agent's shell
    /// could, until the returned child is killed (`-o`: the `sleep` flock
    /// starts does not hold the lock, so killing flock lets it go).
    pub fn hold_session_lock(&self, session: &str) -> std::process::Child {
        let lock = self.session_db(session).with_extension("lock");
        let flock = Command::new("flock")
            .arg("-o")
            .arg(&lock)
            .args(["sleep", "30"])
            .spawn()
            .expect("flock (util-linux)");
        std::thread::sleep(std::time::Duration::from_millis(300));
        flock
    }

    /// What the project's system log received so far, one message a line.
    pub fn syslog(&self) -> String {
        // Datagrams sent before a hook exited may still be on their way.
        std::thread::sleep(std::time::Duration::from_millis(100));
        self.syslog
            .received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|m| format!("{m}\n"))
            .collect()
    }

    /// Runs `sandrail hook` with `payload` on stdin.
    pub fn hook(&self, payload: &[u8]) -> Run {
        self.hook_with(self.cmd(), payload)
    }

    pub fn hook_with(&self, cmd: Command, payload: &[u8]) -> Run {
        self.hook_limited(cmd, payload, None)
    }

    /// Runs `sandrail hook --harness HARNESS` with `payload` (in that harness's
    /// dialect) on stdin.
    pub fn hook_as(&self, harness: &str, payload: &[u8]) -> Run {
        self.hook_as_with(self.cmd(), harness, payload)
    }

    pub fn hook_as_with(&self, mut cmd: Command, harness: &str, payload: &[u8]) -> Run {
        cmd.args(["hook", "--harness", harness]);
        self.spawn_hook(cmd, payload, None)
    }

    /// Runs `sandrail hook` with the clock at `now` (RFC 3339).
    pub fn hook_at(&self, now: &str, payload: &[u8]) -> Run {
        let mut cmd = self.cmd();
        cmd.env("SANDRAIL_NOW", now);
        self.hook_with(cmd, payload)
    }

    /// Runs `sandrail hook`, failing the test if it has not finished within `limit`
    /// (killing it first, so a hang cannot stall the suite).
    pub fn hook_within(&self, payload: &[u8], limit: std::time::Duration) -> Run {
        self.hook_limited(self.cmd(), payload, Some(limit))
    }

    fn hook_limited(
        &self,
        mut cmd: Command,
        payload: &[u8],
        limit: Option<std::time::Duration>,
    ) -> Run {
        cmd.arg("hook");
        self.spawn_hook(cmd, payload, limit)
    }

    fn spawn_hook(
        &self,
        mut cmd: Command,
        payload: &[u8],
        limit: Option<std::time::Duration>,
    ) -> Run {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sandrail");
        let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                bytes
            })
        };
        let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
        let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
        let mut stdin = child.stdin.take().expect("stdin");
        // The binary may stop reading early (an oversized payload); that is fine.
        let _ = stdin.write_all(payload);
        drop(stdin);
        let started = std::time::Instant::now();
        let status = loop {
            let Some(limit) = limit else {
                break child.wait().expect("wait for sandrail");
            };
            if let Some(status) = child.try_wait().expect("poll sandrail") {
                break status;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = stderr.join().expect("stderr reader");
                panic!(
                    "sandrail hook still ran after {limit:?}; stderr: {}",
                    String::from_utf8_lossy(&stderr)
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        Run(Output {
            status,
            stdout: stdout.join().expect("stdout reader"),
            stderr: stderr.join().expect("stderr reader"),
        })
    }

    /// Runs `sandrail ARGS…`.
    pub fn run(&self, args: &[&str]) -> Run {
        Run(self.cmd().args(args).output().expect("run sandrail"))
    }

    /// Runs `sandrail ARGS…` as a person at a terminal would: on a pseudo-terminal
    /// (util-linux's `script` makes one), typing `typed` at its confirmation
    /// prompt, or the code the prompt shows when `typed` is `None`. The run's
    /// stdout holds all it printed there.
    pub fn at_terminal(&self, args: &[&str], typed: Option<&str>) -> Run {
        self.at_terminal_with(args, typed, |_| {})
    }

    /// [`Project::at_terminal`], with `setup` applied to the command first (a
    /// working directory, the environment of a terminal).
    pub fn at_terminal_with(
        &self,
        args: &[&str],
        typed: Option<&str>,
        setup: impl FnOnce(&mut Command),
    ) -> Run {
        use std::io::Read;
        let quote = |word: &str| format!("'{}'", word.replace('\'', "'\\''"));
        let line: Vec<String> = std::iter::once(BIN)
            .chain(args.iter().copied())
            .map(quote)
            .collect();
        let mut script = self.command(Command::new("script"));
        setup(&mut script);
        let mut child = script
            .args(["-q", "-e", "-c", &line.join(" "), "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn script (util-linux)");
        let mut stdin = child.stdin.take().expect("stdin");
        let printed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let reader = {
            let printed = printed.clone();
            let mut stdout = child.stdout.take().expect("stdout");
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stdout.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    printed
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend_from_slice(&buf[..n]);
                }
            })
        };
        let started = std::time::Instant::now();
        let mut answered = false;
        let status = loop {
            if let Some(status) = child.try_wait().expect("poll script") {
                break status;
            }
            let text =
                String::from_utf8_lossy(&printed.lock().unwrap_or_else(PoisonError::into_inner))
                    .into_owned();
            if !answered && let Some(prompt) = text.rfind(" to confirm: ") {
                let code = text[..prompt]
                    .rsplit(' ')
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let answer = typed.map_or(code, str::to_owned);
                stdin
                    .write_all(format!("{answer}\n").as_bytes())
                    .expect("type at the prompt");
                answered = true;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "sandrail {args:?} at a terminal did not finish: {text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        drop(stdin);
        let _ = reader.join();
        let printed = printed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Run(Output {
            status,
            stdout: printed,
            stderr: Vec::new(),
        })
    }

    /// `sandrail trust`, confirmed at a terminal: the person accepts the policy on
    /// disk for this project and its running sessions.
    #[track_caller]
    pub fn trust(&self) -> Run {
        let run = self.at_terminal(&["trust"], None);
        assert!(run.ok(), "sandrail trust failed: {}", run.stdout());
        run
    }

    /// The facts document `sandrail facts --session S` prints for a Bash `ls` in
    /// that session: its counters as they stand.
    pub fn session_facts(&self, session: &str) -> Value {
        let run = self
            .cmd()
            .args(["facts", "--session", session])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                child
                    .stdin
                    .take()
                    .expect("stdin")
                    .write_all(&bash(session, "ls"))?;
                child.wait_with_output()
            })
            .expect("sandrail facts");
        serde_json::from_slice(&run.stdout).expect("facts")
    }

    /// The last receipt written, as JSON.
    pub fn last_receipt(&self) -> Value {
        let receipts = std::fs::read_to_string(self.state_dir().join("receipts.jsonl"))
            .expect("the receipts file");
        let last = receipts.lines().last().expect("a receipt");
        serde_json::from_str(last).expect("a receipt is JSON")
    }

    /// `sandrail state list` for one guardrail, as (key, value) pairs.
    pub fn state(&self, session: &str, guardrail: &str) -> Vec<(String, String)> {
        let run = self.run(&[
            "state",
            "list",
            "--session",
            session,
            "--guardrail",
            guardrail,
        ]);
        assert!(run.ok(), "state list failed: {}", run.stderr());
        run.stdout()
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("state list prints JSON lines");
                (
                    v["key"].as_str().expect("key").to_owned(),
                    v["value"].as_str().expect("value").to_owned(),
                )
            })
            .collect()
    }
}

/// The component cache shared by tests that do not test the cache itself, so each
/// component is compiled once per test run rather than once per test.
pub fn shared_cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("sandrail-test-cache")
}

/// A finished `sandrail` process.
pub struct Run(pub Output);

impl Run {
    pub fn ok(&self) -> bool {
        self.0.status.success()
    }

    pub fn code(&self) -> Option<i32> {
        self.0.status.code()
    }

    pub fn stdout(&self) -> String {
        String::from_utf8(self.0.stdout.clone()).expect("stdout is UTF-8")
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }

    /// The answer as JSON; panics when there is none or it is not JSON.
    pub fn answer(&self) -> Value {
        let out = self.stdout();
        assert!(
            !out.trim().is_empty(),
            "expected an answer; stderr: {}",
            self.stderr()
        );
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("answer is not JSON ({e}): {out}"))
    }

    /// The context a note gave the agent (`hookSpecificOutput.additionalContext`).
    pub fn context(&self) -> String {
        let answer = self.answer();
        answer["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or_else(|| panic!("no additionalContext in {answer}"))
            .to_owned()
    }

    /// Asserts the hook exited 0 and printed nothing.
    pub fn assert_silent(&self) {
        assert_eq!(self.code(), Some(0), "stderr: {}", self.stderr());
        assert_eq!(self.stdout(), "", "stderr: {}", self.stderr());
    }

    /// What the agent was told: ("silent", ""), ("context", additionalContext), or
    /// (permissionDecision, permissionDecisionReason) for a PreToolUse decision.
    pub fn told(&self) -> (String, String) {
        assert_eq!(self.code(), Some(0), "stderr: {}", self.stderr());
        if self.stdout().trim().is_empty() {
            return ("silent".into(), String::new());
        }
        let answer = self.answer();
        let specific = &answer["hookSpecificOutput"];
        match specific["permissionDecision"].as_str() {
            Some(decision) => (
                decision.to_owned(),
                specific["permissionDecisionReason"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            ),
            None => (
                "context".into(),
                specific["additionalContext"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            ),
        }
    }

    /// The PreToolUse refusal reason, if the answer is a deny.
    pub fn deny_reason(&self) -> Option<String> {
        let answer = self.answer();
        let specific = &answer["hookSpecificOutput"];
        (specific["permissionDecision"] == "deny").then(|| {
            specific["permissionDecisionReason"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
    }
}

/// Copies a program to run it from `to`, by another process: a copy this
/// process held open for writing could be inherited by a test forking
/// meanwhile, and running it would then fail as busy (ETXTBSY).
pub fn copy_program(from: &str, to: &Path) {
    let copied = Command::new("cp").arg(from).arg(to).status().expect("cp");
    assert!(copied.success(), "cp {from} {}", to.display());
}

/// A Claude Code payload for `event` with the common fields filled in.
pub fn payload(event: &str, session: &str, extra: Value) -> Vec<u8> {
    let mut base = json!({
        "session_id": session,
        "transcript_path": format!("/nonexistent/.claude/projects/p/{session}.jsonl"),
        "cwd": "/home/dev/project",
        "permission_mode": "default",
        "hook_event_name": event,
    });
    if let (Some(base), Some(extra)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    serde_json::to_vec(&base).expect("payload serializes")
}

/// A PreToolUse payload for a Bash command.
pub fn bash(session: &str, command: &str) -> Vec<u8> {
    payload(
        "PreToolUse",
        session,
        json!({
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "Run a command"},
            "tool_use_id": "toolu_01ABC",
        }),
    )
}

/// A PreToolUse Bash payload whose transcript is `transcript`.
pub fn bash_in_turn(session: &str, command: &str, transcript: &Path) -> Vec<u8> {
    let mut payload: Value = serde_json::from_slice(&bash(session, command)).expect("json");
    payload["transcript_path"] = json!(transcript);
    serde_json::to_vec(&payload).expect("payload serializes")
}

/// A PreToolUse payload for a Write.
pub fn write(session: &str, path: &str) -> Vec<u8> {
    payload(
        "PreToolUse",
        session,
        json!({
            "tool_name": "Write",
            "tool_input": {"file_path": path, "content": "fn main() {}\n"},
            "tool_use_id": "toolu_01DEF",
        }),
    )
}

/// A config with one probe guardrail per (name, action config) pair, each on
/// every event and every tool.
pub fn probe_config(guardrails: &[(&str, &str)]) -> String {
    let mut text = String::new();
    for (name, body) in guardrails {
        text.push_str(&format!(
            "[[guardrail]]\nname = \"{name}\"\nsource = \"{PROBE}\"\nevents = [\"SessionStart\", \"UserPromptSubmit\", \"PreToolUse\", \"PostToolUse\", \"Stop\", \"SubagentStop\", \"PreCompact\", \"SessionEnd\"]\n{body}\n"
        ));
    }
    text
}

/// CPU-bound processes beside a test, as a busy machine has: each spins on
/// its own until dropped.
pub struct BusyMachine(Vec<std::process::Child>);

impl BusyMachine {
    /// `n` CPU-bound processes for each core.
    pub fn per_core(n: usize) -> BusyMachine {
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        BusyMachine(
            (0..n * cores)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("start a CPU-bound process")
                })
                .collect(),
        )
    }
}

impl Drop for BusyMachine {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
