//! Lambda's HTTP events and the core's requests and replies, both ways: a proxy event's body
//! into `http::Request<Bytes>`, the platform's ids and deadline into the request's extensions,
//! and a [`Reply`] back into a buffered body or a stream of frames.
//!
//! Invariant: conversions only. Nothing here decides what a request means; every event still
//! goes through the core's ladder (or, for the routes beside `/mcp`, the Host/Origin allow-list
//! whose refusal [`forbidden`] writes).

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use http_body::Frame;
use http_body_util::StreamBody;
use lambda_http::{Body, Request, Response};
use relevo_protocol::{Deadline, Reply, RequestIds};
use relevo_state::TraceContext;

/// API Gateway's and Lambda's ids for this event, and the invocation's X-Ray trace
/// (`Lambda-Runtime-Trace-Id`), which the server continues when the caller sent no trace.
pub(crate) fn invocation_ids(event: &Request) -> (RequestIds, Option<TraceContext>) {
    use lambda_http::RequestExt;
    use lambda_http::request::RequestContext;
    let apigw = match event.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(context)) => context.request_id.clone(),
        Some(RequestContext::ApiGatewayV2(context)) => context.request_id.clone(),
        _ => None,
    };
    let context = event.lambda_context_ref();
    let lambda = context
        .map(|c| c.request_id.clone())
        .filter(|id| !id.is_empty());
    let xray = context
        .and_then(|c| c.xray_trace_id.as_deref())
        .and_then(TraceContext::from_xray);
    (RequestIds { apigw, lambda }, xray)
}

/// The invocation's deadline less a margin (`RELEVO_DEADLINE_MARGIN_MS`, 1.5 s): a handler still
/// running then is stopped and the caller hears a retryable error while the function is alive,
/// inside the front door's limit (the function's timeout is at most its integration's, which the
/// deploy check enforces).
pub(crate) fn invocation_deadline(event: &Request) -> Option<Deadline> {
    use lambda_http::RequestExt;
    let context = event.lambda_context_ref()?;
    let margin = std::env::var("RELEVO_DEADLINE_MARGIN_MS")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(1500u64);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    let left = context.deadline.checked_sub(now)?.saturating_sub(margin);
    Some(Deadline::after(Duration::from_millis(left)))
}

/// The whole reply as one proxy response body (text when it is UTF-8).
pub(crate) async fn buffered(reply: Reply) -> Response<Body> {
    let (parts, body) = reply.into_parts();
    let bytes = body.collect().await;
    let body = match String::from_utf8(bytes.to_vec()) {
        Ok(text) if text.is_empty() => Body::Empty,
        Ok(text) => Body::Text(text),
        Err(error) => Body::Binary(error.into_bytes()),
    };
    Response::from_parts(parts, body)
}

pub(crate) type ChunkBody = StreamBody<BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

/// The reply as a streamed response: each SSE frame as it is produced.
pub(crate) fn streamed(reply: Reply) -> Response<ChunkBody> {
    let (parts, body) = reply.into_parts();
    Response::from_parts(
        parts,
        StreamBody::new(
            body.into_chunks()
                .map(|chunk| Ok(Frame::data(chunk)))
                .boxed(),
        ),
    )
}

/// A proxy event's parts and body as the core's request.
pub(crate) fn http_request(
    parts: lambda_http::http::request::Parts,
    body: Body,
) -> lambda_http::http::Request<Bytes> {
    let bytes = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(binary) => Bytes::from(binary),
        _ => Bytes::new(),
    };
    lambda_http::http::Request::from_parts(parts, bytes)
}

/// 403 for a Host or Origin outside the allow-list, as `/mcp` answers it.
pub(crate) fn forbidden(refused: &relevo_protocol::McpError) -> Response<Body> {
    let body =
        serde_json::json!({ "error": "forbidden", "error_description": refused.to_string() });
    let mut response = Response::new(Body::Text(body.to_string()));
    *response.status_mut() = lambda_http::http::StatusCode::FORBIDDEN;
    response.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    response
}
