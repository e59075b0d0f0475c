//! MCP 2026-07-28, basic/index "General fields" → `icons`: "The `icons` property provides a
//! standardized way for servers to expose visual identifiers for their resources, tools,
//! prompts, and implementations"; schema `BaseMetadata.title` ("Intended for UI and end-user
//! contexts") and `Icons.icons` on `Implementation`, `Tool`, `Prompt`, `Resource` and
//! `ResourceTemplate`; `Implementation {name, version, title?, description?, websiteUrl?,
//! icons?}`, the type of `_meta["io.modelcontextprotocol/serverInfo"]`. The 2025-11-25 schema
//! has the same fields, and `serverInfo` in the `initialize` result.
//!
//! An app declares them, and both revisions list them as declared: `server/discover`'s
//! `serverInfo` and `initialize`'s, `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list`. An item that declares none lists no `title` or `icons` key (never
//! `null`).

mod support;

use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::wire::{GetPromptResult, Icon, IconTheme, ResourceContents};
use relevo_protocol::{App, Prompt, Resource, ResourceTemplate, Tool};
use serde_json::{Value, json};
use support::{initialize, listed_both_ways, modern, serve};

async fn nothing(_: NoArgs, _: ToolContext) -> Result<String, ToolError> {
    Ok(String::new())
}

async fn no_messages(_: NoArgs, _: ToolContext) -> Result<GetPromptResult, ToolError> {
    Ok(GetPromptResult::new(vec![]))
}

async fn no_contents(_: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![])
}

async fn no_note(_: Value, _: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![])
}

const PNG: &str = "data:image/png;base64,iVBORw0KGgo=";

fn icon(name: &str) -> Icon {
    Icon::new(format!("https://icons.example.com/{name}.svg"))
        .with_mime_type("image/svg+xml")
        .with_sizes(vec!["any".into()])
        .with_theme(IconTheme::Dark)
}

fn wire_icon(name: &str) -> Value {
    json!({ "src": format!("https://icons.example.com/{name}.svg"), "mimeType": "image/svg+xml",
        "sizes": ["any"], "theme": "dark" })
}

/// One item of each kind with a title and icons, one of each without.
fn app() -> App {
    App::new("display", "1.2.3")
        .title("Display Server")
        .description("Shows what it is.")
        .website_url("https://display.example.com")
        .icon(icon("server"))
        .icon(Icon::new(PNG))
        .tool(
            Tool::typed("decorated", "Decorated.", nothing)
                .title("A decorated tool")
                .icon(icon("tool")),
        )
        .tool(Tool::typed("plain", "Plain.", nothing))
        .prompt(
            Prompt::typed("decorated", "Decorated.", no_messages)
                .title("A decorated prompt")
                .icon(icon("prompt")),
        )
        .prompt(Prompt::typed("plain", "Plain.", no_messages))
        .resource(
            Resource::typed("app://decorated", "decorated", "text/plain", no_contents)
                .title("A decorated resource")
                .icon(icon("resource")),
        )
        .resource(Resource::typed(
            "app://plain",
            "plain",
            "text/plain",
            no_contents,
        ))
        .template(
            ResourceTemplate::typed("app://decorated/{id}", "decorated", "text/plain", no_note)
                .title("A decorated template")
                .icon(icon("template")),
        )
        .template(ResourceTemplate::typed(
            "app://plain/{id}",
            "plain",
            "text/plain",
            no_note,
        ))
}

fn server_info() -> Value {
    json!({ "name": "display", "version": "1.2.3", "title": "Display Server",
        "description": "Shows what it is.", "websiteUrl": "https://display.example.com",
        "icons": [wire_icon("server"), { "src": PNG }] })
}

#[tokio::test]
async fn discover_names_the_whole_implementation_in_server_info() {
    let discovered = modern(&serve(app()), "server/discover").await;
    assert_eq!(
        discovered["_meta"]["io.modelcontextprotocol/serverInfo"],
        server_info()
    );
    assert_eq!(
        discovered.get("serverInfo"),
        None,
        "in _meta, not top-level"
    );
}

#[tokio::test]
async fn initialize_names_the_whole_implementation_in_server_info() {
    let (_, initialized) = initialize(&serve(app())).await;
    assert_eq!(initialized["serverInfo"], server_info());
}

#[tokio::test]
async fn an_undeclared_implementation_names_only_its_name_and_version() {
    let server = serve(App::new("bare", "1"));
    let bare = json!({ "name": "bare", "version": "1" });
    let discovered = modern(&server, "server/discover").await;
    assert_eq!(
        discovered["_meta"]["io.modelcontextprotocol/serverInfo"],
        bare
    );
    assert_eq!(initialize(&server).await.1["serverInfo"], bare);
}

#[tokio::test]
async fn every_list_shows_titles_and_icons_as_declared_on_both_revisions() {
    let lists = listed_both_ways(app()).await;
    assert_eq!(lists.len(), 8, "four lists, two revisions");
    for (revision, method, items) in lists {
        let named = |name: &str| {
            items
                .iter()
                .find(|item| item["name"] == name)
                .cloned()
                .unwrap_or_else(|| panic!("{revision} {method}: no {name} in {items:?}"))
        };
        let decorated = named("decorated");
        let kind = match method {
            "tools/list" => "tool",
            "prompts/list" => "prompt",
            "resources/list" => "resource",
            _ => "template",
        };
        assert_eq!(
            decorated["title"],
            format!("A decorated {kind}"),
            "{revision} {method}"
        );
        assert_eq!(
            decorated["icons"],
            json!([wire_icon(kind)]),
            "{revision} {method}"
        );
        let plain = named("plain");
        for key in ["title", "icons"] {
            assert_eq!(
                plain.get(key),
                None,
                "{revision} {method}: {key} undeclared"
            );
        }
    }
}
