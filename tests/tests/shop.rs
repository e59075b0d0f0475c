//! The shop over HTTP: checkout confirmed through MRTR elicitation with a sealed requestState.
//! Replays (sequential and concurrent) give one order; declining gives none; any tampering,
//! another principal or tenant, other arguments, or an expired state are refused and change nothing.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_protocol::Ports;
use relevo_protocol::{ManualClock, McpServer, ServerConfig};
use relevo_tests::*;
use serde_json::{Value, json};

const NOW: u64 = 1_900_000_000;

struct Shop {
    router: axum::Router,
    issuer: relevo_auth::DevIssuer,
    clock: ManualClock,
}

fn shop() -> Shop {
    let (settings, issuer, auth) = dev_auth();
    let ports = Ports::new(Some(Arc::new(SqliteStore::in_memory().unwrap())));
    let clock = ManualClock::at(NOW);
    let config = ServerConfig {
        listen_max_secs: 1,
        ..ServerConfig::default()
    };
    let server = McpServer::new(
        relevo_app::features(&ports),
        config,
        test_keys(),
        Arc::new(auth),
    )
    .with_clock(Arc::new(clock.clone()));
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    Shop {
        router: relevo_local::router(server, options),
        issuer,
        clock,
    }
}

impl Shop {
    fn token(&self, tenant: &str, subject: &str) -> String {
        dev_token(&self.issuer, tenant, subject, &["shop"])
    }

    async fn call(&self, token: &str, name: &str, extra: Value) -> Value {
        let mut params = json!({ "name": name });
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        send(&self.router, rpc_as(Some(token), 1, "tools/call", params))
            .await
            .json()
    }

    /// A cart with 2 grinders and a mug ($192.79), and the first checkout round.
    async fn quoted_cart(&self, token: &str) -> (String, Value) {
        let cart = self
            .call(token, "cart_create", json!({ "arguments": {} }))
            .await;
        let cart_id = cart["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string();
        for (sku, quantity) in [("GRN-BURR-01", 2), ("MUG-CER-300", 1)] {
            let added = self
                .call(
                    token,
                    "cart_add_item",
                    json!({ "arguments": { "cartId": cart_id, "sku": sku, "quantity": quantity } }),
                )
                .await;
            assert_eq!(added["result"]["isError"], false, "{added}");
        }
        let first = self
            .call(
                token,
                "cart_checkout",
                json!({ "arguments": { "cartId": cart_id } }),
            )
            .await;
        (cart_id, first["result"].clone())
    }
}

fn accept() -> Value {
    json!({ "confirm": { "action": "accept", "content": { "confirm": true } } })
}

#[tokio::test]
async fn checkout_asks_for_the_exact_total_and_a_confirmation_places_one_order() {
    let shop = shop();
    let alice = shop.token("acme", "alice");
    let (cart_id, round1) = shop.quoted_cart(&alice).await;
    assert_eq!(round1["resultType"], "input_required");
    let message = round1["inputRequests"]["confirm"]["params"]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("$192.79"), "{message}");
    let state = round1["requestState"].clone();

    let retry = json!({ "arguments": { "cartId": cart_id }, "inputResponses": accept(), "requestState": state });
    let first =
        shop.call(&alice, "cart_checkout", retry.clone()).await["result"]["structuredContent"]
            .clone();
    assert_eq!(first["status"], "ordered");
    assert_eq!(first["totalCents"], 19279);

    let again =
        shop.call(&alice, "cart_checkout", retry.clone()).await["result"]["structuredContent"]
            .clone();
    assert_eq!(
        again["orderId"], first["orderId"],
        "a replayed confirmation returns the first order"
    );

    let mut racers = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (router, token, retry) = (shop.router.clone(), alice.clone(), retry.clone());
        racers.spawn(async move {
            let mut params = retry;
            params["name"] = json!("cart_checkout");
            send(&router, rpc_as(Some(&token), 1, "tools/call", params))
                .await
                .json()["result"]["structuredContent"]["orderId"]
                .clone()
        });
    }
    for order in racers.join_all().await {
        assert_eq!(
            order, first["orderId"],
            "concurrent replays find the one order"
        );
    }
    let cart = shop
        .call(
            &alice,
            "cart_view",
            json!({ "arguments": { "cartId": cart_id } }),
        )
        .await;
    assert_eq!(cart["result"]["structuredContent"]["checkedOut"], true);
    let fresh = shop
        .call(
            &alice,
            "cart_checkout",
            json!({ "arguments": { "cartId": cart_id } }),
        )
        .await;
    assert_eq!(
        fresh["result"]["isError"], true,
        "a checked-out cart cannot be checked out again: {fresh}"
    );
}

#[tokio::test]
async fn declining_places_no_order() {
    let shop = shop();
    let alice = shop.token("acme", "alice");
    let (cart_id, round1) = shop.quoted_cart(&alice).await;
    for answer in [
        json!({ "confirm": { "action": "decline" } }),
        json!({ "confirm": { "action": "cancel" } }),
    ] {
        let retry = json!({ "arguments": { "cartId": cart_id }, "inputResponses": answer, "requestState": round1["requestState"] });
        assert_eq!(
            shop.call(&alice, "cart_checkout", retry).await["result"]["structuredContent"]["status"],
            "cancelled"
        );
    }
    let cart = shop
        .call(
            &alice,
            "cart_view",
            json!({ "arguments": { "cartId": cart_id } }),
        )
        .await;
    assert_eq!(cart["result"]["structuredContent"]["checkedOut"], false);
}

#[tokio::test]
async fn tampered_foreign_changed_or_expired_state_is_refused_and_changes_nothing() {
    let shop = shop();
    let alice = shop.token("acme", "alice");
    let (cart_id, round1) = shop.quoted_cart(&alice).await;
    let state = round1["requestState"].as_str().unwrap().to_string();
    let refused = |reply: &Value, case: &str| {
        assert_eq!(reply["error"]["code"], -32602, "{case}: {reply}");
        assert_eq!(
            reply["error"]["data"]["reason"], "invalid_request_state",
            "{case}"
        );
    };
    let confirm_with = |state: &str, cart: &str| json!({ "arguments": { "cartId": cart }, "inputResponses": accept(), "requestState": state });

    // every character of the token, changed
    for index in 0..state.len() {
        let mut bytes = state.clone().into_bytes();
        bytes[index] = if bytes[index] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        if tampered == state {
            continue;
        }
        refused(
            &shop
                .call(&alice, "cart_checkout", confirm_with(&tampered, &cart_id))
                .await,
            &format!("byte {index}"),
        );
    }
    refused(
        &shop
            .call(
                &alice,
                "cart_checkout",
                confirm_with(&state[..state.len() - 3], &cart_id),
            )
            .await,
        "truncated",
    );
    refused(
        &shop
            .call(
                &alice,
                "cart_checkout",
                confirm_with(&format!("{state}xyz"), &cart_id),
            )
            .await,
        "extended",
    );

    // another principal, another tenant, other arguments
    refused(
        &shop
            .call(
                &shop.token("acme", "bob"),
                "cart_checkout",
                confirm_with(&state, &cart_id),
            )
            .await,
        "other principal",
    );
    refused(
        &shop
            .call(
                &shop.token("globex", "alice"),
                "cart_checkout",
                confirm_with(&state, &cart_id),
            )
            .await,
        "other tenant",
    );
    let (other_cart, _) = shop.quoted_cart(&alice).await;
    refused(
        &shop
            .call(&alice, "cart_checkout", confirm_with(&state, &other_cart))
            .await,
        "other arguments",
    );
    refused(
        &shop
            .call(&alice, "cart_view", confirm_with(&state, &cart_id))
            .await,
        "other tool",
    );

    // nothing changed: the cart is still open
    let cart = shop
        .call(
            &alice,
            "cart_view",
            json!({ "arguments": { "cartId": cart_id } }),
        )
        .await;
    assert_eq!(cart["result"]["structuredContent"]["checkedOut"], false);

    // past expiry
    shop.clock
        .advance(ServerConfig::default().request_state_ttl_secs + 1);
    refused(
        &shop
            .call(&alice, "cart_checkout", confirm_with(&state, &cart_id))
            .await,
        "expired",
    );
}

#[tokio::test]
async fn a_cart_changed_after_the_quote_is_quoted_again() {
    let shop = shop();
    let alice = shop.token("acme", "alice");
    let (cart_id, round1) = shop.quoted_cart(&alice).await;
    shop.call(
        &alice,
        "cart_add_item",
        json!({ "arguments": { "cartId": cart_id, "sku": "MUG-CER-300", "quantity": 1 } }),
    )
    .await;
    let retry = json!({ "arguments": { "cartId": cart_id }, "inputResponses": accept(), "requestState": round1["requestState"] });
    let requote = shop.call(&alice, "cart_checkout", retry).await["result"].clone();
    assert_eq!(requote["resultType"], "input_required");
    assert!(
        requote["inputRequests"]["confirm"]["params"]["message"]
            .as_str()
            .unwrap()
            .contains("$205.78")
    );
}

#[tokio::test]
async fn cache_policy_is_declared_and_mutations_announce_invalidation() {
    let shop = shop();
    let alice = shop.token("acme", "alice");
    let tools = send(
        &shop.router,
        rpc_as(Some(&alice), 1, "tools/list", json!({})),
    )
    .await
    .json()["result"]["tools"]
        .clone();
    let description = |name: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["description"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(description("catalog_list").ends_with("[Cache-Control: immutable]"));
    assert!(description("cart_view").ends_with("[Cache-Control: no-store]"));

    let cart = shop
        .call(&alice, "cart_create", json!({ "arguments": {} }))
        .await;
    assert_eq!(
        cart["result"]["content"][0]["text"],
        "<cache_invalidation cause=\"cart_create\" domains=\"cart.*\"/>"
    );
    let bad = shop
        .call(
            &alice,
            "cart_add_item",
            json!({ "arguments": { "cartId": "nope", "sku": "MUG-CER-300", "quantity": 1 } }),
        )
        .await;
    assert_eq!(bad["result"]["isError"], true);
    assert!(
        !bad["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("<cache_invalidation"),
        "only on success"
    );
}

#[tokio::test]
async fn a_listener_hears_of_changes_to_its_own_subscribed_cart_only_then_the_stream_ends() {
    let shop = shop();
    let (alice, bob) = (shop.token("acme", "alice"), shop.token("acme", "bob"));
    let cart = |reply: Value| {
        reply["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let alices = cart(
        shop.call(&alice, "cart_create", json!({ "arguments": {} }))
            .await,
    );
    let bobs = cart(
        shop.call(&bob, "cart_create", json!({ "arguments": {} }))
            .await,
    );

    let filter = json!({ "notifications": { "resourceSubscriptions": [format!("carts://{alices}"), format!("carts://{bobs}")], "toolsListChanged": true } });
    let listening = tokio::spawn({
        let (router, alice) = (shop.router.clone(), alice.clone());
        async move {
            send(
                &router,
                rpc_as(Some(&alice), 77, "subscriptions/listen", filter),
            )
            .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for (token, id) in [(&alice, &alices), (&bob, &bobs)] {
        shop.call(
            token,
            "cart_add_item",
            json!({ "arguments": { "cartId": id, "sku": "MUG-CER-300", "quantity": 1 } }),
        )
        .await;
    }
    let stream = listening.await.unwrap();
    let messages = stream.sse_messages();
    assert_eq!(
        messages[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({ "resourceSubscriptions": [format!("carts://{alices}")] }),
        "only the honoured subset: bob's cart reads as missing to alice, and is not watched"
    );
    let updates: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/resources/updated")
        .collect();
    assert_eq!(
        updates.len(),
        1,
        "bob's cart is not alice's to hear about: {messages:?}"
    );
    assert_eq!(updates[0]["params"]["uri"], format!("carts://{alices}"));
    assert_eq!(
        updates[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        77
    );
    let last = messages.last().unwrap();
    assert_eq!(
        (last["id"].clone(), last["result"]["resultType"].clone()),
        (json!(77), json!("complete")),
        "ended gracefully with the listen result"
    );
}
