//! Processing deliveries: a [`Worker`] is an [`Engine`] with the runner of every job kind it may
//! meet. Starting, cancelling and reconciling need no runner, so the engine exists before the app
//! whose tools start jobs, and the worker after it, with no binding in between.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use tracing::Instrument;

use super::{Engine, JobContext, JobFailure, JobRunner, Processed, WorkError};
use crate::emf::{self, Metrics, Unit};
use crate::jobs::{Job, JobRef, JobStatus, Lease};
use crate::queue::WorkMessage;
use crate::records::StoreError;
use crate::trace::{self, FinishedSpan, SpanKind, TraceContext};

/// Claims, runs and completes jobs: the engine plus a runner per job kind. A job whose kind has
/// no runner here fails with that reason.
pub struct Worker {
    engine: Arc<Engine>,
    runners: HashMap<String, Arc<dyn JobRunner>>,
}

impl Deref for Worker {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl Worker {
    pub fn new(engine: Arc<Engine>) -> Self {
        Worker {
            engine,
            runners: HashMap::new(),
        }
    }

    pub fn runner(mut self, kind: &str, runner: Arc<dyn JobRunner>) -> Self {
        self.runners.insert(kind.to_string(), runner);
        self
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Handles one delivery of a work message.
    pub async fn process_message(&self, body: &str) -> Result<Processed, WorkError> {
        let message = WorkMessage::decode(body).ok_or(WorkError::BadMessage)?;
        self.process(&message.job).await
    }

    pub async fn process(&self, job_ref: &JobRef) -> Result<Processed, WorkError> {
        self.process_traced(job_ref, None).await
    }

    /// Processes the job in a span of the trace its message carried (`delivered`), or else of the
    /// one its record keeps: its log lines, and the jobs it starts, carry that trace id. Writes
    /// one `job processed` line and its EMF metrics (queue lag, attempts, run time) by kind.
    pub async fn process_traced(
        &self,
        job_ref: &JobRef,
        delivered: Option<TraceContext>,
    ) -> Result<Processed, WorkError> {
        let Some(job) = self.store.get_job(job_ref).await? else {
            return Ok(Processed::NothingToDo);
        };
        let recorded = job
            .trace
            .as_deref()
            .and_then(TraceContext::from_traceparent);
        let (parent, trace_from) = match (delivered, recorded) {
            (Some(delivered), _) => (Some(delivered), "message"),
            (None, Some(recorded)) => (Some(recorded), "record"),
            (None, None) => (None, "new"),
        };
        let trace = parent
            .as_ref()
            .map_or_else(TraceContext::root, TraceContext::child);
        let span = tracing::info_span!(
            "job",
            trace_id = trace.trace_id.as_str(),
            trace_from,
            job = %job.job.id,
            kind = %job.kind,
            tenant = %job.job.tenant
        );
        let (kind, attempts) = (job.kind.clone(), job.attempts + 1);
        let queue_lag_secs = self.clock.now_unix().saturating_sub(job.updated_at);
        let started = std::time::Instant::now();
        let started_unix = trace::unix_nanos();
        let tenant = job.job.tenant.clone();
        let outcome = trace::scope(trace.clone(), self.run(job).instrument(span.clone())).await;
        let run_ms = started.elapsed().as_secs_f64() * 1000.0;
        let result = match &outcome {
            Ok(Processed::Finished(status)) => status.as_str(),
            Ok(Processed::NothingToDo) => "nothing_to_do",
            Ok(Processed::Fenced) => "fenced",
            Err(_) => "retry",
        };
        span.in_scope(|| tracing::info!(result, attempts, queue_lag_secs, run_ms, "job processed"));
        if trace::exporting() {
            trace::record(FinishedSpan {
                trace_id: trace.trace_id.clone(),
                span_id: trace.span_id.clone(),
                parent_span_id: parent.map(|p| p.span_id),
                name: format!("job {kind}"),
                kind: SpanKind::Consumer,
                start_unix_nanos: started_unix,
                end_unix_nanos: trace::unix_nanos(),
                attributes: vec![
                    ("relevo.job.id", job_ref.id.clone()),
                    ("relevo.job.kind", kind.clone()),
                    ("relevo.job.result", result.to_string()),
                    ("relevo.job.attempt", attempts.to_string()),
                    ("relevo.tenant", tenant),
                ],
                failed: result == "failed" || result == "retry",
            });
        }
        if emf::enabled() {
            Metrics::new()
                .dimension("Kind", kind_dimension(&self.runners, &kind))
                .by(&[])
                .by(&["Kind"])
                .metric("JobsProcessed", 1.0, Unit::Count)
                .metric("JobQueueLag", queue_lag_secs as f64, Unit::Seconds)
                .metric("JobAttempts", f64::from(attempts), Unit::Count)
                .metric("JobRunTime", run_ms, Unit::Milliseconds)
                .metric(
                    "JobRetries",
                    if result == "retry" { 1.0 } else { 0.0 },
                    Unit::Count,
                )
                .property("result", result)
                .property("traceId", trace.trace_id.as_str())
                .emit();
        }
        outcome
    }

    async fn run(&self, job: Job) -> Result<Processed, WorkError> {
        let now = self.clock.now_unix();
        let job_ref = &job.job;
        if job.status.is_terminal() || job.status == JobStatus::InputRequired {
            return Ok(Processed::NothingToDo);
        }
        if job.lease_live(now) {
            return Err(WorkError::Busy);
        }
        if job.cancel_requested {
            return self.settle(&job, JobStatus::Cancelled, None, None).await;
        }
        if job.attempts >= self.config.max_attempts {
            let reason = format!("attempt budget exhausted after {} attempts", job.attempts);
            return self
                .settle(&job, JobStatus::Failed, None, Some(reason))
                .await;
        }
        let Some(runner) = self.runners.get(&job.kind).cloned() else {
            return self
                .settle(
                    &job,
                    JobStatus::Failed,
                    None,
                    Some(format!("no runner for job kind {:?}", job.kind)),
                )
                .await;
        };

        let lease_owner = self.ids.new_id();
        let mut claimed = job.next(now);
        claimed.status = JobStatus::Running;
        claimed.lease = Some(Lease {
            owner: lease_owner.clone(),
            expires_at: now + self.config.lease_secs,
        });
        claimed.attempts += 1;
        let claimed = match self.store.put_job(&claimed, job.revision).await {
            Ok(claimed) => claimed,
            Err(StoreError::Conflict { .. }) => return Err(WorkError::Busy),
            Err(other) => return Err(other.into()),
        };

        let ctx = JobContext {
            store: self.store.clone(),
            clock: self.clock.clone(),
            lease_owner,
            lease_secs: self.config.lease_secs,
            job: Arc::new(Mutex::new(claimed)),
        };
        let run = AssertUnwindSafe(runner.run(&ctx)).catch_unwind();
        let outcome = tokio::select! {
            outcome = run => match outcome {
                Ok(outcome) => outcome,
                Err(_) => {
                    tracing::error!(job = %job_ref.id, "job runner panicked");
                    Err(JobFailure::Retry("the runner panicked".into()))
                }
            },
            // The lease was lost (the store refused a renewal): another worker owns the job.
            () = ctx.keep_lease() => return Ok(Processed::Fenced),
        };
        let (status, result, error) = match outcome {
            Ok(result) => (JobStatus::Succeeded, Some(result), None),
            Err(JobFailure::Failed(reason)) => (JobStatus::Failed, None, Some(reason)),
            Err(JobFailure::Cancelled) => (JobStatus::Cancelled, None, None),
            Err(JobFailure::Fenced) => return Ok(Processed::Fenced),
            Err(JobFailure::Protocol(error)) => {
                let message = error["message"]
                    .as_str()
                    .unwrap_or("protocol error")
                    .to_string();
                let written = ctx
                    .write(|job, _| {
                        job.status = JobStatus::Failed;
                        job.lease = None;
                        job.error = Some(message.clone());
                        job.protocol_error = Some(error.clone());
                    })
                    .await;
                if written.is_err() {
                    return Ok(Processed::Fenced);
                }
                self.leave(job_ref).await;
                return Ok(Processed::Finished(JobStatus::Failed));
            }
            Err(JobFailure::NeedsInput { requests, state }) => {
                let written = ctx
                    .write(|job, _| {
                        job.status = JobStatus::InputRequired;
                        job.lease = None;
                        job.pending_input = Some(requests.clone());
                        job.resume_state = state.clone();
                    })
                    .await;
                return Ok(if written.is_ok() {
                    Processed::Finished(JobStatus::InputRequired)
                } else {
                    Processed::Fenced
                });
            }
            Err(JobFailure::Retry(reason)) => {
                let released = ctx
                    .write(|job, _| {
                        job.status = JobStatus::Queued;
                        job.lease = None;
                        job.error = Some(reason.clone());
                    })
                    .await;
                return match released {
                    Ok(()) => Err(WorkError::Retry(reason)),
                    Err(_) => Ok(Processed::Fenced),
                };
            }
        };
        let finished = ctx
            .write(|job, _| {
                job.status = status;
                job.lease = None;
                job.result = result.clone();
                job.error = error.clone();
            })
            .await;
        match finished {
            Ok(()) => {
                self.leave(job_ref).await;
                Ok(Processed::Finished(status))
            }
            Err(_) => Ok(Processed::Fenced),
        }
    }

    /// Processes a batch of deliveries `(message id, body)` concurrently and returns the ids of
    /// the messages to deliver again (SQS `batchItemFailures`). An error or a panic in one
    /// message fails that message only. A body that is not a work message is reported as failed
    /// too, so the queue dead-letters it after its receive limit for someone to look at.
    pub async fn process_batch(&self, messages: Vec<(String, String)>) -> Vec<String> {
        self.process_traced_batch(
            messages
                .into_iter()
                .map(|(id, body)| (id, body, None))
                .collect(),
        )
        .await
    }

    /// [`Worker::process_batch`] for deliveries that carry a trace (SQS's `AWSTraceHeader`).
    pub async fn process_traced_batch(
        &self,
        messages: Vec<(String, String, Option<TraceContext>)>,
    ) -> Vec<String> {
        let runs = messages.into_iter().map(|(id, body, trace)| async move {
            let processed = async {
                let message = WorkMessage::decode(&body).ok_or(WorkError::BadMessage)?;
                self.process_traced(&message.job, trace).await
            };
            let outcome = AssertUnwindSafe(processed).catch_unwind().await;
            match outcome {
                Ok(Ok(_)) => None,
                Ok(Err(error)) => {
                    tracing::warn!(message = %id, %error, "message will be delivered again");
                    Some(id)
                }
                Err(_) => {
                    tracing::error!(message = %id, "processing panicked");
                    Some(id)
                }
            }
        });
        futures_util::future::join_all(runs)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// The local stand-in for the SQS event source mapping: receive, process, delete what
    /// succeeded, until `stop` resolves. Failed messages reappear after `visibility_secs`.
    pub async fn run_queue_loop(
        &self,
        visibility_secs: u64,
        idle: std::time::Duration,
        stop: impl Future<Output = ()>,
    ) {
        tokio::pin!(stop);
        loop {
            let now = self.clock.now_unix();
            let received = tokio::select! {
                _ = &mut stop => return,
                received = self.queue.receive(10, visibility_secs, now) => received,
            };
            let messages = match received {
                Ok(messages) if !messages.is_empty() => messages,
                Ok(_) => {
                    tokio::select! { _ = &mut stop => return, _ = tokio::time::sleep(idle) => continue }
                }
                Err(error) => {
                    tracing::error!(%error, "queue receive failed");
                    tokio::select! { _ = &mut stop => return, _ = tokio::time::sleep(idle * 10) => continue }
                }
            };
            let batch = messages
                .iter()
                .map(|m| (m.id.clone(), m.body.clone()))
                .collect();
            let failed = self.process_batch(batch).await;
            for message in messages.iter().filter(|m| !failed.contains(&m.id)) {
                if let Err(error) = self.queue.delete(&message.receipt).await {
                    tracing::warn!(%error, "delete failed; the message will be processed again (harmlessly)");
                }
            }
        }
    }
}

/// The `Kind` dimension of a job's metrics. Job kinds are a closed set, the runners a worker
/// registered: a stored kind with no runner (a stale or forged record) is counted as
/// [`emf::OTHER`], so it cannot add a metric series.
fn kind_dimension<'a, R>(runners: &HashMap<String, R>, kind: &'a str) -> &'a str {
    if runners.contains_key(kind) {
        kind
    } else {
        emf::OTHER
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_kind_without_a_runner_is_counted_as_other() {
        let runners: HashMap<String, ()> = [("export".to_string(), ())].into_iter().collect();
        assert_eq!(kind_dimension(&runners, "export"), "export");
        for forged in ["exp0rt", "", "\u{1b}]0;x\u{7}", "名"] {
            assert_eq!(kind_dimension(&runners, forged), emf::OTHER, "{forged:?}");
        }
    }
}
