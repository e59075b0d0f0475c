//! Local Lambda mode: the stack of `template.yaml` (its SAM translation) with the real function
//! binaries under the local Runtime API, DynamoDB, SQS and the keys secret on the moto emulator
//! that `make test` starts (these tests fail, on purpose, without it), each function calling it
//! under its own execution policy. Every run's call log must show no refused call.
//!
//! - Under fault: the worker is killed (SIGKILL) mid-export; the event source mapping redelivers
//!   the message after the queue's visibility timeout, a fresh worker resumes from the last
//!   checkpoint, and the export completes whole.
//! - Response streaming: progress frames leave `tools-call` while the tool still counts.
//! - API Gateway's limits, its integration timeout and its idle timeout of streamed answers, and
//!   the keep-alives that hold a quiet stream open.
//! - Front door B: the HTTP API with payload 2.0 events.
//! - Least privilege: the template with one permission removed fails the call that needs it.
//!
//! Bounded: every wait has a deadline; every process is killed when its test ends.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_worker_mid_export_loses_nothing() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let env = [
        ("RELEVO_EXPORT_WINDOW_MS", "300"),
        ("RELEVO_LEASE_SECS", "3"),
    ];
    let lambda = start_lambda_mode("kill", &translated(), &QUICK_REDELIVERY, &env).await;
    let (http, url, token, dir) = (
        reqwest::Client::new(),
        &lambda.url,
        &lambda.token,
        &lambda.dir,
    );

    let started = rpc(
        &http,
        url,
        token,
        "export_start",
        json!({ "dataset": "customers", "purpose": "kill test" }),
    )
    .await;
    let job = started["result"]["structuredContent"]["jobId"]
        .as_str()
        .unwrap()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status =
            rpc(&http, url, token, "export_status", json!({ "jobId": job })).await["result"]["structuredContent"]
                .clone();
        let rows = status["rowsExported"].as_u64().unwrap_or(0);
        if rows > 0 {
            assert!(rows < 240, "the kill must come mid-export: {status}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the export never started: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kill(&dir.join("pids").join("WorkerFunction.pid"));

    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status =
            rpc(&http, url, token, "export_status", json!({ "jobId": job })).await["result"]["structuredContent"]
                .clone();
        if status["status"] == "succeeded" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the export did not finish after the worker was killed: {status}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let result =
        rpc(&http, url, token, "export_result", json!({ "jobId": job })).await["result"]["structuredContent"].clone();
    let ids: Vec<String> = result["csv"]
        .as_str()
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect();
    assert_eq!(
        ids,
        (0..240).map(|i| i.to_string()).collect::<Vec<_>>(),
        "every row once, in order"
    );
}

/// `tools-call` runs with response streaming (its REST integration has `ResponseTransferMode:
/// RESPONSE_STREAM` in the template): progress frames leave the function through the Runtime API
/// and the front door while the tool is still counting, not all at the end.
#[tokio::test(flavor = "multi_thread")]
async fn tools_call_progress_streams_through_the_runtime_api() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("stream", &translated(), &[], &[]).await;
    let params =
        json!({ "name": "count", "arguments": { "to": 20 }, "_meta": { "progressToken": "p" } });
    let mut response = mcp_request(
        &reqwest::Client::new(),
        &lambda.url,
        &lambda.token,
        "tools/call",
        params,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut chunks = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        chunks.push(String::from_utf8(chunk.to_vec()).unwrap());
    }
    assert!(
        chunks[0].contains("notifications/progress"),
        "the first chunk is progress: {:?}",
        chunks[0]
    );
    assert!(
        !chunks[0].contains("\"result\""),
        "the first chunk came before the tool finished: {chunks:?}"
    );
    let all = chunks.concat();
    assert_eq!(all.matches("notifications/progress").count(), 20, "{all}");
    let last = all.trim_end().rsplit("data: ").next().unwrap();
    let result: Value = serde_json::from_str(last.trim()).unwrap();
    assert_eq!(
        result["result"]["structuredContent"],
        json!({ "counted": 20 }),
        "{all}"
    );
}

/// What API Gateway and Lambda answer themselves: a request over 10 MB is refused at the door
/// (413), an event over Lambda's 6 MB invocation limit is refused by Lambda (500), a Lambda's
/// `WWW-Authenticate` reaches the client remapped by REST.
#[tokio::test(flavor = "multi_thread")]
async fn api_gateway_answers_its_own_limits_and_remaps_headers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("limits", &translated(), &[], &[]).await;
    let http = reqwest::Client::new();
    let post = |size: usize| {
        http.post(&lambda.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(vec![b' '; size])
            .send()
    };
    let too_large = post(11 * 1024 * 1024).await.unwrap();
    assert_eq!(too_large.status(), 413);
    let over_lambda = post(7 * 1024 * 1024).await.unwrap();
    assert_eq!(over_lambda.status(), 500);
    assert_eq!(
        over_lambda.json::<Value>().await.unwrap(),
        json!({ "message": "Internal server error" })
    );
    let unauthenticated = post(2).await.unwrap();
    assert_eq!(unauthenticated.status(), 401);
    assert!(unauthenticated.headers().get("www-authenticate").is_none());
    let challenge = unauthenticated.headers()["x-amzn-remapped-www-authenticate"]
        .to_str()
        .unwrap();
    assert!(challenge.contains("resource_metadata="), "{challenge}");
}

/// The template with `tools-call` buffered behind a 100 ms integration timeout: a tool call of at
/// least 200 ms (twenty steps of 10 ms) is answered 504 by the front door, as API Gateway answers
/// it, while the function runs on (Lambda does not stop it).
#[tokio::test(flavor = "multi_thread")]
async fn an_integration_timeout_answers_504_while_the_function_runs_on() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut template: Value =
        serde_json::from_str(&std::fs::read_to_string(translated()).unwrap()).unwrap();
    let resources = &mut template["Resources"];
    let integration = &mut resources["ToolsCallApi"]["Properties"]["Body"]["paths"]["/mcp"]["Fn::If"]
        [1]["x-amazon-apigateway-any-method"]["Fn::If"][1]["x-amazon-apigateway-integration"];
    integration
        .as_object_mut()
        .unwrap()
        .remove("responseTransferMode");
    integration["timeoutInMillis"] = json!(100);
    resources["ToolsCallFunction"]["Properties"]["Environment"]["Variables"]
        .as_object_mut()
        .unwrap()
        .remove("RELEVO_RESPONSE_STREAMING");
    let dir = std::env::temp_dir().join(format!("relevo-timeout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("template.json"), template.to_string()).unwrap();

    let lambda = start_lambda_mode("timeout", &dir.join("template.json"), &[], &[]).await;
    let started = Instant::now();
    let params = json!({ "name": "count", "arguments": { "to": 20 } });
    let response = mcp_request(
        &reqwest::Client::new(),
        &lambda.url,
        &lambda.token,
        "tools/call",
        params,
    )
    .send()
    .await
    .unwrap();
    let waited = started.elapsed();
    assert_eq!(response.status(), 504);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({ "message": "Endpoint request timed out" })
    );
    assert!(
        waited >= Duration::from_millis(90),
        "answered after {waited:?}, before the integration timeout"
    );
    drop(lambda);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The store's writes stall for 40 s, past the REST integration's 29 s. `cart_add_item` answers a
/// retryable 503 within the SDK's operation timeout, long before the front door would have given
/// up; the stalled write never lands, even after the stall; `catalog_list`, which needs no store,
/// answers meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_store_fails_the_call_fast_and_writes_nothing_afterwards() {
    let _turn = ONE_AT_A_TIME.lock().await;
    // No tenant quota: its count is a store write too, and this is about a call that needs no store.
    let lambda = start_lambda_mode(
        "stall",
        &translated(),
        &["--parameter", "RatePerTenant="],
        &[],
    )
    .await;
    let http = reqwest::Client::new();
    let created = rpc(&http, &lambda.url, &lambda.token, "cart_create", json!({})).await;
    let cart = created["result"]["structuredContent"]["cartId"]
        .as_str()
        .unwrap()
        .to_string();
    let proxy = stack_of(&lambda)["awsProxy"].as_str().unwrap().to_string();
    let stall = |secs: u64| {
        http.post(format!(
            "{proxy}/_relevo/stall?secs={secs}&actions=dynamodb:PutItem,dynamodb:UpdateItem"
        ))
        .send()
    };
    assert_eq!(stall(40).await.unwrap().status(), 204);

    let started = Instant::now();
    let params = json!({ "name": "cart_add_item", "arguments": { "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 } });
    let answer = mcp_request(&http, &lambda.url, &lambda.token, "tools/call", params)
        .send()
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(
        answer.status(),
        503,
        "a retryable failure, not the front door's 504"
    );
    assert!(answer.headers().contains_key("retry-after"));
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["code"], -31000, "{body}");
    assert_eq!(body["error"]["data"]["reason"], "store_timeout", "{body}");
    assert!(
        waited < Duration::from_secs(15),
        "answered after {waited:?}, not within the SDK's timeouts"
    );

    let started = Instant::now();
    let catalog = rpc(&http, &lambda.url, &lambda.token, "catalog_list", json!({})).await;
    assert!(
        catalog["result"]["structuredContent"]["items"].is_array(),
        "{catalog}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a call that needs no store waited {:?}",
        started.elapsed()
    );

    assert_eq!(stall(0).await.unwrap().status(), 204);
    tokio::time::sleep(Duration::from_secs(1)).await;
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
        "the add the client was told failed never landed: {view}"
    );
}

/// Opens a `subscriptions/listen` stream and reads it for `read`: whether it was still open then,
/// and what came.
async fn listen_for(lambda: &LambdaMode, read: Duration) -> (bool, String) {
    let params = json!({ "notifications": { "resourceSubscriptions": ["carts://none"] } });
    let mut response = mcp_request(
        &reqwest::Client::new(),
        &lambda.url,
        &lambda.token,
        "subscriptions/listen",
        params,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let deadline = tokio::time::Instant::now() + read;
    let mut seen = String::new();
    loop {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => return (true, seen),
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(Ok(None)) | Ok(Err(_)) => return (false, seen),
        }
    }
}

/// Listeners held by two environments of the listen function hear a change that `tools-call`
/// (another function, another process) made to the cart they subscribed to: the stream watches
/// the store, not this process.
#[tokio::test(flavor = "multi_thread")]
async fn listeners_in_two_environments_hear_a_change_made_in_another() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let env = [("RELEVO_LISTEN_POLL_MS", "200")];
    let lambda = start_lambda_mode("listen", &translated(), &["--environments", "2"], &env).await;
    let http = reqwest::Client::new();
    let cart =
        rpc(&http, &lambda.url, &lambda.token, "cart_create", json!({})).await["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string();
    let uri = format!("carts://{cart}");
    let mut streams = Vec::new();
    for _ in 0..2 {
        let params = json!({ "notifications": { "resourceSubscriptions": [uri] } });
        let mut stream = mcp_request(
            &http,
            &lambda.url,
            &lambda.token,
            "subscriptions/listen",
            params,
        )
        .send()
        .await
        .unwrap();
        assert_eq!(stream.status(), 200);
        let ack = read_until(&mut stream, "acknowledged", Duration::from_secs(10)).await;
        assert!(ack.contains(&uri), "the subscription is honoured: {ack}");
        streams.push(stream);
    }
    let added = rpc(
        &http,
        &lambda.url,
        &lambda.token,
        "cart_add_item",
        json!({ "cartId": cart, "sku": "MUG-CER-300", "quantity": 1 }),
    );
    assert_eq!(added.await["result"]["isError"], false);
    for stream in &mut streams {
        let heard = read_until(
            stream,
            "notifications/resources/updated",
            Duration::from_secs(10),
        )
        .await;
        assert!(
            heard.contains("notifications/resources/updated") && heard.contains(&uri),
            "{heard}"
        );
    }
    let pids = lambda.dir.join("pids");
    for environment in [
        "SubscriptionsListenFunction.pid",
        "SubscriptionsListenFunction.1.pid",
    ] {
        assert!(
            pids.join(environment).exists(),
            "each stream held its own environment: {environment}"
        );
    }
}

/// A streamed answer that sends nothing for the idle limit is cut, as API Gateway cuts it (here
/// 3 s instead of 5 minutes); the server's keep-alive comments hold a quiet listen stream open.
#[tokio::test(flavor = "multi_thread")]
async fn keep_alives_hold_a_quiet_stream_past_the_idle_limit_and_silence_is_cut() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let idle = ["--stream-idle-secs", "3"];
    let kept = start_lambda_mode(
        "keepalive",
        &translated(),
        &idle,
        &[("RELEVO_SSE_KEEPALIVE_SECS", "1")],
    )
    .await;
    let (open, seen) = listen_for(&kept, Duration::from_secs(6)).await;
    assert!(
        open,
        "the stream was cut although it sent keep-alives: {seen}"
    );
    assert!(
        seen.contains("notifications/subscriptions/acknowledged") && seen.contains(": keep-alive"),
        "{seen}"
    );
    drop(kept);
    let quiet = start_lambda_mode(
        "quiet",
        &translated(),
        &idle,
        &[("RELEVO_SSE_KEEPALIVE_SECS", "20")],
    )
    .await;
    let (open, seen) = listen_for(&quiet, Duration::from_secs(8)).await;
    assert!(
        !open,
        "a stream silent past the idle limit stayed open: {seen}"
    );
}

/// A front door without header remapping serves `greet` with the token, and answers a request
/// without one 401 with the protected-resource metadata's address.
async fn greets_and_challenges(http: &reqwest::Client, lambda: &LambdaMode) {
    let answer = rpc(
        http,
        &lambda.url,
        &lambda.token,
        "greet",
        json!({ "name": "Ada" }),
    )
    .await;
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({ "greeting": "Hello, Ada!" }),
        "{answer}"
    );
    let unauthenticated = http
        .post(&lambda.url)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
    let metadata = unauthenticated.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(metadata.contains("resource_metadata="), "{metadata}");
}

/// Front door C: the all-methods function's own Function URL (payload 2.0, `$default`), streamed
/// as `InvokeMode: RESPONSE_STREAM` says: one URL serves `/mcp`, the protected-resource metadata,
/// the server card and the catalogs; the function answers every other path itself.
#[tokio::test(flavor = "multi_thread")]
async fn front_door_c_serves_everything_from_the_function_url_streamed() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda =
        start_lambda_mode("function-url", &translated(), &["--front-door", "c"], &[]).await;
    let http = reqwest::Client::new();
    greets_and_challenges(&http, &lambda).await;
    for document in [
        "/.well-known/oauth-protected-resource/mcp",
        "/mcp/server-card",
        "/.well-known/ai-catalog.json",
        "/.well-known/mcp/catalog.json",
    ] {
        let answer = http
            .get(lambda.url.replace("/mcp", document))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{document} from the same URL");
    }
    // No gateway answers a path nobody routes: the all-methods function does, as front door A's
    // catch-all does (a GET is refused with its 405 and `Allow: POST`).
    let unknown = http
        .get(lambda.url.replace("/mcp", "/nothing"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 405);
    assert_eq!(unknown.headers()["allow"], "POST");
    let called: Vec<String> = lambda
        .decisions()
        .into_iter()
        .map(|d| format!("{} {}", d.function, d.action))
        .collect();
    assert!(
        called
            .iter()
            .any(|c| c == "McpUrlFunction secretsmanager:GetSecretValue"),
        "the Function URL's function served it: {called:?}"
    );
    assert!(
        !called.iter().any(|c| c.starts_with("McpFunction ")),
        "front door B's function was not started: {called:?}"
    );
}

/// Front door B: one HTTP API (payload 2.0 events, no remapping) in front of the all-methods
/// function, the metadata function and the approval page.
#[tokio::test(flavor = "multi_thread")]
async fn front_door_b_serves_through_the_http_api() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("http-api", &translated(), &["--front-door", "b"], &[]).await;
    let http = reqwest::Client::new();
    greets_and_challenges(&http, &lambda).await;
    let login = http
        .get(lambda.url.replace("/mcp", "/approvals/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        login.status(),
        200,
        "the approval page through the HTTP API"
    );
    let unknown = http
        .get(lambda.url.replace("/mcp", "/nothing"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (
            unknown.status().as_u16(),
            unknown.json::<Value>().await.unwrap()
        ),
        (404, json!({ "message": "Not Found" }))
    );
    // The server card and the catalogs: the well-known function (a role without permissions)
    // builds the app's server and answers them without one call to AWS.
    let card = http
        .get(lambda.url.replace("/mcp", "/mcp/server-card"))
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), 200, "the server card through the HTTP API");
    assert_eq!(
        card.headers()["content-type"],
        "application/mcp-server-card+json"
    );
    let card: Value = card.json().await.unwrap();
    assert_eq!(card["remotes"][0]["url"], lambda.url.as_str());
    assert!(
        card["remotes"][0]["supportedProtocolVersions"]
            .as_array()
            .is_some_and(|versions| versions.contains(&json!("2025-11-25"))),
        "the table is there, so 2025-11-25 is served and listed: {card}"
    );
    for catalog in [
        "/.well-known/ai-catalog.json",
        "/.well-known/mcp/catalog.json",
    ] {
        let answer = http
            .get(lambda.url.replace("/mcp", catalog))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{catalog}");
    }
    let called: Vec<String> = lambda
        .decisions()
        .into_iter()
        .map(|d| format!("{} {}", d.function, d.action))
        .collect();
    assert!(
        called
            .iter()
            .any(|c| c == "McpFunction secretsmanager:GetSecretValue"),
        "{called:?}"
    );
    assert!(
        !called.iter().any(|c| c.starts_with("WellKnownFunction ")),
        "the well-known function calls nothing: {called:?}"
    );
}

/// The template with `dynamodb:PutItem` taken out of the write policy: `cart_create` (a
/// conditional put) is refused by IAM, the refusal is in the call log, and the client gets an
/// error, not a cart.
#[tokio::test(flavor = "multi_thread")]
async fn a_permission_removed_from_the_template_fails_the_call_that_needs_it() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let dir = std::env::temp_dir().join(format!("relevo-narrowed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let original = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    let grant = "Action: [dynamodb:PutItem, dynamodb:UpdateItem, dynamodb:ConditionCheckItem]";
    assert!(
        original.contains(grant),
        "the write policy's actions moved; update this test"
    );
    std::fs::write(
        dir.join("template.yaml"),
        original.replace(
            grant,
            "Action: [dynamodb:UpdateItem, dynamodb:ConditionCheckItem]",
        ),
    )
    .unwrap();
    translate(&dir.join("template.yaml"), &dir.join("template.json"));

    let mut lambda = start_lambda_mode("narrowed", &dir.join("template.json"), &[], &[]).await;
    lambda.check_iam = false;
    let answer = rpc(
        &reqwest::Client::new(),
        &lambda.url,
        &lambda.token,
        "cart_create",
        json!({}),
    )
    .await;
    assert!(
        answer["result"]["structuredContent"]["cartId"].is_null(),
        "a cart without PutItem: {answer}"
    );
    assert!(
        answer["error"].is_object() || answer["result"]["isError"] == true,
        "{answer}"
    );
    let denied: Vec<_> = lambda
        .decisions()
        .into_iter()
        .filter(|d| !d.allowed)
        .collect();
    assert!(
        denied
            .iter()
            .any(|d| d.function == "ToolsCallFunction" && d.action == "dynamodb:PutItem"),
        "the refusal is logged: {denied:?}"
    );
    drop(lambda);
    let _ = std::fs::remove_dir_all(&dir);
}
