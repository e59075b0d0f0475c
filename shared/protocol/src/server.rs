//! One HTTP request in, one HTTP response out: the ladder, then the method's handler.
//!
//! The same [`McpServer::handle`] runs inside every Lambda (one per method, or the all-methods
//! `mcp` function) and inside the local gateway, so what the tests exercise is what deploys.
//! Nothing survives between calls except the immutable app and configuration: continuation
//! state leaves sealed in `requestState`, list positions leave sealed in cursors, and a
//! 2025-11-25 session and its pending server-to-client requests are records in the store
//! ([`crate::legacy`]). The one thing a legacy call keeps in memory is its own exchange while its
//! SSE stream is open: the asks it sent and the handler state between rounds.
//!
//! This module holds the server itself (its configuration, construction and the
//! [`McpServer::handle`] entry that runs the ladder and routes the request), [`Reply`] and
//! [`Deadline`]. The rest, by concern:
//! - `dispatch`: one validated request to its method (lists, completion, `tasks/*`), for both
//!   wires; the one place a method is chosen.
//! - `call`: the methods that run app handlers (`tools/call`, `prompts/get`, `resources/read`):
//!   `input_required` and sealed `requestState`, task creation, SSE for notifying handlers.
//! - 2025-11-25 sessions — `initialize`, session-bound requests, the GET stream and DELETE,
//!   subscriptions, and server-to-client requests during a call — are [`crate::legacy`]'s, as
//!   methods of this server.
//! - `listen`: `subscriptions/listen` across instances.
//! - `guard`: the one authorization decision every method goes through.
//! - `reply`: results and errors as HTTP replies (envelopes, statuses, headers, SSE).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use tokio::sync::{broadcast, mpsc};

use crate::auth::{Authenticator, Principal};
use crate::clock::{Clock, SystemClock};
use crate::error::McpError;
use crate::ladder::{Ladder, LegacyMessage, OriginPolicy, Rejection, Validated};
use crate::legacy::Legacy;
use crate::method::{Method, Route};
use crate::notify::ResourceEvent;
use crate::observe::{self, RequestIds};
use crate::ports::{AppBuilder, Ports};
use crate::registry::App;
use crate::seal::KeyRing;
use crate::wire;
use relevo_state::trace::{self, FinishedSpan, SpanKind, TraceContext};
use relevo_state::{Engine, Ids, RandomIds, RecordStore, Worker};

mod call;
pub(crate) mod dispatch;
mod guard;
pub(crate) mod listen;
pub(crate) mod reply;

pub(crate) use call::run_handler;
pub use guard::{Decision, Surface, admit_tenant};
pub use listen::{MAX_WATCHED, MAX_WATCHED_TASKS};
pub(crate) use reply::sse_frame;
use reply::{challenge_reply, empty, error_reply, sse_reply};

/// Carries the result type from dispatch to the request log line; removed before the reply leaves.
const RESULT_TYPE_HEADER: &str = "x-relevo-result-type";

#[derive(Debug, Clone)]
/// How a server behaves: its limits, lifetimes and features. [`ServerConfig::default`] suits a
/// local server.
pub struct ServerConfig {
    /// Which `Host` and `Origin` values are answered (the others get 403).
    pub origin_policy: OriginPolicy,
    /// The largest request body accepted, in bytes (larger gets 413).
    pub max_body_bytes: usize,
    /// The largest `arguments` object a tool call may carry (serialized), within the body limit.
    pub max_argument_bytes: usize,
    /// Items per page of a list result; more come with a `nextCursor`.
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
    /// Request-rate quotas per tenant and per tool, counted in the store (off by default).
    pub quotas: crate::quota::Quotas,
    /// Where the server is published and under which name: the server card, the catalog and
    /// `server.json` ([`crate::card`]).
    pub listing: crate::card::Listing,
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
            quotas: crate::quota::Quotas::default(),
            listing: crate::card::Listing::default(),
        }
    }
}

/// A response body: complete bytes, or an SSE stream of frames.
#[derive(Debug)]
pub enum ReplyBody {
    /// The whole body at once.
    Full(Bytes),
    /// Frames as they are produced; a comment after `keepalive` without one.
    Sse {
        /// The frames, in order; the stream ends when the sender is dropped.
        frames: mpsc::UnboundedReceiver<Bytes>,
        /// How long the stream may be quiet before a keep-alive comment is sent.
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

/// A complete response: status, headers and a body that may be a stream.
pub type Reply = Response<ReplyBody>;

/// The server: an app, its configuration, its key ring, its authenticator and its clock.
#[derive(Clone)]
pub struct McpServer {
    pub(crate) app: Arc<App>,
    pub(crate) config: Arc<ServerConfig>,
    keys: KeyRing,
    pub(crate) auth: Arc<dyn Authenticator>,
    clock: Arc<dyn Clock>,
    tasks: Option<Arc<Engine>>,
    /// The same engine as tools reach it ([`crate::author::Jobs`]), with the kinds the app runs.
    jobs: Option<crate::author::Jobs>,
    pub(crate) events: broadcast::Sender<ResourceEvent>,
    pub(crate) legacy: Option<Legacy>,
    store: Option<Arc<dyn RecordStore>>,
    /// This environment's quota leases ([`relevo_state::rate::Leases`]): one per server, as one
    /// server serves one execution environment.
    pub(crate) leases: Arc<relevo_state::rate::Leases>,
}

impl McpServer {
    /// The server of the app `app` builds over `ports`: the one wiring every runner (the Lambda
    /// functions, the local server, the testkit) uses, so the app and the server see the same
    /// outside world. The ports are the only source of the signing keys, the authenticator, the
    /// Host/Origin allow-list (it replaces `config.origin_policy`), the clock and the session
    /// ids; their record store is attached ([`McpServer::with_store`]) and so are their durable
    /// jobs ([`McpServer::with_tasks`]), when present.
    pub fn from_ports(app: &impl AppBuilder, ports: &Ports, mut config: ServerConfig) -> Self {
        config.origin_policy = ports.origins.clone();
        let mut server = McpServer::new(app(ports), config, ports.keys.clone(), ports.auth.clone())
            .with_clock(ports.clock.clone());
        if let Some(store) = ports.records.clone() {
            server = server.with_store(store).with_ids(ports.ids.clone());
        }
        match ports.jobs.clone() {
            Some(engine) => server.with_tasks(engine),
            None => server,
        }
    }

    /// The lower-level constructor: an app, its configuration, keys and authenticator, with no
    /// store and no tasks (attach them with [`McpServer::with_store`] and
    /// [`McpServer::with_tasks`]). Runners use [`McpServer::from_ports`]; tests and benchmarks
    /// that assemble a server by hand use this.
    pub fn new(
        app: impl Into<Arc<App>>,
        config: ServerConfig,
        keys: KeyRing,
        auth: Arc<dyn Authenticator>,
    ) -> Self {
        let app = app.into();
        // MCP Apps: a tool's view must exist on the server ("Resource MUST exist on the
        // server"); checked here, once the app is whole, and refused like a registration.
        if let Some((tool, uri)) = app.unresolved_views().into_iter().next() {
            panic!(
                "tool {tool:?} points at the view {uri:?}, which the app does not register: \
                 a tool's _meta.ui.resourceUri names a ui:// resource of the server (MCP Apps, \
                 \"Resource Discovery\")"
            );
        }
        let (events, _) = broadcast::channel(256);
        let leases = Arc::new(config.quotas.leases());
        McpServer {
            app,
            config: Arc::new(config),
            keys,
            auth,
            clock: Arc::new(SystemClock),
            tasks: None,
            jobs: None,
            events,
            legacy: None,
            store: None,
            leases,
        }
    }

    /// Serves handshake-era (2025-11-25, 2025-06-18) clients too, with their sessions and
    /// pending server-to-client requests as records in `store`.
    /// The deployment's record store: 2025-11-25 sessions live in it, and so do the counts of
    /// what each caller holds (listen streams, sessions), so that limits hold across instances.
    /// Without a store, those limits are not enforced (and legacy clients are not served).
    /// Listen streams read the watch records resources declare from it in one batch, so it must
    /// be the store the app's handlers read (without one, they run the handlers instead).
    pub fn with_store(mut self, store: Arc<dyn RecordStore>) -> Self {
        self.store = Some(store.clone());
        self.legacy = Some(Legacy {
            store,
            ids: Arc::new(RandomIds),
            clock: self.clock.clone(),
            session_ttl_secs: self.config.legacy_session_secs,
            input_wait: Duration::from_secs(self.config.legacy_input_wait_secs),
            max_sessions: self.config.max_legacy_sessions,
            in_flight: crate::legacy::InFlight::default(),
        });
        self
    }

    /// The Host/Origin allow-list, for the routes beside `/mcp` a front door serves.
    pub fn origin_policy(&self) -> &OriginPolicy {
        &self.config.origin_policy
    }

    /// How long an SSE stream stays quiet before it sends a keep-alive comment.
    pub(crate) fn keepalive(&self) -> Duration {
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

    /// Offers the Tasks extension, with tasks stored in `engine`; a worker built by
    /// [`App::worker`] runs them.
    pub fn with_tasks(mut self, engine: Arc<Engine>) -> Self {
        self.jobs = Some(self.app.jobs(engine.clone()));
        self.tasks = Some(engine);
        self
    }

    /// Uses `clock` as the time source of the server and of its legacy sessions.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        if let Some(legacy) = &mut self.legacy {
            legacy.clock = clock.clone();
        }
        self.clock = clock;
        self
    }

    /// The app this server serves.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// The worker of this server's app over its tasks' engine ([`App::worker`]): what runs its
    /// jobs and its tools' tasks. `None` without tasks.
    pub fn worker(&self) -> Option<Worker> {
        self.tasks.clone().map(|engine| self.app.worker(engine))
    }

    /// Serves one HTTP request for a function that owns `route`. A [`Deadline`] among the
    /// request's extensions bounds the handler's work; a [`TraceContext`] and [`RequestIds`]
    /// there name the trace and the platform's ids (module [`crate::observe`]).
    pub async fn handle(&self, route: Route, request: Request<Bytes>) -> Reply {
        let started = Instant::now();
        let cold_start = observe::first_request();
        let upstream = observe::upstream_trace(
            request.headers(),
            request.extensions().get::<TraceContext>(),
        );
        let ids = request
            .extensions()
            .get::<RequestIds>()
            .cloned()
            .unwrap_or_default();
        let trace = upstream
            .as_ref()
            .map_or_else(TraceContext::root, TraceContext::child);
        let function = match route {
            Route::All => "mcp",
            Route::Only(own) => own.function_name(),
        };
        let parent = upstream.map(|u| u.span_id);
        let started_unix = trace::unix_nanos();
        let mut seen = Seen {
            trace,
            parent,
            method: None,
            target: None,
            tool: None,
            tenant: None,
            token_ms: None,
        };
        let mut reply = self
            .respond(route, request, function, &ids, &mut seen)
            .await;
        let result_type = reply.headers_mut().remove(RESULT_TYPE_HEADER);
        let result_type = result_type
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-");
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        let method = bounded(seen.method.as_deref().unwrap_or("-"));
        // One line per request: the EMF line carrying the access fields, or the access line.
        observe::RequestLog {
            trace_id: &seen.trace.trace_id,
            ids: &ids,
            function,
            method,
            name: seen.target.as_deref().map(bounded).unwrap_or("-"),
            tenant: seen.tenant.as_deref().map(bounded).unwrap_or("-"),
        }
        .served(&observe::RequestMetrics {
            function,
            method,
            tool: seen.tool.as_deref(),
            status: reply.status().as_u16(),
            result_type,
            latency_ms,
            token_ms: seen.token_ms,
            cold_start,
        });
        if trace::exporting() {
            trace::record(seen.finished(started_unix, reply.status().as_u16(), &ids));
        }
        reply
    }

    /// The ladder, then the method: what [`McpServer::handle`] logs is filled into `seen`.
    async fn respond(
        &self,
        route: Route,
        request: Request<Bytes>,
        function: &str,
        ids: &RequestIds,
        seen: &mut Seen,
    ) -> Reply {
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
            Ok(()) => {
                let verifying = Instant::now();
                let (principal, verified) = self.auth.authenticate_checked(request.headers()).await;
                if verified {
                    seen.token_ms = Some(verifying.elapsed().as_secs_f64() * 1000.0);
                }
                principal.map_err(|c| challenge_reply(&c))
            }
        };
        let principal = match principal {
            Err(reply) => return reply,
            Ok(principal) => principal,
        };
        seen.tenant = Some(principal.tenant.clone());
        if request.method() != http::Method::POST {
            seen.method = Some(request.method().to_string());
            return self.session_verb(&request, &principal).await;
        }
        match ladder.validate(&request) {
            Ok(Validated::Notification) => empty(StatusCode::ACCEPTED),
            Err(Rejection { id, error }) => error_reply(id.as_ref(), &error),
            Ok(Validated::Legacy(message)) => {
                match &message {
                    LegacyMessage::Request { method, params, .. } => {
                        seen.method = Some(method.clone());
                        seen.target = ["name", "uri"]
                            .iter()
                            .find_map(|k| params.get(*k)?.as_str())
                            .map(String::from);
                        if method.as_str() == Method::ToolsCall.as_str() {
                            seen.tool = self.visible_tool(&principal, seen.target.as_deref());
                        }
                        if let Some(meta) = observe::meta_trace(params) {
                            seen.refine_trace(&meta);
                        }
                    }
                    LegacyMessage::Response { .. } => seen.method = Some("(response)".into()),
                    LegacyMessage::Cancelled { .. } => {
                        seen.method = Some("notifications/cancelled".into());
                    }
                };
                let serving =
                    self.serve_legacy(route, request.headers(), message, principal, deadline);
                seen.in_trace(function, ids, serving).await
            }
            Ok(Validated::Request(mut valid)) => {
                valid.deadline = deadline;
                seen.method = Some(valid.method.as_str().to_string());
                seen.target = valid.target().map(String::from);
                if valid.method == Method::ToolsCall {
                    seen.tool = self.visible_tool(&principal, seen.target.as_deref());
                }
                if let Some(meta) = observe::meta_trace(&valid.params) {
                    seen.refine_trace(&meta);
                }
                let id = valid.id.clone();
                match seen
                    .in_trace(function, ids, self.dispatch(valid, principal))
                    .await
                {
                    Ok(reply) => reply,
                    Err(McpError::InsufficientScope(needed)) => {
                        challenge_reply(&self.auth.insufficient_scope(&needed))
                    }
                    Err(error) => error_reply(Some(&id), &error),
                }
            }
        }
    }
}

impl McpServer {
    /// The name of the tool `name` resolves to, if `principal` may see it: the only tool names a
    /// metric dimension carries (a closed set, [`crate::observe`]).
    fn visible_tool(&self, principal: &Principal, name: Option<&str>) -> Option<String> {
        let tool = self.app.find_tool(name?)?;
        guard::visible(principal, &tool.scopes).then(|| tool.name.clone())
    }
}

/// What one request turned out to be, as its one line (EMF or access) reports it.
struct Seen {
    trace: TraceContext,
    /// The caller's span, the parent of this request's.
    parent: Option<String>,
    method: Option<String>,
    target: Option<String>,
    /// For `tools/call`: the registered tool the call resolved to, if the caller may see it
    /// (what the `Tool` metric dimension may name).
    tool: Option<String>,
    tenant: Option<String>,
    token_ms: Option<f64>,
}

impl Seen {
    /// The request's own context in `_meta` is more specific than the HTTP one: the server's span
    /// becomes its child, for the rest of the request and for the jobs it starts.
    fn refine_trace(&mut self, meta: &TraceContext) {
        self.trace = meta.child();
        self.parent = Some(meta.span_id.clone());
    }

    /// Runs the method's work in the request's trace (what jobs it starts record) and in its
    /// request's log context (what every line it logs carries). The work is boxed: it is large, and wrapping it
    /// by value would copy it at every layer.
    async fn in_trace<T>(
        &self,
        function: &str,
        ids: &RequestIds,
        work: impl Future<Output = T>,
    ) -> T {
        let log = observe::RequestLog {
            trace_id: &self.trace.trace_id,
            ids,
            function,
            method: bounded(self.method.as_deref().unwrap_or("-")),
            name: bounded(self.target.as_deref().unwrap_or("-")),
            tenant: bounded(self.tenant.as_deref().unwrap_or("-")),
        };
        log.scope(trace::scope(self.trace.clone(), Box::pin(work)))
            .await
    }

    /// The request as a span for an exporter, named and attributed as OpenTelemetry's MCP
    /// conventions name them (`{mcp.method.name} {target}`, `gen_ai.tool.name`).
    fn finished(&self, started_unix: u128, status: u16, ids: &RequestIds) -> FinishedSpan {
        let method = bounded(self.method.as_deref().unwrap_or("-")).to_string();
        let target = self.target.as_deref().map(bounded);
        let mut attributes = vec![
            ("mcp.method.name", method.clone()),
            ("http.response.status_code", status.to_string()),
        ];
        match (method.as_str(), target) {
            ("tools/call", Some(tool)) => attributes.push(("gen_ai.tool.name", tool.to_string())),
            ("resources/read", Some(uri)) => attributes.push(("mcp.resource.uri", uri.to_string())),
            _ => {}
        }
        attributes.extend(
            self.tenant
                .as_deref()
                .map(|t| ("relevo.tenant", bounded(t).to_string())),
        );
        attributes.extend(ids.lambda.clone().map(|id| ("faas.invocation_id", id)));
        attributes.extend(
            ids.apigw
                .clone()
                .map(|id| ("aws.apigateway.request_id", id)),
        );
        FinishedSpan {
            trace_id: self.trace.trace_id.clone(),
            span_id: self.trace.span_id.clone(),
            parent_span_id: self.parent.clone(),
            name: target.map_or_else(|| method.clone(), |t| format!("{method} {t}")),
            kind: SpanKind::Server,
            start_unix_nanos: started_unix,
            end_unix_nanos: trace::unix_nanos(),
            attributes,
            failed: status >= 500,
        }
    }
}

/// When a request's work must be done: set by the front door's adapter (a Lambda function: its
/// invocation deadline less a margin), so that a handler stops, and the caller hears a retryable
/// error, before the function's timeout — never after the front door has already answered.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(pub tokio::time::Instant);

impl Deadline {
    /// The deadline `left` from now.
    pub fn after(left: Duration) -> Self {
        Deadline(tokio::time::Instant::now() + left)
    }
}

/// The longest caller-supplied text a log line carries (a method or tool name of a megabyte
/// would otherwise be written out whole).
pub const MAX_LOGGED_CHARS: usize = 128;

/// `text`, cut to [`MAX_LOGGED_CHARS`] characters.
pub fn bounded(text: &str) -> &str {
    match text.char_indices().nth(MAX_LOGGED_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}
