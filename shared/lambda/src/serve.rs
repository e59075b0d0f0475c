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
//! Futures: every runner makes the handler's future inside the async block that awaits it,
//! never before it. A future captured by an async block and awaited there is stored twice in
//! the block's own future (as the captured value and as the awaited one), so each such layer
//! doubled the size of what the poll loop holds and moves: an invocation's future was over
//! 700 KB, copied several times per invocation (measured with `-Zprint-type-sizes`; now about
//! 13 KB). For the same reason a rare, large await (the key ring's re-read, an OTLP export) is
//! boxed where it is made.
//!
//! The flavor: the one-line mains run a current-thread runtime (best for one invocation at a
//! time). With the feature, a max concurrency above 1 and more than one available core,
//! [`on_all_cores`] moves the runner onto a multi-thread runtime with one worker per available
//! core, so the mains stay the same for every user and every build. On one core (the smallest
//! Managed Instances environment, and the template's default: 2,048 MB at 2 GiB per vCPU) the
//! in-flight invocations stay on the current-thread runtime: a multi-thread runtime with one
//! worker computes nothing more, and its cross-thread wake-ups cost about a fifth of an
//! invocation's CPU at 8 in flight (132 → 107 µs, measured with `relevo-bench concurrent` alone:
//! shared/relevo/docs/performance.md, "Managed Instances").

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use lambda_http::{Body, Error, LambdaEvent, Response};
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
/// called from a current-thread runtime on a machine with more than one available core; then
/// on a multi-thread runtime of its own (one worker per available core) on a thread of its own,
/// the caller's runtime waiting for it.
pub(crate) async fn on_all_cores<F, Fut>(runner: F) -> Result<(), Error>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), Error>>,
{
    let workers = std::thread::available_parallelism().map_or(2, usize::from);
    if !needs_own_runtime(
        cfg!(feature = "managed-instances"),
        max_concurrency(),
        workers,
        tokio::runtime::Handle::current().runtime_flavor(),
    ) {
        return runner().await;
    }
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

/// Whether [`on_all_cores`] moves the runner to a multi-thread runtime of its own: only a
/// `managed-instances` build, asked for several invocations at once, with several cores to run
/// them on, and called from a current-thread runtime (a multi-thread caller already uses them).
fn needs_own_runtime(
    managed_instances: bool,
    max_concurrency: u32,
    cores: usize,
    caller: tokio::runtime::RuntimeFlavor,
) -> bool {
    managed_instances
        && max_concurrency > 1
        && cores > 1
        && caller == tokio::runtime::RuntimeFlavor::CurrentThread
}

/// Serves buffered HTTP events: each proxy event to `handler`, its response back as the proxy
/// response its front door reads.
pub(crate) async fn serve_http<H, F>(handler: H) -> Result<(), Error>
where
    H: Fn(Request<Bytes>) -> F + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let handler = Arc::new(handler);
    runtime::serve(move |invocation| {
        let (handler, event) = (handler.clone(), http_event(invocation));
        // The handler's future is made inside the block that awaits it (see the module docs).
        async move {
            match event {
                Ok((request, origin)) => proxy_response(origin, handler(request).await),
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
    H: Fn(Request<Bytes>) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let handler = Arc::new(handler);
    runtime::serve(move |invocation| {
        let (handler, event) = (handler.clone(), http_event(invocation));
        async move {
            match event {
                Ok((request, _)) => streamed(handler(request).await),
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
    T: DeserializeOwned + Send + 'static,
    R: Serialize,
    H: Fn(LambdaEvent<T>) -> F + Send + Sync + 'static,
    F: Future<Output = Result<R, Error>> + Send + 'static,
{
    let handler = Arc::new(handler);
    runtime::serve(move |invocation| {
        let handler = handler.clone();
        let event = serde_json::from_slice::<T>(&invocation.body)
            .map(|payload| LambdaEvent::new(payload, invocation.context));
        async move {
            let answer = match event {
                Ok(event) => handler(event).await,
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

#[cfg(test)]
mod tests {
    use super::needs_own_runtime;
    use tokio::runtime::RuntimeFlavor::{CurrentThread, MultiThread};

    #[test]
    fn several_invocations_on_several_cores_get_a_worker_per_core() {
        assert!(needs_own_runtime(true, 8, 2, CurrentThread));
    }

    #[test]
    fn one_core_keeps_the_current_thread_runtime_whatever_the_concurrency() {
        assert!(!needs_own_runtime(true, 8, 1, CurrentThread));
        assert!(!needs_own_runtime(true, 1_600, 1, CurrentThread));
    }

    #[test]
    fn one_invocation_at_a_time_or_a_classic_build_never_moves() {
        assert!(!needs_own_runtime(true, 1, 4, CurrentThread));
        assert!(!needs_own_runtime(false, 8, 4, CurrentThread));
    }

    #[test]
    fn a_multi_thread_caller_is_used_as_it_is() {
        assert!(!needs_own_runtime(true, 8, 4, MultiThread));
    }
}
