//! Handler-level behaviour through the router: MRTR rounds and sealed state, pagination,
//! SSE progress and logs, per-method routing, and a panicking handler.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_protocol::wire::{CallToolResult, ContentBlock};
use relevo_protocol::{App, ManualClock, Method, Outcome, Route, ServerConfig, Tool, handler};
use relevo_tests::*;
use serde_json::{Value, json};

const T0: u64 = 1_800_000_000;

fn clocked_router(clock: &ManualClock) -> axum::Router {
    router(server(
        relevo_conformance::app(),
        ServerConfig::default(),
        Arc::new(clock.clone()),
    ))
}

async fn call_tool(router: &axum::Router, name: &str, extra: Value) -> Reply {
    let mut params = json!({ "name": name, "arguments": {} });
    if let Value::Object(extra) = extra {
        for (key, value) in extra {
            params[key] = value;
        }
    }
    send(router, rpc(1, "tools/call", params)).await
}

#[tokio::test]
async fn request_state_round_trips_and_the_retry_completes() {
    let router = conformance_router();
    let first = call_tool(
        &router,
        "test_input_required_result_request_state",
        json!({}),
    )
    .await
    .json();
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    assert!(
        result.get("ttlMs").is_none(),
        "input_required results are never cacheable"
    );
    let state = result["requestState"]
        .as_str()
        .expect("sealed state")
        .to_string();
    assert!(state.starts_with("v1.test."));

    let retry = json!({ "requestState": state, "inputResponses": { "confirm": { "action": "accept", "content": { "ok": true } } } });
    let second = call_tool(&router, "test_input_required_result_request_state", retry)
        .await
        .json();
    assert_eq!(second["result"]["resultType"], "complete");
    assert!(
        second["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("state-ok")
    );
}

#[tokio::test]
async fn tampered_state_is_rejected_with_invalid_params() {
    let router = conformance_router();
    let first = call_tool(
        &router,
        "test_input_required_result_tampered_state",
        json!({}),
    )
    .await
    .json();
    let state = first["result"]["requestState"].as_str().unwrap();
    let answers = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    for tampered in [
        format!("{state}-TAMPERED"),
        state.replacen("v1.", "v2.", 1),
        String::new(),
        "{}".into(),
    ] {
        let reply = call_tool(
            &router,
            "test_input_required_result_tampered_state",
            json!({ "requestState": tampered, "inputResponses": answers }),
        )
        .await;
        assert_eq!(reply.json()["error"]["code"], -32602, "{tampered}");
        assert_eq!(
            reply.json()["error"]["data"]["reason"],
            "invalid_request_state"
        );
    }
}

#[tokio::test]
async fn state_for_one_tool_is_refused_by_another() {
    let router = conformance_router();
    let first = call_tool(
        &router,
        "test_input_required_result_request_state",
        json!({}),
    )
    .await
    .json();
    let state = first["result"]["requestState"].clone();
    let reply = call_tool(
        &router,
        "test_input_required_result_tampered_state",
        json!({ "requestState": state }),
    )
    .await;
    assert_eq!(reply.json()["error"]["code"], -32602);
}

#[tokio::test]
async fn state_is_bound_to_the_arguments() {
    let router = conformance_router();
    let first = call_tool(
        &router,
        "test_input_required_result_request_state",
        json!({}),
    )
    .await
    .json();
    let state = first["result"]["requestState"].clone();
    let retry = json!({ "arguments": { "extra": 1 }, "requestState": state });
    assert_eq!(
        call_tool(&router, "test_input_required_result_request_state", retry)
            .await
            .json()["error"]["code"],
        -32602
    );
}

#[tokio::test]
async fn expired_state_is_rejected() {
    let clock = ManualClock::at(T0);
    let router = clocked_router(&clock);
    let first = call_tool(
        &router,
        "test_input_required_result_request_state",
        json!({}),
    )
    .await
    .json();
    let state = first["result"]["requestState"].clone();
    clock.advance(ServerConfig::default().request_state_ttl_secs);
    let retry = json!({ "requestState": state, "inputResponses": { "confirm": { "action": "accept", "content": { "ok": true } } } });
    let reply = call_tool(&router, "test_input_required_result_request_state", retry).await;
    assert_eq!(reply.json()["error"]["code"], -32602);
}

#[tokio::test]
async fn state_sealed_by_one_instance_is_accepted_by_another_with_the_same_keys() {
    let first = call_tool(
        &conformance_router(),
        "test_input_required_result_multi_round",
        json!({}),
    )
    .await
    .json();
    let state = first["result"]["requestState"].clone();
    let retry = json!({ "requestState": state, "inputResponses": { "step1": { "action": "accept", "content": { "name": "Ada" } } } });
    let second = call_tool(
        &conformance_router(),
        "test_input_required_result_multi_round",
        retry,
    )
    .await
    .json();
    assert_eq!(second["result"]["resultType"], "input_required");
    assert!(second["result"]["inputRequests"]["step2"].is_object());
}

#[tokio::test]
async fn partial_or_wrong_answers_get_a_new_input_required() {
    let router = conformance_router();
    let reply = call_tool(
        &router,
        "test_input_required_result_elicitation",
        json!({ "inputResponses": { "other": { "action": "accept" } } }),
    )
    .await;
    assert_eq!(reply.json()["result"]["resultType"], "input_required");
}

#[tokio::test]
async fn malformed_input_responses_are_invalid_params() {
    let router = conformance_router();
    for bad in [
        json!("nope"),
        json!([1]),
        json!({ "user_name": "not an object" }),
    ] {
        let reply = call_tool(
            &router,
            "test_input_required_result_elicitation",
            json!({ "inputResponses": bad }),
        )
        .await;
        assert_eq!(reply.json()["error"]["code"], -32602, "{bad}");
    }
}

#[tokio::test]
async fn input_request_for_an_undeclared_capability_is_32021() {
    let params = json!({ "name": "test_input_required_result_elicitation", "arguments": {}, "_meta": envelope(json!({ "sampling": {} })) });
    let reply = send(&conformance_router(), rpc(1, "tools/call", params)).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["code"], -32021);
    assert_eq!(
        reply.json()["error"]["data"]["requiredCapabilities"],
        json!({ "elicitation": {} })
    );
}

#[tokio::test]
async fn pages_list_every_tool_once_in_name_order() {
    let config = ServerConfig {
        page_size: 4,
        ..ServerConfig::default()
    };
    let router = router(server(
        relevo_conformance::app(),
        config,
        Arc::new(ManualClock::at(T0)),
    ));
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let result = send(&router, rpc(1, "tools/list", params)).await.json()["result"].clone();
        assert_eq!(result["cacheScope"], "public");
        names.extend(
            result["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string()),
        );
        cursor = result["nextCursor"].as_str().map(String::from);
        if cursor.is_none() {
            break;
        }
    }
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        names, sorted,
        "deterministic order by unique name, no repeats"
    );
    assert_eq!(names.len(), relevo_conformance::app().tools().count());
}

#[tokio::test]
async fn forged_cursor_is_invalid_params() {
    for cursor in [json!("abc"), json!(""), json!(7)] {
        let reply = send(
            &conformance_router(),
            rpc(1, "tools/list", json!({ "cursor": cursor })),
        )
        .await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json()["error"]["code"], -32602, "{cursor}");
    }
}

#[tokio::test]
async fn progress_streams_as_sse_then_the_result() {
    let mut meta = envelope(json!({}));
    meta["progressToken"] = json!("p-1");
    let reply = send(
        &conformance_router(),
        rpc(
            3,
            "tools/call",
            json!({ "name": "test_tool_with_progress", "_meta": meta }),
        ),
    )
    .await;
    assert!(reply.is_sse(), "{}", reply.text);
    assert_eq!(reply.headers.get("x-accel-buffering").unwrap(), "no");
    let messages = reply.sse_messages();
    let progress: Vec<f64> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p-1");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, vec![0.0, 50.0, 100.0]);
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 3);
    assert_eq!(last["result"]["resultType"], "complete");
}

#[tokio::test]
async fn without_a_progress_token_the_same_tool_answers_json() {
    let reply = send(
        &conformance_router(),
        rpc(
            3,
            "tools/call",
            json!({ "name": "test_tool_with_progress" }),
        ),
    )
    .await;
    assert!(!reply.is_sse());
    assert_eq!(reply.json()["result"]["resultType"], "complete");
}

#[tokio::test]
async fn logs_are_sent_only_when_the_client_asks() {
    let quiet = send(
        &conformance_router(),
        rpc(1, "tools/call", json!({ "name": "test_logging_tool" })),
    )
    .await;
    assert!(!quiet.is_sse());
    let mut meta = envelope(json!({}));
    meta["io.modelcontextprotocol/logLevel"] = json!("info");
    let loud = send(
        &conformance_router(),
        rpc(
            1,
            "tools/call",
            json!({ "name": "test_logging_tool", "_meta": meta }),
        ),
    )
    .await;
    let logs = loud
        .sse_messages()
        .into_iter()
        .filter(|m| m["method"] == "notifications/message")
        .count();
    assert_eq!(logs, 3);
}

#[tokio::test]
async fn a_per_method_function_refuses_a_body_for_another_method() {
    let server = server(
        relevo_conformance::app(),
        ServerConfig::default(),
        Arc::new(ManualClock::at(T0)),
    );
    let (parts, body) = rpc(1, "tools/list", json!({})).into_parts();
    let bytes = http_body_util::BodyExt::collect(body)
        .await
        .unwrap()
        .to_bytes();
    let reply = server
        .handle(
            Route::Only(Method::ToolsCall),
            http::Request::from_parts(parts, bytes),
        )
        .await;
    assert_eq!(reply.status(), 400);
    let body = reply.into_body().collect().await;
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["error"]["code"],
        -32020
    );
}

/// Front door A's globs cannot name a method exactly (`tools*` also matches `tools/call` and any
/// `tools/foo`), so a function may receive a neighbour's method with matching headers: it
/// refuses every method but its own before anything runs, and answers an unknown one 404 as the
/// catch-all does.
#[tokio::test]
async fn every_function_refuses_every_other_method_and_runs_nothing() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let app = App::new("neighbours", "0").tool(Tool::new(
        "effect",
        "counts its runs",
        json!({ "type": "object" }),
        handler(move |_| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(Outcome::tool(CallToolResult::success(vec![
                    ContentBlock::text("ran"),
                ])))
            }
        }),
    ));
    let server = server(app, test_config(), Arc::new(ManualClock::at(T0)));
    let params = |method: Method| match method {
        Method::ToolsCall => json!({ "name": "effect", "arguments": {} }),
        Method::ResourcesRead => json!({ "uri": "file:///x" }),
        Method::PromptsGet => json!({ "name": "p" }),
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => json!({ "taskId": "t" }),
        Method::Complete => {
            json!({ "ref": { "type": "ref/prompt", "name": "p" }, "argument": { "name": "a", "value": "" } })
        }
        _ => json!({}),
    };
    let handle = |function: Method, method: &str, params: Value| {
        let server = server.clone();
        let (parts, body) = rpc(1, method, params).into_parts();
        async move {
            let bytes = http_body_util::BodyExt::collect(body)
                .await
                .unwrap()
                .to_bytes();
            let reply = server
                .handle(
                    Route::Only(function),
                    http::Request::from_parts(parts, bytes),
                )
                .await;
            let status = reply.status();
            let body: Value = serde_json::from_slice(&reply.into_body().collect().await).unwrap();
            (status, body["error"]["code"].clone())
        }
    };
    for function in Method::ALL {
        for method in Method::ALL.into_iter().filter(|m| *m != function) {
            let (status, code) = handle(function, method.as_str(), params(method)).await;
            assert_eq!(
                (status.as_u16(), code),
                (400, json!(-32020)),
                "{} served by {}",
                method.as_str(),
                function.function_name()
            );
        }
        let (status, code) = handle(function, "tools/foo", json!({})).await;
        assert_eq!(
            (status.as_u16(), code),
            (404, json!(-32601)),
            "tools/foo served by {}",
            function.function_name()
        );
    }
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no neighbour ran the tool"
    );
    let (status, _) = handle(Method::ToolsCall, "tools/call", params(Method::ToolsCall)).await;
    assert_eq!(
        (
            status.as_u16(),
            calls.load(std::sync::atomic::Ordering::SeqCst)
        ),
        (200, 1),
        "its own function runs it"
    );
}

#[tokio::test]
async fn gateway_routes_on_the_mcp_method_header_like_the_routing_rules() {
    let headers = |value: &str| {
        let mut map = http::HeaderMap::new();
        map.insert("mcp-method", value.parse().unwrap());
        map
    };
    assert_eq!(
        relevo_local::route_for(&headers("tools/call")),
        Route::Only(Method::ToolsCall)
    );
    assert_eq!(relevo_local::route_for(&headers("ping")), Route::All);
    assert_eq!(relevo_local::route_for(&http::HeaderMap::new()), Route::All);
}

#[tokio::test]
async fn a_panicking_handler_becomes_an_internal_error_not_a_crash() {
    let app = App::new("panics", "0").tool(Tool::new(
        "boom",
        "panics",
        json!({ "type": "object" }),
        handler(|_| async {
            if true {
                panic!("handler bug");
            }
            Ok(Outcome::tool(CallToolResult::success(vec![
                ContentBlock::text("unreachable"),
            ])))
        }),
    ));
    let router = router(server(
        app,
        ServerConfig::default(),
        Arc::new(ManualClock::at(T0)),
    ));
    let reply = send(&router, rpc(1, "tools/call", json!({ "name": "boom" }))).await;
    assert_eq!(reply.json()["error"]["code"], -32603);
    let again = send(&router, rpc(2, "tools/list", json!({}))).await;
    assert_eq!(
        again.status, 200,
        "the server still serves after a handler panic"
    );
}

#[tokio::test]
async fn arguments_outside_the_declared_input_schema_are_a_tool_error_naming_the_field_before_the_handler()
 {
    let ports = relevo_protocol::Ports::new(None);
    let router = router(server(
        relevo_app::features(&ports),
        ServerConfig::default(),
        Arc::new(ManualClock::at(T0)),
    ));
    let extra = call_tool(
        &router,
        "greet",
        json!({ "arguments": { "name": "Ada", "shoeSize": 44 } }),
    )
    .await;
    let result = &extra.json()["result"];
    assert_eq!(result["isError"], true, "{}", extra.text);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("shoeSize"),
        "{result}"
    );
    let wrong_type = call_tool(
        &router,
        "add",
        json!({ "arguments": { "a": "one", "b": 2 } }),
    )
    .await
    .json();
    assert_eq!(wrong_type["result"]["isError"], true, "{wrong_type}");
    assert!(
        wrong_type["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("/a: "),
        "{wrong_type}"
    );
    assert!(
        wrong_type["result"].get("structuredContent").is_none(),
        "an error result need not fit the outputSchema"
    );
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!([deep]);
    }
    let nested = call_tool(&router, "greet", json!({ "arguments": { "name": deep } }))
        .await
        .json();
    assert_eq!(
        nested["error"]["code"], -32602,
        "arguments past the depth bound are a protocol error: {nested}"
    );
    let fine = call_tool(&router, "greet", json!({ "arguments": { "name": "Ada" } }))
        .await
        .json();
    assert_eq!(
        fine["result"]["structuredContent"]["greeting"],
        "Hello, Ada!"
    );
}

#[test]
fn every_tool_schema_of_every_app_compiles() {
    let store: Arc<dyn relevo_state::RecordStore> =
        Arc::new(relevo_embedded::SqliteStore::in_memory().unwrap());
    let ports = relevo_protocol::Ports::new(Some(store));
    for app in [relevo_app::features(&ports), relevo_conformance::app()] {
        for tool in app.tools() {
            assert_eq!(
                tool.input_check.problem(tool.input_schema()),
                None,
                "{}",
                tool.name
            );
        }
    }
}

/// An app with a resource and a template gated by the `docs` scope (neither marked private),
/// and an open resource, behind bearer auth.
fn scoped_resources_router() -> (axum::Router, relevo_auth::DevIssuer) {
    use relevo_protocol::wire::ResourceContents;
    use relevo_protocol::{McpServer, Resource, ResourceTemplate};
    let contents = || {
        handler(|call: relevo_protocol::Call| async move {
            let uri = call.uri.unwrap_or_default();
            let text = "only for holders of docs".to_string();
            Ok(Outcome::contents(vec![
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type: None,
                    text,
                    meta: None,
                },
            ]))
        })
    };
    let app = App::new("scoped-resources", "0")
        .resource(
            Resource::new("docs://secret", "secret", "text/plain", contents()).scopes(&["docs"]),
        )
        .resource(Resource::new(
            "docs://open",
            "open",
            "text/plain",
            contents(),
        ))
        .template(
            ResourceTemplate::new("docs://page/{id}", "page", "text/plain", contents())
                .scopes(&["docs"]),
        );
    let (settings, issuer, auth) = dev_auth();
    let server = McpServer::new(app, test_config(), test_keys(), Arc::new(auth));
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    (relevo_local::router(server, options), issuer)
}

#[tokio::test]
async fn a_read_gated_by_scopes_is_never_shared_by_a_public_cache() {
    let (router, issuer) = scoped_resources_router();
    let holder = dev_token(&issuer, "acme", "alice", &["docs"]);
    for uri in ["docs://secret", "docs://page/7"] {
        let reply = send(
            &router,
            rpc_as(Some(&holder), 1, "resources/read", json!({ "uri": uri })),
        )
        .await
        .json();
        assert_eq!(
            reply["result"]["contents"][0]["text"], "only for holders of docs",
            "{reply}"
        );
        assert_eq!(
            reply["result"]["cacheScope"], "private",
            "{uri}: a shared cache would hand it to anyone: {reply}"
        );
    }
    let open = send(
        &router,
        rpc_as(
            Some(&holder),
            1,
            "resources/read",
            json!({ "uri": "docs://open" }),
        ),
    )
    .await
    .json();
    assert_eq!(open["result"]["cacheScope"], "public", "{open}");
    // The lists depend on the caller's scopes: private too.
    for method in [
        "resources/list",
        "resources/templates/list",
        "tools/list",
        "prompts/list",
    ] {
        let list = send(&router, rpc_as(Some(&holder), 1, method, json!({})))
            .await
            .json();
        assert_eq!(list["result"]["cacheScope"], "private", "{method}: {list}");
    }
}

/// The answer to a result that broke its tool's `outputSchema`: the server's error, not a success.
fn assert_broke_output_schema(reply: &Value, what: &str) {
    assert!(
        reply.get("result").is_none(),
        "{what}: answered as a success: {reply}"
    );
    assert_eq!(reply["error"]["code"], -32603, "{what}: {reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("outputSchema"), "{what}: {message}");
}

#[tokio::test]
async fn a_result_that_breaks_its_output_schema_is_the_servers_error_not_a_success() {
    // `add` is typed: its outputSchema says `sum` is a number.
    let (routers, issuer) = shop_instances(
        Arc::new(relevo_embedded::SqliteStore::in_memory().unwrap()),
        1,
        test_config(),
        false,
    );
    let token = dev_token(&issuer, "acme", "alice", &[]);
    let add = |a: f64, b: f64| {
        rpc_as(
            Some(&token),
            1,
            "tools/call",
            json!({ "name": "add", "arguments": { "a": a, "b": b } }),
        )
    };
    let fine = send(&routers[0], add(1.5, 2.0)).await.json();
    assert_eq!(
        fine["result"]["structuredContent"],
        json!({ "sum": 3.5 }),
        "{fine}"
    );
    // `add` checks its sum: an overflow is the caller's error, not a broken result.
    let overflow = send(&routers[0], add(1.7e308, 1.7e308)).await.json();
    assert_eq!(overflow["result"]["isError"], true, "{overflow}");

    // A tool built as JSON, with a declared outputSchema its handler does not keep.
    let answer = |structured: Value| {
        handler(move |_| {
            let structured = structured.clone();
            async move { Ok(Outcome::tool(CallToolResult::structured(structured))) }
        })
    };
    let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] });
    let app = App::new("outputs", "0")
        .tool(
            Tool::new(
                "keeps",
                "",
                json!({ "type": "object" }),
                answer(json!({ "n": 1 })),
            )
            .with_output_schema(schema.clone()),
        )
        .tool(
            Tool::new(
                "breaks",
                "",
                json!({ "type": "object" }),
                answer(json!({ "n": "one" })),
            )
            .with_output_schema(schema.clone()),
        )
        .tool(
            Tool::new("omits", "", json!({ "type": "object" }), answer(json!({})))
                .with_output_schema(schema),
        );
    let router = router(server(app, test_config(), Arc::new(ManualClock::at(T0))));
    let keeps = send(
        &router,
        rpc(1, "tools/call", json!({ "name": "keeps", "arguments": {} })),
    )
    .await
    .json();
    assert_eq!(
        keeps["result"]["structuredContent"],
        json!({ "n": 1 }),
        "{keeps}"
    );
    for name in ["breaks", "omits"] {
        let reply = send(
            &router,
            rpc(1, "tools/call", json!({ "name": name, "arguments": {} })),
        )
        .await
        .json();
        assert_broke_output_schema(&reply, name);
        assert!(
            !reply.to_string().contains("one"),
            "no result content in the error: {reply}"
        );
    }
}
