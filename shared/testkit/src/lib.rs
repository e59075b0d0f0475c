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
/// The most runs [`TestServer::run_jobs`] gives one job (its attempt budget ends it sooner).
const MAX_RUNS: usize = 64;

/// An app served in-process, called as a 2026-07-28 client calls it: over the real router and
/// validation ladder, with SQLite in memory for records and jobs.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use relevo_protocol::author::{Elicited, JobContext, JobError, JobKind, ToolContext, ToolError};
/// use relevo_protocol::{App, Ports, Tool};
/// use relevo_testkit::{TestServer, accept, decline};
/// use serde_json::json;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Wipe {
///     /// The folder to wipe
///     folder: String,
/// }
///
/// /// The form the user fills.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Confirm {
///     /// Wipe it
///     confirm: bool,
/// }
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct WipeInput {
///     folder: String,
/// }
/// const WIPE: JobKind<WipeInput, String> = JobKind::new("wipe");
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Started {
///     job: String,
/// }
///
/// async fn wiped(input: WipeInput, _: JobContext) -> Result<String, JobError> {
///     Ok(format!("{} is empty", input.folder))
/// }
///
/// async fn wipe(args: Wipe, cx: ToolContext) -> Result<Started, ToolError> {
///     let question = format!("Wipe {}?", args.folder);
///     match cx.elicit::<Confirm>("confirm", &question)? {
///         Elicited::Accept(Confirm { confirm: true }) => {
///             let input = WipeInput { folder: args.folder };
///             let job = cx.start_job(&WIPE, None, &input).await?;
///             Ok(Started { job: job.job.id })
///         }
///         _ => Err(ToolError::caller("not confirmed; nothing was wiped")),
///     }
/// }
///
/// fn app(_: &Ports) -> App {
///     App::new("wiper", "1.0.0")
///         .tool(Tool::typed("wipe", "Wipes a folder, once confirmed.", wipe))
///         .job(&WIPE, wiped)
/// }
///
/// let server = TestServer::new(app);
///
/// // The first round asks; the answer is a second round, driven by `call_tool_answering`.
/// let asked = server.call_tool("wipe", json!({ "folder": "tmp" })).await;
/// assert_eq!(asked["resultType"], "input_required", "{asked}");
///
/// let declined = server
///     .call_tool_answering("wipe", json!({ "folder": "tmp" }), |_, _| decline())
///     .await;
/// assert_eq!(declined["isError"], true, "{declined}");
///
/// let started = server
///     .call_tool_answering("wipe", json!({ "folder": "tmp" }), |_, _| {
///         accept(json!({ "confirm": true }))
///     })
///     .await;
/// assert!(started["structuredContent"]["job"].is_string(), "{started}");
///
/// // Arguments that break the input schema never reach the tool.
/// let invalid = server.call_tool("wipe", json!({ "folder": 7 })).await;
/// assert_eq!(invalid["isError"], true, "{invalid}");
///
/// // The worker: every queued job runs to its end.
/// server.run_jobs().await;
/// # }
/// ```
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
        // A typed tool's derived schema is checked as registration checks a JSON one.
        server.app().verify_schemas();
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

    /// One JSON-RPC request, any method a client sends; the response object (`result` or
    /// `error`).
    ///
    /// The `_meta` envelope (protocol version, client info, capabilities with `elicitation`, and
    /// the Tasks extension on `tasks/*` calls) is merged under `params._meta`: a key the caller
    /// sets wins, so a test can leave a capability out by setting its own
    /// `io.modelcontextprotocol/clientCapabilities`. The headers follow the body as a client's
    /// do: `Mcp-Method`, and `Mcp-Name` from `name` (`tools/call`, `prompts/get`), `uri`
    /// (`resources/read`) or `taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use relevo_protocol::App;
    /// use relevo_testkit::TestServer;
    /// use serde_json::json;
    ///
    /// let server = TestServer::new(|_: &relevo_protocol::Ports| App::new("empty", "1.0.0"));
    /// let unknown = server.rpc("tasks/get", json!({ "taskId": "no-such-task" })).await;
    /// assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    /// // Without the extension declared, `tasks/*` is refused.
    /// let meta = json!({ "io.modelcontextprotocol/clientCapabilities": {} });
    /// let refused = server.rpc("tasks/get", json!({ "taskId": "x", "_meta": meta })).await;
    /// assert_eq!(refused["error"]["code"], -32021, "{refused}");
    /// # }
    /// ```
    pub async fn rpc(&self, method: &str, mut params: Value) -> Value {
        let mut meta = envelope(method);
        if let Some(Value::Object(given)) = params.get("_meta") {
            meta.extend(given.clone());
        }
        params["_meta"] = Value::Object(meta);
        let mut request = Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .header("mcp-method", method);
        let named_by = match method {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" => Some("uri"),
            "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
            _ => None,
        };
        if let Some(name) = named_by
            .and_then(|key| params.get(key))
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

    /// `tools/call` from a client that declared the Tasks extension: the flat `CreateTaskResult`
    /// (`resultType: "task"`, `taskId`, `status`, …) when the tool ran as a task, else its result
    /// or error as [`TestServer::call_tool`] answers them.
    pub async fn call_tool_as_task(&self, name: &str, arguments: Value) -> Value {
        let mut meta = envelope("tools/call");
        meta[CAPABILITIES] = with_tasks(meta[CAPABILITIES].clone());
        let params = json!({ "name": name, "arguments": arguments, "_meta": meta });
        result(self.rpc("tools/call", params).await)
    }

    /// `tasks/get`: the task (`status`, and `result`, `error` or `inputRequests` as it stands),
    /// or the error object.
    pub async fn get_task(&self, task_id: &str) -> Value {
        result(self.rpc("tasks/get", json!({ "taskId": task_id })).await)
    }

    /// `tasks/update`: answers a task's `inputRequests` (`inputResponses` by key).
    pub async fn update_task(&self, task_id: &str, input_responses: Value) -> Value {
        let params = json!({ "taskId": task_id, "inputResponses": input_responses });
        result(self.rpc("tasks/update", params).await)
    }

    /// `tasks/cancel`: the empty acknowledgement, or the error object.
    pub async fn cancel_task(&self, task_id: &str) -> Value {
        result(self.rpc("tasks/cancel", json!({ "taskId": task_id })).await)
    }

    /// Runs every queued job to its end, as the worker function would: a run that asks to run
    /// again ([`relevo_protocol::author::JobError::Retry`]) runs again at once, until the job
    /// succeeds, fails or spends its attempt budget.
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
                for _ in 0..MAX_RUNS {
                    if self.worker.process_message(&message.body).await.is_ok() {
                        break;
                    }
                }
                self.queue
                    .delete(&message.receipt)
                    .await
                    .expect("the queue deletes");
            }
        }
    }

    /// Runs each queued job once, as one delivery of its message would: a job that asks to run
    /// again stays queued for the next call, so a test sees what a client sees in between (a
    /// task's `statusMessage`, a job's progress). Returns how many runs it made.
    pub async fn run_jobs_once(&self) -> usize {
        let messages = self
            .queue
            .receive(10, 0, now())
            .await
            .expect("the queue reads");
        for message in &messages {
            if self.worker.process_message(&message.body).await.is_ok() {
                self.queue
                    .delete(&message.receipt)
                    .await
                    .expect("the queue deletes");
            }
        }
        messages.len()
    }

    /// The job engine the app's tools reach: what a test reads the store through.
    pub fn engine(&self) -> &Arc<Engine> {
        self.worker.engine()
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

const CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The `_meta` a 2026-07-28 client sends with `method`: version, client info, capabilities
/// (elicitation; the Tasks extension on `tasks/*`, which a client must declare on each of them).
fn envelope(method: &str) -> serde_json::Map<String, Value> {
    let mut capabilities = json!({ "elicitation": {} });
    if method.starts_with("tasks/") {
        capabilities = with_tasks(capabilities);
    }
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        CAPABILITIES: capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "relevo-testkit", "version": "1" }
    });
    match meta {
        Value::Object(meta) => meta,
        _ => unreachable!("an object literal"),
    }
}

/// `capabilities` with the Tasks extension declared.
fn with_tasks(mut capabilities: Value) -> Value {
    capabilities["extensions"][relevo_protocol::tasks::EXTENSION] = json!({});
    capabilities
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
