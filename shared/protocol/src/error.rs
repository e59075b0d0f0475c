//! Errors that leave the server as JSON-RPC error objects, each carrying its HTTP status.
//!
//! Ladder errors (transport, envelope, headers, version) use the statuses the spec fixes:
//! 400 for -32700/-32600/-32602(envelope)/-32020/-32021/-32022, 404 for -32601, 403 for a foreign
//! Host/Origin, 405/406/413/415 for transport faults. Errors produced while serving a valid
//! request (unknown tool, bad cursor, bad requestState) travel in-band on HTTP 200, because
//! clients read a 4xx without a recognised body as "this is a legacy server".
//!
//! A request the server could not finish now (the store failed or timed out, writes kept losing
//! to concurrent ones, the request ran out of time) is [`McpError::Retryable`]: HTTP 503 with
//! `Retry-After`, code `-31000`, and `data` saying it is retryable and why — never `-32603`,
//! which tells a client nothing it can act on.
//!
//! A caller over what it may hold ([`McpError::LimitReached`], `-31001`) or over a request-rate
//! quota ([`McpError::RateLimited`], `-31002`) gets HTTP 429 with `Retry-After`, and `data` with
//! `retryable: true`, a `reason` and `retryAfterSecs`: the same request may be sent again then.
//!
//! Handshake-era (2025-11-25) clients get the codes of their revision where they differ
//! ([`McpError::legacy_code`]), and every JSON-RPC error in-band on 200: to them a 404 means
//! "your session is gone, initialize again", so only [`McpError::SessionNotFound`] may use it.

use http::StatusCode;
use serde_json::{Value, json};

use crate::wire::code;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
/// Every error the server answers, with its JSON-RPC code ([`McpError::code`]), HTTP status
/// ([`McpError::status`]) and `data` ([`McpError::data`]).
pub enum McpError {
    #[error("Host or Origin not allowed: {0}")]
    /// The `Host` or `Origin` header (named in the text) is not on the allow-list (HTTP 403).
    ForbiddenOrigin(String),
    #[error("Method not allowed: this endpoint accepts POST only")]
    /// The HTTP method is not POST (HTTP 405).
    HttpMethodNotAllowed,
    #[error("Not acceptable: Accept must list application/json and text/event-stream")]
    /// `Accept` does not list both `application/json` and `text/event-stream` (HTTP 406).
    NotAcceptable,
    #[error("Unsupported media type: Content-Type must be application/json")]
    /// `Content-Type` is not `application/json` (HTTP 415).
    UnsupportedMediaType,
    #[error("Request body exceeds {limit} bytes")]
    /// The body is longer than the deployment allows (HTTP 413).
    BodyTooLarge {
        /// The largest body accepted, in bytes.
        limit: usize,
    },
    #[error("Parse error: {0}")]
    /// The body is not JSON (`-32700`, HTTP 400); the text is the parser's.
    Parse(String),
    #[error("Invalid request: {0}")]
    /// The body is JSON but not a valid JSON-RPC request (`-32600`, HTTP 400).
    InvalidRequest(String),
    #[error("Header mismatch: {0}")]
    /// A standard `Mcp-*` header disagrees with the body (`-32020`, HTTP 400).
    HeaderMismatch(String),
    #[error("Invalid params: {0}")]
    /// The request's `_meta` envelope is missing or malformed (`-32602`, HTTP 400).
    InvalidEnvelope(String),
    #[error("Unsupported protocol version")]
    /// The protocol version the request names is not served (`-32022`, HTTP 400); `data` lists
    /// the supported ones.
    UnsupportedVersion {
        /// The version the request named, if it named one.
        requested: Option<String>,
    },
    #[error("Method not found: {0}")]
    /// The method is not one this function serves (`-32601`, HTTP 404).
    MethodNotFound(String),
    #[error("{message}")]
    /// The request needs a client capability the client did not declare (`-32021`, HTTP 400).
    MissingCapability {
        /// Human-readable text naming the missing capabilities.
        message: String,
        /// The capabilities required, as a capabilities object (`{"sampling": {}}`).
        required: Value,
    },
    #[error("{message}")]
    /// The method's params are wrong (`-32602`, in-band on HTTP 200).
    InvalidParams {
        /// What is wrong, for the client.
        message: String,
        /// The error's `data` member, if any.
        data: Option<Value>,
    },
    #[error("Resource not found")]
    /// No resource has this URI (`-32602`, or `-32002` to a 2025-11-25 client; in-band on
    /// HTTP 200).
    ResourceNotFound {
        /// The URI the request named (sent as `data.uri`).
        uri: String,
    },
    #[error("Bad Request: the Mcp-Session-Id header is required after initialize")]
    /// A handshake-era request after `initialize` without `Mcp-Session-Id` (HTTP 400).
    SessionRequired,
    #[error("Session not found")]
    /// The handshake-era session is unknown, expired or ended (`-32001`, HTTP 404).
    SessionNotFound,
    #[error("Insufficient scope: requires {}", .0.join(" "))]
    /// The principal lacks the OAuth scopes listed: HTTP 403, answered as the authenticator's
    /// `insufficient_scope` challenge.
    InsufficientScope(Vec<String>),
    #[error("Temporarily unavailable ({}): {}", .0.as_str(), .0.advice())]
    /// The request could not be finished now and may be sent again (`-31000`, HTTP 503).
    Retryable(Retry),
    /// The caller holds the most it may of `what` (listen streams, sessions, jobs in flight…).
    #[error("Limit reached: at most {max} {what}")]
    LimitReached {
        /// What is limited, plural (`"listen streams"`); sent as `data.limit`.
        what: &'static str,
        /// The most the caller may hold at once.
        max: usize,
    },
    /// A request-rate quota of the deployment ([`crate::quota`]) is spent for this window.
    #[error("Rate limit reached: at most {limit} requests per {window_secs} s {}; retry in {retry_after_secs} s", match .tool {
        Some(tool) => format!("of tool {tool} for this tenant"),
        None => "for this tenant".to_string(),
    })]
    RateLimited {
        /// Whether the quota is per tenant or per tenant and tool.
        scope: crate::quota::QuotaScope,
        /// The tool whose quota is spent (scope `tool`).
        tool: Option<String>,
        /// Requests the quota allows per window.
        limit: u32,
        /// Length of the quota's window, in seconds.
        window_secs: u64,
        /// Seconds until the window ends and the request may be sent again.
        retry_after_secs: u64,
    },
    #[error("Internal error")]
    /// A bug on the server's side (`-32603`, in-band on HTTP 200); the cause is logged, never
    /// sent.
    Internal,
    /// A tool's successful result did not conform to its declared `outputSchema` (or held a
    /// number JSON cannot carry): the server's bug, logged with the tool's name where found.
    #[error("Internal error: the tool's result broke its outputSchema")]
    ResultBrokeOutputSchema,
}

/// Why a request may be retried as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The store refused to serve (throttling, an outage, a missing table).
    StoreUnavailable,
    /// The store did not answer within its operation timeout: a write may have been applied.
    StoreTimeout,
    /// Concurrent writes to the same record kept winning; the bounded retries ran out.
    Contention,
    /// The request ran out of time before its function's: a write may have been applied.
    Deadline,
    /// The same elicitation round (the same `requestState` with the same answer) is being run
    /// by another request right now ([`crate::author::rounds`]): a retry gets its recorded
    /// result once it is recorded; this request ran nothing.
    RoundInProgress,
}

/// When a caller at a limit of what it holds may look again (a stream, a session or a job may
/// have ended): `Retry-After` and `data.retryAfterSecs` of [`McpError::LimitReached`].
pub const LIMIT_RETRY_AFTER_SECS: u64 = 5;

impl Retry {
    /// The reason's wire name, sent as `data.reason` (`store_unavailable`, `contention`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Retry::StoreUnavailable => "store_unavailable",
            Retry::StoreTimeout => "store_timeout",
            Retry::Contention => "contention",
            Retry::Deadline => "deadline",
            Retry::RoundInProgress => "round_in_progress",
        }
    }

    /// Whether what the request wrote is unknown: the store may have applied a write whose
    /// answer never came (a timeout cannot promise "not written"). The answer says so
    /// (`data.outcome: "unknown"`); a retry with the same `idempotencyKey` converges to one effect.
    pub fn outcome_unknown(self) -> bool {
        matches!(self, Retry::StoreTimeout | Retry::Deadline)
    }

    /// What the client may do, in the error's message.
    pub fn advice(self) -> &'static str {
        if self == Retry::RoundInProgress {
            "another request is running this round now; a retry of the same request gets its result"
        } else if self.outcome_unknown() {
            "the outcome is unknown (a write may have been applied); a retry with the same idempotencyKey is safe"
        } else {
            "the request may be retried"
        }
    }

    /// How long a client should wait before retrying.
    pub fn retry_after_ms(self) -> u64 {
        match self {
            Retry::Contention => 200,
            Retry::RoundInProgress => 500,
            Retry::StoreUnavailable | Retry::StoreTimeout | Retry::Deadline => 1000,
        }
    }
}

/// A [`relevo_state::slots`] failure: a store failure, or contention (retryable).
pub fn slot_failure(error: relevo_state::slots::SlotError) -> McpError {
    match error {
        relevo_state::slots::SlotError::Store(error) => store_failure("limits")(error),
        relevo_state::slots::SlotError::Contention(_) => McpError::Retryable(Retry::Contention),
    }
}

/// The error a handler answers for a store failure, logged with its cause and `what` (the kind
/// of record read or written). A refused condition that reaches here (rather than being handled
/// by the caller) is contention; an unavailable or slow store is retryable; anything else is a
/// bug and stays internal.
pub fn store_failure(what: &'static str) -> impl Fn(relevo_state::StoreError) -> McpError {
    move |error| {
        use relevo_state::StoreError;
        let retry = match &error {
            StoreError::Unavailable(_) => Retry::StoreUnavailable,
            StoreError::TimedOut(_) => Retry::StoreTimeout,
            StoreError::Conflict { .. } => Retry::Contention,
            StoreError::AlreadyExists(_) | StoreError::NotFound => {
                tracing::error!(what, %error, cause = "unexpected store answer", "store failure");
                return McpError::Internal;
            }
        };
        tracing::warn!(what, %error, cause = retry.as_str(), "store failure: answered retryable");
        McpError::Retryable(retry)
    }
}

impl McpError {
    /// `-32602` with a message and no `data`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        McpError::InvalidParams {
            message: message.into(),
            data: None,
        }
    }

    /// `-32602` with a message and `data` (e.g. the schema violations found).
    pub fn invalid_params_with(message: impl Into<String>, data: Value) -> Self {
        McpError::InvalidParams {
            message: message.into(),
            data: Some(data),
        }
    }

    /// `-32602` "Resource not found" with `data.uri` (`-32002` to a 2025-11-25 client).
    pub fn resource_not_found(uri: impl Into<String>) -> Self {
        McpError::ResourceNotFound { uri: uri.into() }
    }

    /// `-32021` for a capability the request needed but the client did not declare, e.g.
    /// `missing_capability(json!({"sampling": {}}))`.
    pub fn missing_capability(required: Value) -> Self {
        let names: Vec<&str> = required
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        McpError::MissingCapability {
            message: format!("Missing required client capability: {}", names.join(", ")),
            required,
        }
    }

    /// The JSON-RPC error code on the stateless (2026-07-28) wire; see [`McpError::legacy_code`].
    pub fn code(&self) -> i32 {
        match self {
            McpError::ForbiddenOrigin(_)
            | McpError::HttpMethodNotAllowed
            | McpError::NotAcceptable
            | McpError::UnsupportedMediaType
            | McpError::BodyTooLarge { .. }
            | McpError::InvalidRequest(_)
            | McpError::SessionRequired
            | McpError::InsufficientScope(_) => code::INVALID_REQUEST,
            McpError::ResourceNotFound { .. } => code::INVALID_PARAMS,
            McpError::SessionNotFound => code::SESSION_NOT_FOUND,
            McpError::Parse(_) => code::PARSE_ERROR,
            McpError::HeaderMismatch(_) => code::HEADER_MISMATCH,
            McpError::InvalidEnvelope(_) | McpError::InvalidParams { .. } => code::INVALID_PARAMS,
            McpError::UnsupportedVersion { .. } => code::UNSUPPORTED_PROTOCOL_VERSION,
            McpError::MethodNotFound(_) => code::METHOD_NOT_FOUND,
            McpError::MissingCapability { .. } => code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            McpError::Retryable(_) => code::TEMPORARILY_UNAVAILABLE,
            McpError::LimitReached { .. } => code::LIMIT_REACHED,
            McpError::RateLimited { .. } => code::RATE_LIMITED,
            McpError::Internal | McpError::ResultBrokeOutputSchema => code::INTERNAL_ERROR,
        }
    }

    /// The HTTP status this error travels with on the stateless wire.
    pub fn status(&self) -> StatusCode {
        match self {
            McpError::ForbiddenOrigin(_) | McpError::InsufficientScope(_) => StatusCode::FORBIDDEN,
            McpError::HttpMethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            McpError::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            McpError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            McpError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            McpError::Parse(_)
            | McpError::InvalidRequest(_)
            | McpError::HeaderMismatch(_)
            | McpError::InvalidEnvelope(_)
            | McpError::UnsupportedVersion { .. }
            | McpError::SessionRequired
            | McpError::MissingCapability { .. } => StatusCode::BAD_REQUEST,
            McpError::MethodNotFound(_) | McpError::SessionNotFound => StatusCode::NOT_FOUND,
            McpError::InvalidParams { .. }
            | McpError::ResourceNotFound { .. }
            | McpError::Internal
            | McpError::ResultBrokeOutputSchema => StatusCode::OK,
            McpError::Retryable(_) => StatusCode::SERVICE_UNAVAILABLE,
            McpError::LimitReached { .. } | McpError::RateLimited { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
        }
    }

    /// The error object's `data` member, if this error carries one.
    pub fn data(&self) -> Option<Value> {
        match self {
            McpError::UnsupportedVersion { requested } => {
                let mut data = json!({ "supported": crate::wire::SUPPORTED_VERSIONS });
                if let Some(requested) = requested {
                    data["requested"] = json!(requested);
                }
                Some(data)
            }
            McpError::MissingCapability { required, .. } => {
                Some(json!({ "requiredCapabilities": required }))
            }
            McpError::InvalidParams { data, .. } => data.clone(),
            McpError::ResourceNotFound { uri } => Some(json!({ "uri": uri })),
            McpError::Retryable(retry) => {
                let mut data = json!({ "retryable": true, "reason": retry.as_str(), "retryAfterMs": retry.retry_after_ms() });
                if retry.outcome_unknown() {
                    data["outcome"] = json!("unknown");
                }
                Some(data)
            }
            McpError::LimitReached { what, max } => Some(json!({
                "limit": what, "max": max, "retryable": true, "reason": "limit_reached",
                "retryAfterSecs": LIMIT_RETRY_AFTER_SECS,
            })),
            McpError::RateLimited {
                scope,
                tool,
                limit,
                window_secs,
                retry_after_secs,
            } => {
                let mut data = json!({
                    "retryable": true, "reason": "rate_limited", "scope": scope.as_str(), "limit": limit,
                    "windowSecs": window_secs, "retryAfterSecs": retry_after_secs,
                });
                if let Some(tool) = tool {
                    data["tool"] = json!(tool);
                }
                Some(data)
            }
            _ => None,
        }
    }

    /// The code a 2025-11-25 client expects: `-32002` for a missing resource; the 2026-07-28
    /// codes it does not know (`-32020`, `-32021`, `-32022`) become `-32600`/`-32602`.
    pub fn legacy_code(&self) -> i32 {
        match self {
            McpError::ResourceNotFound { .. } => code::LEGACY_RESOURCE_NOT_FOUND,
            McpError::HeaderMismatch(_) | McpError::MissingCapability { .. } => {
                code::INVALID_REQUEST
            }
            McpError::UnsupportedVersion { .. } => code::INVALID_PARAMS,
            other => other.code(),
        }
    }

    /// Whole seconds a client should wait before sending the request again (`Retry-After`), for
    /// the errors that say so: a retryable failure, a reached limit, a spent rate.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            McpError::Retryable(retry) => Some(retry.retry_after_ms().div_ceil(1000).max(1)),
            McpError::LimitReached { .. } => Some(LIMIT_RETRY_AFTER_SECS),
            McpError::RateLimited {
                retry_after_secs, ..
            } => Some((*retry_after_secs).max(1)),
            _ => None,
        }
    }

    /// The status a 2025-11-25 client gets: transport faults keep theirs, JSON-RPC errors of a
    /// served request travel on 200.
    pub fn legacy_status(&self) -> StatusCode {
        match self {
            McpError::MethodNotFound(_)
            | McpError::HeaderMismatch(_)
            | McpError::MissingCapability { .. }
            | McpError::UnsupportedVersion { .. }
            | McpError::InvalidEnvelope(_) => StatusCode::OK,
            other => other.status(),
        }
    }

    /// [`McpError::to_response`] with the legacy code.
    pub fn to_legacy_response(&self, id: Option<&Value>) -> Value {
        let mut response = self.to_response(id);
        response["error"]["code"] = json!(self.legacy_code());
        response
    }

    /// The JSON-RPC error object: `{code, message, data?}`.
    pub fn to_error_object(&self) -> Value {
        let mut error = json!({ "code": self.code(), "message": self.to_string() });
        if let Some(data) = self.data() {
            error["data"] = data;
        }
        error
    }

    /// The whole JSON-RPC error response. `id` is omitted only when it could not be read.
    pub fn to_response(&self, id: Option<&Value>) -> Value {
        let mut response = json!({ "jsonrpc": "2.0", "error": self.to_error_object() });
        if let Some(id) = id {
            response["id"] = id.clone();
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_version_names_supported_and_requested() {
        let error = McpError::UnsupportedVersion {
            requested: Some("v999.0.0".into()),
        };
        let response = error.to_response(Some(&json!(7)));
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        assert_eq!(response["id"], 7);
        assert_eq!(response["error"]["code"], -32022);
        assert_eq!(response["error"]["data"]["requested"], "v999.0.0");
        assert_eq!(response["error"]["data"]["supported"][0], "2026-07-28");
    }

    #[test]
    fn missing_capability_data_is_a_capabilities_object() {
        let error = McpError::missing_capability(json!({"sampling": {}}));
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            error.to_error_object()["data"]["requiredCapabilities"],
            json!({"sampling": {}})
        );
    }

    #[test]
    fn handler_errors_travel_in_band() {
        assert_eq!(
            McpError::invalid_params("bad cursor").status(),
            StatusCode::OK
        );
        assert_eq!(
            McpError::MethodNotFound("ping".into()).status(),
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn legacy_clients_get_their_codes_in_band() {
        let missing = McpError::ResourceNotFound {
            uri: "test://x".into(),
        };
        assert_eq!(missing.code(), -32602);
        assert_eq!(missing.legacy_code(), -32002);
        assert_eq!(
            missing.to_legacy_response(Some(&json!(1)))["error"]["data"]["uri"],
            "test://x"
        );
        let unknown = McpError::MethodNotFound("server/discover".into());
        assert_eq!(
            (unknown.status(), unknown.legacy_status()),
            (StatusCode::NOT_FOUND, StatusCode::OK)
        );
        assert_eq!(
            McpError::SessionNotFound.legacy_status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            McpError::missing_capability(json!({"sampling": {}})).legacy_code(),
            -32600
        );
    }

    #[test]
    fn a_retryable_failure_says_so_and_is_not_an_internal_error() {
        let error = McpError::Retryable(Retry::Contention);
        assert_eq!(
            (error.status(), error.code()),
            (StatusCode::SERVICE_UNAVAILABLE, -31000)
        );
        let data = error.to_error_object()["data"].clone();
        assert_eq!(
            data,
            json!({ "retryable": true, "reason": "contention", "retryAfterMs": 200 })
        );
        let failure = store_failure("test");
        assert_eq!(
            failure(relevo_state::StoreError::TimedOut("x".into())),
            McpError::Retryable(Retry::StoreTimeout)
        );
        assert_eq!(
            failure(relevo_state::StoreError::NotFound),
            McpError::Internal
        );
    }

    #[test]
    fn a_timeout_answer_says_the_outcome_is_unknown_and_a_keyed_retry_is_safe() {
        for retry in [Retry::StoreTimeout, Retry::Deadline] {
            let error = McpError::Retryable(retry);
            assert_eq!(
                (error.status(), error.code()),
                (StatusCode::SERVICE_UNAVAILABLE, -31000)
            );
            let object = error.to_error_object();
            assert_eq!(
                object["data"],
                json!({ "retryable": true, "reason": retry.as_str(), "retryAfterMs": 1000, "outcome": "unknown" })
            );
            let message = object["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("outcome is unknown") && message.contains("same idempotencyKey"),
                "{message}"
            );
        }
        let refused = McpError::Retryable(Retry::StoreUnavailable).to_error_object();
        assert!(
            refused["data"].get("outcome").is_none(),
            "nothing was sent or applied: {refused}"
        );
    }

    #[test]
    fn a_spent_rate_is_a_429_that_says_which_quota_and_when_to_retry() {
        let error = McpError::RateLimited {
            scope: crate::quota::QuotaScope::Tool,
            tool: Some("cart_checkout".into()),
            limit: 30,
            window_secs: 60,
            retry_after_secs: 12,
        };
        assert_eq!(
            (error.status(), error.code(), error.legacy_code()),
            (StatusCode::TOO_MANY_REQUESTS, -31002, -31002)
        );
        assert_eq!(error.retry_after_secs(), Some(12));
        let object = error.to_error_object();
        assert_eq!(
            object["data"],
            json!({ "retryable": true, "reason": "rate_limited", "scope": "tool", "tool": "cart_checkout",
                "limit": 30, "windowSecs": 60, "retryAfterSecs": 12 })
        );
        assert_eq!(
            object["message"],
            "Rate limit reached: at most 30 requests per 60 s of tool cart_checkout for this tenant; retry in 12 s"
        );
        let held = McpError::LimitReached {
            what: "jobs in flight",
            max: 2,
        };
        assert_eq!(
            (held.status(), held.retry_after_secs()),
            (StatusCode::TOO_MANY_REQUESTS, Some(5))
        );
        assert_eq!(held.to_error_object()["data"]["reason"], "limit_reached");
    }

    #[test]
    fn parse_errors_have_no_id() {
        let response = McpError::Parse("eof".into()).to_response(None);
        assert!(response.get("id").is_none());
        assert_eq!(response["error"]["code"], -32700);
    }
}
