//! Typed jobs: a durable job is an async function over a typed input and output, as a tool is.
//!
//! A [`JobKind<I>`] constant names a kind of job and the type of its input. [`App::job`]
//! registers the function that runs the jobs of that kind; [`ToolContext::start_job`] (from a
//! tool) and [`JobKind::start`] / [`JobKind::start_deferred`] (from anywhere else holding the
//! engine) start one with an `&I`, so a start with an input of another type does not compile.
//! The untyped form ([`App::job_runner`] with a [`JobRunner`]) stays for runners that need the
//! raw job, such as the tool-task runner.
//!
//! ```
//! use relevo_protocol::App;
//! use relevo_protocol::author::{JobContext, JobError, JobKind};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! pub struct ReportInput {
//!     month: u32,
//! }
//!
//! #[derive(Serialize)]
//! struct Report {
//!     lines: u32,
//! }
//!
//! pub const REPORT: JobKind<ReportInput> = JobKind::new("report");
//!
//! async fn report(input: ReportInput, _: JobContext) -> Result<Report, JobError> {
//!     if input.month > 12 {
//!         return Err(JobError::failed(format!("no month {}", input.month)));
//!     }
//!     Ok(Report { lines: input.month * 10 })
//! }
//!
//! let app = App::new("reports", "1.0.0").job(&REPORT, report);
//! ```
//!
//! Invariants:
//! - Starting is what it was: idempotent per (owner, kind, operation key). The same key with the
//!   same input is the same job, the same key with other input a
//!   [`StartError::KeyConflict`]; the typed layer only serializes the input before
//!   [`Engine::start`], so the stored input, its digest and the keying are unchanged.
//! - The input is decoded from the stored job on every run. A stored input that does not fit `I`
//!   (written by an older version of the app, by an untyped start, or by hand) fails the job for
//!   good, with the kind and the field path in its reason: a retry would read the same bytes.
//! - The output is serialized into the job's result. One that does not serialize, or holds a
//!   non-finite number (which JSON would store as `null`), fails the job for good.
//!
//! Threat model: the stored input came from the app's own start, but the store is outside the
//! process, so the runner treats it as untrusted data: a value that does not fit is a reason,
//! never a panic. That reason quotes serde's message, which may quote a piece of the stored
//! input; it is stored on the job and shown only to the job's owner, who wrote that input.

use std::fmt::{self, Display};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use relevo_state::JobContext;
use relevo_state::work::BoxFuture;
use relevo_state::{Engine, Job, JobFailure, JobRunner, StartError, StoreError};

use crate::registry::App;

#[cfg(doc)]
use super::ToolContext;

/// A kind of job and the type of its input: declare one constant per kind and use it both to
/// register the runner ([`App::job`]) and to start jobs, so the two cannot disagree.
///
/// ```
/// use relevo_protocol::author::JobKind;
/// #[derive(serde::Serialize, serde::Deserialize)]
/// pub struct ExportInput {
///     dataset: String,
/// }
/// pub const EXPORT: JobKind<ExportInput> = JobKind::new("export");
/// assert_eq!(EXPORT.name(), "export");
/// ```
pub struct JobKind<I> {
    name: &'static str,
    // `fn() -> I`: the kind neither owns nor borrows an `I`, so it is `Send`, `Sync` and `Copy`
    // whatever `I` is.
    input: PhantomData<fn() -> I>,
}

impl<I> JobKind<I> {
    /// The kind named `name` (the job's `kind` in the store), taking inputs of type `I`.
    pub const fn new(name: &'static str) -> Self {
        JobKind {
            name,
            input: PhantomData,
        }
    }

    /// The kind as stored on every job (and as `App::task_kind` takes it).
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<I> Clone for JobKind<I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I> Copy for JobKind<I> {}

impl<I> fmt::Debug for JobKind<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "JobKind({:?}: {})",
            self.name,
            std::any::type_name::<I>()
        )
    }
}

impl<I: Serialize> JobKind<I> {
    /// Starts a job of this kind for `subject` in `tenant` ([`Engine::start`]): written before
    /// this returns, then enqueued.
    pub async fn start(
        &self,
        engine: &Engine,
        tenant: &str,
        subject: &str,
        operation_key: Option<&str>,
        input: &I,
    ) -> Result<Job, StartError> {
        engine
            .start(
                tenant,
                subject,
                self.name,
                operation_key,
                self.encode(input)?,
            )
            .await
    }

    /// Starts a job of this kind without enqueuing it ([`Engine::start_deferred`]): the
    /// reconciler enqueues it once it has waited past the queued deadline.
    pub async fn start_deferred(
        &self,
        engine: &Engine,
        tenant: &str,
        subject: &str,
        operation_key: Option<&str>,
        input: &I,
    ) -> Result<Job, StartError> {
        engine
            .start_deferred(
                tenant,
                subject,
                self.name,
                operation_key,
                self.encode(input)?,
            )
            .await
    }

    fn encode(&self, input: &I) -> Result<Value, StartError> {
        serde_json::to_value(input).map_err(|error| StartError::Input {
            kind: self.name.to_string(),
            reason: error.to_string(),
        })
    }
}

impl<I: DeserializeOwned + Send + 'static> JobKind<I> {
    /// The untyped runner of `run`, for a [`relevo_state::Worker`] built by hand; an app
    /// registers it with [`App::job`] instead.
    pub fn runner<O, F, Fut>(&self, run: F) -> Arc<dyn JobRunner>
    where
        O: Serialize + 'static,
        F: Fn(I, JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, JobError>> + Send + 'static,
    {
        Arc::new(TypedRunner { kind: *self, run })
    }

    /// The stored input as an `I`; one that does not fit fails the job for good, naming the
    /// kind and where the input broke.
    fn decode(&self, input: &Value) -> Result<I, JobFailure> {
        serde_path_to_error::deserialize(input).map_err(|error| {
            let path = error.path().to_string();
            let at = if path == "." {
                "its top level".to_string()
            } else {
                format!("`{path}`")
            };
            JobFailure::Failed(format!(
                "the input of this {:?} job does not fit its type at {at}: {}",
                self.name,
                error.inner()
            ))
        })
    }
}

impl App {
    /// Runs the app's jobs of `kind` with `run`, an async function of the job's typed input and
    /// its [`JobContext`] returning a serializable output (stored as the job's result).
    ///
    /// ```
    /// use relevo_protocol::App;
    /// use relevo_protocol::author::{JobContext, JobError, JobKind};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// pub struct Tally {
    ///     upto: u64,
    /// }
    ///
    /// pub const TALLY: JobKind<Tally> = JobKind::new("tally");
    ///
    /// async fn tally(input: Tally, cx: JobContext) -> Result<u64, JobError> {
    ///     let mut sum = cx.checkpoint_as::<u64>().unwrap_or(0);
    ///     for n in 1..=input.upto {
    ///         if cx.cancel_requested() {
    ///             return Err(JobError::Cancelled);
    ///         }
    ///         sum += n;
    ///     }
    ///     cx.save_checkpoint_as(&sum).await?;
    ///     Ok(sum)
    /// }
    ///
    /// // A closure works as well, with the app's own state moved in.
    /// let offset = std::sync::Arc::new(1u64);
    /// let app = App::new("sums", "1.0.0").job(&TALLY, tally).job(&JobKind::<Tally>::new("shifted"), move |t: Tally, _| {
    ///     let offset = offset.clone();
    ///     async move { Ok::<_, JobError>(t.upto + *offset) }
    /// });
    /// ```
    pub fn job<I, O, F, Fut>(self, kind: &JobKind<I>, run: F) -> Self
    where
        I: DeserializeOwned + Send + 'static,
        O: Serialize + 'static,
        F: Fn(I, JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, JobError>> + Send + 'static,
    {
        self.job_runner(kind.name, kind.runner(run))
    }
}

struct TypedRunner<I, F> {
    kind: JobKind<I>,
    run: F,
}

impl<I, O, F, Fut> JobRunner for TypedRunner<I, F>
where
    I: DeserializeOwned + Send + 'static,
    O: Serialize + 'static,
    F: Fn(I, JobContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, JobError>> + Send + 'static,
{
    fn run<'a>(&'a self, ctx: &'a JobContext) -> BoxFuture<'a, Result<Value, JobFailure>> {
        Box::pin(async move {
            let input = self.kind.decode(&ctx.input())?;
            let output = (self.run)(input, ctx.clone())
                .await
                .map_err(JobFailure::from)?;
            encode_output(self.kind.name, &output)
        })
    }
}

/// The output as the job's stored result; one JSON cannot hold faithfully fails the job.
fn encode_output<O: Serialize>(kind: &str, output: &O) -> Result<Value, JobFailure> {
    if super::finite::has_non_finite(output) {
        return Err(JobFailure::Failed(format!(
            "the output of this {kind:?} job holds a non-finite number"
        )));
    }
    serde_json::to_value(output).map_err(|error| {
        JobFailure::Failed(format!(
            "the output of this {kind:?} job does not serialize: {error}"
        ))
    })
}

/// How a typed job's run ended other than with its output.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Permanent: the job ends `failed` with this reason and never runs again.
    #[error("{0}")]
    Failed(String),
    /// Transient: the lease is released and the job runs again later, within the attempt budget.
    #[error("{0}")]
    Retry(String),
    /// A store call failed: transient, as [`JobError::Retry`].
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
    /// The runner saw the cancel request ([`JobContext::cancel_requested`]) and stopped.
    #[error("the job was cancelled")]
    Cancelled,
    /// The lease was lost (a checkpoint was refused): another worker owns the job now.
    #[error("another worker owns the job now")]
    Fenced,
}

impl JobError {
    /// A permanent failure, with this reason.
    pub fn failed(reason: impl Display) -> Self {
        JobError::Failed(reason.to_string())
    }

    /// A transient failure: run again later.
    pub fn retry(reason: impl Display) -> Self {
        JobError::Retry(reason.to_string())
    }
}

/// `?` on a checkpoint or a lease renewal.
impl From<JobFailure> for JobError {
    fn from(failure: JobFailure) -> Self {
        match failure {
            JobFailure::Failed(reason) => JobError::Failed(reason),
            JobFailure::Retry(reason) => JobError::Retry(reason),
            JobFailure::Cancelled => JobError::Cancelled,
            JobFailure::Fenced => JobError::Fenced,
            JobFailure::Protocol(error) => JobError::Failed(
                error["message"]
                    .as_str()
                    .unwrap_or("protocol error")
                    .to_string(),
            ),
            JobFailure::NeedsInput { .. } => {
                JobError::Failed("a typed job cannot ask for input".into())
            }
        }
    }
}

impl From<JobError> for JobFailure {
    fn from(error: JobError) -> Self {
        match error {
            JobError::Failed(reason) => JobFailure::Failed(reason),
            JobError::Retry(reason) => JobFailure::Retry(reason),
            JobError::Store(error) => JobFailure::Retry(error.to_string()),
            JobError::Cancelled => JobFailure::Cancelled,
            JobError::Fenced => JobFailure::Fenced,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use std::sync::atomic::{AtomicUsize, Ordering};

    use relevo_embedded::{SqliteQueue, SqliteStore};
    use relevo_state::{EngineConfig, JobStatus, Processed, RandomIds, SystemClock, Worker};
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Line {
        sku: String,
        quantity: u32,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Order {
        lines: Vec<Line>,
    }

    #[derive(Serialize)]
    struct Total {
        units: u32,
        skus: Vec<String>,
    }

    const ORDER: JobKind<Order> = JobKind::new("order");

    /// One app with `ORDER` run by `run`, its engine and its worker, on in-memory SQLite.
    fn harness<O, F, Fut>(run: F) -> (Arc<Engine>, Worker)
    where
        O: Serialize + 'static,
        F: Fn(Order, JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, JobError>> + Send + 'static,
    {
        let store = Arc::new(SqliteStore::in_memory().unwrap());
        let queue = Arc::new(SqliteQueue::new(SqliteStore::in_memory().unwrap(), 5));
        let config = EngineConfig {
            max_attempts: 3,
            ..EngineConfig::default()
        };
        let engine = Arc::new(Engine::new(
            store,
            queue,
            Arc::new(SystemClock),
            Arc::new(RandomIds),
            config,
        ));
        let app = Arc::new(App::new("jobs", "1").job(&ORDER, run));
        let worker = app.worker(engine.clone());
        (engine, worker)
    }

    async fn total(order: Order, _: JobContext) -> Result<Total, JobError> {
        Ok(Total {
            units: order.lines.iter().map(|l| l.quantity).sum(),
            skus: order.lines.into_iter().map(|l| l.sku).collect(),
        })
    }

    fn two_lines() -> Order {
        let line = |sku: &str, quantity| Line {
            sku: sku.into(),
            quantity,
        };
        Order {
            lines: vec![line("tea", 2), line("cup", 3)],
        }
    }

    async fn run_once(engine: &Engine, worker: &Worker, job: &Job) -> (Processed, Job) {
        let processed = worker.process(&job.job).await.unwrap();
        (
            processed,
            engine.store.get_job(&job.job).await.unwrap().unwrap(),
        )
    }

    #[tokio::test]
    async fn a_typed_job_runs_on_its_decoded_input_and_stores_its_output_serialized() {
        let (engine, worker) = harness(total);
        let job = ORDER
            .start(&engine, "acme", "alice", None, &two_lines())
            .await
            .unwrap();
        assert_eq!(job.kind, "order");
        assert_eq!(
            job.input,
            json!({ "lines": [{ "sku": "tea", "quantity": 2 }, { "sku": "cup", "quantity": 3 }] })
        );
        let (processed, done) = run_once(&engine, &worker, &job).await;
        assert_eq!(processed, Processed::Finished(JobStatus::Succeeded));
        assert_eq!(
            done.result,
            Some(json!({ "units": 5, "skus": ["tea", "cup"] }))
        );
    }

    #[tokio::test]
    async fn a_stored_input_that_does_not_fit_fails_the_job_for_good_naming_the_kind_and_the_path()
    {
        let ran = Arc::new(AtomicUsize::new(0));
        let counted = ran.clone();
        let (engine, worker) = harness(move |order, cx| {
            counted.fetch_add(1, Ordering::SeqCst);
            total(order, cx)
        });
        let stored =
            json!({ "lines": [{ "sku": "tea", "quantity": 2 }, { "sku": 7, "quantity": 3 }] });
        let job = engine
            .start("acme", "alice", ORDER.name(), None, stored)
            .await
            .unwrap();
        let (processed, failed) = run_once(&engine, &worker, &job).await;
        assert_eq!(processed, Processed::Finished(JobStatus::Failed));
        let reason = failed.error.unwrap();
        assert!(reason.contains("\"order\""), "names the kind: {reason}");
        assert!(
            reason.contains("`lines[1].sku`"),
            "names the path: {reason}"
        );
        assert!(
            reason.contains("invalid type: integer `7`, expected a string"),
            "says what broke: {reason}"
        );
        assert_eq!(
            ran.load(Ordering::SeqCst),
            0,
            "the function never saw the input"
        );
        assert_eq!(failed.attempts, 1);
        assert_eq!(
            worker.process(&job.job).await.unwrap(),
            Processed::NothingToDo,
            "never retried"
        );
        assert_eq!(
            engine.reconcile(10).await.unwrap().requeued,
            0,
            "nor requeued"
        );
    }

    #[tokio::test]
    async fn a_missing_field_is_named_at_the_top_level() {
        let (engine, worker) = harness(total);
        let job = engine
            .start("acme", "alice", ORDER.name(), None, json!({ "line": [] }))
            .await
            .unwrap();
        let (_, failed) = run_once(&engine, &worker, &job).await;
        assert_eq!(failed.status, JobStatus::Failed);
        let reason = failed.error.unwrap();
        assert!(
            reason.contains("at its top level: missing field `lines`"),
            "{reason}"
        );
    }

    #[tokio::test]
    async fn a_failed_error_ends_the_job_and_a_retry_error_runs_it_again() {
        let (engine, worker) = harness(|order: Order, _| async move {
            match order.lines.len() {
                0 => Err::<Total, _>(JobError::failed("an empty order")),
                _ => Err(JobError::retry("the warehouse is busy")),
            }
        });
        let empty = ORDER
            .start(&engine, "acme", "alice", None, &Order { lines: vec![] })
            .await
            .unwrap();
        let (_, failed) = run_once(&engine, &worker, &empty).await;
        assert_eq!(
            (failed.status, failed.error.as_deref()),
            (JobStatus::Failed, Some("an empty order"))
        );

        let busy = ORDER
            .start(&engine, "acme", "alice", None, &two_lines())
            .await
            .unwrap();
        assert!(
            worker.process(&busy.job).await.is_err(),
            "a retry leaves the message for redelivery"
        );
        let again = engine.store.get_job(&busy.job).await.unwrap().unwrap();
        assert_eq!(
            (again.status, again.attempts, again.lease),
            (JobStatus::Queued, 1, None)
        );
    }

    #[tokio::test]
    async fn an_output_with_a_non_finite_number_fails_the_job_rather_than_storing_null() {
        #[derive(Serialize)]
        struct Ratio {
            ratio: f64,
        }
        let (engine, worker) =
            harness(|_: Order, _| async { Ok::<_, JobError>(Ratio { ratio: f64::NAN }) });
        let job = ORDER
            .start(&engine, "acme", "alice", None, &two_lines())
            .await
            .unwrap();
        let (_, failed) = run_once(&engine, &worker, &job).await;
        assert_eq!(failed.status, JobStatus::Failed);
        assert_eq!(failed.result, None);
        assert!(failed.error.unwrap().contains("non-finite"));
    }

    #[tokio::test]
    async fn a_typed_checkpoint_is_read_back_by_the_next_run() {
        let (engine, worker) = harness(|order: Order, cx: JobContext| async move {
            let done: Vec<String> = cx.checkpoint_as().unwrap_or_default();
            if done.is_empty() {
                cx.save_checkpoint_as(&vec![order.lines[0].sku.clone()])
                    .await?;
                return Err(JobError::retry("one line at a time"));
            }
            Ok(done)
        });
        let job = ORDER
            .start(&engine, "acme", "alice", None, &two_lines())
            .await
            .unwrap();
        assert!(worker.process(&job.job).await.is_err());
        let (_, done) = run_once(&engine, &worker, &job).await;
        assert_eq!(done.result, Some(json!(["tea"])));
    }

    #[tokio::test]
    async fn typed_starts_stay_idempotent_per_owner_kind_and_operation_key() {
        let (engine, _) = harness(total);
        let first = ORDER
            .start(&engine, "acme", "alice", Some("k"), &two_lines())
            .await
            .unwrap();
        let again = ORDER
            .start(&engine, "acme", "alice", Some("k"), &two_lines())
            .await
            .unwrap();
        assert_eq!(again.job.id, first.job.id);
        let other = Order { lines: vec![] };
        let conflict = ORDER
            .start(&engine, "acme", "alice", Some("k"), &other)
            .await;
        assert!(
            matches!(conflict, Err(StartError::KeyConflict { .. })),
            "{conflict:?}"
        );
        let theirs = ORDER
            .start(&engine, "acme", "bob", Some("k"), &other)
            .await
            .unwrap();
        assert_ne!(theirs.job.id, first.job.id, "keys are per owner");
        let later: JobKind<Order> = JobKind::new("later");
        let deferred = later
            .start_deferred(&engine, "acme", "alice", Some("k"), &other)
            .await
            .unwrap();
        assert_ne!(deferred.job.id, first.job.id, "and per kind");
    }

    #[tokio::test]
    async fn an_input_that_does_not_serialize_is_refused_before_anything_is_written() {
        use std::collections::BTreeMap;
        let (engine, _) = harness(total);
        let bad: JobKind<BTreeMap<(u8, u8), u8>> = JobKind::new("pairs");
        let refused = bad
            .start(
                &engine,
                "acme",
                "alice",
                None,
                &BTreeMap::from([((1, 2), 3)]),
            )
            .await;
        assert!(
            matches!(&refused, Err(StartError::Input { kind, .. }) if kind == "pairs"),
            "{refused:?}"
        );
        assert!(engine.store.list_active(10).await.unwrap().is_empty());
    }
}
