//! What the spec tests of this crate share: an app served in-process (with an in-memory store,
//! so 2025-11-25 sessions are served too), called as a client calls it on either revision, and
//! the message of a refused registration.
//!
//! Each `spec_*.rs` file uses the part it needs.
#![allow(dead_code)] // each test file uses a part of it

use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use relevo_embedded::SqliteStore;
use relevo_protocol::{App, KeyRing, McpServer, NoAuth, Route, ServerConfig};
use serde_json::{Value, json};

/// The stateless revision.
pub const MODERN: &str = "2026-07-28";
/// The handshake revision served through `initialize` and a session.
pub const LEGACY: &str = "2025-11-25";

/// `app` served without authorization, over an in-memory store.
pub fn serve(app: App) -> McpServer {
    let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
    let store = Arc::new(SqliteStore::in_memory().expect("an in-memory store"));
    McpServer::new(app, ServerConfig::default(), keys, Arc::new(NoAuth)).with_store(store)
}

/// POSTs `body` to `/mcp` with `headers`; the reply's status and JSON body.
async fn post(server: &McpServer, headers: &[(&str, &str)], body: Value) -> (u16, Value) {
    let mut request = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Bytes::from(body.to_string()))
        .expect("a request");
    let reply = server.handle(Route::All, request).await;
    let status = reply.status().as_u16();
    let bytes = reply.into_body().collect().await;
    // A JSON body, or an SSE stream whose last `data:` line is the response.
    let text = String::from_utf8_lossy(&bytes);
    let last = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .next_back();
    let body = serde_json::from_str(last.unwrap_or(&text).trim()).unwrap_or(Value::Null);
    (status, body)
}

/// The result of `method` sent on the 2026-07-28 wire (no params but the `_meta` envelope).
pub async fn modern(server: &McpServer, method: &str) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": { "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "spec", "version": "0" } } } });
    let headers = [("mcp-protocol-version", MODERN), ("mcp-method", method)];
    let (status, reply) = post(server, &headers, body).await;
    assert_eq!(status, 200, "{method}: {reply}");
    reply["result"].clone()
}

/// The whole reply to `method` with `params` sent on the 2026-07-28 wire by a client that
/// declares `capabilities`.
pub async fn modern_as(
    server: &McpServer,
    capabilities: Value,
    method: &str,
    params: Value,
) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "spec", "version": "0" } });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    let key = if method == "resources/read" {
        "uri"
    } else {
        "name"
    };
    let name = params[key].as_str().unwrap_or_default().to_string();
    if matches!(method, "tools/call" | "resources/read" | "prompts/get") {
        headers.push(("mcp-name", &name));
    }
    let (_, reply) = post(server, &headers, body).await;
    reply
}

/// A 2025-11-25 session: its id and the `initialize` result.
pub async fn initialize(server: &McpServer) -> (String, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": { "name": "spec", "version": "0" } } });
    let request = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Bytes::from(body.to_string()))
        .expect("a request");
    let reply = server.handle(Route::All, request).await;
    assert_eq!(reply.status(), 200);
    let session = reply
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_string();
    let bytes = reply.into_body().collect().await;
    let reply: Value = serde_json::from_slice(&bytes).expect("a JSON reply");
    (session, reply["result"].clone())
}

/// The result of `method` sent in the 2025-11-25 session `session`.
pub async fn legacy(server: &McpServer, session: &str, method: &str) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": {} });
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", LEGACY),
    ];
    let (status, reply) = post(server, &headers, body).await;
    assert_eq!(status, 200, "{method}: {reply}");
    reply["result"].clone()
}

/// The four lists, `(method, key of the items)`.
pub const LISTS: [(&str, &str); 4] = [
    ("tools/list", "tools"),
    ("prompts/list", "prompts"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resourceTemplates"),
];

/// Each list's items on both revisions: `(revision, method, items)`.
pub async fn listed_both_ways(app: App) -> Vec<(&'static str, &'static str, Vec<Value>)> {
    let server = serve(app);
    let (session, _) = initialize(&server).await;
    let mut all = Vec::new();
    for (method, key) in LISTS {
        let modern = modern(&server, method).await;
        let legacy = legacy(&server, &session, method).await;
        for (revision, result) in [(MODERN, modern), (LEGACY, legacy)] {
            let items = result[key].as_array().cloned().unwrap_or_default();
            all.push((revision, method, items));
        }
    }
    all
}

/// The panic message of `build`, which must panic.
pub fn refusal(build: impl FnOnce() -> App + std::panic::UnwindSafe) -> String {
    let Err(panic) = std::panic::catch_unwind(build) else {
        panic!("the registration was accepted");
    };
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
