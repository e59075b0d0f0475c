//! A request-rate quota holds across Lambda execution environments: the stack of `template.yaml`
//! in local Lambda mode, `tools-call` with two execution environments (separate processes, as
//! Lambda runs them) over DynamoDB on the moto emulator that `make test` starts, the quota given
//! to every function as a deployment gives it (the template's `RatePerTenant` parameter).
//!
//! Sixteen clients send 100 `tools/call` of one tenant at once; exactly the limit (25) is
//! admitted, every other answer is the 429 a client can act on, both environments took
//! invocations (the Runtime API's `invocations.log`), and the table holds one window record that
//! counted 25 (a scan of it, not the functions' word). Another tenant is unaffected.
//!
//! Bounded: fixed counts, every wait has a deadline; the processes stop when the test ends.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use serde_json::{Value, json};

const LIMIT: usize = 25;
const REQUESTS: usize = 100;
const CLIENTS: usize = 16;
/// The least time left in the window when the test starts: the whole test runs inside it.
const MARGIN_SECS: u64 = 180;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The quota's window: the functions count on the real clock in windows that start at multiples
/// of their length, so the test takes the first of an hour, 70 minutes, 80 minutes, ... that
/// has [`MARGIN_SECS`] left at `now` (their ends fall at different times, so one of them does),
/// rather than waiting up to three minutes for the next hour.
fn window_secs(now: u64) -> Option<u64> {
    (0..12)
        .map(|i| 3600 + 600 * i)
        .find(|window| window - now % window >= MARGIN_SECS)
}

/// What one `greet` call got: status, `Retry-After`, body.
#[derive(Debug)]
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    body: Value,
}

async fn greet(http: &reqwest::Client, url: &str, token: &str) -> Answer {
    let params = json!({ "name": "greet", "arguments": { "name": "Ada" } });
    let response = mcp_request(http, url, token, "tools/call", params)
        .send()
        .await
        .expect("the front door answers");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let body = response
        .json::<Value>()
        .await
        .unwrap_or_else(|_| json!({ "httpStatus": status }));
    Answer {
        status,
        retry_after,
        body,
    }
}

/// The window records (kind `rate`) in the stack's table: storage key → count.
async fn rate_windows(lambda: &LambdaMode) -> BTreeMap<String, u64> {
    let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT").expect("the emulator's endpoint");
    let client = aws_sdk_dynamodb::Client::new(&relevo_aws::emulator_config(&endpoint).await);
    let table = stack_of(lambda)["tables"]["Table"]
        .as_str()
        .expect("the stack names its table")
        .to_string();
    let page = client
        .scan()
        .table_name(&table)
        .send()
        .await
        .expect("the table scans");
    assert!(
        page.last_evaluated_key().is_none(),
        "one page holds this test's records"
    );
    page.items()
        .iter()
        .filter_map(|item| {
            let key = item.get("pk")?.as_s().ok()?.clone();
            // A window is a counter item: its count is a number attribute (one `UpdateItem` adds 1).
            let count = item.get("count")?.as_n().ok()?.parse().ok()?;
            key.contains("|k4:rate|").then_some((key, count))
        })
        .collect()
}

/// Which environments of `function` took invocations (`$RELEVO_LAMBDA_PID_DIR/invocations.log`).
fn environments_that_served(lambda: &LambdaMode, function: &str) -> BTreeMap<usize, usize> {
    let log = std::fs::read_to_string(lambda.dir.join("pids").join("invocations.log"))
        .unwrap_or_default();
    let mut served = BTreeMap::new();
    for line in log.lines() {
        let mut parts = line.split(' ');
        if parts.next() == Some(function)
            && let Some(environment) = parts.next().and_then(|e| e.parse::<usize>().ok())
        {
            *served.entry(environment).or_default() += 1;
        }
    }
    served
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_quota_admits_exactly_its_limit_across_two_environments_of_tools_call() {
    let _turn = ONE_AT_A_TIME.lock().await;
    // The functions count on the real clock: start well inside one window.
    let window = match window_secs(now()) {
        Some(window) => window,
        None => {
            tokio::time::sleep(Duration::from_secs(MARGIN_SECS)).await;
            window_secs(now()).expect("a window with time left, three minutes later")
        }
    };
    // The quota as a deployment sets it: the template's parameter, which also lets the read-only
    // functions write the table (their counted calls below are refused by IAM otherwise).
    let quota = format!("RatePerTenant={LIMIT}/{window}");
    let lambda = start_lambda_mode(
        "quotas",
        &translated(),
        &["--environments", "2", "--parameter", &quota],
        &[],
    )
    .await;
    let http = reqwest::Client::new();

    let mut clients = tokio::task::JoinSet::new();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for _ in 0..CLIENTS {
        let (http, url, token, next) = (
            http.clone(),
            lambda.url.clone(),
            lambda.token.clone(),
            next.clone(),
        );
        clients.spawn(async move {
            let mut answers = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < REQUESTS {
                answers.push(greet(&http, &url, &token).await);
            }
            answers
        });
    }
    let answers: Vec<Answer> = clients.join_all().await.into_iter().flatten().collect();
    assert_eq!(answers.len(), REQUESTS);

    let admitted = answers
        .iter()
        .filter(|a| a.status == 200 && a.body.get("result").is_some())
        .count();
    assert_eq!(
        admitted, LIMIT,
        "exactly the limit is admitted across environments"
    );
    for answer in answers.iter().filter(|a| a.status != 200) {
        assert_eq!(
            answer.status, 429,
            "every other call is refused as rate limited: {answer:?}"
        );
        let error = &answer.body["error"];
        assert_eq!(error["code"], -31002, "{answer:?}");
        let data = &error["data"];
        assert_eq!(
            (
                &data["retryable"],
                &data["reason"],
                &data["scope"],
                &data["limit"],
                &data["windowSecs"]
            ),
            (
                &json!(true),
                &json!("rate_limited"),
                &json!("tenant"),
                &json!(LIMIT),
                &json!(window)
            ),
            "{answer:?}"
        );
        let retry_after = answer.retry_after.expect("a Retry-After header in seconds");
        assert!(
            (1..=window).contains(&retry_after),
            "Retry-After {retry_after} is within the window"
        );
        assert_eq!(
            data["retryAfterSecs"],
            json!(retry_after),
            "the header and the data agree: {answer:?}"
        );
    }

    let served = environments_that_served(&lambda, "ToolsCallFunction");
    let environments: BTreeSet<usize> = served.keys().copied().collect();
    assert_eq!(
        environments,
        BTreeSet::from([0, 1]),
        "both environments of tools-call served: {served:?}"
    );

    let windows = rate_windows(&lambda).await;
    assert_eq!(
        windows.len(),
        1,
        "one window record for the tenant: {windows:?}"
    );
    assert_eq!(
        windows.values().next(),
        Some(&(LIMIT as u64)),
        "the table counted exactly the admissions"
    );

    let issuer =
        relevo_auth::DevIssuer::load(&lambda.dir.join("issuer.json")).expect("the stack's issuer");
    let globex = issuer
        .mint("globex", "gina", &["shop"], now(), 300)
        .expect("the dev issuer signs");
    let other = greet(&http, &lambda.url, &globex).await;
    assert_eq!(
        other.status, 200,
        "another tenant has its own budget: {other:?}"
    );
    assert!(other.body.get("result").is_some(), "{other:?}");

    // Every counted method's function may write its count (IAM), including the read-only ones.
    let counted = [
        (
            "resources/read",
            json!({ "uri": "relevo://about" }),
            "relevo://about",
        ),
        (
            "prompts/get",
            json!({ "name": "explain", "arguments": { "topic": "quotas" } }),
            "explain",
        ),
        (
            "tasks/get",
            json!({ "taskId": "no-such-task" }),
            "no-such-task",
        ),
    ];
    for (method, params, name) in counted {
        let request =
            mcp_request(&http, &lambda.url, &globex, method, params).header("mcp-name", name);
        let response = request.send().await.expect("an answer");
        let status = response.status().as_u16();
        let body = response.json::<Value>().await.unwrap_or(Value::Null);
        assert!(
            status != 503 && body["error"]["data"]["retryable"] != json!(true),
            "{method}: {status} {body}"
        );
    }
    let windows = rate_windows(&lambda).await;
    assert_eq!(
        windows.values().sum::<u64>(),
        LIMIT as u64 + 4,
        "globex's four calls were counted: {windows:?}"
    );
}

#[test]
fn a_window_with_time_left_is_found_at_every_second_of_a_week() {
    for now in 1_800_000_000..1_800_000_000 + 7 * 24 * 3600 {
        let window = window_secs(now).expect("a window");
        assert!(window - now % window >= MARGIN_SECS, "{now}: {window}");
    }
}
