//! The Lambda side of every function: read settings once per cold start, then turn each API
//! Gateway proxy event into an `http::Request<Bytes>` for [`McpServer::handle`] and back.
//!
//! Two response modes, chosen per function by `RELEVO_RESPONSE_STREAMING`:
//! - buffered (default): an SSE reply is collected whole and returned as one `text/event-stream`
//!   body, which is valid SSE (notifications first, the response last); listen streams end at
//!   once. This is what HTTP APIs (front door B) and plain REST integrations need.
//! - streaming (`true`): Lambda response streaming (prelude, eight NUL bytes, then each SSE frame
//!   as it is produced), for REST integrations with `ResponseTransferMode: RESPONSE_STREAM`
//!   (front door A). A streamed answer to a buffered invoke would not be a proxy response, so the
//!   template sets the variable only where the integration streams.

pub mod keys;
pub mod otlp;

use bytes::Bytes;
use lambda_http::{Body, Error, Request, Response, service_fn};
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use http_body::Frame;
use http_body_util::StreamBody;
use lambda_http::LambdaEvent;
use relevo_auth::AuthSettings;
use relevo_aws::{DynamoStore, SqsQueue};
use relevo_protocol::{
    AppBuilder, Deadline, McpServer, Method, Ports, Reply, ReplyBody, RequestIds, Route, Settings,
};
use relevo_state::TraceContext;
use relevo_state::emf::{Metrics, Unit};
use relevo_state::{Engine, EngineConfig, InFlightLimits, RandomIds, SystemClock, Worker};
use std::convert::Infallible;
use tracing::Instrument;

/// Builds the server of `app` from the environment. Lambdas never use ephemeral keys: the
/// instance that verifies a `requestState` is rarely the one that sealed it.
pub async fn server_from_env(streaming: bool, app: &impl AppBuilder) -> Result<McpServer, Error> {
    let mut settings = settings_from_env().await?;
    if !streaming && std::env::var("RELEVO_LISTEN_MAX_SECS").is_err() {
        // Buffered responses: a listen stream is acknowledged and ended at once.
        settings.config.listen_max_secs = 0;
    }
    // Server-to-client requests ride on a streamed `tools/call` answer; resource updates happen
    // in other environments, so no GET stream or subscription for 2025-11-25 clients.
    settings.config.streams_responses = streaming;
    settings.config.pushes_updates = false;
    let ports = ports_from_env(&settings).await?;
    Ok(McpServer::from_ports(app, &ports, settings.config))
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// DynamoDB (`RELEVO_TABLE`) and SQS (`RELEVO_QUEUE_URL`) when configured; features whose port is
/// missing are left out of the app.
pub async fn backend_from_env() -> Ports {
    let table = std::env::var("RELEVO_TABLE").ok().filter(|t| !t.is_empty());
    let Some(table) = table else {
        return Ports::new(None);
    };
    let config = relevo_aws::sdk_config();
    let store = Arc::new(DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&config),
        &table,
    ));
    let pages_url = std::env::var("RELEVO_APPROVALS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| {
            Ports::approvals_beside(&std::env::var("RELEVO_AUTH_AUDIENCE").unwrap_or_default())
        });
    let ports = Ports::new(Some(store.clone())).with_pages_url(&pages_url);
    match std::env::var("RELEVO_QUEUE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        Some(url) => {
            let queue = Arc::new(SqsQueue::new(aws_sdk_sqs::Client::new(&config), &url));
            let config = EngineConfig {
                lease_secs: env_number("RELEVO_LEASE_SECS", 60),
                ..EngineConfig::default()
            };
            let engine = Engine::new(
                store.clone(),
                queue,
                Arc::new(SystemClock),
                Arc::new(RandomIds),
                config,
            )
            .with_admission(store, InFlightLimits::from_env());
            ports.with_jobs(Arc::new(engine))
        }
        None => ports,
    }
}

/// Settings with the signing keys from Secrets Manager (`RELEVO_STATE_KEYS_SECRET`, name or ARN)
/// or from `RELEVO_STATE_KEYS`. Without either a function refuses to start: the instance that
/// verifies a `requestState` is rarely the one that sealed it, so a per-process key is wrong here.
pub async fn settings_from_env() -> Result<Settings, Error> {
    match std::env::var("RELEVO_STATE_KEYS_SECRET")
        .ok()
        .filter(|s| !s.is_empty())
    {
        Some(secret) => {
            let mut settings = Settings::from_env(true).map_err(|e| e.to_string())?;
            let client = aws_sdk_secretsmanager::Client::new(&relevo_aws::sdk_config());
            settings.keys = relevo_aws::load_key_ring(&client, &secret).await?;
            settings.ephemeral_keys = false;
            keys::install(keys::KeyRefresh::new(
                client,
                &secret,
                settings.keys.clone(),
                keys::refresh_interval(),
            ));
            Ok(settings)
        }
        // Its Display, not its Debug: the error names the key entry's position, never its text.
        None => Ok(Settings::from_env(false).map_err(|e| e.to_string())?),
    }
}

/// What a function's app is built from: the configured backend, and the server's bearer-token
/// verification, signing keys and Host/Origin allow-list from `settings`.
async fn ports_from_env(settings: &Settings) -> Result<Ports, Error> {
    let auth = relevo_auth::authenticator(&AuthSettings::from_env("")?, None)?;
    let origins = settings.config.origin_policy.clone();
    Ok(backend_from_env()
        .await
        .with_security(auth, settings.keys.clone(), origins))
}

/// The worker of `app`: its job runners and its tools' tasks, over the configured table and queue.
async fn worker_from_env(app: &impl AppBuilder) -> Result<Arc<Worker>, Error> {
    let ports = ports_from_env(&settings_from_env().await?).await?;
    let engine = ports
        .jobs
        .clone()
        .ok_or_else(|| Error::from("RELEVO_TABLE and RELEVO_QUEUE_URL are required"))?;
    Ok(Arc::new(Arc::new(app(&ports)).worker(engine)))
}

/// The `worker` function: an SQS batch in, `batchItemFailures` out (only the failed messages;
/// a panic in one message fails that message only). Needs `ReportBatchItemFailures` on the
/// event source mapping, or failed messages are deleted with the batch.
pub async fn run_worker(app: impl AppBuilder) -> Result<(), Error> {
    init_logging();
    let worker = worker_from_env(&app).await?;
    lambda_http::lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let worker = worker.clone();
        let span = tracing::info_span!("invocation", lambda_request_id = %event.context.request_id);
        async move {
            keys::refresh_if_due().await;
            let response = handle_sqs_batch(&worker, event.payload)
                .instrument(span)
                .await;
            otlp::flush().await;
            Ok::<_, Error>(response)
        }
    }))
    .await
}

/// One SQS event: every record processed, the failed ones reported by message id.
/// Each message is processed in the trace its `AWSTraceHeader` attribute carries.
pub async fn handle_sqs_batch(worker: &Worker, event: SqsEvent) -> SqsBatchResponse {
    let batch = event
        .records
        .into_iter()
        .map(|m| {
            let trace = m
                .attributes
                .get("AWSTraceHeader")
                .and_then(|h| TraceContext::from_xray(h));
            (
                m.message_id.unwrap_or_default(),
                m.body.unwrap_or_default(),
                trace,
            )
        })
        .collect();
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = worker
        .process_traced_batch(batch)
        .await
        .into_iter()
        .map(|id| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failure
        })
        .collect();
    response
}

/// The `reconciler` function (scheduled): one reconcile pass over the jobs of `app`; returns
/// its report. It re-enqueues by job id and runs nothing itself, but it is built like the worker
/// so that both fail to start on the same missing configuration.
pub async fn run_reconciler(app: impl AppBuilder) -> Result<(), Error> {
    init_logging();
    let worker = worker_from_env(&app).await?;
    lambda_http::lambda_runtime::run(service_fn(move |_: LambdaEvent<serde_json::Value>| {
        let worker = worker.clone();
        async move {
            let report = worker.reconcile(500).await?;
            tracing::info!(?report, "reconciled");
            Metrics::new()
                .by(&[])
                .metric("ReconcileRequeued", report.requeued as f64, Unit::Count)
                .metric("ReconcileFailed", report.failed as f64, Unit::Count)
                .metric("ReconcileCancelled", report.cancelled as f64, Unit::Count)
                .emit();
            Ok::<_, Error>(serde_json::json!({
                "requeued": report.requeued, "failed": report.failed, "cancelled": report.cancelled, "skipped": report.skipped
            }))
        }
    }))
    .await
}

/// Serves one proxy event, buffered.
pub async fn handle_event(server: &McpServer, route: Route, event: Request) -> Response<Body> {
    buffered(serve(server, route, None, event).await).await
}

/// The server's reply to one event; the all-methods function also answers the metadata paths.
async fn serve(
    server: &McpServer,
    route: Route,
    metadata: Option<&AuthSettings>,
    event: Request,
) -> Reply {
    if let Some(settings) = metadata
        && relevo_auth::METADATA_PATHS.contains(&event.uri().path().trim_end_matches('/'))
    {
        if let Err(refused) = server.origin_policy().check(event.headers()) {
            let (parts, body) = forbidden(&refused).into_parts();
            let body = match body {
                Body::Text(text) => Bytes::from(text),
                _ => Bytes::new(),
            };
            return Response::from_parts(parts, ReplyBody::Full(body));
        }
        let (parts, body) =
            relevo_auth::metadata_response(settings, event.method(), event.uri().path())
                .into_parts();
        return Response::from_parts(parts, ReplyBody::Full(Bytes::from(body)));
    }
    let deadline = invocation_deadline(&event);
    let (ids, xray) = invocation_ids(&event);
    let (parts, body) = event.into_parts();
    let mut request = http_request(parts, body);
    if let Some(deadline) = deadline {
        request.extensions_mut().insert(deadline);
    }
    request.extensions_mut().insert(ids);
    if let Some(xray) = xray {
        request.extensions_mut().insert(xray);
    }
    server.handle(route, request).await
}

/// API Gateway's and Lambda's ids for this event, and the invocation's X-Ray trace
/// (`Lambda-Runtime-Trace-Id`), which the server continues when the caller sent no trace.
fn invocation_ids(event: &Request) -> (RequestIds, Option<TraceContext>) {
    use lambda_http::RequestExt;
    use lambda_http::request::RequestContext;
    let apigw = match event.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(context)) => context.request_id.clone(),
        Some(RequestContext::ApiGatewayV2(context)) => context.request_id.clone(),
        _ => None,
    };
    let context = event.lambda_context_ref();
    let lambda = context
        .map(|c| c.request_id.clone())
        .filter(|id| !id.is_empty());
    let xray = context
        .and_then(|c| c.xray_trace_id.as_deref())
        .and_then(TraceContext::from_xray);
    (RequestIds { apigw, lambda }, xray)
}

/// The invocation's deadline less a margin (`RELEVO_DEADLINE_MARGIN_MS`, 1.5 s): a handler still
/// running then is stopped and the caller hears a retryable error while the function is alive,
/// inside the front door's limit (the function's timeout is at most its integration's, which the
/// deploy check enforces).
fn invocation_deadline(event: &Request) -> Option<Deadline> {
    use lambda_http::RequestExt;
    let context = event.lambda_context_ref()?;
    let margin = std::env::var("RELEVO_DEADLINE_MARGIN_MS")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(1500u64);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    let left = context.deadline.checked_sub(now)?.saturating_sub(margin);
    Some(Deadline::after(Duration::from_millis(left)))
}

async fn buffered(reply: Reply) -> Response<Body> {
    let (parts, body) = reply.into_parts();
    let bytes = body.collect().await;
    let body = match String::from_utf8(bytes.to_vec()) {
        Ok(text) if text.is_empty() => Body::Empty,
        Ok(text) => Body::Text(text),
        Err(error) => Body::Binary(error.into_bytes()),
    };
    Response::from_parts(parts, body)
}

type ChunkBody = StreamBody<BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

fn streamed(reply: Reply) -> Response<ChunkBody> {
    let (parts, body) = reply.into_parts();
    Response::from_parts(
        parts,
        StreamBody::new(
            body.into_chunks()
                .map(|chunk| Ok(Frame::data(chunk)))
                .boxed(),
        ),
    )
}

fn http_request(
    parts: lambda_http::http::request::Parts,
    body: Body,
) -> lambda_http::http::Request<Bytes> {
    let bytes = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(binary) => Bytes::from(binary),
        _ => Bytes::new(),
    };
    lambda_http::http::Request::from_parts(parts, bytes)
}

/// JSON lines for CloudWatch (which stamps the time) and EMF metrics: the setup the local server
/// shares ([`relevo_protocol::observe::init_logging`], Lambda's format); then OTLP export.
fn init_logging() {
    relevo_protocol::observe::init_logging(relevo_protocol::observe::LogFormat::Lambda);
    otlp::init_from_env();
}

/// The `well-known` function: protected-resource metadata (RFC 9728) on GET.
pub async fn run_well_known() -> Result<(), Error> {
    init_logging();
    let settings = AuthSettings::from_env("")?;
    let origins = relevo_protocol::origin_policy(&|name: &str| std::env::var(name).ok());
    lambda_http::run(service_fn(move |event: Request| {
        let (settings, origins) = (settings.clone(), origins.clone());
        async move {
            if let Err(refused) = origins.check(event.headers()) {
                return Ok::<_, Error>(forbidden(&refused));
            }
            let response =
                relevo_auth::metadata_response(&settings, event.method(), event.uri().path());
            let (parts, body) = response.into_parts();
            Ok::<_, Error>(Response::from_parts(parts, Body::Text(body)))
        }
    }))
    .await
}

/// 403 for a Host or Origin outside the allow-list, as `/mcp` answers it.
fn forbidden(refused: &relevo_protocol::McpError) -> Response<Body> {
    let body =
        serde_json::json!({ "error": "forbidden", "error_description": refused.to_string() });
    let mut response = Response::new(Body::Text(body.to_string()));
    *response.status_mut() = lambda_http::http::StatusCode::FORBIDDEN;
    response.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    response
}

/// The `approvals` function: the pages `app` serves beside `/mcp` (the shop's approval pages),
/// behind the server's Host/Origin allow-list. An app without pages answers 404.
pub async fn run_pages(app: impl AppBuilder) -> Result<(), Error> {
    init_logging();
    let settings = settings_from_env().await?;
    let ports = ports_from_env(&settings).await?;
    let origins = ports.origins.clone();
    let pages = app(&ports).find_pages().cloned();
    let gate = relevo_protocol::PageGate {
        quotas: settings.config.quotas.clone(),
        store: ports.records.clone(),
        clock: ports.clock.clone(),
    };
    lambda_http::run(service_fn(move |event: Request| {
        let (pages, origins, gate) = (pages.clone(), origins.clone(), gate.clone());
        async move {
            keys::refresh_if_due().await;
            if let Err(refused) = origins.check(event.headers()) {
                return Ok::<_, Error>(forbidden(&refused));
            }
            let Some(pages) = pages else {
                let mut response = Response::new(Body::Empty);
                *response.status_mut() = lambda_http::http::StatusCode::NOT_FOUND;
                return Ok(response);
            };
            let (parts, body) = event.into_parts();
            let bytes = http_request(parts.clone(), body).into_body();
            // Behind a stage or a base path the pages are still addressed from their prefix.
            let path = parts.uri.path();
            let path = path.find(pages.prefix()).map_or(path, |at| &path[at..]);
            let served = relevo_protocol::pages::serve(
                &*pages,
                &gate,
                &parts.method,
                path,
                &parts.headers,
                &bytes,
            );
            let (out, html) = served.await.into_parts();
            Ok::<_, Error>(Response::from_parts(out, Body::Text(html)))
        }
    }))
    .await
}

/// Whether this function answers with Lambda response streaming (module docs).
fn streaming_from_env() -> bool {
    std::env::var("RELEVO_RESPONSE_STREAMING").is_ok_and(|v| v == "true" || v == "1")
}

/// The whole `main` of a function: JSON logs for CloudWatch, settings, then the event loop.
///
/// The HTTP functions' mains run it on a current-thread runtime: an execution environment
/// serves one invocation at a time, and a second thread only adds a wake-up and a context
/// switch to every Runtime API round trip (measured: `make bench`, README "Performance").
/// The worker keeps the multi-thread runtime, so that a lease's heartbeat runs beside a
/// handler that computes without yielding.
pub async fn run(route: Route, app: impl AppBuilder) -> Result<(), Error> {
    init_logging();
    let streaming = streaming_from_env();
    let server = Arc::new(server_from_env(streaming, &app).await?);
    // Behind a custom domain the catch-all also receives the metadata paths (no routing rule
    // claims them), so the all-methods function answers them as the `well-known` function does.
    let metadata = Arc::new(
        AuthSettings::from_env("")
            .ok()
            .filter(|_| route == Route::All),
    );
    let reply = move |event: Request| {
        let (server, metadata) = (server.clone(), metadata.clone());
        async move {
            keys::refresh_if_due().await;
            let reply = serve(&server, route, metadata.as_ref().as_ref(), event).await;
            // The request's span has ended; send it before the environment may be frozen.
            otlp::flush().await;
            reply
        }
    };
    if streaming {
        let reply = reply.clone();
        lambda_http::run_with_streaming_response(service_fn(move |event| {
            let reply = reply.clone();
            async move { Ok::<_, Error>(streamed(reply(event).await)) }
        }))
        .await
    } else {
        lambda_http::run(service_fn(move |event| {
            let reply = reply.clone();
            async move { Ok::<_, Error>(buffered(reply(event).await).await) }
        }))
        .await
    }
}

/// The function a deployment names `name` (a `functions/` directory and the template's binary):
/// for a binary that serves every function of a stack, told which by `RELEVO_FUNCTION` (the
/// conformance fixtures' binary does this, so they are never linked into a real function).
pub async fn run_function(name: &str, app: impl AppBuilder) -> Result<(), Error> {
    let method = match name {
        "mcp" => return run(Route::All, app).await,
        "worker" => return run_worker(app).await,
        "reconciler" => return run_reconciler(app).await,
        "approvals" => return run_pages(app).await,
        "well-known" => return run_well_known().await,
        "discover" => Method::Discover,
        "completion" => Method::Complete,
        "subscriptions-listen" => Method::SubscriptionsListen,
        other => Method::from_wire(&other.replace('-', "/"))
            .ok_or_else(|| Error::from(format!("no function {other:?}")))?,
    };
    run(Route::Only(method), app).await
}
