//! Test support: build a gateway router around an app and send it requests in-process.

pub mod inventory;
pub mod race;

use std::sync::Arc;

use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Request, StatusCode};
use http_body_util::BodyExt;
use relevo_protocol::{App, Clock, KeyRing, McpServer, NoAuth, ServerConfig};
use serde_json::{Value, json};
use tower::ServiceExt;

pub const VERSION: &str = "2026-07-28";

/// A fixed test key, so tests are repeatable.
pub fn test_keys() -> KeyRing {
    KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key is valid")
}

/// A server without authentication (the ladder and handler tests); see `tests/auth.rs` for auth.
pub fn server(app: App, config: ServerConfig, clock: Arc<dyn Clock>) -> McpServer {
    McpServer::new(app, config, test_keys(), Arc::new(NoAuth)).with_clock(clock)
}

pub fn gateway_options() -> relevo_local::GatewayOptions {
    relevo_local::GatewayOptions {
        max_body_bytes: 1024 * 1024,
        ..Default::default()
    }
}

pub fn router(server: McpServer) -> Router {
    relevo_local::router(server, gateway_options())
}

/// The default configuration, except that listen streams end at once (tests read whole bodies).
pub fn test_config() -> ServerConfig {
    ServerConfig {
        listen_max_secs: 0,
        ..ServerConfig::default()
    }
}

pub fn conformance_router() -> Router {
    router(McpServer::new(
        relevo_conformance::app(),
        test_config(),
        test_keys(),
        Arc::new(NoAuth),
    ))
}

/// The standard `_meta` envelope with these client capabilities.
pub fn envelope(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "relevo-tests", "version": "0" }
    })
}

/// A JSON-RPC request with every standard header set to match its body.
pub fn rpc(id: u64, method: &str, params: Value) -> Request<axum::body::Body> {
    rpc_as(None, id, method, params)
}

/// [`rpc`] with `Authorization: Bearer <token>` when a token is given.
pub fn rpc_as(
    token: Option<&str>,
    id: u64,
    method: &str,
    mut params: Value,
) -> Request<axum::body::Body> {
    if params.get("_meta").is_none() {
        params["_meta"] = envelope(json!({ "elicitation": {}, "sampling": {}, "roots": {} }));
    }
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let mut builder = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", method);
    let params = &body["params"];
    if let Some(name) = params
        .get("name")
        .or(params.get("uri"))
        .or(params.get("taskId"))
        .and_then(Value::as_str)
    {
        builder = builder.header("mcp-name", name);
    }
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    builder
        .body(axum::body::Body::from(body.to_string()))
        .expect("a valid request")
}

/// A request with exactly these headers and this raw body.
/// A 2025-11-25 (handshake-era) POST with a bearer token, inside `session` once it has one.
pub fn legacy_post(token: &str, session: Option<&str>, body: &Value) -> Request<axum::body::Body> {
    let mut request = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"));
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    request
        .body(axum::body::Body::from(body.to_string()))
        .expect("a request built from valid parts")
}

pub fn raw(
    method: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Request<axum::body::Body> {
    let mut request = Request::builder()
        .method(method)
        .uri("/mcp")
        .body(axum::body::Body::from(body.into()))
        .expect("valid");
    let map: &mut HeaderMap = request.headers_mut();
    for (name, value) in headers {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).expect("header name"),
            HeaderValue::from_bytes(value.as_bytes()).expect("header value"),
        );
    }
    request
}

/// The standard headers of a valid request, for tests that then change one.
pub fn good_headers(method: &str) -> Vec<(&'static str, String)> {
    vec![
        ("host", "localhost:8080".into()),
        ("content-type", "application/json".into()),
        ("accept", "application/json, text/event-stream".into()),
        ("mcp-protocol-version", VERSION.into()),
        ("mcp-method", method.into()),
    ]
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
}

impl Reply {
    /// The body as JSON; for an SSE body, the last `data:` frame (the response).
    pub fn json(&self) -> Value {
        if self.is_sse() {
            return self.sse_messages().pop().unwrap_or(Value::Null);
        }
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    pub fn is_sse(&self) -> bool {
        self.headers
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
    }

    pub fn sse_messages(&self) -> Vec<Value> {
        self.text
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect()
    }
}

pub async fn send(router: &Router, request: Request<axum::body::Body>) -> Reply {
    let response = router
        .clone()
        .oneshot(request)
        .await
        .expect("the router is infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body reads")
        .to_bytes();
    Reply {
        status,
        headers,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The dev issuer of `http://127.0.0.1:8080`, its settings and an authenticator trusting it.
pub fn dev_auth() -> (
    relevo_auth::AuthSettings,
    relevo_auth::DevIssuer,
    relevo_auth::BearerAuthenticator,
) {
    let origin = "http://127.0.0.1:8080";
    let vars = [("RELEVO_AUTH", "dev"), ("RELEVO_AUTH_ALGORITHMS", "ES256")];
    let settings = relevo_auth::AuthSettings::load(
        |n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        },
        origin,
    )
    .expect("dev settings are valid");
    let issuer = relevo_auth::DevIssuer::generate(&settings.issuer, &settings.audience);
    let auth = relevo_auth::BearerAuthenticator::new(
        settings.clone(),
        Arc::new(relevo_auth::StaticKeySource(issuer.jwks())),
    );
    (settings, issuer, auth)
}

/// `count` shop servers over one store, one key ring and one token issuer, as the Lambda
/// environments of one deployment share the table, the keys and the issuer; with
/// `legacy_sessions`, 2025-11-25 sessions live in that store too.
pub fn shop_instances(
    store: Arc<dyn relevo_state::RecordStore>,
    count: usize,
    config: ServerConfig,
    legacy_sessions: bool,
) -> (Vec<Router>, relevo_auth::DevIssuer) {
    let (settings, issuer, _) = dev_auth();
    let routers = (0..count)
        .map(|_| {
            let keys = Arc::new(relevo_auth::StaticKeySource(issuer.jwks()));
            let auth = relevo_auth::BearerAuthenticator::new(settings.clone(), keys);
            let ports = relevo_protocol::Ports::new(Some(store.clone()));
            let mut server = McpServer::new(
                relevo_app::features(&ports),
                config.clone(),
                test_keys(),
                Arc::new(auth),
            );
            if legacy_sessions {
                server = server.with_store(store.clone());
            }
            let options = relevo_local::GatewayOptions {
                auth: Some(settings.clone()),
                ..gateway_options()
            };
            relevo_local::router(server, options)
        })
        .collect();
    (routers, issuer)
}

/// The example app with durable jobs: its engine (what tools start jobs through) and its worker
/// (what runs them), the export unpaced.
pub struct ShopJobs {
    pub app: Arc<App>,
    pub engine: Arc<relevo_state::Engine>,
    pub worker: relevo_state::Worker,
}

/// [`ShopJobs`] over `records` and `queue` (jobs live in `records`), with `limits` on admission.
pub fn shop_jobs<S>(
    records: Arc<S>,
    queue: Arc<dyn relevo_state::Queue>,
    limits: Option<relevo_state::InFlightLimits>,
) -> ShopJobs
where
    S: relevo_state::RecordStore + relevo_state::JobStore + 'static,
{
    let clock = Arc::new(relevo_state::SystemClock);
    let ids = Arc::new(relevo_state::RandomIds);
    let mut engine = relevo_state::Engine::new(
        records.clone(),
        queue,
        clock,
        ids,
        relevo_state::EngineConfig::default(),
    );
    if let Some(limits) = limits {
        engine = engine.with_admission(records.clone(), limits);
    }
    let engine = Arc::new(engine);
    let ports = relevo_protocol::Ports::new(Some(records)).with_jobs(engine.clone());
    let config = relevo_app::ShopConfig {
        export_window: std::time::Duration::ZERO,
    };
    let app = Arc::new(relevo_app::app_with(&ports, &config));
    let worker = app.worker(engine.clone());
    ShopJobs {
        app,
        engine,
        worker,
    }
}

/// Runs every job queued on `queue` through `worker`, as the worker function would, until the
/// queue is empty.
pub async fn drain(queue: &dyn relevo_state::Queue, worker: &relevo_state::Worker) {
    loop {
        let now = relevo_state::Clock::now_unix(&relevo_state::SystemClock);
        let messages = queue.receive(10, 60, now).await.expect("the queue answers");
        if messages.is_empty() {
            return;
        }
        for message in messages {
            worker
                .process_message(&message.body)
                .await
                .expect("the worker takes the message");
            queue
                .delete(&message.receipt)
                .await
                .expect("the message is deleted");
        }
    }
}

/// A token of the dev issuer, valid for five minutes.
pub fn dev_token(
    issuer: &relevo_auth::DevIssuer,
    tenant: &str,
    subject: &str,
    scopes: &[&str],
) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    issuer
        .mint(tenant, subject, scopes, now, 300)
        .expect("the dev issuer signs")
}
