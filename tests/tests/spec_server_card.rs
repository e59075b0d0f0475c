//! Server Card extension (SEP-2127, draft; `docs/discovery.md` of
//! modelcontextprotocol/experimental-ext-server-card), end to end through the local server:
//! "Hosted Server Card Location": "MCP Servers MAY host their Server Card at
//! `GET <streamable-http-url>/server-card` … SHOULD respect the `application/mcp-server-card+json`
//! media type"; "AI Catalog" → "Well-Known URI": `/.well-known/ai-catalog.json`; "Consistency
//! with Runtime Behavior": the card's `name`, `version`, descriptive fields and protocol
//! versions "SHOULD NOT contradict" `server/discover`; SEP-2127 "Security Implications": cards
//! are public, read-only metadata.
//!
//! Checked against the example shop with authorization on: the card and the catalog are served
//! without a token (public, like the protected-resource metadata) to allowed Hosts only, the
//! catalog's entry leads to the card, and the card says what an authorized `server/discover`
//! says. The generator and the schemas are checked in `shared/protocol/tests/spec_server_card.rs`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_protocol::{McpServer, Ports, ServerConfig};
use relevo_tests::*;
use serde_json::{Value, json};

struct Deployment {
    router: axum::Router,
    token: String,
}

fn deployment() -> Deployment {
    let (settings, issuer, auth) = dev_auth();
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let app = relevo_app::features(&Ports::new(Some(store.clone())));
    let server =
        McpServer::new(app, ServerConfig::default(), test_keys(), Arc::new(auth)).with_store(store);
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    Deployment {
        router: relevo_local::router(server, options),
        token: dev_token(&issuer, "acme", "alice", &["shop"]),
    }
}

fn get(path: &str, host: &str) -> http::Request<axum::body::Body> {
    http::Request::get(path)
        .header("host", host)
        .header("accept", "application/mcp-server-card+json")
        .body(axum::body::Body::empty())
        .unwrap()
}

#[tokio::test]
async fn the_card_is_served_without_a_token_beside_mcp_and_says_what_discover_says() {
    let d = deployment();
    let card = send(&d.router, get("/mcp/server-card", "127.0.0.1:8080")).await;
    assert_eq!(card.status, 200, "{}", card.text);
    assert_eq!(
        card.headers["content-type"],
        "application/mcp-server-card+json"
    );
    assert_eq!(card.headers["access-control-allow-origin"], "*");
    assert_eq!(card.headers["cache-control"], "public, max-age=3600");
    let card = card.json();

    let refused = send(&d.router, rpc(1, "server/discover", json!({}))).await;
    assert_eq!(refused.status, 401, "/mcp itself still needs a token");
    let discovered = send(
        &d.router,
        rpc_as(Some(&d.token), 1, "server/discover", json!({})),
    )
    .await
    .json();
    let result = &discovered["result"];
    let info = &result["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(
        card["name"], "1.0.0.127/relevo-shop",
        "the Host's name, reversed"
    );
    assert_eq!(info["name"], "relevo-shop");
    for key in ["version", "title", "description"] {
        assert_eq!(card[key], info[key], "{key}");
    }
    assert_eq!(
        card["remotes"],
        json!([{ "type": "streamable-http", "url": "http://127.0.0.1:8080/mcp",
                 "supportedProtocolVersions": result["supportedVersions"] }])
    );
    for absent in ["tools", "capabilities", "prompts", "resources"] {
        assert!(card.get(absent).is_none(), "{absent} is never in a card");
    }
}

#[tokio::test]
async fn the_catalog_at_both_well_known_paths_leads_to_the_card() {
    let d = deployment();
    for path in [
        "/.well-known/ai-catalog.json",
        "/.well-known/mcp/catalog.json",
    ] {
        let catalog = send(&d.router, get(path, "localhost:8080")).await;
        assert_eq!(catalog.status, 200, "{path}: {}", catalog.text);
        let entry = catalog.json()["entries"][0].clone();
        assert_eq!(entry["type"], "application/mcp-server-card+json");
        let url = entry["url"].as_str().unwrap();
        assert_eq!(url, "http://localhost:8080/mcp/server-card");
        let card = send(&d.router, get("/mcp/server-card", "localhost:8080")).await;
        assert_eq!(card.status, 200);
        let name: Value = card.json()["name"].clone();
        assert_eq!(name, "localhost/relevo-shop");
        assert_eq!(entry["identifier"], "urn:air:localhost:mcp:relevo-shop");
    }
}

#[tokio::test]
async fn the_card_and_the_catalog_refuse_a_host_or_origin_outside_the_allow_list() {
    let d = deployment();
    for path in [
        "/mcp/server-card",
        "/.well-known/ai-catalog.json",
        "/.well-known/mcp/catalog.json",
    ] {
        let foreign = send(&d.router, get(path, "evil.example")).await;
        assert_eq!(foreign.status, 403, "{path}: {}", foreign.text);
        let mut request = get(path, "127.0.0.1:8080");
        request
            .headers_mut()
            .insert("origin", "http://localhost:9999".parse().unwrap());
        assert_eq!(send(&d.router, request).await.status, 403, "{path}");
        let mut own = get(path, "127.0.0.1:8080");
        own.headers_mut()
            .insert("origin", "http://127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            send(&d.router, own).await.status,
            200,
            "{path}: its own origin"
        );
    }
}
