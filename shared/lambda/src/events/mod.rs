//! Lambda's HTTP events and the core's requests and replies, both ways: an invocation's proxy
//! event into the core's `http::Request<Bytes>` ([`proxy`]; the platform's ids, deadline and
//! X-Ray trace as the request's extensions, the trace also as its `x-amzn-trace-id` header), and
//! a [`Reply`] back into a proxy response (REST, or HTTP API and Function URL, as the event was)
//! or a streamed answer (the HTTP integration's prelude, then each frame).
//!
//! Invariant: conversions only. Nothing here decides what a request means; every event still
//! goes through the core's ladder (or, for the routes beside `/mcp`, the Host/Origin allow-list
//! whose refusal [`forbidden`] writes).

mod proxy;

use std::sync::OnceLock;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use http::Request;
use http::header::{CONTENT_TYPE, SET_COOKIE};
use http::{HeaderMap, HeaderValue};
use lambda_http::aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayV2httpResponse};
use lambda_http::lambda_runtime::{Diagnostic, MetadataPrelude};
use lambda_http::{Body, Response};
use relevo_protocol::{Deadline, Reply, RequestIds};
use relevo_state::TraceContext;

use crate::runtime::{Answer, Invocation, diagnostic};

/// Which proxy response an event wants: API Gateway's REST (payload 1.0) or HTTP API (2.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Rest,
    HttpApi,
}

/// The proxy event of `invocation` as the core's request, carrying the invocation's ids,
/// deadline and trace; an event that is no proxy event is the invocation's failure (the handler
/// is not called).
pub(crate) fn http_event(invocation: Invocation) -> Result<(Request<Bytes>, Origin), Diagnostic> {
    let read =
        proxy::read(&invocation.body, ignore_stage()).map_err(|e| diagnostic("InvalidEvent", e))?;
    let mut request = read.request;
    let context = invocation.context;
    let xray = context.xray_trace_id.as_deref();
    if let Some(value) = xray.and_then(|trace| HeaderValue::from_str(trace).ok()) {
        request.headers_mut().insert("x-amzn-trace-id", value);
    }
    let xray = xray.and_then(TraceContext::from_xray);
    let extensions = request.extensions_mut();
    if let Some(deadline) = invocation_deadline(context.deadline) {
        extensions.insert(deadline);
    }
    let lambda = Some(context.request_id).filter(|id| !id.is_empty());
    extensions.insert(RequestIds {
        apigw: read.request_id,
        lambda,
    });
    if let Some(xray) = xray {
        extensions.insert(xray);
    }
    Ok((request, read.origin))
}

/// `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH` is set (the template sets it): the path is the
/// client's, not `/<stage>/…`. Read once: an environment's variables do not change.
fn ignore_stage() -> bool {
    static IGNORE: OnceLock<bool> = OnceLock::new();
    *IGNORE.get_or_init(|| std::env::var_os("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH").is_some())
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

/// The invocation's deadline (`deadline`, Unix milliseconds) less a margin
/// (`RELEVO_DEADLINE_MARGIN_MS`, 1.5 s): a handler still running then is stopped and the caller
/// hears a retryable error while the function is alive, inside the front door's limit (the
/// function's timeout is at most its integration's, which the deploy check enforces).
fn invocation_deadline(deadline: u64) -> Option<Deadline> {
    static MARGIN: OnceLock<u64> = OnceLock::new();
    let margin = *MARGIN.get_or_init(|| {
        std::env::var("RELEVO_DEADLINE_MARGIN_MS")
            .ok()
            .and_then(|m| m.parse().ok())
            .unwrap_or(1500)
    });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    let left = deadline.checked_sub(now)?.saturating_sub(margin);
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
