//! How the runners poll the Runtime API: one invocation at a time (classic Lambda), or, with the
//! `managed-instances` feature, several at once per execution environment (Lambda Managed
//! Instances: `AWS_LAMBDA_MAX_CONCURRENCY` long-polls of `/next`, one Tokio task each, through
//! `lambda_runtime`'s `concurrency-tokio` entry points).
//!
//! Without the feature these are the sequential entry points and nothing new is linked. With it,
//! the concurrent entry points fall back to sequential polling when `AWS_LAMBDA_MAX_CONCURRENCY`
//! is unset or `<= 1` (lambda_runtime 1.5 `Runtime::run_concurrent`), so one build serves both.
//!
//! Invariants (what several invocations in flight share, and why it is safe):
//! - the handler: one `Arc<McpServer>` (or worker, pages, documents) cloned into every task; its
//!   caches are behind locks or `OnceLock`s, and nothing in it is per invocation;
//! - per invocation, never in the process: the deadline, the API Gateway and Lambda request ids
//!   and the X-Ray trace come from each event's own context (`events`); the concurrent runtime
//!   does not set `_X_AMZN_TRACE_ID`, and nothing here reads it;
//! - the state keys' refresh is single-flight ([`crate::keys`]); an OTLP flush takes the spans
//!   pending at that moment under a lock ([`crate::otlp`]), whichever invocation ends first.
//!
//! The flavor: the one-line mains run a current-thread runtime (best for one invocation at a
//! time). With the feature and a max concurrency above 1, [`on_all_cores`] moves the runner
//! onto a multi-thread runtime with one worker per available core, so the mains stay the same
//! for every user and every build.

use std::future::Future;

use lambda_http::Error;

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

/// Serves buffered HTTP events: `lambda_http::run`, or `run_concurrent` with the feature.
macro_rules! serve_http {
    ($handler:expr) => {{
        #[cfg(feature = "managed-instances")]
        let served = lambda_http::run_concurrent($handler).await;
        #[cfg(not(feature = "managed-instances"))]
        let served = lambda_http::run($handler).await;
        served
    }};
}

/// Serves HTTP events with streamed responses: `run_with_streaming_response`, or its
/// `_concurrent` variant with the feature.
macro_rules! serve_http_streaming {
    ($handler:expr) => {{
        #[cfg(feature = "managed-instances")]
        let served = lambda_http::run_with_streaming_response_concurrent($handler).await;
        #[cfg(not(feature = "managed-instances"))]
        let served = lambda_http::run_with_streaming_response($handler).await;
        served
    }};
}

/// Serves any other event with a JSON answer (the worker's SQS batches, the reconciler's
/// schedule): `lambda_runtime::run`, or `run_concurrent` with the feature.
macro_rules! serve_events {
    ($handler:expr) => {{
        #[cfg(feature = "managed-instances")]
        let served = lambda_http::lambda_runtime::run_concurrent($handler).await;
        #[cfg(not(feature = "managed-instances"))]
        let served = lambda_http::lambda_runtime::run($handler).await;
        served
    }};
}

pub(crate) use {serve_events, serve_http, serve_http_streaming};
