//! One HTTP request in, one HTTP response out: the ladder, then the method's handler.
//!
//! The same [`McpServer::handle`] runs inside every Lambda (one per method, or the all-methods
//! `mcp` function) and inside the local gateway, so what the tests exercise is what deploys.
//! Nothing survives between calls except the immutable app and configuration: continuation
//! state leaves sealed in `requestState`, list positions leave sealed in cursors, and a
//! 2025-11-25 session and its pending server-to-client requests are records in the store
//! ([`crate::legacy`]). The one thing a legacy call keeps in memory is its own exchange while its
//! SSE stream is open: the asks it sent and the handler state between rounds.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures_util::FutureExt;
use http::{HeaderValue, Request, Response, StatusCode, header};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

use crate::auth::{AuthChallenge, Authenticator, Principal};
use crate::clock::{Clock, SystemClock};
use crate::cursor;
use crate::error::McpError;
use crate::ladder::{Ladder, LegacyMessage, OriginPolicy, Rejection, ValidRequest, Validated};
use crate::legacy::{Legacy, OpenSession, Session};
use crate::method::{Method, Route};
use crate::notify::{Notifier, ResourceEvent};
use crate::registry::{App, Call, Handler, Outcome};
use crate::seal::KeyRing;
use crate::tasks::{self, TaskSupport, ToolTaskRunner};
use crate::wire::{self, JsonObject, meta};
use guard::TaskUse;
use relevo_state::canonical_object_digest;
use relevo_state::{Engine, Ids, JobRef, RandomIds, RecordStore};

mod guard;
mod listen;

pub use listen::MAX_WATCHED;

const REQUEST_STATE_DOMAIN: &str = "request-state";
/// Carries the result type from dispatch to the request log line; removed before the reply leaves.
const RESULT_TYPE_HEADER: &str = "x-relevo-result-type";

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub origin_policy: OriginPolicy,
    pub max_body_bytes: usize,
    /// The largest `arguments` object a tool call may carry (serialized), within the body limit.
    pub max_argument_bytes: usize,
    pub page_size: usize,
    /// Lifetime of a `requestState`, seconds.
    pub request_state_ttl_secs: u64,
    /// `ttlMs` on discover and list results.
    pub list_ttl_ms: u64,
    /// `ttlMs` on `resources/read` results.
    pub read_ttl_ms: u64,
    /// How long a `subscriptions/listen` stream stays open before the server ends it gracefully
    /// (0: acknowledge and end at once, for buffered integrations).
    pub listen_max_secs: u64,
    /// How often a listen stream reads the resources it watches (changes made by other
    /// instances are heard within this).
    pub listen_poll_ms: u64,
    /// Listen streams one principal may hold open at once, across instances.
    pub max_listen_streams: usize,
    /// The front door delivers SSE frames as they are written (the local gateway, Lambda response
    /// streaming). Without it, legacy clients get no server-to-client requests and no GET stream.
    pub streams_responses: bool,
    /// Resource updates reach the instance that holds a legacy GET stream (one process serves
    /// every method, as the local gateway does). Without it, 2025-11-25 clients get no GET stream
    /// and no `resources/subscribe`: on Lambda the change happens in another environment, and a
    /// held stream would keep an environment busy to carry nothing.
    pub pushes_updates: bool,
    /// Lifetime of a legacy (2025-11-25) session, seconds.
    pub legacy_session_secs: u64,
    /// Legacy sessions one principal may hold open at once, across instances.
    pub max_legacy_sessions: usize,
    /// How long a legacy call waits for the client's answer to one server-to-client request.
    pub legacy_input_wait_secs: u64,
    /// An SSE comment goes out after this long without a frame, so that a stream waiting on a
    /// person or a listen filter never looks idle to a front door (API Gateway cuts a streamed
    /// response after 5 minutes without a byte).
    pub sse_keepalive_secs: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            origin_policy: OriginPolicy::localhost(),
            max_body_bytes: 1024 * 1024,
            max_argument_bytes: 256 * 1024,
            page_size: 100,
            request_state_ttl_secs: 3600,
            list_ttl_ms: 60_000,
            read_ttl_ms: 60_000,
            listen_max_secs: 300,
            listen_poll_ms: 2000,
            max_listen_streams: 8,
            streams_responses: true,
            pushes_updates: true,
            legacy_session_secs: 8 * 3600,
            max_legacy_sessions: 16,
            legacy_input_wait_secs: 300,
            sse_keepalive_secs: 25,
        }
    }
}

/// What one round of a handler call is bound to, and how its result may be cached.
struct Round {
    /// Method, target and arguments digest a `requestState` is bound to.
    binding: Value,
    now: u64,
    /// The request carried `inputResponses` or `requestState`.
    retry: bool,
    /// The content is per-caller.
    private: bool,
}

/// A response body: complete bytes, or an SSE stream of frames.
#[derive(Debug)]
pub enum ReplyBody {
    Full(Bytes),
    /// Frames as they are produced; a comment after `keepalive` without one.
    Sse {
        frames: mpsc::UnboundedReceiver<Bytes>,
        keepalive: Duration,
    },
}

/// The SSE comment a quiet stream sends (clients ignore comments).
pub const SSE_KEEPALIVE: &[u8] = b": keep-alive\n\n";

impl ReplyBody {
    /// The body as chunks, each sent as soon as it exists: the whole body at once, or one chunk
    /// per SSE frame (for the local gateway and Lambda response streaming).
    pub fn into_chunks(self) -> futures_util::stream::BoxStream<'static, Bytes> {
        use futures_util::StreamExt;
        match self {
            ReplyBody::Full(bytes) => futures_util::stream::once(async move { bytes }).boxed(),
            ReplyBody::Sse { frames, keepalive } => {
                futures_util::stream::unfold(frames, move |mut frames| async move {
                    match tokio::time::timeout(keepalive, frames.recv()).await {
                        Ok(Some(frame)) => Some((frame, frames)),
                        Ok(None) => None,
                        Err(_) => Some((Bytes::from_static(SSE_KEEPALIVE), frames)),
                    }
                })
                .boxed()
            }
        }
    }

    /// The whole body, waiting for a stream to finish (for buffered Lambda integrations).
    pub async fn collect(self) -> Bytes {
        match self {
            ReplyBody::Full(bytes) => bytes,
            ReplyBody::Sse { mut frames, .. } => {
                let mut all = Vec::new();
                while let Some(frame) = frames.recv().await {
                    all.extend_from_slice(&frame);
                }
                Bytes::from(all)
            }
        }
    }
}

pub type Reply = Response<ReplyBody>;

/// The server: an app, its configuration, its key ring, its authenticator and its clock.
#[derive(Clone)]
pub struct McpServer {
    app: Arc<App>,
    config: Arc<ServerConfig>,
    keys: KeyRing,
    auth: Arc<dyn Authenticator>,
    clock: Arc<dyn Clock>,
    tasks: Option<Arc<Engine>>,
    events: broadcast::Sender<ResourceEvent>,
    legacy: Option<Legacy>,
    store: Option<Arc<dyn RecordStore>>,
}

impl McpServer {
    pub fn new(app: App, config: ServerConfig, keys: KeyRing, auth: Arc<dyn Authenticator>) -> Self {
        let (events, _) = broadcast::channel(256);
        McpServer {
            app: Arc::new(app),
            config: Arc::new(config),
            keys,
            auth,
            clock: Arc::new(SystemClock),
            tasks: None,
            events,
            legacy: None,
            store: None,
        }
    }

    /// Serves handshake-era (2025-11-25, 2025-06-18) clients too, with their sessions and
    /// pending server-to-client requests as records in `store`.
    /// The deployment's record store: 2025-11-25 sessions live in it, and so do the counts of
    /// what each caller holds (listen streams, sessions), so that limits hold across instances.
    /// Without a store, those limits are not enforced (and legacy clients are not served).
    pub fn with_store(mut self, store: Arc<dyn RecordStore>) -> Self {
        self.store = Some(store.clone());
        self.legacy = Some(Legacy {
            store,
            ids: Arc::new(RandomIds),
            clock: self.clock.clone(),
            session_ttl_secs: self.config.legacy_session_secs,
            input_wait: Duration::from_secs(self.config.legacy_input_wait_secs),
            max_sessions: self.config.max_legacy_sessions,
        });
        self
    }

    /// The Host/Origin allow-list, for the routes beside `/mcp` a front door serves.
    pub fn origin_policy(&self) -> &OriginPolicy {
        &self.config.origin_policy
    }

    /// How long an SSE stream stays quiet before it sends a keep-alive comment.
    fn keepalive(&self) -> Duration {
        Duration::from_secs(self.config.sse_keepalive_secs.max(1))
    }

    /// Replaces the source of session and request ids (tests make them repeatable).
    pub fn with_ids(mut self, ids: Arc<dyn Ids>) -> Self {
        if let Some(legacy) = &mut self.legacy {
            legacy.ids = ids;
        }
        self
    }

    /// Every version this deployment serves, as `server/discover` lists them.
    pub fn supported_versions(&self) -> Vec<&'static str> {
        let mut versions = wire::SUPPORTED_VERSIONS.to_vec();
        if self.legacy.is_some() {
            versions.extend_from_slice(wire::LEGACY_VERSIONS);
        }
        versions
    }

    /// Offers the Tasks extension, with tasks stored and run by `engine`. `runner` must be the
    /// [`ToolTaskRunner`] registered in that engine; it is bound to this server's app here.
    pub fn with_tasks(mut self, engine: Arc<Engine>, runner: &ToolTaskRunner) -> Self {
        runner.bind(self.app.clone());
        self.tasks = Some(engine);
        self
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        if let Some(legacy) = &mut self.legacy {
            legacy.clock = clock.clone();
        }
        self.clock = clock;
        self
    }

    pub fn app(&self) -> &App {
        &self.app
    }

    /// Serves one HTTP request for a function that owns `route`. A [`Deadline`] among the
    /// request's extensions bounds the handler's work.
    pub async fn handle(&self, route: Route, request: Request<Bytes>) -> Reply {
        let started = Instant::now();
        let deadline = request.extensions().get::<Deadline>().map(|d| d.0);
        let ladder = Ladder {
            policy: &self.config.origin_policy,
            max_body_bytes: self.config.max_body_bytes,
            app: &self.app,
            route,
            legacy: self.legacy.is_some(),
        };
        let principal = match ladder.check_front(&request) {
            Err(Rejection { id, error }) => Err(error_reply(id.as_ref(), &error)),
            Ok(()) => self.auth.authenticate(request.headers()).await.map_err(|c| challenge_reply(&c)),
        };
        let is_post = request.method() == http::Method::POST;
        let (reply, method, target) = match principal {
            Err(reply) => (reply, None, None),
            Ok(principal) if !is_post => {
                (self.session_verb(&request, &principal).await, Some(request.method().to_string()), None)
            }
            Ok(principal) => match ladder.validate(&request) {
                Ok(Validated::Notification) => (empty(StatusCode::ACCEPTED), None, None),
                Err(Rejection { id, error }) => (error_reply(id.as_ref(), &error), None, None),
                Ok(Validated::Legacy(message)) => {
                    let method = match &message {
                        LegacyMessage::Request { method, params, .. } => {
                            let target = ["name", "uri"].iter().find_map(|k| params.get(*k)?.as_str());
                            (Some(method.clone()), target.map(String::from))
                        }
                        LegacyMessage::Response { .. } => (Some("(response)".into()), None),
                    };
                    (
                        self.serve_legacy(route, request.headers(), message, principal, deadline).await,
                        method.0,
                        method.1,
                    )
                }
                Ok(Validated::Request(mut valid)) => {
                    valid.deadline = deadline;
                    let method = valid.method.as_str().to_string();
                    let target = valid.target().map(String::from);
                    let id = valid.id.clone();
                    let reply = match self.dispatch(valid, principal).await {
                        Ok(reply) => reply,
                        Err(McpError::InsufficientScope(needed)) => {
                            challenge_reply(&self.auth.insufficient_scope(&needed))
                        }
                        Err(error) => error_reply(Some(&id), &error),
                    };
                    (reply, Some(method), target)
                }
            },
        };
        let mut reply = reply;
        let result_type = reply.headers_mut().remove(RESULT_TYPE_HEADER);
        tracing::info!(
            function = match route {
                Route::All => "mcp",
                Route::Only(own) => own.function_name(),
            },
            method = bounded(method.as_deref().unwrap_or("-")),
            name = bounded(target.as_deref().unwrap_or("-")),
            status = reply.status().as_u16(),
            result_type = result_type.as_ref().and_then(|v| v.to_str().ok()).unwrap_or("-"),
            latency_ms = started.elapsed().as_secs_f64() * 1000.0,
            "mcp request"
        );
        reply
    }

    async fn dispatch(&self, request: ValidRequest, principal: Principal) -> Result<Reply, McpError> {
        let now = self.clock.now_unix();
        let cursor = || -> Result<Option<String>, McpError> {
            match request.params.get("cursor") {
                None => Ok(None),
                Some(Value::String(c)) => Ok(Some(c.clone())),
                Some(_) => Err(McpError::invalid_params("Invalid cursor")),
            }
        };
        let list = |key: &str, items: Vec<Value>| -> Result<JsonObject, McpError> {
            let (page, next) = cursor::page(&self.keys, key, items, cursor()?.as_deref(), self.config.page_size, now)?;
            let mut result = JsonObject::new();
            result.insert(key.into(), Value::Array(page));
            if let Some(next) = next {
                result.insert("nextCursor".into(), json!(next));
            }
            Ok(result)
        };
        let app = &self.app;
        let result = match request.method {
            Method::Discover => {
                let mut result = JsonObject::new();
                result.insert("supportedVersions".into(), json!(self.supported_versions()));
                let mut capabilities = app.capabilities();
                if self.tasks.is_some() {
                    capabilities["extensions"] = json!({ tasks::EXTENSION: {} });
                }
                result.insert("capabilities".into(), capabilities);
                if let Some(instructions) = &app.instructions {
                    result.insert("instructions".into(), json!(instructions));
                }
                cacheable(result, self.config.list_ttl_ms)
            }
            Method::ToolsList => {
                let items = app.tools().filter(|t| guard::visible(&principal, &t.scopes)).map(|t| t.to_wire());
                self.per_caller(list("tools", items.collect())?)
            }
            Method::ResourcesList => {
                let items = app.resources().filter(|r| guard::visible(&principal, &r.scopes)).map(|r| r.to_wire());
                self.per_caller(list("resources", items.collect())?)
            }
            Method::ResourcesTemplatesList => {
                let items = app.templates().filter(|t| guard::visible(&principal, &t.scopes)).map(|t| t.to_wire());
                self.per_caller(list("resourceTemplates", items.collect())?)
            }
            Method::PromptsList => {
                let items = app.prompts().filter(|p| guard::visible(&principal, &p.scopes)).map(|p| p.to_wire());
                self.per_caller(list("prompts", items.collect())?)
            }
            Method::Complete => self.complete(&request.params, &principal)?,
            Method::SubscriptionsListen => return self.listen(&request, &principal).await,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead => {
                return self.call(request, principal, now).await;
            }
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => {
                return self.task_method(&request, &principal).await;
            }
        };
        Ok(self.result_reply(&request, result, "complete"))
    }

    /// A list result for this caller: cacheable, but never shared across tokens when the list
    /// depends on the caller's scopes.
    fn per_caller(&self, result: JsonObject) -> JsonObject {
        let mut result = cacheable(result, self.config.list_ttl_ms);
        if !self.auth.is_open() {
            result.insert("cacheScope".into(), json!("private"));
        }
        result
    }

    /// `tools/call`, `prompts/get`, `resources/read`: the methods that run app handlers and may
    /// answer `input_required`.
    async fn call(&self, request: ValidRequest, principal: Principal, now: u64) -> Result<Reply, McpError> {
        let params = &request.params;
        let mut task_tool = None;
        let mut invalidation: Option<(String, String)> = None;
        let mut invalid = None;
        let (handler, arguments, uri, streams, private) = match request.method {
            Method::ToolsCall => {
                // A caller without the tool's scopes gets 403 insufficient_scope, so a client can
                // step up; scope names are public (protected-resource metadata lists them).
                let tool = self.callable_tool(&principal, string_param(params, "name")?)?;
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => JsonObject::new(),
                    Some(Value::Object(a)) => a.clone(),
                    Some(_) => return Err(McpError::invalid_params("params.arguments must be an object")),
                };
                let checked =
                    tool.input_check.check(&tool.name, &tool.input_schema, &arguments, self.config.max_argument_bytes);
                match checked {
                    Ok(()) => {}
                    Err(crate::schema::Refusal::Bound(error)) => return Err(error),
                    // Answered after the requestState is checked: a tampered state is refused first.
                    Err(crate::schema::Refusal::Invalid { message, .. }) => invalid = Some(message),
                }
                if let Some(required) = &tool.required_capabilities {
                    let missing = missing_capabilities(required, &request.client.capabilities);
                    if !missing.is_empty() {
                        return Err(McpError::missing_capability(Value::Object(missing)));
                    }
                }
                invalidation = (!tool.invalidates.is_empty()).then(|| (tool.name.clone(), tool.invalidates.join(" ")));
                if tool.task_support != TaskSupport::Forbidden {
                    task_tool = Some((tool.name.clone(), tool.task_support, tool.gather.clone()));
                }
                (tool.handler.clone(), arguments, None, tool.streams, false)
            }
            Method::PromptsGet => {
                let prompt = self.gettable_prompt(&principal, string_param(params, "name")?)?;
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => JsonObject::new(),
                    Some(Value::Object(a)) if a.values().all(Value::is_string) => a.clone(),
                    Some(_) => return Err(McpError::invalid_params("prompt arguments must be an object of strings")),
                };
                if let Some(missing) = prompt.arguments.iter().find(|a| a.required && !arguments.contains_key(&a.name))
                {
                    return Err(McpError::invalid_params(format!("Missing required argument: {}", missing.name)));
                }
                (prompt.handler.clone(), arguments, None, false, false)
            }
            _ => {
                let uri = string_param(params, "uri")?;
                let readable = self.readable(&principal, uri)?;
                (readable.handler, readable.arguments, Some(uri.to_string()), false, readable.private)
            }
        };

        let input_responses = match params.get("inputResponses") {
            None | Some(Value::Null) => JsonObject::new(),
            Some(Value::Object(responses)) if responses.values().all(Value::is_object) => responses.clone(),
            Some(_) => return Err(McpError::invalid_params("inputResponses must map each key to a result object")),
        };
        let binding = self.state_binding(&request, &principal, &arguments);
        let state = match params.get("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(token)) => Some(self.open_state(token, &binding, now)?),
            Some(_) => return Err(invalid_state("requestState must be a string")),
        };
        if let Some(message) = invalid {
            // No structuredContent: it would have to conform to the tool's outputSchema.
            let result = wire::CallToolResult::error(vec![wire::ContentBlock::text(message)]);
            return Ok(self.result_reply(&request, wire::to_object(&result), "complete"));
        }
        let round = Round { binding, now, retry: state.is_some() || !input_responses.is_empty(), private };

        let notifier = Notifier::silent().with_events(self.events.clone(), &principal.tenant, &principal.subject);
        let call = Call { arguments, uri, input_responses, state, client: request.client.clone(), principal, notifier };

        if let Some((name, support, gather)) = task_tool {
            match (&self.tasks, request.client.declares_tasks()) {
                (Some(engine), true) => {
                    if let Some(gather) = gather {
                        match run_handler(&gather, call.clone(), request.deadline).await? {
                            Outcome::Complete(_) => {}
                            asking => {
                                let (result, result_type) = self.finish(&request, asking, &round)?;
                                return Ok(self.result_reply(&request, result, result_type));
                            }
                        }
                    }
                    let input = tasks::tool_task_input(&name, &call);
                    let job = engine
                        .start(&call.principal.tenant, &call.principal.subject, tasks::TOOL_TASK_KIND, None, input)
                        .await
                        .map_err(|error| match error {
                            relevo_state::StartError::Store(error) => crate::error::store_failure("task")(error),
                            relevo_state::StartError::LimitReached { what, max } => {
                                McpError::LimitReached { what, max }
                            }
                            other => {
                                tracing::error!(error = %other, "could not create the task");
                                McpError::Internal
                            }
                        })?;
                    let (result, result_type) = self.finish(&request, Outcome::TaskCreated(Box::new(job)), &round)?;
                    return Ok(self.result_reply(&request, result, result_type));
                }
                _ if support == TaskSupport::Required => return Err(tasks::tasks_required()),
                _ => {}
            }
        }

        let wants_stream = request.progress_token.is_some() || request.log_level.is_some();
        if streams && wants_stream {
            return Ok(self.stream_call(request, handler, call, round, None, invalidation));
        }
        // A legacy call may be re-run with the client's answers; a modern one runs once.
        let legacy_call = request.is_legacy().then(|| call.clone());
        let outcome = run_handler(&handler, call, request.deadline).await?;
        if let Outcome::InputRequired { requests, .. } = &outcome
            && let Some(call) = legacy_call
        {
            // A legacy client is asked on this request's stream, unless it cannot be.
            if let Some(refusal) = self.legacy_input_refusal(&request, requests) {
                let (result, result_type) = self.finish(&request, refusal?, &round)?;
                return Ok(self.result_reply(&request, result, result_type));
            }
            return Ok(self.stream_call(request, handler, call, round, Some(outcome), invalidation));
        }
        let outcome = with_invalidation(outcome, invalidation.as_ref());
        let (result, result_type) = self.finish(&request, outcome, &round)?;
        Ok(self.result_reply(&request, result, result_type))
    }

    /// Why a legacy client cannot be sent these requests, as the call's outcome; `None` if it can.
    fn legacy_input_refusal(
        &self,
        request: &ValidRequest,
        inputs: &std::collections::BTreeMap<String, crate::registry::InputRequest>,
    ) -> Option<Result<Outcome, McpError>> {
        if !self.config.streams_responses {
            return Some(input_failed(
                request.method,
                "This deployment's front door buffers responses, so it cannot ask a 2025-11-25 client for input \
                 during a call; connect with a 2026-07-28 client instead",
            ));
        }
        let missing = inputs.values().find(|input| !request.client.can_answer(input))?;
        let needed = missing.required_capability();
        let names: Vec<&String> = needed.as_object().map(|m| m.keys().collect()).unwrap_or_default();
        Some(input_failed(
            request.method,
            &format!("This call needs the client capability {names:?}, which this session did not declare"),
        ))
    }

    /// Serves the input requests of a legacy call as server-to-client requests on `stream`, one
    /// at a time, re-running the handler with the answers until it completes.
    async fn legacy_rounds(
        &self,
        request: &ValidRequest,
        handler: &Handler,
        mut call: Call,
        mut outcome: Outcome,
        stream: &mpsc::UnboundedSender<Bytes>,
    ) -> Result<Outcome, McpError> {
        let (Some(legacy), Some(session)) = (&self.legacy, &request.session) else { return Ok(outcome) };
        for _ in 0..crate::legacy::MAX_INPUT_ROUNDS {
            let Outcome::InputRequired { requests, state } = outcome else { return Ok(outcome) };
            if let Some(refusal) = self.legacy_input_refusal(request, &requests) {
                return refusal;
            }
            let mut answers = JsonObject::new();
            for (key, input) in &requests {
                let asked = legacy.ask(&call.principal, session, &request.client, input, stream);
                let answer = match request.deadline {
                    Some(at) => tokio::time::timeout_at(at, asked)
                        .await
                        .unwrap_or(Err("no answer before the call's deadline".into())),
                    None => asked.await,
                };
                match answer {
                    Ok(answer) => answers.insert(key.clone(), answer),
                    Err(reason) => return input_failed(request.method, &format!("No input: {reason}")),
                };
            }
            call.input_responses = answers;
            call.state = state;
            outcome = run_handler(handler, call.clone(), request.deadline).await?;
        }
        input_failed(request.method, "The call kept asking for input; giving up")
    }

    /// What a requestState is bound to: the caller (tenant and subject), the method, its target
    /// and a digest of the arguments. State sealed for anything else is refused.
    fn state_binding(&self, request: &ValidRequest, principal: &Principal, arguments: &JsonObject) -> Value {
        json!({
            "tn": principal.tenant,
            "sb": principal.subject,
            "m": request.method.as_str(),
            "t": request.target().unwrap_or_default(),
            "a": canonical_object_digest(arguments),
        })
    }

    fn open_state(&self, token: &str, binding: &Value, now: u64) -> Result<Value, McpError> {
        let payload = self.keys.open(REQUEST_STATE_DOMAIN, token, now).map_err(|e| invalid_state(&e.to_string()))?;
        if payload.get("b") != Some(binding) {
            return Err(invalid_state("requestState belongs to another request"));
        }
        Ok(payload.get("s").cloned().unwrap_or(Value::Null))
    }

    /// Turns an outcome into the result object and its `resultType`.
    fn finish(
        &self,
        request: &ValidRequest,
        outcome: Outcome,
        round: &Round,
    ) -> Result<(JsonObject, &'static str), McpError> {
        match outcome {
            Outcome::Complete(result) => {
                let result = if request.method == Method::ResourcesRead {
                    // A read reached through MRTR depended on this client's input: never shared.
                    let ttl = if round.retry { 0 } else { self.config.read_ttl_ms };
                    let mut result = cacheable(result, ttl);
                    if round.retry || round.private {
                        result.insert("cacheScope".into(), json!("private"));
                    }
                    result
                } else {
                    result
                };
                Ok((result, "complete"))
            }
            Outcome::TaskCreated(job) => {
                if request.method != Method::ToolsCall || self.tasks.is_none() {
                    tracing::error!("a task was created outside tools/call or without the Tasks extension");
                    return Err(McpError::Internal);
                }
                Ok((tasks::task_fields(&job), "task"))
            }
            Outcome::InputRequired { requests, state } => {
                if !request.method.allows_input_required() {
                    return Err(McpError::Internal);
                }
                if requests.is_empty() && state.is_none() {
                    tracing::error!("handler returned input_required with neither requests nor state");
                    return Err(McpError::Internal);
                }
                let mut input_requests = JsonObject::new();
                for (key, input) in &requests {
                    if !request.client.can_answer(input) {
                        return Err(McpError::missing_capability(input.required_capability()));
                    }
                    input_requests.insert(key.clone(), input.to_wire());
                }
                let mut result = JsonObject::new();
                if !input_requests.is_empty() {
                    result.insert("inputRequests".into(), Value::Object(input_requests));
                }
                if let Some(state) = state {
                    let sealed = self.keys.seal(
                        REQUEST_STATE_DOMAIN,
                        &json!({ "b": round.binding, "s": state }),
                        round.now + self.config.request_state_ttl_secs,
                    );
                    result.insert("requestState".into(), json!(sealed));
                }
                Ok((result, "input_required"))
            }
        }
    }

    /// Runs a notifying handler with its notifications and final response on one SSE stream.
    /// `first` is an outcome the handler already returned (a legacy call that asks for input);
    /// legacy calls carry their server-to-client requests on the same stream.
    fn stream_call(
        &self,
        request: ValidRequest,
        handler: Handler,
        mut call: Call,
        round: Round,
        first: Option<Outcome>,
        invalidation: Option<(String, String)>,
    ) -> Reply {
        let (frames_tx, frames_rx) = mpsc::unbounded_channel::<Bytes>();
        let (notes_tx, mut notes_rx) = mpsc::unbounded_channel::<Value>();
        call.notifier = Notifier::streaming(notes_tx, request.progress_token.clone(), request.log_level.as_deref())
            .with_events(self.events.clone(), &call.principal.tenant, &call.principal.subject);
        let server = self.clone();
        let requests_tx = frames_tx.clone();
        tokio::spawn(async move {
            let work = async {
                let outcome = match first {
                    Some(outcome) => outcome,
                    None => run_handler(&handler, call.clone(), request.deadline).await?,
                };
                let outcome = server.legacy_rounds(&request, &handler, call, outcome, &requests_tx).await?;
                Ok::<_, McpError>(with_invalidation(outcome, invalidation.as_ref()))
            };
            tokio::pin!(work);
            let outcome = loop {
                tokio::select! {
                    biased;
                    Some(note) = notes_rx.recv() => {
                        if frames_tx.send(sse_frame(&note)).is_err() {
                            return; // the client closed the stream: cancelled
                        }
                    }
                    outcome = &mut work => break outcome,
                }
            };
            while let Ok(note) = notes_rx.try_recv() {
                let _ = frames_tx.send(sse_frame(&note));
            }
            let message = match outcome.and_then(|o| server.finish(&request, o, &round)) {
                Ok((result, result_type)) => server.decorate(&request, result, result_type),
                Err(error) if request.is_legacy() => error.to_legacy_response(Some(&request.id)),
                Err(error) => error.to_response(Some(&request.id)),
            };
            let _ = frames_tx.send(sse_frame(&message));
        });
        let mut reply = sse_reply(frames_rx, self.keepalive());
        reply.headers_mut().insert(RESULT_TYPE_HEADER, HeaderValue::from_static("stream"));
        reply
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`: the caller's own tasks only; another
    /// principal's task id is an unknown task.
    async fn task_method(&self, request: &ValidRequest, principal: &Principal) -> Result<Reply, McpError> {
        let Some(engine) = &self.tasks else {
            return Err(McpError::MethodNotFound(request.method.as_str().into()));
        };
        if !request.client.declares_tasks() {
            return Err(tasks::tasks_required());
        }
        let task_id = string_param(&request.params, "taskId")?;
        let job = JobRef { tenant: principal.tenant.clone(), subject: principal.subject.clone(), id: task_id.into() };
        let unknown = || McpError::invalid_params_with("Unknown task", json!({ "taskId": task_id }));
        let store_failure = crate::error::store_failure("task");
        let usage = if request.method == Method::TasksGet { TaskUse::Read } else { TaskUse::Write };
        let found = engine.store.get_job(&job).await.map_err(&store_failure)?.ok_or_else(unknown)?;
        if !self.reachable_task(principal, &found, usage)? {
            return Err(unknown());
        }
        let result = match request.method {
            Method::TasksGet => tasks::detailed_task(&found),
            Method::TasksUpdate => {
                let Some(Value::Object(responses)) = request.params.get("inputResponses") else {
                    return Err(McpError::invalid_params("params.inputResponses must be an object"));
                };
                engine.provide_input(&job, responses).await.map_err(&store_failure)?.ok_or_else(unknown)?;
                JsonObject::new()
            }
            _ => {
                engine.cancel(&job).await.map_err(&store_failure)?.ok_or_else(unknown)?;
                JsonObject::new()
            }
        };
        Ok(self.result_reply(request, result, "complete"))
    }

    /// A handshake-era message: `initialize`, or a request or answer of the caller's session.
    async fn serve_legacy(
        &self,
        route: Route,
        headers: &http::HeaderMap,
        message: LegacyMessage,
        principal: Principal,
        deadline: Option<tokio::time::Instant>,
    ) -> Reply {
        let Some(legacy) = &self.legacy else { return error_reply(None, &McpError::Internal) };
        let (id, method, params) = match message {
            LegacyMessage::Request { id, method, params } => (id, method, params),
            LegacyMessage::Response { id, message } => {
                let stored = match legacy.open(&principal, headers).await {
                    Ok(session) => match id.as_str() {
                        Some(request_id) => legacy.store_answer(&principal, &session.id, request_id, &message).await,
                        None => Ok(false),
                    },
                    Err(error) => Err(error),
                };
                return match stored {
                    Ok(true) => empty(StatusCode::ACCEPTED),
                    Ok(false) => legacy_error_reply(
                        None,
                        &McpError::InvalidRequest("no request of this session is waiting for that id".into()),
                    ),
                    Err(error) => legacy_error_reply(None, &error),
                };
            }
        };
        let outcome = match method.as_str() {
            "initialize" if route == Route::All => self.legacy_initialize(legacy, &id, &params, &principal).await,
            _ => self.legacy_request(legacy, route, headers, &id, &method, params, principal, deadline).await,
        };
        match outcome {
            Ok(reply) => reply,
            Err(McpError::InsufficientScope(needed)) => challenge_reply(&self.auth.insufficient_scope(&needed)),
            Err(error) => legacy_error_reply(Some(&id), &error),
        }
    }

    /// `initialize`: a new session record, the negotiated version, and `Mcp-Session-Id`.
    async fn legacy_initialize(
        &self,
        legacy: &Legacy,
        id: &Value,
        params: &JsonObject,
        principal: &Principal,
    ) -> Result<Reply, McpError> {
        let requested = string_param(params, "protocolVersion")?;
        let capabilities = match params.get("capabilities") {
            None => JsonObject::new(),
            Some(Value::Object(c)) => c.clone(),
            Some(_) => return Err(McpError::invalid_params("params.capabilities must be an object")),
        };
        if serde_json::to_vec(&capabilities).map_or(usize::MAX, |b| b.len()) > crate::legacy::MAX_CAPABILITIES_BYTES {
            return Err(McpError::invalid_params(format!(
                "params.capabilities exceeds {} bytes",
                crate::legacy::MAX_CAPABILITIES_BYTES
            )));
        }
        let session = Session {
            protocol_version: crate::legacy::negotiate(requested).to_string(),
            capabilities,
            client_info: params.get("clientInfo").map(crate::legacy::kept_client_info),
            log_level: None,
            subscriptions: Vec::new(),
            ended: false,
        };
        let session_id = legacy.create(principal, &session).await?;
        let mut result = json!({
            "protocolVersion": session.protocol_version,
            "capabilities": self.legacy_capabilities(),
            "serverInfo": { "name": self.app.name, "version": self.app.version },
        });
        if let Some(instructions) = &self.app.instructions {
            result["instructions"] = json!(instructions);
        }
        let mut reply = json_reply(StatusCode::OK, &json!({ "jsonrpc": "2.0", "id": id, "result": result }));
        if let Ok(value) = HeaderValue::from_str(&session_id) {
            reply.headers_mut().insert(wire::header::SESSION_ID, value);
        }
        Ok(reply)
    }

    /// What `initialize` advertises: the app's capabilities, logging (`logging/setLevel` is
    /// served), and resource subscriptions where the front door can hold the GET stream.
    fn pushes_updates(&self) -> bool {
        self.config.streams_responses && self.config.pushes_updates
    }

    fn legacy_capabilities(&self) -> Value {
        let mut capabilities = self.app.capabilities();
        capabilities["logging"] = json!({});
        if self.pushes_updates() && capabilities.get("resources").is_some() {
            capabilities["resources"]["subscribe"] = json!(true);
        }
        capabilities
    }

    /// Any other request of a session: the session first (400 without, 404 unknown), then the
    /// legacy-only methods here, or the shared methods through the same dispatch as the modern
    /// wire.
    #[allow(clippy::too_many_arguments)]
    async fn legacy_request(
        &self,
        legacy: &Legacy,
        route: Route,
        headers: &http::HeaderMap,
        id: &Value,
        method: &str,
        mut params: JsonObject,
        principal: Principal,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Reply, McpError> {
        let OpenSession { id: session_id, session } = legacy.open(&principal, headers).await?;
        if let Some(version) = crate::headers::single(headers, wire::header::PROTOCOL_VERSION)?
            && version != session.protocol_version
        {
            return Err(McpError::InvalidRequest(format!(
                "MCP-Protocol-Version '{version}' is not this session's version '{}'",
                session.protocol_version
            )));
        }
        let done = |result: Value| json_reply(StatusCode::OK, &json!({ "jsonrpc": "2.0", "id": id, "result": result }));
        let shared = Method::from_wire(method).filter(|m| {
            !matches!(
                m,
                Method::Discover
                    | Method::SubscriptionsListen
                    | Method::TasksGet
                    | Method::TasksUpdate
                    | Method::TasksCancel
            )
        });
        let served_here = match (route, shared) {
            (Route::All, _) => true,
            (Route::Only(own), Some(method)) => own == method,
            (Route::Only(_), None) => false,
        };
        if !served_here {
            return Err(McpError::InvalidRequest(format!("this function does not serve {method}")));
        }
        match (method, shared) {
            ("ping", _) => Ok(done(json!({}))),
            ("logging/setLevel", _) => {
                let level = string_param(&params, "level")?.to_string();
                if wire::log_level_rank(&level).is_none() {
                    return Err(McpError::invalid_params(format!("Unknown logging level: {level}")));
                }
                legacy.update(&principal, &session_id, |s| s.log_level = Some(level.clone())).await?;
                Ok(done(json!({})))
            }
            ("resources/subscribe" | "resources/unsubscribe", _) if self.pushes_updates() => {
                let uri = string_param(&params, "uri")?.to_string();
                let subscribe = method == "resources/subscribe";
                if subscribe {
                    self.readable(&principal, &uri)?;
                    let held = session.subscriptions.iter().filter(|u| **u != uri).count();
                    if held >= crate::legacy::MAX_SUBSCRIPTIONS {
                        return Err(McpError::LimitReached {
                            what: "resource subscriptions in a session",
                            max: crate::legacy::MAX_SUBSCRIPTIONS,
                        });
                    }
                }
                legacy
                    .update(&principal, &session_id, |s| {
                        s.subscriptions.retain(|u| *u != uri);
                        if subscribe && s.subscriptions.len() < crate::legacy::MAX_SUBSCRIPTIONS {
                            s.subscriptions.push(uri.clone());
                        }
                    })
                    .await?;
                Ok(done(json!({})))
            }
            (_, Some(method)) => {
                let meta = params.remove("_meta");
                let progress_token = meta
                    .as_ref()
                    .and_then(|m| m.get(wire::meta::PROGRESS_TOKEN))
                    .filter(|t| crate::ladder::valid_id(t))
                    .cloned();
                let request = ValidRequest {
                    id: id.clone(),
                    method,
                    params,
                    client: session.client(),
                    progress_token,
                    log_level: session.log_level.clone(),
                    session: Some(session_id),
                    deadline,
                };
                self.dispatch(request, principal).await
            }
            _ => Err(McpError::MethodNotFound(method.into())),
        }
    }

    /// GET (the session's notification stream) and DELETE (end the session). Only reached with
    /// an `Mcp-Session-Id` on the all-methods function; see [`Ladder::check_front`].
    async fn session_verb(&self, request: &Request<Bytes>, principal: &Principal) -> Reply {
        let Some(legacy) = &self.legacy else { return error_reply(None, &McpError::HttpMethodNotAllowed) };
        let session = match legacy.open(principal, request.headers()).await {
            Ok(session) => session,
            Err(error) => return legacy_error_reply(None, &error),
        };
        if request.method() == http::Method::DELETE {
            return match legacy.end(principal, &session.id).await {
                Ok(_) => empty(StatusCode::OK),
                Err(error) => legacy_error_reply(None, &error),
            };
        }
        if !self.pushes_updates() {
            let mut reply = json_reply(
                StatusCode::METHOD_NOT_ALLOWED,
                &json!({ "jsonrpc": "2.0", "error": { "code": wire::code::INVALID_REQUEST,
                    "message": "This deployment does not hold GET streams: resource updates happen in other function instances than the one that would hold the stream, so they are not pushed to 2025-11-25 clients here" } }),
            );
            reply.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            return reply;
        }
        self.session_stream(legacy.clone(), session, principal.clone())
    }

    /// The legacy GET stream: `notifications/resources/updated` for the session's subscribed
    /// URIs, for changes made on this instance, until `listen_max_secs` or the client leaves.
    fn session_stream(&self, legacy: Legacy, session: OpenSession, principal: Principal) -> Reply {
        let caller = principal.clone();
        self.event_stream(&caller, None, None, move |event| {
            let (legacy, principal, session) = (legacy.clone(), principal.clone(), session.id.clone());
            async move {
                // The subscription list may have changed since the stream opened.
                let Ok(current) = legacy.open_by_id(&principal, &session).await else { return Relay::Stop };
                if !current.subscriptions.iter().any(|s| event.uri.starts_with(s.as_str())) {
                    return Relay::Skip;
                }
                let params = json!({ "uri": event.uri });
                Relay::Send(json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params }))
            }
        })
    }

    /// An SSE reply fed by `principal`'s resource events on this instance: `first` at once, one
    /// message per event that `relay` turns into one, and `last` when `listen_max_secs` is up
    /// (nothing more once the client has gone).
    fn event_stream<F, Fut>(&self, principal: &Principal, first: Option<Value>, last: Option<Value>, relay: F) -> Reply
    where
        F: Fn(ResourceEvent) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Relay> + Send,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(first) = first {
            let _ = tx.send(sse_frame(&first));
        }
        let mut events = self.events.subscribe();
        let (tenant, subject) = (principal.tenant.clone(), principal.subject.clone());
        let deadline = tokio::time::sleep(Duration::from_secs(self.config.listen_max_secs));
        tokio::spawn(async move {
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    () = &mut deadline => break,
                    () = tx.closed() => return,
                    event = events.recv() => match event {
                        Ok(event) if event.tenant == tenant && event.subject == subject => match relay(event).await {
                            Relay::Send(note) => if tx.send(sse_frame(&note)).is_err() { return },
                            Relay::Skip => {}
                            Relay::Stop => break,
                        },
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => break,
                    },
                }
            }
            if let Some(last) = last {
                let _ = tx.send(sse_frame(&last));
            }
        });
        sse_reply(rx, self.keepalive())
    }

    fn complete(&self, params: &JsonObject, principal: &Principal) -> Result<JsonObject, McpError> {
        let reference = params
            .get("ref")
            .and_then(Value::as_object)
            .ok_or_else(|| McpError::invalid_params("params.ref is required"))?;
        let argument = params
            .get("argument")
            .and_then(Value::as_object)
            .ok_or_else(|| McpError::invalid_params("params.argument is required"))?;
        let (Some(arg_name), Some(prefix)) =
            (argument.get("name").and_then(Value::as_str), argument.get("value").and_then(Value::as_str))
        else {
            return Err(McpError::invalid_params("argument.name and argument.value must be strings"));
        };
        let candidates = self.completable(principal, reference, arg_name)?;
        let matching: Vec<String> = candidates.into_iter().filter(|c| c.starts_with(prefix)).collect();
        let total = matching.len();
        let values: Vec<String> = matching.into_iter().take(100).collect();
        let mut result = JsonObject::new();
        result.insert("completion".into(), json!({ "values": values, "total": total, "hasMore": total > 100 }));
        Ok(result)
    }

    /// Adds `resultType` and `serverInfo` and wraps the result in a JSON-RPC response. A legacy
    /// result leaves in its own revision's shape: no `resultType`, `ttlMs`, `cacheScope` or
    /// `_meta` server info (the client learned that from `initialize`).
    fn decorate(&self, request: &ValidRequest, result: JsonObject, result_type: &str) -> Value {
        let result = self.decorate_result(request, result, result_type);
        json!({ "jsonrpc": "2.0", "id": request.id, "result": result })
    }

    fn decorate_result(&self, request: &ValidRequest, mut result: JsonObject, result_type: &str) -> JsonObject {
        if request.is_legacy() {
            for key in ["resultType", "ttlMs", "cacheScope"] {
                result.remove(key);
            }
            return result;
        }
        result.insert("resultType".into(), json!(result_type));
        let server_info = json!({ "name": self.app.name, "version": self.app.version });
        match result.get_mut("_meta") {
            Some(Value::Object(meta_object)) => {
                meta_object.insert(meta::SERVER_INFO.into(), server_info);
            }
            _ => {
                result.insert("_meta".into(), json!({ meta::SERVER_INFO: server_info }));
            }
        }
        result
    }

    /// The reply to a request that ends here: [`Self::decorate`], serialized without building
    /// the envelope as a value.
    fn result_reply(&self, request: &ValidRequest, result: JsonObject, result_type: &str) -> Reply {
        let result = self.decorate_result(request, result, result_type);
        let mut reply = json_reply(StatusCode::OK, &Success { id: &request.id, jsonrpc: "2.0", result: &result });
        if let Ok(value) = HeaderValue::from_str(result_type) {
            reply.headers_mut().insert(RESULT_TYPE_HEADER, value);
        }
        reply
    }
}

/// A JSON-RPC success response, fields in the order `json!` writes them.
#[derive(serde::Serialize)]
struct Success<'a> {
    id: &'a Value,
    jsonrpc: &'static str,
    result: &'a JsonObject,
}

/// When a request's work must be done: set by the front door's adapter (a Lambda function: its
/// invocation deadline less a margin), so that a handler stops, and the caller hears a retryable
/// error, before the function's timeout — never after the front door has already answered.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(pub tokio::time::Instant);

impl Deadline {
    pub fn after(left: Duration) -> Self {
        Deadline(tokio::time::Instant::now() + left)
    }
}

/// Runs a handler, catching a panic, stopped at `deadline` (its in-flight store calls dropped).
async fn run_handler(
    handler: &Handler,
    call: Call,
    deadline: Option<tokio::time::Instant>,
) -> Result<Outcome, McpError> {
    let run = AssertUnwindSafe(handler(call)).catch_unwind();
    let outcome = match deadline {
        Some(at) => match tokio::time::timeout_at(at, run).await {
            Ok(outcome) => outcome,
            Err(_) => {
                tracing::warn!(cause = "deadline", "the handler ran out of time: answered retryable");
                return Err(McpError::Retryable(crate::Retry::Deadline));
            }
        },
        None => run.await,
    };
    match outcome {
        Ok(outcome) => outcome,
        Err(_) => {
            tracing::error!("handler panicked");
            Err(McpError::Internal)
        }
    }
}

fn with_invalidation(outcome: Outcome, invalidation: Option<&(String, String)>) -> Outcome {
    match (outcome, invalidation) {
        (Outcome::Complete(result), Some((cause, domains))) => {
            Outcome::Complete(announce_invalidation(result, cause, domains))
        }
        (outcome, _) => outcome,
    }
}

/// A call that cannot get the input it needs: a tool execution error the model can read, or a
/// JSON-RPC error for the methods that have no tool result.
fn input_failed(method: Method, reason: &str) -> Result<Outcome, McpError> {
    if method == Method::ToolsCall {
        Ok(Outcome::tool_error(reason))
    } else {
        Err(McpError::InvalidRequest(reason.into()))
    }
}

/// Prepends `<cache_invalidation cause="…" domains="…"/>` to a successful result's content.
fn announce_invalidation(mut result: JsonObject, cause: &str, domains: &str) -> JsonObject {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return result;
    }
    let tag =
        json!({ "type": "text", "text": format!("<cache_invalidation cause=\"{cause}\" domains=\"{domains}\"/>") });
    match result.get_mut("content") {
        Some(Value::Array(content)) => content.insert(0, tag),
        _ => {
            result.insert("content".into(), json!([tag]));
        }
    }
    result
}

fn challenge_reply(challenge: &AuthChallenge) -> Reply {
    let body = json!({ "error": challenge.error, "error_description": challenge.description });
    let mut reply = json_reply(challenge.status, &body);
    if let Ok(value) = HeaderValue::from_str(&challenge.www_authenticate) {
        reply.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    reply
}

fn string_param<'a>(params: &'a JsonObject, key: &str) -> Result<&'a str, McpError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::invalid_params(format!("params.{key} must be a string")))
}

fn invalid_state(reason: &str) -> McpError {
    McpError::invalid_params_with(
        "Invalid or expired requestState",
        json!({ "reason": "invalid_request_state", "detail": reason }),
    )
}

/// Capabilities in `required` (top-level keys) that the client did not declare.
fn missing_capabilities(required: &Value, declared: &JsonObject) -> JsonObject {
    required
        .as_object()
        .map(|r| r.iter().filter(|(k, _)| !declared.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn cacheable(mut result: JsonObject, ttl_ms: u64) -> JsonObject {
    result.insert("ttlMs".into(), json!(ttl_ms));
    result.insert("cacheScope".into(), json!("public"));
    result
}

/// What an event stream does with one resource event.
enum Relay {
    Send(Value),
    Skip,
    Stop,
}

fn sse_reply(frames: mpsc::UnboundedReceiver<Bytes>, keepalive: Duration) -> Reply {
    let mut reply = Response::new(ReplyBody::Sse { frames, keepalive });
    let headers = reply.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    reply
}

pub(crate) fn sse_frame(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

fn json_reply(status: StatusCode, body: &impl serde::Serialize) -> Reply {
    let (status, bytes) = match serde_json::to_vec(body) {
        Ok(bytes) => (status, bytes),
        // Only a map with non-string keys fails to serialize; our bodies have none.
        Err(error) => {
            tracing::error!(%error, "a reply did not serialize");
            let internal = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#;
            (StatusCode::INTERNAL_SERVER_ERROR, internal.to_vec())
        }
    };
    let mut reply = Response::new(ReplyBody::Full(Bytes::from(bytes)));
    *reply.status_mut() = status;
    reply.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reply
}

fn empty(status: StatusCode) -> Reply {
    let mut reply = Response::new(ReplyBody::Full(Bytes::new()));
    *reply.status_mut() = status;
    reply
}

fn legacy_error_reply(id: Option<&Value>, error: &McpError) -> Reply {
    let mut reply = json_reply(error.legacy_status(), &error.to_legacy_response(id));
    retry_headers(&mut reply, error);
    reply
}

fn error_reply(id: Option<&Value>, error: &McpError) -> Reply {
    let mut reply = json_reply(error.status(), &error.to_response(id));
    retry_headers(&mut reply, error);
    reply
}

/// The longest caller-supplied text a log line carries (a method or tool name of a megabyte
/// would otherwise be written out whole).
pub const MAX_LOGGED_CHARS: usize = 128;
/// When a caller at a limit may look again (a stream, a session or a job may have ended).
const LIMIT_RETRY_AFTER_SECS: u64 = 5;

/// `text`, cut to [`MAX_LOGGED_CHARS`] characters.
pub fn bounded(text: &str) -> &str {
    match text.char_indices().nth(MAX_LOGGED_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// `Allow` on a 405, `Retry-After` (whole seconds) on a retryable failure.
fn retry_headers(reply: &mut Reply, error: &McpError) {
    match error {
        McpError::HttpMethodNotAllowed => {
            reply.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        McpError::Retryable(retry) => {
            let secs = retry.retry_after_ms().div_ceil(1000).max(1);
            reply.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        McpError::LimitReached { .. } => {
            reply.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(LIMIT_RETRY_AFTER_SECS));
        }
        _ => {}
    }
}
