//! 2025-11-25 clients on the same stateless server: the initialize handshake, sessions kept as
//! store records (any instance serves any request of a session), legacy shapes and codes, and
//! server-to-client requests whose answers arrive at another instance.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use relevo_embedded::SqliteStore;
use relevo_protocol::{McpServer, NoAuth, ServerConfig};
use relevo_tests::race::{Backend, Both, RaceStore, Seed, backend, is_retryable};
use relevo_tests::*;
use serde_json::{Value, json};
use tower::ServiceExt;

const LEGACY: &str = "2025-11-25";

/// `count` shop servers sharing one store, one key ring and one token issuer, as the Lambda
/// instances of one deployment share the table, the keys and the issuer.
fn legacy_shop(count: usize) -> (Vec<axum::Router>, relevo_auth::DevIssuer) {
    legacy_shop_with(count, test_config())
}

fn legacy_shop_with(
    count: usize,
    config: ServerConfig,
) -> (Vec<axum::Router>, relevo_auth::DevIssuer) {
    shop_instances(
        Arc::new(SqliteStore::in_memory().unwrap()),
        count,
        config,
        true,
    )
}

fn conformance_instance(config: ServerConfig) -> axum::Router {
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    router(
        McpServer::new(
            relevo_conformance::app(),
            config,
            test_keys(),
            Arc::new(NoAuth),
        )
        .with_store(store),
    )
}

/// A handshake-era POST: no `_meta` envelope, no `Mcp-Method`; the session and version headers
/// once a session exists.
fn legacy(token: Option<&str>, session: Option<&str>, body: Value) -> Request<Body> {
    let mut builder = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(session) = session {
        builder = builder
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LEGACY);
    }
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    builder.body(Body::from(body.to_string())).unwrap()
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn verb(method: &str, token: Option<&str>, session: &str) -> Request<Body> {
    let mut builder = Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session);
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    builder.body(Body::empty()).unwrap()
}

/// Initializes with `version` and these capabilities; returns the session id and the reply.
async fn initialize(
    router: &axum::Router,
    token: Option<&str>,
    version: &str,
    capabilities: Value,
) -> (String, Reply) {
    let params = json!({ "protocolVersion": version, "capabilities": capabilities,
        "clientInfo": { "name": "legacy-test", "version": "0" } });
    let reply = send(
        router,
        legacy(token, None, request(0, "initialize", params)),
    )
    .await;
    let session = reply
        .headers
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (session, reply)
}

async fn call(
    router: &axum::Router,
    token: &str,
    session: &str,
    name: &str,
    arguments: Value,
) -> Value {
    let body = request(
        1,
        "tools/call",
        json!({ "name": name, "arguments": arguments }),
    );
    send(router, legacy(Some(token), Some(session), body))
        .await
        .json()
}

#[tokio::test]
async fn initialize_opens_a_session_and_answers_in_the_handshake_shape() {
    let router = conformance_instance(test_config());
    let (session, reply) = initialize(&router, None, LEGACY, json!({ "elicitation": {} })).await;
    assert_eq!(reply.status, 200);
    let result = &reply.json()["result"];
    assert_eq!(result["protocolVersion"], LEGACY);
    assert_eq!(result["serverInfo"]["name"], "relevo-conformance");
    assert_eq!(result["capabilities"]["logging"], json!({}));
    assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
    assert!(
        result.get("resultType").is_none() && result.get("ttlMs").is_none(),
        "{result}"
    );
    assert!(
        session.len() >= 22 && session.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "{session}"
    );

    let (_, older) = initialize(&router, None, "2025-06-18", json!({})).await;
    assert_eq!(older.json()["result"]["protocolVersion"], "2025-06-18");
    let (_, unknown) = initialize(&router, None, "2024-11-05", json!({})).await;
    assert_eq!(
        unknown.json()["result"]["protocolVersion"],
        LEGACY,
        "an unserved version gets the newest served"
    );
}

#[tokio::test]
async fn discover_lists_exactly_the_served_versions() {
    let with_sessions = conformance_instance(test_config());
    let discovered = send(&with_sessions, rpc(1, "server/discover", json!({})))
        .await
        .json();
    assert_eq!(
        discovered["result"]["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18"])
    );

    let modern_only = conformance_router();
    let discovered = send(&modern_only, rpc(1, "server/discover", json!({})))
        .await
        .json();
    assert_eq!(
        discovered["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    let (session, refused) = initialize(&modern_only, None, LEGACY, json!({})).await;
    assert_eq!(
        (
            refused.status.as_u16(),
            refused.json()["error"]["code"].as_i64()
        ),
        (400, Some(-32022))
    );
    assert!(session.is_empty(), "no session without a session store");
}

#[tokio::test]
async fn requests_need_a_live_session_of_the_same_caller() {
    let (mut routers, issuer) = legacy_shop(1);
    let router = routers.remove(0);
    let (alice, bob) = (
        dev_token(&issuer, "acme", "alice", &["shop"]),
        dev_token(&issuer, "acme", "bob", &["shop"]),
    );
    let (session, _) = initialize(&router, Some(&alice), LEGACY, json!({})).await;
    let ping = || request(2, "ping", json!({}));

    let served = send(&router, legacy(Some(&alice), Some(&session), ping())).await;
    assert_eq!(
        (served.status.as_u16(), served.json()["result"].clone()),
        (200, json!({}))
    );
    let without = send(&router, legacy(Some(&alice), None, ping())).await;
    assert_eq!(
        (
            without.status.as_u16(),
            without.json()["error"]["code"].as_i64()
        ),
        (400, Some(-32600))
    );
    let unknown = send(
        &router,
        legacy(Some(&alice), Some("no-such-session-000000"), ping()),
    )
    .await;
    assert_eq!(
        (
            unknown.status.as_u16(),
            unknown.json()["error"]["code"].as_i64()
        ),
        (404, Some(-32001))
    );
    let foreign = send(&router, legacy(Some(&bob), Some(&session), ping())).await;
    assert_eq!(
        foreign.status, 404,
        "a session id never stands in for the caller"
    );
    let anonymous = send(&router, legacy(None, Some(&session), ping())).await;
    assert_eq!(
        anonymous.status, 401,
        "a session id alone authenticates nothing"
    );

    assert_eq!(
        send(&router, verb("DELETE", Some(&bob), &session))
            .await
            .status,
        404
    );
    assert_eq!(
        send(&router, verb("DELETE", Some(&alice), &session))
            .await
            .status,
        200
    );
    assert_eq!(
        send(&router, legacy(Some(&alice), Some(&session), ping()))
            .await
            .status,
        404,
        "ended"
    );
    assert_eq!(
        send(&router, verb("GET", Some(&alice), &session))
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn a_session_expires_with_its_lifetime() {
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let clock = relevo_protocol::ManualClock::at(1_900_000_000);
    let config = ServerConfig {
        legacy_session_secs: 60,
        ..test_config()
    };
    let router = router(
        McpServer::new(
            relevo_conformance::app(),
            config,
            test_keys(),
            Arc::new(NoAuth),
        )
        .with_store(store)
        .with_clock(Arc::new(clock.clone())),
    );
    let (session, _) = initialize(&router, None, LEGACY, json!({})).await;
    clock.advance(59);
    assert_eq!(
        send(
            &router,
            legacy(None, Some(&session), request(1, "ping", json!({})))
        )
        .await
        .status,
        200
    );
    clock.advance(1);
    assert_eq!(
        send(
            &router,
            legacy(None, Some(&session), request(1, "ping", json!({})))
        )
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn legacy_results_and_errors_take_the_handshake_shapes() {
    let router = conformance_instance(test_config());
    let (session, _) = initialize(&router, None, LEGACY, json!({})).await;
    let send_legacy = |body| send(&router, legacy(None, Some(&session), body));

    let listed = send_legacy(request(1, "tools/list", json!({})))
        .await
        .json();
    let result = listed["result"].as_object().unwrap();
    assert!(result.contains_key("tools"));
    for key in ["resultType", "ttlMs", "cacheScope", "_meta"] {
        assert!(!result.contains_key(key), "{key} in a legacy result");
    }
    let missing = send_legacy(request(
        2,
        "resources/read",
        json!({ "uri": "test://missing" }),
    ))
    .await;
    assert_eq!(missing.status, 200);
    assert_eq!(missing.json()["error"]["code"], -32002);
    assert_eq!(missing.json()["error"]["data"]["uri"], "test://missing");
    let unknown = send_legacy(request(3, "server/discover", json!({}))).await;
    assert_eq!(
        (
            unknown.status.as_u16(),
            unknown.json()["error"]["code"].as_i64()
        ),
        (200, Some(-32601))
    );
    let level = send_legacy(request(4, "logging/setLevel", json!({ "level": "loud" }))).await;
    assert_eq!(level.json()["error"]["code"], -32602);

    // The same miss on the stateless wire keeps its 2026-07-28 code.
    let modern = send(
        &router,
        rpc(5, "resources/read", json!({ "uri": "test://missing" })),
    )
    .await
    .json();
    assert_eq!(modern["error"]["code"], -32602);
    assert_eq!(modern["result"], Value::Null);
}

#[tokio::test]
async fn the_body_decides_the_era_and_the_header_only_cross_checks() {
    let router = conformance_instance(test_config());
    let modern_initialize = send(
        &router,
        rpc(1, "initialize", json!({ "protocolVersion": LEGACY })),
    )
    .await;
    assert_eq!(
        (
            modern_initialize.status.as_u16(),
            modern_initialize.json()["error"]["code"].as_i64()
        ),
        (404, Some(-32601))
    );
    assert!(modern_initialize.headers.get("mcp-session-id").is_none());

    let headers = [
        ("host", "localhost"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "initialize"),
    ];
    let body = request(
        2,
        "initialize",
        json!({ "protocolVersion": LEGACY, "capabilities": {} }),
    )
    .to_string();
    let no_envelope = send(&router, raw("POST", &headers, body)).await;
    assert_eq!(
        no_envelope.status, 400,
        "a modern header without an envelope is refused, not downgraded"
    );
    assert!(no_envelope.headers.get("mcp-session-id").is_none());

    let (session, _) = initialize(&router, None, LEGACY, json!({})).await;
    let mut wrong = legacy(None, Some(&session), request(3, "ping", json!({})));
    wrong
        .headers_mut()
        .insert("mcp-protocol-version", "2025-06-18".parse().unwrap());
    assert_eq!(
        send(&router, wrong).await.status,
        400,
        "the version header must match the session"
    );
}

#[tokio::test]
async fn the_session_log_level_gates_log_notifications() {
    let router = conformance_instance(test_config());
    let (session, _) = initialize(&router, None, LEGACY, json!({})).await;
    let body = || {
        request(
            1,
            "tools/call",
            json!({ "name": "test_tool_with_logging", "arguments": {} }),
        )
    };

    let quiet = send(&router, legacy(None, Some(&session), body())).await;
    assert!(!quiet.is_sse(), "no log level yet: a plain JSON result");
    let set = send(
        &router,
        legacy(
            None,
            Some(&session),
            request(2, "logging/setLevel", json!({ "level": "info" })),
        ),
    )
    .await;
    assert_eq!(set.json()["result"], json!({}));
    let logged = send(&router, legacy(None, Some(&session), body())).await;
    let messages = logged.sse_messages();
    let logs = messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .count();
    assert_eq!(logs, 3, "{messages:?}");
    assert_eq!(
        messages.last().unwrap()["result"]["content"][0]["text"],
        "Logging test completed"
    );
    assert!(
        messages.last().unwrap()["result"]
            .get("resultType")
            .is_none()
    );
}

/// Reads SSE frames from a streaming body until one carries a JSON-RPC message.
async fn next_message(body: &mut Body) -> Option<Value> {
    while let Some(frame) = body.frame().await {
        let frame = frame.ok()?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        let text = String::from_utf8_lossy(data).to_string();
        if let Some(message) = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .find_map(|d| serde_json::from_str(d).ok())
        {
            return Some(message);
        }
    }
    None
}

#[tokio::test]
async fn a_legacy_checkout_is_confirmed_by_an_answer_another_instance_stores() {
    let (routers, issuer) = legacy_shop(2);
    let (a, b) = (&routers[0], &routers[1]);
    let token = dev_token(&issuer, "acme", "alice", &["shop"]);
    let (session, _) = initialize(a, Some(&token), LEGACY, json!({ "elicitation": {} })).await;
    let cart = call(a, &token, &session, "cart_create", json!({})).await["result"]["structuredContent"]["cartId"]
        .as_str()
        .unwrap()
        .to_string();
    let added = call(
        a,
        &token,
        &session,
        "cart_add_item",
        json!({ "cartId": cart, "sku": "MUG-CER-300", "quantity": 2 }),
    )
    .await;
    assert_eq!(added["result"]["isError"], false, "{added}");

    let checkout = request(
        7,
        "tools/call",
        json!({ "name": "cart_checkout", "arguments": { "cartId": cart } }),
    );
    let response = a
        .clone()
        .oneshot(legacy(Some(&token), Some(&session), checkout))
        .await
        .unwrap();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = response.into_body();
    let ask = next_message(&mut body).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert!(
        ask["params"]["message"].as_str().unwrap().contains('$'),
        "{ask}"
    );
    assert_eq!(ask["params"]["mode"], "form");

    let answer = json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "confirm": true } } });
    let stored = send(b, legacy(Some(&token), Some(&session), answer.clone())).await;
    assert_eq!(stored.status, 202, "{}", stored.text);
    let again = send(b, legacy(Some(&token), Some(&session), answer)).await;
    assert_eq!(
        again.status, 400,
        "the first answer wins; a second changes nothing"
    );

    let done = next_message(&mut body).await.unwrap();
    assert_eq!(done["id"], 7);
    assert_eq!(
        done["result"]["structuredContent"]["status"], "ordered",
        "{done}"
    );
    let view = call(b, &token, &session, "cart_view", json!({ "cartId": cart })).await;
    assert_eq!(
        view["result"]["structuredContent"]["checkedOut"], true,
        "the other instance sees the order"
    );
}

/// The race harness (`relevo_tests::race`) over legacy elicitation: in each round a client
/// checks out one cart twice at once (its retry of a call it thinks lost) on two instances, and
/// each elicitation is answered twice at once, through two other instances. One answer per
/// request is taken, and the cart gets one order, which every answer that names one names.
async fn legacy_confirmations_racing_on_three_instances_place_one_order(kind: Backend) {
    let seed = Seed::from_env(&format!("legacy elicitation race on {kind:?}"));
    let mut rng = seed.rng(11);
    let store = Arc::new(RaceStore::new(
        Arc::new(Both(backend(kind).await)),
        seed,
        Duration::from_millis(2),
    ));
    let (routers, issuer) = shop_instances(store.clone(), 3, test_config(), true);
    let token = dev_token(&issuer, "acme", "alice", &["shop"]);
    let (session, _) = initialize(
        &routers[0],
        Some(&token),
        LEGACY,
        json!({ "elicitation": {} }),
    )
    .await;
    for round in 0..3u64 {
        let cart = call(&routers[0], &token, &session, "cart_create", json!({})).await["result"]["structuredContent"]
            ["cartId"]
            .as_str()
            .unwrap()
            .to_string();
        let added = call(
            &routers[1],
            &token,
            &session,
            "cart_add_item",
            json!({ "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 }),
        );
        assert_eq!(added.await["result"]["isError"], false);
        let (asks, mut asked) = tokio::sync::mpsc::unbounded_channel();
        let mut checkouts = tokio::task::JoinSet::new();
        for k in 0..2u64 {
            let params = json!({ "name": "cart_checkout", "arguments": { "cartId": cart } });
            let checkout = legacy(
                Some(&token),
                Some(&session),
                request(100 + 10 * round + k, "tools/call", params),
            );
            let (router, asks) = (routers[k as usize].clone(), asks.clone());
            checkouts.spawn(async move {
                let mut body = router.oneshot(checkout).await.unwrap().into_body();
                let ask = next_message(&mut body).await.unwrap();
                asks.send(ask).unwrap();
                next_message(&mut body).await.unwrap()
            });
        }
        let mut answering = tokio::task::JoinSet::new();
        for k in 0..2 {
            let ask = asked.recv().await.unwrap();
            assert_eq!(ask["method"], "elicitation/create", "{ask}");
            for other in 1..=2 {
                let answer = json!({ "jsonrpc": "2.0", "id": ask["id"],
                    "result": { "action": "accept", "content": { "confirm": true } } });
                let (router, wait) = (routers[(k + other) % 3].clone(), rng.below(5));
                let answer = legacy(Some(&token), Some(&session), answer);
                let id = ask["id"].clone();
                answering.spawn(async move {
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    (id, send(&router, answer).await.status)
                });
            }
        }
        let taken = answering.join_all().await;
        for (id, _) in &taken {
            let accepted = taken
                .iter()
                .filter(|(i, status)| i == id && *status == 202)
                .count();
            seed.check(
                accepted == 1,
                format!("round {round}: request {id} took {accepted} answers: {taken:?}"),
            );
        }
        let dones = checkouts.join_all().await;
        let orders: BTreeSet<String> = store
            .applied("order")
            .into_iter()
            .filter(|(_, body)| body["cartId"] == cart.as_str())
            .map(|(key, body)| body["orderId"].as_str().map_or(key.id, String::from))
            .collect();
        seed.check(
            orders.len() == 1,
            format!("round {round}: cart {cart} has orders {orders:?}"),
        );
        for done in &dones {
            seed.check(
                done.get("error").is_none() || is_retryable(done),
                format!("round {round}: {done}"),
            );
            if let Some(order) = done["result"]["structuredContent"]["orderId"].as_str() {
                seed.check(
                    orders.contains(order),
                    format!("round {round}: an answer names {order}, not {orders:?}"),
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn legacy_elicitation_race_on_sqlite() {
    legacy_confirmations_racing_on_three_instances_place_one_order(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn legacy_elicitation_race_on_dynamodb() {
    legacy_confirmations_racing_on_three_instances_place_one_order(Backend::Dynamo).await;
}

#[tokio::test]
async fn answers_are_taken_only_for_requests_the_session_is_waiting_on() {
    let router = conformance_instance(test_config());
    let (session, _) = initialize(&router, None, LEGACY, json!({ "elicitation": {} })).await;
    let forged = json!({ "jsonrpc": "2.0", "id": "made-up", "result": { "action": "accept" } });
    let reply = send(&router, legacy(None, Some(&session), forged.clone())).await;
    assert_eq!(reply.status, 400);
    let unknown_session = send(
        &router,
        legacy(None, Some("no-such-session-000000"), forged),
    )
    .await;
    assert_eq!(unknown_session.status, 404);
}

#[tokio::test]
async fn an_unanswered_request_ends_the_call_after_the_bounded_wait() {
    let router = conformance_instance(ServerConfig {
        legacy_input_wait_secs: 1,
        ..test_config()
    });
    let (session, _) = initialize(&router, None, "2025-06-18", json!({ "elicitation": {} })).await;
    let body = request(
        1,
        "tools/call",
        json!({ "name": "test_elicitation", "arguments": { "message": "Who?" } }),
    );
    let mut call = legacy(None, Some(&session), body);
    call.headers_mut()
        .insert("mcp-protocol-version", "2025-06-18".parse().unwrap());
    let messages = send(&router, call).await.sse_messages();
    assert_eq!(messages[0]["method"], "elicitation/create");
    assert!(
        messages[0]["params"].get("mode").is_none(),
        "2025-06-18 elicitation names no mode"
    );
    let result = &messages.last().unwrap()["result"];
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("within 1 s"),
        "{result}"
    );
}

#[tokio::test]
async fn a_session_that_declared_no_capability_is_never_asked() {
    let router = conformance_instance(test_config());
    let (session, _) = initialize(&router, None, LEGACY, json!({})).await;
    let body = request(
        1,
        "tools/call",
        json!({ "name": "test_sampling", "arguments": { "prompt": "hi" } }),
    );
    let reply = send(&router, legacy(None, Some(&session), body)).await;
    assert!(!reply.is_sse());
    assert_eq!(reply.json()["result"]["isError"], true, "{}", reply.text);
}

#[tokio::test]
async fn a_buffered_front_door_refuses_server_requests_and_the_get_stream() {
    let router = conformance_instance(ServerConfig {
        streams_responses: false,
        ..test_config()
    });
    let (session, init) = initialize(&router, None, LEGACY, json!({ "elicitation": {} })).await;
    assert!(
        init.json()["result"]["capabilities"]["resources"]
            .get("subscribe")
            .is_none()
    );
    let body = request(
        1,
        "tools/call",
        json!({ "name": "test_elicitation", "arguments": { "message": "Who?" } }),
    );
    let reply = send(&router, legacy(None, Some(&session), body)).await;
    assert!(!reply.is_sse());
    assert!(
        reply.json()["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("buffers responses"),
        "{}",
        reply.text
    );
    let stream = send(&router, verb("GET", None, &session)).await;
    assert_eq!(stream.status, 405);
    assert_eq!(stream.headers["allow"], "POST, DELETE");
    let subscribe = send(
        &router,
        legacy(
            None,
            Some(&session),
            request(
                2,
                "resources/subscribe",
                json!({ "uri": "test://watched-resource" }),
            ),
        ),
    )
    .await;
    assert_eq!(subscribe.json()["error"]["code"], -32601);
}

#[tokio::test]
async fn get_without_a_session_is_still_405() {
    let router = conformance_instance(test_config());
    let reply = send(
        &router,
        raw(
            "GET",
            &[("host", "localhost"), ("accept", "text/event-stream")],
            "",
        ),
    )
    .await;
    assert_eq!(reply.status, 405);
    assert_eq!(reply.headers["allow"], "POST");
}

#[tokio::test]
async fn the_get_stream_carries_updates_of_subscribed_resources_only() {
    let (mut routers, issuer) = legacy_shop_with(
        1,
        ServerConfig {
            listen_max_secs: 5,
            ..test_config()
        },
    );
    let router = routers.remove(0);
    let token = dev_token(&issuer, "acme", "alice", &["shop"]);
    let (session, _) = initialize(&router, Some(&token), LEGACY, json!({})).await;
    let cart_id = |reply: Value| {
        reply["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let watched = cart_id(call(&router, &token, &session, "cart_create", json!({})).await);
    let other = cart_id(call(&router, &token, &session, "cart_create", json!({})).await);
    let uri = format!("carts://{watched}");
    let subscribe = request(2, "resources/subscribe", json!({ "uri": uri }));
    assert_eq!(
        send(&router, legacy(Some(&token), Some(&session), subscribe))
            .await
            .json()["result"],
        json!({})
    );

    let stream = router
        .clone()
        .oneshot(verb("GET", Some(&token), &session))
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut body = stream.into_body();
    let add = |cart: &str| json!({ "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 });
    call(&router, &token, &session, "cart_add_item", add(&other)).await;
    call(&router, &token, &session, "cart_add_item", add(&watched)).await;
    let update = next_message(&mut body).await.unwrap();
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(
        update["params"]["uri"], uri,
        "the unsubscribed cart's change is not sent"
    );
}

#[tokio::test]
async fn a_per_method_function_serves_a_legacy_request_for_its_own_method_only() {
    let router = conformance_instance(test_config());
    let (session, _) = initialize(&router, None, LEGACY, json!({})).await;
    let mut listed = legacy(None, Some(&session), request(1, "tools/list", json!({})));
    listed
        .headers_mut()
        .insert("mcp-method", "tools/list".parse().unwrap());
    let reply = send(&router, listed).await;
    assert_eq!(reply.status, 200);
    assert!(reply.json()["result"]["tools"].is_array(), "{}", reply.text);
    let mut lying = legacy(None, Some(&session), request(2, "ping", json!({})));
    lying
        .headers_mut()
        .insert("mcp-method", "tools/list".parse().unwrap());
    assert_eq!(
        send(&router, lying).await.status,
        400,
        "the header routes, the body decides"
    );
}
