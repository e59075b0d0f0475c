//! Local Lambda mode: the compiled function binaries run as they do in AWS.
//!
//! For each function this module is the Lambda Runtime API (`/2018-06-01/runtime/invocation/
//! next`, `…/{id}/response`, `…/{id}/error`, `…/init/error`) on its own loopback port, and a
//! supervisor that starts the binary with the `AWS_LAMBDA_*` environment, restarts it when it dies
//! and fails the invocation it held (as Lambda answers 502 for a crashed function). In front of
//! them, [`front_door`] plays API Gateway: REST proxy events routed on `Mcp-Method` exactly like the
//! routing rules (unknown or absent → the catch-all `mcp`), and [`sqs_event_source`] plays the SQS
//! event source mapping for the worker (partial batch failures honoured).
//!
//! A function that answers with response streaming (`Lambda-Runtime-Function-Response-Mode:
//! streaming`: a JSON prelude, eight NUL bytes, then the body, errors as trailers) is relayed
//! chunk by chunk, as a REST API with `ResponseTransferMode: STREAM` does.
//!
//! One process per function handles one invocation at a time, like one Lambda execution
//! environment. Everything listens on 127.0.0.1.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::route_for;
use relevo_protocol::Route;

/// What a function answered.
pub enum Answer {
    /// The handler's JSON result.
    Buffered(Value),
    /// An HTTP integration response: its prelude (`statusCode`, `headers`, `cookies`), then the
    /// body as the function writes it (an `Err` if the function failed or died mid-stream).
    Streamed { prelude: Value, body: mpsc::Receiver<Result<Bytes, String>> },
}

type AnswerSender = oneshot::Sender<Result<Answer, String>>;

/// One pending invocation: the event, and where its answer goes.
struct Invocation {
    id: String,
    event: Value,
    answer: AnswerSender,
}

/// The Runtime API of one execution environment of a function, and the answers it is waiting
/// for. The environments of a function share its queue of pending invocations.
struct Runtime {
    pending: Arc<Mutex<mpsc::Receiver<Invocation>>>,
    in_flight: Mutex<HashMap<String, AnswerSender>>,
}

/// A function the emulator runs: its name, its Runtime API sender, its process.
#[derive(Clone)]
pub struct Function {
    pub name: String,
    queue: mpsc::Sender<Invocation>,
}

impl Function {
    /// Invokes the function with `event`; waits at most `timeout` for its (buffered) answer.
    pub async fn invoke(&self, event: Value, timeout: Duration) -> Result<Value, String> {
        match self.invoke_http(event, timeout).await? {
            Answer::Buffered(value) => Ok(value),
            Answer::Streamed { .. } => Err(format!("{} streamed an answer to a buffered invoke", self.name)),
        }
    }

    /// Invokes the function with `event`; waits at most `timeout` for a buffered answer or the
    /// prelude of a streamed one.
    pub async fn invoke_http(&self, event: Value, timeout: Duration) -> Result<Answer, String> {
        let (answer, receiver) = oneshot::channel();
        let id = relevo_state::Ids::new_id(&relevo_state::RandomIds);
        self.queue.send(Invocation { id, event, answer }).await.map_err(|_| format!("{} is not running", self.name))?;
        match tokio::time::timeout(timeout, receiver).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(format!("{} died during the invocation", self.name)),
            Err(_) => Err(format!("{} timed out", self.name)),
        }
    }
}

async fn next_invocation(State(runtime): State<Arc<Runtime>>) -> Response {
    let invocation = runtime.pending.lock().await.recv().await;
    let Some(invocation) = invocation else { return http::StatusCode::GONE.into_response() };
    runtime.in_flight.lock().await.insert(invocation.id.clone(), invocation.answer);
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() + 900_000)
        .unwrap_or(0);
    Response::builder()
        .header("lambda-runtime-aws-request-id", &invocation.id)
        .header("lambda-runtime-deadline-ms", deadline.to_string())
        .header("lambda-runtime-invoked-function-arn", "arn:aws:lambda:us-east-1:000000000000:function:local")
        .header("lambda-runtime-trace-id", "Root=1-00000000-000000000000000000000000")
        .header("content-type", "application/json")
        .body(Body::from(invocation.event.to_string()))
        .unwrap_or_else(|_| http::StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn respond(State(runtime): State<Arc<Runtime>>, Path(id): Path<String>, request: Request) -> Response {
    let Some(answer) = runtime.in_flight.lock().await.remove(&id) else {
        return http::StatusCode::ACCEPTED.into_response();
    };
    let streaming = request.headers().get("lambda-runtime-function-response-mode").is_some_and(|m| m == "streaming");
    if streaming {
        relay_stream(request.into_body(), answer).await;
    } else {
        // Lambda's limit for a buffered response payload.
        match axum::body::to_bytes(request.into_body(), 6 * 1024 * 1024).await {
            Ok(body) => {
                let value = serde_json::from_slice(&body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into()));
                let _ = answer.send(Ok(Answer::Buffered(value)));
            }
            Err(error) => {
                let _ = answer.send(Err(format!("the response could not be read: {error}")));
            }
        }
    }
    http::StatusCode::ACCEPTED.into_response()
}

/// Reads a streamed response: the prelude up to the eight-NUL delimiter is handed to the waiting
/// invoker, then every body chunk as it arrives; an error trailer or a broken stream ends the body
/// with an error.
async fn relay_stream(mut body: Body, answer: AnswerSender) {
    use http_body_util::BodyExt;
    const DELIMITER: &[u8] = &[0; 8];
    let mut head = Vec::new();
    let (chunks, receiver) = mpsc::channel(64);
    let mut answer = Some((answer, receiver));
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(error) => {
                let error = format!("the response stream broke: {error}");
                match answer.take() {
                    Some((answer, _)) => drop(answer.send(Err(error))),
                    None => drop(chunks.send(Err(error)).await),
                }
                return;
            }
        };
        if let Some(trailers) = frame.trailers_ref()
            && let Some(kind) = trailers.get("lambda-runtime-function-error-type")
        {
            let error = format!("function error mid-stream: {}", String::from_utf8_lossy(kind.as_bytes()));
            match answer.take() {
                Some((answer, _)) => drop(answer.send(Err(error))),
                None => drop(chunks.send(Err(error)).await),
            }
            return;
        }
        let Ok(data) = frame.into_data() else { continue };
        match answer.take() {
            None => drop(chunks.send(Ok(data)).await),
            Some((sender, receiver)) => {
                head.extend_from_slice(&data);
                let Some(end) = head.windows(DELIMITER.len()).position(|w| w == DELIMITER) else {
                    answer = Some((sender, receiver));
                    continue;
                };
                let prelude = serde_json::from_slice(&head[..end]).unwrap_or(Value::Null);
                let rest = Bytes::copy_from_slice(&head[end + DELIMITER.len()..]);
                if !rest.is_empty() {
                    let _ = chunks.send(Ok(rest)).await;
                }
                let _ = sender.send(Ok(Answer::Streamed { prelude, body: receiver }));
            }
        }
    }
    if let Some((answer, _)) = answer {
        let _ = answer.send(Err("the stream ended before its prelude".into()));
    }
}

async fn fail(State(runtime): State<Arc<Runtime>>, Path(id): Path<String>, body: Bytes) -> Response {
    if let Some(answer) = runtime.in_flight.lock().await.remove(&id) {
        let _ = answer.send(Err(format!("function error: {}", String::from_utf8_lossy(&body))));
    }
    http::StatusCode::ACCEPTED.into_response()
}

async fn init_error(body: Bytes) -> Response {
    tracing::error!(error = %String::from_utf8_lossy(&body), "function init error");
    http::StatusCode::ACCEPTED.into_response()
}

/// Starts `instances` execution environments of `name`: each its own Runtime API and its own
/// process of `binary` with `env`, restarted when it dies; all take invocations from one queue.
pub async fn start_function(
    name: &str,
    binary: PathBuf,
    env: Vec<(String, String)>,
    instances: usize,
) -> std::io::Result<Function> {
    let (queue, pending) = mpsc::channel(64);
    let pending = Arc::new(Mutex::new(pending));
    for instance in 0..instances.max(1) {
        let runtime = Arc::new(Runtime { pending: pending.clone(), in_flight: Mutex::new(HashMap::new()) });
        let api = Router::new()
            .route("/2018-06-01/runtime/invocation/next", axum::routing::get(next_invocation))
            .route("/2018-06-01/runtime/invocation/{id}/response", axum::routing::post(respond))
            .route("/2018-06-01/runtime/invocation/{id}/error", axum::routing::post(fail))
            .route("/2018-06-01/runtime/init/error", axum::routing::post(init_error))
            .with_state(runtime.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, api).await });
        tokio::spawn(supervise(name.to_string(), instance, binary.clone(), env.clone(), address, runtime));
    }
    Ok(Function { name: name.to_string(), queue })
}

/// Keeps one execution environment's process running; when it dies, fails what it held.
async fn supervise(
    name: String,
    instance: usize,
    binary: PathBuf,
    env: Vec<(String, String)>,
    address: std::net::SocketAddr,
    runtime: Arc<Runtime>,
) {
    loop {
        let mut command = tokio::process::Command::new(&binary);
        command
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("AWS_LAMBDA_RUNTIME_API", address.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", &name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .env("AWS_LAMBDA_LOG_STREAM_NAME", format!("local-{instance}"))
            .kill_on_drop(true);
        match command.spawn() {
            Ok(mut child) => {
                if let Some(pid) = child.id() {
                    tracing::info!(function = %name, instance, pid, "function started");
                    write_pid(&name, instance, pid);
                }
                let status = child.wait().await;
                tracing::warn!(function = %name, instance, ?status, "function exited; failing what it held and restarting");
            }
            Err(error) => tracing::error!(function = %name, %error, "cannot start the function"),
        }
        // What the dead process held will never be answered: fail it, as Lambda would.
        for (_, answer) in runtime.in_flight.lock().await.drain() {
            let _ = answer.send(Err("the function's process died".into()));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Records function pids in `$RELEVO_LAMBDA_PID_DIR/<name>.pid` (the first environment) or
/// `<name>.<instance>.pid`, for fault-injection tests.
fn write_pid(name: &str, instance: usize, pid: u32) {
    if let Ok(dir) = std::env::var("RELEVO_LAMBDA_PID_DIR") {
        let file = if instance == 0 { format!("{name}.pid") } else { format!("{name}.{instance}.pid") };
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(PathBuf::from(dir).join(file), pid.to_string());
    }
}

/// The REST API proxy event (v1) API Gateway sends for `request`.
pub fn rest_proxy_event(method: &http::Method, path: &str, headers: &http::HeaderMap, body: &[u8]) -> Value {
    let mut single = serde_json::Map::new();
    let mut multi: serde_json::Map<String, Value> = serde_json::Map::new();
    for (name, value) in headers {
        let value = value.to_str().unwrap_or_default().to_string();
        single.insert(name.as_str().to_string(), json!(value));
        match multi.get_mut(name.as_str()) {
            Some(Value::Array(values)) => values.push(json!(value)),
            _ => {
                multi.insert(name.as_str().to_string(), json!([value]));
            }
        }
    }
    let text = std::str::from_utf8(body).ok();
    json!({
        "resource": path,
        "path": path,
        "httpMethod": method.as_str(),
        "headers": single,
        "multiValueHeaders": multi,
        "queryStringParameters": null,
        "multiValueQueryStringParameters": null,
        "pathParameters": null,
        "stageVariables": null,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1"),
            "httpMethod": method.as_str(),
            "path": path,
            "protocol": "HTTP/1.1",
            "requestId": relevo_state::Ids::new_id(&relevo_state::RandomIds),
            "requestTimeEpoch": 0,
            "resourceId": "local",
            "resourcePath": path,
            "stage": "local",
            "identity": { "sourceIp": "127.0.0.1" }
        },
        "body": text.map(|t| json!(t)).unwrap_or_else(|| {
            use base64::Engine;
            json!(base64::engine::general_purpose::STANDARD.encode(body))
        }),
        "isBase64Encoded": text.is_none(),
    })
}

/// Turns a proxy integration response (`statusCode`, `headers`, `multiValueHeaders`, `body`,
/// `isBase64Encoded`) into HTTP.
pub fn proxy_response(answer: &Value) -> Response {
    let multi = answer["multiValueHeaders"].as_object().is_some_and(|h| !h.is_empty());
    let builder = response_head(answer, if multi { "multiValueHeaders" } else { "headers" });
    let body = answer["body"].as_str().unwrap_or_default();
    let bytes = if answer["isBase64Encoded"].as_bool() == Some(true) {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.decode(body).unwrap_or_default()
    } else {
        body.as_bytes().to_vec()
    };
    builder.body(Body::from(bytes)).unwrap_or_else(|_| http::StatusCode::BAD_GATEWAY.into_response())
}

/// Turns a streamed integration response into HTTP, relaying the body as it arrives.
fn streamed_response(prelude: &Value, body: mpsc::Receiver<Result<Bytes, String>>) -> Response {
    let mut builder = response_head(prelude, "headers");
    for cookie in prelude["cookies"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        builder = builder.header(http::header::SET_COOKIE, cookie);
    }
    let chunks = futures_util::stream::unfold(body, |mut body| async move {
        body.recv().await.map(|chunk| (chunk.map_err(std::io::Error::other), body))
    });
    builder.body(Body::from_stream(chunks)).unwrap_or_else(|_| http::StatusCode::BAD_GATEWAY.into_response())
}

/// The status (`statusCode`, 502 when absent or invalid) and the headers under `headers_key`
/// (each a value or a list of values) of a function's answer.
fn response_head(answer: &Value, headers_key: &str) -> http::response::Builder {
    let status = answer["statusCode"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
        .and_then(|s| http::StatusCode::from_u16(s).ok())
        .unwrap_or(http::StatusCode::BAD_GATEWAY);
    let mut builder = Response::builder().status(status);
    for (name, values) in answer[headers_key].as_object().into_iter().flatten() {
        let values: Vec<&str> = match values {
            Value::Array(values) => values.iter().filter_map(Value::as_str).collect(),
            value => value.as_str().into_iter().collect(),
        };
        for value in values {
            builder = builder.header(name.as_str(), value);
        }
    }
    builder
}

/// What the front door needs.
#[derive(Clone)]
pub struct FrontDoor {
    pub functions: Arc<HashMap<String, Function>>,
    pub jwks: Option<Value>,
    pub inject_token: Option<crate::InjectedToken>,
    pub timeout: Duration,
}

/// API Gateway: routing rules on `Mcp-Method` for `/mcp`, the metadata paths to `well-known`,
/// `/approvals/...` to `approvals`, and (dev issuer) the JWKS the functions verify tokens against.
pub fn front_door(front: FrontDoor) -> Router {
    let mut router = Router::new().route("/mcp", axum::routing::any(proxy_mcp));
    for path in relevo_auth::METADATA_PATHS {
        router = router.route(path, axum::routing::any(proxy_well_known));
    }
    router = router.route("/approvals", axum::routing::any(proxy_approvals));
    router = router.route("/approvals/{*rest}", axum::routing::any(proxy_approvals));
    router.route("/.well-known/jwks.json", axum::routing::get(jwks)).with_state(front)
}

async fn proxy_approvals(State(front): State<FrontDoor>, request: Request) -> Response {
    invoke_with(&front, "approvals", request).await
}

async fn jwks(State(front): State<FrontDoor>) -> Response {
    match front.jwks {
        Some(keys) => axum::Json(keys).into_response(),
        None => http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn proxy_well_known(State(front): State<FrontDoor>, request: Request) -> Response {
    invoke_with(&front, "well-known", request).await
}

async fn proxy_mcp(State(front): State<FrontDoor>, request: Request) -> Response {
    let function = match route_for(request.headers()) {
        Route::Only(method) => method.function_name(),
        Route::All => "mcp",
    };
    invoke_with(&front, function, request).await
}

async fn invoke_with(front: &FrontDoor, function: &str, request: Request) -> Response {
    let Some(target) = front.functions.get(function) else { return http::StatusCode::NOT_FOUND.into_response() };
    let (mut parts, body) = request.into_parts();
    if let Some(injected) = &front.inject_token
        && !parts.headers.contains_key(http::header::AUTHORIZATION)
        && let Some(value) = injected.mint().and_then(|t| http::HeaderValue::from_str(&format!("Bearer {t}")).ok())
    {
        parts.headers.insert(http::header::AUTHORIZATION, value);
    }
    // API Gateway's payload limit (10 MB); the function applies its own, smaller one.
    let Ok(bytes) = axum::body::to_bytes(body, 10 * 1024 * 1024).await else {
        return http::StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let event = rest_proxy_event(&parts.method, parts.uri.path(), &parts.headers, &bytes);
    match target.invoke_http(event, front.timeout).await {
        Ok(Answer::Buffered(answer)) => proxy_response(&answer),
        Ok(Answer::Streamed { prelude, body }) => streamed_response(&prelude, body),
        Err(error) => {
            tracing::warn!(function, %error, "invocation failed");
            (http::StatusCode::BAD_GATEWAY, axum::Json(json!({ "message": "Internal server error" }))).into_response()
        }
    }
}

/// The SQS event source mapping: receive up to 10, invoke the worker with an SQS event, delete
/// what did not fail (`batchItemFailures`); failed messages reappear after the visibility timeout.
pub async fn sqs_event_source(
    client: aws_sdk_sqs::Client,
    queue_url: String,
    arn: String,
    worker: Function,
    visibility_secs: i32,
) {
    loop {
        let received = client
            .receive_message()
            .queue_url(&queue_url)
            .max_number_of_messages(10)
            .visibility_timeout(visibility_secs)
            .wait_time_seconds(1)
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .send()
            .await;
        let messages = match received {
            Ok(output) => output.messages.unwrap_or_default(),
            Err(error) => {
                tracing::warn!(error = %error.into_service_error(), "receive failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if messages.is_empty() {
            continue;
        }
        let records: Vec<Value> = messages
            .iter()
            .map(|m| {
                let attributes: serde_json::Map<String, Value> = m
                    .attributes()
                    .map(|a| a.iter().map(|(k, v)| (k.as_str().to_string(), json!(v))).collect())
                    .unwrap_or_default();
                json!({
                    "messageId": m.message_id(), "receiptHandle": m.receipt_handle(), "body": m.body(),
                    "attributes": attributes, "messageAttributes": {}, "md5OfBody": m.md5_of_body(),
                    "eventSource": "aws:sqs", "eventSourceARN": arn, "awsRegion": "us-east-1"
                })
            })
            .collect();
        let failed: Vec<String> =
            match worker.invoke(json!({ "Records": records }), Duration::from_secs(visibility_secs as u64)).await {
                Ok(answer) => answer["batchItemFailures"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f["itemIdentifier"].as_str().map(String::from))
                    .collect(),
                // The whole batch failed (crash, timeout): every message comes back after its visibility.
                Err(error) => {
                    tracing::warn!(%error, "worker invocation failed; the batch will be redelivered");
                    continue;
                }
            };
        for message in messages.iter().filter(|m| !failed.iter().any(|f| Some(f.as_str()) == m.message_id())) {
            if let Some(receipt) = message.receipt_handle() {
                let _ = client.delete_message().queue_url(&queue_url).receipt_handle(receipt).send().await;
            }
        }
    }
}

/// The schedule of the reconciler: an EventBridge scheduled event every `every`.
pub async fn schedule(reconciler: Function, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let event = json!({
            "version": "0", "id": relevo_state::Ids::new_id(&relevo_state::RandomIds), "detail-type": "Scheduled Event",
            "source": "aws.events", "account": "000000000000", "region": "us-east-1", "resources": [], "detail": {}
        });
        if let Err(error) = reconciler.invoke(event, Duration::from_secs(60)).await {
            tracing::warn!(%error, "reconciler invocation failed");
        }
    }
}
