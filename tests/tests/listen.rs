//! `subscriptions/listen` across instances: two shop servers over one store, as two Lambda
//! environments share the table. A listener on one hears changes made on the other (its stream
//! polls what it subscribed to), once per change, only for what it may read; when the store
//! cannot be read, the stream ends with the listen result instead of going quiet. Local Lambda
//! mode runs the same through real function environments (`infra/gateway/tests/lambda_mode.rs`).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use relevo_embedded::SqliteStore;
use relevo_protocol::wire::ResourceContents;
use relevo_protocol::{Outcome, Resource, ServerConfig, handler};
use relevo_state::records::{TransactFuture, Write};
use relevo_state::{Record, RecordKey, RecordStore, StoreError, StoreFuture};
use relevo_tests::race::{Backend, Both, backend};
use relevo_tests::*;
use serde_json::{Value, json};

/// One store call the instances made, with the kinds of the records it named.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Get(String),
    GetMany(Vec<String>),
    /// A count of `n` units on a counter of `kind` (a quota window, `rate`).
    CountUp(String, u32),
}

/// The shared store, with a switch that makes every read fail as an unavailable store would,
/// and a log of the reads and counts made through it.
struct Switchable {
    inner: Arc<dyn RecordStore>,
    down: AtomicBool,
    calls: Mutex<Vec<Op>>,
}

impl Switchable {
    fn new(inner: Arc<dyn RecordStore>) -> Self {
        Switchable {
            inner,
            down: AtomicBool::new(false),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            Err(StoreError::Unavailable("switched off".into()))
        } else {
            Ok(())
        }
    }

    fn log(&self, op: Op) {
        self.calls.lock().unwrap().push(op);
    }

    /// The calls since the log was last taken.
    fn take_calls(&self) -> Vec<Op> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }

    /// Reads of records of `kind` (one per record, batched or not) since the log was last taken.
    fn take_reads(&self, kind: &str) -> usize {
        self.take_calls()
            .iter()
            .map(|op| match op {
                Op::Get(k) => usize::from(k == kind),
                Op::GetMany(kinds) => kinds.iter().filter(|k| *k == kind).count(),
                Op::CountUp(..) => 0,
            })
            .sum()
    }
}

impl RecordStore for Switchable {
    fn create<'a>(
        &'a self,
        key: &'a RecordKey,
        body: &'a Value,
        expires: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            self.check()?;
            self.inner.create(key, body, expires, now).await
        })
    }
    fn get<'a>(&'a self, key: &'a RecordKey, now: u64) -> StoreFuture<'a, Option<Record>> {
        Box::pin(async move {
            self.check()?;
            self.log(Op::Get(key.kind.clone()));
            self.inner.get(key, now).await
        })
    }
    fn get_many<'a>(
        &'a self,
        keys: &'a [RecordKey],
        now: u64,
    ) -> StoreFuture<'a, Vec<Option<Record>>> {
        Box::pin(async move {
            self.check()?;
            self.log(Op::GetMany(keys.iter().map(|k| k.kind.clone()).collect()));
            self.inner.get_many(keys, now).await
        })
    }
    fn update_expiring<'a>(
        &'a self,
        key: &'a RecordKey,
        expected: u64,
        body: &'a Value,
        expires: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            self.check()?;
            self.inner
                .update_expiring(key, expected, body, expires, now)
                .await
        })
    }
    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        expected: u64,
        body: &'a Value,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            self.check()?;
            self.inner.update(key, expected, body, now).await
        })
    }
    fn transact<'a>(&'a self, writes: &'a [Write], now: u64) -> TransactFuture<'a> {
        Box::pin(async move {
            self.check().map_err(relevo_state::TransactError::Store)?;
            self.inner.transact(writes, now).await
        })
    }
    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        units: u32,
        limit: u32,
        expires: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        Box::pin(async move {
            self.check()?;
            self.log(Op::CountUp(key.kind.clone(), units));
            self.inner
                .count_up_by(key, units, limit, expires, now)
                .await
        })
    }
}

struct Deployment {
    store: Arc<Switchable>,
    instances: Vec<axum::Router>,
    issuer: relevo_auth::DevIssuer,
}

fn deployment(listen_max_secs: u64) -> Deployment {
    let store = Arc::new(Switchable::new(Arc::new(SqliteStore::in_memory().unwrap())));
    let config = ServerConfig {
        listen_max_secs,
        listen_poll_ms: 100,
        ..ServerConfig::default()
    };
    let (instances, issuer) = shop_instances(store.clone(), 2, config, false);
    Deployment {
        store,
        instances,
        issuer,
    }
}

impl Deployment {
    fn token(&self, subject: &str) -> String {
        dev_token(&self.issuer, "acme", subject, &["shop"])
    }

    async fn tool(&self, instance: usize, token: &str, name: &str, arguments: Value) -> Value {
        let params = json!({ "name": name, "arguments": arguments });
        send(
            &self.instances[instance],
            rpc_as(Some(token), 1, "tools/call", params),
        )
        .await
        .json()
    }

    async fn cart(&self, instance: usize, token: &str) -> String {
        let created = self.tool(instance, token, "cart_create", json!({})).await;
        created["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn add(&self, instance: usize, token: &str, cart: &str) {
        let added = self.tool(
            instance,
            token,
            "cart_add_item",
            json!({ "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 }),
        );
        assert_eq!(added.await["result"]["isError"], false);
    }

    fn listen(
        &self,
        instance: usize,
        token: &str,
        uris: &[String],
    ) -> tokio::task::JoinHandle<Reply> {
        let filter = json!({ "notifications": { "resourceSubscriptions": uris } });
        let (router, request) = (
            self.instances[instance].clone(),
            rpc_as(Some(token), 42, "subscriptions/listen", filter),
        );
        tokio::spawn(async move { send(&router, request).await })
    }
}

fn updates(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/resources/updated")
        .map(|m| m["params"]["uri"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_listener_hears_each_change_once_whichever_instance_made_it_and_only_of_what_it_may_read()
{
    let d = deployment(2);
    let (alice, bob) = (d.token("alice"), d.token("bob"));
    let (alices, bobs) = (d.cart(0, &alice).await, d.cart(1, &bob).await);
    let uris = [format!("carts://{alices}"), format!("carts://{bobs}")];
    let listening = d.listen(0, &alice, &uris);
    tokio::time::sleep(Duration::from_millis(300)).await;
    d.add(1, &alice, &alices).await; // another instance: heard by polling
    d.add(1, &bob, &bobs).await; // bob's: never alice's to hear of
    tokio::time::sleep(Duration::from_millis(500)).await;
    d.add(0, &alice, &alices).await; // this instance: heard at once, not again by the poll
    let messages = listening.await.unwrap().sse_messages();
    assert_eq!(
        messages[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    // Bob's cart is not alice's to read: it reads as missing, and is not watched.
    assert_eq!(
        messages[0]["params"]["notifications"]["resourceSubscriptions"],
        json!([uris[0]])
    );
    assert_eq!(
        updates(&messages),
        vec![uris[0].clone(), uris[0].clone()],
        "{messages:?}"
    );
    for message in messages.iter().filter(|m| m.get("method").is_some()) {
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 42,
            "{message}"
        );
    }
    assert_eq!(
        messages.last().unwrap()["result"]["resultType"],
        "complete",
        "ended with the listen result"
    );
}

#[tokio::test]
async fn only_subscriptions_to_readable_resources_are_honoured_and_their_number_is_bounded() {
    let d = deployment(0);
    let alice = d.token("alice");
    let cart = d.cart(0, &alice).await;
    let uris = [
        format!("carts://{cart}"),
        "carts://".to_string(),
        "nowhere://x".to_string(),
    ];
    let messages = d.listen(0, &alice, &uris).await.unwrap().sse_messages();
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({ "resourceSubscriptions": [uris[0]] })
    );

    let many: Vec<String> = (0..=relevo_protocol::MAX_WATCHED)
        .map(|i| format!("carts://c{i}"))
        .collect();
    let refused = d.listen(0, &alice, &many).await.unwrap().json();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test]
async fn a_listener_whose_store_cannot_be_read_is_told_by_the_listen_result_instead_of_silence() {
    let d = deployment(60);
    let alice = d.token("alice");
    let cart = d.cart(0, &alice).await;
    let listening = d.listen(0, &alice, &[format!("carts://{cart}")]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let down = Instant::now();
    d.store.down.store(true, Ordering::SeqCst);
    let reply = tokio::time::timeout(Duration::from_secs(10), listening)
        .await
        .expect("the stream ended")
        .unwrap();
    let messages = reply.sse_messages();
    assert!(
        down.elapsed() < Duration::from_secs(5),
        "ended after {:?}, not at listen_max_secs",
        down.elapsed()
    );
    assert_eq!(
        messages.last().unwrap()["result"]["resultType"],
        "complete",
        "{messages:?}"
    );
    assert!(
        updates(&messages).is_empty(),
        "a failed read is not a change: {messages:?}"
    );
}

const NOW: u64 = 1_800_000_010;

/// Shop instances over one store, each through its own logging wrapper of it, counting their
/// listen streams and quotas there; their clock (and their app's) at `NOW`.
struct Counted {
    /// The first instance's wrapper.
    store: Arc<Switchable>,
    stores: Vec<Arc<Switchable>>,
    /// The first instance.
    router: axum::Router,
    routers: Vec<axum::Router>,
    alice: String,
    /// Runs of the handlers of the resources `plain://0`… (no watch declaration).
    runs: Arc<AtomicUsize>,
}

async fn counted(kind: Backend, config: ServerConfig) -> Counted {
    fleet(kind, config, 1, 0).await
}

/// `instances` shop servers over one store of `kind`, their app with `plain` more resources
/// (`plain://0`…) that declare no watch record and count their handler's runs.
async fn fleet(kind: Backend, config: ServerConfig, instances: usize, plain: usize) -> Counted {
    let shared: Arc<dyn RecordStore> = Arc::new(Both(backend(kind).await));
    let clock = relevo_protocol::ManualClock::at(NOW);
    let (settings, issuer, _) = dev_auth();
    let runs = Arc::new(AtomicUsize::new(0));
    let (mut stores, mut routers) = (Vec::new(), Vec::new());
    for _ in 0..instances {
        let store = Arc::new(Switchable::new(shared.clone()));
        let mut ports = relevo_protocol::Ports::new(Some(store.clone()));
        ports.clock = Arc::new(clock.clone());
        let mut app = relevo_app::features(&ports);
        for n in 0..plain {
            app = app.resource(counting_resource(&format!("plain://{n}"), runs.clone()));
        }
        let keys = Arc::new(relevo_auth::StaticKeySource(issuer.jwks()));
        let auth = relevo_auth::BearerAuthenticator::new(settings.clone(), keys);
        let server =
            relevo_protocol::McpServer::new(app, config.clone(), test_keys(), Arc::new(auth))
                .with_store(store.clone())
                .with_clock(Arc::new(clock.clone()));
        let options = relevo_local::GatewayOptions {
            auth: Some(settings.clone()),
            ..gateway_options()
        };
        routers.push(relevo_local::router(server, options));
        stores.push(store);
    }
    Counted {
        store: stores[0].clone(),
        stores,
        router: routers[0].clone(),
        routers,
        alice: dev_token(&issuer, "acme", "alice", &["shop"]),
        runs,
    }
}

/// A public resource whose content never changes, read through its handler (it declares no
/// watch record), which counts its runs.
fn counting_resource(uri: &str, runs: Arc<AtomicUsize>) -> Resource {
    let address = uri.to_string();
    Resource::new(
        uri,
        "plain",
        "text/plain",
        handler(move |_| {
            runs.fetch_add(1, Ordering::SeqCst);
            let contents = vec![ResourceContents::text("unchanging", address.clone())];
            async move { Ok(Outcome::contents(contents)) }
        }),
    )
}

impl Counted {
    async fn tool(&self, instance: usize, name: &str, arguments: Value) -> Value {
        let params = json!({ "name": name, "arguments": arguments });
        send(
            &self.routers[instance],
            rpc_as(Some(&self.alice), 1, "tools/call", params),
        )
        .await
        .json()
    }

    async fn cart(&self) -> String {
        let created = self.tool(0, "cart_create", json!({})).await;
        created["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn listen(&self, uris: &[String]) -> tokio::task::JoinHandle<(Reply, Duration)> {
        let filter = json!({ "notifications": { "resourceSubscriptions": uris } });
        let (router, request) = (
            self.router.clone(),
            rpc_as(Some(&self.alice), 42, "subscriptions/listen", filter),
        );
        tokio::spawn(async move {
            let started = Instant::now();
            let reply = send(&router, request).await;
            (reply, started.elapsed())
        })
    }
}

async fn a_refused_listen_stream_reads_nothing_it_would_watch(kind: Backend) {
    // The open stream reads the cart once when it starts and never polls in its 2 s (a poll
    // every 60 s): every read counted after that is the refused stream's.
    let config = ServerConfig {
        listen_max_secs: 2,
        listen_poll_ms: 60_000,
        max_listen_streams: 1,
        ..ServerConfig::default()
    };
    let d = counted(kind, config).await;
    let watched: Vec<String> = vec![format!("carts://{}", d.cart().await)];
    d.store.take_reads("cart");
    let open = d.listen(&watched);
    // Until the open stream has read what it watches (its baseline), and a little after.
    let started = Instant::now();
    while d.store.take_reads("cart") == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the open stream never read its cart"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    d.store.take_reads("cart");
    let (refused, _) = d.listen(&watched).await.unwrap();
    assert_eq!(refused.status, 429, "{}", refused.text);
    assert_eq!(
        d.store.take_reads("cart"),
        0,
        "the refused stream read none of what it would watch"
    );
    assert_eq!(open.await.unwrap().0.status, 200);
}

async fn a_listen_on_missing_resources_watches_none_of_them(kind: Backend) {
    let config = ServerConfig {
        listen_max_secs: 1,
        listen_poll_ms: 100,
        ..ServerConfig::default()
    };
    let d = counted(kind, config).await;
    let missing: Vec<String> = (0..relevo_protocol::MAX_WATCHED)
        .map(|n| format!("carts://missing-{n}"))
        .collect();
    d.store.take_reads("cart");
    let (reply, _) = d.listen(&missing).await.unwrap();
    let messages = reply.sse_messages();
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({}),
        "nothing missing is acknowledged: {messages:?}"
    );
    assert_eq!(
        d.store.take_reads("cart"),
        relevo_protocol::MAX_WATCHED,
        "one read found each missing, and no poll read them again over the stream's life"
    );
}

async fn every_poll_counts_against_the_tenant_quota_and_a_spent_quota_ends_the_stream(
    kind: Backend,
) {
    let quotas = relevo_protocol::quota::Quotas::parse(Some("6/60"), None).unwrap();
    let config = ServerConfig {
        listen_max_secs: 20,
        listen_poll_ms: 100,
        quotas,
        ..ServerConfig::default()
    };
    let d = counted(kind, config).await;
    let watched = vec![format!("carts://{}", d.cart().await)]; // 1 of 6
    let (reply, lasted) = tokio::time::timeout(Duration::from_secs(15), d.listen(&watched))
        .await
        .unwrap()
        .unwrap(); // 2
    assert!(
        lasted < Duration::from_secs(5),
        "polls 3 to 6 spent the quota; the 7th ended the stream: {lasted:?}"
    );
    let messages = reply.sse_messages();
    assert_eq!(
        messages.last().unwrap()["result"]["resultType"],
        "complete",
        "ended cleanly: {messages:?}"
    );
    let next = send(
        &d.router,
        rpc_as(Some(&d.alice), 2, "tools/list", json!({})),
    )
    .await;
    assert_eq!(
        next.status, 429,
        "the polls spent the tenant's quota: {}",
        next.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn listen_admission_holds_on_sqlite() {
    a_refused_listen_stream_reads_nothing_it_would_watch(Backend::Sqlite).await;
    a_listen_on_missing_resources_watches_none_of_them(Backend::Sqlite).await;
    every_poll_counts_against_the_tenant_quota_and_a_spent_quota_ends_the_stream(Backend::Sqlite)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn listen_admission_holds_on_dynamodb() {
    a_refused_listen_stream_reads_nothing_it_would_watch(Backend::Dynamo).await;
    a_listen_on_missing_resources_watches_none_of_them(Backend::Dynamo).await;
    every_poll_counts_against_the_tenant_quota_and_a_spent_quota_ends_the_stream(Backend::Dynamo)
        .await;
}

/// Whether `op` names a record of `kind`.
fn names(op: &Op, kind: &str) -> bool {
    match op {
        Op::Get(k) | Op::CountUp(k, _) => k == kind,
        Op::GetMany(kinds) => kinds.iter().any(|k| k == kind),
    }
}

/// The units of each quota count in `calls`, in order.
fn units(calls: &[Op]) -> Vec<u32> {
    calls
        .iter()
        .filter_map(|op| match op {
            Op::CountUp(kind, n) if kind == relevo_state::rate::KIND => Some(*n),
            _ => None,
        })
        .collect()
}

async fn a_listen_poll_reads_declared_records_in_one_batch(kind: Backend) {
    // Leases of one unit: the store sees each request's own admission (what is asserted).
    let quotas = relevo_protocol::quota::Quotas {
        max_lease: Some(1),
        ..relevo_protocol::quota::Quotas::parse(Some("10000/60"), None).unwrap()
    };
    let config = ServerConfig {
        listen_max_secs: 2,
        listen_poll_ms: 100,
        quotas,
        ..ServerConfig::default()
    };
    let d = fleet(kind, config, 2, 0).await;
    let carts = [d.cart().await, d.cart().await];
    let uris: Vec<String> = carts.iter().map(|cart| format!("carts://{cart}")).collect();
    d.store.take_calls();
    let listening = d.listen(&uris);
    tokio::time::sleep(Duration::from_millis(700)).await;
    let add = json!({ "cartId": carts[0], "sku": "MUG-CER-300", "quantity": 1 });
    assert_eq!(
        d.tool(1, "cart_add_item", add).await["result"]["isError"],
        false,
        "written through instance 1"
    );
    let (reply, _) = listening.await.unwrap();
    let messages = reply.sse_messages();
    assert_eq!(
        messages[0]["params"]["notifications"]["resourceSubscriptions"],
        json!(uris),
        "{messages:?}"
    );
    assert_eq!(
        updates(&messages),
        vec![uris[0].clone()],
        "the change made on the other instance, once: {messages:?}"
    );

    // Everything the stream's instance asked of the store, but its slot: the request's
    // admission, the baseline, then each poll one 1-unit admission and one batch read.
    let calls: Vec<Op> = d.stores[0]
        .take_calls()
        .into_iter()
        .filter(|op| !names(op, "listen-streams"))
        .collect();
    let (admission, batch) = (
        Op::CountUp("rate".into(), 1),
        Op::GetMany(vec!["cart".into(), "cart".into()]),
    );
    assert_eq!(calls[..2], [admission.clone(), batch.clone()], "{calls:?}");
    let polls = calls[2..].chunks(2).collect::<Vec<_>>();
    assert!(polls.len() >= 5, "a poll every 100 ms for 2 s: {calls:?}");
    for poll in polls {
        assert_eq!(
            poll,
            [admission.clone(), batch.clone()],
            "no get, no handler run: {calls:?}"
        );
    }
}

/// Alice's deployment for the charged-poll scenarios, quota `quota` a minute: one instance whose
/// app also has 30 resources without a watch declaration, two carts of hers, and the 32 URIs
/// one stream of hers watches (30 read through their handlers, 2 declared records).
async fn charged(kind: Backend, quota: &str, listen_max_secs: u64) -> (Counted, Vec<String>) {
    // Leases of one unit: the store sees each request's own charge (what is asserted).
    let quotas = relevo_protocol::quota::Quotas {
        max_lease: Some(1),
        ..relevo_protocol::quota::Quotas::parse(Some(&format!("{quota}/60")), None).unwrap()
    };
    let config = ServerConfig {
        listen_max_secs,
        listen_poll_ms: 100,
        quotas,
        ..ServerConfig::default()
    };
    let d = fleet(kind, config, 1, 30).await;
    let mut uris: Vec<String> = (0..30).map(|n| format!("plain://{n}")).collect();
    for _ in 0..2 {
        uris.push(format!("carts://{}", d.cart().await));
    }
    d.store.take_calls();
    (d, uris)
}

async fn a_listen_poll_is_charged_by_its_handler_reads(kind: Backend) {
    let (d, uris) = charged(kind, "100000", 1).await;
    let (reply, _) = d.listen(&uris).await.unwrap();
    let messages = reply.sse_messages();
    assert_eq!(
        messages[0]["params"]["notifications"]["resourceSubscriptions"],
        json!(uris),
        "all 32 watched"
    );
    let paid = units(&d.store.take_calls());
    assert_eq!(
        paid[..2],
        [1, 30],
        "the request's admission, then its baseline's 30 handler reads: {paid:?}"
    );
    let polls = paid.len() - 2;
    assert!(polls >= 3, "a poll every 100 ms for 1 s: {paid:?}");
    assert!(
        paid[2..].iter().all(|&n| n == 31),
        "each poll costs 1 + 30 handler reads: {paid:?}"
    );
    assert_eq!(
        d.runs.load(Ordering::SeqCst),
        30 * (1 + polls),
        "every paid handler read, and no other"
    );

    // 2 carts and the request: 3 units of 100; the baseline 30 (33); two polls 62 (95); the
    // third poll's 31 do not fit in the 5 left.
    let (d, uris) = charged(kind, "100", 20).await;
    let (reply, lasted) = tokio::time::timeout(Duration::from_secs(15), d.listen(&uris))
        .await
        .unwrap()
        .unwrap();
    assert!(
        lasted < Duration::from_secs(5),
        "the poll the quota could not afford ended the stream: {lasted:?}"
    );
    let messages = reply.sse_messages();
    assert_eq!(
        messages.last().unwrap()["result"]["resultType"],
        "complete",
        "ended cleanly: {messages:?}"
    );
    assert_eq!(
        units(&d.store.take_calls()),
        [1, 30, 31, 31, 31],
        "the refused poll asked for its 31"
    );
    assert_eq!(
        d.runs.load(Ordering::SeqCst),
        30 * 3,
        "the refused poll read nothing"
    );
    let rate = relevo_state::rate::Rate {
        limit: 100,
        window_secs: 60,
    };
    let window = relevo_state::rate::window_key("acme", "tenant", rate, NOW);
    let spent = d.store.inner.get(&window, NOW).await.unwrap().unwrap().body;
    assert_eq!(
        spent,
        json!({ "count": 95 }),
        "the refused poll spent none of its 31 units"
    );
    let next = send(
        &d.router,
        rpc_as(Some(&d.alice), 2, "tools/list", json!({})),
    )
    .await;
    assert_eq!(
        next.status, 200,
        "a request of one unit still fits: {}",
        next.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_listen_poll_reads_declared_records_in_one_batch_on_sqlite() {
    a_listen_poll_reads_declared_records_in_one_batch(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_listen_poll_reads_declared_records_in_one_batch_on_dynamodb() {
    a_listen_poll_reads_declared_records_in_one_batch(Backend::Dynamo).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_listen_poll_is_charged_by_its_handler_reads_on_sqlite() {
    a_listen_poll_is_charged_by_its_handler_reads(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_listen_poll_is_charged_by_its_handler_reads_on_dynamodb() {
    a_listen_poll_is_charged_by_its_handler_reads(Backend::Dynamo).await;
}
