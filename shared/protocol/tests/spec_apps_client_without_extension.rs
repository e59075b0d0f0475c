//! MCP Apps (SEP-1865, stable 2026-01-26), "Server Behavior": "Servers SHOULD check client
//! capabilities before registering UI-enabled tools" and otherwise register the "text-only
//! version" with "No UI metadata"; "Servers SHOULD provide text-only fallback behavior for all
//! UI-enabled tools" and "Tools MUST return meaningful content array even when UI is
//! available". "Visibility": the host "MUST NOT include tools in the agent's tool list when
//! their visibility does not include `"model"`".
//!
//! On the stateless wire the client's capabilities come with each request. A client that does
//! not declare `io.modelcontextprotocol/ui` with `text/html;profile=mcp-app` in its `mimeTypes`
//! lists each tool without `_meta.ui` and without the app-only tools (it has no host that would
//! keep them from the agent), and a call of an app-only tool is answered as a missing
//! capability; the view-backed tool still answers its text content. The list, which now
//! depends on the client, is `cacheScope: private` even on an open server.

mod support;

use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::registry::apps::{self, UiMeta, Visibility};
use relevo_protocol::{App, Tool};
use serde_json::{Value, json};
use support::{initialize, legacy, modern_as, serve};

async fn board(_: NoArgs, _: ToolContext) -> Result<String, ToolError> {
    Ok("The board, as text.".into())
}

fn app() -> App {
    App::new("views", "1")
        .tool(
            Tool::typed("show_board", "Shows the board.", board)
                .view("ui://views/board")
                .meta("com.example/owner", json!("ops")),
        )
        .tool(
            Tool::typed("refresh_board", "Refreshes the board.", board)
                .view("ui://views/board")
                .visibility(&[Visibility::App]),
        )
        .resource(apps::view(
            "ui://views/board",
            "board",
            "<!doctype html>",
            UiMeta::default(),
        ))
}

fn names(listed: &Value) -> Vec<String> {
    listed["result"]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_client_without_the_extension_lists_text_only_tools_and_no_app_only_tool() {
    let server = serve(app());
    for capabilities in [
        json!({}),
        json!({ "extensions": { "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html"] } } }),
    ] {
        let listed = modern_as(&server, capabilities, "tools/list", json!({})).await;
        assert_eq!(names(&listed), ["show_board"], "{listed}");
        // Open (no authorization), yet the list depends on the client: never shared.
        assert_eq!(listed["result"]["cacheScope"], "private", "{listed}");
        assert_eq!(
            listed["result"]["tools"][0]["_meta"],
            json!({ "com.example/owner": "ops" }),
            "{listed}"
        );
    }
    let apps = json!({ "extensions": { "io.modelcontextprotocol/ui": {
        "mimeTypes": ["text/html;profile=mcp-app"] } } });
    let listed = modern_as(&server, apps, "tools/list", json!({})).await;
    assert_eq!(names(&listed), ["refresh_board", "show_board"], "{listed}");

    // A 2025-11-25 session whose `initialize` declared no extension is served the same way.
    let (session, _) = initialize(&server).await;
    let listed = json!({ "result": legacy(&server, &session, "tools/list").await });
    assert_eq!(names(&listed), ["show_board"], "{listed}");
    assert_eq!(
        listed["result"]["tools"][0]["_meta"],
        json!({ "com.example/owner": "ops" }),
        "{listed}"
    );
}

#[tokio::test]
async fn a_client_without_the_extension_cannot_call_an_app_only_tool_but_gets_the_text() {
    let server = serve(app());
    let refused = modern_as(
        &server,
        json!({}),
        "tools/call",
        json!({ "name": "refresh_board", "arguments": {} }),
    )
    .await;
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/ui"],
        json!({ "mimeTypes": ["text/html;profile=mcp-app"] }),
        "{refused}"
    );
    let text = modern_as(
        &server,
        json!({}),
        "tools/call",
        json!({ "name": "show_board", "arguments": {} }),
    )
    .await;
    assert_eq!(
        text["result"]["content"][0]["text"], "The board, as text.",
        "{text}"
    );
}
