//! Property tests: random headers and bodies never panic the ladder, and every refusal is a
//! well-formed JSON-RPC error with one of the statuses the spec allows.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use proptest::prelude::*;
use relevo_tests::*;
use serde_json::{Value, json};

const ALLOWED_STATUSES: &[u16] = &[200, 202, 400, 403, 404, 405, 406, 413, 415];
/// The 2026-07-28 codes, and the two only 2025-11-25 sessions get (-32001 session not found,
/// -32002 resource not found).
const KNOWN_CODES: &[i64] = &[
    -32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022, -32001, -32002,
];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn check(reply: &Reply) -> Result<(), TestCaseError> {
    prop_assert!(
        ALLOWED_STATUSES.contains(&reply.status.as_u16()),
        "status {}",
        reply.status
    );
    if reply.status == 202 {
        prop_assert!(reply.text.is_empty());
        return Ok(());
    }
    if reply.is_sse() {
        prop_assert!(!reply.sse_messages().is_empty());
        return Ok(());
    }
    let body: Value = serde_json::from_str(&reply.text)
        .map_err(|e| TestCaseError::fail(format!("not JSON: {e}: {}", reply.text)))?;
    prop_assert_eq!(&body["jsonrpc"], "2.0");
    if reply.status != 200 {
        let code = body["error"]["code"].as_i64().unwrap_or(0);
        prop_assert!(KNOWN_CODES.contains(&code), "code {code} in {}", reply.text);
    }
    Ok(())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z/_ ]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_/.]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn method_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("tools/list".to_string()),
        Just("tools/call".to_string()),
        Just("resources/read".to_string()),
        Just("prompts/get".to_string()),
        Just("server/discover".to_string()),
        Just("completion/complete".to_string()),
        Just("subscriptions/listen".to_string()),
        Just("initialize".to_string()),
        "[a-zA-Z/]{0,16}",
    ]
}

/// The conformance app with 2025-11-25 sessions, and one session opened on it.
fn legacy_router() -> (axum::Router, String) {
    let store = std::sync::Arc::new(relevo_embedded::SqliteStore::in_memory().unwrap());
    let server = relevo_protocol::McpServer::new(
        relevo_conformance::app(),
        test_config(),
        test_keys(),
        std::sync::Arc::new(relevo_protocol::NoAuth),
    )
    .with_store(store);
    let router = router(server);
    let headers = [
        ("host", "localhost"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "p", "version": "0" } } });
    let reply = runtime().block_on(send(&router, raw("POST", &headers, initialize.to_string())));
    let session = reply.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    (router, session)
}

fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("2026-07-28".to_string()),
        Just("tools/call".to_string()),
        Just("=?base64?dGVzdA==?=".to_string()),
        Just("=?base64?%%%?=".to_string()),
        "[ -~]{0,24}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_get_a_clean_answer(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let headers = good_headers("tools/list");
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let reply = runtime().block_on(send(&conformance_router(), raw("POST", &pairs, body)));
        check(&reply)?;
    }

    #[test]
    fn arbitrary_json_rpc_shapes_get_a_clean_answer(
        method in method_name(),
        id in prop_oneof![Just(json!(1)), Just(json!("a")), Just(Value::Null), json_value()],
        params in json_value(),
        meta in prop_oneof![Just(None), Just(Some(envelope(json!({})))), json_value().prop_map(Some)],
    ) {
        let mut params = params;
        if let (Some(meta), Value::Object(map)) = (meta, &mut params) {
            map.insert("_meta".into(), meta);
        }
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let headers = good_headers(&method);
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let reply = runtime().block_on(send(&conformance_router(), raw("POST", &pairs, body.to_string())));
        check(&reply)?;
    }

    #[test]
    fn arbitrary_headers_get_a_clean_answer(
        extra in prop::collection::vec(
            (prop_oneof![
                Just("mcp-method"), Just("mcp-name"), Just("mcp-protocol-version"), Just("accept"),
                Just("content-type"), Just("host"), Just("origin"), Just("mcp-param-region"), Just("MCP-Name"),
            ], header_value()),
            0..6,
        ),
        tool in prop_oneof![Just("test_simple_text"), Just("test_header_params"), Just("nope")],
    ) {
        let mut headers = good_headers("tools/call");
        headers.push(("mcp-name", tool.to_string()));
        for (name, value) in extra {
            headers.push((name, value));
        }
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": tool, "arguments": { "region": "eu" }, "_meta": envelope(json!({}))
        }});
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let reply = runtime().block_on(send(&conformance_router(), raw("POST", &pairs, body.to_string())));
        check(&reply)?;
    }

    #[test]
    fn arbitrary_legacy_messages_get_a_clean_answer(
        method in method_name(),
        id in prop_oneof![Just(json!(1)), Just(json!("a")), Just(Value::Null), json_value()],
        params in json_value(),
        session in prop_oneof![Just(Some(true)), Just(Some(false)), Just(None)],
        answer in any::<bool>(),
    ) {
        let (router, opened) = legacy_router();
        let body = if answer {
            json!({ "jsonrpc": "2.0", "id": id, "result": params })
        } else {
            json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
        };
        let mut headers = vec![
            ("host", "localhost".to_string()),
            ("content-type", "application/json".to_string()),
            ("accept", "application/json, text/event-stream".to_string()),
            ("mcp-protocol-version", "2025-11-25".to_string()),
        ];
        match session {
            Some(true) => headers.push(("mcp-session-id", opened)),
            Some(false) => headers.push(("mcp-session-id", "not-a-session".into())),
            None => {}
        }
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let reply = runtime().block_on(send(&router, raw("POST", &pairs, body.to_string())));
        check(&reply)?;
    }
}
