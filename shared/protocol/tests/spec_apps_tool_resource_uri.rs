//! MCP Apps (SEP-1865, stable 2026-01-26), "Resource Discovery": "Tools are associated with UI
//! resources through the `_meta.ui` field" (`resourceUri`, `visibility: Array<"model" | "app">`),
//! and the resource a tool names "MUST exist on the server".
//!
//! A tool pointed at a view lists `_meta.ui.resourceUri` and `visibility` to a client that
//! declares the extension; a server whose tool names a view the app does not register refuses
//! to be built (whatever the registration order), and a `resourceUri` that is not `ui://` or a
//! visibility outside `model`/`app` is refused at registration, naming the tool and the rule.

mod support;

use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::registry::apps::{self, UiMeta, Visibility};
use relevo_protocol::{App, Tool};
use serde_json::json;
use support::{modern_as, refusal, serve};

async fn board(_: NoArgs, _: ToolContext) -> Result<String, ToolError> {
    Ok("The board, as text.".into())
}

fn apps_client() -> serde_json::Value {
    json!({ "extensions": { "io.modelcontextprotocol/ui": {
        "mimeTypes": ["text/html;profile=mcp-app"] } } })
}

#[tokio::test]
async fn a_tool_lists_its_view_and_visibility_to_a_client_with_the_extension() {
    let app = App::new("views", "1")
        .tool(Tool::typed("show_board", "Shows the board.", board).view("ui://views/board"))
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
        ));
    let server = serve(app);
    let listed = modern_as(&server, apps_client(), "tools/list", json!({})).await;
    let tools = listed["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let named = |name: &str| tools.iter().find(|t| t["name"] == name).cloned();
    assert_eq!(
        named("show_board").map(|t| t["_meta"]["ui"].clone()),
        Some(json!({ "resourceUri": "ui://views/board" })),
        "{listed}"
    );
    assert_eq!(
        named("refresh_board").map(|t| t["_meta"]["ui"].clone()),
        Some(json!({ "resourceUri": "ui://views/board", "visibility": ["app"] })),
        "{listed}"
    );
}

#[test]
fn a_server_whose_tool_names_an_unregistered_view_is_refused() {
    let Err(panic) = std::panic::catch_unwind(|| {
        serve(
            App::new("views", "1")
                .tool(Tool::typed("show_board", "Shows.", board).view("ui://views/missing")),
        )
    }) else {
        panic!("the server was built");
    };
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("show_board"), "{message}");
    assert!(message.contains("ui://views/missing"), "{message}");
}

#[test]
fn a_view_uri_outside_ui_or_an_unknown_visibility_is_refused_at_registration() {
    let message = refusal(|| {
        App::new("views", "1")
            .tool(Tool::typed("show_board", "Shows.", board).view("https://example.com/board"))
    });
    assert!(message.contains("show_board"), "{message}");
    assert!(message.contains("ui://"), "{message}");
    let message = refusal(|| {
        App::new("views", "1").tool(
            Tool::typed("show_board", "Shows.", board)
                .meta("ui", json!({ "visibility": ["agent"] })),
        )
    });
    assert!(message.contains("visibility"), "{message}");
}
