//! Results and errors as HTTP replies, for both wires: the JSON-RPC envelope and its
//! decoration, JSON and SSE bodies, and the status and headers each error fixes.
//!
//! Invariants:
//! - A 2026-07-28 result carries `resultType` and the server's info in `_meta` (the whole
//!   `Implementation` on `server/discover`, its name and version elsewhere); a 2025-11-25
//!   result leaves in its own revision's shape (no `resultType`, `ttlMs` or `cacheScope`).
//! - Every error is a JSON-RPC error with the status its wire fixes ([`crate::error`]), with
//!   `Allow` on a 405 and `Retry-After` on a retryable failure, a reached limit or a spent rate.
//! - Building a reply never panics: a body that does not serialize is a 500 internal error.
//! - An SSE reply is marked uncacheable and unbuffered for proxies.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{McpServer, RESULT_TYPE_HEADER, Reply, ReplyBody};
use crate::auth::AuthChallenge;
use crate::error::McpError;
use crate::ladder::ValidRequest;
use crate::wire::{JsonObject, meta};
use std::time::Duration;

impl McpServer {
    /// Adds `resultType` and `serverInfo` and wraps the result in a JSON-RPC response. A legacy
    /// result leaves in its own revision's shape: no `resultType`, `ttlMs`, `cacheScope` or
    /// `_meta` server info (the client learned that from `initialize`).
    pub(super) fn decorate(
        &self,
        request: &ValidRequest,
        result: JsonObject,
        result_type: &str,
    ) -> Value {
        let result = self.decorate_result(request, result, result_type);
        json!({ "jsonrpc": "2.0", "id": request.id, "result": result })
    }

    fn decorate_result(
        &self,
        request: &ValidRequest,
        mut result: JsonObject,
        result_type: &str,
    ) -> JsonObject {
        if request.is_legacy() {
            for key in ["resultType", "ttlMs", "cacheScope"] {
                result.remove(key);
            }
            return result;
        }
        result.insert("resultType".into(), json!(result_type));
        // `server/discover` carries the whole `Implementation` (title, description, website,
        // icons); every other result names the server and its version only, so a `data:` icon
        // does not ride on every answer.
        let server_info = if request.method == crate::method::Method::Discover {
            self.app.server_info()
        } else {
            json!({ "name": self.app.name, "version": self.app.version })
        };
        match result.get_mut("_meta") {
            Some(Value::Object(meta_object)) => {
                meta_object.insert(meta::SERVER_INFO.into(), server_info);
            }
            _ => {
                result.insert("_meta".into(), json!({ meta::SERVER_INFO: server_info }));
            }
        }
        result
    }

    /// The reply to a request that ends here: [`Self::decorate`], serialized without building
    /// the envelope as a value.
    pub(super) fn result_reply(
        &self,
        request: &ValidRequest,
        result: JsonObject,
        result_type: &str,
    ) -> Reply {
        let result = self.decorate_result(request, result, result_type);
        let mut reply = json_reply(
            StatusCode::OK,
            &Success {
                id: &request.id,
                jsonrpc: "2.0",
                result: &result,
            },
        );
        if let Ok(value) = HeaderValue::from_str(result_type) {
            reply.headers_mut().insert(RESULT_TYPE_HEADER, value);
        }
        reply
    }
}

/// A JSON-RPC success response, fields in the order `json!` writes them.
#[derive(serde::Serialize)]
struct Success<'a> {
    id: &'a Value,
    jsonrpc: &'static str,
    result: &'a JsonObject,
}

pub(super) fn cacheable(mut result: JsonObject, ttl_ms: u64) -> JsonObject {
    result.insert("ttlMs".into(), json!(ttl_ms));
    result.insert("cacheScope".into(), json!("public"));
    result
}

pub(crate) fn challenge_reply(challenge: &AuthChallenge) -> Reply {
    let body = json!({ "error": challenge.error, "error_description": challenge.description });
    let mut reply = json_reply(challenge.status, &body);
    if let Ok(value) = HeaderValue::from_str(&challenge.www_authenticate) {
        reply.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    reply
}

pub(crate) fn sse_reply(frames: mpsc::UnboundedReceiver<Bytes>, keepalive: Duration) -> Reply {
    let mut reply = Response::new(ReplyBody::Sse { frames, keepalive });
    let headers = reply.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    reply
}

/// The answer to a POST whose request was cancelled (2025-11-25 `notifications/cancelled`): an
/// SSE stream that ends at once, carrying no response for the cancelled request.
pub(crate) fn cancelled_reply(keepalive: Duration) -> Reply {
    let (_, frames) = mpsc::unbounded_channel();
    let mut reply = sse_reply(frames, keepalive);
    reply
        .headers_mut()
        .insert(RESULT_TYPE_HEADER, HeaderValue::from_static("cancelled"));
    reply
}

pub(crate) fn sse_frame(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

pub(crate) fn json_reply(status: StatusCode, body: &impl serde::Serialize) -> Reply {
    let (status, bytes) = match serde_json::to_vec(body) {
        Ok(bytes) => (status, bytes),
        // Only a map with non-string keys fails to serialize; our bodies have none.
        Err(error) => {
            tracing::error!(%error, "a reply did not serialize");
            let internal = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#;
            (StatusCode::INTERNAL_SERVER_ERROR, internal.to_vec())
        }
    };
    let mut reply = Response::new(ReplyBody::Full(Bytes::from(bytes)));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    reply
}

pub(crate) fn empty(status: StatusCode) -> Reply {
    let mut reply = Response::new(ReplyBody::Full(Bytes::new()));
    *reply.status_mut() = status;
    reply
}

pub(crate) fn legacy_error_reply(id: Option<&Value>, error: &McpError) -> Reply {
    let mut reply = json_reply(error.legacy_status(), &error.to_legacy_response(id));
    retry_headers(&mut reply, error);
    reply
}

pub(crate) fn error_reply(id: Option<&Value>, error: &McpError) -> Reply {
    let mut reply = json_reply(error.status(), &error.to_response(id));
    retry_headers(&mut reply, error);
    reply
}

/// `Allow` on a 405, `Retry-After` (whole seconds) on a retryable failure, a reached limit or a
/// spent rate ([`McpError::retry_after_secs`]).
fn retry_headers(reply: &mut Reply, error: &McpError) {
    if let McpError::HttpMethodNotAllowed = error {
        reply
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
    }
    if let Some(secs) = error.retry_after_secs() {
        reply
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
}
