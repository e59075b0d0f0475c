//! Lambda Managed Instances through the local Runtime API: a function started with a max
//! concurrency of 8 ([`start_function_concurrent`]) and built with the `managed-instances`
//! feature (the conformance fixtures' `relevo-conformance-function-mi`) serves 8 slow calls at
//! once in its one process; started as classic Lambda (max concurrency 1), the same binary
//! serves them one after another. No store or emulator: the `tools-call` function with its
//! `slow_compute` tool (300 ms) needs neither.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use relevo_gateway::lambda_local::events::{Incoming, rest_event};
use relevo_gateway::lambda_local::{Function, FunctionSpec, start_function_concurrent};
use serde_json::{Value, json};

const SLEEP: Duration = Duration::from_millis(300);

fn binary() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_relevo-lambda-local"));
    let binary = exe.parent().unwrap().join("relevo-conformance-function-mi");
    assert!(
        binary.exists(),
        "build it first: cargo build -p relevo-conformance --features managed-instances --bin relevo-conformance-function-mi"
    );
    binary
}

fn slow_call(id: u64) -> Value {
    let params = json!({
        "name": "slow_compute",
        "arguments": { "seconds": SLEEP.as_secs_f64() },
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    });
    let body =
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string();
    let mut headers = http::HeaderMap::new();
    for (key, value) in [
        ("host", "127.0.0.1"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "slow_compute"),
    ] {
        headers.insert(key, http::HeaderValue::from_static(value));
    }
    rest_event(&Incoming {
        method: &http::Method::POST,
        path: "/mcp",
        query: None,
        headers: &headers,
        body: body.as_bytes(),
        resource: "/mcp",
        stage: "live",
        domain: "127.0.0.1",
        request_id: "managed-instances",
    })
}

async fn start(max_concurrency: usize) -> Function {
    let key = "k1:".to_string() + &"a".repeat(44);
    let env = [
        ("RELEVO_FUNCTION", "tools-call".to_string()),
        ("RELEVO_STATE_KEYS", key),
        ("RELEVO_AUTH", "off".into()),
        ("RUST_LOG", "error".into()),
    ];
    let spec = FunctionSpec {
        name: format!("mi-{max_concurrency}"),
        binary: binary(),
        env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        memory_mb: 512,
        timeout: Duration::from_secs(30),
        environments: 1,
    };
    let function = start_function_concurrent(spec, max_concurrency)
        .await
        .unwrap();
    // Warm: the first call pays the process's start.
    let answer = function
        .invoke(slow_call(0), Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(answer["statusCode"], 200, "{answer}");
    function
}

/// The processes this test started that run `binary`.
fn processes_running(binary: &Path) -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| {
            let dir = entry.path();
            let parent = std::fs::read_to_string(dir.join("stat"))
                .ok()
                .and_then(|stat| {
                    let after_name = stat.rsplit_once(')')?.1.to_string();
                    after_name.split_whitespace().nth(1).map(String::from)
                });
            parent.as_deref() == Some(me.as_str())
                && std::fs::read_link(dir.join("exe")).is_ok_and(|exe| exe == binary)
        })
        .count()
}

/// Eight calls at once; the wall time of all of them.
async fn eight_at_once(function: &Function) -> Duration {
    let started = Instant::now();
    let calls: Vec<_> = (1..=8)
        .map(|id| {
            let function = function.clone();
            tokio::spawn(async move {
                function
                    .invoke(slow_call(id), Duration::from_secs(30))
                    .await
            })
        })
        .collect();
    for call in calls {
        let answer = call.await.unwrap().unwrap();
        assert_eq!(answer["statusCode"], 200, "{answer}");
        assert!(
            answer["body"].as_str().unwrap().contains("Computed after"),
            "{answer}"
        );
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread")]
async fn eight_slow_calls_overlap_in_one_process_with_a_max_concurrency_of_8_and_serialize_without()
{
    let binary = binary();
    let managed = start(8).await;
    let overlapped = eight_at_once(&managed).await;
    assert_eq!(
        processes_running(&binary),
        1,
        "one execution environment, one process"
    );
    assert!(
        overlapped < SLEEP * 3,
        "8 calls of {SLEEP:?} in flight at once took {overlapped:?}"
    );
    drop(managed);

    let classic = start(1).await;
    let serialized = eight_at_once(&classic).await;
    assert!(
        serialized >= SLEEP * 8,
        "one at a time, 8 calls of {SLEEP:?} took only {serialized:?}"
    );
}
