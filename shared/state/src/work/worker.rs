//! Processing deliveries: a [`Worker`] is an [`Engine`] with the runner of every job kind it may
//! meet. Starting, cancelling and reconciling need no runner, so the engine exists before the app
//! whose tools start jobs, and the worker after it, with no binding in between.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;

use super::{Engine, JobContext, JobFailure, JobRunner, Processed, WorkError};
use crate::jobs::{JobRef, JobStatus, Lease};
use crate::queue::WorkMessage;
use crate::records::StoreError;

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
        Worker { engine, runners: HashMap::new() }
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
        let now = self.clock.now_unix();
        let Some(job) = self.store.get_job(job_ref).await? else { return Ok(Processed::NothingToDo) };
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
            return self.settle(&job, JobStatus::Failed, None, Some(reason)).await;
        }
        let Some(runner) = self.runners.get(&job.kind).cloned() else {
            return self
                .settle(&job, JobStatus::Failed, None, Some(format!("no runner for job kind {:?}", job.kind)))
                .await;
        };

        let lease_owner = self.ids.new_id();
        let mut claimed = job.next(now);
        claimed.status = JobStatus::Running;
        claimed.lease = Some(Lease { owner: lease_owner.clone(), expires_at: now + self.config.lease_secs });
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
            job: Mutex::new(claimed),
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
                let message = error["message"].as_str().unwrap_or("protocol error").to_string();
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
        let runs = messages.into_iter().map(|(id, body)| async move {
            let outcome = AssertUnwindSafe(self.process_message(&body)).catch_unwind().await;
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
        futures_util::future::join_all(runs).await.into_iter().flatten().collect()
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
            let batch = messages.iter().map(|m| (m.id.clone(), m.body.clone())).collect();
            let failed = self.process_batch(batch).await;
            for message in messages.iter().filter(|m| !failed.contains(&m.id)) {
                if let Err(error) = self.queue.delete(&message.receipt).await {
                    tracing::warn!(%error, "delete failed; the message will be processed again (harmlessly)");
                }
            }
        }
    }
}
