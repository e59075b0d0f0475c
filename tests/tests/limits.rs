//! Everything a caller can make the server hold is bounded, and one tenant cannot starve
//! another: each limit is reached here on purpose, on the SQLite store and on DynamoDB (moto,
//! started by `make test`), and answers 429 with `-31001` and `data {limit, max, retryable}`
//! (or, for what a session may keep, `-32602`). The counts live in the store, so two server
//! instances share them.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::time::Duration;

use relevo_app::export::{Dataset, ExportInput, KIND as EXPORT};
use relevo_protocol::ServerConfig;
use relevo_state::{InFlightLimits, Owner, RecordKey, RecordStore, StartError};
use relevo_tests::race::{Backend, Both, backend};
use relevo_tests::*;
use serde_json::{Value, json};

async fn store(kind: Backend) -> Arc<Both> {
    Arc::new(Both(backend(kind).await))
}

fn assert_limit(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 429, "{what}: {}", reply.text);
    let error = &reply.json()["error"];
    assert_eq!(error["code"], -31001, "{what}: {error}");
    assert_eq!(error["data"]["retryable"], true, "{what}: {error}");
    assert!(
        error["data"]["limit"].as_str().unwrap().contains(what),
        "{what}: {error}"
    );
    assert!(reply.headers.contains_key("retry-after"), "{what}");
}

async fn listen_streams_per_principal_hold_across_instances(kind: Backend) {
    let config = ServerConfig {
        listen_max_secs: 2,
        max_listen_streams: 2,
        ..test_config()
    };
    let (instances, issuer) = shop_instances(store(kind).await, 2, config, true);
    let (alice, bob) = (
        dev_token(&issuer, "acme", "alice", &["shop"]),
        dev_token(&issuer, "acme", "bob", &["shop"]),
    );
    let listen = |n: usize, token: &str| {
        let request = rpc_as(
            Some(token),
            9,
            "subscriptions/listen",
            json!({ "notifications": {} }),
        );
        let router = instances[n].clone();
        tokio::spawn(async move { send(&router, request).await })
    };
    let open = [listen(0, &alice), listen(1, &alice)];
    tokio::time::sleep(Duration::from_millis(500)).await;
    let third = listen(0, &alice).await.unwrap();
    assert_limit(&third, "open listen streams");
    let other = listen(1, &bob);
    for stream in open {
        assert_eq!(stream.await.unwrap().status, 200);
    }
    assert_eq!(
        other.await.unwrap().status,
        200,
        "another principal has its own share"
    );
    // The streams ended and gave their slots back.
    assert_eq!(listen(1, &alice).await.unwrap().status, 200);
}

fn initialize(
    token: &str,
    client_info: Value,
    capabilities: Value,
) -> http::Request<axum::body::Body> {
    let body = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": client_info } });
    legacy_post(token, None, &body)
}

fn delete(token: &str, session: &str) -> http::Request<axum::body::Body> {
    http::Request::delete("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-session-id", session)
        .body(axum::body::Body::empty())
        .unwrap()
}

fn session_of(reply: &Reply) -> String {
    reply.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string()
}

async fn legacy_sessions_are_bounded_small_and_removed_on_delete(kind: Backend) {
    let records = store(kind).await;
    let config = ServerConfig {
        max_legacy_sessions: 3,
        ..test_config()
    };
    let (instances, issuer) = shop_instances(records.clone(), 2, config, true);
    let alice = dev_token(&issuer, "acme", "alice", &["shop"]);
    let huge_info =
        json!({ "name": "x".repeat(900_000), "version": "1", "extra": "y".repeat(1000) });
    let mut sessions = Vec::new();
    for n in 0..3 {
        let opened = send(
            &instances[n % 2],
            initialize(&alice, huge_info.clone(), json!({})),
        )
        .await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        sessions.push(session_of(&opened));
    }
    let fourth = send(
        &instances[1],
        initialize(&alice, json!({ "name": "c", "version": "1" }), json!({})),
    )
    .await;
    assert_limit(&fourth, "open sessions");

    // What a session keeps of a 900 KB clientInfo: its name (cut) and version.
    let key = RecordKey::new(
        Owner::personal("acme", "alice"),
        "mcp-session",
        &sessions[0],
    );
    let record = records.get(&key, now()).await.unwrap().unwrap();
    assert!(
        record.body.to_string().len() < 1024,
        "the session record stays small: {} bytes",
        record.body.to_string().len()
    );
    assert_eq!(record.body["clientInfo"]["version"], "1");
    assert!(record.body["clientInfo"].get("extra").is_none());

    let ended = send(&instances[0], delete(&alice, &sessions[0])).await;
    assert_eq!(ended.status, 200, "{}", ended.text);
    assert_eq!(
        records.get(&key, now()).await.unwrap(),
        None,
        "DELETE removes the session record"
    );
    let reused = send(
        &instances[0],
        legacy_post(
            &alice,
            Some(&sessions[0]),
            &json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
        ),
    );
    assert_eq!(reused.await.status, 404, "an ended session is gone");
    let again = send(
        &instances[1],
        initialize(&alice, json!({ "name": "c", "version": "1" }), json!({})),
    )
    .await;
    assert_eq!(
        again.status, 200,
        "the ended session's slot is free: {}",
        again.text
    );

    let big_capabilities = json!({ "experimental": { "blob": "z".repeat(10_000) } });
    let refused = send(
        &instances[0],
        initialize(&alice, json!({ "name": "c" }), big_capabilities),
    )
    .await;
    assert_eq!(refused.json()["error"]["code"], -32602, "{}", refused.text);
}

async fn a_session_holds_a_bounded_number_of_subscriptions(kind: Backend) {
    let (instances, issuer) = shop_instances(store(kind).await, 1, test_config(), true);
    let alice = dev_token(&issuer, "acme", "alice", &["shop"]);
    let session = session_of(
        &send(
            &instances[0],
            initialize(&alice, json!({ "name": "c" }), json!({})),
        )
        .await,
    );
    let subscribe = |uri: String| json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": uri } });
    for n in 0..relevo_protocol::legacy::MAX_SUBSCRIPTIONS {
        let reply = send(
            &instances[0],
            legacy_post(&alice, Some(&session), &subscribe(format!("carts://c{n}"))),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    let again = send(
        &instances[0],
        legacy_post(&alice, Some(&session), &subscribe("carts://c0".into())),
    )
    .await;
    assert_eq!(
        again.status, 200,
        "subscribing again to one it holds is no new subscription"
    );
    let over = send(
        &instances[0],
        legacy_post(
            &alice,
            Some(&session),
            &subscribe("carts://one-more".into()),
        ),
    )
    .await;
    assert_limit(&over, "resource subscriptions");
}

async fn a_session_has_a_bounded_number_of_requests_waiting_for_its_answers(kind: Backend) {
    let config = ServerConfig {
        legacy_input_wait_secs: 2,
        ..test_config()
    };
    let (instances, issuer) = shop_instances(store(kind).await, 1, config, true);
    let alice = dev_token(&issuer, "acme", "alice", &["shop"]);
    let opened = send(
        &instances[0],
        initialize(&alice, json!({ "name": "c" }), json!({ "elicitation": {} })),
    )
    .await;
    let session = session_of(&opened);
    let call = |id: u64, name: &str, arguments: Value| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": arguments } });
    let mut checkouts = tokio::task::JoinSet::new();
    for n in 0..relevo_protocol::legacy::MAX_PENDING_INPUTS as u64 + 1 {
        let cart = send(
            &instances[0],
            legacy_post(&alice, Some(&session), &call(n, "cart_create", json!({}))),
        )
        .await;
        let cart = cart.json()["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string();
        let add = call(
            n,
            "cart_add_item",
            json!({ "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 }),
        );
        send(&instances[0], legacy_post(&alice, Some(&session), &add)).await;
        let checkout = legacy_post(
            &alice,
            Some(&session),
            &call(100 + n, "cart_checkout", json!({ "cartId": cart })),
        );
        let router = instances[0].clone();
        checkouts.spawn(async move { send(&router, checkout).await.sse_messages() });
    }
    let answers = checkouts.join_all().await;
    let refused = answers
        .iter()
        .filter(|messages| {
            messages
                .last()
                .is_some_and(|m| m.to_string().contains("already wait for your answers"))
        })
        .count();
    assert_eq!(
        refused, 1,
        "one more than the session may have waiting: {answers:?}"
    );
}

async fn jobs_in_flight_are_bounded_per_principal_and_per_tenant(kind: Backend) {
    let (jobs, queue) = admitted_jobs(
        kind,
        InFlightLimits {
            per_principal: 2,
            per_tenant: 3,
        },
    )
    .await;
    let engine = &jobs.worker;
    let start = |subject: &'static str, key: Option<&'static str>| async move {
        EXPORT
            .start(engine, "acme", subject, key, &orders("limits"))
            .await
    };
    let first = start("alice", Some("k1")).await.unwrap();
    start("alice", None).await.unwrap();
    assert!(
        matches!(
            start("alice", None).await,
            Err(StartError::LimitReached { max: 2, .. })
        ),
        "a third job in flight for alice"
    );
    assert_eq!(
        start("alice", Some("k1")).await.unwrap().job.id,
        first.job.id,
        "a repeated keyed start finds its job"
    );
    start("bob", None).await.unwrap();
    assert!(
        matches!(
            start("carol", None).await,
            Err(StartError::LimitReached { max: 3, .. })
        ),
        "the tenant has three in flight"
    );
    assert!(
        start_other_tenant(engine).await.is_ok(),
        "another tenant is not affected"
    );
    drain(engine, &queue).await;
    start("carol", None).await.unwrap();
    start("alice", None).await.unwrap();
}

/// The shop's jobs on `kind`'s store with `limits` on admission, and the embedded queue they use.
async fn admitted_jobs(
    kind: Backend,
    limits: InFlightLimits,
) -> (relevo_tests::ShopJobs, relevo_embedded::SqliteQueue) {
    let records = store(kind).await;
    let queue =
        relevo_embedded::SqliteQueue::new(relevo_embedded::SqliteStore::in_memory().unwrap(), 5);
    (
        relevo_tests::shop_jobs(records, Arc::new(queue.clone()), Some(limits)),
        queue,
    )
}

async fn start_other_tenant(
    engine: &relevo_state::Engine,
) -> Result<relevo_state::Job, StartError> {
    EXPORT
        .start(engine, "globex", "gina", None, &orders("x"))
        .await
}

/// An export of the orders for `purpose`.
fn orders(purpose: &str) -> ExportInput {
    ExportInput {
        dataset: Dataset::Orders,
        purpose: purpose.into(),
    }
}

/// Runs every queued job to its end, as the worker would; how many ran.
async fn drain(
    engine: &relevo_state::Worker,
    queue: &relevo_embedded::SqliteQueue,
) -> Vec<relevo_state::JobRef> {
    use relevo_state::Queue;
    let mut ran = Vec::new();
    loop {
        let messages = queue.receive(1, 60, now()).await.unwrap();
        let Some(message) = messages.into_iter().next() else {
            return ran;
        };
        engine.process_message(&message.body).await.unwrap();
        queue.delete(&message.receipt).await.unwrap();
        ran.push(
            relevo_state::WorkMessage::decode(&message.body)
                .unwrap()
                .job,
        );
    }
}

/// Fairness: a noisy tenant starts 60 exports at once (as many as it may), then a quiet tenant
/// starts one. One worker takes the queue in order. The quiet tenant's job runs after at most
/// `per_tenant` of the noisy one's — without admission it would run after all 60.
async fn a_noisy_tenant_delays_another_by_a_bounded_amount(kind: Backend) {
    let limits = InFlightLimits {
        per_principal: 8,
        per_tenant: 8,
    };
    let (jobs, queue) = admitted_jobs(kind, limits).await;
    let engine = &jobs.worker;
    let (mut admitted, mut refused) = (0, 0);
    for n in 0..60 {
        let subject = if n % 2 == 0 { "noisy-a" } else { "noisy-b" };
        match EXPORT
            .start(engine, "noisy", subject, None, &orders("burst"))
            .await
        {
            Ok(_) => admitted += 1,
            Err(StartError::LimitReached { .. }) => refused += 1,
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(
        (admitted, refused),
        (8, 52),
        "the burst is admitted up to the tenant's share"
    );
    let quiet = EXPORT
        .start(engine, "quiet", "quinn", None, &orders("one"))
        .await
        .unwrap();
    let ran = drain(engine, &queue).await;
    let position = ran.iter().position(|job| job.id == quiet.job.id).unwrap();
    assert!(
        position <= limits.per_tenant,
        "the quiet tenant's job ran after {position} others"
    );
}

fn get_stream(token: &str, session: &str) -> http::Request<axum::body::Body> {
    http::Request::get("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("accept", "text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(axum::body::Body::empty())
        .unwrap()
}

/// A 2025-11-25 GET stream takes a slot among its principal's open GET streams, across
/// instances, and gives it back when it ends.
async fn get_streams_per_principal_are_bounded_across_instances(kind: Backend) {
    let config = ServerConfig {
        listen_max_secs: 2,
        max_listen_streams: 2,
        ..test_config()
    };
    let (instances, issuer) = shop_instances(store(kind).await, 2, config, true);
    let alice = dev_token(&issuer, "acme", "alice", &["shop"]);
    let session = session_of(
        &send(
            &instances[0],
            initialize(&alice, json!({ "name": "c" }), json!({})),
        )
        .await,
    );
    let open = |n: usize| {
        let (router, request) = (instances[n].clone(), get_stream(&alice, &session));
        tokio::spawn(async move { send(&router, request).await })
    };
    let held = [open(0), open(1)];
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_limit(&open(0).await.unwrap(), "open GET streams");
    for stream in held {
        assert_eq!(stream.await.unwrap().status, 200);
    }
    assert_eq!(
        open(1).await.unwrap().status,
        200,
        "the ended streams gave their slots back"
    );
}

/// A slot record lives as long as its longest-lived holder and no longer: its expiry follows
/// the latest holder, and the last release expires it at once.
async fn slot_records_expire_with_their_last_holder(kind: Backend) {
    use relevo_state::slots::{self, Acquired};
    let records = store(kind).await;
    let key = RecordKey::new(Owner::personal("acme", "alice"), "listen-streams", "open");
    let t = 1_800_000_000;
    assert_eq!(
        slots::acquire(&*records, &key, "a", t + 100, 8, t)
            .await
            .unwrap(),
        Acquired::Held
    );
    assert_eq!(
        records.get(&key, t).await.unwrap().unwrap().expires_at,
        Some(t + 100)
    );
    assert_eq!(
        slots::acquire(&*records, &key, "b", t + 300, 8, t + 10)
            .await
            .unwrap(),
        Acquired::Held
    );
    assert_eq!(
        records.get(&key, t + 10).await.unwrap().unwrap().expires_at,
        Some(t + 300),
        "the later holder"
    );
    slots::release(&*records, &key, "b", t + 20).await.unwrap();
    assert_eq!(
        records.get(&key, t + 20).await.unwrap().unwrap().expires_at,
        Some(t + 100),
        "back to a's"
    );
    assert_eq!(
        records.get(&key, t + 100).await.unwrap(),
        None,
        "a crashed holder's record lapses with it"
    );
    assert_eq!(
        slots::acquire(&*records, &key, "c", t + 500, 8, t + 200)
            .await
            .unwrap(),
        Acquired::Held
    );
    slots::release(&*records, &key, "c", t + 210).await.unwrap();
    assert_eq!(
        records.get(&key, t + 210).await.unwrap(),
        None,
        "the last release expires the record"
    );

    // Through the server: a session's slot record expires with the session.
    let (instances, issuer) = shop_instances(records.clone(), 1, test_config(), true);
    let alice = dev_token(&issuer, "acme", "alice", &["shop"]);
    let opened = send(
        &instances[0],
        initialize(&alice, json!({ "name": "c" }), json!({})),
    )
    .await;
    let session = RecordKey::new(
        Owner::personal("acme", "alice"),
        "mcp-session",
        &session_of(&opened),
    );
    let sessions = RecordKey::new(Owner::personal("acme", "alice"), "mcp-sessions", "open");
    let session_expiry = records
        .get(&session, now())
        .await
        .unwrap()
        .unwrap()
        .expires_at;
    assert!(session_expiry.is_some());
    assert_eq!(
        records
            .get(&sessions, now())
            .await
            .unwrap()
            .unwrap()
            .expires_at,
        session_expiry
    );
}

/// `get_many` reads live records in the order asked, absent and expired ones as `None`.
async fn a_batch_read_finds_live_records_in_the_order_asked(kind: Backend) {
    let records = store(kind).await;
    let t = 1_800_000_000;
    let key = |id: &str| RecordKey::new(Owner::personal("acme", "alice"), "note", id);
    records
        .create(&key("a"), &json!({ "n": 1 }), None, t)
        .await
        .unwrap();
    records
        .create(&key("b"), &json!({ "n": 2 }), Some(t + 5), t)
        .await
        .unwrap();
    let asked = [key("a"), key("missing"), key("b"), key("a")];
    let found = records.get_many(&asked, t + 1).await.unwrap();
    let bodies: Vec<Option<Value>> = found
        .iter()
        .map(|r| r.as_ref().map(|r| r.body.clone()))
        .collect();
    assert_eq!(
        bodies,
        vec![
            Some(json!({ "n": 1 })),
            None,
            Some(json!({ "n": 2 })),
            Some(json!({ "n": 1 }))
        ]
    );
    assert_eq!(found[0].as_ref().unwrap().key, key("a"));
    let later = records.get_many(&asked, t + 5).await.unwrap();
    assert!(later[2].is_none(), "an expired record reads as absent");
    let many: Vec<RecordKey> = (0..150).map(|n| key(&format!("k{n}"))).collect();
    assert!(
        records.get_many(&many, t).await.is_err(),
        "more than 100 keys is refused"
    );
    assert_eq!(records.get_many(&many[..100], t).await.unwrap().len(), 100);
}

fn now() -> u64 {
    relevo_state::Clock::now_unix(&relevo_state::SystemClock)
}

async fn all(kind: Backend) {
    listen_streams_per_principal_hold_across_instances(kind).await;
    legacy_sessions_are_bounded_small_and_removed_on_delete(kind).await;
    a_session_holds_a_bounded_number_of_subscriptions(kind).await;
    a_session_has_a_bounded_number_of_requests_waiting_for_its_answers(kind).await;
    jobs_in_flight_are_bounded_per_principal_and_per_tenant(kind).await;
    a_noisy_tenant_delays_another_by_a_bounded_amount(kind).await;
    get_streams_per_principal_are_bounded_across_instances(kind).await;
    slot_records_expire_with_their_last_holder(kind).await;
    a_batch_read_finds_live_records_in_the_order_asked(kind).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn limits_hold_on_sqlite() {
    all(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn limits_hold_on_dynamodb() {
    all(Backend::Dynamo).await;
}
