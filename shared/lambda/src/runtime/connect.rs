//! The Runtime API's connections: plain TCP to `AWS_LAMBDA_RUNTIME_API`, with `TCP_NODELAY`, and
//! `TCP_QUICKACK` renewed before every read.
//!
//! Why both, on a connection kept for the life of the environment:
//! - `TCP_NODELAY`: our writes (a request head, a streamed answer's frames) leave when written;
//!   without it Nagle's algorithm holds each small write until the previous one is
//!   acknowledged.
//! - `TCP_QUICKACK`: the Runtime API's writes are acknowledged at once. A Runtime API that writes
//!   an answer as a head and a body without `TCP_NODELAY` of its own (Python's `http.server`,
//!   some emulators) holds the body until its head is acknowledged; on a kept connection Linux
//!   delays that ACK (~40 ms) once the exchange looks interactive, and each invocation would
//!   wait for it twice (its event, the answer's receipt). Lambda's own Runtime API is a Go
//!   server (`TCP_NODELAY` by default), for which the option changes nothing but one pure ACK.
//!   Linux clears quick-ACK mode by itself, so it is set again before each read (one
//!   `setsockopt`, no `unsafe`: `socket2`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// How long a connection to the Runtime API may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects to the Runtime API (`http://host:port`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Connector;

impl tower::Service<Uri> for Connector {
    type Response = Quick;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Quick>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(async move {
            let host = uri
                .host()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no host"))?;
            let address = format!("{host}:{}", uri.port_u16().unwrap_or(80));
            let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connecting timed out"))??;
            stream.set_nodelay(true)?;
            Ok(Quick(TokioIo::new(stream)))
        })
    }
}

/// A Runtime API connection that asks for quick ACKs before each read.
#[derive(Debug)]
pub(crate) struct Quick(TokioIo<TcpStream>);

impl Quick {
    fn quickack(&self) {
        // Best effort: a socket that refuses the option still works, only slower with a
        // Runtime API that writes in pieces.
        let _ = socket2::SockRef::from(self.0.inner()).set_tcp_quickack(true);
    }
}

impl Connection for Quick {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl Read for Quick {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        self.quickack();
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl Write for Quick {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
