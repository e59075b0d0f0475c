//! The race harness through local Lambda mode: many clients over HTTP against the stack of
//! `template.yaml`, `tools-call` with three execution environments (separate processes, as Lambda
//! runs them), DynamoDB on the moto emulator that `make test` starts. The invariants are checked
//! against what the table holds afterwards (a scan of it, not the functions' word), and against
//! every answer.
//!
//! - Checkout: carts quoted several times, every quote confirmed twice at once: one order per
//!   cart, the cart's mark names it, and every answer that names an order names that one.
//! - Carts: concurrent adds are all counted, or refused with a retryable error that says so.
//! - Crashes: `tools-call` killed (SIGKILL, by the AWS proxy) right after each write of a
//!   confirmation, before it hears the answer; the client retries, and later checks out again:
//!   never a second order.
//!
//! The schedules are the clients' (seeded with `RELEVO_RACE_SEED` like the in-process harness,
//! printed on failure); the interleaving inside is the environments'. Bounded: fixed counts, every
//! wait has a deadline.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// The run's seed: `RELEVO_RACE_SEED`, or one from the clock.
fn seed(test: &str) -> u64 {
    let seed = std::env::var("RELEVO_RACE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
    eprintln!("{test}: race seed {seed} (replay: RELEVO_RACE_SEED={seed})");
    seed
}

/// A small deterministic shuffle source (splitmix64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// Orders in the table, by cart.
async fn orders_by_cart(lambda: &LambdaMode) -> BTreeMap<String, Vec<String>> {
    let mut orders: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, body) in records_of_kind(lambda, "order").await {
        let cart = body["cartId"].as_str().unwrap_or_default().to_string();
        orders
            .entry(cart)
            .or_default()
            .push(body["orderId"].as_str().unwrap_or_default().to_string());
    }
    orders
}

/// The order id a cart's record says it was checked out with.
async fn cart_marks(lambda: &LambdaMode) -> BTreeMap<String, String> {
    records_of_kind(lambda, "cart")
        .await
        .into_iter()
        .filter_map(|(key, body)| {
            let cart = key.rsplit_once(':').map(|(_, id)| id.to_string())?;
            Some((cart, body["orderId"].as_str()?.to_string()))
        })
        .collect()
}

async fn cart_with_item(http: &reqwest::Client, lambda: &LambdaMode) -> String {
    let created = rpc(http, &lambda.url, &lambda.token, "cart_create", json!({})).await;
    let cart = created["result"]["structuredContent"]["cartId"]
        .as_str()
        .unwrap()
        .to_string();
    let item = json!({ "cartId": cart, "sku": "GRN-BURR-01", "quantity": 2 });
    let added = rpc(http, &lambda.url, &lambda.token, "cart_add_item", item).await;
    assert_eq!(added["result"]["isError"], false, "{added}");
    cart
}

/// A `cart_checkout` call (from a client that can answer elicitation) with these params,
/// answered as JSON (an HTTP failure as its status).
async fn checkout_at(http: &reqwest::Client, url: &str, token: &str, params: Value) -> Value {
    let mut params = params;
    params["name"] = json!("cart_checkout");
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({ "elicitation": {} });
    let response = mcp_request(http, url, token, "tools/call", params)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    response
        .json::<Value>()
        .await
        .unwrap_or_else(|_| json!({ "httpStatus": status }))
}

async fn checkout(http: &reqwest::Client, lambda: &LambdaMode, params: Value) -> Value {
    checkout_at(http, &lambda.url, &lambda.token, params).await
}

fn confirmation(cart: &str, state: &Value) -> Value {
    json!({ "arguments": { "cartId": cart },
        "inputResponses": { "confirm": { "action": "accept", "content": { "confirm": true } } },
        "requestState": state })
}

fn named_order(answer: &Value) -> Option<String> {
    answer["result"]["structuredContent"]["orderId"]
        .as_str()
        .map(String::from)
}

#[tokio::test(flavor = "multi_thread")]
async fn checkout_and_cart_races_across_environments_keep_one_order_per_cart_and_count_every_add() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let seed = seed("lambda checkout race");
    let mut rng = Rng(seed);
    let lambda = start_lambda_mode("races", &translated(), &["--environments", "3"], &[]).await;
    let http = reqwest::Client::new();
    let check = |holds: bool, what: String| {
        assert!(
            holds,
            "invariant broken with RELEVO_RACE_SEED={seed}: {what}"
        )
    };

    let mut carts = Vec::new();
    for _ in 0..3 {
        carts.push(cart_with_item(&http, &lambda).await);
    }
    let mut quoting = tokio::task::JoinSet::new();
    for cart in &carts {
        for _ in 0..3 {
            let (http, cart, lambda_url) = (http.clone(), cart.clone(), lambda.url.clone());
            let token = lambda.token.clone();
            quoting.spawn(async move {
                let answer = checkout_at(
                    &http,
                    &lambda_url,
                    &token,
                    json!({ "arguments": { "cartId": cart } }),
                )
                .await;
                (cart, answer["result"]["requestState"].clone())
            });
        }
    }
    let quotes = quoting.join_all().await;
    let mut confirming = tokio::task::JoinSet::new();
    for (cart, state) in quotes {
        check(
            state.is_string(),
            format!("round one of {cart} gave a requestState"),
        );
        for _ in 0..2 {
            let (http, cart, state, wait) =
                (http.clone(), cart.clone(), state.clone(), rng.below(40));
            let (url, token) = (lambda.url.clone(), lambda.token.clone());
            confirming.spawn(async move {
                tokio::time::sleep(Duration::from_millis(wait)).await;
                let answer = checkout_at(&http, &url, &token, confirmation(&cart, &state)).await;
                (cart, answer)
            });
        }
    }
    let answers = confirming.join_all().await;
    let (orders, marks) = (orders_by_cart(&lambda).await, cart_marks(&lambda).await);
    for cart in &carts {
        let placed = orders.get(cart).cloned().unwrap_or_default();
        check(
            placed.len() == 1,
            format!("cart {cart} has orders {placed:?} in the table"),
        );
        check(
            marks.get(cart) == placed.first(),
            format!(
                "cart {cart} is marked {:?}, holds {placed:?}",
                marks.get(cart)
            ),
        );
        for (_, answer) in answers.iter().filter(|(c, _)| c == cart) {
            let named = named_order(answer);
            check(
                named.is_none() || named.as_ref() == placed.first(),
                format!("an answer names {named:?}, the table holds {placed:?}: {answer}"),
            );
            check(
                answer.get("error").is_none() || answer["error"]["data"]["retryable"] == true,
                format!("a confirmation failed: {answer}"),
            );
        }
    }

    // Concurrent adds to one cart: each counted, or refused as retryable.
    let cart = cart_with_item(&http, &lambda).await;
    let mut adding = tokio::task::JoinSet::new();
    for _ in 0..12 {
        let (http, cart, wait) = (http.clone(), cart.clone(), rng.below(30));
        let (url, token) = (lambda.url.clone(), lambda.token.clone());
        adding.spawn(async move {
            tokio::time::sleep(Duration::from_millis(wait)).await;
            rpc(
                &http,
                &url,
                &token,
                "cart_add_item",
                json!({ "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 }),
            )
            .await
        });
    }
    let added = adding.join_all().await;
    let counted = added
        .iter()
        .filter(|a| a["result"]["isError"] == false)
        .count();
    for answer in added.iter().filter(|a| a["result"]["isError"] != false) {
        check(
            answer["error"]["data"]["retryable"] == true,
            format!("an add failed without saying retry: {answer}"),
        );
    }
    let view = rpc(
        &http,
        &lambda.url,
        &lambda.token,
        "cart_view",
        json!({ "cartId": cart }),
    )
    .await;
    let mugs = view["result"]["structuredContent"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["sku"] == "MUG-CER-300")
        .map(|l| l["quantity"].as_u64().unwrap())
        .sum::<u64>();
    check(
        mugs == counted as u64,
        format!("{counted} adds answered success, the cart holds {mugs} mugs: {view}"),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_call_killed_after_each_write_of_a_confirmation_never_places_a_second_order() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("crashes", &translated(), &[], &[]).await;
    let http = reqwest::Client::new();
    let proxy = stack_of(&lambda)["awsProxy"].as_str().unwrap().to_string();
    let mut kills = 0;
    // Write 1 of a call is the tenant quota's count (the template's default quota): 2..=4 are the
    // confirmation's first three.
    for after in 1..=4 {
        let cart = cart_with_item(&http, &lambda).await;
        let quote = checkout(&http, &lambda, json!({ "arguments": { "cartId": cart } })).await;
        let state = quote["result"]["requestState"].clone();
        assert!(state.is_string(), "{quote}");
        let armed = http
            .post(format!(
                "{proxy}/_relevo/kill?function=ToolsCallFunction&after={after}"
            ))
            .send();
        assert_eq!(armed.await.unwrap().status(), 204);
        let first = checkout(&http, &lambda, confirmation(&cart, &state)).await;
        let killed = named_order(&first).is_none();
        kills += usize::from(killed);
        let disarm = http
            .post(format!(
                "{proxy}/_relevo/kill?function=ToolsCallFunction&after=0"
            ))
            .send();
        assert_eq!(disarm.await.unwrap().status(), 204);

        // The client retries the same confirmation until it is answered (a new environment
        // starts after the kill), then checks out again from the start. A round the killed run
        // had claimed never runs again: it answers "in progress" (retryable) until the claim's
        // lease ends (the killed invocation's deadline: `tools-call`'s 120 s timeout), then
        // `round_interrupted`; a client that has retried for a while gives up on it and checks
        // out anew, as this one does after 20 s.
        let deadline = Instant::now() + Duration::from_secs(20);
        let retried = loop {
            let answer = checkout(&http, &lambda, confirmation(&cart, &state)).await;
            if named_order(&answer).is_some() {
                break Some(answer);
            }
            let reason = &answer["error"]["data"]["reason"];
            if reason == "round_interrupted" {
                break None;
            }
            if Instant::now() >= deadline {
                assert_eq!(
                    reason, "round_in_progress",
                    "after {after}: the retry was never answered: {answer}"
                );
                break None;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        let mut named = retried.as_ref().and_then(named_order);
        let again = checkout(&http, &lambda, json!({ "arguments": { "cartId": cart } })).await;
        if again["result"]["requestState"].is_string() {
            let second = checkout(
                &http,
                &lambda,
                confirmation(&cart, &again["result"]["requestState"]),
            )
            .await;
            assert!(
                named.is_none() || named_order(&second).is_none() || named_order(&second) == named,
                "after {after}: a fresh checkout placed another order: {second}"
            );
            named = named.or_else(|| named_order(&second));
        }
        let orders = orders_by_cart(&lambda)
            .await
            .remove(&cart)
            .unwrap_or_default();
        assert_eq!(
            orders.len(),
            1,
            "after a kill after write {after}: orders {orders:?}"
        );
        if let Some(named) = &named {
            assert_eq!(&orders[0], named, "the answers name the one order");
        }
        assert_eq!(
            cart_marks(&lambda).await.get(&cart),
            Some(&orders[0]),
            "the cart is marked with it"
        );
        let ids: BTreeSet<&String> = orders.iter().collect();
        assert_eq!(ids.len(), 1);
    }
    assert!(
        kills >= 1,
        "the confirmation's write was killed at least once"
    );
}
