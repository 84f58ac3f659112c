//! The client half of the forwarding hook: a hook payload handed to the
//! `sandrail serve` listening on a Unix socket, and its answer read back. Both
//! `sandrail hook` (with `SANDRAIL_SERVE_SOCKET` set) and the small
//! `sandrail-hook` binary use it; this crate links nothing else of sandrail, so
//! the small binary starts about as fast as a process can.

use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use socket2::{Domain, SockAddr, Socket, Type};

/// The socket of the server to forward to.
pub const SOCKET_VAR: &str = "SANDRAIL_SERVE_SOCKET";
/// `1`: an unreachable server refuses the event instead of judging it locally.
pub const REQUIRED_VAR: &str = "SANDRAIL_SERVE_REQUIRED";
/// The header with which the server says "refuse without an answer" (what the
/// one-shot hook says by exiting 2): its value is the reason.
pub const BLOCK_HEADER: &str = "x-sandrail-block";
/// Marks a 400/413 as "the payload cannot be read, and the config lets it pass".
pub const UNREADABLE_HEADER: &str = "x-sandrail-unreadable";
/// The header an http hook names its project in (Claude Code: `"headers":
/// {"X-Sandrail-Project-Dir": "$CLAUDE_PROJECT_DIR"}` with `allowedEnvVars`).
/// Without it, the payload's `cwd` is the project.
pub const PROJECT_HEADER: &str = "x-sandrail-project-dir";
/// The forwarding hook's project and working directory, percent-encoded.
pub const PROJECT_ENCODED_HEADER: &str = "x-sandrail-project-dir-encoded";
pub const CWD_ENCODED_HEADER: &str = "x-sandrail-cwd-encoded";
/// The largest payload sent, as the server takes it.
pub const MAX_PAYLOAD_BYTES: usize = 16 << 20;

/// How long the whole exchange may take, from connecting to the answer's end.
/// An event's guardrails and its session lock have their own, shorter,
/// deadlines; past this the server is taken as unreachable. The harness's hook
/// timeout must be longer (Claude Code's default, 600 s, is).
pub const DEADLINE: Duration = Duration::from_secs(30);
/// The largest answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;
/// The binary this process runs, as a path: the server a `sandrail` process
/// forwarding its own events expects.
pub const THIS_BINARY: &str = "/proc/self/exe";
/// When the forwarding hook started (microseconds since the Unix epoch), for
/// the `sandrail hook` it falls back to: that hook's deadline then counts the
/// time already spent on the server, so the two together still answer before
/// the harness's timeout.
pub const STARTED_VAR: &str = "SANDRAIL_HOOK_STARTED";

/// `at`, as [`STARTED_VAR`] carries it.
pub fn start_stamp(at: std::time::SystemTime) -> String {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_micros())
        .to_string()
}

/// When this hook's event started: `now`, or earlier by the time the
/// forwarding hook that started it already spent ([`STARTED_VAR`]). Only a
/// start within the forwarding deadline (and a little) is taken: a stamp from
/// the future, or stale, cannot move the deadline, and an earlier start only
/// shortens it.
pub fn started_at(now: Instant) -> Instant {
    started_from(now, std::env::var(STARTED_VAR).ok().as_deref())
}

fn started_from(now: Instant, stamp: Option<&str>) -> Instant {
    let Some(stamp) = stamp.and_then(|v| v.parse::<u64>().ok()) else {
        return now;
    };
    let started = std::time::UNIX_EPOCH + Duration::from_micros(stamp);
    match std::time::SystemTime::now().duration_since(started) {
        Ok(spent) if spent <= DEADLINE + Duration::from_secs(5) => {
            now.checked_sub(spent).unwrap_or(now)
        }
        _ => now,
    }
}

/// Where to forward, from the hook's environment.
pub struct Forwarding {
    pub socket: PathBuf,
    pub required: bool,
}

impl Forwarding {
    pub fn from_env() -> Option<Forwarding> {
        let socket = std::env::var_os(SOCKET_VAR).filter(|s| !s.is_empty())?;
        Some(Forwarding {
            socket: PathBuf::from(socket),
            required: std::env::var(REQUIRED_VAR).is_ok_and(|v| v == "1"),
        })
    }
}

/// What the server answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Relayed {
    /// The harness's JSON, or nothing to say.
    Answer(Option<String>),
    /// Refuse without an answer, for this reason.
    Block(String),
    /// The payload could not be read and the config lets the event proceed.
    Unreadable(String),
}

#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("cannot reach sandrail serve at {socket}: {source}")]
    Connect {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("sandrail serve at {socket} did not answer: {source}")]
    Exchange {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("sandrail serve at {socket} answered {status}: {body}")]
    Status {
        socket: PathBuf,
        status: u16,
        body: String,
    },
    #[error("sandrail serve at {socket} answered something that is not its answer")]
    Garbled { socket: PathBuf },
    #[error("sandrail serve at {} did not answer within {} s", .0.display(), DEADLINE.as_secs())]
    Deadline(PathBuf),
    #[error(
        "what answers at {} is not the sandrail this hook judges with: process {pid} runs {}, not {} (a server of this user must run that binary; after an upgrade, restart the service)",
        socket.display(), running.display(), expected.display()
    )]
    NotSandrail {
        socket: PathBuf,
        pid: i32,
        running: PathBuf,
        expected: PathBuf,
    },
}

/// Sends `payload` to the server and reads its answer, all within [`DEADLINE`]:
/// a server that is stopped, or something at its socket that never accepts or
/// never answers, cannot hold the hook past it. Every wait is bounded by the
/// socket's own timeouts, set to what is left each time, so the hook starts no
/// thread to keep the time.
///
/// A server of this user must be running `server`, the sandrail binary the hook
/// would otherwise judge with ([`check_peer`]); nothing is sent to anything else.
pub fn forward(
    socket: &Path,
    payload: &[u8],
    origin: &Origin,
    server: &Path,
) -> Result<Relayed, ForwardError> {
    exchange(
        socket,
        payload,
        origin,
        Instant::now() + DEADLINE,
        Some(server),
    )
}

/// Whether `sandrail serve`, running `server`, accepts connections at `socket`
/// within `wait`: what `doctor` asks, without waiting on a listener whose queue
/// is full.
pub fn serves(socket: &Path, server: &Path, wait: Duration) -> Result<(), ForwardError> {
    let stream =
        connect(socket, Instant::now() + wait).map_err(|source| ForwardError::Connect {
            socket: socket.to_owned(),
            source,
        })?;
    check_peer(&stream, socket, server)
}

/// Who answers at the socket must be sandrail. A server of another user (the
/// managed one, `serve --system`) is vouched for by where its socket is, a
/// directory only root can place it in. One of this user — which the agent,
/// being this user, could have started in the real one's place, to answer
/// "allow" to everything — must be running `server`: the same file, by device
/// and inode, as the `/proc/<pid>/exe` of the process that listens. It is a
/// check against an impostor, not a boundary between processes of one user:
/// that is managed mode.
#[cfg(target_os = "linux")]
fn check_peer(stream: &Socket, socket: &Path, server: &Path) -> Result<(), ForwardError> {
    use std::os::unix::fs::MetadataExt;
    let peer =
        rustix::net::sockopt::socket_peercred(stream).map_err(|e| ForwardError::Connect {
            socket: socket.to_owned(),
            source: e.into(),
        })?;
    if peer.uid != rustix::process::getuid() {
        return Ok(());
    }
    let pid = peer.pid.as_raw_nonzero().get();
    let exe = PathBuf::from(format!("/proc/{pid}/exe"));
    let identity = |path: &Path| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    match (identity(&exe), identity(server)) {
        (Some(running), Some(expected)) if running == expected => Ok(()),
        _ => Err(ForwardError::NotSandrail {
            socket: socket.to_owned(),
            pid,
            running: std::fs::read_link(&exe).unwrap_or(exe),
            expected: std::fs::canonicalize(server).unwrap_or_else(|_| server.to_owned()),
        }),
    }
}

/// Elsewhere the listening process cannot be told from its socket alone.
#[cfg(not(target_os = "linux"))]
fn check_peer(_stream: &Socket, _socket: &Path, _server: &Path) -> Result<(), ForwardError> {
    Ok(())
}

/// A header value for a path: percent-encoded, so any bytes a path may hold
/// travel, and none can end the header.
fn encoded(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    percent_encoding::percent_encode(
        path.as_os_str().as_bytes(),
        percent_encoding::NON_ALPHANUMERIC,
    )
    .to_string()
}

/// The exchange; `server`, when given, is what a server of this user must run.
fn exchange(
    socket: &Path,
    payload: &[u8],
    origin: &Origin,
    deadline: Instant,
    server: Option<&Path>,
) -> Result<Relayed, ForwardError> {
    let failed = |source: std::io::Error, connecting: bool| {
        let socket = socket.to_owned();
        // Every wait is bounded by the deadline alone: one that timed out is it.
        match source.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => ForwardError::Deadline(socket),
            _ if connecting => ForwardError::Connect { socket, source },
            _ => ForwardError::Exchange { socket, source },
        }
    };
    let stream = connect(socket, deadline).map_err(|e| failed(e, true))?;
    if let Some(server) = server {
        check_peer(&stream, socket, server)?;
    }
    let mut request = format!(
        "POST /hook HTTP/1.1\r\nHost: sandrail\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        payload.len()
    );
    for (name, path) in [
        (PROJECT_ENCODED_HEADER, &origin.project),
        (CWD_ENCODED_HEADER, &origin.cwd),
    ] {
        if let Some(path) = path {
            request.push_str(&format!("{name}: {}\r\n", encoded(path)));
        }
    }
    request.push_str("\r\n");
    // One buffer, so that a small request is one write.
    let mut request = request.into_bytes();
    request.extend_from_slice(payload);
    send(&stream, &request, deadline).map_err(|e| failed(e, false))?;
    let raw = receive(&stream, deadline).map_err(|e| failed(e, false))?;
    parse(socket, &raw)
}

/// What is left of the time, or the error a socket gives when it runs out.
/// Under a millisecond counts as none: a socket timeout that rounds to zero
/// would mean no timeout at all.
fn left(deadline: Instant) -> std::io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left < Duration::from_millis(1) {
        return Err(ErrorKind::TimedOut.into());
    }
    Ok(left)
}

fn is_retried(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Interrupted | ErrorKind::WouldBlock | ErrorKind::TimedOut
    )
}

/// Connects, waiting for room in a listener's queue no longer than the deadline
/// (a connect on a Unix socket waits its send timeout for that).
fn connect(socket: &Path, deadline: Instant) -> std::io::Result<Socket> {
    let stream = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    stream.set_write_timeout(Some(left(deadline)?))?;
    stream.connect(&SockAddr::unix(socket)?)?;
    Ok(stream)
}

fn send(mut stream: &Socket, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    while !bytes.is_empty() {
        stream.set_write_timeout(Some(left(deadline)?))?;
        match stream.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            // Woken early, or by a signal: the next turn waits what is left.
            Err(e) if is_retried(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The whole answer, up to the server's closing the connection.
fn receive(mut stream: &Socket, deadline: Instant) -> std::io::Result<Vec<u8>> {
    let mut raw = Vec::with_capacity(1024);
    let mut chunk = [0u8; 16 << 10];
    loop {
        stream.set_read_timeout(Some(left(deadline)?))?;
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(raw),
            Ok(n) => {
                let room = MAX_ANSWER_BYTES.saturating_sub(raw.len());
                raw.extend_from_slice(&chunk[..n.min(room)]);
                if raw.len() >= MAX_ANSWER_BYTES {
                    return Ok(raw);
                }
            }
            Err(e) if is_retried(&e) => {}
            Err(e) => return Err(e),
        }
    }
}

/// The status, the block header and the body of an HTTP/1.1 answer read to its
/// end (the server closes the connection after it).
fn parse(socket: &Path, raw: &[u8]) -> Result<Relayed, ForwardError> {
    let garbled = || ForwardError::Garbled {
        socket: socket.to_owned(),
    };
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(garbled)?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|_| garbled())?;
    let body = String::from_utf8_lossy(&raw[split + 4..]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(garbled)?;
    let names: Vec<&str> = lines
        .filter_map(|line| line.split_once(':').map(|(name, _)| name.trim()))
        .collect();
    let has = |header: &str| names.iter().any(|n| n.eq_ignore_ascii_case(header));
    let body = body.trim();
    // What is printed must be what sandrail answers: nothing, or one JSON object.
    let answer_is_json = body.is_empty()
        || serde_json::from_str::<serde_json::Value>(body).is_ok_and(|v| v.is_object());
    match status {
        200 if has(BLOCK_HEADER) => Ok(Relayed::Block(block_reason(body))),
        200 if answer_is_json => Ok(Relayed::Answer(
            Some(body.to_owned()).filter(|b| !b.is_empty()),
        )),
        200 => Err(garbled()),
        // Only the server's own "unreadable, and the config lets it pass".
        400 | 413 if has(UNREADABLE_HEADER) => Ok(Relayed::Unreadable(body.to_owned())),
        status => Err(ForwardError::Status {
            socket: socket.to_owned(),
            status,
            body: one_line(body, 300),
        }),
    }
}

/// `text` on one line, at most `max` characters, no control character: what a
/// status answer says is safe to put on a terminal.
fn one_line(text: &str, max: usize) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(max)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// Where an event comes from, beyond its payload: the project the harness
/// names (`CLAUDE_PROJECT_DIR`) and the working directory.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The project the harness names outside the payload: `CLAUDE_PROJECT_DIR`
    /// for a command hook, a header for an http one. Without it, the payload's
    /// `cwd`.
    pub project: Option<PathBuf>,
    /// Where to look for the config when the payload cannot be read at all.
    pub cwd: Option<PathBuf>,
}

impl Origin {
    /// A hook process's: its environment and working directory.
    pub fn of_this_process() -> Origin {
        Origin {
            project: std::env::var_os("CLAUDE_PROJECT_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            cwd: std::env::current_dir().ok(),
        }
    }
}

/// The reason in the server's blocking decision.
fn block_reason(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("reason").and_then(|r| r.as_str()).map(str::to_owned))
        .unwrap_or_else(|| body.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(raw: &str) -> Result<Relayed, ForwardError> {
        parse(Path::new("/s"), raw.as_bytes())
    }

    #[test]
    fn answers_are_relayed_by_status() {
        assert_eq!(
            parsed("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}").ok(),
            Some(Relayed::Answer(Some("{}".into())))
        );
        assert_eq!(
            parsed("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").ok(),
            Some(Relayed::Answer(None))
        );
        assert_eq!(
            parsed("HTTP/1.1 200 OK\r\nX-Sandrail-Block: 1\r\n\r\n{\"decision\":\"block\",\"reason\":\"why\"}").ok(),
            Some(Relayed::Block("why".into()))
        );
        assert_eq!(
            parsed("HTTP/1.1 400 Bad Request\r\nX-Sandrail-Unreadable: 1\r\n\r\nsandrail: bad\n")
                .ok(),
            Some(Relayed::Unreadable("sandrail: bad".into()))
        );
        // Another 400 (a protocol error, a foreign listener) is no answer.
        assert!(matches!(
            parsed("HTTP/1.1 400 Bad Request\r\n\r\n"),
            Err(ForwardError::Status { status: 400, .. })
        ));
        // A 200 that is not one JSON object is not printed.
        assert!(matches!(
            parsed("HTTP/1.1 200 OK\r\n\r\n{}\r\nX-Sandrail-Block: 1"),
            Err(ForwardError::Garbled { .. })
        ));
        assert!(matches!(
            parsed("HTTP/1.1 500 Oops\r\n\r\nx"),
            Err(ForwardError::Status { status: 500, .. })
        ));
        assert!(matches!(
            parsed("garbage"),
            Err(ForwardError::Garbled { .. })
        ));
    }

    /// A socket in a directory of its own that goes away with the test.
    fn scratch_socket(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("sandrail-forward-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir.join("s")
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_millis(300)
    }

    #[test]
    fn a_server_that_accepts_and_never_answers_runs_out_the_deadline() {
        let path = scratch_socket("silent");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let started = Instant::now();
        let relayed = exchange(&path, b"{}", &Origin::default(), soon(), None);
        assert!(
            matches!(relayed, Err(ForwardError::Deadline(_))),
            "{relayed:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(listener);
    }

    #[test]
    fn a_listener_whose_queue_is_full_runs_out_the_deadline() {
        let path = scratch_socket("full");
        let listener = Socket::new(Domain::UNIX, Type::STREAM, None).expect("socket");
        listener
            .bind(&SockAddr::unix(&path).expect("addr"))
            .expect("bind");
        listener.listen(0).expect("listen");
        // Never accepted: these fill its queue.
        let mut queued = Vec::new();
        for _ in 0..8 {
            let Ok(stream) = connect(&path, Instant::now() + Duration::from_millis(50)) else {
                break;
            };
            queued.push(stream);
        }
        let started = Instant::now();
        let relayed = exchange(&path, b"{}", &Origin::default(), soon(), None);
        assert!(
            matches!(
                relayed,
                Err(ForwardError::Deadline(_) | ForwardError::Connect { .. })
            ),
            "{relayed:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_server_of_this_user_must_run_the_expected_binary() {
        let path = scratch_socket("peer");
        let _listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        // The listener is this test process: running this binary, not another.
        let this = Path::new("/proc/self/exe");
        assert!(serves(&path, this, Duration::from_secs(1)).is_ok());
        let other = Path::new("/bin/sh");
        let refused = serves(&path, other, Duration::from_secs(1));
        assert!(
            matches!(&refused, Err(ForwardError::NotSandrail { pid, .. }) if *pid == std::process::id() as i32),
            "{refused:?}"
        );
        let relayed = exchange(&path, b"{}", &Origin::default(), soon(), Some(other));
        assert!(
            matches!(relayed, Err(ForwardError::NotSandrail { .. })),
            "{relayed:?}"
        );
    }

    #[test]
    fn a_forwarding_hook_s_start_counts_only_within_its_deadline() {
        let now = Instant::now();
        let ago = |secs: u64| start_stamp(std::time::SystemTime::now() - Duration::from_secs(secs));
        let ahead = start_stamp(std::time::SystemTime::now() + Duration::from_secs(60));
        let took = now - started_from(now, Some(&ago(10)));
        assert!(
            took >= Duration::from_secs(10) && took < Duration::from_secs(12),
            "{took:?}"
        );
        for stale_or_wrong in [Some(ago(60)), Some(ahead), Some("soon".to_owned()), None] {
            assert_eq!(
                started_from(now, stale_or_wrong.as_deref()),
                now,
                "{stale_or_wrong:?}"
            );
        }
    }

    #[test]
    fn nothing_at_the_socket_is_a_failure_to_connect() {
        let path = scratch_socket("absent");
        let relayed = exchange(&path, b"{}", &Origin::default(), soon(), None);
        assert!(
            matches!(relayed, Err(ForwardError::Connect { .. })),
            "{relayed:?}"
        );
    }
}
