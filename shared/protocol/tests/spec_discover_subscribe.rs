//! MCP 2026-07-28, "`server/discover`" and "`subscriptions/listen`" → capabilities: a server
//! advertises `capabilities.resources.subscribe: true` when it honours resource subscriptions
//! on a listen stream (`ServerCapabilities.resources {subscribe?, listChanged?}`; the flag now
//! reads as "supports `resourceSubscriptions`"), and a server advertises only what it serves.
//!
//! Relevo honours them whenever the app has resources (or templates) and a listen stream stays
//! open (`listen_max_secs` above 0); a buffered integration, which acknowledges and ends a
//! stream at once, advertises none, and neither does an app without resources.

use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use relevo_protocol::wire::ResourceContents;
use relevo_protocol::{App, KeyRing, McpServer, NoAuth, Resource, Route, ServerConfig};
use serde_json::{Value, json};

const VERSION: &str = "2026-07-28";

fn app(with_resource: bool) -> App {
    let app = App::new("subscribe", "1");
    if !with_resource {
        return app;
    }
    app.resource(Resource::typed(
        "app://about",
        "about",
        "text/plain",
        |_| async { Ok(vec![ResourceContents::text("About.", "app://about")]) },
    ))
}

async fn capabilities(app: App, listen_max_secs: u64) -> Value {
    let config = ServerConfig {
        listen_max_secs,
        ..ServerConfig::default()
    };
    let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
    let server = McpServer::new(app, config, keys, Arc::new(NoAuth));
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "spec", "version": "0" } } } });
    let request = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", "server/discover")
        .body(Bytes::from(body.to_string()))
        .expect("a request");
    let reply = server.handle(Route::All, request).await;
    assert_eq!(reply.status(), 200);
    let bytes = reply.into_body().collect().await;
    let reply: Value = serde_json::from_slice(&bytes).expect("a JSON reply");
    reply["result"]["capabilities"].clone()
}

#[tokio::test]
async fn a_server_that_holds_listen_streams_advertises_resource_subscriptions() {
    let capabilities = capabilities(app(true), 300).await;
    assert_eq!(capabilities["resources"], json!({ "subscribe": true }));
}

#[tokio::test]
async fn a_server_whose_listen_streams_end_at_once_advertises_none() {
    let capabilities = capabilities(app(true), 0).await;
    assert_eq!(capabilities["resources"], json!({}));
}

#[tokio::test]
async fn an_app_without_resources_advertises_no_resources_capability() {
    let capabilities = capabilities(app(false), 300).await;
    assert_eq!(capabilities.get("resources"), None);
}
