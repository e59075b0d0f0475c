//! Spec checklist — Tools, `CallToolResult` (structured content and `outputSchema`): a server
//! MUST provide structured results that conform to a tool's declared `outputSchema`.
//!
//! What holds, end to end through the router: a `tools/call` whose result breaks its tool's
//! `outputSchema` is never answered as a success. The spec's error split (Tools, "Error
//! handling") makes a server fault a protocol error and keeps `isError: true` for execution
//! problems the model can correct; a result that breaks the tool's own schema is the server's
//! fault, which the caller cannot correct, so the answer is the JSON-RPC internal error
//! (`-32603`) saying the result broke the tool's outputSchema, with no result content in it.
//! Covered: a typed tool whose result holds a number JSON cannot carry (its field would
//! serialize as `null`), a JSON-built tool whose result has a field of the wrong type, and one
//! whose result has no `structuredContent`; a conforming result passes. A tool that checks its
//! own arithmetic (`add`, whose sum of two large doubles overflows) answers the overflow as the
//! caller's error, `isError: true`, with no ERROR log line: the input was the cause.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_protocol::wire::{CallToolResult, ContentBlock};
use relevo_protocol::{App, ManualClock, Outcome, Tool, handler};
use relevo_tests::*;
use serde_json::{Value, json};

const T0: u64 = 1_800_000_000;

fn tool_returning(name: &str, structured: Value) -> Tool {
    let schema = json!({
        "type": "object",
        "properties": { "n": { "type": "integer" } },
        "required": ["n"]
    });
    let answer = handler(move |_| {
        let structured = structured.clone();
        async move { Ok(Outcome::tool(CallToolResult::structured(structured))) }
    });
    Tool::new(name, "", json!({ "type": "object" }), answer).with_output_schema(schema)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Ratio {
    ratio: f64,
}

fn app() -> App {
    App::new("spec-output-schema", "0")
        .tool(relevo_app::demo::add_tool())
        .tool(Tool::typed(
            "overflows",
            "A tool that does not check its arithmetic.",
            |_: NoArgs, _| async {
                Ok(Ratio {
                    ratio: f64::MAX * 2.0,
                })
            },
        ))
        .tool(tool_returning("keeps", json!({ "n": 1 })))
        .tool(tool_returning("mistyped", json!({ "n": "one" })))
        .tool(
            Tool::new(
                "unstructured",
                "",
                json!({ "type": "object" }),
                handler(|_| async {
                    Ok(Outcome::tool(CallToolResult::success(vec![
                        ContentBlock::text("no structure"),
                    ])))
                }),
            )
            .with_output_schema(json!({ "type": "object" })),
        )
}

async fn call(name: &str, arguments: Value) -> Value {
    let router = router(server(app(), test_config(), Arc::new(ManualClock::at(T0))));
    let params = json!({ "name": name, "arguments": arguments });
    send(&router, rpc(1, "tools/call", params)).await.json()
}

/// Not a success, and the server's error naming the broken schema, with no result content.
fn assert_refused(reply: &Value, content: &str) {
    assert!(
        reply.get("result").is_none(),
        "answered as a success: {reply}"
    );
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("outputSchema"), "{message}");
    assert!(
        !reply.to_string().contains(content),
        "no result content in the error: {reply}"
    );
}

#[tokio::test]
async fn a_conforming_structured_result_is_a_success() {
    let sum = call("add", json!({ "a": 1.5, "b": 2.0 })).await;
    assert_eq!(
        sum["result"]["structuredContent"],
        json!({ "sum": 3.5 }),
        "{sum}"
    );
    let keeps = call("keeps", json!({})).await;
    assert_eq!(
        keeps["result"]["structuredContent"],
        json!({ "n": 1 }),
        "{keeps}"
    );
    assert_ne!(keeps["result"]["isError"], true, "{keeps}");
}

#[tokio::test]
async fn a_typed_result_json_cannot_carry_is_not_a_success() {
    // f64::MAX * 2 is infinity, which serde_json would write as `null`.
    let reply = call("overflows", json!({})).await;
    assert_refused(&reply, "ratio");
}

/// What the test's log lines say, collected from a subscriber set for the current thread.
#[derive(Clone, Default)]
struct Logs(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_overflowing_sum_is_the_callers_tool_error_without_an_error_log() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    for (a, b) in [
        (1.7e308, 1.7e308),
        (-1.7e308, -1.0e308),
        (f64::MAX, f64::MAX),
    ] {
        let reply = call("add", json!({ "a": a, "b": b })).await;
        assert!(
            reply.get("error").is_none(),
            "not a protocol error: {reply}"
        );
        let result = &reply["result"];
        assert_eq!(result["isError"], true, "{reply}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("not a finite number"), "{text}");
        assert!(
            result.get("structuredContent").is_none(),
            "no sum is claimed: {reply}"
        );
    }
    let written = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        !written.lines().any(|line| line.contains("ERROR")),
        "no ERROR line for the caller's input: {written}"
    );
    let fine = call("add", json!({ "a": f64::MAX, "b": 0.0 })).await;
    assert_eq!(fine["result"]["structuredContent"]["sum"], json!(f64::MAX));
}

#[tokio::test]
async fn a_result_of_the_wrong_type_is_not_a_success() {
    let reply = call("mistyped", json!({})).await;
    assert_refused(&reply, "one");
}

#[tokio::test]
async fn a_result_without_structured_content_is_not_a_success() {
    let reply = call("unstructured", json!({})).await;
    assert_refused(&reply, "no structure");
}
