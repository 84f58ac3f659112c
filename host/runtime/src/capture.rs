//! A guardrail's stdout and stderr: kept up to a bound, the rest counted and
//! dropped, so a chatty guardrail is truncated rather than failed.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// One captured stream; clones share the buffer.
#[derive(Clone)]
pub struct Capture {
    inner: Arc<Mutex<Buffer>>,
}

struct Buffer {
    kept: Vec<u8>,
    capacity: usize,
    dropped: usize,
}

impl Capture {
    pub fn new(capacity: usize) -> Self {
        Capture {
            inner: Arc::new(Mutex::new(Buffer {
                kept: Vec::new(),
                capacity,
                dropped: 0,
            })),
        }
    }

    /// What was kept, and how many bytes past the bound were dropped.
    pub fn contents(&self) -> (Vec<u8>, usize) {
        let buffer = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        (buffer.kept.clone(), buffer.dropped)
    }

    /// Replaces what was kept (the dropped count stays).
    pub fn replace(&self, bytes: &[u8]) {
        let mut buffer = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        buffer.kept = bytes.to_vec();
    }

    fn keep(&self, bytes: &[u8]) {
        let mut buffer = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let room = buffer.capacity.saturating_sub(buffer.kept.len());
        let taken = bytes.len().min(room);
        buffer.kept.extend_from_slice(&bytes[..taken]);
        buffer.dropped += bytes.len() - taken;
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for Capture {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.keep(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A Rust guest's panic in what it printed to stderr: `panicked at LOCATION:
/// MESSAGE` in one line, and the text with the panic's lines removed (they are
/// said once, in the failure's own line). None when it printed no panic.
pub fn panic_in(stderr: &str) -> Option<(String, String)> {
    let at = stderr.find("panicked at ")?;
    // The panic's report starts at its line (`thread '…' panicked at …`).
    let start = stderr[..at].rfind('\n').map_or(0, |n| n + 1);
    let report = &stderr[at + "panicked at ".len()..];
    let (location, rest) = report.split_once(":\n").unwrap_or((report.trim_end(), ""));
    let mut message = Vec::new();
    let mut end = stderr.len();
    let mut offset = stderr.len() - rest.len();
    for line in rest.split_inclusive('\n') {
        if line.starts_with("note: run with `RUST_BACKTRACE") {
            offset += line.len();
            end = offset;
            break;
        }
        message.push(line.trim_end());
        offset += line.len();
        end = offset;
    }
    let message = message.join(" ");
    let one_line = if message.is_empty() {
        format!("panicked at {location}")
    } else {
        format!("panicked at {location}: {message}")
    };
    let remaining = format!("{}{}", &stderr[..start], &stderr[end..]);
    Some((one_line, remaining))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_read_into_one_line() {
        let printed = "before\nthread '<unnamed>' panicked at src/lib.rs:12:5:\nunknown key `limt`\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        let (line, rest) = panic_in(printed).expect("a panic");
        assert_eq!(line, "panicked at src/lib.rs:12:5: unknown key `limt`");
        assert_eq!(rest, "before\n");
        assert_eq!(panic_in("just a log line\n"), None);
    }
}
