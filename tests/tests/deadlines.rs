//! A tool call has a deadline below its function's timeout: the front door's adapter puts a
//! [`Deadline`] on the request (on Lambda, `relevo_lambda::invocation_deadline`: the invocation's
//! deadline less `RELEVO_DEADLINE_MARGIN_MS`), and a handler still running then is stopped and
//! answered with the retryable deadline error, never left to be killed with the invocation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use relevo_protocol::wire::{CallToolResult, ContentBlock};
use relevo_protocol::{App, Deadline, ManualClock, Outcome, Route, ServerConfig, Tool, handler};
use relevo_tests::*;
use serde_json::{Value, json};

fn call(name: &str) -> http::Request<Bytes> {
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": name, "arguments": {}, "_meta": envelope(json!({})) } });
    http::Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(Bytes::from(body.to_string()))
        .expect("a valid request")
}

#[tokio::test]
async fn a_slow_tool_ends_with_the_retryable_deadline_error_before_the_function_would_be_killed() {
    let app = App::new("slow", "0").tool(Tool::new(
        "sleepy",
        "sleeps far past any deadline",
        json!({ "type": "object" }),
        handler(|_| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(Outcome::tool(CallToolResult::success(vec![
                ContentBlock::text("too late"),
            ])))
        }),
    ));
    let server = server(
        app,
        ServerConfig::default(),
        Arc::new(ManualClock::at(1_800_000_000)),
    );
    let mut request = call("sleepy");
    // Taken before the deadline is set: the deadline is 200 ms from its own creation, so a clock
    // started after it could see the answer come a little under 200 ms.
    let started = Instant::now();
    request
        .extensions_mut()
        .insert(Deadline::after(Duration::from_millis(200)));
    let reply = server.handle(Route::All, request).await;
    let waited = started.elapsed();

    assert_eq!(
        reply.status(),
        503,
        "a retryable failure, not a late answer"
    );
    assert_eq!(
        reply
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let body: Value =
        serde_json::from_slice(&reply.into_body().collect().await).expect("a JSON-RPC error");
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["code"], -31000, "{body}");
    assert_eq!(
        body["error"]["data"],
        json!({ "retryable": true, "reason": "deadline", "retryAfterMs": 1000, "outcome": "unknown" })
    );
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_secs(5),
        "stopped at its deadline, not the tool's 60 s: {waited:?}"
    );
}
