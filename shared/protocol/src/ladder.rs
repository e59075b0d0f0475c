//! The validation ladder: every check a request passes before any handler runs, in the order
//! the spec and the conformance suite fix.
//!
//! 1. Host / Origin allow-list (403) — DNS rebinding. The authority is read by
//!    [`crate::authority`] (one `Host`, no userinfo, agreeing with an absolute-form target).
//! 2. HTTP method POST (405 with `Allow: POST`), `Accept` (406), `Content-Type` (415), body size (413).
//! 3. JSON-RPC parse (-32700) and shape (-32600); notifications stop here with 202.
//! 4. Era, body first: a `_meta` envelope naming a protocol version, or a modern
//!    `MCP-Protocol-Version` header, selects the stateless wire (the rungs below). Anything else
//!    is a handshake-era (2025-11-25) message, handed on as [`Validated::Legacy`] when this
//!    deployment serves legacy sessions; without them, a legacy `initialize` gets 400 / -32022
//!    naming the supported versions. The header never selects legacy over an envelope.
//! 5. `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` against the body, Base64 sentinel, case and
//!    whitespace rules, duplicates (400 / -32020). `Mcp-Param-*` values are read at any depth
//!    of `properties`; integers compare exactly and must lie within ±(2^53 − 1).
//! 6. `MCP-Protocol-Version` header against `_meta` (400 / -32020).
//! 7. `_meta` envelope keys (400 / -32602).
//! 8. Supported version (400 / -32022).
//! 9. Known method (404 / -32601), then the function's own method (400 / -32020).
//!
//! Threat model: every byte of the request is attacker-controlled. Nothing here panics on any
//! input, allocates beyond the body limit, or lets a header override the body (the body is the
//! authority; headers are only checked against it).
//!
//! Work linear in the input: the body is refused over `max_body_bytes` before it is parsed,
//! and parsed once; each header is read once ([`crate::headers`]); `Mcp-Param-*` costs one
//! header lookup and one path walk per `x-mcp-header` the tool declares (the operator's, fixed
//! at registration), and an integer header value is read digit by digit and refused beyond 30
//! digits, before it is built; `Accept` and `Content-Type` are split once at `,` and `;`.

use bytes::Bytes;
use http::{HeaderMap, Request};
use serde_json::Value;

use crate::authority::{self, Authority, Host};
use crate::error::McpError;
use crate::headers;
use crate::method::{Method, Route};
use crate::registry::rules::{HeaderKind, JS_SAFE_INTEGER};
use crate::registry::{App, ClientContext};
use crate::wire::{self, JsonObject, header, meta};

/// Which Host and Origin values this deployment answers to.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    /// Host names (no port) accepted in `Host`; empty means any host (behind a gateway that
    /// already fixed the domain).
    pub hosts: Vec<String>,
    /// Browser origins accepted in `Origin` besides the request's own (its `Host`), exactly as
    /// sent (`https://app.example.com`).
    pub origins: Vec<String>,
}

/// The MCP Inspector's web UI, which calls a local server from the browser.
pub const INSPECTOR_ORIGINS: [&str; 2] = ["http://localhost:6274", "http://127.0.0.1:6274"];

impl OriginPolicy {
    /// Loopback only: the safe default for a local server. Other local pages (another port is
    /// another origin) are refused, except the MCP Inspector's.
    pub fn localhost() -> Self {
        OriginPolicy {
            hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            origins: INSPECTOR_ORIGINS.iter().map(|o| o.to_string()).collect(),
        }
    }

    /// True when `host` is on the list (or the list is empty). A configured entry is read by
    /// the same grammar as the request ([`crate::authority`]), so `LOCALHOST` and `[0::1]`
    /// match; an entry that does not parse matches nothing.
    fn host_allowed(&self, host: &Host) -> bool {
        self.hosts.is_empty()
            || self
                .hosts
                .iter()
                .any(|entry| Authority::parse(entry.trim()).is_ok_and(|entry| entry.host() == host))
    }

    /// Rung 1 for a request whose target is in origin form (`/mcp`): [`OriginPolicy::admit`]
    /// without a target authority.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), McpError> {
        self.admit(&http::Uri::from_static("/"), headers)
            .map(|_| ())
    }

    /// Rung 1: reads the authority the request is addressed to ([`authority::of_request`]:
    /// one `Host`, agreeing with an absolute-form target's), refuses one outside the grammar or
    /// not in [`OriginPolicy::hosts`] (unless that is empty), and an `Origin` that is neither
    /// listed nor the request's own. Answers the authority that passed, if the request named
    /// one: the only one a URL may be built from.
    pub fn admit(
        &self,
        target: &http::Uri,
        headers: &HeaderMap,
    ) -> Result<Option<Authority>, McpError> {
        let forbidden = |what: String| McpError::ForbiddenOrigin(what);
        let named =
            authority::of_request(target, headers).map_err(|e| forbidden(format!("Host ({e})")))?;
        match &named {
            Some(named) if self.host_allowed(named.host()) => {}
            None if self.hosts.is_empty() => {}
            _ => return Err(forbidden("Host".into())),
        }
        let origin = headers::single(headers, "origin").map_err(|_| forbidden("Origin".into()))?;
        if let Some(origin) = origin {
            let listed = self.origins.iter().any(|o| o.eq_ignore_ascii_case(&origin));
            // The page's own origin: same host and port as the request (a browser's same-origin
            // call), the port left out being the origin's scheme's default.
            let own = named.as_ref().is_some_and(|named| {
                authority::of_origin(&origin).is_ok_and(|(scheme, authority)| {
                    authority.same_as(named, authority::default_port(scheme))
                })
            });
            if !(listed || own) {
                return Err(forbidden("Origin".into()));
            }
        }
        Ok(named)
    }
}

/// A request that passed the ladder.
#[derive(Debug, Clone)]
pub struct ValidRequest {
    /// The JSON-RPC request id, echoed in the answer.
    pub id: Value,
    /// The method, already known to be one this function serves.
    pub method: Method,
    /// The request's `params` (an empty object when absent).
    pub params: JsonObject,
    /// What the client declared: in the `_meta` envelope, or for a session at `initialize`.
    pub client: ClientContext,
    /// `_meta.progressToken`, if the client asked for progress notifications.
    pub progress_token: Option<Value>,
    /// The lowest log level the client wants notifications for, if it named one.
    pub log_level: Option<String>,
    /// The handshake-era session this request belongs to (already checked against the caller);
    /// `None` on the stateless wire.
    pub session: Option<String>,
    /// When the work of this request must be done ([`crate::server::Deadline`]), if the front
    /// door set one.
    pub deadline: Option<tokio::time::Instant>,
    /// Cancelled when the client cancels this request: it closed the response stream, or (a
    /// 2025-11-25 session) it sent `notifications/cancelled` naming it.
    pub(crate) cancel: tokio_util::sync::CancellationToken,
    /// Where a 2025-11-25 request is findable by its id while it runs
    /// ([`crate::legacy::InFlight`]); held for its `Drop`: the entry goes when the last clone of
    /// the request is dropped, that is when its work ends.
    pub(crate) _in_flight: Option<std::sync::Arc<crate::legacy::Registration>>,
}

impl ValidRequest {
    /// True for a request of a handshake-era session.
    pub fn is_legacy(&self) -> bool {
        self.session.is_some()
    }

    /// The tool, prompt or URI a request targets, for logs and request-state binding.
    pub fn target(&self) -> Option<&str> {
        self.method
            .name_param()
            .and_then(|key| self.params.get(key))
            .and_then(Value::as_str)
    }
}

#[derive(Debug)]
/// What the ladder lets through: a request to serve, a notification to drop, or a
/// handshake-era message.
pub enum Validated {
    /// A stateless-wire request that passed every rung.
    Request(ValidRequest),
    /// A JSON-RPC notification: accepted (202) and dropped; the core defines none over HTTP.
    Notification,
    /// A handshake-era message; the server checks its session before anything else.
    Legacy(LegacyMessage),
}

/// A 2025-11-25 message that passed the transport rungs; its session is not yet checked.
#[derive(Debug, Clone)]
pub enum LegacyMessage {
    /// A JSON-RPC request (including `initialize`).
    Request {
        /// The JSON-RPC request id.
        id: Value,
        /// The JSON-RPC method name, not yet checked against the known ones.
        method: String,
        /// The request's `params` (an empty object when absent).
        params: JsonObject,
    },
    /// The client's answer (`result` or `error`) to a request this server sent on a stream.
    Response {
        /// The id of the server's request this answers.
        id: Value,
        /// The whole response object.
        message: JsonObject,
    },
    /// `notifications/cancelled`: the client gave up on its request `request_id`.
    Cancelled {
        /// The id of the client's request to cancel.
        request_id: Value,
        /// Why, if the client said (logged, bounded).
        reason: Option<String>,
    },
}

/// A ladder failure, with the request id when it could be read.
#[derive(Debug)]
pub struct Rejection {
    /// The request id, when the body was read far enough to find it.
    pub id: Option<Value>,
    /// What failed, with its code and status.
    pub error: McpError,
}

impl From<McpError> for Rejection {
    fn from(error: McpError) -> Self {
        Rejection { id: None, error }
    }
}

/// The rungs of one function, with what they check against.
pub struct Ladder<'a> {
    /// The Host/Origin allow-list.
    pub policy: &'a OriginPolicy,
    /// The largest body accepted, in bytes.
    pub max_body_bytes: usize,
    /// The app, whose tools declare the `Mcp-Param-*` headers a call must carry.
    pub app: &'a App,
    /// The method(s) this function serves.
    pub route: Route,
    /// This deployment serves handshake-era clients (it has a session store).
    pub legacy: bool,
}

impl Ladder<'_> {
    /// Rungs that need no body: Host/Origin, then the HTTP method. Authentication runs after
    /// these and before [`Ladder::validate`].
    pub fn check_front(&self, request: &Request<Bytes>) -> Result<(), Rejection> {
        self.policy.admit(request.uri(), request.headers())?;
        let method = request.method();
        // GET (the legacy notification stream) and DELETE (end a session) exist only for a
        // session; without one they are what a stateless server answers: 405.
        let session_verb = self.legacy
            && self.route == Route::All
            && (method == http::Method::GET || method == http::Method::DELETE)
            && request.headers().contains_key(header::SESSION_ID);
        if method != http::Method::POST && !session_verb {
            return Err(McpError::HttpMethodNotAllowed.into());
        }
        Ok(())
    }

    /// The remaining rungs, from `Accept` to the function's own method.
    pub fn validate(&self, request: &Request<Bytes>) -> Result<Validated, Rejection> {
        let headers = request.headers();
        check_accept(headers)?;
        check_content_type(headers)?;
        if request.body().len() > self.max_body_bytes {
            return Err(McpError::BodyTooLarge {
                limit: self.max_body_bytes,
            }
            .into());
        }

        let message: Value =
            serde_json::from_slice(request.body()).map_err(|e| McpError::Parse(e.to_string()))?;
        let Value::Object(mut message) = message else {
            return Err(
                McpError::InvalidRequest("the body must be one JSON-RPC object".into()).into(),
            );
        };
        let id = message.get("id").cloned();
        let reject = |error: McpError| Rejection {
            id: id.clone().filter(valid_id),
            error,
        };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(reject(McpError::InvalidRequest(
                "jsonrpc must be \"2.0\"".into(),
            )));
        }
        let method_name = match message.remove("method") {
            Some(Value::String(name)) => name,
            None if self.legacy
                && !modern_header(headers)
                && id.as_ref().is_some_and(valid_id)
                && (message.contains_key("result") || message.contains_key("error")) =>
            {
                let id = id.clone().unwrap_or_default();
                return Ok(Validated::Legacy(LegacyMessage::Response { id, message }));
            }
            _ => {
                return Err(reject(McpError::InvalidRequest(
                    "method must be a string".into(),
                )));
            }
        };
        let Some(id) = id.clone() else {
            if self.legacy
                && method_name == "notifications/cancelled"
                && !modern_header(headers)
                && headers.contains_key(header::SESSION_ID)
            {
                let params = message.get("params");
                // A malformed cancellation is ignored (accepted and dropped), as the spec asks.
                if let Some(request_id) = params
                    .and_then(|p| p.get("requestId"))
                    .filter(|id| valid_id(id))
                {
                    let reason = params
                        .and_then(|p| p.get("reason"))
                        .and_then(Value::as_str)
                        .map(|r| r.chars().take(200).collect());
                    return Ok(Validated::Legacy(LegacyMessage::Cancelled {
                        request_id: request_id.clone(),
                        reason,
                    }));
                }
            }
            return Ok(Validated::Notification);
        };
        if !valid_id(&id) {
            return Err(
                McpError::InvalidRequest("id must be a string or an integer".into()).into(),
            );
        }
        let params = match message.remove("params") {
            None => JsonObject::new(),
            Some(Value::Object(params)) => params,
            Some(_) => {
                return Err(reject(McpError::InvalidEnvelope(
                    "params must be an object".into(),
                )));
            }
        };
        let envelope = params.get("_meta").and_then(Value::as_object);
        let body_version = envelope.and_then(|m| m.get(meta::PROTOCOL_VERSION));

        if self.legacy && body_version.is_none() && !modern_header(headers) {
            // Legacy clients send no Mcp-Method; one that does must not contradict its body.
            if headers::single(headers, header::METHOD)
                .map_err(reject)?
                .is_some_and(|m| m != method_name)
            {
                return Err(reject(McpError::InvalidRequest(
                    "Mcp-Method header does not match the body".into(),
                )));
            }
            return Ok(Validated::Legacy(LegacyMessage::Request {
                id,
                method: method_name,
                params,
            }));
        }

        if method_name == "initialize" && body_version.is_none() && !modern_header(headers) {
            let requested = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .map(String::from);
            return Err(reject(McpError::UnsupportedVersion { requested }));
        }

        headers::expect_equal(headers, header::METHOD, &method_name, false).map_err(reject)?;
        let known = Method::from_wire(&method_name);
        if let Some(key) = known.and_then(Method::name_param) {
            let value = params.get(key).and_then(Value::as_str).unwrap_or_default();
            headers::expect_equal(headers, header::NAME, value, true).map_err(reject)?;
        }
        if known == Some(Method::ToolsCall) {
            self.check_param_headers(headers, &params).map_err(reject)?;
        }

        let header_version = headers::single(headers, header::PROTOCOL_VERSION).map_err(reject)?;
        let Some(header_version) = header_version else {
            return Err(reject(McpError::HeaderMismatch(
                "MCP-Protocol-Version header is required".into(),
            )));
        };
        if let Some(body_version) = body_version.and_then(Value::as_str)
            && body_version != header_version
        {
            return Err(reject(McpError::HeaderMismatch(format!(
                "MCP-Protocol-Version header value '{header_version}' does not match _meta value '{body_version}'"
            ))));
        }

        let client = read_envelope(envelope).map_err(reject)?;
        if !wire::SUPPORTED_VERSIONS.contains(&client.protocol_version.as_str()) {
            return Err(reject(McpError::UnsupportedVersion {
                requested: Some(client.protocol_version),
            }));
        }
        let envelope = envelope.cloned().unwrap_or_default();
        let log_level = match envelope.get(meta::LOG_LEVEL) {
            None => None,
            Some(Value::String(level)) if wire::log_level_rank(level).is_some() => {
                Some(level.clone())
            }
            Some(_) => {
                return Err(reject(McpError::InvalidEnvelope(format!(
                    "_meta[{}] is not a known logging level",
                    meta::LOG_LEVEL
                ))));
            }
        };
        let progress_token = match envelope.get(meta::PROGRESS_TOKEN) {
            None => None,
            Some(token @ (Value::String(_) | Value::Number(_))) if valid_id(token) => {
                Some(token.clone())
            }
            Some(_) => {
                return Err(reject(McpError::InvalidEnvelope(
                    "progressToken must be a string or an integer".into(),
                )));
            }
        };

        let Some(method) = known else {
            return Err(reject(McpError::MethodNotFound(method_name)));
        };
        if !self.route.accepts(method) {
            return Err(reject(McpError::HeaderMismatch(format!(
                "this function does not serve {method_name}"
            ))));
        }
        Ok(Validated::Request(ValidRequest {
            id,
            method,
            params,
            client,
            progress_token,
            log_level,
            session: None,
            deadline: None,
            cancel: tokio_util::sync::CancellationToken::new(),
            _in_flight: None,
        }))
    }

    /// `Mcp-Param-{Name}` headers for arguments the tool's schema marks with `x-mcp-header`,
    /// at any depth of `properties`: the value is read at the annotated property's path, and a
    /// missing or null value (or parent) is absent. An integer parameter's value must be within
    /// ±(2^53 − 1) ("integer values MUST be within the safe range"): a call outside it is
    /// refused here, header or not, so no intermediary and this server can disagree about it.
    fn check_param_headers(
        &self,
        headers: &HeaderMap,
        params: &JsonObject,
    ) -> Result<(), McpError> {
        let Some(tool) = params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| self.app.find_tool(n))
        else {
            return Ok(());
        };
        // A schema derived from a Rust type is first seen here; a bad annotation is the app's bug.
        let header_params = tool.header_params().map_err(|refused| {
            tracing::error!(%refused, "a derived inputSchema breaks the x-mcp-header rules");
            McpError::Internal
        })?;
        let arguments = params.get("arguments");
        for param in header_params.iter() {
            let header_name = &param.header;
            let argument = param.dotted();
            let name = format!(
                "{}{}",
                header::PARAM_PREFIX,
                header_name.to_ascii_lowercase()
            );
            let body = param
                .path
                .iter()
                .fold(arguments, |at, key| at.and_then(|v| v.get(key)))
                .filter(|v| !v.is_null());
            if param.kind == HeaderKind::Integer
                && let Some(body) = body
                && outside_js_safe_range(body)
            {
                return Err(McpError::HeaderMismatch(format!(
                    "argument '{argument}' mirrored into Mcp-Param-{header_name} is outside the \
                     JS-safe integer range (-(2^53-1) to 2^53-1)"
                )));
            }
            let raw = headers::single(headers, &name)?;
            match (body, raw) {
                (None, None) => {}
                (Some(_), None) => {
                    return Err(McpError::HeaderMismatch(format!(
                        "Mcp-Param-{header_name} header is required"
                    )));
                }
                (None, Some(_)) => {
                    return Err(McpError::HeaderMismatch(format!(
                        "Mcp-Param-{header_name} header is present but argument '{argument}' is not"
                    )));
                }
                (Some(body), Some(raw)) => {
                    let value = headers::decode_sentinel(&name, &raw)?;
                    if !param_matches(body, &value, param.kind) {
                        return Err(McpError::HeaderMismatch(format!(
                            "Mcp-Param-{header_name} header value '{value}' does not match argument '{argument}'"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether a header value says the same as the body's value. Integers compare exactly and by
/// value (`42` equals `42.0`, `9007199254740993` never equals `9007199254740992`), booleans as
/// `true`/`false`, strings byte for byte.
fn param_matches(body: &Value, header_value: &str, kind: HeaderKind) -> bool {
    match body {
        Value::String(s) => s == header_value,
        Value::Bool(b) => header_value == if *b { "true" } else { "false" },
        Value::Number(n) if kind == HeaderKind::Integer => {
            match (exact_integer(body), integer_text(header_value)) {
                (Some(b), Some(h)) => b == h,
                // A fractional body is no integer: the input schema refuses it after the ladder.
                _ => n.to_string() == header_value,
            }
        }
        Value::Number(n) => n.to_string() == header_value,
        _ => false,
    }
}

/// Whether a JSON number lies outside ±(2^53 − 1), whatever its spelling (`1e300` included).
fn outside_js_safe_range(value: &Value) -> bool {
    let Value::Number(n) = value else {
        return false;
    };
    if let Some(i) = n.as_i64() {
        i.unsigned_abs() > JS_SAFE_INTEGER.unsigned_abs()
    } else if n.is_u64() {
        true // above i64::MAX
    } else {
        n.as_f64().is_some_and(|f| f.abs() > JS_SAFE_INTEGER as f64)
    }
}

/// The exact integer a JSON number holds: any `i64`/`u64`, or a float with no fraction.
fn exact_integer(value: &Value) -> Option<i128> {
    let Value::Number(n) = value else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    let f = n.as_f64()?;
    // Beyond ±2^100 nothing compares: far outside the range any header value may carry.
    (f.fract() == 0.0 && f.abs() < 1e30).then_some(f as i128)
}

/// The exact integer a decimal header value spells, if it is one: an optional sign, digits, an
/// optional fraction and an optional exponent (`42`, `-7`, `42.0`, `4.2e1`), read exactly (no
/// float rounding). A value that is not an integer, or has more than 30 significant digits, is
/// none.
fn integer_text(text: &str) -> Option<i128> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() || !(whole.bytes().chain(fraction.bytes())).all(|b| b.is_ascii_digit()) {
        return None;
    }
    // digits × 10^shift, with every digit of `whole` and `fraction` in `digits`.
    let mut digits = format!("{whole}{fraction}");
    let shift = i64::from(exponent) - fraction.len() as i64;
    if shift < 0 {
        let cut = digits.len().checked_sub(usize::try_from(-shift).ok()?)?;
        if !digits[cut..].bytes().all(|b| b == b'0') {
            return None;
        }
        digits.truncate(cut);
    }
    let digits = digits.trim_start_matches('0');
    let zeros = usize::try_from(shift.max(0)).ok()?;
    if digits.len() + if digits.is_empty() { 0 } else { zeros } > 30 {
        return None;
    }
    let magnitude: i128 = if digits.is_empty() {
        0
    } else {
        format!("{digits}{}", "0".repeat(zeros)).parse().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

pub(crate) fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

fn modern_header(headers: &HeaderMap) -> bool {
    headers::single(headers, header::PROTOCOL_VERSION)
        .ok()
        .flatten()
        .is_some_and(|v| v.as_str() >= wire::PROTOCOL_VERSION)
}

fn read_envelope(envelope: Option<&JsonObject>) -> Result<ClientContext, McpError> {
    let envelope =
        envelope.ok_or_else(|| McpError::InvalidEnvelope("params._meta is required".into()))?;
    let protocol_version = match envelope.get(meta::PROTOCOL_VERSION) {
        Some(Value::String(v)) => v.clone(),
        Some(_) => {
            return Err(McpError::InvalidEnvelope(format!(
                "_meta[{}] must be a string",
                meta::PROTOCOL_VERSION
            )));
        }
        None => {
            return Err(McpError::InvalidEnvelope(format!(
                "_meta[{}] is required",
                meta::PROTOCOL_VERSION
            )));
        }
    };
    let capabilities = match envelope.get(meta::CLIENT_CAPABILITIES) {
        Some(Value::Object(c)) => c.clone(),
        Some(_) => {
            return Err(McpError::InvalidEnvelope(format!(
                "_meta[{}] must be an object",
                meta::CLIENT_CAPABILITIES
            )));
        }
        None => {
            return Err(McpError::InvalidEnvelope(format!(
                "_meta[{}] is required",
                meta::CLIENT_CAPABILITIES
            )));
        }
    };
    let info = envelope.get(meta::CLIENT_INFO).cloned();
    Ok(ClientContext {
        protocol_version,
        capabilities,
        info,
    })
}

fn check_accept(headers: &HeaderMap) -> Result<(), McpError> {
    let accepts: Vec<String> = headers
        .get_all("accept")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let has = |wanted: &str| accepts.iter().any(|a| a == wanted || a == "*/*");
    if has("application/json") && has("text/event-stream") {
        Ok(())
    } else {
        Err(McpError::NotAcceptable)
    }
}

fn check_content_type(headers: &HeaderMap) -> Result<(), McpError> {
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(McpError::UnsupportedMediaType)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn localhost_policy_accepts_loopback_hosts_with_any_port() {
        let policy = OriginPolicy::localhost();
        for host in ["localhost", "127.0.0.1:8080", "[::1]:3000", "LOCALHOST:1"] {
            assert!(policy.check(&headers(&[("host", host)])).is_ok(), "{host}");
        }
        for host in ["evil.com", "127.0.0.1.evil.com", "localhost.evil.com:80"] {
            assert!(policy.check(&headers(&[("host", host)])).is_err(), "{host}");
        }
    }

    #[test]
    fn a_loopback_prefix_does_not_admit_what_follows_it() {
        // On the old code each of these passed: only the text before the first ':' was read.
        let policy = OriginPolicy::localhost();
        for host in [
            "127.0.0.1:1@evil.example",
            "localhost:8080@evil.example",
            "127.0.0.1:8080:evil.example",
            "[::1]:1@evil.example",
            "[::1]evil.example",
            "localhost.",
            "localhost:99999",
            "localhost:",
        ] {
            assert!(
                matches!(
                    policy.check(&headers(&[("host", host)])),
                    Err(McpError::ForbiddenOrigin(_))
                ),
                "{host}"
            );
        }
        for hosts in [
            [("host", "localhost"), ("host", "localhost")],
            [("host", "localhost"), ("host", "evil.example")],
        ] {
            assert!(policy.check(&headers(&hosts)).is_err(), "{hosts:?}");
        }
    }

    #[test]
    fn an_absolute_form_target_is_the_authority_checked() {
        let policy = OriginPolicy::localhost();
        let host = headers(&[("host", "127.0.0.1:8080")]);
        let evil: http::Uri = "http://evil.example/mcp".parse().unwrap();
        assert!(policy.admit(&evil, &host).is_err());
        assert!(
            policy.admit(&evil, &headers(&[])).is_err(),
            "HTTP/2 :authority"
        );
        let own: http::Uri = "http://127.0.0.1:8080/mcp".parse().unwrap();
        assert_eq!(
            policy.admit(&own, &host).unwrap().map(|a| a.to_string()),
            Some("127.0.0.1:8080".into())
        );
    }

    #[test]
    fn the_own_origin_is_compared_by_parsed_authority() {
        let policy = OriginPolicy::localhost();
        let with = |host: &str, origin: &str| {
            policy
                .check(&headers(&[("host", host), ("origin", origin)]))
                .is_ok()
        };
        assert!(with("localhost:8080", "http://LOCALHOST:8080"));
        assert!(with("localhost", "http://localhost:80"));
        assert!(!with(
            "localhost:8080",
            "http://localhost:8080@evil.example"
        ));
        assert!(!with("localhost:8080", "http://localhost:8080/path"));
        assert!(!with("localhost:8080", "http://localhost:8081"));
    }

    #[test]
    fn foreign_origin_is_forbidden_even_with_a_good_host() {
        let policy = OriginPolicy::localhost();
        assert!(
            policy
                .check(&headers(&[
                    ("host", "localhost:8080"),
                    ("origin", "http://localhost:8080")
                ]))
                .is_ok()
        );
        assert!(
            policy
                .check(&headers(&[
                    ("host", "localhost:8080"),
                    ("origin", "http://localhost:6274")
                ]))
                .is_ok()
        );
        assert!(
            policy
                .check(&headers(&[
                    ("host", "localhost:8080"),
                    ("origin", "http://localhost:5173")
                ]))
                .is_err(),
            "another local page is another origin"
        );
        assert!(matches!(
            policy.check(&headers(&[
                ("host", "localhost:8080"),
                ("origin", "https://evil.com")
            ])),
            Err(McpError::ForbiddenOrigin(_))
        ));
    }

    #[test]
    fn any_host_policy_still_checks_origin_against_its_list() {
        let policy = OriginPolicy {
            hosts: vec![],
            origins: vec!["https://app.example.com".into()],
        };
        assert!(
            policy
                .check(&headers(&[(
                    "host",
                    "abc.execute-api.us-east-1.amazonaws.com"
                )]))
                .is_ok()
        );
        assert!(
            policy
                .check(&headers(&[("origin", "https://app.example.com")]))
                .is_ok()
        );
        assert!(
            policy
                .check(&headers(&[("origin", "https://evil.example.com")]))
                .is_err()
        );
    }

    #[test]
    fn accept_needs_both_media_types() {
        assert!(
            check_accept(&headers(&[(
                "accept",
                "application/json, text/event-stream"
            )]))
            .is_ok()
        );
        assert!(
            check_accept(&headers(&[
                ("accept", "application/json"),
                ("accept", "text/event-stream;q=0.9")
            ]))
            .is_ok()
        );
        assert!(check_accept(&headers(&[("accept", "application/json")])).is_err());
        assert!(check_accept(&headers(&[])).is_err());
    }

    #[test]
    fn integer_params_compare_exactly_and_by_value() {
        use serde_json::json;
        assert!(param_matches(&json!(42), "42.0", HeaderKind::Integer));
        assert!(param_matches(&json!(42.0), "42", HeaderKind::Integer));
        assert!(param_matches(&json!(-7), "-7", HeaderKind::Integer));
        assert!(!param_matches(&json!(42), "42.5", HeaderKind::Integer));
        assert!(!param_matches(
            &json!(9007199254740992u64),
            "9007199254740993",
            HeaderKind::Integer
        ));
        assert!(param_matches(&json!(42), "4.2e1", HeaderKind::Integer));
        assert!(param_matches(&json!(42), "420E-1", HeaderKind::Integer));
        assert!(!param_matches(&json!(42), "421e-1", HeaderKind::Integer));
        assert!(param_matches(&json!(0), "-0.0", HeaderKind::Integer));
        assert!(!param_matches(&json!(42), "", HeaderKind::Integer));
        assert!(!param_matches(&json!(42), ".42e2", HeaderKind::Integer));
        assert!(!param_matches(
            &json!(1),
            "1e999999999999",
            HeaderKind::Integer
        ));
        assert!(param_matches(&json!(true), "true", HeaderKind::Boolean));
        assert!(!param_matches(&json!("a"), "A", HeaderKind::String));
    }
}
