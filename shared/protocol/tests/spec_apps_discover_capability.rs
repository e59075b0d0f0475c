//! MCP Apps (SEP-1865, stable 2026-01-26), "Client<>Server Capability Negotiation": "Clients
//! and servers negotiate MCP Apps support through the standard MCP extensions capability
//! mechanism (defined in SEP-1724)", under the identifier `io.modelcontextprotocol/ui`
//! ("Extension Identifier"), whose settings name the supported `mimeTypes`.
//!
//! `server/discover` advertises `capabilities.extensions["io.modelcontextprotocol/ui"]` with
//! `mimeTypes: ["text/html;profile=mcp-app"]` when the app serves a view, and no such extension
//! when it serves none; a 2025-11-25 `initialize` advertises the same (the spec's own example
//! negotiates at `initialize`).

mod support;

use relevo_protocol::author::{ToolContext, ToolError};
use relevo_protocol::registry::apps::{self, UiMeta};
use relevo_protocol::wire::ResourceContents;
use relevo_protocol::{App, Resource};
use serde_json::json;
use support::{initialize, modern, serve};

async fn about(_: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![])
}

#[tokio::test]
async fn discover_advertises_the_ui_extension_when_the_app_serves_a_view() {
    let server = serve(App::new("views", "1").resource(apps::view(
        "ui://views/board",
        "board",
        "<!doctype html>",
        UiMeta::default(),
    )));
    let discovered = modern(&server, "server/discover").await;
    assert_eq!(
        discovered["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
        json!({ "mimeTypes": ["text/html;profile=mcp-app"] }),
        "{discovered}"
    );
    let (_, initialized) = initialize(&server).await;
    assert_eq!(
        initialized["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
        json!({ "mimeTypes": ["text/html;profile=mcp-app"] }),
        "{initialized}"
    );
}

#[tokio::test]
async fn discover_advertises_no_ui_extension_without_a_view() {
    let server = serve(App::new("plain", "1").resource(Resource::typed(
        "app://about",
        "about",
        "text/plain",
        about,
    )));
    let discovered = modern(&server, "server/discover").await;
    assert_eq!(
        discovered["capabilities"]["extensions"].get("io.modelcontextprotocol/ui"),
        None,
        "{discovered}"
    );
}
