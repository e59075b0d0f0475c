//! Lambda Managed Instances through the local Runtime API: a function started with a max
//! concurrency of 8 ([`start_function_concurrent`]) and built with the `managed-instances`
//! feature (the conformance fixtures' `relevo-conformance-function-mi`) serves 8 slow calls at
//! once in its one process, whose current-thread main moved the runner onto a runtime with a
//! worker per core; started as classic Lambda (max concurrency 1), the same binary serves them
//! one after another on its one thread. No store or emulator: the `tools-call` function with its
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
        logging: Default::default(),
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
fn processes_running(binary: &Path) -> Vec<PathBuf> {
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
        .map(|entry| entry.path())
        .collect()
}

/// The threads of the process at `proc` whose name starts with `prefix` (names are cut at 15
/// bytes).
fn threads_named(proc: &Path, prefix: &str) -> usize {
    std::fs::read_dir(proc.join("task"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|n| n.starts_with(prefix))
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
    let processes = processes_running(&binary);
    assert_eq!(processes.len(), 1, "one execution environment, one process");
    // The current-thread main moved its runner onto a runtime with a worker per core.
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(threads_named(&processes[0], "relevo-mi-runne"), 1);
    assert_eq!(threads_named(&processes[0], "relevo-mi-worke"), cores);
    assert!(
        overlapped < SLEEP * 3,
        "8 calls of {SLEEP:?} in flight at once took {overlapped:?}"
    );
    drop(managed);

    let classic = start(1).await;
    let serialized = eight_at_once(&classic).await;
    let processes = processes_running(&binary);
    let classic_process = processes.iter().find(|p| {
        std::fs::read(p.join("environ")).is_ok_and(|environ| {
            environ
                .split(|b| *b == 0)
                .any(|var| var == b"AWS_LAMBDA_FUNCTION_NAME=mi-1")
        })
    });
    let classic_process = classic_process.expect("the classic function's process");
    assert_eq!(threads_named(classic_process, "relevo-mi-runne"), 0);
    assert!(
        serialized >= SLEEP * 8,
        "one at a time, 8 calls of {SLEEP:?} took only {serialized:?}"
    );
}
