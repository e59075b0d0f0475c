//! One answer per elicitation round through local Lambda mode: `tools-call` in three execution
//! environments (separate processes) over DynamoDB on moto. A checkout round answered "decline"
//! and replayed as "accept" is refused (`-32602 round_already_answered`) and places no order; an
//! accept and a decline of one round at once make one decision. Checked against the table (a scan
//! of it), not the functions' word. Bounded: a handful of calls.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::*;
use serde_json::{Value, json};

/// Every record of `kind` in the stack's table.
async fn records(lambda: &LambdaMode, kind: &str) -> Vec<Value> {
    records_of_kind(lambda, kind)
        .await
        .into_iter()
        .map(|(_, body)| body)
        .collect()
}

async fn orders_of(lambda: &LambdaMode, cart: &str) -> Vec<Value> {
    records(lambda, "order")
        .await
        .into_iter()
        .filter(|o| o["cartId"] == cart)
        .collect()
}

async fn quoted_cart(http: &reqwest::Client, lambda: &LambdaMode) -> (String, Value) {
    let created = rpc(http, &lambda.url, &lambda.token, "cart_create", json!({})).await;
    let cart = created["result"]["structuredContent"]["cartId"]
        .as_str()
        .unwrap()
        .to_string();
    let item = json!({ "cartId": cart, "sku": "GRN-BURR-01", "quantity": 2 });
    let added = rpc(http, &lambda.url, &lambda.token, "cart_add_item", item).await;
    assert_eq!(added["result"]["isError"], false, "{added}");
    let quote = checkout(http, lambda, json!({ "arguments": { "cartId": cart } })).await;
    assert_eq!(quote["result"]["resultType"], "input_required", "{quote}");
    (cart, quote["result"]["requestState"].clone())
}

async fn checkout(http: &reqwest::Client, lambda: &LambdaMode, params: Value) -> Value {
    let mut params = params;
    params["name"] = json!("cart_checkout");
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({ "elicitation": {} });
    let response = mcp_request(http, &lambda.url, &lambda.token, "tools/call", params)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    response
        .json::<Value>()
        .await
        .unwrap_or_else(|_| json!({ "httpStatus": status }))
}

fn answered(cart: &str, state: &Value, answer: Value) -> Value {
    json!({ "arguments": { "cartId": cart }, "inputResponses": { "confirm": answer }, "requestState": state })
}

fn accept() -> Value {
    json!({ "action": "accept", "content": { "confirm": true } })
}

fn decline() -> Value {
    json!({ "action": "decline" })
}

fn refused_as_answered(answer: &Value) -> bool {
    answer["error"]["code"] == -32602
        && answer["error"]["data"]["reason"] == "round_already_answered"
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declined_round_replayed_as_accept_across_environments_is_refused_and_orders_nothing() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("answers", &translated(), &["--environments", "3"], &[]).await;
    let http = reqwest::Client::new();

    let (cart, state) = quoted_cart(&http, &lambda).await;
    let declined = checkout(&http, &lambda, answered(&cart, &state, decline())).await;
    assert_eq!(
        declined["result"]["structuredContent"]["status"], "cancelled",
        "{declined}"
    );
    for _ in 0..3 {
        // Three tries: the environments take turns, so each is likely to see one.
        let replayed = checkout(&http, &lambda, answered(&cart, &state, accept())).await;
        assert!(
            refused_as_answered(&replayed),
            "the accept after a decline is refused: {replayed}"
        );
    }
    assert!(
        orders_of(&lambda, &cart).await.is_empty(),
        "no order after a decline"
    );

    // An accept and a decline of one round at once: one decision, at most one order.
    let (cart, state) = quoted_cart(&http, &lambda).await;
    let (yes, no) = tokio::join!(
        checkout(&http, &lambda, answered(&cart, &state, accept())),
        checkout(&http, &lambda, answered(&cart, &state, decline())),
    );
    let orders = orders_of(&lambda, &cart).await;
    let accept_won = yes["result"]["structuredContent"]["status"] == "ordered";
    let decline_won = no["result"]["structuredContent"]["status"] == "cancelled";
    assert!(
        accept_won != decline_won,
        "exactly one decision wins: {yes} / {no}"
    );
    if accept_won {
        assert!(refused_as_answered(&no), "{no}");
        assert_eq!(orders.len(), 1, "{orders:?}");
        assert_eq!(
            orders[0]["orderId"],
            yes["result"]["structuredContent"]["orderId"]
        );
    } else {
        assert!(refused_as_answered(&yes), "{yes}");
        assert!(orders.is_empty(), "{orders:?}");
    }
}
