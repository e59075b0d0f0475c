//! MCP Registry, `server.json` (schema `2025-12-11`,
//! `https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json`; reference
//! `docs/reference/server-json/generic-server-json.md` of modelcontextprotocol/registry):
//! `name` (reverse-DNS, one `/`), `description` (1–100 characters) and `version` are
//! required; a remote server lists `remotes[]` of `{type: "streamable-http", url}`. SEP-2127,
//! "Relationship to the MCP Registry's `server.json`": "Where the formats cover the same
//! concepts, such as identity, documentation, and remote endpoints, they use compatible
//! metadata".
//!
//! Checked: the generated `server.json` validates against the published schema (vendored in
//! `tests/data/server-card/`, see its README) and says what the server card says.

use std::sync::Arc;

use relevo_protocol::card::{self, Listing};
use relevo_protocol::wire::Icon;
use relevo_protocol::{App, KeyRing, McpServer, NoAuth, ServerConfig};
use serde_json::Value;

const URL: &str = "https://mcp.example.com/mcp";

fn server() -> McpServer {
    let app = App::new("shop", "3.1.0")
        .title("Example Shop")
        .description("Browse the catalog and check out.")
        .website_url("https://example.com/shop")
        .icon(Icon::new("https://example.com/shop.png"))
        .icon(Icon::new("data:image/png;base64,iVBORw0KGgo="));
    let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
    McpServer::new(app, ServerConfig::default(), keys, Arc::new(NoAuth))
}

fn validate(instance: &Value) {
    let path = format!(
        "{}/tests/data/server-card/server.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the schema")).expect("JSON");
    let mut compiler = boon::Compiler::new();
    compiler.enable_format_assertions();
    let id = card::SERVER_JSON_SCHEMA;
    compiler.add_resource(id, schema).expect("the schema loads");
    let mut schemas = boon::Schemas::new();
    let index = compiler
        .compile(id, &mut schemas)
        .expect("the schema compiles");
    if let Err(error) = schemas.validate(instance, index) {
        panic!("{instance:#} is not a valid server.json: {error:#}");
    }
}

#[test]
fn server_json_validates_against_the_registry_schema() {
    let document = card::server_json(&server(), &Listing::default(), URL).expect("server.json");
    validate(&document);
    assert_eq!(document["$schema"], card::SERVER_JSON_SCHEMA);
    assert_eq!(document["remotes"][0]["type"], "streamable-http");
    assert_eq!(document["remotes"][0]["url"], URL);
}

#[test]
fn server_json_and_the_card_share_identity_and_endpoint() {
    let document = card::server_json(&server(), &Listing::default(), URL).expect("server.json");
    let card = card::server_card(&server(), &Listing::default(), URL).expect("a card");
    for key in ["name", "version", "description", "title", "websiteUrl"] {
        assert_eq!(document[key], card[key], "{key}");
    }
    assert_eq!(document["remotes"][0]["url"], card["remotes"][0]["url"]);
    assert_eq!(
        card["icons"].as_array().map(Vec::len),
        Some(2),
        "the card has both icons"
    );
    assert_eq!(
        document["icons"],
        serde_json::json!([{ "src": "https://example.com/shop.png" }]),
        "the registry takes https: icons only"
    );
}
