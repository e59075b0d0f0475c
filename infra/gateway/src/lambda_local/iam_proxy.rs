//! IAM in front of the emulator: every function calls AWS with credentials of its own, and each
//! call is allowed only if the function's execution policy from the template allows every
//! action it needs on every resource it names (iam-rs evaluates; moto does not check
//! resource-level permissions for DynamoDB).
//!
//! The caller is the access key id in the SigV4 `Credential` (each function gets its own); the
//! action and resources come from the request: `X-Amz-Target` (JSON protocols) or `Action` (the
//! SQS query protocol), and the table, index, queue or secret the body names. As IAM does:
//! `TransactWriteItems` needs `PutItem`/`UpdateItem`/`DeleteItem`/`ConditionCheckItem` on each
//! item's table; a `Query` of an index needs the index ARN; `SendMessageBatch` needs
//! `SendMessage`. A refused call answers `AccessDeniedException` as AWS does and is never
//! forwarded. Every decision is appended to the call log (JSON lines), so a test can list what
//! each function called and which grants were never used.
//!
//! Signatures are not verified (the emulator does not either): this is about which permissions a
//! function needs, not about keeping a local attacker out.
//!
//! Fault injection for tests: `POST /_relevo/stall?secs=N[&actions=dynamodb:PutItem,…][&match=TEXT][&mode=M]`
//! holds every allowed call (or those actions only, or those whose body contains `TEXT`), as a
//! slow store does; `mode` says where (`secs=0` ends any stall):
//! - `front` (the default): in front of the store, for N seconds. A call whose caller gives up
//!   meanwhile (its SDK timeout) is never forwarded: the store never sees it.
//! - `behind`: the store has received the call and holds it for N seconds, then applies it
//!   whether or not its caller still waits (a write that lands after its caller was told it
//!   timed out).
//! - `late`: the store applies the call at once and its answer comes N seconds late (past the
//!   SDK's attempt timeout, which then sends the same request again); only the next `count`
//!   matching calls (default 1).
//!
//! `POST /_relevo/kill?function=F&after=N` kills function F's processes (SIGKILL, every
//! environment) right after the store applied F's N-th write from now, before F hears the answer:
//! a crash between two writes, on the real emulator.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use relevo_template::iam::Authorizer;
use relevo_template::{ACCOUNT_ID, REGION};
use serde_json::{Value, json};

/// One caller: a function and what its execution role allows.
pub struct Caller {
    pub function: String,
    pub role: String,
    pub authorizer: Authorizer,
}

/// One decision, as logged.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Decision {
    pub function: String,
    pub action: String,
    pub resource: String,
    pub allowed: bool,
}

/// Where a stall holds a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StallMode {
    /// Before the store sees it; dropped if its caller gives up.
    Front,
    /// After the store received it: applied when the stall ends, whatever the caller does.
    Behind,
    /// Applied at once; its answer held for the stall's length.
    Late,
}

/// Calls held back (all, or these actions, or those whose body contains `matching`).
struct Stall {
    /// `Front`/`Behind`: when the stall ends.
    until: tokio::time::Instant,
    /// `Late`: how long each answer is held.
    hold: std::time::Duration,
    actions: Option<Vec<String>>,
    matching: Option<String>,
    mode: StallMode,
    /// `Late`: how many more calls it holds.
    left: usize,
}

/// Kill `function` once `after` more of its writes went through.
struct KillAfter {
    function: String,
    after: usize,
}

/// The calls that change the store or a queue (counted for [`KillAfter`]).
const WRITES: [&str; 6] = [
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:TransactWriteItems",
    "dynamodb:BatchWriteItem",
    "sqs:SendMessage",
];

struct Inner {
    stall: Mutex<Option<Stall>>,
    kill: Mutex<Option<KillAfter>>,
    upstream: String,
    callers: HashMap<String, Caller>,
    /// Secret names to ARNs (a `SecretId` may be either).
    secrets: HashMap<String, String>,
    log: Option<Mutex<std::fs::File>>,
    client: Client<HttpConnector, Full<Bytes>>,
}

#[derive(Clone)]
pub struct IamProxy(Arc<Inner>);

impl IamProxy {
    pub fn new(
        upstream: &str,
        callers: HashMap<String, Caller>,
        secrets: HashMap<String, String>,
        log: Option<PathBuf>,
    ) -> std::io::Result<Self> {
        let log = match log {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            )),
            None => None,
        };
        let client = Client::builder(TokioExecutor::new()).build_http();
        Ok(IamProxy(Arc::new(Inner {
            stall: Mutex::new(None),
            kill: Mutex::new(None),
            upstream: upstream.trim_end_matches('/').to_string(),
            callers,
            secrets,
            log,
            client,
        })))
    }

    pub fn router(self) -> Router {
        Router::new()
            .route("/_relevo/stall", axum::routing::post(stall))
            .route("/_relevo/kill", axum::routing::post(arm_kill))
            .fallback(handle)
            .with_state(self)
    }
}

/// The access key id and the service of a SigV4 `Authorization` header.
fn credential(headers: &http::HeaderMap) -> Option<(String, String)> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let scope = value
        .split("Credential=")
        .nth(1)?
        .split([',', ' '])
        .next()?;
    let mut parts = scope.split('/');
    let key = parts.next()?.to_string();
    let service = parts.nth(2)?.to_string();
    Some((key, service))
}

/// The operation: `X-Amz-Target` (`DynamoDB_20120810.PutItem`) or the query protocol's `Action`.
fn operation(headers: &http::HeaderMap, body: &[u8]) -> Option<String> {
    if let Some(target) = headers.get("x-amz-target").and_then(|t| t.to_str().ok()) {
        return target.rsplit('.').next().map(String::from);
    }
    form_urlencoded::parse(body)
        .find(|(k, _)| k == "Action")
        .map(|(_, v)| v.into_owned())
}

fn table_arn(table: &str) -> String {
    format!("arn:aws:dynamodb:{REGION}:{ACCOUNT_ID}:table/{table}")
}

fn queue_arn(queue_url_or_name: &str) -> String {
    let name = queue_url_or_name
        .rsplit('/')
        .next()
        .unwrap_or(queue_url_or_name);
    format!("arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{name}")
}

/// The (IAM action, resource ARN) pairs a call needs.
fn required(inner: &Inner, service: &str, operation: &str, body: &[u8]) -> Vec<(String, String)> {
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let field = |name: &str| -> Option<String> {
        json[name].as_str().map(String::from).or_else(|| {
            form_urlencoded::parse(body)
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    };
    let one = |action: &str, resource: String| vec![(format!("{service}:{action}"), resource)];
    match service {
        "dynamodb" => match operation {
            "TransactWriteItems" => json["TransactItems"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|item| {
                    let (kind, write) = item.as_object()?.iter().next()?;
                    let action = match kind.as_str() {
                        "Put" => "PutItem",
                        "Update" => "UpdateItem",
                        "Delete" => "DeleteItem",
                        "ConditionCheck" => "ConditionCheckItem",
                        _ => return None,
                    };
                    Some((
                        format!("dynamodb:{action}"),
                        table_arn(write["TableName"].as_str()?),
                    ))
                })
                .collect(),
            "TransactGetItems" => json["TransactItems"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|item| {
                    Some((
                        "dynamodb:GetItem".to_string(),
                        table_arn(item["Get"]["TableName"].as_str()?),
                    ))
                })
                .collect(),
            "BatchGetItem" | "BatchWriteItem" => json["RequestItems"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(table, _)| (format!("dynamodb:{operation}"), table_arn(table)))
                .collect(),
            _ => {
                let table = field("TableName").unwrap_or_default();
                let resource = match field("IndexName") {
                    Some(index) => format!("{}/index/{index}", table_arn(&table)),
                    None => table_arn(&table),
                };
                one(operation, resource)
            }
        },
        "sqs" => {
            let action = operation.strip_suffix("Batch").unwrap_or(operation);
            let queue = field("QueueUrl")
                .or_else(|| field("QueueName"))
                .unwrap_or_default();
            one(
                action,
                if queue.is_empty() {
                    "*".into()
                } else {
                    queue_arn(&queue)
                },
            )
        }
        "secretsmanager" => {
            let secret = field("SecretId").unwrap_or_default();
            let arn = inner.secrets.get(&secret).cloned().unwrap_or(secret);
            one(operation, arn)
        }
        other => one(
            operation,
            format!("arn:aws:{other}:{REGION}:{ACCOUNT_ID}:*"),
        ),
    }
}

fn denied(service: &str, caller: &str, role: &str, action: &str, resource: &str) -> Response {
    let content_type = if service == "dynamodb" || service == "sqs" {
        "application/x-amz-json-1.0"
    } else {
        "application/x-amz-json-1.1"
    };
    let message = format!(
        "User: arn:aws:sts::{ACCOUNT_ID}:assumed-role/{role}/{caller} is not authorized to perform: {action} on resource: {resource} because no identity-based policy allows the {action} action"
    );
    let body =
        json!({ "__type": "com.amazon.coral.service#AccessDeniedException", "message": message });
    (
        http::StatusCode::BAD_REQUEST,
        [
            (http::header::CONTENT_TYPE, content_type),
            (
                http::HeaderName::from_static("x-amzn-errortype"),
                "AccessDeniedException",
            ),
        ],
        body.to_string(),
    )
        .into_response()
}

async fn stall(State(proxy): State<IamProxy>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default();
    let param = |name: &str| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let secs: u64 = param("secs").and_then(|s| s.parse().ok()).unwrap_or(0);
    let actions = param("actions").map(|a| a.split(',').map(String::from).collect());
    let mode = match param("mode").as_deref() {
        None | Some("front") => StallMode::Front,
        Some("behind") => StallMode::Behind,
        Some("late") => StallMode::Late,
        Some(_) => {
            return (
                http::StatusCode::BAD_REQUEST,
                "mode is front, behind or late",
            )
                .into_response();
        }
    };
    let hold = std::time::Duration::from_secs(secs);
    let stall = (secs > 0).then(|| Stall {
        until: tokio::time::Instant::now() + hold,
        hold,
        actions,
        matching: param("match"),
        mode,
        left: param("count").and_then(|c| c.parse().ok()).unwrap_or(1),
    });
    if let Ok(mut current) = proxy.0.stall.lock() {
        *current = stall;
    }
    http::StatusCode::NO_CONTENT.into_response()
}

async fn arm_kill(State(proxy): State<IamProxy>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default();
    let param = |name: &str| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let (Some(function), Some(after)) = (
        param("function"),
        param("after").and_then(|n| n.parse().ok()),
    ) else {
        return (
            http::StatusCode::BAD_REQUEST,
            "function and after are required",
        )
            .into_response();
    };
    if let Ok(mut kill) = proxy.0.kill.lock() {
        *kill = (after > 0).then_some(KillAfter { function, after });
    }
    http::StatusCode::NO_CONTENT.into_response()
}

/// Whether this write by `function` is the one to die after (disarms when it is).
fn dies_after(inner: &Inner, function: &str, actions: &[String]) -> bool {
    if !actions.iter().any(|a| WRITES.contains(&a.as_str())) {
        return false;
    }
    let Ok(mut kill) = inner.kill.lock() else {
        return false;
    };
    let Some(armed) = kill.as_mut().filter(|k| k.function == function) else {
        return false;
    };
    armed.after -= 1;
    if armed.after > 0 {
        return false;
    }
    *kill = None;
    true
}

/// SIGKILLs every environment of `function` (its pid files in `$RELEVO_LAMBDA_PID_DIR`).
fn kill_function(function: &str) {
    let Ok(dir) = std::env::var("RELEVO_LAMBDA_PID_DIR") else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let ours = name == format!("{function}.pid")
            || (name.starts_with(&format!("{function}.")) && name.ends_with(".pid"));
        if ours && let Ok(pid) = std::fs::read_to_string(entry.path()) {
            tracing::warn!(%function, pid = %pid.trim(), "killed after its write (fault injection)");
            let _ = std::process::Command::new("kill")
                .args(["-9", pid.trim()])
                .status();
        }
    }
}

/// How a call of `actions` with `body` is held now, if a stall covers it: where, and until when
/// (`Late`: for how long after the store answered).
fn held(
    inner: &Inner,
    actions: &[String],
    body: &[u8],
) -> Option<(StallMode, tokio::time::Instant)> {
    let mut current = inner.stall.lock().ok()?;
    let stall = current.as_mut()?;
    let covered = stall
        .actions
        .as_ref()
        .is_none_or(|only| actions.iter().any(|a| only.contains(a)))
        && stall
            .matching
            .as_ref()
            .is_none_or(|text| body.windows(text.len()).any(|w| w == text.as_bytes()));
    if !covered {
        return None;
    }
    let now = tokio::time::Instant::now();
    if stall.mode == StallMode::Late {
        stall.left = stall.left.saturating_sub(1);
        let hold = stall.hold;
        if stall.left == 0 {
            *current = None;
        }
        return Some((StallMode::Late, now + hold));
    }
    (stall.until > now).then_some((stall.mode, stall.until))
}

async fn handle(State(proxy): State<IamProxy>, request: Request) -> Response {
    let inner = &proxy.0;
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 16 * 1024 * 1024).await else {
        return http::StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let Some((key, service)) = credential(&parts.headers) else {
        return (http::StatusCode::FORBIDDEN, "MissingAuthenticationToken").into_response();
    };
    let Some(caller) = inner.callers.get(&key) else {
        return (
            http::StatusCode::FORBIDDEN,
            "The security token included in the request is invalid",
        )
            .into_response();
    };
    let operation = operation(&parts.headers, &body).unwrap_or_default();
    let needed = required(inner, &service, &operation, &body);
    for (action, resource) in &needed {
        let allowed = caller.authorizer.allows(action, resource);
        record(
            inner,
            Decision {
                function: caller.function.clone(),
                action: action.clone(),
                resource: resource.clone(),
                allowed,
            },
        );
        if !allowed {
            tracing::warn!(function = %caller.function, %action, %resource, "denied by the function's execution policy");
            return denied(&service, &caller.function, &caller.role, action, resource);
        }
    }
    let actions: Vec<String> = needed.into_iter().map(|(action, _)| action).collect();
    let answer = match held(inner, &actions, &body) {
        None => forward(inner, parts, body).await,
        Some((StallMode::Front, until)) => {
            // If the caller gives up first, this future is dropped and the call never reaches the store.
            tokio::time::sleep_until(until).await;
            forward(inner, parts, body).await
        }
        Some((StallMode::Behind, until)) => {
            // The store has it: it is applied at the end of the stall even if the caller gave up.
            let inner = proxy.0.clone();
            let applied = tokio::spawn(async move {
                tokio::time::sleep_until(until).await;
                forward(&inner, parts, body).await
            });
            applied
                .await
                .unwrap_or_else(|_| http::StatusCode::BAD_GATEWAY.into_response())
        }
        Some((StallMode::Late, until)) => {
            let inner = proxy.0.clone();
            let applied = tokio::spawn(async move { forward(&inner, parts, body).await });
            let answer = applied
                .await
                .unwrap_or_else(|_| http::StatusCode::BAD_GATEWAY.into_response());
            tokio::time::sleep_until(until).await;
            answer
        }
    };
    if answer.status().is_success() && dies_after(inner, &caller.function, &actions) {
        kill_function(&caller.function);
        return http::StatusCode::BAD_GATEWAY.into_response();
    }
    answer
}

fn record(inner: &Inner, decision: Decision) {
    if let Some(log) = &inner.log
        && let Ok(mut file) = log.lock()
        && let Ok(line) = serde_json::to_string(&decision)
    {
        let _ = writeln!(file, "{line}");
    }
}

async fn forward(inner: &Inner, parts: http::request::Parts, body: Bytes) -> Response {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let Ok(uri) = format!("{}{path}", inner.upstream).parse::<http::Uri>() else {
        return http::StatusCode::BAD_GATEWAY.into_response();
    };
    let mut request = http::Request::builder().method(parts.method).uri(uri);
    for (name, value) in &parts.headers {
        if name != http::header::HOST {
            request = request.header(name, value);
        }
    }
    let Ok(request) = request.body(Full::new(body)) else {
        return http::StatusCode::BAD_GATEWAY.into_response();
    };
    match inner.client.request(request).await {
        Ok(response) => {
            let (parts, body) = response.into_parts();
            match body.collect().await {
                Ok(bytes) => Response::from_parts(parts, Body::from(bytes.to_bytes())),
                Err(_) => http::StatusCode::BAD_GATEWAY.into_response(),
            }
        }
        Err(error) => {
            tracing::warn!(%error, "the emulator did not answer");
            http::StatusCode::BAD_GATEWAY.into_response()
        }
    }
}

/// Reads a call log written by the proxy.
pub fn read_log(path: &std::path::Path) -> std::io::Result<Vec<Decision>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

/// Where the grants of a call log's run are written: `<log>.grants.json`.
pub fn grants_path(log: &std::path::Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".grants.json");
    PathBuf::from(name)
}

/// Writes the actions each function's policy allows (`{"ToolsCallFunction": ["dynamodb:GetItem", …]}`),
/// for the report of grants never used.
pub fn write_grants(
    log: &std::path::Path,
    policies: &[relevo_template::iam::ExecutionPolicy],
) -> std::io::Result<()> {
    let grants: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> = policies
        .iter()
        .map(|p| {
            (
                p.function.as_str(),
                p.grants().into_iter().flat_map(|g| g.actions).collect(),
            )
        })
        .collect();
    std::fs::write(
        grants_path(log),
        serde_json::to_string_pretty(&grants).map_err(std::io::Error::other)?,
    )
}

/// What a set of runs shows: every refused call, and per function the granted actions no call
/// used (a grant to narrow, or a path no test took).
#[derive(Debug, Default)]
pub struct Report {
    pub denied: Vec<Decision>,
    pub used: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
    pub unused: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
}

/// The report over call logs (each with its grants file beside it).
pub fn report(logs: &[PathBuf]) -> std::io::Result<Report> {
    let mut report = Report::default();
    let mut granted: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for log in logs {
        let grants: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            serde_json::from_str(&std::fs::read_to_string(grants_path(log))?)
                .map_err(std::io::Error::other)?;
        for (function, actions) in grants {
            granted.entry(function).or_default().extend(actions);
        }
        for decision in read_log(log)? {
            if decision.allowed {
                report
                    .used
                    .entry(decision.function.clone())
                    .or_default()
                    .insert(decision.action.clone());
            } else {
                report.denied.push(decision);
            }
        }
    }
    for (function, actions) in granted {
        let used = report.used.get(&function).cloned().unwrap_or_default();
        let unused: std::collections::BTreeSet<String> = actions
            .into_iter()
            .filter(|grant| !used.iter().any(|action| grant.eq_ignore_ascii_case(action)))
            .collect();
        if !unused.is_empty() {
            report.unused.insert(function, unused);
        }
    }
    Ok(report)
}
