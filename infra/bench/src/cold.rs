//! Cold start: for each function binary, the time from `start_function` (which binds the local
//! Runtime API and spawns the process with the `AWS_LAMBDA_*` environment) to the answer of its
//! first invocation, through `relevo_gateway::lambda_local` exactly as local Lambda mode runs it.
//! Every sample is a fresh process in a fresh runtime; the runtime is dropped afterwards, which
//! kills the process (`kill_on_drop`). Median, min and max of the samples.
//!
//! The functions run as `template.yaml` deploys them ([`crate::deployed`]: its environment and
//! memory, authorization `required`, response streaming where the template streams), and HTTP
//! events carry a token of the stub's issuer, so the JWKS is fetched over loopback (at init, beside
//! the keys secret's read, or by the first invocation: part of the cold start either way, as on
//! Lambda). The AWS endpoint is a loopback stub
//! ([`aws_stub`]): the signing-keys secret, the quota counter, and an empty page for the rest
//! (`{"Items":[],"Count":0}`), so the worker (an empty SQS batch) and the reconciler (an empty
//! scan of active jobs) answer without DynamoDB; HTTP functions answer one request of their own
//! method (`tools/call greet` for `tools-call` and the catch-all `mcp`).
//!
//! Samples are taken in turn: one of every function, then again, `samples` times. How fast this
//! machine runs a fresh process drifts by tens of percent over minutes (the same function,
//! measured alone, gave a median of 7.6 ms at one hour and 5.5 ms at the next), so seven samples
//! of one function in a row measure the minute they fell in; in turn, every function sees the
//! same minutes. The rmcp peer (`--peer`, [`PEER`]) is one more subject of the turn, run as its
//! users deploy it (the `tools-call` event and environment, no `LoggingConfig`): the reference
//! the same minutes give.
//!
//! Runs in a child process (`relevo-bench cold-start`) so that the functions' log lines, which go
//! to the inherited stdout, stay out of the report; results are the lines starting `cold-start\t`.

use std::path::Path;
use std::time::{Duration, Instant};

use relevo_gateway::lambda_local::events::{Incoming, http_event, rest_event};
use relevo_gateway::lambda_local::{FunctionSpec, start_function};
use relevo_protocol::Method;
use serde_json::{Value, json};

/// One function's samples.
pub struct ColdStart {
    pub function: String,
    pub micros: Vec<u64>,
    /// The HTTP status the function answered (`-` for non-HTTP functions).
    pub status: String,
}

impl ColdStart {
    pub fn median_ms(&self) -> f64 {
        let mut sorted = self.micros.clone();
        sorted.sort_unstable();
        let n = sorted.len();
        if n == 0 {
            return f64::NAN;
        }
        let mid = if n % 2 == 1 {
            sorted[n / 2] as f64
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0
        };
        mid / 1000.0
    }
    pub fn min_ms(&self) -> f64 {
        self.micros
            .iter()
            .min()
            .map_or(f64::NAN, |m| *m as f64 / 1000.0)
    }
    pub fn max_ms(&self) -> f64 {
        self.micros
            .iter()
            .max()
            .map_or(f64::NAN, |m| *m as f64 / 1000.0)
    }
}

/// The invocation event for `function` through a REST API (front door A).
pub(crate) fn event(function: &str) -> Value {
    event_through(function, false)
}

/// The invocation event for `function`: an HTTP API (payload 2.0, route `ANY /mcp`, front door
/// B) event when `http_api`, else a REST API proxy event.
pub(crate) fn event_through(function: &str, http_api: bool) -> Value {
    match function {
        "worker" => return json!({ "Records": [] }),
        "reconciler" => {
            return json!({ "source": "aws.events", "detail-type": "Scheduled Event", "detail": {} });
        }
        "well-known" => {
            let mut headers = http::HeaderMap::new();
            headers.insert("host", http::HeaderValue::from_static("127.0.0.1"));
            return proxy_event(
                http_api,
                &http::Method::GET,
                "/.well-known/oauth-protected-resource",
                &headers,
                b"",
            );
        }
        _ => {}
    }
    let method = Method::ALL
        .iter()
        .find(|m| m.function_name() == function)
        .copied()
        .unwrap_or(Method::ToolsCall);
    let (name, params) = match method {
        Method::ToolsCall => (
            Some("greet"),
            json!({ "name": "greet", "arguments": { "name": "bench" } }),
        ),
        Method::PromptsGet => (Some("bench"), json!({ "name": "bench" })),
        Method::ResourcesRead => (Some("shop://bench"), json!({ "uri": "shop://bench" })),
        Method::Complete => (
            None,
            json!({ "ref": { "type": "ref/prompt", "name": "bench" }, "argument": { "name": "x", "value": "" } }),
        ),
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => {
            (None, json!({ "taskId": "bench" }))
        }
        _ => (None, json!({})),
    };
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method.as_str(), "params": params })
        .to_string();
    let mut headers = http::HeaderMap::new();
    let pairs = [
        ("host", "127.0.0.1"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method.as_str()),
    ];
    for (key, value) in pairs {
        headers.insert(key, http::HeaderValue::from_static(value));
    }
    if let Some(name) = name {
        headers.insert("mcp-name", http::HeaderValue::from_static(name));
    }
    proxy_event(
        http_api,
        &http::Method::POST,
        "/mcp",
        &headers,
        body.as_bytes(),
    )
}

/// The event API Gateway sends for a request to `path` (an HTTP API's when `http_api`).
fn proxy_event(
    http_api: bool,
    method: &http::Method,
    path: &str,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Value {
    let incoming = Incoming {
        method,
        path,
        query: None,
        headers,
        body,
        resource: path,
        stage: if http_api { "$default" } else { "live" },
        domain: "127.0.0.1",
        // Ids as long as API Gateway's (they are on every log line, so they count in its bytes):
        // the examples of AWS's payload documentation, an HTTP API's 16 characters and a REST
        // API's 36 (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html,
        // https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html).
        request_id: if http_api {
            "JKJaXmPLvHcESHA="
        } else {
            "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"
        },
    };
    if http_api {
        http_event(&incoming, &format!("ANY {path}"))
    } else {
        rest_event(&incoming)
    }
}

/// AWS calls the stub answered, by `X-Amz-Target` (`DynamoDB_20120810.UpdateItem`, ...).
#[derive(Default)]
pub struct StubCalls(std::sync::Mutex<std::collections::BTreeMap<String, u64>>);

impl StubCalls {
    pub fn snapshot(&self) -> std::collections::BTreeMap<String, u64> {
        self.0.lock().map(|calls| calls.clone()).unwrap_or_default()
    }
}

/// The stub AWS endpoint: `/.well-known/jwks.json` answers `jwks` (the stub is the token
/// issuer); Secrets Manager's `GetSecretValue` answers a signing key in the shape the template's
/// secret has (`{"kid","key"}`); DynamoDB's `UpdateItem` answers a counter at 1 (the tenant
/// quota's one conditional write per request, never refused); everything else an empty page
/// (`{"Items":[],"Count":0}`: no record, an empty SQS batch, an empty scan). Every call is counted.
pub(crate) async fn aws_stub(
    listener: tokio::net::TcpListener,
    jwks: Value,
) -> std::io::Result<(String, std::sync::Arc<StubCalls>)> {
    aws_stub_with(listener, jwks, false).await
}

/// [`aws_stub`]; with `full_windows`, every conditional UpdateItem (a quota lease) is refused as
/// DynamoDB refuses one whose condition fails: the tenant's window is already spent, by other
/// environments.
pub(crate) async fn aws_stub_with(
    listener: tokio::net::TcpListener,
    jwks: Value,
    full_windows: bool,
) -> std::io::Result<(String, std::sync::Arc<StubCalls>)> {
    let address = listener.local_addr()?;
    let calls = std::sync::Arc::new(StubCalls::default());
    let counted = calls.clone();
    let app = axum::Router::new()
        .route(
            "/.well-known/jwks.json",
            axum::routing::get(move || async move { axum::Json(jwks) }),
        )
        .fallback(move |headers: http::HeaderMap| {
            let calls = counted.clone();
            async move {
                let target = headers
                    .get("x-amz-target")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("other")
                    .to_string();
                if full_windows && target == "DynamoDB_20120810.UpdateItem" {
                    if let Ok(mut calls) = calls.0.lock() {
                        *calls.entry(target).or_default() += 1;
                    }
                    return (
                        http::StatusCode::BAD_REQUEST,
                        [(http::header::CONTENT_TYPE, "application/x-amz-json-1.0")],
                        // The window's item as it stands: its count at the deployed limit, and
                        // an expiry far ahead (the window has not turned).
                        json!({
                            "__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
                            "message": "The conditional request failed",
                            "Item": {
                                "count": { "N": "1000000" },
                                "rev": { "N": "7" },
                                "expires_at": { "N": "4102444800" }
                            }
                        })
                        .to_string(),
                    );
                }
                let body = match target.as_str() {
                    "secretsmanager.GetSecretValue" => json!({
                        "ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:bench-AbCdEf",
                        "Name": "bench",
                        "VersionId": "bench",
                        "SecretString": json!({ "kid": "k1", "key": "b".repeat(32) }).to_string(),
                    })
                    .to_string(),
                    "DynamoDB_20120810.UpdateItem" => {
                        r#"{"Attributes":{"count":{"N":"1"},"rev":{"N":"1"}}}"#.to_string()
                    }
                    _ => r#"{"Items":[],"Count":0,"ScannedCount":0}"#.to_string(),
                };
                if let Ok(mut calls) = calls.0.lock() {
                    *calls.entry(target).or_default() += 1;
                }
                (
                    http::StatusCode::OK,
                    [(http::header::CONTENT_TYPE, "application/x-amz-json-1.0")],
                    body,
                )
            }
        });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((format!("http://{address}"), calls))
}

/// The answer of one invocation as a buffered API Gateway response, a streamed one (the template
/// deploys the HTTP functions with response streaming) collected: its prelude with the body.
pub(crate) async fn answer(
    function: &relevo_gateway::lambda_local::Function,
    event: Value,
    wait: Duration,
) -> Result<Value, String> {
    match function
        .invoke_http(event, wait)
        .await
        .map_err(|e| e.to_string())?
    {
        relevo_gateway::lambda_local::Answer::Buffered(value) => Ok(value),
        relevo_gateway::lambda_local::Answer::Streamed { prelude, mut body } => {
            let mut bytes = Vec::new();
            while let Some(chunk) = body.recv().await {
                bytes.extend_from_slice(&chunk?);
            }
            let mut answer = prelude;
            answer["body"] = Value::String(String::from_utf8_lossy(&bytes).into_owned());
            answer["isBase64Encoded"] = Value::Bool(false);
            Ok(answer)
        }
    }
}

/// Adds `Authorization: Bearer TOKEN` to a proxy event.
pub(crate) fn authorize(event: &mut Value, token: &str) {
    let bearer = format!("Bearer {token}");
    event["headers"]["authorization"] = json!(bearer);
    if event.get("multiValueHeaders").is_some() {
        event["multiValueHeaders"]["authorization"] = json!([bearer]);
    }
}

/// The audience of the bench's tokens (`AuthAudience`).
pub(crate) const AUDIENCE: &str = "https://bench.relevo.test/mcp";

/// The name the rmcp peer's samples carry (`peer-rmcp-lambda`, as `make bench` builds it).
pub const PEER: &str = "rmcp on lambda_http";

/// One sample: a fresh runtime, stub, function process and invocation; all gone on return.
/// The function runs as `template` deploys it, with a token of the stub's issuer on HTTP events;
/// the [`PEER`] as its users deploy it, answering the `tools-call` event.
fn sample(function: &str, binary: &Path, template: &Path) -> Result<(u64, String), String> {
    let peer = function == PEER;
    let function = if peer { "tools-call" } else { function };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| e.to_string())?;
        let issuer_url = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let issuer = relevo_auth::DevIssuer::generate(&issuer_url, AUDIENCE);
        let jwks = serde_json::to_value(issuer.jwks()).map_err(|e| e.to_string())?;
        let (endpoint, _) = aws_stub(listener, jwks).await.map_err(|e| e.to_string())?;
        let mut deployed = crate::deployed::function(template, function, &issuer_url, AUDIENCE)
            .map_err(|e| e.to_string())?;
        if peer {
            deployed.logging = relevo_template::Logging::default();
        }
        let mut event = event(function);
        if event.get("httpMethod").is_some() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_err(|e| e.to_string())?
                .as_secs();
            let token = issuer
                .mint("bench", "bench", &[], now, 3600)
                .map_err(|e| e.to_string())?;
            authorize(&mut event, &token);
        }
        let started = Instant::now();
        let spec = FunctionSpec {
            name: function.to_string(),
            binary: binary.to_path_buf(),
            env: deployed.env(&endpoint),
            memory_mb: deployed.memory_mb,
            timeout: Duration::from_secs(30),
            environments: 1,
            logging: deployed.logging.clone(),
        };
        let running = start_function(spec).await.map_err(|e| e.to_string())?;
        let answer = answer(&running, event, Duration::from_secs(30)).await?;
        let elapsed = started.elapsed().as_micros() as u64;
        let status = answer
            .get("statusCode")
            .and_then(Value::as_u64)
            .map_or("-".to_string(), |s| s.to_string());
        Ok((elapsed, status))
    });
    runtime.shutdown_timeout(Duration::from_secs(5));
    result
}

/// The `cold-start` child: `samples` samples of each of `functions` built in `bin_dir` and of
/// the `peer` when given, taken in turn (module docs), one line each.
pub fn child(
    bin_dir: &Path,
    functions: &[String],
    samples: usize,
    template: &Path,
    peer: Option<&Path>,
) -> Result<(), String> {
    // Reported as "not built" when missing; `infra/scripts/bench.sh` builds every function first.
    let subjects: Vec<(&str, std::path::PathBuf)> = functions
        .iter()
        .map(|f| (f.as_str(), bin_dir.join(f)))
        .chain(peer.map(|p| (PEER, p.to_path_buf())))
        .filter(|(_, binary)| binary.exists())
        .collect();
    for _ in 0..samples {
        for (function, binary) in &subjects {
            let (micros, status) =
                sample(function, binary, template).map_err(|e| format!("{function}: {e}"))?;
            println!("cold-start\t{function}\t{micros}\t{status}");
        }
    }
    Ok(())
}

/// Runs the child and gathers its lines.
pub async fn measure(
    bin_dir: &Path,
    functions: &[String],
    samples: usize,
    template: &Path,
    peer: &Path,
) -> Result<Vec<ColdStart>, Box<dyn std::error::Error + Send + Sync>> {
    let output = tokio::process::Command::new(std::env::current_exe()?)
        .arg("cold-start")
        .arg("--peer")
        .arg(peer)
        .arg("--bin-dir")
        .arg(bin_dir)
        .arg("--functions")
        .arg(functions.join(","))
        .arg("--samples")
        .arg(samples.to_string())
        .arg("--template")
        .arg(template)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await?;
    if !output.status.success() {
        return Err(format!(
            "cold-start measurement failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let mut results: Vec<ColdStart> = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let ["cold-start", function, micros, status] = fields.as_slice() else {
            continue;
        };
        let micros: u64 = micros.parse()?;
        match results.iter_mut().find(|r| r.function == *function) {
            Some(result) => result.micros.push(micros),
            None => results.push(ColdStart {
                function: function.to_string(),
                micros: vec![micros],
                status: status.to_string(),
            }),
        }
    }
    Ok(results)
}
