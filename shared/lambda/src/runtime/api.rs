//! The Lambda Runtime API, as a client: `GET …/invocation/next`, then the invocation's answer
//! (`…/response`, buffered or streamed, or `…/error`), and `…/init/error` when the function
//! cannot start. Paths, headers and bodies are those of the Runtime API reference
//! (<https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html>) and of response streaming
//! for custom runtimes (<https://docs.aws.amazon.com/lambda/latest/dg/runtimes-custom.html#runtimes-custom-response-streaming>).
//!
//! Invariants:
//! - Every connection has `TCP_NODELAY`, and asks for quick ACKs once the Runtime API has been
//!   seen waiting for them ([`super::connect`]). A streamed
//!   answer leaves as several writes (the request head, the prelude, frames, the end); without
//!   it Nagle's algorithm holds each small write until the previous one is acknowledged, and the
//!   Runtime API's kernel delays that ACK (~40 ms on Linux), which Lambda bills as duration.
//! - Every answer of the Runtime API is read to its end, so its connection goes back to the pool:
//!   one connection per poller for the life of the environment, never one per invocation.
//! - The invocation id Lambda sends (`Lambda-Runtime-Invocation-Id`) goes back with the answer,
//!   so that a late answer to an invocation that timed out is refused instead of taken for
//!   another's.
//! - The client is hyper's pooled HTTP/1.1 client (the one lambda_runtime's Runtime API client
//!   wraps) over our connector; only the connector and the poll loop ([`super`]) are ours.

use bytes::Bytes;
use http::header::{CONTENT_TYPE, TRAILER, TRANSFER_ENCODING, USER_AGENT};
use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::Client;
use lambda_http::lambda_runtime::{Config, Context, Diagnostic};

use super::connect::Connector;
use super::streamed::Streamed;
use super::{Error, Invocation, Ticket};

/// What the runtime sends: a whole body, or a streamed answer.
type ApiBody = UnsyncBoxBody<Bytes, Error>;

fn full(bytes: impl Into<Bytes>) -> ApiBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A request to the Runtime API, with this runtime's `User-Agent`.
fn build_request() -> http::request::Builder {
    Request::builder().header(
        USER_AGENT,
        concat!("relevo-lambda/", env!("CARGO_PKG_VERSION")),
    )
}
const NEXT: &str = "/2018-06-01/runtime/invocation/next";
const INIT_ERROR: &str = "/2018-06-01/runtime/init/error";
const REQUEST_ID: &str = "lambda-runtime-aws-request-id";
const DEADLINE_MS: &str = "lambda-runtime-deadline-ms";
const INVOCATION_ID: &str = "lambda-runtime-invocation-id";
const ERROR_TYPE: &str = "lambda-runtime-function-error-type";
const RESPONSE_MODE: &str = "lambda-runtime-function-response-mode";
/// The trailers a streamed answer may end with when it fails part way.
pub(crate) const STREAM_ERROR_TYPE: &str = "lambda-runtime-function-error-type";
pub(crate) const STREAM_ERROR_BODY: &str = "lambda-runtime-function-error-body";
/// What a streamed HTTP answer's body is: the JSON prelude, eight NUL bytes, then the body.
const HTTP_INTEGRATION_RESPONSE: &str = "application/vnd.awslambda.http-integration-response";

/// The Runtime API of this execution environment (`AWS_LAMBDA_RUNTIME_API`).
pub(crate) struct RuntimeApi {
    client: Client<Connector, ApiBody>,
    endpoint: Uri,
    config: std::sync::Arc<Config>,
}

impl RuntimeApi {
    /// The Runtime API named by `AWS_LAMBDA_RUNTIME_API` (`host:port`), with one pooled connection
    /// per poller (`pollers`), and the function's configuration from the environment.
    pub(crate) fn from_env(pollers: usize) -> Result<RuntimeApi, Error> {
        let address = std::env::var("AWS_LAMBDA_RUNTIME_API")
            .map_err(|_| "AWS_LAMBDA_RUNTIME_API is not set: this is not a Lambda environment")?;
        let endpoint: Uri = format!("http://{address}")
            .parse()
            .map_err(|e| format!("AWS_LAMBDA_RUNTIME_API={address:?} is not host:port: {e}"))?;
        Ok(RuntimeApi::new(endpoint, pollers, config_from_env()))
    }

    pub(crate) fn new(endpoint: Uri, pollers: usize, config: Config) -> RuntimeApi {
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_max_idle_per_host(pollers.max(1))
            .http1_max_buf_size(1024 * 1024)
            .build(Connector);
        RuntimeApi {
            client,
            endpoint,
            config: std::sync::Arc::new(config),
        }
    }

    /// `path` on the Runtime API.
    fn uri(&self, path: &str) -> Result<Uri, Error> {
        let authority = self
            .endpoint
            .authority()
            .ok_or("the Runtime API has no address")?;
        Ok(Uri::builder()
            .scheme("http")
            .authority(authority.clone())
            .path_and_query(path)
            .build()?)
    }

    /// Waits for the next invocation (a long poll).
    pub(crate) async fn next(&self) -> Result<(Ticket, Invocation), Error> {
        let request = build_request()
            .method(Method::GET)
            .uri(self.uri(NEXT)?)
            .body(Empty::new().map_err(|never| match never {}).boxed_unsync())?;
        let response = self.client.request(request).await?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await?.to_bytes();
        if !parts.status.is_success() {
            return Err(format!(
                "the Runtime API answered {} to {NEXT}: {}",
                parts.status,
                String::from_utf8_lossy(&body)
            )
            .into());
        }
        invocation(&parts.headers, body, self.config.clone())
    }

    /// The invocation's whole answer, `payload` being its JSON.
    pub(crate) async fn respond(&self, to: &Ticket, payload: Bytes) -> Result<(), Error> {
        let request = self
            .answer(to, "response")
            .header(CONTENT_TYPE, "application/json")
            .body(full(payload))?;
        self.send(request).await
    }

    /// The invocation's answer as a stream: `body` (for an HTTP integration, its prelude and the
    /// eight NUL bytes first), each frame written as it is produced; a failure part way ends it
    /// with the error trailers.
    pub(crate) async fn stream(&self, to: &Ticket, body: Streamed) -> Result<(), Error> {
        let mut builder = self
            .answer(to, "response")
            .header(RESPONSE_MODE, "streaming")
            .header(TRANSFER_ENCODING, "chunked")
            .header(CONTENT_TYPE, HTTP_INTEGRATION_RESPONSE);
        if let Some(headers) = builder.headers_mut() {
            headers.append(TRAILER, HeaderValue::from_static(STREAM_ERROR_TYPE));
            headers.append(TRAILER, HeaderValue::from_static(STREAM_ERROR_BODY));
        }
        self.send(builder.body(body.boxed_unsync())?).await
    }

    /// The invocation failed before it had an answer.
    pub(crate) async fn fail(&self, to: &Ticket, diagnostic: &Diagnostic) -> Result<(), Error> {
        let request = self
            .answer(to, "error")
            .header(ERROR_TYPE, HeaderValue::from_str(&diagnostic.error_type)?)
            .header(CONTENT_TYPE, "application/json")
            .body(full(serde_json::to_vec(diagnostic)?))?;
        self.send(request).await
    }

    /// The function could not start (before its first `next`).
    pub(crate) async fn init_failed(&self, diagnostic: &Diagnostic) -> Result<(), Error> {
        let request = build_request()
            .method(Method::POST)
            .uri(self.uri(INIT_ERROR)?)
            .header(ERROR_TYPE, "Runtime.InitError")
            .header(CONTENT_TYPE, "application/json")
            .body(full(serde_json::to_vec(diagnostic)?))?;
        self.send(request).await
    }

    fn answer(&self, to: &Ticket, what: &str) -> http::request::Builder {
        let path = format!("/2018-06-01/runtime/invocation/{}/{what}", to.request_id);
        let mut builder = build_request().method(Method::POST);
        builder = match self.uri(&path) {
            Ok(uri) => builder.uri(uri),
            // A request id that is no path segment: the builder carries the error to `body`.
            Err(_) => builder.uri(path.as_str()),
        };
        if let Some(id) = &to.invocation_id {
            builder = builder.header(INVOCATION_ID, id.clone());
        }
        builder
    }

    /// Sends `request` and reads the answer whole (the connection stays in the pool).
    async fn send(&self, request: Request<ApiBody>) -> Result<(), Error> {
        let path = request.uri().path().to_string();
        let response = self.client.request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        if status.is_success() {
            return Ok(());
        }
        // 410: the invocation timed out, or this answer is stale; 413: the answer is too large.
        Err(format!(
            "the Runtime API answered {status} to {path}: {}",
            String::from_utf8_lossy(&body)
        )
        .into())
    }
}

/// The function's configuration (its name, memory, version and log stream), read leniently:
/// a missing value is empty, never a panic.
fn config_from_env() -> Config {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    Config {
        function_name: var("AWS_LAMBDA_FUNCTION_NAME"),
        memory: var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE").parse().unwrap_or(0),
        version: var("AWS_LAMBDA_FUNCTION_VERSION"),
        log_stream: var("AWS_LAMBDA_LOG_STREAM_NAME"),
        log_group: var("AWS_LAMBDA_LOG_GROUP_NAME"),
    }
}

/// An invocation from the answer to `next`: its request id and deadline are required (the
/// Runtime API always sends them); the rest of the context as lambda_runtime reads it.
fn invocation(
    headers: &HeaderMap,
    body: Bytes,
    config: std::sync::Arc<Config>,
) -> Result<(Ticket, Invocation), Error> {
    let required = |name: &str| -> Result<&str, Error> {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("the Runtime API sent an invocation without {name}").into())
    };
    let request_id = required(REQUEST_ID)?;
    required(DEADLINE_MS)?.parse::<u64>()?;
    let ticket = Ticket {
        request_id: request_id.to_string(),
        invocation_id: headers.get(INVOCATION_ID).cloned(),
    };
    let context = Context::new(request_id, config, headers)?;
    Ok((ticket, Invocation { context, body }))
}
