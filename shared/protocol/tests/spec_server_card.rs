//! Server Card extension (SEP-2127, draft; `docs/discovery.md` of
//! modelcontextprotocol/experimental-ext-server-card), "MCP Server Cards" → "Consistency with
//! Runtime Behavior": "the values a client observes once connected — the `serverInfo` (`name`,
//! `version`) and `supportedVersions` from `server/discover`, the transport served at each
//! `remotes[]` endpoint, and descriptive fields (`title`, `description`, `icons`) — SHOULD NOT
//! contradict the equivalent values declared in the Server Card"; "Hosted Server Card
//! Location": "MCP Servers SHOULD respect the `application/mcp-server-card+json` media type";
//! "CORS Requirements": "Hosted Server Card endpoints MUST include appropriate CORS headers";
//! "Caching": "Server Card hosts SHOULD include caching headers … SHOULD also return an `ETag`
//! … SHOULD honor `If-None-Match` and return `304 Not Modified`"; and SEP-2127, "Security
//! Implications": "servers MUST NOT include credentials, internal network topology, proprietary
//! logic, or user/session-specific data" (cards exclude primitives).
//!
//! The card is checked against the extension's published JSON Schema (vendored in
//! `tests/data/server-card/`, see its README), compared field by field with a live
//! `server/discover`, and served through [`relevo_protocol::card::respond`].

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request};
use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::card::{self, CardError, Listing};
use relevo_protocol::wire::Icon;
use relevo_protocol::{App, KeyRing, McpServer, NoAuth, Route, ServerConfig, Tool};
use serde_json::{Value, json};

const VERSION: &str = "2026-07-28";
const URL: &str = "https://mcp.example.com/mcp";

async fn nothing(_: NoArgs, _: ToolContext) -> Result<String, ToolError> {
    Ok(String::new())
}

fn app() -> App {
    App::new("shop", "1.4.2")
        .title("Example Shop")
        .description("Browse the catalog, fill a cart and check out.")
        .website_url("https://example.com/shop")
        .icon(Icon::new("https://example.com/shop.png").with_sizes(vec!["48x48".into()]))
        .tool(Tool::typed("secret_admin", "Only for admins.", nothing).scopes(&["admin"]))
}

fn server(app: App) -> McpServer {
    let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
    let store = relevo_embedded::SqliteStore::in_memory().expect("an in-memory store");
    McpServer::new(app, ServerConfig::default(), keys, Arc::new(NoAuth)).with_store(Arc::new(store))
}

fn validate(schema_file: &str, location: &str, instance: &Value) {
    if let Err(error) = check(schema_file, location, instance) {
        panic!("{instance:#} does not validate against {schema_file}: {error}");
    }
}

fn check(schema_file: &str, location: &str, instance: &Value) -> Result<(), String> {
    let path = format!(
        "{}/tests/data/server-card/{schema_file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the vendored schema"))
            .expect("JSON");
    let mut compiler = boon::Compiler::new();
    compiler.enable_format_assertions();
    let base = format!("file:///{schema_file}");
    compiler
        .add_resource(&base, schema)
        .expect("the schema loads");
    let mut schemas = boon::Schemas::new();
    let index = compiler
        .compile(&format!("{base}{location}"), &mut schemas)
        .expect("the schema compiles");
    schemas
        .validate(instance, index)
        .map_err(|error| format!("{error:#}"))
}

async fn discover(server: &McpServer) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {} } } });
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
    reply["result"].clone()
}

fn get(server: &McpServer, path: &str, headers: &[(&'static str, &str)]) -> http::Response<String> {
    let mut map = HeaderMap::new();
    map.insert("host", HeaderValue::from_static("mcp.example.com"));
    for (name, value) in headers {
        map.insert(*name, HeaderValue::from_str(value).expect("a header value"));
    }
    card::respond(
        server,
        &Listing::default().at(URL),
        &Method::GET,
        &path.parse().expect("a path"),
        &map,
    )
}

#[test]
fn the_card_validates_against_the_published_server_card_schema() {
    let card = card::server_card(&server(app()), &Listing::default(), URL).expect("a card");
    validate("server-card.schema.json", "#/$defs/ServerCard", &card);
    assert_eq!(
        card["name"], "com.example.mcp/shop",
        "the URL's host, reversed"
    );
    let named = Listing {
        namespace: Some("io.github.example".into()),
        ..Listing::default()
    };
    let card = card::server_card(&server(app()), &named, URL).expect("a card");
    assert_eq!(card["name"], "io.github.example/shop");
    validate("server-card.schema.json", "#/$defs/ServerCard", &card);
    let mut unnamed = card.clone();
    unnamed["name"] = json!("shop");
    assert!(
        check("server-card.schema.json", "#/$defs/ServerCard", &unnamed).is_err(),
        "the vendored schema does refuse a card that breaks it"
    );
}

#[tokio::test]
async fn the_card_says_what_server_discover_says() {
    let server = server(app());
    let card = card::server_card(&server, &Listing::default(), URL).expect("a card");
    let discovered = discover(&server).await;
    let info = &discovered["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(
        card["name"],
        format!("com.example.mcp/{}", info["name"].as_str().unwrap_or(""))
    );
    for (card_key, info_key) in [
        ("version", "version"),
        ("title", "title"),
        ("description", "description"),
        ("websiteUrl", "websiteUrl"),
        ("icons", "icons"),
    ] {
        assert_eq!(
            card[card_key], info[info_key],
            "{card_key} differs from serverInfo"
        );
    }
    let remote = &card["remotes"][0];
    assert_eq!(remote["type"], "streamable-http");
    assert_eq!(remote["url"], URL);
    assert_eq!(
        remote["supportedProtocolVersions"], discovered["supportedVersions"],
        "the card's versions are discover's"
    );
    assert!(
        discovered["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.len() > 1),
        "with a store the 2025-11-25 versions are served and listed on both"
    );
}

#[test]
fn the_card_lists_no_primitive_capability_or_caller_dependent_field() {
    let card = card::server_card(&server(app()), &Listing::default(), URL).expect("a card");
    let keys: Vec<&str> = card
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    for key in &keys {
        assert!(
            [
                "$schema",
                "name",
                "version",
                "description",
                "title",
                "websiteUrl",
                "icons",
                "remotes"
            ]
            .contains(key),
            "unexpected key {key} in {card:#}"
        );
    }
    let text = card.to_string();
    assert!(
        !text.contains("secret_admin"),
        "a scoped tool's name never reaches the card"
    );
}

#[test]
fn an_app_without_a_description_or_with_a_long_one_makes_no_card() {
    let bare = server(App::new("shop", "1"));
    assert_eq!(
        card::server_card(&bare, &Listing::default(), URL),
        Err(CardError::NoDescription("shop".into()))
    );
    let long = server(App::new("shop", "1").description(&"x".repeat(101)));
    assert!(matches!(
        card::server_card(&long, &Listing::default(), URL),
        Err(CardError::LongDescription { chars: 101, .. })
    ));
    let spaced = server(App::new("my shop", "1").description("A shop."));
    assert!(matches!(
        card::server_card(&spaced, &Listing::default(), URL),
        Err(CardError::Name(_))
    ));
}

#[test]
fn the_card_is_served_beside_the_mcp_endpoint_with_its_media_type_cors_and_cache_headers() {
    let server = server(app());
    let response = get(&server, "/mcp/server-card", &[]);
    assert_eq!(response.status(), 200);
    let headers = response.headers();
    assert_eq!(headers["content-type"], "application/mcp-server-card+json");
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert_eq!(headers["access-control-allow-methods"], "GET");
    assert_eq!(headers["access-control-expose-headers"], "ETag");
    assert_eq!(headers["cache-control"], "public, max-age=3600");
    let etag = headers["etag"].to_str().expect("ASCII").to_string();
    let served: Value = serde_json::from_str(response.body()).expect("JSON");
    let made = card::server_card(&server, &Listing::default(), URL).expect("a card");
    assert_eq!(served, made, "the served card is the generated one");

    let again = get(&server, "/mcp/server-card", &[("if-none-match", &etag)]);
    assert_eq!(again.status(), 304, "an unchanged card is not sent again");
    assert!(again.body().is_empty());

    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("mcp.example.com"));
    let listing = Listing::default().at(URL);
    let post = card::respond(
        &server,
        &listing,
        &Method::POST,
        &http::Uri::from_static("/mcp/server-card"),
        &headers,
    );
    assert_eq!(post.status(), 405);
    assert_eq!(post.headers()["allow"], "GET, HEAD");
    assert_eq!(get(&server, "/mcp/server-cards", &[]).status(), 404);
}

#[test]
fn without_a_configured_url_the_card_names_the_requested_host() {
    let server = server(app());
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("127.0.0.1:8080"));
    let response = card::respond(
        &server,
        &Listing::default(),
        &Method::GET,
        &http::Uri::from_static("/mcp/server-card"),
        &headers,
    );
    assert_eq!(response.status(), 200);
    let card: Value = serde_json::from_str(response.body()).expect("JSON");
    assert_eq!(card["remotes"][0]["url"], "http://127.0.0.1:8080/mcp");
    validate("server-card.schema.json", "#/$defs/ServerCard", &card);
}
