//! How the runners poll the Runtime API ([`crate::runtime`]): one invocation at a time (classic
//! Lambda), or, with the `managed-instances` feature, several at once per execution environment
//! (Lambda Managed Instances: `AWS_LAMBDA_MAX_CONCURRENCY` long-polls of `/next`, one Tokio task
//! each), and the three kinds of event they serve: HTTP buffered, HTTP streamed, and any other
//! JSON event.
//!
//! With the feature, polling is sequential when `AWS_LAMBDA_MAX_CONCURRENCY` is unset or `<= 1`,
//! so one build serves both.
//!
//! Invariants (what several invocations in flight share, and why it is safe):
//! - the handler: one `Arc<McpServer>` (or worker, pages, documents) cloned into every task; its
//!   caches are behind locks or `OnceLock`s, and nothing in it is per invocation;
//! - per invocation, never in the process: the deadline, the API Gateway and Lambda request ids
//!   and the X-Ray trace come from each event's own context (`events`); no runner sets
//!   `_X_AMZN_TRACE_ID`, and nothing here reads it;
//! - the state keys' refresh is single-flight ([`crate::keys`]); an OTLP flush takes the spans
//!   pending at that moment under a lock ([`crate::otlp`]), whichever invocation ends first.
//!
//! The flavor: the one-line mains run a current-thread runtime (best for one invocation at a
//! time). With the feature and a max concurrency above 1, [`on_all_cores`] moves the runner
//! onto a multi-thread runtime with one worker per available core, so the mains stay the same
//! for every user and every build.

use std::future::Future;

use bytes::Bytes;
use lambda_http::{Body, Error, LambdaEvent, Request, Response};
use relevo_protocol::Reply;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::events::{http_event, proxy_response, streamed};
use crate::runtime::{self, Answer, diagnostic};

/// The invocations an execution environment serves at once: `AWS_LAMBDA_MAX_CONCURRENCY`
/// (Managed Instances sets it), read as `lambda_runtime` reads it; 1 when unset or not a
/// positive number.
pub fn max_concurrency() -> u32 {
    std::env::var("AWS_LAMBDA_MAX_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&c| c > 0)
        .unwrap_or(1)
}

/// Runs `runner` where it can use every core when several invocations are in flight: on the
/// caller's runtime, unless this is a `managed-instances` build with a max concurrency above 1
/// called from a current-thread runtime; then on a multi-thread runtime of its own (one worker
/// per available core) on a thread of its own, the caller's runtime waiting for it.
pub(crate) async fn on_all_cores<F, Fut>(runner: F) -> Result<(), Error>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), Error>>,
{
    if !cfg!(feature = "managed-instances")
        || max_concurrency() <= 1
        || tokio::runtime::Handle::current().runtime_flavor()
            != tokio::runtime::RuntimeFlavor::CurrentThread
    {
        return runner().await;
    }
    let workers = std::thread::available_parallelism().map_or(2, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("relevo-mi-worker")
        .enable_all()
        .build()?;
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("relevo-mi-runner".into())
        .spawn(move || {
            let _ = done.send(runtime.block_on(runner()));
        })?;
    result
        .await
        .unwrap_or_else(|_| Err("the runner's runtime stopped without an answer".into()))
}

/// Serves buffered HTTP events: each proxy event to `handler`, its response back as the proxy
/// response its front door reads.
pub(crate) async fn serve_http<H, F>(handler: H) -> Result<(), Error>
where
    H: Fn(Request) -> F + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    runtime::serve(move |invocation| {
        let called = http_event(invocation).map(|(request, origin)| (handler(request), origin));
        async move {
            match called {
                Ok((response, origin)) => proxy_response(origin, response.await),
                Err(diagnostic) => Answer::Failed(diagnostic),
            }
        }
    })
    .await
}

/// Serves HTTP events with streamed answers (Lambda response streaming): each proxy event to
/// `handler`, its reply back frame by frame.
pub(crate) async fn serve_http_streaming<H, F>(handler: H) -> Result<(), Error>
where
    H: Fn(Request) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    runtime::serve(move |invocation| {
        let called = http_event(invocation).map(|(request, _)| handler(request));
        async move {
            match called {
                Ok(reply) => streamed(reply.await),
                Err(diagnostic) => Answer::Failed(diagnostic),
            }
        }
    })
    .await
}

/// Serves any other event with a JSON answer (the worker's SQS batches, the reconciler's
/// schedule): the event as `T` to `handler`, its `Ok` back as JSON, its `Err` as the
/// invocation's failure.
pub(crate) async fn serve_events<T, R, H, F>(handler: H) -> Result<(), Error>
where
    T: DeserializeOwned,
    R: Serialize,
    H: Fn(LambdaEvent<T>) -> F + Send + Sync + 'static,
    F: Future<Output = Result<R, Error>> + Send + 'static,
{
    runtime::serve(move |invocation| {
        let called = serde_json::from_slice::<T>(&invocation.body)
            .map(|payload| handler(LambdaEvent::new(payload, invocation.context)));
        async move {
            let answer = match called {
                Ok(answer) => answer.await,
                Err(error) => return Answer::Failed(diagnostic("InvalidEvent", error)),
            };
            match answer.map(|json| serde_json::to_vec(&json)) {
                Ok(Ok(json)) => Answer::Buffered(Bytes::from(json)),
                Ok(Err(error)) => Answer::Failed(diagnostic("InvalidResponse", error)),
                Err(error) => Answer::Failed(diagnostic("HandlerError", error)),
            }
        }
    })
    .await
}
