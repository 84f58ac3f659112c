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
