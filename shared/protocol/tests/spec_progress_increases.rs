//! MCP 2026-07-28, "Progress" (basic/patterns/progress.mdx) → Progress Flow: "The `progress`
//! value **MUST** increase with each notification, even if the total is unknown." — and a
//! server **MAY** "Omit the total value if unknown".
//!
//! Relevo holds this for the handler: whatever a tool reports through its notifier, the
//! `notifications/progress` on the request's SSE stream carry finite, strictly increasing
//! `progress` values. A value that repeats, goes back or is not a finite number is dropped;
//! a `total` that is not finite or is below its `progress` is left out of that notification.

use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::{App, KeyRing, McpServer, NoAuth, Route, ServerConfig, Tool};
use serde_json::{Value, json};

const VERSION: &str = "2026-07-28";

/// Reports progress the way a careless handler might: repeats, steps back, NaN, infinity, and a
/// total it then outgrows.
async fn wobbly(_: NoArgs, cx: ToolContext) -> Result<String, ToolError> {
    let notifier = cx.notifier();
    notifier.progress(1.0, Some(10.0), Some("started"));
    notifier.progress(1.0, Some(10.0), Some("again"));
    notifier.progress(0.5, None, Some("back"));
    notifier.progress(f64::NAN, None, None);
    notifier.progress(f64::INFINITY, None, None);
    notifier.progress(f64::NEG_INFINITY, None, None);
    notifier.progress(12.0, Some(10.0), Some("more than planned"));
    notifier.progress(13.0, Some(f64::INFINITY), None);
    notifier.progress(14.5, Some(20.0), Some("done"));
    Ok("ok".into())
}

/// The `params` of every `notifications/progress` on the answer to one call of `wobbly`.
async fn progress_notifications() -> Vec<Value> {
    let app = App::new("progress", "1").tool(Tool::typed("wobbly", "", wobbly).streaming());
    let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
    let server = McpServer::new(app, ServerConfig::default(), keys, Arc::new(NoAuth));
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "wobbly", "arguments": {}, "_meta": {
        "progressToken": "p-1",
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "spec", "version": "0" } } } });
    let request = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "wobbly")
        .body(Bytes::from(body.to_string()))
        .expect("a request");
    let reply = server.handle(Route::All, request).await;
    assert_eq!(reply.status(), 200);
    let bytes = reply.into_body().collect().await;
    let text = String::from_utf8(bytes.to_vec()).expect("UTF-8");
    let messages: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("a JSON message"))
        .collect();
    assert_eq!(
        messages
            .last()
            .map(|m| m["result"]["content"][0]["text"].clone()),
        Some(json!("ok")),
        "the call completes after its notifications: {text}"
    );
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"].clone())
        .collect()
}

#[tokio::test]
async fn progress_on_the_wire_only_increases_and_is_always_finite() {
    let sent = progress_notifications().await;
    let values: Vec<f64> = sent
        .iter()
        .map(|p| p["progress"].as_f64().expect("progress is a number"))
        .collect();
    assert_eq!(values, [1.0, 12.0, 13.0, 14.5]);
    assert!(values.windows(2).all(|w| w[0] < w[1]));
    assert!(sent.iter().all(|p| p["progressToken"] == "p-1"));
}

#[tokio::test]
async fn a_total_that_is_not_finite_or_below_progress_is_left_out() {
    let sent = progress_notifications().await;
    let totals: Vec<Option<f64>> = sent.iter().map(|p| p["total"].as_f64()).collect();
    assert_eq!(totals, [Some(10.0), None, None, Some(20.0)]);
    assert_eq!(sent[1]["message"], "more than planned");
}
