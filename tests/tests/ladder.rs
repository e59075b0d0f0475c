//! The validation ladder over HTTP, through the local gateway's router, in process.
//! Each test names one rung and asserts the exact status and JSON-RPC error.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use relevo_tests::*;
use serde_json::{Value, json};

fn body(method: &str, id: Value, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

fn with_meta() -> Value {
    json!({ "_meta": envelope(json!({})) })
}

async fn send_with(headers: Vec<(&'static str, String)>, payload: String) -> Reply {
    let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    send(&conformance_router(), raw("POST", &pairs, payload)).await
}

fn replace(
    mut headers: Vec<(&'static str, String)>,
    name: &'static str,
    value: Option<&str>,
) -> Vec<(&'static str, String)> {
    headers.retain(|(k, _)| *k != name);
    if let Some(value) = value {
        headers.push((name, value.into()));
    }
    headers
}

fn assert_error(reply: &Reply, status: u16, code: i64) {
    assert_eq!(reply.status.as_u16(), status, "body: {}", reply.text);
    assert_eq!(reply.json()["error"]["code"], code, "body: {}", reply.text);
}

#[tokio::test]
async fn discover_describes_versions_capabilities_and_caching() {
    let reply = send(&conformance_router(), rpc(1, "server/discover", json!({}))).await;
    assert_eq!(reply.status, 200);
    let result = &reply.json()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert!(result["capabilities"]["tools"].is_object());
    assert!(result["capabilities"]["prompts"].is_object());
    assert!(result["ttlMs"].as_u64().is_some());
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "relevo-conformance"
    );
    assert!(
        result.get("serverInfo").is_none(),
        "serverInfo lives in _meta only"
    );
}

#[tokio::test]
async fn foreign_host_is_forbidden_before_anything_else() {
    let headers = replace(
        good_headers("tools/list"),
        "host",
        Some("evil.example:8080"),
    );
    let reply = send_with(headers, "not even json".into()).await;
    assert_eq!(reply.status, 403);
}

#[tokio::test]
async fn foreign_origin_is_forbidden() {
    let mut headers = good_headers("tools/list");
    headers.push(("origin", "https://evil.example".into()));
    let reply = send_with(headers, body("tools/list", json!(1), with_meta())).await;
    assert_eq!(reply.status, 403);
}

#[tokio::test]
async fn get_and_delete_are_405_with_allow_post() {
    for method in ["GET", "DELETE"] {
        let reply = send(
            &conformance_router(),
            raw(method, &[("host", "localhost")], ""),
        )
        .await;
        assert_eq!(reply.status, 405, "{method}");
        assert_eq!(reply.headers.get("allow").unwrap(), "POST");
    }
}

#[tokio::test]
async fn accept_without_event_stream_is_406() {
    let headers = replace(
        good_headers("tools/list"),
        "accept",
        Some("application/json"),
    );
    assert_eq!(
        send_with(headers, body("tools/list", json!(1), with_meta()))
            .await
            .status,
        406
    );
}

#[tokio::test]
async fn non_json_content_type_is_415() {
    let headers = replace(
        good_headers("tools/list"),
        "content-type",
        Some("text/plain"),
    );
    assert_eq!(
        send_with(headers, body("tools/list", json!(1), with_meta()))
            .await
            .status,
        415
    );
}

#[tokio::test]
async fn oversized_body_is_413_with_a_json_rpc_error() {
    let padding = "x".repeat(1024 * 1024 + 10);
    let payload = body(
        "tools/list",
        json!(1),
        json!({ "_meta": envelope(json!({})), "pad": padding }),
    );
    let reply = send_with(good_headers("tools/list"), payload).await;
    assert_error(&reply, 413, -32600);
}

#[tokio::test]
async fn malformed_json_is_a_parse_error_without_id() {
    let reply = send_with(good_headers("tools/list"), "{\"jsonrpc\":\"2.0\",".into()).await;
    assert_error(&reply, 400, -32700);
    assert!(reply.json().get("id").is_none());
}

#[tokio::test]
async fn batches_and_non_objects_are_invalid_requests() {
    for payload in [
        "[]",
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}]",
        "42",
        "null",
    ] {
        assert_error(
            &send_with(good_headers("tools/list"), payload.into()).await,
            400,
            -32600,
        );
    }
}

#[tokio::test]
async fn null_or_fractional_id_is_an_invalid_request() {
    for id in [json!(null), json!(1.5), json!(true)] {
        let reply = send_with(
            good_headers("tools/list"),
            body("tools/list", id.clone(), with_meta()),
        )
        .await;
        assert_error(&reply, 400, -32600);
    }
}

#[tokio::test]
async fn notifications_are_accepted_with_202_and_no_body() {
    let payload = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } });
    let reply = send_with(good_headers("notifications/cancelled"), payload.to_string()).await;
    assert_eq!(reply.status, 202);
    assert!(reply.text.is_empty());
}

#[tokio::test]
async fn mcp_method_mismatch_is_32020_with_the_request_id() {
    let headers = replace(
        good_headers("tools/list"),
        "mcp-method",
        Some("prompts/list"),
    );
    let reply = send_with(headers, body("tools/list", json!("abc"), with_meta())).await;
    assert_error(&reply, 400, -32020);
    assert_eq!(reply.json()["id"], "abc");
}

#[tokio::test]
async fn mcp_method_value_is_case_sensitive_but_name_is_not() {
    let headers = replace(good_headers("tools/list"), "mcp-method", Some("TOOLS/LIST"));
    assert_error(
        &send_with(headers, body("tools/list", json!(1), with_meta())).await,
        400,
        -32020,
    );

    let mut headers = replace(good_headers("tools/list"), "mcp-method", None);
    headers.push(("MCP-METHOD", "  tools/list  ".into()));
    let reply = send_with(headers, body("tools/list", json!(1), with_meta())).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[tokio::test]
async fn duplicate_mcp_method_header_is_a_mismatch() {
    let mut headers = good_headers("tools/list");
    headers.push(("mcp-method", "tools/list".into()));
    assert_error(
        &send_with(headers, body("tools/list", json!(1), with_meta())).await,
        400,
        -32020,
    );
}

#[tokio::test]
async fn mcp_name_must_match_and_may_use_the_base64_sentinel() {
    let params =
        json!({ "name": "test_simple_text", "arguments": {}, "_meta": envelope(json!({})) });
    let mut headers = good_headers("tools/call");
    headers.push(("mcp-name", "test_image_content".into()));
    assert_error(
        &send_with(headers, body("tools/call", json!(1), params.clone())).await,
        400,
        -32020,
    );

    let mut headers = good_headers("tools/call");
    headers.push(("mcp-name", "=?base64?dGVzdF9zaW1wbGVfdGV4dA==?=".into()));
    let reply = send_with(headers, body("tools/call", json!(1), params.clone())).await;
    assert_eq!(reply.status, 200, "{}", reply.text);

    let mut headers = good_headers("tools/call");
    headers.push(("mcp-name", "=?base64?not base64?=".into()));
    assert_error(
        &send_with(headers, body("tools/call", json!(1), params)).await,
        400,
        -32020,
    );
}

#[tokio::test]
async fn missing_mcp_name_on_tools_call_is_a_mismatch() {
    let params = json!({ "name": "test_simple_text", "_meta": envelope(json!({})) });
    assert_error(
        &send_with(
            good_headers("tools/call"),
            body("tools/call", json!(1), params),
        )
        .await,
        400,
        -32020,
    );
}

#[tokio::test]
async fn mcp_param_header_is_required_when_the_argument_is_present() {
    let params = json!({ "name": "test_header_params", "arguments": { "region": "eu-west-1" }, "_meta": envelope(json!({})) });
    let mut headers = good_headers("tools/call");
    headers.push(("mcp-name", "test_header_params".into()));
    assert_error(
        &send_with(
            headers.clone(),
            body("tools/call", json!(1), params.clone()),
        )
        .await,
        400,
        -32020,
    );

    headers.push(("mcp-param-region", "eu-west-1".into()));
    let reply = send_with(
        headers.clone(),
        body("tools/call", json!(1), params.clone()),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);

    let wrong = replace(headers, "mcp-param-region", Some("us-east-1"));
    assert_error(
        &send_with(wrong, body("tools/call", json!(1), params)).await,
        400,
        -32020,
    );
}

#[tokio::test]
async fn missing_protocol_version_header_is_a_mismatch() {
    let headers = replace(good_headers("tools/list"), "mcp-protocol-version", None);
    assert_error(
        &send_with(headers, body("tools/list", json!(1), with_meta())).await,
        400,
        -32020,
    );
}

#[tokio::test]
async fn header_version_differing_from_meta_is_a_mismatch_not_unsupported() {
    let mut params = with_meta();
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    assert_error(
        &send_with(
            good_headers("tools/list"),
            body("tools/list", json!(1), params),
        )
        .await,
        400,
        -32020,
    );
}

#[tokio::test]
async fn unsupported_version_names_supported_and_requested() {
    let mut params = with_meta();
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let headers = replace(
        good_headers("tools/list"),
        "mcp-protocol-version",
        Some("v999.0.0"),
    );
    let reply = send_with(headers, body("tools/list", json!(1), params)).await;
    assert_error(&reply, 400, -32022);
    assert_eq!(
        reply.json()["error"]["data"],
        json!({ "supported": ["2026-07-28"], "requested": "v999.0.0" })
    );
}

#[tokio::test]
async fn missing_meta_or_its_required_keys_is_invalid_params_400() {
    let cases = [
        json!({}),
        json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": VERSION } }),
        json!({ "_meta": { "io.modelcontextprotocol/clientCapabilities": {} } }),
        json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": [] } }),
    ];
    for params in cases {
        let reply = send_with(
            good_headers("tools/list"),
            body("tools/list", json!(1), params.clone()),
        )
        .await;
        assert_error(&reply, 400, -32602);
    }
}

#[tokio::test]
async fn client_info_is_optional() {
    let params = json!({ "_meta": {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {}
    }});
    assert_eq!(
        send_with(
            good_headers("tools/list"),
            body("tools/list", json!(1), params)
        )
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn removed_and_unknown_methods_are_404_method_not_found() {
    for method in [
        "ping",
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "tasks/result",
        "nope/nope",
    ] {
        let reply = send_with(good_headers(method), body(method, json!(9), with_meta())).await;
        assert_error(&reply, 404, -32601);
        assert_eq!(reply.json()["id"], 9, "{method}");
    }
}

#[tokio::test]
async fn legacy_initialize_is_400_naming_the_supported_versions() {
    let payload = body(
        "initialize",
        json!(0),
        json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "old", "version": "1" } }),
    );
    let headers = vec![
        ("host", "localhost".to_string()),
        ("content-type", "application/json".into()),
        ("accept", "application/json, text/event-stream".into()),
    ];
    let reply = send_with(headers, payload).await;
    assert_error(&reply, 400, -32022);
    assert_eq!(
        reply.json()["error"]["data"]["supported"],
        json!(["2026-07-28"])
    );
    assert_eq!(reply.json()["error"]["data"]["requested"], "2025-11-25");
}

#[tokio::test]
async fn unknown_log_level_is_invalid_params() {
    let mut params = with_meta();
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    assert_error(
        &send_with(
            good_headers("tools/list"),
            body("tools/list", json!(1), params),
        )
        .await,
        400,
        -32602,
    );
}

#[tokio::test]
async fn unknown_tool_is_invalid_params_in_band() {
    let reply = send(
        &conformance_router(),
        rpc(1, "tools/call", json!({ "name": "no_such_tool" })),
    )
    .await;
    assert_error(&reply, 200, -32602);
}

#[tokio::test]
async fn unknown_resource_is_invalid_params_with_the_uri() {
    let reply = send(
        &conformance_router(),
        rpc(1, "resources/read", json!({ "uri": "test://nope" })),
    )
    .await;
    assert_error(&reply, 200, -32602);
    assert_eq!(reply.json()["error"]["data"]["uri"], "test://nope");
}

#[tokio::test]
async fn template_resources_are_readable_with_cache_fields() {
    let reply = send(
        &conformance_router(),
        rpc(
            1,
            "resources/read",
            json!({ "uri": "test://template/7/data" }),
        ),
    )
    .await;
    let result = &reply.json()["result"];
    assert_eq!(result["contents"][0]["uri"], "test://template/7/data");
    assert!(
        result["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"7\"")
    );
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].is_u64());
}

#[tokio::test]
async fn prompt_missing_a_required_argument_is_invalid_params() {
    let reply = send(
        &conformance_router(),
        rpc(
            1,
            "prompts/get",
            json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": "a" } }),
        ),
    )
    .await;
    assert_error(&reply, 200, -32602);
}

#[tokio::test]
async fn completion_filters_candidates_by_prefix() {
    let params = json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" }, "argument": { "name": "arg1", "value": "par" } });
    let reply = send(&conformance_router(), rpc(1, "completion/complete", params)).await;
    let completion = &reply.json()["result"]["completion"];
    assert_eq!(completion["values"], json!(["paris", "park", "party"]));
    assert_eq!(completion["hasMore"], false);
}

#[tokio::test]
async fn missing_required_client_capability_is_400_32021_with_an_object() {
    let params = json!({ "name": "test_missing_capability", "_meta": envelope(json!({})) });
    let reply = send(&conformance_router(), rpc(1, "tools/call", params)).await;
    assert_error(&reply, 400, -32021);
    assert_eq!(
        reply.json()["error"]["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );
}

#[tokio::test]
async fn listen_acknowledges_first_then_ends_gracefully() {
    let reply = send(
        &conformance_router(),
        rpc(
            5,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
        ),
    )
    .await;
    assert!(reply.is_sse());
    let messages = reply.sse_messages();
    assert_eq!(
        messages[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        messages[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        5
    );
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({}),
        "nothing is honoured that is not served"
    );
    assert_eq!(messages[1]["id"], 5);
    assert_eq!(messages[1]["result"]["resultType"], "complete");
}
