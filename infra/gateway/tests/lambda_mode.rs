//! Local Lambda mode: the real function binaries under the local Runtime API.
//!
//! Under fault: the worker function's process is killed (SIGKILL) while it runs
//! an export; the event source mapping redelivers the message after its visibility timeout, the
//! dead lease expires, a fresh worker process resumes from the last checkpoint, and the export
//! completes whole. Real binaries, real event formats, DynamoDB and SQS on the moto emulator that
//! `make test` starts (this test fails, on purpose, without it). Bounded: 90 s at most.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use relevo_auth::DevIssuer;
use serde_json::{Value, json};

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn rpc(http: &reqwest::Client, url: &str, token: &str, name: &str, arguments: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments,
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} }
    }});
    let response = http
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .json(&body)
        .send()
        .await
        .unwrap();
    response.json::<Value>().await.unwrap()["result"]["structuredContent"].clone()
}

/// Local Lambda mode on a free port, with a token of acme/alice; stopped when dropped.
struct LambdaMode {
    _process: Running,
    dir: PathBuf,
    url: String,
    token: String,
}

impl Drop for LambdaMode {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One Lambda mode at a time: each starts some twenty processes, and two side by side on two
/// cores make both slow to start.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn start_lambda_mode(test: &str) -> LambdaMode {
    let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT")
        .expect("RELEVO_TEST_AWS_ENDPOINT is not set: run with `make test` (it starts the moto emulator)");
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_relevo-lambda-local"));
    let bin_dir = exe.parent().unwrap().to_path_buf();
    assert!(bin_dir.join("worker").exists(), "build the function binaries first (`cargo build --workspace --bins`)");
    let dir = std::env::temp_dir().join(format!("relevo-lambda-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let process = Running(
        Command::new(&exe)
            .args(["--port", "0", "--bin-dir", bin_dir.to_str().unwrap()])
            .env("AWS_ENDPOINT_URL", &endpoint)
            .env("RELEVO_APP", "shop")
            .env("RELEVO_DEV_ISSUER_FILE", dir.join("issuer.json"))
            .env("RELEVO_LAMBDA_PID_DIR", dir.join("pids"))
            .env("RELEVO_EXPORT_WINDOW_MS", "300")
            .env("RELEVO_LEASE_SECS", "3")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The issuer file names the port the front door bound (`--port 0`); it is up when it serves
    // the issuer's own JWKS.
    let deadline = Instant::now() + Duration::from_secs(30);
    let issuer = loop {
        if let Ok(issuer) = DevIssuer::load(&dir.join("issuer.json")) {
            let jwks = reqwest::Client::new()
                .get(format!("{}/.well-known/jwks.json", issuer.issuer))
                .timeout(Duration::from_secs(30))
                .send()
                .await;
            if jwks.is_ok_and(|r| r.status() == reqwest::StatusCode::OK) {
                break issuer;
            }
        }
        assert!(Instant::now() < deadline, "local Lambda mode did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let url = format!("{}/mcp", issuer.issuer);
    let token = issuer.mint("acme", "alice", &["exports:read", "exports:write"], now, 600).unwrap();
    LambdaMode { _process: process, dir, url, token }
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_worker_mid_export_loses_nothing() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("kill").await;
    let (http, url, token, dir) = (reqwest::Client::new(), &lambda.url, &lambda.token, &lambda.dir);

    let started =
        rpc(&http, url, token, "export_start", json!({ "dataset": "customers", "purpose": "kill test" })).await;
    let job = started["jobId"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = rpc(&http, url, token, "export_status", json!({ "jobId": job })).await;
        let rows = status["rowsExported"].as_u64().unwrap_or(0);
        if rows > 0 {
            assert!(rows < 240, "the kill must come mid-export: {status}");
            break;
        }
        assert!(Instant::now() < deadline, "the export never started: {status}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kill(&dir.join("pids").join("worker.pid"));

    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = rpc(&http, url, token, "export_status", json!({ "jobId": job })).await;
        if status["status"] == "succeeded" {
            break;
        }
        assert!(Instant::now() < deadline, "the export did not finish after the worker was killed: {status}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let result = rpc(&http, url, token, "export_result", json!({ "jobId": job })).await;
    let ids: Vec<String> =
        result["csv"].as_str().unwrap().lines().skip(1).map(|l| l.split(',').next().unwrap().to_string()).collect();
    assert_eq!(ids, (0..240).map(|i| i.to_string()).collect::<Vec<_>>(), "every row once, in order");
}

/// `tools-call` runs with response streaming (as behind a REST integration with
/// `ResponseTransferMode: RESPONSE_STREAM`): its progress frames leave the function through the
/// Runtime API and the front door while the tool is still counting, not all at the end.
#[tokio::test(flavor = "multi_thread")]
async fn tools_call_progress_streams_through_the_runtime_api() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let lambda = start_lambda_mode("stream").await;
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "count", "arguments": { "to": 20 },
        "_meta": { "progressToken": "p", "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": {} }
    }});
    let mut response = reqwest::Client::new()
        .post(&lambda.url)
        .bearer_auth(&lambda.token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "count")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut chunks = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        chunks.push(String::from_utf8(chunk.to_vec()).unwrap());
    }
    assert!(chunks[0].contains("notifications/progress"), "the first chunk is progress: {:?}", chunks[0]);
    assert!(!chunks[0].contains("\"result\""), "the first chunk came before the tool finished: {chunks:?}");
    let all = chunks.concat();
    assert_eq!(all.matches("notifications/progress").count(), 20, "{all}");
    let last = all.trim_end().rsplit("data: ").next().unwrap();
    let result: Value = serde_json::from_str(last.trim()).unwrap();
    assert_eq!(result["result"]["structuredContent"], json!({ "counted": 20 }), "{all}");
}

fn kill(pid_file: &Path) {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    let status = Command::new("kill").args(["-9", pid.trim()]).status().unwrap();
    assert!(status.success(), "the worker process was killed");
}
