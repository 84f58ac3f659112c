//! `sandrail serve`: a resident engine answering hook payloads POSTed over HTTP —
//! Claude Code's `http` hooks — on a TCP address, a Unix socket or both, exactly
//! as `sandrail hook` answers them on stdin, with each component compiled and
//! linked once for the life of the process.
//!
//! Each request is one event, judged on a blocking thread through the same
//! pipeline as the one-shot hook ([`crate::hook::run`]): the session's lock
//! serialises the events of one session and lets sessions run in parallel, and
//! `sandrail hook` processes on the same state directory take the same locks.
//! A refusal is a 200 carrying the harness's JSON decision, because Claude Code
//! takes a non-2xx answer as a non-blocking error. A payload that cannot be read,
//! or is over the payload limit, is refused under the config's `on_error =
//! "deny"` (a 200 blocking decision), and answered 400 (413) otherwise; a method
//! other than POST 405, another path 404.
//!
//! The events of one session are judged one at a time in the order they
//! arrived, queued inside the server ([`sessions`]). An event is answered as
//! soon as it is decided; its state is committed and its receipt written after,
//! on the same thread, before the session's next event is judged, and what
//! could not be saved is charged to that next event ([`hook::Owed`]). A connection beyond its
//! user's share or the server's waits its turn rather than being refused
//! ([`admission`]), so one user's agent cannot shut the others out of a shared
//! server and a burst of parallel tool calls is never refused for load. A
//! client has 10 s to send its request head once served and 10 s more for its
//! body. SIGINT and SIGTERM close the listeners (and remove the socket file) at
//! once, let every request in flight or waiting finish (its event committed and
//! answered) within 30 s, then end the process.

mod admission;
mod sessions;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::engine::Engine;
use crate::hook::{self, Origin, Outcome};
use crate::locations::Places;
use crate::protocol::{HookInput, MAX_PAYLOAD_BYTES};
use crate::receipts::otlp::{self, Exporter};
use admission::{Admission, Ticket};
use sessions::{Sessions, Turn};

pub use sandrail_forward::{
    CWD_ENCODED_HEADER, PROJECT_ENCODED_HEADER, PROJECT_HEADER, UNREADABLE_HEADER,
};

/// The paths a payload may be POSTed to.
const HOOK_PATHS: [&str; 2] = ["/", "/hook"];

/// How long a client has to send its request head, and then its body: a stalled
/// client is dropped rather than holding a connection and its buffer.
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The most connections accepted at once, waiting or served; past it, new ones
/// wait in the listen queue.
const MAX_ACCEPTED: usize = 4096;

/// How long shutdown waits for the requests in flight (each event is bounded by
/// its guardrails' deadlines and the lock timeout well within it).
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The most events judged at once; more wait for a thread.
const MAX_EVENTS_AT_ONCE: usize = 64;
// Each event judged has a guardrail's sandbox open at most: the pool holds them.
const _: () = assert!(MAX_EVENTS_AT_ONCE <= crate::runtime::SANDBOXES_AT_ONCE as usize);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("nothing to listen on: give --listen 127.0.0.1:PORT, --socket PATH, or both")]
    NoListener,
    #[error("cannot listen on {place}: {source}")]
    Bind {
        place: String,
        source: std::io::Error,
    },
    #[error(
        "{0} answers connections: another server is running there; stop it, or choose another path"
    )]
    SocketInUse(PathBuf),
    #[error("cannot start the server: {0}")]
    Executor(std::io::Error),
    #[error("cannot start the WebAssembly runtime: {0}")]
    Runtime(String),
}

/// Where to listen.
#[derive(Debug, Clone, Default)]
pub struct Listen {
    pub tcp: Option<SocketAddr>,
    pub socket: Option<PathBuf>,
    /// The socket's mode: 0600 (this user's alone) unless the server judges
    /// other users' agents.
    pub socket_mode: u32,
}

/// Serves until SIGINT or SIGTERM. `ready` is told where it listens (the TCP
/// address with its port resolved) once it accepts connections.
pub fn serve(
    listen: Listen,
    places: Places,
    ready: impl FnOnce(&[String]),
) -> Result<(), ServeError> {
    if listen.tcp.is_none() && listen.socket.is_none() {
        return Err(ServeError::NoListener);
    }
    let executor = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(MAX_EVENTS_AT_ONCE)
        .thread_name("sandrail-serve")
        .enable_io()
        .enable_time()
        .build()
        .map_err(ServeError::Executor)?;
    // It lives as long as the process: never dropped, so never torn down from
    // inside the executor, and shared by every request without counting.
    let exporter = Exporter::start(executor.handle());
    let engine: &'static Engine = Box::leak(Box::new(
        Engine::resident(places)
            .map_err(|e| ServeError::Runtime(format!("{e:#}")))?
            .exporting(exporter.clone()),
    ));
    executor.block_on(async move {
        let tcp =
            match listen.tcp {
                Some(addr) => Some(tokio::net::TcpListener::bind(addr).await.map_err(
                    |source| ServeError::Bind {
                        place: addr.to_string(),
                        source,
                    },
                )?),
                None => None,
            };
        let unix = match &listen.socket {
            Some(path) => Some(bind_socket(path, listen.socket_mode)?),
            None => None,
        };
        let mut places = Vec::new();
        if let Some(listener) = &tcp {
            let addr = listener.local_addr().map_err(|source| ServeError::Bind {
                place: "the TCP address".into(),
                source,
            })?;
            places.push(format!("http://{addr}"));
        }
        if let Some(path) = &listen.socket {
            places.push(format!("unix:{}", path.display()));
        }
        ready(&places);
        accept_until_signalled(tcp, unix, listen.socket.as_deref(), engine).await;
        exporter.flush(otlp::FLUSH_GRACE).await;
        Ok(())
    })
}

/// Binds the Unix socket with `mode` (its owner's alone, unless other users'
/// agents are judged). A socket file left by a server that is gone is replaced;
/// one a server answers on is not.
fn bind_socket(path: &Path, mode: u32) -> Result<tokio::net::UnixListener, ServeError> {
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(ServeError::SocketInUse(path.to_owned()));
    }
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type())
    {
        let _ = std::fs::remove_file(path);
    }
    let bind_error = |source| ServeError::Bind {
        place: path.display().to_string(),
        source,
    };
    // Bound inside a fresh owner-only directory, given its mode, then moved into
    // place: at no moment can a user it is not meant for connect to it.
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let private = tempfile::Builder::new()
        .prefix(".sandrail-socket-")
        .tempdir_in(parent)
        .map_err(bind_error)?;
    let staged = private.path().join("socket");
    let listener = tokio::net::UnixListener::bind(&staged).map_err(bind_error)?;
    std::fs::set_permissions(&staged, std::os::unix::fs::PermissionsExt::from_mode(mode))
        .and_then(|()| std::fs::rename(&staged, path))
        .map_err(bind_error)?;
    Ok(listener)
}

async fn accept_until_signalled(
    tcp: Option<tokio::net::TcpListener>,
    unix: Option<tokio::net::UnixListener>,
    socket: Option<&Path>,
    engine: &'static Engine,
) {
    let graceful = GracefulShutdown::new();
    let accepted = Arc::new(tokio::sync::Semaphore::new(MAX_ACCEPTED));
    let admission = Admission::new();
    let sessions = Arc::new(Sessions::default());
    let mut shutdown = std::pin::pin!(signalled());
    loop {
        let held = tokio::select! {
            () = &mut shutdown => break,
            permit = Arc::clone(&accepted).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let connection = tokio::select! {
            () = &mut shutdown => break,
            Some(stream) = accept_tcp(tcp.as_ref()) => Connection::Tcp(stream),
            Some(stream) = accept_unix(unix.as_ref()) => Connection::Unix(stream),
        };
        let uid = match &connection {
            Connection::Tcp(_) => None,
            Connection::Unix(stream) => {
                Some(stream.peer_cred().map(|c| c.uid()).unwrap_or(u32::MAX))
            }
        };
        // Over the flood guard: closed at once, its slot free again.
        let Some(ticket) = admission.arrive(uid) else {
            continue;
        };
        let served = Served {
            engine,
            sessions: Arc::clone(&sessions),
        };
        let watcher = graceful.watcher();
        match connection {
            Connection::Tcp(stream) => serve_connection(watcher, stream, served, (held, ticket)),
            Connection::Unix(stream) => serve_connection(watcher, stream, served, (held, ticket)),
        }
    }
    // No new connection from here on: a client is refused at once, not queued.
    drop(tcp);
    drop(unix);
    if let Some(path) = socket {
        let _ = std::fs::remove_file(path);
    }
    eprintln!("sandrail: shutting down: finishing the events in flight");
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!(
            "sandrail: connections still open after {} s are dropped",
            SHUTDOWN_GRACE.as_secs()
        );
    }
}

/// What every request is judged with.
#[derive(Clone)]
struct Served {
    engine: &'static Engine,
    sessions: Arc<Sessions>,
}

enum Connection {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
}

/// The next TCP connection; never, without a TCP listener.
async fn accept_tcp(listener: Option<&tokio::net::TcpListener>) -> Option<tokio::net::TcpStream> {
    let listener = listener?;
    loop {
        match listener.accept().await {
            Ok((stream, _)) => return Some(stream),
            Err(e) => accept_failed(&e).await,
        }
    }
}

async fn accept_unix(
    listener: Option<&tokio::net::UnixListener>,
) -> Option<tokio::net::UnixStream> {
    let listener = listener?;
    loop {
        match listener.accept().await {
            Ok((stream, _)) => return Some(stream),
            Err(e) => accept_failed(&e).await,
        }
    }
}

/// An accept that failed (out of file descriptors, say): said, and retried a
/// moment later rather than spun on.
async fn accept_failed(e: &std::io::Error) {
    eprintln!("sandrail: cannot accept a connection: {e}");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
}

/// Serves one connection once it is admitted (its user's share and the
/// server's place), on a task of its own.
fn serve_connection<S>(
    watcher: hyper_util::server::graceful::Watcher,
    stream: S,
    served: Served,
    held: (tokio::sync::OwnedSemaphorePermit, Ticket),
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let Some(places) = held.1.admitted().await else {
            eprintln!(
                "sandrail: a connection waited {} s for its turn and is closed",
                admission::SEAT_WAIT.as_secs()
            );
            return;
        };
        let service = service_fn(move |request| answer(request, served.clone()));
        // A client that does not finish its request head in time is dropped, so
        // idle connections cannot pile up.
        let connection = http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .serve_connection(TokioIo::new(stream), service);
        if let Err(e) = watcher.watch(connection).await
            && crate::debug_logging()
        {
            eprintln!("sandrail: a connection ended: {e}");
        }
        drop((places, held));
    });
}

/// Resolves on SIGINT or SIGTERM.
async fn signalled() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut interrupt), Ok(mut terminate)) => {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        }
        _ => {
            eprintln!("sandrail: cannot watch for SIGINT/SIGTERM; stop the server with SIGKILL");
            std::future::pending::<()>().await;
        }
    }
}

/// One request: one event.
async fn answer(
    request: Request<Incoming>,
    served: Served,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let engine = served.engine;
    // The harness's timeout runs from when it sent the request.
    let arrived = std::time::Instant::now();
    if request.method() != Method::POST {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "sandrail serve answers hook payloads POSTed as JSON",
        );
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return Ok(response);
    }
    if !HOOK_PATHS.contains(&request.uri().path()) {
        return Ok(plain(
            StatusCode::NOT_FOUND,
            "POST hook payloads to / (or /hook)",
        ));
    }
    let origin = origin_of(request.headers());
    let project = origin.project;
    let cwd = origin.cwd;
    let body = Limited::new(request.into_body(), MAX_PAYLOAD_BYTES).collect();
    let body = match tokio::time::timeout(BODY_READ_TIMEOUT, body).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            // As `sandrail hook` takes an oversize payload: `on_error` decides.
            let why = format!("the hook payload is larger than {MAX_PAYLOAD_BYTES} bytes");
            let origin = Origin { project, cwd };
            let outcome = tokio::task::spawn_blocking(move || {
                hook::unreadable(&why, &origin, &engine.places)
            })
            .await;
            return Ok(match outcome {
                Ok(outcome) if outcome.block.is_some() => respond(outcome),
                _ => unreadable(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("the hook payload is larger than {MAX_PAYLOAD_BYTES} bytes"),
                ),
            });
        }
        Ok(Err(e)) => {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                &format!("the request body could not be read: {e}"),
            ));
        }
        Err(_) => {
            return Ok(plain(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "the request body did not arrive within {} s",
                    BODY_READ_TIMEOUT.as_secs()
                ),
            ));
        }
    };
    let origin = Origin { project, cwd };
    let read = HookInput::read(&body[..]);
    // The session's turn, waited for here rather than on a thread.
    let mut turn = match &read {
        Ok(input) => Some(served.sessions.turn(&input.session_id).await),
        Err(_) => None,
    };
    // Answered as soon as it is decided; its state and receipt are saved next,
    // on the same thread, before the session's turn passes to its next event.
    let (answered, answer) = tokio::sync::oneshot::channel();
    tokio::task::spawn_blocking(move || {
        let owed = turn.as_mut().map(Turn::take_owed).unwrap_or_default();
        let (outcome, unsettled) =
            hook::judge_answering_first(read, &origin, engine, arrived, owed);
        let _ = answered.send(outcome);
        if let Some(unsettled) = unsettled {
            let owed = unsettled.settle();
            if let Some(turn) = turn.as_mut() {
                turn.owe(owed);
            }
        }
        drop(turn);
    });
    Ok(match answer.await {
        Ok(outcome) => respond(outcome),
        Err(_) => {
            eprintln!("sandrail: an event's evaluation ended abnormally (see above)");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the event's evaluation ended abnormally; see the server's stderr",
            )
        }
    })
}

/// The HTTP answer to a judged event.
fn respond(outcome: Outcome) -> Response<Full<Bytes>> {
    if let Some(answer) = outcome.answer {
        return json(answer);
    }
    if let Some(reason) = outcome.block {
        // What a command hook says by exiting 2, an http hook says in JSON; the
        // header lets a forwarding hook exit 2 as the one-shot hook would.
        let mut response =
            json(serde_json::json!({"decision": "block", "reason": reason}).to_string());
        response
            .headers_mut()
            .insert(crate::forward::BLOCK_HEADER, HeaderValue::from_static("1"));
        return response;
    }
    if let Some(why) = outcome.unreadable {
        return unreadable(StatusCode::BAD_REQUEST, &why);
    }
    // Nothing to say: a 2xx with an empty body.
    Response::new(Full::new(Bytes::new()))
}

/// A payload that could not be read, under a config that lets the event proceed:
/// marked, so a forwarding hook tells it from any other 400.
fn unreadable(status: StatusCode, why: &str) -> Response<Full<Bytes>> {
    let mut response = plain(status, why);
    response
        .headers_mut()
        .insert(UNREADABLE_HEADER, HeaderValue::from_static("1"));
    response
}

/// Where the event comes from: the project the forwarding hook sends
/// percent-encoded (any bytes a path may hold), else the one Claude Code's http
/// hook names in [`PROJECT_HEADER`] (its raw bytes: a path need not be UTF-8);
/// and the forwarding hook's working directory, for a payload that cannot be read.
fn origin_of(headers: &hyper::HeaderMap) -> Origin {
    use std::os::unix::ffi::OsStrExt;
    let decoded = |name: &str| {
        headers.get(name).map(|value| {
            let bytes: Vec<u8> = percent_encoding::percent_decode(value.as_bytes()).collect();
            PathBuf::from(std::ffi::OsStr::from_bytes(&bytes))
        })
    };
    let raw = headers
        .get(PROJECT_HEADER)
        .map(|value| PathBuf::from(std::ffi::OsStr::from_bytes(value.as_bytes())));
    let project = decoded(PROJECT_ENCODED_HEADER)
        .or(raw)
        .filter(|p| !p.as_os_str().is_empty());
    Origin {
        project,
        cwd: decoded(CWD_ENCODED_HEADER).filter(|p| !p.as_os_str().is_empty()),
    }
}

fn json(body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("sandrail: {text}\n"))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
