//! The Runtime API's connections: plain TCP to `AWS_LAMBDA_RUNTIME_API`, with `TCP_NODELAY`, and
//! `TCP_QUICKACK` before every read once the Runtime API has been seen waiting for our ACKs.
//!
//! Why, on a connection kept for the life of the environment:
//! - `TCP_NODELAY`: our writes (a request head, a streamed answer's frames) leave when written;
//!   without it Nagle's algorithm holds each small write until the previous one is
//!   acknowledged.
//! - `TCP_QUICKACK`, only where it is needed: a Runtime API that writes an answer as a head and
//!   a body without `TCP_NODELAY` of its own (Python's `http.server`, some emulators) holds the
//!   body until its head is acknowledged; on a kept connection Linux delays that ACK (40 ms or
//!   more) once the exchange looks interactive, and each invocation would wait for it twice
//!   (its event, the answer's receipt). Lambda's own Runtime API is a Go server (`TCP_NODELAY`
//!   by default) and local Lambda mode's sets it too: for them a quick ACK changes nothing but
//!   one pure ACK packet per read, which cost about 4 % of an invocation's CPU at 8 in flight
//!   (`make bench`). So the connections watch for the wait instead ([`Stalls`]): the rest of an
//!   answer arriving [`STALL`] after its start, [`STALLS_SEEN`] times in the environment, turns
//!   quick ACKs on for every connection from then on. Linux clears quick-ACK mode by itself, so
//!   it is set again before each read (one `setsockopt`, no `unsafe`: `socket2`).
//!
//! Threat model: the Runtime API is the platform's; what it can make us do here is send ACKs
//! sooner. A busy environment that is late reading an answer's rest may be taken for a waiting
//! Runtime API, which costs the pure ACKs and nothing else.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// How long a connection to the Runtime API may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects to the Runtime API (`http://host:port`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Connector;

impl tower::Service<Uri> for Connector {
    type Response = TokioIo<Quick>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TokioIo<Quick>>> + Send>>;

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
            Ok(TokioIo::new(Quick {
                stream,
                stalls: Stalls::default(),
            }))
        })
    }
}

/// How late the rest of an answer must come, after its start was read and the rest waited for,
/// to be taken for a delayed ACK's wait: Linux delays an ACK 40 ms at least (`TCP_DELACK_MIN`)
/// and 200 ms at most (`TCP_DELACK_MAX`); a little under and over, for the timers' slack.
pub(crate) const STALL: std::ops::Range<Duration> =
    Duration::from_millis(30)..Duration::from_millis(250);

/// Waits seen (in this environment, on any connection) before quick ACKs are turned on: one
/// could be a busy moment of ours; a Runtime API that needs them makes every invocation wait
/// twice.
pub(crate) const STALLS_SEEN: u32 = 2;

/// The waits seen so far in this environment.
static STALLS: AtomicU32 = AtomicU32::new(0);

/// Whether this environment's connections ask for quick ACKs.
fn quick_acks() -> bool {
    STALLS.load(Ordering::Relaxed) >= STALLS_SEEN
}

/// What one connection watches to see a Runtime API wait for our ACK: bytes of an answer read,
/// then a read that had to wait, then the rest arriving within [`STALL`].
#[derive(Debug, Default)]
pub(crate) struct Stalls {
    /// Bytes were read since our last write: an answer has started.
    answer_started: bool,
    /// When a read after the answer's start found nothing to read.
    waiting_since: Option<Instant>,
}

impl Stalls {
    /// We wrote: what comes next is a new answer.
    pub(crate) fn wrote(&mut self) {
        *self = Stalls::default();
    }

    /// A read found nothing at `now`.
    pub(crate) fn waiting(&mut self, now: Instant) {
        if self.answer_started && self.waiting_since.is_none() {
            self.waiting_since = Some(now);
        }
    }

    /// A read returned bytes at `now`: whether they were an answer's rest held for our ACK.
    pub(crate) fn read(&mut self, now: Instant) -> bool {
        let held = self
            .waiting_since
            .take()
            .is_some_and(|since| STALL.contains(&now.saturating_duration_since(since)));
        self.answer_started = true;
        held
    }
}

/// A Runtime API connection that asks for quick ACKs before each read once the environment has
/// seen the Runtime API wait for them (module docs).
#[derive(Debug)]
pub(crate) struct Quick {
    stream: TcpStream,
    stalls: Stalls,
}

impl Quick {
    fn quickack(&self) {
        // Best effort: a socket that refuses the option still works, only slower with a
        // Runtime API that writes in pieces.
        let _ = socket2::SockRef::from(&self.stream).set_tcp_quickack(true);
    }
}

impl Connection for Quick {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl AsyncRead for Quick {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if quick_acks() {
            this.quickack();
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        match &polled {
            Poll::Pending => this.stalls.waiting(Instant::now()),
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                if this.stalls.read(Instant::now())
                    && STALLS.fetch_add(1, Ordering::Relaxed) + 1 == STALLS_SEEN
                {
                    tracing::info!(
                        "the Runtime API waits for our ACKs before the rest of an answer: quick \
                         ACKs from now on"
                    );
                    this.quickack();
                }
            }
            Poll::Ready(_) => {}
        }
        polled
    }
}

impl AsyncWrite for Quick {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.stalls.wrote();
        }
        written
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.stalls.wrote();
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rest_of_an_answer_held_for_a_delayed_ack_is_a_stall() {
        let (mut stalls, at) = (Stalls::default(), Instant::now());
        stalls.wrote();
        assert!(!stalls.read(at), "the answer's start");
        stalls.waiting(at);
        assert!(
            stalls.read(at + Duration::from_millis(41)),
            "its rest, 41 ms later"
        );
    }

    #[test]
    fn a_long_poll_answered_late_is_no_stall() {
        let (mut stalls, at) = (Stalls::default(), Instant::now());
        stalls.wrote();
        stalls.waiting(at);
        assert!(
            !stalls.read(at + Duration::from_millis(100)),
            "nothing of the answer had come: the Runtime API had no invocation yet"
        );
    }

    #[test]
    fn a_rest_that_comes_at_once_or_much_later_is_no_stall() {
        let (mut stalls, at) = (Stalls::default(), Instant::now());
        stalls.wrote();
        stalls.read(at);
        stalls.waiting(at);
        assert!(!stalls.read(at + Duration::from_millis(1)));
        stalls.waiting(at);
        assert!(!stalls.read(at + Duration::from_secs(2)));
    }

    #[test]
    fn our_write_starts_a_new_answer() {
        let (mut stalls, at) = (Stalls::default(), Instant::now());
        stalls.read(at);
        stalls.wrote();
        stalls.waiting(at);
        assert!(!stalls.read(at + Duration::from_millis(50)));
    }
}
