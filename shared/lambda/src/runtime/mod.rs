//! The poll loop every function runs: wait for an invocation on the Runtime API ([`api`]), hand
//! it to the function's handler, send its answer back; then the next one.
//!
//! Ours rather than lambda_runtime's because lambda_runtime builds its Runtime API client itself
//! (without `TCP_NODELAY`, and takes no connector), and a streamed answer then waits ~40 ms on a
//! delayed ACK before Lambda sees its end. What lambda_runtime did for these functions is kept:
//! - the invocation's context (request id, deadline, function ARN, X-Ray trace id, client
//!   context, identity, tenant id) as a `lambda_runtime::Context`, which the HTTP events carry
//!   as their extension (`lambda_http::RequestExt`) and the X-Ray trace id as their
//!   `x-amzn-trace-id` header;
//! - response streaming: the HTTP integration's prelude, the eight NUL bytes, each frame as it
//!   is produced, and the error trailers when a stream fails part way ([`streamed`]);
//! - a handler that fails or panics (in a build that unwinds) answers `…/error` for that
//!   invocation only; an event that does not parse is answered the same way, the handler not
//!   called; a function that cannot start reports `…/init/error` ([`init_failed`]);
//! - several invocations in flight per environment on Lambda Managed Instances
//!   (`AWS_LAMBDA_MAX_CONCURRENCY` pollers, each its own connection, with the
//!   `managed-instances` feature; one at a time otherwise, as lambda_runtime's `run` did);
//! - shutdown as before: Lambda stops an environment with SIGKILL (or SIGTERM when an
//!   extension is registered; none is), and a runner ends only when the Runtime API fails.
//!
//! Not kept: `_X_AMZN_TRACE_ID` in the process environment. lambda_runtime set it per
//! invocation in sequential mode (never with several in flight); setting a variable is
//! `unsafe` in Rust 2024 and this workspace forbids `unsafe`, so the trace id travels in the
//! request instead.

mod api;
mod connect;
mod streamed;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{FutureExt, Stream};
use lambda_http::lambda_runtime::{Context, Diagnostic};

pub(crate) use api::RuntimeApi;
pub(crate) use streamed::Streamed;

/// The runners' error (`lambda_http::Error`).
pub type Error = lambda_http::Error;

/// One invocation: its context and its event, as the Runtime API sent them.
pub struct Invocation {
    pub context: Context,
    pub body: Bytes,
}

/// What the answer to an invocation is addressed by: its request id, and the invocation id
/// Lambda sent with it (echoed as `Lambda-Runtime-Invocation-Id`), when it sent one.
pub(crate) struct Ticket {
    request_id: String,
    invocation_id: Option<http::HeaderValue>,
}

/// What a handler answers an invocation with.
pub enum Answer {
    /// The whole answer: its JSON.
    Buffered(Bytes),
    /// A streamed answer: `head` (an HTTP integration's prelude and eight NUL bytes), then
    /// `frames` as they are produced.
    Streamed {
        head: Bytes,
        frames: futures_util::stream::BoxStream<'static, Result<Bytes, Error>>,
    },
    /// The invocation failed: reported to `…/error`.
    Failed(Diagnostic),
}

impl Answer {
    /// A streamed answer.
    pub fn streamed(
        head: Bytes,
        frames: impl Stream<Item = Result<Bytes, Error>> + Send + 'static,
    ) -> Answer {
        use futures_util::StreamExt;
        Answer::Streamed {
            head,
            frames: frames.boxed(),
        }
    }
}

/// A failure as the Runtime API records it (`errorType`, `errorMessage`).
pub fn diagnostic(error_type: &str, message: impl std::fmt::Display) -> Diagnostic {
    Diagnostic {
        error_type: error_type.into(),
        error_message: message.to_string(),
    }
}

/// Serves invocations with `handler` until the Runtime API fails: one at a time, or with the
/// `managed-instances` feature as many at once as `AWS_LAMBDA_MAX_CONCURRENCY` says.
pub async fn serve<H, F>(handler: H) -> Result<(), Error>
where
    H: Fn(Invocation) -> F + Send + Sync + 'static,
    F: Future<Output = Answer> + Send + 'static,
{
    let pollers = pollers();
    let api = Arc::new(RuntimeApi::from_env(pollers)?);
    serve_on(api, pollers, handler).await
}

/// [`serve`] on a given Runtime API with `pollers` invocations in flight at most.
pub(crate) async fn serve_on<H, F>(
    api: Arc<RuntimeApi>,
    pollers: usize,
    handler: H,
) -> Result<(), Error>
where
    H: Fn(Invocation) -> F + Send + Sync + 'static,
    F: Future<Output = Answer> + Send + 'static,
{
    let handler = Arc::new(handler);
    if pollers <= 1 {
        return poll(&api, &*handler).await;
    }
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..pollers {
        let (api, handler) = (api.clone(), handler.clone());
        tasks.spawn(async move { poll(&api, &*handler).await });
    }
    // The first poller to stop (the Runtime API failed) stops the environment.
    let stopped = tasks.join_next().await;
    tasks.abort_all();
    match stopped {
        Some(Ok(result)) => result,
        Some(Err(joined)) => Err(format!("a poller stopped: {joined}").into()),
        None => Ok(()),
    }
}

/// One poller: the next invocation, its answer, and again.
async fn poll<H, F>(api: &RuntimeApi, handler: &H) -> Result<(), Error>
where
    H: Fn(Invocation) -> F,
    F: Future<Output = Answer>,
{
    loop {
        let (ticket, invocation) = api.next().await?;
        let answer = match AssertUnwindSafe(handler(invocation)).catch_unwind().await {
            Ok(answer) => answer,
            Err(panic) => Answer::Failed(diagnostic("Runtime.Panic", streamed::panicked(panic))),
        };
        let sent = match answer {
            Answer::Buffered(payload) => api.respond(&ticket, payload).await,
            Answer::Streamed { head, frames } => {
                api.stream(&ticket, Streamed::new(head, frames)).await
            }
            Answer::Failed(diagnostic) => {
                tracing::error!(
                    error_type = %diagnostic.error_type,
                    error = %diagnostic.error_message,
                    "the invocation failed"
                );
                api.fail(&ticket, &diagnostic).await
            }
        };
        if let Err(error) = sent {
            // The Runtime API refused this answer (a timed-out invocation: 410; too large:
            // 413): the invocation is over either way, and the environment serves on.
            tracing::error!(%error, "the Runtime API did not take the answer");
        }
    }
}

/// Reports that the function cannot start (`…/init/error`), then returns `error` for `main` to
/// end with; Lambda records the report and replaces the environment.
pub(crate) async fn init_failed(error: Error) -> Error {
    if let Ok(api) = RuntimeApi::from_env(1)
        && let Err(report) = api
            .init_failed(&diagnostic("Runtime.InitError", &error))
            .await
    {
        tracing::error!(error = %report, "could not report the init error to the Runtime API");
    }
    error
}

/// How many invocations this environment serves at once: `AWS_LAMBDA_MAX_CONCURRENCY` with the
/// `managed-instances` feature, else one (said once when the variable asks for more).
fn pollers() -> usize {
    let wanted = crate::serve::max_concurrency() as usize;
    if cfg!(feature = "managed-instances") || wanted <= 1 {
        return wanted.max(1);
    }
    tracing::warn!(
        wanted,
        "AWS_LAMBDA_MAX_CONCURRENCY asks for several invocations at once, but this function was \
         built without the managed-instances feature: serving one at a time"
    );
    1
}
