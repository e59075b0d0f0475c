//! One answer per elicitation round, on the SQLite store and on DynamoDB (moto): a checkout's
//! round answered "decline" cannot be replayed as "accept" (and the other way round), on either
//! of two instances, one after the other or at the same time; the same answer again gets the
//! same result; and twenty concurrent confirmations of one quote on one instance all answer the
//! one order.
//!
//! Seeded pauses before every store call (`relevo_tests::race`); a failure names the seed
//! (`RELEVO_RACE_SEED=… cargo test` replays it). Bounded: a handful of calls per scenario.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use relevo_tests::race::{Backend, Both, RaceStore, Seed, backend};
use relevo_tests::*;
use serde_json::{Value, json};

/// Two shop instances over one raced store (the deployment's store: round answers live there).
struct Shop {
    store: Arc<RaceStore<Both>>,
    instances: Vec<axum::Router>,
    issuer: relevo_auth::DevIssuer,
}

async fn shop(kind: Backend, seed: Seed, instances: usize) -> Shop {
    let inner = Arc::new(Both(backend(kind).await));
    let store = Arc::new(RaceStore::new(inner, seed, Duration::from_millis(3)));
    let (instances, issuer) = shop_instances(store.clone(), instances, test_config(), true);
    Shop {
        store,
        instances,
        issuer,
    }
}

impl Shop {
    fn token(&self) -> String {
        dev_token(&self.issuer, "acme", "alice", &["shop"])
    }

    async fn call(&self, instance: usize, name: &str, params: Value) -> Value {
        let mut params = params;
        params["name"] = json!(name);
        let router = &self.instances[instance % self.instances.len()];
        send(router, rpc_as(Some(&self.token()), 1, "tools/call", params))
            .await
            .json()
    }

    /// A cart with two grinders, and its quote: (cart id, requestState).
    async fn quoted_cart(&self) -> (String, Value) {
        let cart = self
            .call(0, "cart_create", json!({ "arguments": {} }))
            .await;
        let cart_id = cart["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string();
        let add =
            json!({ "arguments": { "cartId": cart_id, "sku": "GRN-BURR-01", "quantity": 2 } });
        let added = self.call(1, "cart_add_item", add).await;
        assert_eq!(added["result"]["isError"], false, "{added}");
        let quote = self
            .call(
                0,
                "cart_checkout",
                json!({ "arguments": { "cartId": cart_id } }),
            )
            .await;
        assert_eq!(quote["result"]["resultType"], "input_required", "{quote}");
        (cart_id, quote["result"]["requestState"].clone())
    }

    async fn answer(&self, instance: usize, cart_id: &str, state: &Value, answer: Value) -> Value {
        let params = json!({ "arguments": { "cartId": cart_id }, "inputResponses": answer, "requestState": state });
        self.call(instance, "cart_checkout", params).await
    }

    /// The orders the store holds for `cart_id`.
    fn orders(&self, cart_id: &str) -> BTreeSet<String> {
        self.store
            .applied("order")
            .into_iter()
            .filter(|(_, body)| body["cartId"] == cart_id)
            .map(|(key, body)| body["orderId"].as_str().map_or(key.id, String::from))
            .collect()
    }
}

fn accept() -> Value {
    json!({ "confirm": { "action": "accept", "content": { "confirm": true } } })
}

fn decline() -> Value {
    json!({ "confirm": { "action": "decline" } })
}

fn status(answer: &Value) -> &str {
    answer["result"]["structuredContent"]["status"]
        .as_str()
        .unwrap_or_default()
}

fn order_id(answer: &Value) -> Option<String> {
    answer["result"]["structuredContent"]["orderId"]
        .as_str()
        .map(String::from)
}

/// Refused as a replay of an answered round: a clear JSON-RPC error, not -32603.
fn refused_as_answered(answer: &Value) -> bool {
    answer["error"]["code"] == -32602
        && answer["error"]["data"]["reason"] == "round_already_answered"
}

async fn a_declined_round_cannot_be_replayed_as_accept(kind: Backend) {
    let seed = Seed::from_env(&format!("decline then accept on {kind:?}"));
    let shop = shop(kind, seed, 2).await;
    let (cart, state) = shop.quoted_cart().await;
    let declined = shop.answer(0, &cart, &state, decline()).await;
    seed.check(
        status(&declined) == "cancelled",
        format!("the decline cancels: {declined}"),
    );
    let replayed = shop.answer(1, &cart, &state, accept()).await;
    seed.check(
        refused_as_answered(&replayed),
        format!("the accept replayed after a decline is refused: {replayed}"),
    );
    seed.check(
        shop.orders(&cart).is_empty(),
        format!("no order after a decline: {:?}", shop.orders(&cart)),
    );
    let again = shop.answer(1, &cart, &state, decline()).await;
    seed.check(
        status(&again) == "cancelled",
        format!("the same decline again gets the same answer: {again}"),
    );
}

async fn an_accepted_round_cannot_be_replayed_as_decline(kind: Backend) {
    let seed = Seed::from_env(&format!("accept then decline on {kind:?}"));
    let shop = shop(kind, seed, 2).await;
    let (cart, state) = shop.quoted_cart().await;
    let accepted = shop.answer(0, &cart, &state, accept()).await;
    let order = order_id(&accepted);
    seed.check(
        status(&accepted) == "ordered" && order.is_some(),
        format!("the accept orders: {accepted}"),
    );
    let replayed = shop.answer(1, &cart, &state, decline()).await;
    seed.check(
        refused_as_answered(&replayed),
        format!("the decline replayed after an accept is refused: {replayed}"),
    );
    let orders = shop.orders(&cart);
    seed.check(
        orders.len() == 1 && order.as_ref().is_some_and(|o| orders.contains(o)),
        format!("the order stands: {orders:?}"),
    );
}

async fn the_same_answer_twice_gets_the_same_result(kind: Backend) {
    let seed = Seed::from_env(&format!("accept twice on {kind:?}"));
    let shop = shop(kind, seed, 2).await;
    let (cart, state) = shop.quoted_cart().await;
    let first = shop.answer(0, &cart, &state, accept()).await;
    let second = shop.answer(1, &cart, &state, accept()).await;
    seed.check(
        order_id(&first).is_some(),
        format!("the first accept orders: {first}"),
    );
    seed.check(
        first["result"]["structuredContent"] == second["result"]["structuredContent"],
        format!("the second accept answers the same order: {first} / {second}"),
    );
    seed.check(
        shop.orders(&cart).len() == 1,
        format!("one order: {:?}", shop.orders(&cart)),
    );
}

/// An accept and a decline of one round at the same time, on two instances: exactly one decision
/// wins, the other is refused, and there is an order exactly when the accept won.
async fn accept_and_decline_at_once_make_one_decision(kind: Backend) {
    let seed = Seed::from_env(&format!("accept and decline at once on {kind:?}"));
    let shop = Arc::new(shop(kind, seed, 2).await);
    let (cart, state) = shop.quoted_cart().await;
    let mut answering = tokio::task::JoinSet::new();
    for (instance, answer) in [(0, accept()), (1, decline())] {
        let (shop, cart, state) = (shop.clone(), cart.clone(), state.clone());
        answering.spawn(async move {
            (
                answer.clone(),
                shop.answer(instance, &cart, &state, answer).await,
            )
        });
    }
    let answers = answering.join_all().await;
    let accepted = answers
        .iter()
        .find(|(a, _)| *a == accept())
        .map(|(_, r)| r.clone())
        .unwrap();
    let declined = answers
        .iter()
        .find(|(a, _)| *a == decline())
        .map(|(_, r)| r.clone())
        .unwrap();
    let orders = shop.orders(&cart);
    let accept_won = status(&accepted) == "ordered";
    let decline_won = status(&declined) == "cancelled";
    seed.check(
        accept_won != decline_won,
        format!("exactly one decision wins: {accepted} / {declined}"),
    );
    if accept_won {
        seed.check(
            refused_as_answered(&declined),
            format!("the decline lost and is refused: {declined}"),
        );
        seed.check(
            orders.len() == 1 && order_id(&accepted).is_some_and(|o| orders.contains(&o)),
            format!("the accept's order is the one order: {orders:?}"),
        );
    } else {
        seed.check(
            refused_as_answered(&accepted),
            format!("the accept lost and is refused: {accepted}"),
        );
        seed.check(
            orders.is_empty(),
            format!("the decline won: no order, yet {orders:?}"),
        );
    }
}

/// Twenty confirmations of one quote at once on one instance: every one answers the one order
/// (a confirmation that finds the round recorded answers that order; one that finds it still
/// running is told `round_in_progress`, retryable, and its retry answers the order).
async fn twenty_confirmations_of_one_quote_all_answer_the_one_order(kind: Backend) {
    const CONFIRMATIONS: usize = 20;
    let seed = Seed::from_env(&format!("twenty confirmations on {kind:?}"));
    let shop = Arc::new(shop(kind, seed, 1).await);
    let (cart, state) = shop.quoted_cart().await;
    let mut confirming = tokio::task::JoinSet::new();
    for _ in 0..CONFIRMATIONS {
        let (shop, cart, state) = (shop.clone(), cart.clone(), state.clone());
        confirming.spawn(async move {
            let mut answer = shop.answer(0, &cart, &state, accept()).await;
            for _ in 0..100 {
                if answer["error"]["data"]["reason"] != "round_in_progress" {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                answer = shop.answer(0, &cart, &state, accept()).await;
            }
            answer
        });
    }
    let answers = confirming.join_all().await;
    let orders = shop.orders(&cart);
    seed.check(orders.len() == 1, format!("one order: {orders:?}"));
    for answer in &answers {
        seed.check(
            status(answer) == "ordered" && order_id(answer).is_some_and(|o| orders.contains(&o)),
            format!("a confirmation did not answer the order {orders:?}: {answer}"),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_declined_round_cannot_be_replayed_as_accept_on_sqlite() {
    a_declined_round_cannot_be_replayed_as_accept(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_declined_round_cannot_be_replayed_as_accept_on_dynamodb() {
    a_declined_round_cannot_be_replayed_as_accept(Backend::Dynamo).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_accepted_round_cannot_be_replayed_as_decline_on_sqlite() {
    an_accepted_round_cannot_be_replayed_as_decline(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_accepted_round_cannot_be_replayed_as_decline_on_dynamodb() {
    an_accepted_round_cannot_be_replayed_as_decline(Backend::Dynamo).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_answer_twice_gets_the_same_result_on_sqlite() {
    the_same_answer_twice_gets_the_same_result(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_answer_twice_gets_the_same_result_on_dynamodb() {
    the_same_answer_twice_gets_the_same_result(Backend::Dynamo).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn accept_and_decline_at_once_make_one_decision_on_sqlite() {
    accept_and_decline_at_once_make_one_decision(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn accept_and_decline_at_once_make_one_decision_on_dynamodb() {
    accept_and_decline_at_once_make_one_decision(Backend::Dynamo).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_confirmations_of_one_quote_all_answer_the_one_order_on_sqlite() {
    twenty_confirmations_of_one_quote_all_answer_the_one_order(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_confirmations_of_one_quote_all_answer_the_one_order_on_dynamodb() {
    twenty_confirmations_of_one_quote_all_answer_the_one_order(Backend::Dynamo).await;
}
