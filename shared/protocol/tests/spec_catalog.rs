//! Server Card extension (SEP-2127, draft; `docs/discovery.md` of
//! modelcontextprotocol/experimental-ext-server-card), "AI Catalog" → "Well-Known URI": "For
//! automated domain-level discovery, hosts MAY publish one at: `/.well-known/ai-catalog.json`
//! … When served over HTTP, the document SHOULD use the `application/ai-catalog+json` media
//! type"; "Server Card Entries": `identifier` (required), `type` "MUST be
//! `application/mcp-server-card+json`", and exactly one of `url` or `data`.
//!
//! The same catalog is also served at `/.well-known/mcp/catalog.json`, the draft's earlier MCP
//! Catalog location (issue 27 names it). No JSON Schema is published for the catalog: the one
//! in `tests/data/server-card/` is transcribed from those tables (see its README).

use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Method};
use relevo_protocol::card::{self, Listing};
use relevo_protocol::{App, KeyRing, McpServer, NoAuth, ServerConfig};
use serde_json::Value;

const URL: &str = "https://mcp.example.com/mcp";

fn server() -> McpServer {
    let app = App::new("shop", "2.0.0").description("Browse the catalog and check out.");
    let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
    McpServer::new(app, ServerConfig::default(), keys, Arc::new(NoAuth))
}

fn validate(instance: &Value) {
    let path = format!(
        "{}/tests/data/server-card/catalog.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the schema")).expect("JSON");
    let mut compiler = boon::Compiler::new();
    compiler.enable_format_assertions();
    compiler
        .add_resource("file:///catalog.schema.json", schema)
        .expect("the schema loads");
    let mut schemas = boon::Schemas::new();
    let index = compiler
        .compile("file:///catalog.schema.json", &mut schemas)
        .expect("the schema compiles");
    if let Err(error) = schemas.validate(instance, index) {
        panic!("{instance:#} is not a catalog of server cards: {error:#}");
    }
}

#[test]
fn the_catalog_has_one_entry_pointing_at_the_card_beside_the_mcp_endpoint() {
    let catalog = card::catalog(&server(), &Listing::default(), URL).expect("a catalog");
    validate(&catalog);
    assert_eq!(catalog["specVersion"], "1.0");
    let entries = catalog["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["type"], "application/mcp-server-card+json");
    assert_eq!(entries[0]["url"], "https://mcp.example.com/mcp/server-card");
    assert_eq!(entries[0]["identifier"], "urn:air:mcp.example.com:mcp:shop");
    let card = card::server_card(&server(), &Listing::default(), URL).expect("a card");
    assert_eq!(
        card["name"], "com.example.mcp/shop",
        "the identifier names the card's server"
    );
}

#[test]
fn the_catalog_is_served_at_both_well_known_paths_with_cors_and_cache_headers() {
    let server = server();
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("mcp.example.com"));
    let listing = Listing::default().at(URL);
    for (path, media_type) in [
        (
            "/.well-known/ai-catalog.json",
            "application/ai-catalog+json",
        ),
        ("/.well-known/mcp/catalog.json", "application/json"),
    ] {
        let response = card::respond(
            &server,
            &listing,
            &Method::GET,
            &http::Uri::from_static(path),
            &headers,
        );
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], media_type, "{path}");
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        assert_eq!(response.headers()["cache-control"], "public, max-age=3600");
        assert!(response.headers().contains_key("etag"));
        let served: Value = serde_json::from_str(response.body()).expect("JSON");
        validate(&served);
    }
    let elsewhere = card::respond(
        &server,
        &listing,
        &Method::GET,
        &http::Uri::from_static("/.well-known/mcp.json"),
        &headers,
    );
    assert_eq!(elsewhere.status(), 404);
}
