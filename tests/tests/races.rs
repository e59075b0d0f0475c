//! The race harness over the shop, the jobs and the operation ledger: many clients on two server
//! instances interleaving different requests for the same thing, on the SQLite store and on
//! DynamoDB (moto, started by `make test`), with seeded pauses before every store call
//! (`relevo_tests::race`). After each run the invariants are checked over the recorded history
//! of store writes and every answer; a failure names the seed (`RELEVO_RACE_SEED=… cargo test`
//! replays it).
//!
//! moto answers one request at a time, so on DynamoDB two conditional writes never overlap inside
//! the emulator; the clients' read-decide-write steps still interleave, which is where the races
//! live. SQLite serialises on its connection the same way.
//!
//! Bounded: each scenario makes a fixed number of calls; the whole file runs in seconds.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use relevo_protocol::McpServer;
use relevo_protocol::Ports;
use relevo_state::RecordStore;
use relevo_tests::race::{Backend, Both, RaceStore, Rng, Seed, backend, is_retryable};
use relevo_tests::*;
use serde_json::{Value, json};

/// Two server instances of the shop over one raced store, and the issuer of their tokens.
struct Shop {
    store: Arc<RaceStore<Both>>,
    instances: Vec<axum::Router>,
    issuer: relevo_auth::DevIssuer,
}

async fn shop(kind: Backend, seed: Seed) -> Shop {
    let inner = Arc::new(Both(backend(kind).await));
    let store = Arc::new(RaceStore::new(inner, seed, Duration::from_millis(3)));
    let (instances, issuer) = shop_instances(store.clone(), 2, test_config(), false);
    Shop {
        store,
        instances,
        issuer,
    }
}

impl Shop {
    fn token(&self, subject: &str) -> String {
        dev_token(&self.issuer, "acme", subject, &["shop"])
    }

    async fn call(&self, instance: usize, token: &str, name: &str, params: Value) -> Value {
        let mut params = params;
        params["name"] = json!(name);
        let router = &self.instances[instance % self.instances.len()];
        send(router, rpc_as(Some(token), 1, "tools/call", params))
            .await
            .json()
    }

    async fn cart_with_items(&self, token: &str) -> String {
        let cart = self
            .call(0, token, "cart_create", json!({ "arguments": {} }))
            .await;
        let cart_id = cart["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string();
        let added = self
            .call(
                1,
                token,
                "cart_add_item",
                json!({ "arguments": { "cartId": cart_id, "sku": "GRN-BURR-01", "quantity": 2 } }),
            )
            .await;
        assert_eq!(added["result"]["isError"], false, "{added}");
        cart_id
    }
}

fn accept() -> Value {
    json!({ "confirm": { "action": "accept", "content": { "confirm": true } } })
}

fn decline() -> Value {
    json!({ "confirm": { "action": "decline" } })
}

/// Checkout: carts each quoted several times by several clients, every quote confirmed (or
/// declined) several times at once, on both instances. At most one order per cart; every answer
/// that names an order names that one; a cart whose every confirmation declined has none.
async fn checkout_places_at_most_one_order_per_cart(kind: Backend) {
    const CARTS: usize = 4;
    const QUOTES: usize = 4;
    const COPIES: usize = 3;
    let seed = Seed::from_env(&format!("checkout race on {kind:?}"));
    let shop = Arc::new(shop(kind, seed).await);
    let token = shop.token("alice");
    let mut rng = seed.rng(2);
    let mut carts = Vec::new();
    for _ in 0..CARTS {
        carts.push(shop.cart_with_items(&token).await);
    }
    // Round one, taken QUOTES times per cart, all at once.
    let mut quoting = tokio::task::JoinSet::new();
    for cart in &carts {
        for q in 0..QUOTES {
            let (shop, token, cart, instance) = (
                shop.clone(),
                token.clone(),
                cart.clone(),
                rng.below(2) as usize,
            );
            quoting.spawn(async move {
                let answer = shop
                    .call(
                        instance,
                        &token,
                        "cart_checkout",
                        json!({ "arguments": { "cartId": cart } }),
                    )
                    .await;
                (cart, q, answer["result"]["requestState"].clone())
            });
        }
    }
    let quotes = quoting.join_all().await;
    // Every quote confirmed COPIES times (or declined, one cart in four entirely), all at once.
    let declined_cart = carts[0].clone();
    let mut confirming = tokio::task::JoinSet::new();
    let mut accepted: BTreeMap<String, usize> = BTreeMap::new();
    for (cart, _, state) in quotes {
        seed.check(
            state.is_string(),
            format!("round one of {cart} gave a requestState"),
        );
        let answer = if cart == declined_cart || rng.chance(20) {
            decline()
        } else {
            accept()
        };
        if answer == accept() {
            *accepted.entry(cart.clone()).or_default() += 1;
        }
        for _ in 0..COPIES {
            let (shop, token, cart, state, answer, instance) = (
                shop.clone(),
                token.clone(),
                cart.clone(),
                state.clone(),
                answer.clone(),
                rng.below(2) as usize,
            );
            confirming.spawn(async move {
                let params =
                    json!({ "arguments": { "cartId": cart }, "inputResponses": answer, "requestState": state });
                (cart, shop.call(instance, &token, "cart_checkout", params).await)
            });
        }
    }
    let answers = confirming.join_all().await;

    let mut orders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (key, body) in shop.store.applied("order") {
        orders
            .entry(body["cartId"].as_str().unwrap_or_default().to_string())
            .or_default()
            .insert(key.id);
    }
    for cart in &carts {
        let placed = orders.get(cart).cloned().unwrap_or_default();
        seed.check(
            placed.len() <= 1,
            format!("cart {cart} has {} orders: {placed:?}", placed.len()),
        );
        let named: BTreeSet<String> = answers
            .iter()
            .filter(|(c, _)| c == cart)
            .filter_map(|(_, a)| {
                a["result"]["structuredContent"]["orderId"]
                    .as_str()
                    .map(String::from)
            })
            .collect();
        let stored: BTreeSet<String> = shop
            .store
            .applied("order")
            .into_iter()
            .filter(|(_, body)| body["cartId"] == cart.as_str())
            .map(|(key, body)| body["orderId"].as_str().map_or(key.id, String::from))
            .collect();
        seed.check(
            named.len() <= 1 && named.is_subset(&stored),
            format!("answers for {cart} name {named:?}, the store holds {stored:?}"),
        );
        if !accepted.contains_key(cart) {
            seed.check(
                placed.is_empty(),
                format!("cart {cart} was only ever declined, yet has {placed:?}"),
            );
        } else {
            seed.check(
                placed.len() == 1,
                format!(
                    "cart {cart} was confirmed {} times and has no order",
                    accepted[cart]
                ),
            );
        }
    }
    for (cart, answer) in &answers {
        seed.check(
            answer.get("error").is_none() || is_retryable(answer),
            format!("a confirmation of {cart} failed: {answer}"),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn checkout_race_on_sqlite() {
    checkout_places_at_most_one_order_per_cart(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn checkout_race_on_dynamodb() {
    checkout_places_at_most_one_order_per_cart(Backend::Dynamo).await;
}

/// Carts: many concurrent adds to one cart on both instances are all counted, or refused with an
/// error that says it is retryable (never -32603 for contention).
async fn concurrent_adds_are_counted_or_refused_as_retryable(kind: Backend) {
    const ADDS: usize = 24;
    let seed = Seed::from_env(&format!("cart race on {kind:?}"));
    let shop = Arc::new(shop(kind, seed).await);
    let token = shop.token("bob");
    let cart = shop
        .call(0, &token, "cart_create", json!({ "arguments": {} }))
        .await["result"]["structuredContent"]["cartId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut rng: Rng = seed.rng(3);
    let mut adding = tokio::task::JoinSet::new();
    for _ in 0..ADDS {
        let (shop, token, cart, instance) = (
            shop.clone(),
            token.clone(),
            cart.clone(),
            rng.below(2) as usize,
        );
        adding.spawn(async move {
            let params =
                json!({ "arguments": { "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 } });
            shop.call(instance, &token, "cart_add_item", params).await
        });
    }
    let answers = adding.join_all().await;
    let counted = answers
        .iter()
        .filter(|a| a["result"]["isError"] == false)
        .count();
    for answer in answers.iter().filter(|a| a["result"]["isError"] != false) {
        seed.check(
            is_retryable(answer),
            format!("an add failed without saying it is retryable: {answer}"),
        );
    }
    let view = shop
        .call(
            0,
            &token,
            "cart_view",
            json!({ "arguments": { "cartId": cart } }),
        )
        .await;
    let quantity = view["result"]["structuredContent"]["lines"][0]["quantity"]
        .as_u64()
        .unwrap_or(0);
    seed.check(
        quantity as usize == counted,
        format!("{counted} adds answered success, the cart holds {quantity}"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cart_race_on_sqlite() {
    concurrent_adds_are_counted_or_refused_as_retryable(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cart_race_on_dynamodb() {
    concurrent_adds_are_counted_or_refused_as_retryable(Backend::Dynamo).await;
}

/// Retries of creates and adds with one idempotency key, at once on both instances: one cart,
/// one note, one add; every answer names the same record; the key with other arguments is refused.
async fn retries_with_one_key_take_effect_once(kind: Backend) {
    let seed = Seed::from_env(&format!("idempotency key race on {kind:?}"));
    let shop = Arc::new(shop(kind, seed).await);
    let token = dev_token(
        &shop.issuer,
        "acme",
        "cleo",
        &["shop", "notes:write", "notes:read"],
    );
    let mut rng: Rng = seed.rng(5);
    let mut racing = tokio::task::JoinSet::new();
    for racer in 0..12 {
        let (shop, token, instance) = (shop.clone(), token.clone(), rng.below(2) as usize);
        racing.spawn(async move {
            let (name, arguments) = if racer % 2 == 0 {
                ("cart_create", json!({ "idempotencyKey": "retry-cart" }))
            } else {
                (
                    "note_create",
                    json!({ "text": "remember", "idempotencyKey": "retry-note" }),
                )
            };
            (
                name,
                shop.call(instance, &token, name, json!({ "arguments": arguments }))
                    .await,
            )
        });
    }
    let answers = racing.join_all().await;
    for (name, field) in [("cart_create", "cartId"), ("note_create", "noteId")] {
        let named: BTreeSet<String> = answers
            .iter()
            .filter(|(n, _)| *n == name)
            .filter_map(|(_, a)| {
                a["result"]["structuredContent"][field]
                    .as_str()
                    .map(String::from)
            })
            .collect();
        seed.check(
            named.len() == 1,
            format!("{name} with one key named {named:?}: {answers:?}"),
        );
        let kind = if name == "cart_create" {
            "cart"
        } else {
            "note"
        };
        let created = shop
            .store
            .applied(kind)
            .into_iter()
            .filter(|(key, _)| named.contains(&key.id))
            .count();
        seed.check(
            created == 1,
            format!("{name} with one key wrote {created} records"),
        );
    }
    let other =
        json!({ "arguments": { "text": "something else", "idempotencyKey": "retry-note" } });
    let refused = shop.call(0, &token, "note_create", other).await;
    seed.check(
        refused["result"]["isError"] == true,
        format!("the key with other arguments: {refused}"),
    );

    let cart = answers
        .iter()
        .find_map(|(_, a)| a["result"]["structuredContent"]["cartId"].as_str())
        .unwrap();
    let mut adding = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (shop, token, instance) = (shop.clone(), token.clone(), rng.below(2) as usize);
        let params = json!({ "arguments": { "cartId": cart, "sku": "MUG-CER-300", "quantity": 1, "idempotencyKey": "add-1" } });
        adding.spawn(async move { shop.call(instance, &token, "cart_add_item", params).await });
    }
    for answer in adding.join_all().await {
        seed.check(
            answer["result"]["isError"] == false || is_retryable(&answer),
            format!("an add answered {answer}"),
        );
    }
    let view = shop
        .call(
            0,
            &token,
            "cart_view",
            json!({ "arguments": { "cartId": cart } }),
        )
        .await;
    let quantity = view["result"]["structuredContent"]["lines"][0]["quantity"]
        .as_u64()
        .unwrap_or(0);
    seed.check(
        quantity == 1,
        format!("eight adds with one key added {quantity}"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotency_key_race_on_sqlite() {
    retries_with_one_key_take_effect_once(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotency_key_race_on_dynamodb() {
    retries_with_one_key_take_effect_once(Backend::Dynamo).await;
}

/// A store whose process dies right after its `die_after`-th write: that write is applied, and
/// every later call fails, as a killed function makes no more calls.
struct Dying {
    inner: Arc<RaceStore<Both>>,
    die_after: usize,
    writes: std::sync::atomic::AtomicUsize,
}

impl Dying {
    fn dead(&self) -> bool {
        self.writes.load(std::sync::atomic::Ordering::SeqCst) >= self.die_after
    }

    fn wrote(&self) {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

fn killed() -> relevo_state::StoreError {
    relevo_state::StoreError::Unavailable("the process was killed".into())
}

impl RecordStore for Dying {
    fn create<'a>(
        &'a self,
        key: &'a relevo_state::RecordKey,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> relevo_state::StoreFuture<'a, relevo_state::Record> {
        Box::pin(async move {
            if self.dead() {
                return Err(killed());
            }
            let result = self.inner.create(key, body, expires_at, now).await;
            self.wrote();
            result
        })
    }
    fn get<'a>(
        &'a self,
        key: &'a relevo_state::RecordKey,
        now: u64,
    ) -> relevo_state::StoreFuture<'a, Option<relevo_state::Record>> {
        Box::pin(async move {
            if self.dead() {
                Err(killed())
            } else {
                self.inner.get(key, now).await
            }
        })
    }
    fn update<'a>(
        &'a self,
        key: &'a relevo_state::RecordKey,
        expected: u64,
        body: &'a Value,
        now: u64,
    ) -> relevo_state::StoreFuture<'a, relevo_state::Record> {
        Box::pin(async move {
            if self.dead() {
                return Err(killed());
            }
            let result = self.inner.update(key, expected, body, now).await;
            self.wrote();
            result
        })
    }
    fn transact<'a>(
        &'a self,
        writes: &'a [relevo_state::records::Write],
        now: u64,
    ) -> relevo_state::records::TransactFuture<'a> {
        Box::pin(async move {
            if self.dead() {
                return Err(killed().into());
            }
            let result = self.inner.transact(writes, now).await;
            self.wrote();
            result
        })
    }
    fn count_up_by<'a>(
        &'a self,
        key: &'a relevo_state::RecordKey,
        units: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> relevo_state::StoreFuture<'a, Option<u32>> {
        Box::pin(async move {
            if self.dead() {
                return Err(killed());
            }
            let result = self
                .inner
                .count_up_by(key, units, limit, expires_at, now)
                .await;
            self.wrote();
            result
        })
    }
}

/// One shop instance over `store`.
fn instance(
    store: Arc<dyn RecordStore>,
    issuer: &relevo_auth::DevIssuer,
    settings: &relevo_auth::AuthSettings,
) -> axum::Router {
    let keys = Arc::new(relevo_auth::StaticKeySource(issuer.jwks()));
    let auth = relevo_auth::BearerAuthenticator::new(settings.clone(), keys);
    let ports = Ports::new(Some(store));
    let server = McpServer::new(
        relevo_app::features(&ports),
        test_config(),
        test_keys(),
        Arc::new(auth),
    );
    relevo_local::router(
        server,
        relevo_local::GatewayOptions {
            auth: Some(settings.clone()),
            ..gateway_options()
        },
    )
}

async fn tool(router: &axum::Router, token: &str, name: &str, params: Value) -> Value {
    let mut params = params;
    params["name"] = json!(name);
    send(router, rpc_as(Some(token), 1, "tools/call", params))
        .await
        .json()
}

/// A checkout whose function is killed right after each of its writes in turn (cart created, two
/// adds, the checkout's commit), then a new process retries the confirmation it had, and checks
/// out the cart afresh: at most one order for the cart, ever; exactly one once a confirmation
/// got through.
async fn a_crash_after_any_write_of_checkout_leaves_at_most_one_order(kind: Backend) {
    let seed = Seed::from_env(&format!("checkout crashes on {kind:?}"));
    for die_after in 1..=5 {
        let store = Arc::new(RaceStore::new(
            Arc::new(Both(backend(kind).await)),
            seed,
            Duration::ZERO,
        ));
        let (settings, issuer, _) = dev_auth();
        let token = dev_token(&issuer, "acme", "carol", &["shop"]);
        let dying = instance(
            Arc::new(Dying {
                inner: store.clone(),
                die_after,
                writes: Default::default(),
            }),
            &issuer,
            &settings,
        );
        let fresh = instance(store.clone(), &issuer, &settings);

        let created = tool(&dying, &token, "cart_create", json!({ "arguments": {} })).await;
        let Some(cart) = created["result"]["structuredContent"]["cartId"]
            .as_str()
            .map(String::from)
        else {
            continue;
        };
        for sku in ["GRN-BURR-01", "MUG-CER-300"] {
            tool(
                &dying,
                &token,
                "cart_add_item",
                json!({ "arguments": { "cartId": cart, "sku": sku, "quantity": 1 } }),
            )
            .await;
        }
        let quote = tool(
            &dying,
            &token,
            "cart_checkout",
            json!({ "arguments": { "cartId": cart } }),
        )
        .await;
        let state = quote["result"]["requestState"].clone();
        let confirm = |state: Value| json!({ "arguments": { "cartId": cart }, "inputResponses": accept(), "requestState": state });
        if state.is_string() {
            tool(&dying, &token, "cart_checkout", confirm(state.clone())).await;
        }
        // The new process: the client retries what it had, then checks out afresh.
        let mut named = BTreeSet::new();
        if state.is_string() {
            let retried = tool(&fresh, &token, "cart_checkout", confirm(state.clone())).await;
            named.extend(
                retried["result"]["structuredContent"]["orderId"]
                    .as_str()
                    .map(String::from),
            );
        }
        let again = tool(
            &fresh,
            &token,
            "cart_checkout",
            json!({ "arguments": { "cartId": cart } }),
        )
        .await;
        if again["result"]["requestState"].is_string() {
            let confirmed = tool(
                &fresh,
                &token,
                "cart_checkout",
                confirm(again["result"]["requestState"].clone()),
            )
            .await;
            named.extend(
                confirmed["result"]["structuredContent"]["orderId"]
                    .as_str()
                    .map(String::from),
            );
        }
        let orders: Vec<_> = store
            .applied("order")
            .into_iter()
            .filter(|(_, body)| body["cartId"] == cart.as_str())
            .collect();
        seed.check(
            orders.len() <= 1,
            format!(
                "killed after write {die_after}: cart {cart} has {} orders",
                orders.len()
            ),
        );
        seed.check(
            named.len() <= 1,
            format!("killed after write {die_after}: answers name {named:?}"),
        );
        let has_items = store.applied("cart").iter().any(|(key, body)| {
            key.id == cart && body["lines"].as_array().is_some_and(|l| !l.is_empty())
        });
        if has_items {
            seed.check(
                orders.len() == 1,
                format!("killed after write {die_after}: the retried checkout placed no order"),
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_crashes_on_sqlite() {
    a_crash_after_any_write_of_checkout_leaves_at_most_one_order(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_crashes_on_dynamodb() {
    a_crash_after_any_write_of_checkout_leaves_at_most_one_order(Backend::Dynamo).await;
}

/// The queue the job races do not need (the runs are driven directly): sends are accepted.
struct NoQueue;

impl relevo_state::Queue for NoQueue {
    fn send<'a>(&'a self, _: &'a str) -> relevo_state::StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }
    fn receive<'a>(
        &'a self,
        _: usize,
        _: u64,
        _: u64,
    ) -> relevo_state::StoreFuture<'a, Vec<relevo_state::QueueMessage>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn delete<'a>(&'a self, _: &'a str) -> relevo_state::StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }
    fn change_visibility<'a>(
        &'a self,
        _: &'a str,
        _: u64,
        _: u64,
    ) -> relevo_state::StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }
}

/// A runner that counts its runs and takes `millis`.
struct Slow {
    runs: std::sync::atomic::AtomicUsize,
    millis: u64,
}

impl relevo_state::JobRunner for Slow {
    fn run<'a>(
        &'a self,
        _: &'a relevo_state::JobContext,
    ) -> relevo_state::work::BoxFuture<'a, Result<Value, relevo_state::JobFailure>> {
        Box::pin(async move {
            self.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(self.millis)).await;
            Ok(json!({ "done": true }))
        })
    }
}

/// Two engines (two workers, two front ends) over one raced store, running `runner`.
async fn engines(
    kind: Backend,
    seed: Seed,
    runner: Arc<Slow>,
    lease_secs: u64,
) -> (Arc<RaceStore<Both>>, Vec<Arc<relevo_state::Worker>>) {
    let store = Arc::new(RaceStore::new(
        Arc::new(Both(backend(kind).await)),
        seed,
        Duration::from_millis(2),
    ));
    let config = relevo_state::EngineConfig {
        lease_secs,
        ..Default::default()
    };
    let engines = (0..2)
        .map(|_| {
            let engine = relevo_state::Worker::new(Arc::new(relevo_state::Engine::new(
                store.clone(),
                Arc::new(NoQueue),
                Arc::new(relevo_state::SystemClock),
                Arc::new(relevo_state::RandomIds),
                config.clone(),
            )))
            .runner("slow", runner.clone());
            Arc::new(engine)
        })
        .collect();
    (store, engines)
}

/// Jobs: concurrent starts with one operation key, on both engines, make one job.
async fn one_operation_key_makes_one_job(kind: Backend) {
    let seed = Seed::from_env(&format!("job start race on {kind:?}"));
    let runner = Arc::new(Slow {
        runs: Default::default(),
        millis: 0,
    });
    let (store, engines) = engines(kind, seed, runner, 30).await;
    let mut starting = tokio::task::JoinSet::new();
    for i in 0..12 {
        let engine = engines[i % 2].clone();
        starting.spawn(async move {
            engine
                .start("acme", "dan", "slow", Some("nightly"), json!({ "day": 1 }))
                .await
                .map(|j| j.job.id)
        });
    }
    let ids: BTreeSet<String> = starting
        .join_all()
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    seed.check(
        ids.len() == 1,
        format!("one operation key gave jobs {ids:?}"),
    );
    let created = store
        .history()
        .into_iter()
        .filter(|w| w.call == "create_job" && w.applied)
        .count();
    seed.check(
        created == 1,
        format!("{created} jobs were created for one operation key"),
    );
}

/// Jobs: cancellation racing the run and a second worker ends in exactly one terminal state,
/// which every reader sees; the job ran at most once.
async fn cancel_racing_completion_ends_in_one_terminal_state(kind: Backend) {
    let seed = Seed::from_env(&format!("cancel race on {kind:?}"));
    let mut rng = seed.rng(4);
    let runner = Arc::new(Slow {
        runs: Default::default(),
        millis: 20,
    });
    let (store, engines) = engines(kind, seed, runner.clone(), 30).await;
    for round in 0..6 {
        let job = engines[0]
            .start("acme", "erin", "slow", None, json!({ "round": round }))
            .await
            .unwrap()
            .job;
        let mut racing = tokio::task::JoinSet::new();
        for racer in 0..4 {
            let (engine, job, wait) = (engines[racer % 2].clone(), job.clone(), rng.below(30));
            racing.spawn(async move {
                tokio::time::sleep(Duration::from_millis(wait)).await;
                if racer < 2 {
                    let _ = engine.process(&job).await;
                } else {
                    let _ = engine.cancel(&job).await;
                }
            });
        }
        racing.join_all().await;
        // A run the cancel interrupted may leave it running until a worker looks again.
        let _ = engines[1].process(&job).await;
        let statuses = read_statuses(&engines, &job).await;
        seed.check(
            statuses.len() == 1,
            format!("round {round}: readers see {statuses:?}"),
        );
        let status = statuses.iter().next().cloned().unwrap_or_default();
        seed.check(
            ["succeeded", "cancelled"].contains(&status.as_str()),
            format!("round {round}: ended {status}"),
        );
        let terminal = store
            .history()
            .into_iter()
            .filter(|w| w.applied && w.call == "put_job")
            .filter(|w| {
                w.writes.iter().any(|(key, body)| {
                    key.id == job.id
                        && ["succeeded", "cancelled", "failed"]
                            .contains(&body["status"].as_str().unwrap_or(""))
                })
            })
            .count();
        seed.check(
            terminal == 1,
            format!("round {round}: {terminal} terminal writes"),
        );
    }
    let runs = runner.runs.load(std::sync::atomic::Ordering::SeqCst);
    seed.check(runs <= 6, format!("{runs} runs for 6 jobs"));
}

async fn read_statuses(
    engines: &[Arc<relevo_state::Worker>],
    job: &relevo_state::JobRef,
) -> BTreeSet<String> {
    let mut statuses = BTreeSet::new();
    for engine in engines {
        if let Some(found) = engine.store.get_job(job).await.unwrap() {
            statuses.insert(found.status.as_str().to_string());
        }
    }
    statuses
}

/// Leases: a run twice as long as its lease renews it, so a second worker that looks while it
/// runs finds it busy; the job runs once.
async fn a_run_longer_than_its_lease_is_claimed_once(kind: Backend) {
    let seed = Seed::from_env(&format!("lease race on {kind:?}"));
    // A lease of three seconds, renewed every second. The clock counts whole seconds, so a lease
    // holds at least two seconds after each renewal: a renewal slowed by a loaded machine (the
    // emulator answering in hundreds of milliseconds) still lands in time, where a two-second
    // lease (at least one second) let a second worker claim the job while the first ran.
    let runner = Arc::new(Slow {
        runs: Default::default(),
        millis: 7_000,
    });
    let (_, engines) = engines(kind, seed, runner.clone(), 3).await;
    let job = engines[0]
        .start("acme", "fay", "slow", None, json!({}))
        .await
        .unwrap()
        .job;
    let first = {
        let (engine, job) = (engines[0].clone(), job.clone());
        tokio::spawn(async move { engine.process(&job).await })
    };
    // Four looks, about a second apart, all well before the run's seven seconds end.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        let second = engines[1].process(&job).await;
        seed.check(
            matches!(second, Err(relevo_state::WorkError::Busy)),
            format!("a second worker got {second:?} while the first ran"),
        );
    }
    let finished = first.await.unwrap();
    seed.check(
        finished
            == Ok(relevo_state::Processed::Finished(
                relevo_state::JobStatus::Succeeded,
            )),
        format!("{finished:?}"),
    );
    let runs = runner.runs.load(std::sync::atomic::Ordering::SeqCst);
    seed.check(
        runs == 1,
        format!("a run longer than its lease ran {runs} times"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_races_on_sqlite() {
    one_operation_key_makes_one_job(Backend::Sqlite).await;
    cancel_racing_completion_ends_in_one_terminal_state(Backend::Sqlite).await;
    a_run_longer_than_its_lease_is_claimed_once(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_races_on_dynamodb() {
    one_operation_key_makes_one_job(Backend::Dynamo).await;
    cancel_racing_completion_ends_in_one_terminal_state(Backend::Dynamo).await;
    a_run_longer_than_its_lease_is_claimed_once(Backend::Dynamo).await;
}
