//! Tests for a Relevo app: [`TestServer`] serves the app in-process — the real server, router
//! and validation ladder over the embedded store (SQLite in memory) and its queue — and calls it
//! as a 2026-07-28 client does, with every header set to match the body. MRTR rounds are driven
//! by [`TestServer::call_tool_answering`], durable jobs run when [`TestServer::run_jobs`] says so.
//!
//! Requests carry no token: the principal is the local unauthenticated one, holding every scope.
//! Scope checks are the server's and are tested there; this kit tests the app's behaviour.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_protocol::{AppBuilder, KeyRing, McpServer, NoAuth, OriginPolicy, Ports, ServerConfig};
use relevo_state::{Engine, EngineConfig, Queue, RandomIds, SystemClock, Worker};
use serde_json::{Value, json};
use tower::ServiceExt;

pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// The most rounds [`TestServer::call_tool_answering`] drives before it gives up.
const MAX_ROUNDS: usize = 8;

pub struct TestServer {
    router: Router,
    worker: Worker,
    queue: SqliteQueue,
}

impl TestServer {
    /// `app` over a fresh in-memory store, with durable jobs.
    pub fn new(app: impl AppBuilder) -> Self {
        let sqlite = SqliteStore::in_memory().expect("an in-memory SQLite opens");
        let queue = SqliteQueue::new(sqlite.clone(), 5);
        let engine = Arc::new(Engine::new(
            Arc::new(sqlite.clone()),
            Arc::new(queue.clone()),
            Arc::new(SystemClock),
            Arc::new(RandomIds),
            EngineConfig::default(),
        ));
        let keys =
            KeyRing::new(vec![("test".into(), vec![7; 32])]).expect("a 32-byte key is valid");
        let ports = Ports::new(Some(Arc::new(sqlite)))
            .with_jobs(engine)
            .with_security(Arc::new(NoAuth), keys, OriginPolicy::localhost());
        let config = ServerConfig {
            listen_max_secs: 0,
            ..ServerConfig::default()
        };
        let server = McpServer::from_ports(&app, &ports, config);
        let worker = server.worker().expect("the ports carry durable jobs");
        let options = relevo_local::GatewayOptions {
            max_body_bytes: 1024 * 1024,
            ..Default::default()
        };
        TestServer {
            router: relevo_local::router(server, options),
            worker,
            queue,
        }
    }

    /// One JSON-RPC request; the response object (`result` or `error`).
    pub async fn rpc(&self, method: &str, mut params: Value) -> Value {
        if params.get("_meta").is_none() {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
                "io.modelcontextprotocol/clientInfo": { "name": "relevo-testkit", "version": "1" }
            });
        }
        let mut request = Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .header("mcp-method", method);
        if let Some(name) = params
            .get("name")
            .or(params.get("uri"))
            .and_then(Value::as_str)
        {
            request = request.header("mcp-name", name);
        }
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let request = request
            .body(Body::from(body.to_string()))
            .expect("a request builds");
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router answers");
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("the body reads")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        // An SSE answer ends with the response; notifications come before it.
        let last = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .next_back();
        serde_json::from_str(last.unwrap_or(&text).trim()).unwrap_or(Value::Null)
    }

    /// `tools/call`: the result (`complete`, or `input_required`), or the error object.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Value {
        result(
            self.rpc(
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            )
            .await,
        )
    }

    /// `tools/call`, answering every `input_required` round with `answer(key, request)` (the
    /// `inputResponses` value for that key) and echoing `requestState`, until it completes.
    pub async fn call_tool_answering(
        &self,
        name: &str,
        arguments: Value,
        answer: impl Fn(&str, &Value) -> Value,
    ) -> Value {
        let mut params = json!({ "name": name, "arguments": arguments });
        for _ in 0..MAX_ROUNDS {
            let reply = result(self.rpc("tools/call", params.clone()).await);
            if reply["resultType"] != "input_required" {
                return reply;
            }
            let requests = reply["inputRequests"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let responses: serde_json::Map<String, Value> = requests
                .iter()
                .map(|(key, request)| (key.clone(), answer(key, request)))
                .collect();
            params["inputResponses"] = Value::Object(responses);
            params["requestState"] = reply["requestState"].clone();
        }
        panic!("tool {name} still asked for input after {MAX_ROUNDS} rounds")
    }

    /// Runs every queued job to its end, as the worker function would.
    pub async fn run_jobs(&self) {
        loop {
            let messages = self
                .queue
                .receive(10, 60, now())
                .await
                .expect("the queue reads");
            if messages.is_empty() {
                return;
            }
            for message in messages {
                let _ = self.worker.process_message(&message.body).await;
                self.queue
                    .delete(&message.receipt)
                    .await
                    .expect("the queue deletes");
            }
        }
    }
}

/// An accepted form answer with `content`.
pub fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

/// A declined form.
pub fn decline() -> Value {
    json!({ "action": "decline" })
}

fn result(response: Value) -> Value {
    match response.get("result") {
        Some(result) => result.clone(),
        None => response,
    }
}

fn now() -> u64 {
    relevo_state::Clock::now_unix(&SystemClock)
}
