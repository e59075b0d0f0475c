//! The one place that names wire types and constants.
//!
//! Content blocks, annotations, resource contents and error codes come from `rmcp::model`
//! (the official Rust SDK's types, wire types only). Everything else in this crate goes through
//! this module, so a change of SDK version touches one file.

pub use rmcp::model::{
    Annotations, CallToolResult, ContentBlock, ErrorCode, GetPromptResult, Icon, IconTheme,
    Implementation, PromptMessage, ResourceContents, Role, ToolAnnotations,
};
pub use serde_json::{Map, Value};

/// A JSON object, as serde_json represents it.
pub type JsonObject = Map<String, Value>;

/// The revision this server speaks on the stateless wire.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// Every revision a request may name in its `_meta` envelope (the stateless wire).
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION];
/// Handshake-era revisions served through `initialize` and a session, newest first. 2025-03-26
/// and 2024-11-05 are not served: the first sends JSON-RPC batches and no `MCP-Protocol-Version`
/// header, the second uses the HTTP+SSE transport (a long-lived GET per client).
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18"];

/// Per-request `_meta` keys (spec: basic/index "_meta").
pub mod meta {
    /// Key of the protocol revision the request speaks.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// Key of the client's capabilities object (sent on every request in place of a handshake).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Key of the client's `Implementation` (name and version).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Key of the lowest log level the client wants notifications for.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Key of the server's `Implementation`, in results.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// Key tagging a notification with the id of the `subscriptions/listen` request it belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// Key of the token the client asks progress notifications to carry.
    pub const PROGRESS_TOKEN: &str = "progressToken";
}

/// Standard request headers (spec: transports/streamable-http "Standard request headers").
pub mod header {
    /// The protocol revision; must equal the envelope's.
    pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
    /// The JSON-RPC method; must equal the body's `method`.
    pub const METHOD: &str = "mcp-method";
    /// The tool, prompt or resource the request names (`params.name` or `params.uri`).
    pub const NAME: &str = "mcp-name";
    /// Prefix of headers mirroring tool arguments a tool declares as header parameters.
    pub const PARAM_PREFIX: &str = "mcp-param-";
    /// Handshake era only: the session a request belongs to.
    pub const SESSION_ID: &str = "mcp-session-id";
}

/// JSON-RPC error codes this server emits. `-32002` and `-32001` go to 2025-11-25 clients only;
/// `-32042` is never emitted.
pub mod code {
    use super::ErrorCode;
    /// `-32700`: the body is not JSON.
    pub const PARSE_ERROR: i32 = ErrorCode::PARSE_ERROR.0;
    /// `-32600`: not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i32 = ErrorCode::INVALID_REQUEST.0;
    /// `-32601`: the method is unknown or not served here.
    pub const METHOD_NOT_FOUND: i32 = ErrorCode::METHOD_NOT_FOUND.0;
    /// `-32602`: params (or the `_meta` envelope) are invalid.
    pub const INVALID_PARAMS: i32 = ErrorCode::INVALID_PARAMS.0;
    /// `-32603`: the server's own fault.
    pub const INTERNAL_ERROR: i32 = ErrorCode::INTERNAL_ERROR.0;
    /// `-32020`: a standard `Mcp-*` header disagrees with the body.
    pub const HEADER_MISMATCH: i32 = ErrorCode::HEADER_MISMATCH.0;
    /// `-32021`: the request needs a client capability the client did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 =
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY.0;
    /// `-32022`: the request names a protocol version the server does not speak.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0;
    /// 2025-11-25 only: resource not found (2026-07-28 uses `-32602`).
    pub const LEGACY_RESOURCE_NOT_FOUND: i32 = -32002;
    /// 2025-11-25 only, with HTTP 404: the session is unknown, expired or ended.
    pub const SESSION_NOT_FOUND: i32 = -32001;
    /// The server could not finish the request now; the same request may be retried
    /// (`data.retryable`, `data.reason`, `data.retryAfterMs`). Application-defined: outside
    /// JSON-RPC's reserved -32768..-32000, so it cannot collide with a code the spec adds.
    pub const TEMPORARILY_UNAVAILABLE: i32 = -31000;
    /// The caller holds as many of something as it may (`data.limit`, `data.max`); it may retry
    /// once it has given one back or one expired. With HTTP 429.
    pub const LIMIT_REACHED: i32 = -31001;
    /// The caller's tenant (or its calls of one tool) spent the request rate a quota allows in
    /// this window (`data.scope`, `data.limit`, `data.windowSecs`, `data.retryAfterSecs`); the
    /// same request may be sent again after `Retry-After` seconds. With HTTP 429.
    pub const RATE_LIMITED: i32 = -31002;
}

/// Logging levels in increasing severity (RFC 5424 order, as the spec lists them).
pub const LOG_LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Position of a level in [`LOG_LEVELS`], or `None` for a level the spec does not define.
pub fn log_level_rank(level: &str) -> Option<usize> {
    LOG_LEVELS.iter().position(|l| *l == level)
}

/// Serializes a wire type into a JSON object. The rmcp types all serialize to objects; anything
/// else is a programming error caught by the unit tests of the app crates.
pub fn to_object<T: serde::Serialize>(value: &T) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}
