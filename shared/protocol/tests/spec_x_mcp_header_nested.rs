//! MCP 2026-07-28, "Transports" → Streamable HTTP → Custom Headers from Tool Parameters.
//! Schema Extension: "Nested object properties are permitted as long as every step in the
//! chain is a `properties` key", and "Header extraction is defined as reading the instance
//! value at the exact property path of the annotated property (the chain of `properties` keys
//! leading to it). If no value is present at that path in the call arguments, the header is
//! omitted." Server Behavior for Custom Headers: "Any server that processes the message body
//! **MUST** validate that encoded header values, after decoding if Base64-encoded, match the
//! corresponding values in the request body. Servers **MUST** reject requests with a `400 Bad
//! Request` HTTP status and JSON-RPC error code `-32020` (`HeaderMismatch`) if any validation
//! fails", including "Client omits header but value is in body → Server MUST reject the
//! request" and "Parameter value is `null` → Server MUST NOT expect the header".
//!
//! Checked through the validation ladder (`Ladder::validate`, rung 5) with a tool whose
//! annotated properties sit inside objects: the value at `arguments.target.region` (and one
//! level deeper) must match its `Mcp-Param-*` header; a missing or null parent means absent.

use bytes::Bytes;
use relevo_protocol::ladder::{Ladder, Validated};
use relevo_protocol::{App, Handler, OriginPolicy, Route, Tool, handler};
use serde_json::{Value, json};

fn never() -> Handler {
    handler(|_| async { unreachable!("never called") })
}

fn app() -> App {
    App::new("nested", "1").tool(Tool::new(
        "route",
        "Routes by nested arguments.",
        json!({
            "type": "object",
            "properties": {
                "target": {
                    "type": "object",
                    "properties": {
                        "region": { "type": "string", "x-mcp-header": "Region" },
                        "shard": {
                            "type": "object",
                            "properties": { "id": { "type": "integer", "x-mcp-header": "Shard" } }
                        }
                    }
                },
                "query": { "type": "string" }
            }
        }),
        never(),
    ))
}

/// Runs a `tools/call` of `route` with `arguments` and the extra `headers` through the ladder:
/// `Ok` when it passes, else the status and JSON-RPC code it is refused with.
fn call(arguments: Value, headers: &[(&str, &str)]) -> Result<(), (u16, i32, String)> {
    let app = app();
    let policy = OriginPolicy::localhost();
    let ladder = Ladder {
        policy: &policy,
        max_body_bytes: 1 << 20,
        app: &app,
        route: Route::All,
        legacy: false,
    };
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "route",
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    let mut request = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "route");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Bytes::from(body.to_string()))
        .expect("a request");
    match ladder.validate(&request) {
        Ok(Validated::Request(_)) => Ok(()),
        Ok(other) => panic!("not a request: {other:?}"),
        Err(rejection) => Err((
            rejection.error.status().as_u16(),
            rejection.error.code(),
            rejection.error.to_string(),
        )),
    }
}

fn assert_mismatch(result: Result<(), (u16, i32, String)>, context: &str) {
    let Err((status, code, message)) = result else {
        panic!("{context}: the ladder let it through");
    };
    assert_eq!((status, code), (400, -32020), "{context}: {message}");
}

#[test]
fn a_nested_argument_without_its_header_is_refused() {
    assert_mismatch(
        call(json!({ "target": { "region": "eu-west-1" } }), &[]),
        "region in body, no Mcp-Param-Region",
    );
    assert_mismatch(
        call(json!({ "target": { "shard": { "id": 7 } } }), &[]),
        "shard id in body, no Mcp-Param-Shard",
    );
}

#[test]
fn a_nested_argument_whose_header_differs_is_refused() {
    assert_mismatch(
        call(
            json!({ "target": { "region": "eu-west-1" } }),
            &[("mcp-param-region", "us-east-1")],
        ),
        "region differs",
    );
    assert_mismatch(
        call(
            json!({ "target": { "region": "eu-west-1", "shard": { "id": 7 } } }),
            &[("mcp-param-region", "eu-west-1"), ("mcp-param-shard", "8")],
        ),
        "shard differs",
    );
}

#[test]
fn a_header_for_an_absent_nested_argument_is_refused() {
    assert_mismatch(
        call(
            json!({ "query": "q" }),
            &[("mcp-param-region", "eu-west-1")],
        ),
        "no target, yet Mcp-Param-Region",
    );
}

#[test]
fn matching_nested_headers_pass() {
    let passed = call(
        json!({ "target": { "region": "eu-west-1", "shard": { "id": 7 } }, "query": "q" }),
        &[("Mcp-Param-Region", "eu-west-1"), ("mcp-param-shard", "7")],
    );
    assert_eq!(passed, Ok(()));
    let encoded = call(
        json!({ "target": { "region": "Zürich" } }),
        &[("mcp-param-region", "=?base64?WsO8cmljaA==?=")],
    );
    assert_eq!(encoded, Ok(()), "a Base64-sentinel value is decoded first");
}

#[test]
fn a_missing_or_null_parent_or_value_means_absent() {
    for arguments in [
        json!({}),
        json!({ "target": null }),
        json!({ "target": {} }),
        json!({ "target": { "region": null, "shard": null } }),
        json!({ "target": { "shard": { "id": null } } }),
        json!({ "target": "not an object" }),
    ] {
        assert_eq!(call(arguments.clone(), &[]), Ok(()), "{arguments}");
    }
}
