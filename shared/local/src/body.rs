//! Reading a request body under a size limit without cutting the client off.
//!
//! A body over the limit is refused (413), but the refusal must reach a client that writes its
//! whole body before it reads: if the server answers and closes while the client still sends,
//! the client sees a broken pipe or a reset, never the 413. So the rest of an oversized body is
//! read and thrown away — bounded by [`DRAIN_BYTES`] and [`DRAIN_TIME`], so a caller cannot make
//! us read for ever — and only a client past those bounds has its connection closed under it.
//! Nothing beyond `limit` bytes is ever held.

use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;

/// The most of an oversized body read (and discarded) so that its sender can read the answer.
pub const DRAIN_BYTES: usize = 16 * 1024 * 1024;
/// The longest an oversized body is read for.
pub const DRAIN_TIME: Duration = Duration::from_secs(10);
/// The longest a body may take to arrive (a client that trickles it holds a connection).
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a body was not read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Over the limit. `drained`: the rest was read, so the connection can carry the answer.
    #[error("the request body exceeds {limit} bytes")]
    TooLarge { limit: usize, drained: bool },
    /// The client broke off while sending.
    #[error("the request body could not be read")]
    Broken,
    /// The body did not arrive within [`BODY_READ_TIMEOUT`].
    #[error("the request body did not arrive within {} s", BODY_READ_TIMEOUT.as_secs())]
    TooSlow,
}

/// The whole body if it is at most `limit` bytes.
pub async fn read_limited(body: Body, limit: usize) -> Result<Bytes, BodyError> {
    read_within(body, limit, BODY_READ_TIMEOUT).await
}

async fn read_within(body: Body, limit: usize, within: Duration) -> Result<Bytes, BodyError> {
    let deadline = tokio::time::Instant::now() + within;
    let mut body = body;
    let mut kept = BytesMut::new();
    loop {
        let Ok(next) = tokio::time::timeout_at(deadline, body.frame()).await else {
            return Err(BodyError::TooSlow);
        };
        let Some(frame) = next else { break };
        let frame = frame.map_err(|_| BodyError::Broken)?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if kept.len() + data.len() > limit {
            let drained = drain(body, kept.len() + data.len()).await;
            return Err(BodyError::TooLarge { limit, drained });
        }
        kept.extend_from_slice(&data);
    }
    Ok(kept.freeze())
}

/// Reads and discards the rest of `body` within the drain bounds; true when it reached the end.
async fn drain(mut body: Body, already: usize) -> bool {
    let deadline = tokio::time::Instant::now() + DRAIN_TIME;
    let mut read = already;
    loop {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(None) => return true,
            Ok(Some(Ok(frame))) => {
                read += frame.data_ref().map_or(0, Bytes::len);
                if read > DRAIN_BYTES {
                    return false;
                }
            }
            Ok(Some(Err(_))) | Err(_) => return false,
        }
    }
}

/// Marks a refusal whose body was not drained: the connection closes after it.
pub fn close_unless_drained(response: &mut http::Response<Body>, error: BodyError) {
    if matches!(
        error,
        BodyError::TooLarge { drained: false, .. } | BodyError::Broken | BodyError::TooSlow
    ) {
        response.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_within_the_limit_is_read_whole() {
        assert_eq!(
            read_limited(Body::from("12345"), 5).await,
            Ok(Bytes::from("12345"))
        );
    }

    #[tokio::test]
    async fn an_oversized_body_is_refused_after_it_was_read_to_its_end() {
        assert_eq!(
            read_limited(Body::from(vec![b'x'; 1000]), 10).await,
            Err(BodyError::TooLarge {
                limit: 10,
                drained: true
            })
        );
    }

    #[tokio::test]
    async fn a_body_that_trickles_past_the_timeout_is_refused() {
        use futures_util::StreamExt;
        let first =
            futures_util::stream::once(async { Ok::<_, std::io::Error>(Bytes::from_static(b"{")) });
        let never = futures_util::stream::pending::<Result<Bytes, std::io::Error>>();
        let body = Body::from_stream(first.chain(never));
        let read = read_within(body, 100, Duration::from_millis(100)).await;
        assert_eq!(read, Err(BodyError::TooSlow));
    }

    #[tokio::test]
    async fn a_body_past_the_drain_bound_is_not_read_to_its_end() {
        let chunks = (0..(DRAIN_BYTES / 65536 + 2))
            .map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![0u8; 65536])));
        let body = Body::from_stream(futures_util::stream::iter(chunks));
        assert_eq!(
            read_limited(body, 10).await,
            Err(BodyError::TooLarge {
                limit: 10,
                drained: false
            })
        );
    }
}
