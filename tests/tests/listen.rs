//! `subscriptions/listen` across instances: two shop servers over one store, as two Lambda
//! environments share the table. A listener on one hears changes made on the other (its stream
//! polls what it subscribed to), once per change, only for what it may read; when the store
//! cannot be read, the stream ends with the listen result instead of going quiet. Local Lambda
//! mode runs the same through real function environments (`infra/gateway/tests/lambda_mode.rs`).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use relevo_embedded::SqliteStore;
use relevo_protocol::ServerConfig;
use relevo_state::records::{TransactFuture, Write};
use relevo_state::{Record, RecordKey, RecordStore, StoreError, StoreFuture};
use relevo_tests::*;
use serde_json::{Value, json};

/// The shared store, with a switch that makes every read fail as an unavailable store would.
struct Switchable {
    inner: SqliteStore,
    down: AtomicBool,
}

impl Switchable {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) { Err(StoreError::Unavailable("switched off".into())) } else { Ok(()) }
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
            self.inner.get(key, now).await
        })
    }
    fn update<'a>(&'a self, key: &'a RecordKey, expected: u64, body: &'a Value, now: u64) -> StoreFuture<'a, Record> {
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
    fn count_up<'a>(
        &'a self,
        key: &'a RecordKey,
        limit: u32,
        expires: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        Box::pin(async move {
            self.check()?;
            self.inner.count_up(key, limit, expires, now).await
        })
    }
}

struct Deployment {
    store: Arc<Switchable>,
    instances: Vec<axum::Router>,
    issuer: relevo_auth::DevIssuer,
}

fn deployment(listen_max_secs: u64) -> Deployment {
    let store = Arc::new(Switchable { inner: SqliteStore::in_memory().unwrap(), down: AtomicBool::new(false) });
    let config = ServerConfig { listen_max_secs, listen_poll_ms: 100, ..ServerConfig::default() };
    let (instances, issuer) = shop_instances(store.clone(), 2, config, false);
    Deployment { store, instances, issuer }
}

impl Deployment {
    fn token(&self, subject: &str) -> String {
        dev_token(&self.issuer, "acme", subject, &["shop"])
    }

    async fn tool(&self, instance: usize, token: &str, name: &str, arguments: Value) -> Value {
        let params = json!({ "name": name, "arguments": arguments });
        send(&self.instances[instance], rpc_as(Some(token), 1, "tools/call", params)).await.json()
    }

    async fn cart(&self, instance: usize, token: &str) -> String {
        let created = self.tool(instance, token, "cart_create", json!({})).await;
        created["result"]["structuredContent"]["cartId"].as_str().unwrap().to_string()
    }

    async fn add(&self, instance: usize, token: &str, cart: &str) {
        let added =
            self.tool(instance, token, "cart_add_item", json!({ "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 }));
        assert_eq!(added.await["result"]["isError"], false);
    }

    fn listen(&self, instance: usize, token: &str, uris: &[String]) -> tokio::task::JoinHandle<Reply> {
        let filter = json!({ "notifications": { "resourceSubscriptions": uris } });
        let (router, request) =
            (self.instances[instance].clone(), rpc_as(Some(token), 42, "subscriptions/listen", filter));
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
async fn a_listener_hears_each_change_once_whichever_instance_made_it_and_only_of_what_it_may_read() {
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
    assert_eq!(messages[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(messages[0]["params"]["notifications"]["resourceSubscriptions"], json!(uris));
    assert_eq!(updates(&messages), vec![uris[0].clone(), uris[0].clone()], "{messages:?}");
    for message in messages.iter().filter(|m| m.get("method").is_some()) {
        assert_eq!(message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 42, "{message}");
    }
    assert_eq!(messages.last().unwrap()["result"]["resultType"], "complete", "ended with the listen result");
}

#[tokio::test]
async fn only_subscriptions_to_readable_resources_are_honoured_and_their_number_is_bounded() {
    let d = deployment(0);
    let alice = d.token("alice");
    let cart = d.cart(0, &alice).await;
    let uris = [format!("carts://{cart}"), "carts://".to_string(), "nowhere://x".to_string()];
    let messages = d.listen(0, &alice, &uris).await.unwrap().sse_messages();
    assert_eq!(messages[0]["params"]["notifications"], json!({ "resourceSubscriptions": [uris[0]] }));

    let many: Vec<String> = (0..=relevo_protocol::MAX_WATCHED).map(|i| format!("carts://c{i}")).collect();
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
    let reply = tokio::time::timeout(Duration::from_secs(10), listening).await.expect("the stream ended").unwrap();
    let messages = reply.sse_messages();
    assert!(down.elapsed() < Duration::from_secs(5), "ended after {:?}, not at listen_max_secs", down.elapsed());
    assert_eq!(messages.last().unwrap()["result"]["resultType"], "complete", "{messages:?}");
    assert!(updates(&messages).is_empty(), "a failed read is not a change: {messages:?}");
}
