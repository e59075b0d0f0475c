//! The Lambda adapter fed real-shaped API Gateway proxy events (REST v1 and HTTP API v2).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use lambda_http::{Body, request::from_str};
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
