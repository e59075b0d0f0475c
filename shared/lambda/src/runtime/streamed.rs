//! A streamed answer's body as the Runtime API reads it: a head (an HTTP integration's JSON
//! prelude and its eight NUL bytes), then each frame of the answer as it is produced, then the
//! end — or, when the answer fails part way, the error trailers
//! (`Lambda-Runtime-Function-Error-Type: Runtime.StreamError` and the message, base64).
//!
//! Invariants:
//! - The head leaves in one write with the first frame when that frame is ready at once (a
//!   JSON answer is one frame): a small answer is one chunk on the wire, not three.
//! - Nothing is spawned: hyper polls this body directly while it writes the request, so a frame
//!   is written in the poll that produced it.
//! - A panic while producing a frame (in a build that unwinds) ends the stream with the error
//!   trailers, as any other failure does; the environment serves on.

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine;
use bytes::{Bytes, BytesMut};
use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue};
use http_body::Frame;

use super::Error;
use super::api::{STREAM_ERROR_BODY, STREAM_ERROR_TYPE};

type Frames = BoxStream<'static, Result<Bytes, Error>>;

/// The body of a streamed answer.
pub(crate) struct Streamed {
    head: Option<Bytes>,
    frames: Frames,
    trailers: Option<HeaderMap>,
    ended: bool,
}

impl Streamed {
    /// `head` (empty for none), then `frames`.
    pub(crate) fn new(
        head: Bytes,
        frames: impl Stream<Item = Result<Bytes, Error>> + Send + 'static,
    ) -> Streamed {
        Streamed {
            head: (!head.is_empty()).then_some(head),
            frames: AssertUnwindSafe(frames)
                .catch_unwind()
                .map(|frame| frame.unwrap_or_else(|panic| Err(panicked(panic))))
                .boxed(),
            trailers: None,
            ended: false,
        }
    }

    fn fail(&mut self, error: &Error) {
        self.trailers = Some(error_trailers(error));
        self.ended = true;
    }
}

impl http_body::Body for Streamed {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if let Some(head) = this.head.take() {
            // The first frame joins the head when it is ready now.
            let data = match this.frames.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(first))) => {
                    let mut joined = BytesMut::with_capacity(head.len() + first.len());
                    joined.extend_from_slice(&head);
                    joined.extend_from_slice(&first);
                    joined.freeze()
                }
                Poll::Ready(Some(Err(error))) => {
                    this.fail(&error);
                    head
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    head
                }
                Poll::Pending => head,
            };
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if let Some(trailers) = this.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        if this.ended {
            return Poll::Ready(None);
        }
        match this.frames.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(Frame::data(frame)))),
            Poll::Ready(Some(Err(error))) => {
                this.ended = true;
                Poll::Ready(Some(Ok(Frame::trailers(error_trailers(&error)))))
            }
            Poll::Ready(None) => {
                this.ended = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.head.is_none() && self.trailers.is_none()
    }
}

/// The trailers that end a failed stream (the message base64, as the Runtime API reads it).
fn error_trailers(error: &Error) -> HeaderMap {
    let mut trailers = HeaderMap::new();
    trailers.insert(
        STREAM_ERROR_TYPE,
        HeaderValue::from_static("Runtime.StreamError"),
    );
    let body = base64::engine::general_purpose::STANDARD.encode(error.to_string());
    if let Ok(body) = HeaderValue::from_str(&body) {
        trailers.insert(STREAM_ERROR_BODY, body);
    }
    trailers
}

/// A panic's message as an error (its payload is a `&str` or a `String` when it has one).
pub(crate) fn panicked(panic: Box<dyn std::any::Any + Send>) -> Error {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    format!("the function panicked: {message}").into()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn frames(body: Streamed) -> Vec<Frame<Bytes>> {
        let mut body = std::pin::pin!(body);
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            out.push(frame.unwrap());
        }
        out
    }

    #[tokio::test]
    async fn a_ready_answer_leaves_with_its_head_as_one_frame() {
        let body = Streamed::new(
            Bytes::from_static(b"{\"statusCode\":200}\0\0\0\0\0\0\0\0"),
            futures_util::stream::iter([Ok(Bytes::from_static(b"{\"result\":{}}"))]),
        );
        let out = frames(body).await;
        assert_eq!(out.len(), 1, "head and answer in one frame");
        assert_eq!(
            out[0].data_ref().unwrap().as_ref(),
            b"{\"statusCode\":200}\0\0\0\0\0\0\0\0{\"result\":{}}"
        );
    }

    #[tokio::test]
    async fn a_failure_part_way_ends_with_the_error_trailers() {
        let body = Streamed::new(
            Bytes::new(),
            futures_util::stream::iter([
                Ok(Bytes::from_static(b"data: one\n\n")),
                Err(Error::from("the store went away")),
                Ok(Bytes::from_static(b"never sent")),
            ]),
        );
        let out = frames(body).await;
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data_ref().unwrap().as_ref(), b"data: one\n\n");
        let trailers = out[1].trailers_ref().unwrap();
        assert_eq!(trailers[STREAM_ERROR_TYPE], "Runtime.StreamError");
        let message = base64::engine::general_purpose::STANDARD
            .decode(trailers[STREAM_ERROR_BODY].as_bytes())
            .unwrap();
        assert_eq!(message, b"the store went away");
    }

    #[tokio::test]
    async fn a_panicking_frame_ends_the_stream_with_the_error_trailers() {
        let body = Streamed::new(
            Bytes::from_static(b"head"),
            futures_util::stream::once(async { panic!("boom") }),
        );
        let out = frames(body).await;
        assert_eq!(out[0].data_ref().unwrap().as_ref(), b"head");
        let trailers = out[1].trailers_ref().unwrap();
        let message = base64::engine::general_purpose::STANDARD
            .decode(trailers[STREAM_ERROR_BODY].as_bytes())
            .unwrap();
        assert_eq!(message, b"the function panicked: boom");
    }
}
