//! The one place that names wire types and constants.
//!
//! Content blocks, annotations, resource contents and error codes come from `rmcp::model`
//! (the official Rust SDK's types, wire types only). Everything else in this crate goes through
//! this module, so a change of SDK version touches one file.

pub use rmcp::model::{
    Annotations, CallToolResult, ContentBlock, ErrorCode, GetPromptResult, Implementation,
    PromptMessage, ResourceContents, Role, ToolAnnotations,
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
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    pub const PROGRESS_TOKEN: &str = "progressToken";
}

/// Standard request headers (spec: transports/streamable-http "Standard request headers").
pub mod header {
    pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
    pub const METHOD: &str = "mcp-method";
    pub const NAME: &str = "mcp-name";
    pub const PARAM_PREFIX: &str = "mcp-param-";
    /// Handshake era only: the session a request belongs to.
    pub const SESSION_ID: &str = "mcp-session-id";
}

/// JSON-RPC error codes this server emits. `-32002` and `-32001` go to 2025-11-25 clients only;
/// `-32042` is never emitted.
pub mod code {
    use super::ErrorCode;
    pub const PARSE_ERROR: i32 = ErrorCode::PARSE_ERROR.0;
    pub const INVALID_REQUEST: i32 = ErrorCode::INVALID_REQUEST.0;
    pub const METHOD_NOT_FOUND: i32 = ErrorCode::METHOD_NOT_FOUND.0;
    pub const INVALID_PARAMS: i32 = ErrorCode::INVALID_PARAMS.0;
    pub const INTERNAL_ERROR: i32 = ErrorCode::INTERNAL_ERROR.0;
    pub const HEADER_MISMATCH: i32 = ErrorCode::HEADER_MISMATCH.0;
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 =
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY.0;
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
