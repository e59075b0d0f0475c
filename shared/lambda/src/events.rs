//! Lambda's HTTP events and the core's requests and replies, both ways: an invocation's proxy
//! event into a `lambda_http::Request` (its context as the request's extension, the X-Ray trace
//! id as its `x-amzn-trace-id` header), its body into `http::Request<Bytes>`, the platform's ids
//! and deadline into the request's extensions, and a [`Reply`] back into a proxy response (REST
//! or HTTP API, as the event was) or a streamed answer (the HTTP integration's prelude, then
//! each frame).
//!
//! Invariant: conversions only. Nothing here decides what a request means; every event still
//! goes through the core's ladder (or, for the routes beside `/mcp`, the Host/Origin allow-list
//! whose refusal [`forbidden`] writes).

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use http::header::{CONTENT_TYPE, SET_COOKIE};
use http::{HeaderMap, HeaderValue};
use lambda_http::aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayV2httpResponse};
use lambda_http::lambda_runtime::{Diagnostic, MetadataPrelude};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use relevo_protocol::{Deadline, Reply, RequestIds};
use relevo_state::TraceContext;

use crate::runtime::{Answer, Invocation, diagnostic};

/// Which proxy response an event wants: API Gateway's REST (payload 1.0) or HTTP API (2.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Rest,
    HttpApi,
}

/// The proxy event of `invocation` as a request carrying its Lambda context; an event that is
/// no API Gateway proxy event is the invocation's failure (the handler is not called).
pub(crate) fn http_event(invocation: Invocation) -> Result<(Request, Origin), Diagnostic> {
    let text = std::str::from_utf8(&invocation.body)
        .map_err(|e| diagnostic("InvalidEvent", format!("the event is not UTF-8: {e}")))?;
    let mut request = lambda_http::request::from_str(text).map_err(|e| {
        diagnostic(
            "InvalidEvent",
            format!("the event is not an API Gateway proxy event: {e}"),
        )
    })?;
    let origin = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(_)) => Origin::HttpApi,
        _ => Origin::Rest,
    };
    if let Some(trace) = invocation.context.xray_trace_id.as_deref()
        && let Ok(value) = HeaderValue::from_str(trace)
    {
        request.headers_mut().insert("x-amzn-trace-id", value);
    }
    Ok((request.with_lambda_context(invocation.context), origin))
}

/// A response as the proxy response `origin` reads: REST takes every header in
/// `multiValueHeaders`; the HTTP API takes `headers` (repeated ones joined) and `cookies`.
pub(crate) fn proxy_response(origin: Origin, response: Response<Body>) -> Answer {
    let (parts, body) = response.into_parts();
    let (is_base64_encoded, body) = match body {
        Body::Empty => (false, None),
        text @ Body::Text(_) => (false, Some(text)),
        binary @ Body::Binary(_) => (true, Some(binary)),
        _ => (false, None),
    };
    let status_code = i64::from(parts.status.as_u16());
    let json = match origin {
        Origin::Rest => {
            let mut out = ApiGatewayProxyResponse::default();
            out.status_code = status_code;
            out.multi_value_headers = parts.headers;
            out.body = body;
            out.is_base64_encoded = is_base64_encoded;
            serde_json::to_vec(&out)
        }
        Origin::HttpApi => {
            let mut headers = parts.headers;
            let mut out = ApiGatewayV2httpResponse::default();
            out.cookies = cookies(&mut headers);
            out.status_code = status_code;
            out.headers = headers;
            out.body = body;
            out.is_base64_encoded = is_base64_encoded;
            serde_json::to_vec(&out)
        }
    };
    match json {
        Ok(json) => Answer::Buffered(Bytes::from(json)),
        Err(error) => Answer::Failed(diagnostic("InvalidResponse", error)),
    }
}

/// The `Set-Cookie` values, taken out of `headers`.
fn cookies(headers: &mut HeaderMap) -> Vec<String> {
    let cookies = headers
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    headers.remove(SET_COOKIE);
    cookies
}

/// API Gateway's and Lambda's ids for this event, and the invocation's X-Ray trace
/// (`Lambda-Runtime-Trace-Id`), which the server continues when the caller sent no trace.
pub(crate) fn invocation_ids(event: &Request) -> (RequestIds, Option<TraceContext>) {
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

/// The reply as a streamed HTTP answer: the prelude (status, headers, cookies; a default
/// `Content-Type`) and its eight NUL bytes, then each SSE frame as it is produced.
pub(crate) fn streamed(reply: Reply) -> Answer {
    let (parts, body) = reply.into_parts();
    let mut headers = parts.headers;
    let cookies = cookies(&mut headers);
    headers
        .entry(CONTENT_TYPE)
        .or_insert(HeaderValue::from_static("application/octet-stream"));
    let prelude = MetadataPrelude {
        status_code: parts.status,
        headers,
        cookies,
    };
    let mut head = BytesMut::with_capacity(256).writer();
    if let Err(error) = serde_json::to_writer(&mut head, &prelude) {
        return Answer::Failed(diagnostic("InvalidResponse", error));
    }
    let mut head = head.into_inner();
    head.put_slice(&[0; 8]);
    Answer::streamed(head.freeze(), body.into_chunks().map(Ok))
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
