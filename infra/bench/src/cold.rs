//! Cold start: for each function binary, the time from `start_function` (which binds the local
//! Runtime API and spawns the process with the `AWS_LAMBDA_*` environment) to the answer of its
//! first invocation, through `relevo_gateway::lambda_local` exactly as local Lambda mode runs it.
//! Every sample is a fresh process in a fresh runtime; the runtime is dropped afterwards, which
//! kills the process (`kill_on_drop`). Median, min and max of the samples.
//!
//! The functions get the production configuration shape: a table, a queue, signing keys, the
//! shop app, buffered responses, authorization off (the JWKS fetch of `required` would time the
//! network, not the binary). The AWS endpoint is a loopback stub that answers every call with an
//! empty page (`{"Items":[],"Count":0}`), so the worker (an empty SQS batch) and the reconciler
//! (an empty scan of active jobs) answer without DynamoDB; HTTP functions answer one request of
//! their own method (`tools/call greet` for `tools-call` and the catch-all `mcp`).
//!
//! Runs in a child process (`relevo-bench cold-start`) so that the functions' log lines, which go
//! to the inherited stdout, stay out of the report; results are the lines starting `cold-start\t`.

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use relevo_gateway::lambda_local::events::{Incoming, rest_event};
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

/// The invocation event for `function`.
pub(crate) fn event(function: &str) -> Value {
    match function {
        "worker" => return json!({ "Records": [] }),
        "reconciler" => {
            return json!({ "source": "aws.events", "detail-type": "Scheduled Event", "detail": {} });
        }
        "well-known" => {
            let mut headers = http::HeaderMap::new();
            headers.insert("host", http::HeaderValue::from_static("127.0.0.1"));
            return proxy_event(
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
    proxy_event(&http::Method::POST, "/mcp", &headers, body.as_bytes())
}

/// The REST API proxy event API Gateway sends for a request to `path`.
fn proxy_event(method: &http::Method, path: &str, headers: &http::HeaderMap, body: &[u8]) -> Value {
    rest_event(&Incoming {
        method,
        path,
        query: None,
        headers,
        body,
        resource: path,
        stage: "live",
        domain: "127.0.0.1",
        request_id: "cold-start",
    })
}

/// The stub AWS endpoint: every request answers an empty DynamoDB page, except
/// `/.well-known/jwks.json`, which answers `jwks` (the stub is the issuer of the token rows).
pub(crate) async fn aws_stub(
    listener: tokio::net::TcpListener,
    jwks: Value,
) -> std::io::Result<String> {
    let address = listener.local_addr()?;
    let app = axum::Router::new()
        .route(
            "/.well-known/jwks.json",
            axum::routing::get(move || async move { axum::Json(jwks) }),
        )
        .fallback(|| async {
            (
                [(http::header::CONTENT_TYPE, "application/x-amz-json-1.0")],
                r#"{"Items":[],"Count":0,"ScannedCount":0}"#,
            )
        });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{address}"))
}

pub(crate) fn environment(endpoint: &str) -> Vec<(String, String)> {
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    [
        ("AWS_ENDPOINT_URL", endpoint.to_string()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "bench".into()),
        ("AWS_SECRET_ACCESS_KEY", "bench".into()),
        ("RELEVO_TABLE", "relevo-bench".into()),
        (
            "RELEVO_QUEUE_URL",
            format!("{endpoint}/000000000000/relevo-bench"),
        ),
        ("RELEVO_STATE_KEYS", format!("bench:{key}")),
        ("RELEVO_AUTH", "off".into()),
        ("RUST_LOG", "warn".into()),
        // As the template deploys them: an EMF line per request (the harness collects the
        // functions' output into target/bench/logs, as CloudWatch would).
        ("RELEVO_METRICS", "emf".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// One sample: a fresh runtime, stub, function process and invocation; all gone on return.
fn sample(function: &str, binary: &Path) -> Result<(u64, String), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| e.to_string())?;
        let endpoint = aws_stub(listener, json!({ "keys": [] }))
            .await
            .map_err(|e| e.to_string())?;
        let event = event(function);
        let started = Instant::now();
        let spec = FunctionSpec {
            name: function.to_string(),
            binary: binary.to_path_buf(),
            env: environment(&endpoint),
            memory_mb: 256,
            timeout: Duration::from_secs(30),
            environments: 1,
        };
        let running = start_function(spec).await.map_err(|e| e.to_string())?;
        let answer = running
            .invoke(event, Duration::from_secs(30))
            .await
            .map_err(|e| e.to_string())?;
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

/// The `cold-start` child: `samples` samples of each of `functions` built in `bin_dir`, one line each.
pub fn child(bin_dir: &Path, functions: &[String], samples: usize) -> Result<(), String> {
    for function in functions {
        let binary = bin_dir.join(function);
        if !binary.exists() {
            // Reported as "not built"; `infra/scripts/bench.sh` builds every function first.
            continue;
        }
        for _ in 0..samples {
            let (micros, status) =
                sample(function, &binary).map_err(|e| format!("{function}: {e}"))?;
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
) -> Result<Vec<ColdStart>, Box<dyn std::error::Error + Send + Sync>> {
    let output = tokio::process::Command::new(std::env::current_exe()?)
        .arg("cold-start")
        .arg("--bin-dir")
        .arg(bin_dir)
        .arg("--functions")
        .arg(functions.join(","))
        .arg("--samples")
        .arg(samples.to_string())
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
