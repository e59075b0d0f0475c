//! Keyed writes remember what their key meant, on the SQLite store and on DynamoDB (moto): every
//! tool that takes an idempotency key refuses the key reused with other arguments (a tool
//! execution error that says so, and nothing written), answers the first result for the same
//! arguments, and names what a key creates by its owner too, so two principals choosing the same
//! key get different records with different ids.
//!
//! The export's `operationKey` is checked here over the tool (the job engine's `KeyConflict`, its
//! store behaviour in `jobs_faults.rs`); the inventory's `requestKey` (`KeyMismatch`) in
//! `inventory.rs`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::time::Duration;

use relevo_tests::race::{Backend, Both, RaceStore, Seed, backend};
use relevo_tests::*;
use serde_json::{Value, json};

struct Shop {
    store: Arc<RaceStore<Both>>,
    router: axum::Router,
    issuer: relevo_auth::DevIssuer,
}

async fn shop(kind: Backend) -> Shop {
    let seed = Seed::from_env(&format!("keys on {kind:?}"));
    let store = Arc::new(RaceStore::new(
        Arc::new(Both(backend(kind).await)),
        seed,
        Duration::ZERO,
    ));
    let (mut routers, issuer) = shop_instances(store.clone(), 1, test_config(), false);
    Shop {
        store,
        router: routers.remove(0),
        issuer,
    }
}

impl Shop {
    fn token(&self, subject: &str) -> String {
        dev_token(
            &self.issuer,
            "acme",
            subject,
            &["shop", "notes:write", "notes:read"],
        )
    }

    async fn call(&self, token: &str, name: &str, arguments: Value) -> Value {
        let params = json!({ "name": name, "arguments": arguments });
        send(&self.router, rpc_as(Some(token), 1, "tools/call", params))
            .await
            .json()
    }

    async fn cart(&self, token: &str) -> String {
        let cart = self.call(token, "cart_create", json!({})).await;
        cart["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn lines(&self, token: &str, cart: &str) -> Value {
        let view = self
            .call(token, "cart_view", json!({ "cartId": cart }))
            .await;
        view["result"]["structuredContent"]["lines"].clone()
    }
}

fn quantities(lines: &Value) -> Vec<(String, u64)> {
    lines
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["sku"].as_str().unwrap().to_string(),
                l["quantity"].as_u64().unwrap(),
            )
        })
        .collect()
}

async fn an_add_key_reused_for_another_item_is_refused_and_adds_nothing(kind: Backend) {
    let shop = shop(kind).await;
    let alice = shop.token("alice");
    let cart = shop.cart(&alice).await;
    let add = |sku: &str, quantity: u64| json!({ "cartId": cart, "sku": sku, "quantity": quantity, "idempotencyKey": "add-1" });
    let first = shop
        .call(&alice, "cart_add_item", add("MUG-CER-300", 1))
        .await;
    assert_eq!(first["result"]["isError"], false, "{first}");
    let other_sku = shop
        .call(&alice, "cart_add_item", add("GRN-BURR-01", 1))
        .await;
    assert_eq!(
        other_sku["result"]["isError"], true,
        "the key for another SKU is refused: {other_sku}"
    );
    let text = other_sku["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("add-1") && text.contains("other arguments"),
        "it says why: {text}"
    );
    let other_quantity = shop
        .call(&alice, "cart_add_item", add("MUG-CER-300", 3))
        .await;
    assert_eq!(
        other_quantity["result"]["isError"], true,
        "the key with another quantity is refused: {other_quantity}"
    );
    let retry = shop
        .call(&alice, "cart_add_item", add("MUG-CER-300", 1))
        .await;
    assert_eq!(
        retry["result"]["isError"], false,
        "the same add again answers the cart: {retry}"
    );
    assert_eq!(
        retry["result"]["structuredContent"], first["result"]["structuredContent"],
        "the same answer"
    );
    assert_eq!(
        quantities(&shop.lines(&alice, &cart).await),
        vec![("MUG-CER-300".to_string(), 1)],
        "added once, nothing else"
    );
}

async fn two_principals_choosing_one_key_get_different_records(kind: Backend) {
    let shop = shop(kind).await;
    let (alice, bob) = (shop.token("alice"), shop.token("bob"));
    let cart_of = |answer: &Value| {
        answer["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let alices = shop
        .call(&alice, "cart_create", json!({ "idempotencyKey": "shared" }))
        .await;
    let bobs = shop
        .call(&bob, "cart_create", json!({ "idempotencyKey": "shared" }))
        .await;
    assert_ne!(
        cart_of(&alices),
        cart_of(&bobs),
        "one key, two principals: two cart ids"
    );
    let alices_again = shop
        .call(&alice, "cart_create", json!({ "idempotencyKey": "shared" }))
        .await;
    assert_eq!(
        cart_of(&alices_again),
        cart_of(&alices),
        "a retry by the same principal finds the first cart"
    );

    let note_of = |answer: &Value| {
        answer["result"]["structuredContent"]["noteId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let note = json!({ "text": "remember", "idempotencyKey": "shared" });
    let alices = shop.call(&alice, "note_create", note.clone()).await;
    let bobs = shop.call(&bob, "note_create", note).await;
    assert_ne!(
        note_of(&alices),
        note_of(&bobs),
        "one key, two principals: two note ids"
    );
    let created = shop.store.applied("note").len();
    assert_eq!(created, 2, "two notes written");
}

async fn a_create_key_reused_with_other_arguments_is_refused(kind: Backend) {
    let shop = shop(kind).await;
    let alice = shop.token("alice");
    let first = shop
        .call(
            &alice,
            "note_create",
            json!({ "text": "one", "idempotencyKey": "n-1" }),
        )
        .await;
    assert_eq!(first["result"]["isError"], false, "{first}");
    let other = shop
        .call(
            &alice,
            "note_create",
            json!({ "text": "two", "idempotencyKey": "n-1" }),
        )
        .await;
    assert_eq!(other["result"]["isError"], true, "{other}");
    assert_eq!(shop.store.applied("note").len(), 1, "nothing more written");
}

async fn an_export_key_reused_with_other_arguments_is_refused(kind: Backend) {
    let records = Arc::new(Both(backend(kind).await));
    let queue = Arc::new(relevo_embedded::SqliteQueue::new(
        relevo_embedded::SqliteStore::in_memory().unwrap(),
        10,
    ));
    let jobs = shop_jobs(records, queue, None);
    let (settings, issuer, auth) = dev_auth();
    // The tools reach the engine through the server, as every runner's server has it.
    let server = relevo_protocol::McpServer::new(
        jobs.app.clone(),
        test_config(),
        test_keys(),
        Arc::new(auth),
    )
    .with_tasks(jobs.engine.clone());
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    let router = relevo_local::router(server, options);
    let token = dev_token(&issuer, "acme", "alice", &["exports:write"]);
    let start = |purpose: &str| {
        let arguments =
            json!({ "dataset": "orders", "purpose": purpose, "operationKey": "audit-1" });
        rpc_as(
            Some(&token),
            1,
            "tools/call",
            json!({ "name": "export_start", "arguments": arguments }),
        )
    };
    let first = send(&router, start("audit")).await.json();
    assert_eq!(first["result"]["isError"], false, "{first}");
    let again = send(&router, start("audit")).await.json();
    assert_eq!(
        again["result"]["structuredContent"]["jobId"],
        first["result"]["structuredContent"]["jobId"],
        "{again}"
    );
    let other = send(&router, start("something else")).await.json();
    assert_eq!(
        other["result"]["isError"], true,
        "the key with other arguments is refused: {other}"
    );
    let text = other["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("audit-1") && text.contains("different arguments"),
        "it says why: {text}"
    );
}

#[tokio::test]
async fn an_export_key_reused_with_other_arguments_is_refused_on_sqlite() {
    an_export_key_reused_with_other_arguments_is_refused(Backend::Sqlite).await;
}

#[tokio::test]
async fn an_export_key_reused_with_other_arguments_is_refused_on_dynamodb() {
    an_export_key_reused_with_other_arguments_is_refused(Backend::Dynamo).await;
}

#[tokio::test]
async fn an_add_key_reused_for_another_item_is_refused_and_adds_nothing_on_sqlite() {
    an_add_key_reused_for_another_item_is_refused_and_adds_nothing(Backend::Sqlite).await;
}

#[tokio::test]
async fn an_add_key_reused_for_another_item_is_refused_and_adds_nothing_on_dynamodb() {
    an_add_key_reused_for_another_item_is_refused_and_adds_nothing(Backend::Dynamo).await;
}

#[tokio::test]
async fn two_principals_choosing_one_key_get_different_records_on_sqlite() {
    two_principals_choosing_one_key_get_different_records(Backend::Sqlite).await;
}

#[tokio::test]
async fn two_principals_choosing_one_key_get_different_records_on_dynamodb() {
    two_principals_choosing_one_key_get_different_records(Backend::Dynamo).await;
}

#[tokio::test]
async fn a_create_key_reused_with_other_arguments_is_refused_on_sqlite() {
    a_create_key_reused_with_other_arguments_is_refused(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_create_key_reused_with_other_arguments_is_refused_on_dynamodb() {
    a_create_key_reused_with_other_arguments_is_refused(Backend::Dynamo).await;
}
