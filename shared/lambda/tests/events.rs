//! The Lambda adapter fed real-shaped API Gateway proxy events (REST v1 and HTTP API v2).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use bytes::Bytes;
use lambda_http::Body;
use relevo_protocol::{KeyRing, McpServer, Method, NoAuth, OriginPolicy, Route, ServerConfig};
use serde_json::Value;

fn server(hosts: Vec<String>) -> McpServer {
    let config = ServerConfig {
        origin_policy: OriginPolicy {
            hosts,
            origins: vec![],
        },
        ..ServerConfig::default()
    };
    let keys = KeyRing::new(vec![("k".into(), vec![1; 32])]).unwrap();
    McpServer::new(
        relevo_app::features(&relevo_protocol::Ports::new(None)),
        config,
        keys,
        std::sync::Arc::new(NoAuth),
    )
}

/// A fixture event as a request (read by lambda_http's reader, which the function's own reader
/// agrees with: `src/events/proxy_tests.rs`).
fn from_str(json: &str) -> Result<http::Request<Bytes>, serde_json::Error> {
    let (parts, body) = lambda_http::request::from_str(json)?.into_parts();
    let body = match body {
        Body::Text(text) => Bytes::from(text),
        Body::Binary(binary) => Bytes::from(binary),
        _ => Bytes::new(),
    };
    Ok(http::Request::from_parts(parts, body))
}

fn json_body(body: &Body) -> Value {
    match body {
        Body::Text(text) => serde_json::from_str(text).unwrap(),
        other => panic!("expected a text body, got {other:?}"),
    }
}

#[tokio::test]
async fn rest_proxy_event_reaches_the_tools_list_function() {
    let event = from_str(include_str!("fixtures/apigw-rest-tools-list.json")).unwrap();
    let response =
        relevo_lambda::handle_event(&server(vec![]), Route::Only(Method::ToolsList), event).await;
    assert_eq!(response.status(), 200);
    let body = json_body(response.body());
    assert_eq!(body["id"], 7);
    assert_eq!(body["result"]["tools"][0]["name"], "add");
}

#[tokio::test]
async fn http_api_event_reaches_the_all_methods_function() {
    let event = from_str(include_str!("fixtures/apigw-http-tools-call.json")).unwrap();
    let response = relevo_lambda::handle_event(&server(vec![]), Route::All, event).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        json_body(response.body())["result"]["structuredContent"]["greeting"],
        "Hello, Ada!"
    );
}

#[tokio::test]
async fn function_for_another_method_refuses_the_event() {
    let event = from_str(include_str!("fixtures/apigw-http-tools-call.json")).unwrap();
    let response =
        relevo_lambda::handle_event(&server(vec![]), Route::Only(Method::ToolsList), event).await;
    assert_eq!(response.status(), 400);
    assert_eq!(json_body(response.body())["error"]["code"], -32020);
}

#[tokio::test]
async fn host_outside_the_configured_domains_is_forbidden() {
    let event = from_str(include_str!("fixtures/apigw-rest-tools-list.json")).unwrap();
    let response =
        relevo_lambda::handle_event(&server(vec!["mcp.example.com".into()]), Route::All, event)
            .await;
    assert_eq!(response.status(), 403);
}

fn described_server(hosts: Vec<String>) -> McpServer {
    let config = ServerConfig {
        origin_policy: OriginPolicy {
            hosts,
            origins: vec![],
        },
        listing: relevo_protocol::card::Listing::default().at("https://mcp.example.com/mcp"),
        ..ServerConfig::default()
    };
    let keys = KeyRing::new(vec![("k".into(), vec![1; 32])]).unwrap();
    let app = relevo_app::features(&relevo_protocol::Ports::new(None));
    McpServer::new(app, config, keys, std::sync::Arc::new(NoAuth))
}

fn get_event(path: &str, host: &str) -> http::Request<Bytes> {
    http::Request::get(path)
        .header("host", host)
        .body(Bytes::new())
        .unwrap()
}

#[tokio::test]
async fn the_catch_all_answers_the_server_card_and_the_catalogs_as_well_known_does() {
    let server = described_server(vec!["mcp.example.com".into()]);
    for (path, media_type) in [
        ("/mcp/server-card", "application/mcp-server-card+json"),
        (
            "/.well-known/ai-catalog.json",
            "application/ai-catalog+json",
        ),
        ("/.well-known/mcp/catalog.json", "application/json"),
    ] {
        let caught = relevo_lambda::handle_catch_all_event(
            &server,
            None,
            get_event(path, "mcp.example.com"),
        )
        .await;
        assert_eq!(caught.status(), 200, "{path}");
        assert_eq!(caught.headers()["content-type"], media_type, "{path}");
        let well_known = relevo_lambda::well_known::public_document(
            &server,
            None,
            &get_event(path, "mcp.example.com"),
        )
        .unwrap();
        assert_eq!(
            json_body(caught.body()),
            json_body(well_known.body()),
            "{path}"
        );
        let foreign =
            relevo_lambda::handle_catch_all_event(&server, None, get_event(path, "evil.example"))
                .await;
        assert_eq!(foreign.status(), 403, "{path}");
    }
    let card = relevo_lambda::well_known::public_document(
        &server,
        None,
        &get_event("/mcp/server-card", "mcp.example.com"),
    )
    .unwrap();
    let card = json_body(card.body());
    assert_eq!(card["name"], "com.example.mcp/relevo-shop");
    assert_eq!(card["remotes"][0]["url"], "https://mcp.example.com/mcp");
    assert!(
        relevo_lambda::well_known::public_document(&server, None, &get_event("/mcp", "h"))
            .is_none(),
        "/mcp itself is the server's"
    );
}
