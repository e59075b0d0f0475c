//! Writes whose answer was lost, through local Lambda mode: the function binaries of
//! `template.yaml` against DynamoDB on the moto emulator, with the AWS proxy's faults behind the
//! store (not in front of it, where a write the caller gave up on never lands):
//!
//! - a late answer: the store applies the write at once and its answer comes after the SDK's
//!   attempt timeout, so the SDK sends the same conditional write again, which fails its condition
//!   against the first attempt's own write. That echo is the call's success: no second unit in the
//!   cart, no internal error for a cart that was made.
//! - a stall behind the store: it holds a write it already received and applies it after the
//!   caller was told it timed out. The answer says the outcome is unknown; a retry with the same
//!   `idempotencyKey` converges to one cart.
//! - a function whose init fails (its keys secret gone) fails the call at once (502), as Lambda
//!   and API Gateway do, instead of holding it until the integration timeout.
//!
//! What the table holds is read from the table (a scan), not taken from the functions' word.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// The storage keys of every record of `kind` in the stack's table.
async fn keys_of_kind(lambda: &LambdaMode, kind: &str) -> Vec<String> {
    records_of_kind(lambda, kind)
        .await
        .into_iter()
        .map(|(key, _)| key)
        .collect()
}

/// Arms a fault of the AWS proxy: `mode` (`late`, `behind`) for `secs` on the cart's writes.
async fn fault(http: &reqwest::Client, lambda: &LambdaMode, mode: &str, secs: u64) {
    let proxy = stack_of(lambda)["awsProxy"].as_str().unwrap().to_string();
    let url = format!(
        "{proxy}/_relevo/stall?secs={secs}&mode={mode}&actions=dynamodb:PutItem&match=k4:cart"
    );
    assert_eq!(http.post(url).send().await.unwrap().status(), 204);
}

/// The proxy holds the answer to the add's write 3 s, past the SDK's 2 s attempt timeout: the SDK
/// sends the same write again and it fails its condition against the first attempt's own write.
/// The add answers ok and the cart holds one unit, not two.
#[tokio::test(flavor = "multi_thread")]
async fn an_add_whose_answer_came_late_adds_one_unit_and_answers_ok() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("late-add", &translated(), &[], &[]).await;
    let http = reqwest::Client::new();
    let created = rpc(&http, &lambda.url, &lambda.token, "cart_create", json!({})).await;
    let cart = created["result"]["structuredContent"]["cartId"]
        .as_str()
        .unwrap()
        .to_string();

    fault(&http, &lambda, "late", 3).await;
    let started = Instant::now();
    let item = json!({ "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 });
    let added = rpc(&http, &lambda.url, &lambda.token, "cart_add_item", item).await;
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the first attempt's answer was held past its timeout"
    );
    assert_eq!(
        added["result"]["isError"], false,
        "the add succeeded and is answered so: {added}"
    );

    let view = rpc(
        &http,
        &lambda.url,
        &lambda.token,
        "cart_view",
        json!({ "cartId": cart }),
    )
    .await;
    let lines = &view["result"]["structuredContent"]["lines"];
    assert_eq!(lines.as_array().map(Vec::len), Some(1), "{view}");
    assert_eq!(
        lines[0]["quantity"], 1,
        "one add, one unit (the echo of the first attempt is not a second add): {view}"
    );
}

/// The answer to the create's write comes 3 s late: the SDK's second attempt finds the record the
/// first one made. The call answers that cart (not -32603), and the table holds exactly one cart.
#[tokio::test(flavor = "multi_thread")]
async fn a_create_whose_answer_came_late_answers_the_cart_and_makes_exactly_one() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("late-create", &translated(), &[], &[]).await;
    let http = reqwest::Client::new();

    fault(&http, &lambda, "late", 3).await;
    let started = Instant::now();
    let created = rpc(&http, &lambda.url, &lambda.token, "cart_create", json!({})).await;
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the first attempt's answer was held past its timeout"
    );
    assert!(
        created.get("error").is_none(),
        "the cart was made and is answered: {created}"
    );
    let cart = created["result"]["structuredContent"]["cartId"]
        .as_str()
        .unwrap()
        .to_string();

    let carts = keys_of_kind(&lambda, "cart").await;
    assert_eq!(carts.len(), 1, "one cart in the table: {carts:?}");
    assert!(
        carts[0].ends_with(&format!(":{cart}")),
        "it is the one answered ({cart}): {carts:?}"
    );
    let view = rpc(
        &http,
        &lambda.url,
        &lambda.token,
        "cart_view",
        json!({ "cartId": cart }),
    )
    .await;
    assert_eq!(
        view["result"]["structuredContent"]["lines"],
        json!([]),
        "{view}"
    );
}

/// The store holds the create's write 8 s after receiving it, then applies it: the caller, told at
/// its SDK's operation timeout, hears that the outcome is unknown and that a retry with the same
/// key is safe. The write lands afterwards; the retry with the same key answers that same cart,
/// and the table holds exactly one.
#[tokio::test(flavor = "multi_thread")]
async fn a_create_stalled_behind_the_store_says_the_outcome_is_unknown_and_a_keyed_retry_makes_one_cart()
 {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("behind", &translated(), &[], &[]).await;
    let http = reqwest::Client::new();

    fault(&http, &lambda, "behind", 8).await;
    let stalled = Instant::now();
    let arguments = json!({ "idempotencyKey": "cart-for-the-echo-test" });
    let params = json!({ "name": "cart_create", "arguments": arguments });
    let answer = mcp_request(&http, &lambda.url, &lambda.token, "tools/call", params)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 503, "a retryable failure");
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["code"], -31000, "{body}");
    assert_eq!(body["error"]["data"]["reason"], "store_timeout", "{body}");
    assert_eq!(
        body["error"]["data"]["outcome"], "unknown",
        "a timeout cannot promise nothing was written: {body}"
    );
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("outcome is unknown") && message.contains("same idempotencyKey"),
        "{message}"
    );
    assert!(
        stalled.elapsed() < Duration::from_secs(8),
        "answered before the store applied the write"
    );

    // The store applies what it held; then the client retries with the same key.
    tokio::time::sleep(
        Duration::from_secs(8).saturating_sub(stalled.elapsed()) + Duration::from_secs(1),
    )
    .await;
    let landed = keys_of_kind(&lambda, "cart").await;
    assert_eq!(
        landed.len(),
        1,
        "the write the caller was told timed out landed: {landed:?}"
    );
    let retried = rpc(
        &http,
        &lambda.url,
        &lambda.token,
        "cart_create",
        arguments.clone(),
    )
    .await;
    assert!(retried.get("error").is_none(), "{retried}");
    let cart = retried["result"]["structuredContent"]["cartId"]
        .as_str()
        .unwrap()
        .to_string();
    let again = rpc(&http, &lambda.url, &lambda.token, "cart_create", arguments).await;
    assert_eq!(
        again["result"]["structuredContent"]["cartId"],
        cart.as_str(),
        "{again}"
    );
    let carts = keys_of_kind(&lambda, "cart").await;
    assert_eq!(
        carts, landed,
        "the retries converge on the cart that landed: one effect"
    );
    assert!(carts[0].ends_with(&format!(":{cart}")), "{carts:?} {cart}");
}

/// `tools-call` loses its keys secret and is started again (its processes killed): its init fails
/// and it exits. A call to it is answered 502 within seconds, as Lambda fails the invoke of an
/// environment that cannot start, not held until the front door's integration timeout.
#[tokio::test(flavor = "multi_thread")]
async fn a_function_that_fails_its_init_fails_the_call_at_once_with_502() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("init-error", &translated(), &[], &[]).await;
    let http = reqwest::Client::new();
    let created = rpc(&http, &lambda.url, &lambda.token, "cart_create", json!({})).await;
    assert!(
        created["result"]["structuredContent"]["cartId"].is_string(),
        "{created}"
    );

    // The secret the functions read at init (from the AWS proxy's call log), deleted.
    let secret = lambda
        .decisions()
        .into_iter()
        .find(|d| d.action == "secretsmanager:GetSecretValue" && d.allowed)
        .map(|d| d.resource)
        .expect("the functions read their keys secret at init");
    let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT").unwrap();
    let secrets =
        aws_sdk_secretsmanager::Client::new(&relevo_aws::emulator_config(&endpoint).await);
    secrets
        .delete_secret()
        .secret_id(&secret)
        .force_delete_without_recovery(true)
        .send()
        .await
        .unwrap();
    for entry in std::fs::read_dir(lambda.dir.join("pids"))
        .unwrap()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with("ToolsCallFunction") && name.ends_with(".pid") {
            kill(&entry.path()); // every execution environment of tools-call
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    let started = Instant::now();
    let params = json!({ "name": "cart_create", "arguments": {} });
    let answer = mcp_request(&http, &lambda.url, &lambda.token, "tools/call", params)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(
        answer.status(),
        502,
        "the invoke failed, as API Gateway answers a function that cannot start"
    );
    assert!(
        waited < Duration::from_secs(10),
        "failed at once, not at the integration timeout: {waited:?}"
    );
}
