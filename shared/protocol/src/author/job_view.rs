//! A job read back through its typed kind: where it stands, its last progress, its typed output.
//!
//! [`JobView<O>`] is what [`super::ToolContext::find_job`] and [`super::JobKind::read`] return:
//! the stored [`Job`] (its id, timestamps, attempts) and a [`JobState<O>`] that a `match` reads
//! without knowing how the store spells a status, where progress lives or how the output was
//! serialized.
//!
//! Invariants:
//! - The output is decoded only from a succeeded job's stored result, as the kind's `O`; a result
//!   that does not fit is [`ReadError::Output`] naming the kind and the path where it broke (an
//!   older version of the app wrote another shape): never a panic, never a silent `None`.
//! - A failed job's reason is the one its runner stored (a permanent [`super::JobError`], or the
//!   message of the JSON-RPC error a tool task failed with), shown only to the job's owner, who
//!   is the only one a read can find it for.

use serde::de::DeserializeOwned;
use serde_json::Value;

use relevo_state::{Job, JobStatus, StoreError};

/// Where a job stands, with its output typed.
#[derive(Debug, Clone, PartialEq)]
pub enum JobState<O> {
    /// Waiting for a worker, or running: what the job last said of its progress
    /// ([`relevo_state::JobContext::progress`]), if anything.
    Working {
        /// The job's last progress message.
        progress: Option<String>,
    },
    /// Parked until its owner answers what it asked (a tool task that elicits).
    InputRequired {
        /// The job's last progress message.
        progress: Option<String>,
    },
    /// Done: the runner's output.
    Succeeded(O),
    /// Done without an output, for this reason.
    Failed(String),
    /// Cancelled before it finished.
    Cancelled,
}

impl<O> JobState<O> {
    /// Whether the job is done: succeeded, failed or cancelled.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            JobState::Succeeded(_) | JobState::Failed(_) | JobState::Cancelled
        )
    }

    /// The progress of a job still under way.
    pub fn progress(&self) -> Option<&str> {
        match self {
            JobState::Working { progress } | JobState::InputRequired { progress } => {
                progress.as_deref()
            }
            _ => None,
        }
    }

    /// The output of a succeeded job.
    pub fn output(&self) -> Option<&O> {
        match self {
            JobState::Succeeded(output) => Some(output),
            _ => None,
        }
    }
}

/// A job of a known kind, read back: the stored job and its typed state.
#[derive(Debug, Clone, PartialEq)]
pub struct JobView<O> {
    /// The stored job: its id (`job.job.id`), stored status, attempts and timestamps.
    pub job: Job,
    /// Where it stands, with its output typed.
    pub state: JobState<O>,
}

impl<O> JobView<O> {
    /// The job's id: what a tool hands its caller to ask about it later.
    pub fn id(&self) -> &str {
        &self.job.job.id
    }

    /// The stored status's name (`queued`, `running`, `input_required`, `succeeded`, `failed`,
    /// `cancelled`).
    pub fn status(&self) -> &'static str {
        self.job.status.as_str()
    }
}

impl<O: DeserializeOwned> JobView<O> {
    /// `job` with its state decoded; a succeeded job whose result does not fit `O` is an error.
    pub fn decode(job: Job) -> Result<Self, ReadError> {
        let progress = job.progress.clone();
        let state = match job.status {
            JobStatus::Queued | JobStatus::Running => JobState::Working { progress },
            JobStatus::InputRequired => JobState::InputRequired { progress },
            JobStatus::Succeeded => {
                let result = job.result.clone().unwrap_or(Value::Null);
                JobState::Succeeded(serde_path_to_error::deserialize(result).map_err(|error| {
                    ReadError::Output {
                        kind: job.kind.clone(),
                        path: error.path().to_string(),
                        reason: error.inner().to_string(),
                    }
                })?)
            }
            JobStatus::Failed => JobState::Failed(failure_reason(&job)),
            JobStatus::Cancelled => JobState::Cancelled,
        };
        Ok(JobView { job, state })
    }
}

/// The reason a failed job stored: its runner's, or its JSON-RPC error's message.
fn failure_reason(job: &Job) -> String {
    job.error
        .clone()
        .or_else(|| {
            job.protocol_error
                .as_ref()
                .and_then(|error| error["message"].as_str())
                .map(String::from)
        })
        .unwrap_or_else(|| "the job failed".into())
}

/// Why a typed job could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The store could not be read (transient).
    #[error("the job store failed: {0}")]
    Store(#[from] StoreError),
    /// The stored output does not fit the kind's output type.
    #[error("the output of this {kind:?} job does not fit its type at `{path}`: {reason}")]
    Output {
        /// The job's kind.
        kind: String,
        /// Where in the output it broke (`.` for the top level).
        path: String,
        /// What serde said.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use relevo_state::JobRef;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, PartialEq, Deserialize)]
    struct Total {
        units: u32,
    }

    fn job(status: JobStatus) -> Job {
        Job {
            job: JobRef {
                tenant: "acme".into(),
                subject: "ada".into(),
                id: "j1".into(),
            },
            kind: "order".into(),
            operation_key: None,
            digest: String::new(),
            input: json!({}),
            status,
            revision: 1,
            lease: None,
            checkpoint: Some(json!({ "at": 3 })),
            progress: Some("3 of 5".into()),
            task: false,
            result: None,
            error: None,
            attempts: 1,
            cancel_requested: false,
            pending_input: None,
            input_responses: None,
            resume_state: None,
            protocol_error: None,
            trace: None,
            created_at: 1,
            updated_at: 2,
            expires_at: 3,
        }
    }

    #[test]
    fn a_working_job_shows_its_progress_and_no_output() {
        for status in [JobStatus::Queued, JobStatus::Running] {
            let view = JobView::<Total>::decode(job(status)).unwrap();
            assert_eq!(
                view.state,
                JobState::Working {
                    progress: Some("3 of 5".into())
                }
            );
            assert_eq!(view.state.progress(), Some("3 of 5"));
            assert_eq!(view.state.output(), None);
            assert!(!view.state.is_terminal());
        }
    }

    #[test]
    fn a_succeeded_job_reads_back_as_its_typed_output() {
        let mut done = job(JobStatus::Succeeded);
        done.result = Some(json!({ "units": 5 }));
        let view = JobView::<Total>::decode(done).unwrap();
        assert_eq!(view.state, JobState::Succeeded(Total { units: 5 }));
        assert_eq!((view.id(), view.status()), ("j1", "succeeded"));
        assert_eq!(
            view.state.progress(),
            None,
            "a finished job has no progress"
        );
    }

    #[test]
    fn a_stored_output_of_another_shape_is_an_error_naming_the_kind_and_the_path() {
        let mut done = job(JobStatus::Succeeded);
        done.result = Some(json!({ "units": "five" }));
        let error = JobView::<Total>::decode(done).unwrap_err().to_string();
        assert!(error.contains("\"order\""), "{error}");
        assert!(error.contains("`units`"), "{error}");
        assert!(error.contains("expected u32"), "{error}");
    }

    #[test]
    fn a_failed_job_carries_its_runners_reason_or_its_errors_message() {
        let mut failed = job(JobStatus::Failed);
        failed.error = Some("an empty order".into());
        assert_eq!(
            JobView::<Total>::decode(failed).unwrap().state,
            JobState::Failed("an empty order".into())
        );
        let mut refused = job(JobStatus::Failed);
        refused.protocol_error = Some(json!({ "code": -32602, "message": "no such sku" }));
        assert_eq!(
            JobView::<Total>::decode(refused).unwrap().state,
            JobState::Failed("no such sku".into())
        );
    }
}
