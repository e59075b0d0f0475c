//! Running jobs: start (idempotent), process one delivery (claim, run, checkpoint, complete, all
//! fenced), and reconcile (re-enqueue, expire leases, enforce the attempt budget).
//!
//! Failure model: any process may die between any two writes, and any message may be delivered
//! twice, late, or concurrently. Safety comes from the store, not the queue: a claim is a
//! conditional write, every later write is conditional on the revision the worker holds (a lost
//! lease means a refused write, never an overwrite), and a terminal job is never run again. A
//! job whose worker died stays `running` until its lease expires; the reconciler then requeues it
//! or, past the attempt budget, fails it with a reason.
//!
//! A lease lives as long as the work: while a runner runs, its lease is renewed every third of
//! the lease (a fenced write), so a run longer than the lease is never claimed twice; a renewal
//! that finds the lease lost stops the runner at once (another worker owns the job).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::canonical::canonical_digest;
use crate::clock::Clock;
use crate::ids::Ids;
use crate::jobs::{Created, Job, JobRef, JobStatus, JobStore, Lease, conflicting_job};
use crate::queue::{Queue, WorkMessage};
use crate::records::{Owner, RecordKey, RecordStore, StoreError};
use crate::slots::{self, Acquired, SlotError};
use crate::trace::TraceContext;

mod worker;
pub use worker::Worker;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How a run ended, as the runner reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum JobFailure {
    /// A permanent failure: the job ends `failed` with this reason.
    Failed(String),
    /// A transient failure: the lease is released and the job runs again later.
    Retry(String),
    /// The runner saw the cancel request and stopped.
    Cancelled,
    /// The runner lost its lease (a write was refused); another worker owns the job now.
    Fenced,
    /// The runner needs input from the client: the job parks as `InputRequired` until
    /// [`Engine::provide_input`] has answers for every key of `requests`.
    NeedsInput {
        requests: Value,
        state: Option<Value>,
    },
    /// A protocol-level failure (a JSON-RPC error object): the job ends `failed` with it.
    Protocol(Value),
}

/// Runs one kind of job. Must be safe to resume from any checkpoint it saved.
pub trait JobRunner: Send + Sync {
    fn run<'a>(&'a self, ctx: &'a JobContext) -> BoxFuture<'a, Result<Value, JobFailure>>;
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// How long a claim lasts; every checkpoint extends it by as much.
    pub lease_secs: u64,
    /// Claims allowed before a job is failed for good.
    pub max_attempts: u32,
    /// A job still queued this long after its last write is re-enqueued by the reconciler.
    pub queued_deadline_secs: u64,
    /// How long finished jobs are kept (store TTL).
    pub retention_secs: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            lease_secs: 60,
            max_attempts: 5,
            queued_deadline_secs: 60,
            retention_secs: 7 * 24 * 3600,
        }
    }
}

/// How many jobs may be in flight (not yet finished) at once: per principal and per tenant.
/// One tenant's burst is refused at the door instead of filling the queue ahead of everyone
/// else's jobs, so another tenant's job waits behind at most `per_tenant` of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlightLimits {
    pub per_principal: usize,
    pub per_tenant: usize,
}

impl Default for InFlightLimits {
    fn default() -> Self {
        InFlightLimits {
            per_principal: 16,
            per_tenant: 64,
        }
    }
}

impl InFlightLimits {
    /// The limits from `RELEVO_MAX_JOBS_PER_PRINCIPAL` and `RELEVO_MAX_JOBS_PER_TENANT`, the
    /// defaults where unset or not a positive number.
    pub fn from_env() -> Self {
        let number = |name: &str, default: usize| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0)
                .unwrap_or(default)
        };
        let defaults = InFlightLimits::default();
        InFlightLimits {
            per_principal: number("RELEVO_MAX_JOBS_PER_PRINCIPAL", defaults.per_principal),
            per_tenant: number("RELEVO_MAX_JOBS_PER_TENANT", defaults.per_tenant),
        }
    }
}

/// Admission: the counts of jobs in flight live in the record store ([`crate::slots`]), so they
/// hold across every instance that starts jobs.
struct Admission {
    records: Arc<dyn RecordStore>,
    limits: InFlightLimits,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    #[error(
        "operation key {operation_key:?} was already used for job {existing} with different arguments"
    )]
    KeyConflict {
        operation_key: String,
        existing: String,
    },
    /// The principal or its tenant has `max` jobs in flight already: retry once one finished.
    #[error("at most {max} {what}")]
    LimitReached { what: &'static str, max: usize },
    /// The typed input did not serialize to JSON (a map with non-string keys, a failing
    /// `Serialize`): nothing was written.
    #[error("the input of a {kind:?} job does not serialize: {reason}")]
    Input { kind: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What processing one delivery did. Every variant means "delete the message"; errors mean
/// "leave it for redelivery".
#[derive(Debug, Clone, PartialEq)]
pub enum Processed {
    Finished(JobStatus),
    /// Already terminal, or gone: nothing to do.
    NothingToDo,
    /// Another worker took the job over while this one ran.
    Fenced,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkError {
    #[error("the job is leased by another worker")]
    Busy,
    #[error("the run will be retried: {0}")]
    Retry(String),
    #[error("the message is not a work message")]
    BadMessage,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a runner sees of its job while it runs. Checkpoints are fenced writes. A clone is the
/// same context (one held job, one lease), so a typed runner can take it by value.
#[derive(Clone)]
pub struct JobContext {
    store: Arc<dyn JobStore>,
    clock: Arc<dyn Clock>,
    lease_owner: String,
    lease_secs: u64,
    job: Arc<Mutex<Job>>,
}

impl JobContext {
    pub fn job(&self) -> Job {
        self.job
            .lock()
            .map(|j| j.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    pub fn input(&self) -> Value {
        self.job().input
    }

    /// The last checkpoint saved (by this run or an earlier one).
    pub fn checkpoint(&self) -> Option<Value> {
        self.job().checkpoint
    }

    /// The last checkpoint as a `C`; `None` if none was saved or it does not fit `C` (the run
    /// then starts over, which a runner resumable from any checkpoint must allow).
    pub fn checkpoint_as<C: serde::de::DeserializeOwned>(&self) -> Option<C> {
        serde_json::from_value(self.checkpoint()?).ok()
    }

    /// [`JobContext::save_checkpoint`] of a typed checkpoint; one that does not serialize fails
    /// the job for good.
    pub async fn save_checkpoint_as<C: serde::Serialize>(
        &self,
        checkpoint: &C,
    ) -> Result<(), JobFailure> {
        let value = serde_json::to_value(checkpoint).map_err(|error| {
            JobFailure::Failed(format!("the checkpoint does not serialize: {error}"))
        })?;
        self.save_checkpoint(value).await
    }

    pub fn cancel_requested(&self) -> bool {
        self.job().cancel_requested
    }

    /// Reads the job again (to see a cancel request made since the last write); keeps the fresh
    /// copy while this worker still holds the lease. Returns whether cancellation was requested.
    pub async fn refresh(&self) -> bool {
        if let Ok(Some(current)) = self.store.get_job(&self.job().job).await
            && current.leased_by(&self.lease_owner, self.clock.now_unix())
        {
            let cancel = current.cancel_requested;
            *self.job.lock().unwrap_or_else(|e| e.into_inner()) = current;
            return cancel;
        }
        self.cancel_requested()
    }

    /// The last progress the job reported (by this run or an earlier one).
    pub fn last_progress(&self) -> Option<String> {
        self.job().progress
    }

    /// Says how far the job got: a task's `statusMessage` while it works, and what
    /// [`Job::progress`] reads. One fenced write (which also extends the lease); a message over
    /// [`crate::jobs::MAX_PROGRESS_BYTES`] is cut. To save where to resume in the same write,
    /// use [`JobContext::save_progress`].
    pub async fn progress(&self, message: impl std::fmt::Display) -> Result<(), JobFailure> {
        let message = crate::jobs::bounded_progress(&message.to_string());
        self.write_leased(move |job| job.progress = Some(message.clone()))
            .await
    }

    /// Saves a typed checkpoint and the progress it stands for in one fenced write: what a step
    /// of a long job calls once it is done. A checkpoint that does not serialize fails the job
    /// for good.
    pub async fn save_progress<C: serde::Serialize>(
        &self,
        checkpoint: &C,
        message: impl std::fmt::Display,
    ) -> Result<(), JobFailure> {
        let value = serde_json::to_value(checkpoint).map_err(|error| {
            JobFailure::Failed(format!("the checkpoint does not serialize: {error}"))
        })?;
        let message = crate::jobs::bounded_progress(&message.to_string());
        self.write_leased(move |job| {
            job.checkpoint = Some(value.clone());
            job.progress = Some(message.clone());
        })
        .await
    }

    /// Saves a checkpoint and extends the lease, only while this worker still holds the lease.
    pub async fn save_checkpoint(&self, checkpoint: Value) -> Result<(), JobFailure> {
        self.write_leased(move |job| job.checkpoint = Some(checkpoint.clone()))
            .await
    }

    /// Extends the lease by a full term, only while this worker still holds it.
    pub async fn renew_lease(&self) -> Result<(), JobFailure> {
        self.write_leased(|_| {}).await
    }

    /// [`JobContext::write`] of `change`, extending the lease by a full term in the same write.
    async fn write_leased(&self, change: impl Fn(&mut Job)) -> Result<(), JobFailure> {
        let (lease_secs, owner) = (self.lease_secs, self.lease_owner.clone());
        self.write(move |job, now| {
            change(job);
            job.lease = Some(Lease {
                owner: owner.clone(),
                expires_at: now + lease_secs,
            });
        })
        .await
    }

    /// Renews the lease every third of its term; returns when the lease is lost (another worker
    /// holds the job, or the lease ran out while renewals failed).
    async fn keep_lease(&self) {
        let every = std::time::Duration::from_millis((self.lease_secs * 1000 / 3).max(200));
        loop {
            tokio::time::sleep(every).await;
            if self.renew_lease().await.is_ok() {
                continue;
            }
            let now = self.clock.now_unix();
            let still_ours = match self.store.get_job(&self.job().job).await {
                Ok(Some(current)) => current.leased_by(&self.lease_owner, now),
                Ok(None) => false,
                // The store is unreachable: ours while the lease we hold has not run out.
                Err(_) => self.job().leased_by(&self.lease_owner, now),
            };
            if !still_ours {
                tracing::warn!(job = %self.job().job.id, "lost the lease while running; stopping");
                return;
            }
        }
    }

    /// A conditional write of `change` applied to the held job. On a conflict the job is read
    /// again: if this worker still holds the lease (someone only asked to cancel), the write is
    /// retried on the new revision; otherwise the worker is fenced out.
    async fn write(&self, change: impl Fn(&mut Job, u64)) -> Result<(), JobFailure> {
        for _ in 0..3 {
            let now = self.clock.now_unix();
            let held = self.job();
            if !held.leased_by(&self.lease_owner, now) {
                return Err(JobFailure::Fenced);
            }
            let mut next = held.next(now);
            change(&mut next, now);
            match self.store.put_job(&next, held.revision).await {
                Ok(written) => {
                    *self.job.lock().unwrap_or_else(|e| e.into_inner()) = written;
                    return Ok(());
                }
                Err(error) => match conflicting_job(&error) {
                    Some(current) if current.leased_by(&self.lease_owner, now) => {
                        *self.job.lock().unwrap_or_else(|e| e.into_inner()) = current;
                    }
                    Some(_) | None => return Err(JobFailure::Fenced),
                },
            }
        }
        Err(JobFailure::Fenced)
    }
}

/// How [`Engine`] starts a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StartMode {
    /// Written, then enqueued.
    Enqueue,
    /// Written marked as a task, then enqueued.
    Task,
    /// Written only: the reconciler enqueues it if nothing else finishes it first.
    Deferred,
}

/// Starts, runs and reconciles jobs over the store and queue ports.
pub struct Engine {
    pub store: Arc<dyn JobStore>,
    pub queue: Arc<dyn Queue>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn Ids>,
    pub config: EngineConfig,
    admission: Option<Admission>,
}

impl Engine {
    pub fn new(
        store: Arc<dyn JobStore>,
        queue: Arc<dyn Queue>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn Ids>,
        config: EngineConfig,
    ) -> Self {
        Engine {
            store,
            queue,
            clock,
            ids,
            config,
            admission: None,
        }
    }

    /// Bounds the jobs in flight per principal and per tenant (counted in `records`). Internal
    /// jobs ([`Engine::start_deferred`]) are never refused.
    pub fn with_admission(mut self, records: Arc<dyn RecordStore>, limits: InFlightLimits) -> Self {
        self.admission = Some(Admission { records, limits });
        self
    }

    /// Creates the job durably, then enqueues it. Same (owner, kind, operation key) and same
    /// input → the same job; same key with other input → [`StartError::KeyConflict`].
    pub async fn start(
        &self,
        tenant: &str,
        subject: &str,
        kind: &str,
        operation_key: Option<&str>,
        input: Value,
    ) -> Result<Job, StartError> {
        self.start_job(
            tenant,
            subject,
            kind,
            operation_key,
            input,
            StartMode::Enqueue,
        )
        .await
    }

    /// [`Engine::start`] of a job its owner follows as a task: the job is marked so, and
    /// `tasks/*` reach it for its owner whether or not the app declared its kind. A key that
    /// already names a job started by [`Engine::start`] returns that job, unmarked.
    pub async fn start_task(
        &self,
        tenant: &str,
        subject: &str,
        kind: &str,
        operation_key: Option<&str>,
        input: Value,
    ) -> Result<Job, StartError> {
        self.start_job(tenant, subject, kind, operation_key, input, StartMode::Task)
            .await
    }

    /// Like [`Engine::start`] but without enqueuing: the job waits, queued, until the reconciler
    /// finds it past `queued_deadline_secs` and enqueues it. A dead man's switch: work that only
    /// has to run if its starter dies (it usually finds nothing left to do).
    pub async fn start_deferred(
        &self,
        tenant: &str,
        subject: &str,
        kind: &str,
        operation_key: Option<&str>,
        input: Value,
    ) -> Result<Job, StartError> {
        self.start_job(
            tenant,
            subject,
            kind,
            operation_key,
            input,
            StartMode::Deferred,
        )
        .await
    }

    async fn start_job(
        &self,
        tenant: &str,
        subject: &str,
        kind: &str,
        operation_key: Option<&str>,
        input: Value,
        mode: StartMode,
    ) -> Result<Job, StartError> {
        let enqueue = mode != StartMode::Deferred;
        let task = mode == StartMode::Task;
        let now = self.clock.now_unix();
        let job = Job {
            job: JobRef {
                tenant: tenant.into(),
                subject: subject.into(),
                id: self.ids.new_id(),
            },
            kind: kind.into(),
            operation_key: operation_key.map(String::from),
            digest: canonical_digest(&input),
            input,
            status: JobStatus::Queued,
            revision: 1,
            lease: None,
            checkpoint: None,
            progress: None,
            task,
            result: None,
            error: None,
            attempts: 0,
            cancel_requested: false,
            pending_input: None,
            input_responses: None,
            resume_state: None,
            protocol_error: None,
            trace: crate::trace::current().map(|t| t.traceparent()),
            created_at: now,
            updated_at: now,
            expires_at: now + self.config.retention_secs,
        };
        // A repeated start of a keyed job finds it without taking a slot (it holds one already).
        if self.admission.is_some()
            && enqueue
            && let Some(existing) = self.store.keyed_job(&job).await?
        {
            return if existing.digest == job.digest {
                Ok(existing)
            } else {
                Err(StartError::KeyConflict {
                    operation_key: operation_key.unwrap_or_default().to_string(),
                    existing: existing.job.id,
                })
            };
        }
        let admitted = if enqueue {
            self.admit(&job).await?
        } else {
            false
        };
        let created = match self.store.create_job(&job).await {
            Ok(created) => created,
            Err(error) => {
                self.leave_if(admitted, &job.job).await;
                return Err(error.into());
            }
        };
        if !matches!(created, Created::New(_)) {
            // The operation key named an existing job: the slots taken for this one go back.
            self.leave_if(admitted, &job.job).await;
        }
        match created {
            Created::New(job) if !enqueue => Ok(job),
            Created::New(job) => {
                // Job first, then message: if this send is lost, the reconciler re-enqueues.
                if let Err(error) = self.enqueue(&job).await {
                    tracing::warn!(%error, job = %job.job.id, "enqueue failed; the reconciler will retry");
                }
                Ok(job)
            }
            Created::Existing(existing) if existing.digest == job.digest => Ok(existing),
            Created::Existing(existing) => Err(StartError::KeyConflict {
                operation_key: operation_key.unwrap_or_default().to_string(),
                existing: existing.job.id,
            }),
        }
    }

    /// Sends the job's work message, carrying the trace of the request that started it.
    async fn enqueue(&self, job: &Job) -> Result<(), StoreError> {
        let trace = job
            .trace
            .as_deref()
            .and_then(TraceContext::from_traceparent);
        self.queue
            .send_traced(&WorkMessage::new(job.job.clone()).encode(), trace.as_ref())
            .await
    }

    /// Asks a job to stop. Idempotent; a queued job is cancelled at once, a running one when its
    /// runner next looks, a terminal one is left as it is. Returns the job, or `None` if absent.
    pub async fn cancel(&self, job: &JobRef) -> Result<Option<Job>, StoreError> {
        for _ in 0..5 {
            let Some(current) = self.store.get_job(job).await? else {
                return Ok(None);
            };
            let parked = matches!(current.status, JobStatus::Queued | JobStatus::InputRequired);
            if current.status.is_terminal() || current.cancel_requested && !parked {
                return Ok(Some(current));
            }
            let mut next = current.next(self.clock.now_unix());
            next.cancel_requested = true;
            if parked {
                next.status = JobStatus::Cancelled;
                next.pending_input = None;
            }
            match self.store.put_job(&next, current.revision).await {
                Ok(written) => {
                    if written.status.is_terminal() {
                        self.leave(job).await;
                    }
                    return Ok(Some(written));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(other) => return Err(other),
            }
        }
        Err(StoreError::Unavailable("cancel kept conflicting".into()))
    }

    /// Delivers input responses to a job parked for input. Keys that are not pending are ignored;
    /// once every pending key is answered the job is queued again. Returns the job, or `None`
    /// if absent. Idempotent: answers for keys already answered change nothing.
    pub async fn provide_input(
        &self,
        job: &JobRef,
        responses: &serde_json::Map<String, Value>,
    ) -> Result<Option<Job>, StoreError> {
        for _ in 0..5 {
            let Some(current) = self.store.get_job(job).await? else {
                return Ok(None);
            };
            let Some(Value::Object(pending)) = current
                .pending_input
                .clone()
                .filter(|_| current.status == JobStatus::InputRequired)
            else {
                return Ok(Some(current));
            };
            let answered: Vec<&String> = responses
                .keys()
                .filter(|k| pending.contains_key(*k))
                .collect();
            if answered.is_empty() {
                return Ok(Some(current));
            }
            let mut next = current.next(self.clock.now_unix());
            let mut collected = match current.input_responses.clone() {
                Some(Value::Object(map)) => map,
                _ => serde_json::Map::new(),
            };
            let mut still_pending = pending.clone();
            for key in answered {
                collected.insert(key.clone(), responses[key].clone());
                still_pending.remove(key);
            }
            next.input_responses = Some(Value::Object(collected));
            let resume = still_pending.is_empty();
            if resume {
                next.status = JobStatus::Queued;
                next.pending_input = None;
            } else {
                next.pending_input = Some(Value::Object(still_pending));
            }
            match self.store.put_job(&next, current.revision).await {
                Ok(written) => {
                    if resume && let Err(error) = self.enqueue(&written).await {
                        tracing::warn!(%error, "enqueue after input failed; the reconciler will retry");
                    }
                    return Ok(Some(written));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(other) => return Err(other),
            }
        }
        Err(StoreError::Unavailable(
            "input delivery kept conflicting".into(),
        ))
    }

    /// Moves an unleased job to a terminal status (conditional on the revision read).
    async fn settle(
        &self,
        job: &Job,
        status: JobStatus,
        result: Option<Value>,
        error: Option<String>,
    ) -> Result<Processed, WorkError> {
        let mut next = job.next(self.clock.now_unix());
        next.status = status;
        next.lease = None;
        next.result = result;
        next.error = error;
        match self.store.put_job(&next, job.revision).await {
            Ok(_) => {
                self.leave(&job.job).await;
                Ok(Processed::Finished(status))
            }
            Err(StoreError::Conflict { .. }) => Err(WorkError::Busy),
            Err(other) => Err(other.into()),
        }
    }

    /// One reconciler pass: re-enqueue jobs left queued past the deadline, requeue (or fail,
    /// past the attempt budget) jobs whose lease expired, finish cancelled queued jobs.
    pub async fn reconcile(&self, limit: usize) -> Result<ReconcileReport, StoreError> {
        let mut report = ReconcileReport::default();
        let now = self.clock.now_unix();
        for job in self.store.list_active(limit).await? {
            let mut next = job.next(now);
            let enqueue = match job.status {
                JobStatus::Queued if job.cancel_requested => {
                    next.status = JobStatus::Cancelled;
                    false
                }
                JobStatus::Queued if job.updated_at + self.config.queued_deadline_secs <= now => {
                    true
                }
                JobStatus::Running if !job.lease_live(now) => {
                    next.lease = None;
                    if job.attempts >= self.config.max_attempts {
                        next.status = JobStatus::Failed;
                        next.error = Some(format!(
                            "attempt budget exhausted: {} attempts, the last worker's lease expired",
                            job.attempts
                        ));
                        false
                    } else {
                        next.status = JobStatus::Queued;
                        true
                    }
                }
                _ => continue,
            };
            match self.store.put_job(&next, job.revision).await {
                Ok(written) => {
                    if enqueue {
                        self.enqueue(&written).await?;
                        tracing::info!(trace_id = written.trace_id().unwrap_or("-"), job = %written.job.id, kind = %written.kind, tenant = %written.job.tenant, "job requeued");
                        report.requeued += 1;
                    } else if written.status == JobStatus::Failed {
                        self.leave(&written.job).await;
                        report.failed += 1;
                    } else {
                        self.leave(&written.job).await;
                        report.cancelled += 1;
                    }
                }
                Err(StoreError::Conflict { .. }) => report.skipped += 1,
                Err(other) => return Err(other),
            }
        }
        Ok(report)
    }
}

/// The slot holder naming a job (its subject and id).
fn holder(job: &JobRef) -> String {
    serde_json::json!([job.subject, job.id]).to_string()
}

impl Engine {
    fn slot_keys(job: &JobRef) -> [RecordKey; 2] {
        [
            RecordKey::new(
                Owner::personal(&job.tenant, &job.subject),
                "jobs-in-flight",
                "open",
            ),
            RecordKey::new(Owner::tenant(&job.tenant), "jobs-in-flight", "open"),
        ]
    }

    /// Takes the job's slots among its principal's and its tenant's jobs in flight. A full count
    /// is checked against the jobs themselves first (a job finished by a worker that died before
    /// giving its slot back still counts until then).
    async fn admit(&self, job: &Job) -> Result<bool, StartError> {
        let Some(admission) = &self.admission else {
            return Ok(false);
        };
        let now = self.clock.now_unix();
        let [principal, tenant] = Self::slot_keys(&job.job);
        let limits = [
            (
                principal,
                admission.limits.per_principal,
                "jobs in flight for this principal",
            ),
            (
                tenant,
                admission.limits.per_tenant,
                "jobs in flight for this tenant",
            ),
        ];
        let mut taken = Vec::new();
        for (key, max, what) in limits {
            let mut acquired = self
                .acquire(admission, &key, &job.job, job.expires_at, max, now)
                .await;
            if matches!(acquired, Ok(Acquired::Full)) {
                self.drop_finished(admission, &key, &job.job.tenant, now)
                    .await;
                acquired = self
                    .acquire(admission, &key, &job.job, job.expires_at, max, now)
                    .await;
            }
            match acquired {
                Ok(Acquired::Held) => taken.push(key),
                Ok(Acquired::Full) | Err(_) => {
                    for key in &taken {
                        let _ =
                            slots::release(&*admission.records, key, &holder(&job.job), now).await;
                    }
                    return Err(match acquired {
                        Err(SlotError::Store(error)) => StartError::Store(error),
                        Err(contention @ SlotError::Contention(_)) => {
                            StartError::Store(StoreError::unavailable("admission", contention))
                        }
                        _ => StartError::LimitReached { what, max },
                    });
                }
            }
        }
        Ok(true)
    }

    async fn acquire(
        &self,
        admission: &Admission,
        key: &RecordKey,
        job: &JobRef,
        until: u64,
        max: usize,
        now: u64,
    ) -> Result<Acquired, SlotError> {
        slots::acquire(&*admission.records, key, &holder(job), until, max, now).await
    }

    /// Gives back the slots of holders whose job has finished or is gone.
    async fn drop_finished(&self, admission: &Admission, key: &RecordKey, tenant: &str, now: u64) {
        let Ok(held) = slots::holders(&*admission.records, key, now).await else {
            return;
        };
        for id in held {
            let Ok((subject, job_id)) = serde_json::from_str::<(String, String)>(&id) else {
                continue;
            };
            let job = JobRef {
                tenant: tenant.into(),
                subject,
                id: job_id,
            };
            if let Ok(found) = self.store.get_job(&job).await
                && found.is_none_or(|j| j.status.is_terminal())
            {
                let _ = slots::release(&*admission.records, key, &id, now).await;
            }
        }
    }

    async fn leave_if(&self, admitted: bool, job: &JobRef) {
        if admitted {
            self.leave(job).await;
        }
    }

    /// Gives a finished job's slots back (a failure here only delays it: see [`Engine::admit`]).
    async fn leave(&self, job: &JobRef) {
        let Some(admission) = &self.admission else {
            return;
        };
        let now = self.clock.now_unix();
        for key in Self::slot_keys(job) {
            if let Err(error) = slots::release(&*admission.records, &key, &holder(job), now).await {
                tracing::warn!(%error, job = %job.id, "a finished job's slot was not given back");
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    pub requeued: usize,
    pub failed: usize,
    pub cancelled: usize,
    /// Jobs that changed under the reconciler (someone else acted; next pass looks again).
    pub skipped: usize,
}

impl Engine {
    /// The local stand-in for the scheduled reconciler: a pass every `every`, until `stop`.
    pub async fn run_reconciler_loop(
        &self,
        every: std::time::Duration,
        stop: impl Future<Output = ()>,
    ) {
        tokio::pin!(stop);
        loop {
            tokio::select! { _ = &mut stop => return, _ = tokio::time::sleep(every) => {} }
            match self.reconcile(100).await {
                Ok(report) if report != ReconcileReport::default() => {
                    tracing::info!(?report, "reconciled")
                }
                Ok(_) => {}
                Err(error) => tracing::error!(%error, "reconcile failed"),
            }
        }
    }
}
