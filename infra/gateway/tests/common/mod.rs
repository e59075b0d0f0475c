//! What the local Lambda mode tests share: starting the stack of a (translated) template on the
//! emulator, MCP requests through its front door, reading what it wrote. Each test binary uses
//! part of it.

#![allow(dead_code, clippy::unwrap_used)] // shared by several test binaries; a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use relevo_auth::DevIssuer;
use relevo_gateway::lambda_local::iam_proxy;
use serde_json::{Value, json};

pub struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Translates `template` (SAM YAML) into `out` with the pinned translator.
pub fn translate(template: &Path, out: &Path) {
    let status = Command::new(root().join("infra/scripts/translate.sh"))
        .arg(template)
        .arg(out)
        .status()
        .unwrap();
    assert!(status.success(), "{} translates", template.display());
}

/// The translation of the project's template, made again when the template is newer.
pub fn translated() -> PathBuf {
    let (template, out) = (
        root().join("template.yaml"),
        root().join("target/sam/template.json"),
    );
    let fresh = std::fs::metadata(&out)
        .and_then(|o| Ok(o.modified()? >= std::fs::metadata(&template)?.modified()?));
    if !fresh.unwrap_or(false) {
        translate(&template, &out);
    }
    out
}

/// A 2026-07-28 request for `method` with `params` (plus the `_meta` envelope), its standard
/// headers matching the body.
pub fn mcp_request(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    method: &str,
    mut params: Value,
) -> reqwest::RequestBuilder {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    if params["_meta"]["io.modelcontextprotocol/clientCapabilities"].is_null() {
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    }
    let mut request = http
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    request.json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
}

pub async fn rpc(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    name: &str,
    arguments: Value,
) -> Value {
    let params = json!({ "name": name, "arguments": arguments });
    let response = mcp_request(http, url, token, "tools/call", params)
        .send()
        .await
        .unwrap();
    response.json::<Value>().await.unwrap()
}

/// One local Lambda mode on free ports, with a token of acme/alice; stopped when dropped, after
/// its call log was checked for refused calls.
pub struct LambdaMode {
    process: Option<Running>,
    pub dir: PathBuf,
    pub url: String,
    pub token: String,
    pub check_iam: bool,
}

impl LambdaMode {
    pub fn iam_log(&self) -> PathBuf {
        self.dir.join("iam.log")
    }

    pub fn decisions(&self) -> Vec<iam_proxy::Decision> {
        iam_proxy::read_log(&self.iam_log()).unwrap_or_default()
    }
}

impl Drop for LambdaMode {
    fn drop(&mut self) {
        drop(self.process.take());
        if self.check_iam && !std::thread::panicking() {
            let denied: Vec<_> = self
                .decisions()
                .into_iter()
                .filter(|d| !d.allowed)
                .collect();
            assert!(
                denied.is_empty(),
                "calls the template's policies refuse: {denied:?}"
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One local Lambda mode at a time: each starts some twenty processes, and two side by side on two
/// cores make both slow to start.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub async fn start_lambda_mode(
    test: &str,
    template: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> LambdaMode {
    let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT").expect(
        "RELEVO_TEST_AWS_ENDPOINT is not set: run with `make test` (it starts the moto emulator)",
    );
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_relevo-lambda-local"));
    let bin_dir = exe.parent().unwrap().to_path_buf();
    assert!(
        bin_dir.join("worker").exists(),
        "build the function binaries first (`infra/scripts/bins.sh`)"
    );
    let dir = std::env::temp_dir().join(format!("relevo-lambda-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut command = Command::new(&exe);
    command
        .args([
            "--template",
            template.to_str().unwrap(),
            "--port",
            "0",
            "--bin-dir",
            bin_dir.to_str().unwrap(),
        ])
        .args(["--iam-log", dir.join("iam.log").to_str().unwrap()])
        .args(args)
        .env("AWS_ENDPOINT_URL", &endpoint)
        .env("RELEVO_DEV_ISSUER_FILE", dir.join("issuer.json"))
        .env("RELEVO_LAMBDA_PID_DIR", dir.join("pids"))
        .env("RELEVO_LAMBDA_LOG_DIR", dir.join("logs"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let process = Running(command.spawn().unwrap());
    // The issuer file is written once the stack runs; its audience is the MCP URL. Ready when the
    // protected-resource metadata answers through the front door.
    let deadline = Instant::now() + Duration::from_secs(60);
    let issuer = loop {
        if let Ok(issuer) = DevIssuer::load(&dir.join("issuer.json")) {
            let metadata = issuer
                .audience
                .replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
            let answer = reqwest::Client::new()
                .get(metadata)
                .timeout(Duration::from_secs(30))
                .send()
                .await;
            if answer.is_ok_and(|r| r.status() == reqwest::StatusCode::OK) {
                break issuer;
            }
        }
        assert!(Instant::now() < deadline, "local Lambda mode did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let scopes = [
        "exports:read",
        "exports:write",
        "shop",
        "notes:read",
        "notes:write",
    ];
    let token = issuer.mint("acme", "alice", &scopes, now, 600).unwrap();
    LambdaMode {
        process: Some(process),
        dir,
        url: issuer.audience.clone(),
        token,
        check_iam: true,
    }
}

/// A queue visibility of a few seconds, so that a redelivery takes seconds (the template's is
/// 720), and the reconciler every 5 s.
pub const QUICK_REDELIVERY: [&str; 4] = [
    "--parameter",
    "WorkQueueVisibility=6",
    "--schedule-every",
    "5",
];

/// The JSON lines `function` (its logical id) logged so far, from every environment: what
/// CloudWatch Logs would hold in its log group.
pub fn log_lines(lambda: &LambdaMode, function: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(lambda.dir.join("logs").join(format!("{function}.log")))
        .unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// What local Lambda mode wrote of its stack (`stack.json`): the AWS proxy, table and queue names.
pub fn stack_of(lambda: &LambdaMode) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(lambda.dir.join("pids").join("stack.json")).unwrap(),
    )
    .unwrap()
}

/// Reads SSE `stream` until `wanted` appears in it or `within` passes; what came.
pub async fn read_until(stream: &mut reqwest::Response, wanted: &str, within: Duration) -> String {
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = String::new();
    while !seen.contains(wanted) {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            _ => break,
        }
    }
    seen
}

pub fn kill(pid_file: &Path) {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    let status = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(status.success(), "the worker process was killed");
}

/// Every record of `kind` in the stack's table: (storage key, body).
pub async fn records_of_kind(lambda: &LambdaMode, kind: &str) -> Vec<(String, Value)> {
    let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT").unwrap();
    let client = aws_sdk_dynamodb::Client::new(&relevo_aws::emulator_config(&endpoint).await);
    let table = stack_of(lambda)["tables"]["Table"]
        .as_str()
        .unwrap()
        .to_string();
    let marker = format!("|k{}:{kind}|", kind.len());
    let mut found = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(&table)
            .set_exclusive_start_key(start)
            .send()
            .await
            .unwrap();
        for item in page.items() {
            let key = item
                .get("pk")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default();
            if key.contains(&marker) {
                let body = item
                    .get("body")
                    .and_then(|v| v.as_s().ok())
                    .map_or(Value::Null, |b| {
                        serde_json::from_str(b).unwrap_or(Value::Null)
                    });
                found.push((key, body));
            }
        }
        match page.last_evaluated_key() {
            Some(key) => start = Some(key.clone()),
            None => return found,
        }
    }
}
