//! `sandrail serve`: real HTTP requests over TCP and a Unix socket answered as
//! `sandrail hook` answers the same payloads; concurrency without lost updates;
//! bad requests refused with their status; a clean shutdown.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use serde_json::{Value, json};

use crate::support::*;

/// A running `sandrail serve` in a project, stopped (SIGTERM) when dropped.
pub(crate) struct Server {
    child: Option<Child>,
    tcp: String,
    socket: PathBuf,
}

impl Server {
    pub(crate) fn start(project: &Project) -> Server {
        Server::start_with(project, project.cmd())
    }

    /// Started as `cmd` (`project.cmd_after(…)` to set its limits first).
    pub(crate) fn start_with(project: &Project, mut cmd: std::process::Command) -> Server {
        let socket = project.root.path().join("serve.sock");
        let mut child = cmd
            .args(["serve", "--listen", "127.0.0.1:0", "--socket"])
            .arg(&socket)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sandrail serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the serving line");
        let tcp = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        Server {
            child: Some(child),
            tcp,
            socket,
        }
    }

    /// The Unix socket it listens on.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// POSTs `body` to `/` over TCP, naming the project in the header.
    pub(crate) fn post(&self, project: &Project, body: &[u8]) -> Answer {
        self.request("POST", "/", Some(project.dir()), body)
    }

    fn request(&self, method: &str, path: &str, project: Option<PathBuf>, body: &[u8]) -> Answer {
        let stream = std::net::TcpStream::connect(&self.tcp).expect("connect");
        exchange(stream, method, path, project.as_deref(), body)
    }

    fn post_unix(&self, project: &Project, body: &[u8]) -> Answer {
        let stream = std::os::unix::net::UnixStream::connect(&self.socket).expect("connect");
        exchange(stream, "POST", "/hook", Some(&project.dir()), body)
    }

    /// SIGTERM, then the exit status and stderr.
    pub(crate) fn stop(mut self) -> (std::process::ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        terminate(&child);
        let mut stderr = String::new();
        if let Some(mut err) = child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        (child.wait().expect("wait"), stderr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            terminate(&child);
            let _ = child.wait();
        }
    }
}

fn terminate(child: &Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
}

/// An HTTP answer: the status and the body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
}

impl Answer {
    /// The body as the JSON a command hook would print, or Null when empty.
    fn json(&self) -> Value {
        if self.body.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
        }
    }
}

/// One HTTP/1.1 request on a fresh connection, read to its end.
fn exchange(
    mut stream: impl Read + Write,
    method: &str,
    path: &str,
    project: Option<&Path>,
    body: &[u8],
) -> Answer {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: sandrail\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(project) = project {
        head.push_str(&format!(
            "X-Sandrail-Project-Dir: {}\r\n",
            project.display()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("send the head");
    // A server may answer (413) before reading a long body to its end.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {raw:?}"));
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    Answer { status, body }
}

/// The command hook's answer to `payload`, as JSON (Null when silent).
fn hook_json(project: &Project, payload: &[u8]) -> Value {
    let run = project.hook(payload);
    if run.stdout().trim().is_empty() {
        Value::Null
    } else {
        run.answer()
    }
}

/// A payload as `payload()` makes it, for `session`.
fn event(kind: &str, session: &str, extra: Value) -> Vec<u8> {
    payload(kind, session, extra)
}

/// An escalating rule, a contract over the session's counters and the bundled
/// gate: answers that depend on what came before in the session.
const CONFIG: &str = r#"
[[guardrail]]
name = "git"
source = "builtin:no-destructive-git"
events = ["PreToolUse"]
matcher = "Bash"
[guardrail.enforcement]
default_level = "nudge"
escalation = [{ after = 2, level = "hard_block" }]

[[guardrail]]
name = "contracts"
source = "builtin:contracts"
events = ["PreToolUse", "Stop", "UserPromptSubmit"]

[[guardrail.config.rules]]
name = "few-writes"
when = "tool.is_write"
require = "session.files_written < 2"
message = "{rule}: at most 2 files, {session.files_written} written"
"#;

/// A contract over the session's counters, so the host keeps them.
const COUNTING: &str = r#"
[[guardrail]]
name = "contracts"
source = "builtin:contracts"
events = ["PreToolUse"]

[[guardrail.config.rules]]
name = "calls"
require = "session.tool_calls < 100000"
"#;

/// Every event kind, in a session's order, with refusals, escalation and
/// counters among them: the server's answers are the hook's, one for one.
#[test]
fn serve_answers_every_event_as_the_hook_does() {
    let project = Project::new();
    project.config(CONFIG);
    let server = Server::start(&project);
    let events = |session: &str| -> Vec<Vec<u8>> {
        vec![
            event("SessionStart", session, json!({"source": "startup"})),
            event(
                "UserPromptSubmit",
                session,
                json!({"prompt": "Tidy the repo"}),
            ),
            bash(session, "git push --force origin main"),
            bash(session, "ls -la"),
            bash(session, "git push --force origin main"),
            bash(session, "git reset --hard HEAD~3"),
            write(session, "/home/dev/project/a.rs"),
            write(session, "/home/dev/project/b.rs"),
            write(session, "/home/dev/project/c.rs"),
            event(
                "PostToolUse",
                session,
                json!({"tool_name": "Write", "tool_input": {"file_path": "/home/dev/project/a.rs", "content": "x"}, "tool_response": {"success": true}, "tool_use_id": "toolu_01DEF"}),
            ),
            event("Stop", session, json!({"stop_hook_active": false})),
            event("SessionEnd", session, json!({"reason": "exit"})),
        ]
    };
    let mut refusals = 0;
    for (over_http, by_hook) in events("s-served").iter().zip(events("s-hooked")) {
        let served = server.post(&project, over_http);
        assert_eq!(served.status, 200, "{served:?}");
        let hooked = hook_json(&project, &by_hook);
        assert_eq!(
            served.json(),
            hooked,
            "{}",
            String::from_utf8_lossy(&by_hook)
        );
        if hooked.to_string().contains("\"deny\"") {
            refusals += 1;
        }
    }
    // The escalation and the counter answered: not a run of silences.
    assert!(refusals >= 3, "{refusals} refusals");
    // Over the Unix socket, the same.
    let push = bash("s-unix", "git push --force origin main");
    assert_eq!(
        server.post_unix(&project, &push).json(),
        hook_json(&project, &bash("s-unix2", "git push --force origin main"))
    );
}

/// The project is the one the harness names in the header; without it, the
/// payload's `cwd`.
#[test]
fn the_project_header_chooses_the_config() {
    let project = Project::new();
    project.config(CONFIG);
    let server = Server::start(&project);
    let named = server.post(&project, &bash("s1", "git push --force origin main"));
    assert!(named.body.contains("[git/force-push]"), "{named:?}");
    // Without the header the payload's cwd (/home/dev/project) has no config:
    // the embedded default answers, and its guardrail is another.
    let unnamed = server.request(
        "POST",
        "/",
        None,
        &bash("s2", "git push --force origin main"),
    );
    assert_eq!(unnamed.status, 200);
    assert!(
        unnamed.body.contains("[destructive-commands/"),
        "{unnamed:?}"
    );
}

/// Eight clients at once on one session, with `sandrail hook` processes beside
/// them on the same state: every call is counted once.
#[test]
fn concurrent_requests_lose_no_update() {
    let project = Project::new();
    project.config(COUNTING);
    let server = Server::start(&project);
    const CLIENTS: usize = 8;
    const EACH: usize = 15;
    const HOOKS: usize = 10;
    std::thread::scope(|scope| {
        for client in 0..CLIENTS {
            let (server, project) = (&server, &project);
            scope.spawn(move || {
                for n in 0..EACH {
                    let answer =
                        server.post(project, &bash("shared", &format!("echo {client}-{n}")));
                    assert_eq!(answer.status, 200, "{answer:?}");
                }
            });
        }
        let project = &project;
        scope.spawn(move || {
            for n in 0..HOOKS {
                project
                    .hook(&bash("shared", &format!("echo hook-{n}")))
                    .assert_silent();
            }
        });
    });
    assert_eq!(
        tool_calls(&project, "shared"),
        json!(CLIENTS * EACH + HOOKS)
    );
}

/// What is not a hook payload POSTed to the hook path gets a status that says
/// what was wrong; an unreadable payload under `on_error = "deny"` is refused
/// with a 200 decision (a non-2xx would let the call through).
#[test]
fn bad_requests_are_refused_with_their_status() {
    let project = Project::new();
    project.config(CONFIG);
    let server = Server::start(&project);
    let get = server.request("GET", "/", Some(project.dir()), b"");
    assert_eq!(get.status, 405, "{get:?}");
    assert!(get.body.contains("POSTed as JSON"), "{get:?}");
    let elsewhere = server.request("POST", "/admin", Some(project.dir()), b"{}");
    assert_eq!(elsewhere.status, 404, "{elsewhere:?}");
    let malformed = server.post(&project, b"{\"hook_event_name\": ");
    assert_eq!(malformed.status, 400, "{malformed:?}");
    assert!(malformed.body.contains("not valid JSON"), "{malformed:?}");
    let oversize = vec![b' '; (16 << 20) + 10];
    let too_big = server.post(&project, &oversize);
    assert_eq!(too_big.status, 413, "{too_big:?}");
    // The server still answers after all of them.
    assert_eq!(server.post(&project, &bash("s1", "ls")).status, 200);

    project.reconfigure(&format!("[settings]\non_error = \"deny\"\n{CONFIG}"));
    // Over the limit is unreadable too: under deny, refused with a 200 decision
    // as `sandrail hook` refuses it (a 413 would let the call through).
    let too_big = server.post(&project, &oversize);
    assert_eq!(too_big.status, 200, "{too_big:?}");
    assert_eq!(too_big.json()["decision"], "block", "{too_big:?}");
    let refused = server.post(&project, b"not json at all");
    assert_eq!(refused.status, 200, "{refused:?}");
    assert_eq!(refused.json()["decision"], "block", "{refused:?}");
    assert!(
        refused.json()["reason"]
            .as_str()
            .is_some_and(|r| r.contains("not valid JSON") && r.contains("on_error")),
        "{refused:?}"
    );
}

/// SIGTERM while requests are in flight: each is answered and committed, the
/// process exits 0, and the socket file is gone.
#[test]
fn shutdown_finishes_the_events_in_flight() {
    let project = Project::new();
    project.config(COUNTING);
    let server = Server::start(&project);
    let socket = server.socket.clone();
    let tcp = server.tcp.clone();
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let (status, stderr) = std::thread::scope(|scope| {
        for client in 0..4 {
            let (tcp, project, answered) = (&tcp, &project, &answered);
            scope.spawn(move || {
                for n in 0..50 {
                    let Ok(stream) = std::net::TcpStream::connect(tcp) else {
                        return;
                    };
                    let body = bash("down", &format!("echo {client}-{n}"));
                    let answer = std::panic::catch_unwind(|| {
                        exchange(stream, "POST", "/", Some(&project.dir()), &body)
                    });
                    match answer {
                        Ok(answer) if answer.status == 200 => {
                            answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        _ => return,
                    }
                }
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(400));
        server.stop()
    });
    assert!(status.success(), "{status:?} {stderr}");
    assert!(
        stderr.contains("finishing the events in flight"),
        "{stderr}"
    );
    assert!(!socket.exists(), "the socket file is removed");
    let answered = answered.load(std::sync::atomic::Ordering::SeqCst);
    assert!(answered > 0, "no request was answered before the signal");
    // Every answered request was committed, and nothing else was.
    assert_eq!(tool_calls(&project, "down"), json!(answered), "{stderr}");
}

/// The session's `tool_calls` counter as `sandrail facts` reads it.
fn tool_calls(project: &Project, session: &str) -> Value {
    project.session_facts(session)["session"]["tool_calls"].clone()
}

/// A client that stalls in its body is answered 408 once its time is up, and does
/// not keep a shutdown waiting: the socket is gone and new connections refused at
/// once, and the process exits once the stalled request is answered.
#[test]
fn a_stalled_client_is_dropped_and_does_not_hold_the_shutdown() {
    let project = Project::new();
    project.config(CONFIG);
    let server = Server::start(&project);
    let socket = server.socket.clone();
    let tcp = server.tcp.clone();
    let mut stalled = std::net::TcpStream::connect(&tcp).expect("connect");
    stalled
        .write_all(b"POST / HTTP/1.1\r\nHost: s\r\nContent-Length: 1000\r\n\r\n{")
        .expect("a head and the start of a body");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let stopping = std::thread::spawn(move || server.stop());
    // The listeners close at once.
    while socket.exists() && started.elapsed() < std::time::Duration::from_secs(2) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!socket.exists(), "the socket is removed before the wait");
    assert!(
        std::os::unix::net::UnixStream::connect(&socket).is_err(),
        "a new client is refused, not queued"
    );
    let mut answer = String::new();
    let _ = stalled.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    let (status, stderr) = stopping.join().expect("stopped");
    assert!(status.success(), "{status:?} {stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

/// `sandrail hook` with `SANDRAIL_SERVE_SOCKET` hands the payload to the server and
/// prints its answer; with no server there it judges the event itself, unless
/// `SANDRAIL_SERVE_REQUIRED=1`, when it refuses (exit 2, the reason on stderr).
#[test]
fn the_hook_forwards_to_the_server_and_falls_back_or_refuses() {
    forwards_falls_back_and_refuses(BIN, "judged here instead");
}

/// `sandrail-hook`, the forwarding hook as a binary of its own, does the same,
/// running `sandrail hook` beside it when nothing answers.
#[test]
fn the_small_hook_binary_forwards_falls_back_and_refuses() {
    forwards_falls_back_and_refuses(HOOK_BIN, "judged by sandrail hook instead");
}

/// `sandrail-hook` starts on every tool call: on Linux with glibc it is linked
/// statically, so no dynamic loader runs before it does (its program headers
/// name no interpreter), and it still forwards (the test above).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_small_hook_binary_needs_no_dynamic_loader() {
    const PT_INTERP: u32 = 3;
    let elf = std::fs::read(HOOK_BIN).expect("read sandrail-hook");
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF file");
    let at = |offset: usize, len: usize| -> u64 {
        elf[offset..offset + len]
            .iter()
            .rev()
            .fold(0, |n, b| (n << 8) | u64::from(*b))
    };
    let table = at(0x20, 8) as usize;
    let entry_size = at(0x36, 2) as usize;
    let entries = at(0x38, 2) as usize;
    let interpreter = (0..entries).any(|i| at(table + i * entry_size, 4) == u64::from(PT_INTERP));
    assert!(
        !interpreter,
        "{HOOK_BIN} asks for a dynamic loader: it was linked against shared libraries (see host/build.rs, link_forwarder_statically)"
    );
}

/// `sandrail hook` answers with exit code 0 or 2; a local hook that ends any
/// other way (a crash: Rust's panic exit is 101) is not relayed as the harness
/// would read it, a pass, but refuses the event.
#[cfg(unix)]
#[test]
fn a_local_hook_that_crashes_refuses_through_the_forwarder() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    let dir = project.root.path().join("bin");
    std::fs::create_dir_all(&dir).expect("bin dir");
    copy_program(HOOK_BIN, &dir.join("sandrail-hook"));
    // Written aside, then copied into place by another process (ETXTBSY).
    let script = project.root.path().join("crashing");
    std::fs::write(&script, "#!/bin/sh\ncat >/dev/null\nexit 101\n").expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    copy_program(&script.to_string_lossy(), &dir.join("sandrail"));
    let cmd = project.with_env(std::process::Command::new(dir.join("sandrail-hook")));
    let run = project.hook_with(cmd, &bash("crash", "ls"));
    assert_eq!(run.code(), Some(2), "{}", run.stderr());
    assert!(run.stderr().contains("exit code 101"), "{}", run.stderr());
}

fn forwards_falls_back_and_refuses(program: &str, judged_locally: &str) {
    let project = Project::new();
    project.config(CONFIG);
    let server = Server::start(&project);
    // Whoever judges here says so: an engine at work logs what it loads.
    let forwarding = |socket: Option<&Path>, required: bool| {
        let mut cmd = project.with_env(std::process::Command::new(program));
        cmd.env("SANDRAIL_LOG", "debug");
        if let Some(socket) = socket {
            cmd.env("SANDRAIL_SERVE_SOCKET", socket);
        }
        if required {
            cmd.env("SANDRAIL_SERVE_REQUIRED", "1");
        }
        cmd
    };
    let push = bash("s1", "git push --force origin main");
    let forwarded = project.hook_with(forwarding(Some(&server.socket), false), &push);
    assert_eq!(
        forwarded.answer(),
        hook_json(&project, &bash("s2", "git push --force origin main"))
    );
    assert!(
        forwarded.stderr().is_empty(),
        "judged by the server, not here: {}",
        forwarded.stderr()
    );
    // An unreadable payload under on_error = "deny" exits 2, as the hook does.
    project.reconfigure(&format!("[settings]\non_error = \"deny\"\n{CONFIG}"));
    let blocked = project.hook_with(forwarding(Some(&server.socket), false), b"not json");
    assert_eq!(blocked.code(), Some(2), "{}", blocked.stderr());
    assert!(
        blocked.stderr().contains("not valid JSON"),
        "{}",
        blocked.stderr()
    );
    project.reconfigure(CONFIG);

    let socket = server.socket.clone();
    let (status, _) = server.stop();
    assert!(status.success());
    // Nothing answers: judged here, and said so.
    let fallback = project.hook_with(forwarding(Some(&socket), false), &push);
    assert!(
        fallback.stderr().contains("cannot reach sandrail serve")
            && fallback.stderr().contains(judged_locally),
        "{}",
        fallback.stderr()
    );
    assert!(
        fallback.answer().to_string().contains("[git/force-push]"),
        "{}",
        fallback.stdout()
    );
    assert!(
        fallback.stderr().contains("from the cache") || fallback.stderr().contains("compiled"),
        "judged by the hook: {}",
        fallback.stderr()
    );
    // No server named at all: judged here too.
    let unnamed = project.hook_with(forwarding(None, false), &push);
    assert!(unnamed.answer().to_string().contains("[git/force-push]"));
    // Required: refused, not judged.
    let required = project.hook_with(forwarding(Some(&socket), true), &bash("s3", "ls"));
    assert_eq!(required.code(), Some(2), "{}", required.stderr());
    assert!(required.stdout().trim().is_empty());
    assert!(
        required.stderr().contains("the server is required"),
        "{}",
        required.stderr()
    );
}

/// Something of the agent's at the server's socket — its own listener, started
/// as the user in the server's place — answering "nothing to say" (allow) to
/// everything is not believed: a server of this user must be running the
/// sandrail the hook judges with, so both forwarding hooks judge the force push
/// themselves, saying what answered there.
#[test]
fn an_impostor_at_the_socket_is_not_believed() {
    let project = Project::new();
    project.config(CONFIG);
    let socket = project.root.path().join("impostor.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 8192];
            let _ = stream.read(&mut buf);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    for program in [BIN, HOOK_BIN] {
        let mut cmd = project.with_env(std::process::Command::new(program));
        cmd.env("SANDRAIL_SERVE_SOCKET", &socket);
        let session = format!("s-impostor-{}", program.len());
        let run = project.hook_with(cmd, &bash(&session, "git push --force origin main"));
        assert!(
            run.stderr()
                .contains("is not the sandrail this hook judges with"),
            "{program}: {}",
            run.stderr()
        );
        assert!(
            run.answer().to_string().contains("[git/force-push]"),
            "judged here: {program}: {} {}",
            run.stdout(),
            run.stderr()
        );
    }
}

/// A server required by the hook (`SANDRAIL_SERVE_REQUIRED=1`) refuses every
/// event it cannot get sandrail's own answer for: something else at the socket
/// answering a bare 400, answering what is not a hook answer, or never answering
/// (past the forwarding deadline). And a project whose path is not ASCII reaches
/// the server whole: its `on_error = "deny"` refuses an unreadable payload, as the
/// plain hook does.
#[test]
fn a_required_server_fails_closed_and_paths_travel_whole() {
    let project = Project::new();
    project.config(CONFIG);
    let required = |socket: &Path| {
        let mut cmd = project.cmd();
        cmd.env("SANDRAIL_SERVE_SOCKET", socket)
            .env("SANDRAIL_SERVE_REQUIRED", "1");
        cmd
    };
    let push = bash("s1", "git push --force origin main");
    for (answer, what) in [
        (
            Some("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"),
            "a bare 400",
        ),
        (
            Some("HTTP/1.1 200 OK\r\n\r\nallow"),
            "a 200 that is no answer",
        ),
        (None, "no answer at all"),
    ] {
        let socket = project.root.path().join("impostor.sock");
        let _ = std::fs::remove_file(&socket);
        let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let impostor = std::thread::spawn(move || {
            if let Ok((mut stream, _)) = listener.accept() {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                match answer {
                    Some(answer) => {
                        let _ = stream.write_all(answer.as_bytes());
                    }
                    None => std::thread::sleep(std::time::Duration::from_secs(40)),
                }
            }
        });
        let started = std::time::Instant::now();
        let run = project.hook_with(required(&socket), &push);
        assert_eq!(
            run.code(),
            Some(2),
            "{what}: {} {}",
            run.stdout(),
            run.stderr()
        );
        assert!(run.stdout().trim().is_empty(), "{what}: {}", run.stdout());
        assert!(
            run.stderr().contains("the server is required"),
            "{what}: {}",
            run.stderr()
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(35),
            "{what}"
        );
        if answer.is_some() {
            let _ = impostor.join();
        }
    }

    let odd = project.root.path().join("pré\tjet");
    std::fs::create_dir_all(&odd).expect("dir");
    std::fs::write(
        odd.join("sandrail.toml"),
        format!("[settings]\non_error = \"deny\"\n{CONFIG}"),
    )
    .expect("config");
    let server = Server::start(&project);
    let mut cmd = required(&server.socket);
    cmd.env("CLAUDE_PROJECT_DIR", &odd).current_dir(&odd);
    let run = project.hook_with(cmd, b"not json");
    assert_eq!(run.code(), Some(2), "{}", run.stderr());
    let mut plain = project.cmd();
    plain.env("CLAUDE_PROJECT_DIR", &odd).current_dir(&odd);
    assert_eq!(project.hook_with(plain, b"not json").code(), Some(2));
}

/// The server remembers the policy's copy of a component it has compiled, so a
/// large component is not read, hashed and scanned on every event; a copy
/// rewritten on disk is still noticed at the next event, and not run.
#[test]
fn a_served_component_copy_rewritten_on_disk_is_noticed_and_not_run() {
    let project = Project::new();
    project.config(&format!(
        "[[guardrail]]\nname = \"noter\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\non_error = \"deny\"\n[guardrail.config]\naction = \"note\"\nvalue = \"judged by the copy\"\n"
    ));
    let server = Server::start(&project);
    for _ in 0..3 {
        let answer = server.post(&project, &bash("sess-copy", "ls"));
        assert_eq!(answer.status, 200);
        assert!(
            answer.body.contains("judged by the copy"),
            "{}",
            answer.body
        );
    }
    let sha = sandrail::sha256_hex(&std::fs::read(PROBE).expect("probe"));
    let blob = project.state_dir().join("policy/blobs").join(sha);
    assert!(blob.is_file(), "the session runs its policy's copy");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&blob, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    std::fs::write(&blob, b"(component) not the one the policy holds").expect("rewrite");
    let answer = server.post(&project, &bash("sess-copy", "ls"));
    let json = answer.json();
    assert_eq!(
        json["hookSpecificOutput"]["permissionDecision"], "deny",
        "{}",
        answer.body
    );
    assert!(
        !answer.body.contains("judged by the copy"),
        "{}",
        answer.body
    );
}

/// An entry's own `sha256` pin holds in the server as in the hook, also when the
/// same bytes were compiled for another entry that has no pin.
#[test]
fn a_pin_holds_when_another_entry_runs_the_same_component() {
    let project = Project::new();
    let zeros = "0".repeat(64);
    project.config(&format!(
        "[[guardrail]]\nname = \"unpinned\"\nsource = \"{PROBE}\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\naction = \"note\"\nvalue = \"unpinned ran\"\n\n[[guardrail]]\nname = \"pinned\"\nsource = \"{PROBE}\"\nsha256 = \"{zeros}\"\nevents = [\"PreToolUse\"]\non_error = \"deny\"\n[guardrail.config]\naction = \"note\"\nvalue = \"PINNED BYPASSED\"\n"
    ));
    let hook = project.hook(&bash("sess-pin-hook", "ls"));
    assert!(hook.deny_reason().is_some(), "{}", hook.stdout());
    let server = Server::start(&project);
    for session in ["sess-pin-1", "sess-pin-1", "sess-pin-2"] {
        let answer = server.post(&project, &bash(session, "ls"));
        assert_eq!(
            answer.json()["hookSpecificOutput"]["permissionDecision"],
            "deny",
            "{session}: {}",
            answer.body
        );
        assert!(!answer.body.contains("PINNED BYPASSED"), "{}", answer.body);
    }
}

/// `sandrail-hook` forwarding to `server`, which it requires: an event the
/// server does not answer is refused, never judged elsewhere.
fn required_forwarder(project: &Project, server: &Server) -> std::process::Command {
    let mut cmd = project.with_env(std::process::Command::new(HOOK_BIN));
    cmd.env("SANDRAIL_SERVE_SOCKET", server.socket())
        .env("SANDRAIL_SERVE_REQUIRED", "1");
    cmd
}

/// 200 Writes at once through `sandrail-hook` with the server required, on one
/// session under a budget of 60 and with four CPU-bound processes per core
/// beside them:
/// exactly 60 allowed and 140 refused by the budget; none refused for load,
/// none judged without the session's state.
#[test]
fn two_hundred_forwarded_hooks_on_a_busy_machine_keep_an_exact_budget() {
    let project = Project::alone();
    project.config(crate::concurrency::BUDGET_OF_SIXTY);
    let server = Server::start(&project);
    let _busy = BusyMachine::per_core(4);
    let payload = write("sess-served", "/home/dev/project/a.rs");
    let payloads: Vec<&[u8]> = (0..200).map(|_| payload.as_slice()).collect();
    let runs = crate::concurrency::at_once(&payloads, || required_forwarder(&project, &server));
    crate::concurrency::assert_sixty_allowed(&project, "sess-served", &runs);
    let (status, said) = server.stop();
    assert!(status.success(), "{said}");
    assert!(!said.contains("connections"), "{said}");
}

/// Sixty `ls` at once through the server (parallel tool calls and subagents of
/// one session), under the embedded default: every one allowed, none refused
/// for load.
#[test]
fn sixty_parallel_commands_through_the_server_are_all_allowed() {
    let project = Project::alone();
    let server = Server::start(&project);
    let payload = bash("sess-sixty", "ls");
    let payloads: Vec<&[u8]> = (0..60).map(|_| payload.as_slice()).collect();
    let runs = crate::concurrency::at_once(&payloads, || required_forwarder(&project, &server));
    for run in &runs {
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
        assert!(
            run.stdout().trim().is_empty() || run.deny_reason().is_none(),
            "{}",
            run.stdout()
        );
    }
}

/// `sandrail init --serve`: the user service is written with this binary, the
/// socket in the user's state directory and the places `init` saw, and its
/// manager is asked to start it; the forwarding hook is registered, and it
/// judges while the server is down and hands events to the server once it runs
/// (`serve --user`, as the unit runs it). Doctor tells which. A manager that
/// fails leaves the set-up unfinished, said with what to run by hand.
#[test]
fn init_serve_installs_the_user_service_and_registers_the_forwarding_hook() {
    let project = Project::new();
    let tools = project.root.path().join("service-tools");
    std::fs::create_dir_all(&tools).expect("tools");
    let asked = project.root.path().join("systemctl.log");
    let systemctl = tools.join("systemctl");
    std::fs::write(
        &systemctl,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexit ${{SYSTEMCTL_EXIT:-0}}\n",
            asked.display()
        ),
    )
    .expect("systemctl");
    std::fs::set_permissions(
        &systemctl,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let path = {
        let mut paths = vec![tools];
        paths.extend(std::env::split_paths(&project.path_with_sandbox_tools()));
        std::env::join_paths(paths).expect("PATH")
    };
    let init = |exit: &str| {
        let mut cmd = project.cmd();
        cmd.env("PATH", &path)
            .env("SYSTEMCTL_EXIT", exit)
            .args(["init", "--serve"]);
        Run(cmd.output().expect("init --serve"))
    };
    // A project set up with the command hook first: --serve switches it.
    assert!(project.init(&[]).ok());
    let run = init("0");
    assert!(run.ok(), "{}\n{}", run.stdout(), run.stderr());
    let socket = project.state_dir().join("sandrail-serve.sock");
    let unit = std::fs::read_to_string(
        project
            .root
            .path()
            .join(".config/systemd/user/sandrail.service"),
    )
    .expect("the unit");
    let binary = std::fs::canonicalize(crate::support::BIN).expect("binary");
    assert!(
        unit.contains(&format!(
            "ExecStart=\"{}\" serve --user --socket \"{}\"",
            binary.display(),
            socket.display()
        )) && unit.contains(&format!(
            "Environment=\"SANDRAIL_STATE_DIR={}\"",
            project.state_dir().display()
        )),
        "{unit}"
    );
    // The agent's commands can neither rewrite the unit nor plant another.
    let shared: Value = serde_json::from_slice(
        &std::fs::read(project.dir().join(".claude/settings.json")).expect("settings"),
    )
    .expect("JSON");
    let unit_path = project
        .root
        .path()
        .join(".config/systemd/user/sandrail.service");
    assert!(
        shared["sandbox"]["filesystem"]["denyWrite"]
            .as_array()
            .is_some_and(|denied| denied
                .iter()
                .any(|d| d.as_str().is_some_and(|d| d.ends_with(".config/systemd")))),
        "{shared}"
    );
    let drop_in = unit_path.with_extension("service.d");
    for rewrite in [
        format!("echo 'ExecStart=/tmp/yes' > {}", unit_path.display()),
        format!(
            "mkdir -p {0} && printf '[Service]\\nExecStart=\\nExecStart=/tmp/yes\\n' > {0}/zz.conf",
            drop_in.display()
        ),
        format!(
            "echo SANDRAIL_STATE_DIR=/tmp/fresh > {}/.config/environment.d/sandrail.conf",
            project.root.path().display()
        ),
    ] {
        let refused = project.hook(&bash("s0", &rewrite));
        assert!(
            refused.answer().to_string().contains("deny"),
            "{rewrite}: {}\n{}",
            refused.stdout(),
            refused.stderr()
        );
    }
    let asked_for = std::fs::read_to_string(&asked).expect("systemctl was run");
    assert_eq!(
        asked_for,
        "--user daemon-reload\n--user enable sandrail.service\n--user restart sandrail.service\n"
    );
    let settings: Value = serde_json::from_slice(
        &std::fs::read(project.dir().join(".claude/settings.local.json")).expect("settings"),
    )
    .expect("JSON");
    let commands: Vec<&str> = settings["hooks"]["PreToolUse"]
        .as_array()
        .expect("PreToolUse hooks")
        .iter()
        .flat_map(|group| group["hooks"].as_array().into_iter().flatten())
        .filter_map(|hook| hook["command"].as_str())
        .collect();
    assert_eq!(
        commands.len(),
        1,
        "one registration, switched: {commands:?}"
    );
    let command = commands[0].to_owned();
    assert_eq!(
        command,
        format!(
            "SANDRAIL_SERVE_SOCKET={} {}",
            socket.display(),
            binary.with_file_name("sandrail-hook").display()
        )
    );
    project.trust();
    let registered = |required: bool| {
        let mut sh = project.with_env(std::process::Command::new("sh"));
        sh.args(["-c", &command]);
        if required {
            sh.env("SANDRAIL_SERVE_REQUIRED", "1");
        }
        project.hook_with(sh, &bash("s1", "git push --force origin main"))
    };
    // The server is not running: the registered hook judges the event itself.
    let local = registered(false);
    assert!(
        local.answer().to_string().contains("force-push]")
            && local.stderr().contains("judged by sandrail hook instead"),
        "{}\n{}",
        local.stdout(),
        local.stderr()
    );
    assert!(
        project.doctor_finds("command", "warning", "sandrail serve does not answer"),
        "{}",
        project.run(&["doctor"]).stdout()
    );

    // The server as the unit runs it.
    let mut server = project
        .cmd()
        .args(["serve", "--user"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve --user");
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the serving line");
    assert_eq!(
        line.trim(),
        format!("sandrail: serving on unix:{}", socket.display())
    );
    let served = registered(true);
    assert!(
        served.answer().to_string().contains("force-push]") && served.stderr().is_empty(),
        "{}\n{}",
        served.stdout(),
        served.stderr()
    );
    assert!(
        project.doctor_finds("command", "ok", "which answers"),
        "{}",
        project.run(&["doctor"]).stdout()
    );
    terminate(&server);
    let _ = server.wait();

    // A manager that cannot start it: the set-up is not done, and said so.
    let failed = init("1");
    assert_eq!(failed.code(), Some(1), "{}", failed.stdout());
    assert!(
        failed.stderr().contains("the service is not running")
            && failed
                .stderr()
                .contains("systemctl --user enable --now sandrail.service"),
        "{}",
        failed.stderr()
    );
}

/// The server answers an event as soon as it is decided, and saves its state
/// and writes its receipt after, before the session's next event: a receipt it
/// cannot write is charged to the session's next event, refused under
/// `on_error = "deny"` naming why; under `"allow"` that event proceeds, and the
/// person is told.
#[cfg(unix)]
#[test]
fn a_receipt_the_server_cannot_write_is_charged_to_the_session_s_next_event() {
    use crate::bad_input::fill_config;
    let project = Project::new();
    project.reconfigure(&fill_config(0, "[settings]\non_error = \"deny\"\n"));
    let server = Server::start(&project);
    // The receipts file cannot be written: a directory stands in its place.
    let receipts = project.state_dir().join("receipts.jsonl");
    let _ = std::fs::remove_file(&receipts);
    std::fs::create_dir_all(&receipts).expect("a directory in the receipts' place");
    let first = server.post(&project, &bash("sess-deny", "ls"));
    assert_eq!(
        first.json()["hookSpecificOutput"],
        json!({"hookEventName": "PreToolUse", "additionalContext": "[probe] refused: None; listed: 0"}),
        "answered as decided: {}",
        first.body
    );
    let next = server.post(&project, &bash("sess-deny", "ls")).json();
    let reason = next["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.starts_with("[sandrail] Refused because sandrail failed (the session's previous event was answered, but cannot write the receipt"),
        "{next}"
    );
    project.reconfigure(&fill_config(0, ""));
    server.post(&project, &bash("sess-allow", "ls"));
    let next = server.post(&project, &bash("sess-allow", "ls")).json();
    assert_eq!(
        next["hookSpecificOutput"]["permissionDecision"],
        Value::Null,
        "{next}"
    );
    assert!(
        next["systemMessage"].as_str().is_some_and(|m| m
            .contains("the session's previous event was answered, but cannot write the receipt")),
        "{next}"
    );
    let (status, said) = server.stop();
    assert!(status.success(), "{said}");
}
