//! Typed jobs: a durable job is an async function over a typed input and output, as a tool is.
//!
//! A [`JobKind<I, O>`] constant names a kind of job, the type of its input and the type of its
//! output. [`App::job`] registers the function that runs the jobs of that kind (it must return
//! an `O`); [`ToolContext::start_job`] (from a tool) and [`JobKind::start`] /
//! [`JobKind::start_deferred`] (from anywhere else holding the engine) start one with an `&I`,
//! and [`ToolContext::find_job`] / [`JobKind::read`] read one back as a [`JobView<O>`]: its
//! progress while it works, its typed output once it succeeded. An input or an output of another
//! type does not compile. The untyped form ([`App::job_runner`] with a [`JobRunner`]) stays for
//! runners that need the raw job, such as the tool-task runner.
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
//! #[derive(Serialize, Deserialize)]
//! pub struct Report {
//!     lines: u32,
//! }
//!
//! pub const REPORT: JobKind<ReportInput, Report> = JobKind::new("report");
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
//! - A stored result is decoded as an `O` when read ([`JobView`]); one that does not fit (an
//!   older version of the app wrote another shape) is an error naming the kind and the path,
//!   never a panic and never a silent `None`.
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
use relevo_state::{Engine, Job, JobFailure, JobRef, JobRunner, StartError, StoreError};

use super::job_view::{JobView, ReadError};
use crate::registry::App;

#[cfg(doc)]
use super::ToolContext;

/// A kind of job, the type of its input and the type of its output: declare one constant per
/// kind and use it to register the runner ([`App::job`]), to start jobs and to read them back, so
/// none of the three can disagree.
///
/// ```
/// use relevo_protocol::author::JobKind;
/// #[derive(serde::Serialize, serde::Deserialize)]
/// pub struct ExportInput {
///     dataset: String,
/// }
/// #[derive(serde::Serialize, serde::Deserialize)]
/// pub struct Exported {
///     rows: u64,
/// }
/// pub const EXPORT: JobKind<ExportInput, Exported> = JobKind::new("export");
/// assert_eq!(EXPORT.name(), "export");
/// ```
pub struct JobKind<I, O> {
    name: &'static str,
    // `fn() -> (I, O)`: the kind neither owns nor borrows an `I` or an `O`, so it is `Send`,
    // `Sync` and `Copy` whatever they are.
    types: PhantomData<fn() -> (I, O)>,
}

impl<I, O> JobKind<I, O> {
    /// The kind named `name` (the job's `kind` in the store), taking inputs of type `I` and
    /// ending with an output of type `O`.
    pub const fn new(name: &'static str) -> Self {
        JobKind {
            name,
            types: PhantomData,
        }
    }

    /// The kind as stored on every job (and as `App::task_kind` takes it).
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<I, O> Clone for JobKind<I, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I, O> Copy for JobKind<I, O> {}

impl<I, O> fmt::Debug for JobKind<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "JobKind({:?}: {} -> {})",
            self.name,
            std::any::type_name::<I>(),
            std::any::type_name::<O>()
        )
    }
}

impl<I, O: DeserializeOwned> JobKind<I, O> {
    /// The job `job` if it is of this kind, read consistently and decoded: `None` when absent
    /// or of another kind (the key includes the owner, so another owner's id is absent too).
    pub async fn read(
        &self,
        engine: &Engine,
        job: &JobRef,
    ) -> Result<Option<JobView<O>>, ReadError> {
        match engine.store.get_job(job).await? {
            Some(job) if job.kind == self.name => JobView::decode(job).map(Some),
            Some(_) | None => Ok(None),
        }
    }
}

impl<I: Serialize, O> JobKind<I, O> {
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

    /// Starts a job of this kind marked as a task ([`Engine::start_task`]): its owner follows it
    /// through `tasks/*`.
    pub async fn start_task(
        &self,
        engine: &Engine,
        tenant: &str,
        subject: &str,
        operation_key: Option<&str>,
        input: &I,
    ) -> Result<Job, StartError> {
        engine
            .start_task(
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

impl<I: DeserializeOwned + Send + 'static, O: Serialize + 'static> JobKind<I, O> {
    /// The untyped runner of `run`, for a [`relevo_state::Worker`] built by hand; an app
    /// registers it with [`App::job`] instead.
    pub fn runner<F, Fut>(&self, run: F) -> Arc<dyn JobRunner>
    where
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
    /// its [`JobContext`] returning the kind's output (stored as the job's result).
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
    /// pub const TALLY: JobKind<Tally, u64> = JobKind::new("tally");
    ///
    /// async fn tally(input: Tally, cx: JobContext) -> Result<u64, JobError> {
    ///     let mut sum = cx.checkpoint_as::<u64>().unwrap_or(0);
    ///     for n in 1..=input.upto {
    ///         if cx.cancel_requested() {
    ///             return Err(JobError::Cancelled);
    ///         }
    ///         sum += n;
    ///         // Where to resume and what a task's statusMessage says, in one write.
    ///         cx.save_progress(&sum, format!("added {n} of {}", input.upto)).await?;
    ///     }
    ///     Ok(sum)
    /// }
    ///
    /// // A closure works as well, with the app's own state moved in.
    /// let offset = std::sync::Arc::new(1u64);
    /// const SHIFTED: JobKind<Tally, u64> = JobKind::new("shifted");
    /// let app = App::new("sums", "1.0.0").job(&TALLY, tally).job(&SHIFTED, move |t: Tally, _| {
    ///     let offset = offset.clone();
    ///     async move { Ok::<_, JobError>(t.upto + *offset) }
    /// });
    /// ```
    pub fn job<I, O, F, Fut>(self, kind: &JobKind<I, O>, run: F) -> Self
    where
        I: DeserializeOwned + Send + 'static,
        O: Serialize + 'static,
        F: Fn(I, JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, JobError>> + Send + 'static,
    {
        self.job_runner(kind.name, kind.runner(run))
    }
}

struct TypedRunner<I, O, F> {
    kind: JobKind<I, O>,
    run: F,
}

impl<I, O, F, Fut> JobRunner for TypedRunner<I, O, F>
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
    use crate::author::JobState;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Line {
        sku: String,
        quantity: u32,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Order {
        lines: Vec<Line>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Total {
        units: u32,
        skus: Vec<String>,
    }

    const ORDER: JobKind<Order, Total> = JobKind::new("order");

    /// One app with `kind` run by `run`, its engine and its worker, on in-memory SQLite.
    fn harness<O, F, Fut>(kind: JobKind<Order, O>, run: F) -> (Arc<Engine>, Worker)
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
        let app = Arc::new(App::new("jobs", "1").job(&kind, run));
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
        let (engine, worker) = harness(ORDER, total);
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
        let (engine, worker) = harness(ORDER, move |order, cx| {
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
        let (engine, worker) = harness(ORDER, total);
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
        let (engine, worker) = harness(ORDER, |order: Order, _| async move {
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
        let ratio: JobKind<Order, Ratio> = JobKind::new("order");
        let (engine, worker) = harness(ratio, |_: Order, _| async {
            Ok::<_, JobError>(Ratio { ratio: f64::NAN })
        });
        let job = ratio
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
        let lines: JobKind<Order, Vec<String>> = JobKind::new("order");
        let (engine, worker) = harness(lines, |order: Order, cx: JobContext| async move {
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
    async fn a_job_reads_back_typed_with_its_progress_while_it_works_and_its_output_when_done() {
        let (engine, worker) = harness(ORDER, |order: Order, cx: JobContext| async move {
            let done: usize = cx.checkpoint_as().unwrap_or_default();
            if done < order.lines.len() {
                cx.save_progress(
                    &(done + 1),
                    format!("line {} of {}", done + 1, order.lines.len()),
                )
                .await?;
                return Err(JobError::retry("one line a run"));
            }
            total(order, cx).await
        });
        let job = ORDER
            .start(&engine, "acme", "alice", None, &two_lines())
            .await
            .unwrap();
        let queued = ORDER.read(&engine, &job.job).await.unwrap().unwrap();
        assert_eq!(queued.state, JobState::Working { progress: None });

        assert!(
            worker.process(&job.job).await.is_err(),
            "the first run retries"
        );
        let working = ORDER.read(&engine, &job.job).await.unwrap().unwrap();
        assert_eq!(working.state.progress(), Some("line 1 of 2"));
        assert_eq!(
            working.job.checkpoint,
            Some(json!(1)),
            "saved in the same write"
        );

        assert!(worker.process(&job.job).await.is_err());
        let (processed, _) = run_once(&engine, &worker, &job).await;
        assert_eq!(processed, Processed::Finished(JobStatus::Succeeded));
        let done = ORDER.read(&engine, &job.job).await.unwrap().unwrap();
        assert_eq!(
            done.state,
            JobState::Succeeded(Total {
                units: 5,
                skus: vec!["tea".into(), "cup".into()]
            })
        );

        let other_kind: JobKind<Order, Total> = JobKind::new("invoice");
        assert!(
            other_kind.read(&engine, &job.job).await.unwrap().is_none(),
            "a job of another kind reads as absent"
        );
    }

    #[tokio::test]
    async fn progress_is_bounded_and_cut_at_a_character_boundary() {
        let (engine, worker) = harness(ORDER, |_: Order, cx: JobContext| async move {
            cx.progress("é".repeat(1_000)).await?;
            Err::<Total, _>(JobError::retry("again"))
        });
        let job = ORDER
            .start(&engine, "acme", "alice", None, &two_lines())
            .await
            .unwrap();
        assert!(worker.process(&job.job).await.is_err());
        let read = ORDER.read(&engine, &job.job).await.unwrap().unwrap();
        let progress = read.state.progress().unwrap();
        assert!(
            progress.len() <= relevo_state::jobs::MAX_PROGRESS_BYTES,
            "{}",
            progress.len()
        );
        assert!(progress.ends_with('…'), "says it was cut");
        assert!(progress.trim_end_matches('…').chars().all(|c| c == 'é'));
    }

    #[tokio::test]
    async fn typed_starts_stay_idempotent_per_owner_kind_and_operation_key() {
        let (engine, _) = harness(ORDER, total);
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
        let later: JobKind<Order, Total> = JobKind::new("later");
        let deferred = later
            .start_deferred(&engine, "acme", "alice", Some("k"), &other)
            .await
            .unwrap();
        assert_ne!(deferred.job.id, first.job.id, "and per kind");
    }

    #[tokio::test]
    async fn an_input_that_does_not_serialize_is_refused_before_anything_is_written() {
        use std::collections::BTreeMap;
        let (engine, _) = harness(ORDER, total);
        let bad: JobKind<BTreeMap<(u8, u8), u8>, ()> = JobKind::new("pairs");
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
