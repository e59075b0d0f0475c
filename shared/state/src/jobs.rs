//! Durable jobs: the record, its state machine, and the store port.
//!
//! Invariants:
//! - A job is created durably before anyone is told about it, together with its operation-key
//!   record when the caller gave a key, in one atomic write: a start that races another start
//!   with the same key finds the first job, never makes a second.
//! - Every later write is conditional on the revision the writer last read, so a writer that lost
//!   its lease (or raced anyone) is refused instead of overwriting ("fencing").
//! - Status moves only along `queued → running → succeeded | failed | cancelled` (and back to
//!   `queued` when a lease is released or expires); terminal states never change.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::records::{Owner, RecordKey, StoreError, StoreFuture};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Queued,
    Running,
    /// Parked until the client answers `pending_input` (tasks: `input_required`).
    InputRequired,
    Succeeded,
    Failed,
    Cancelled,
}

impl JobStatus {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Succeeded | JobStatus::Failed | JobStatus::Cancelled
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::InputRequired => "input_required",
            JobStatus::Succeeded => "succeeded",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the state machine allows `self → next`.
    pub fn may_become(self, next: JobStatus) -> bool {
        use JobStatus::*;
        matches!(
            (self, next),
            (Queued, Running | Cancelled | Failed)
                | (
                    Running,
                    Running | Queued | InputRequired | Succeeded | Failed | Cancelled
                )
                | (InputRequired, Queued | Cancelled)
        ) || (self == next && !self.is_terminal())
    }
}

/// Who holds a running job, and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub owner: String,
    pub expires_at: u64,
}

/// Where to find a job: the owner from the verified token, and the job id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JobRef {
    pub tenant: String,
    pub subject: String,
    pub id: String,
}

impl JobRef {
    pub fn owner(&self) -> Owner {
        Owner::personal(&self.tenant, &self.subject)
    }

    /// The storage key of the job record (every adapter uses this one).
    pub fn record_key(&self) -> RecordKey {
        RecordKey::new(self.owner(), "job", &self.id)
    }
}

/// The longest progress message a job keeps (longer ones are cut at a character boundary and end
/// with `…`): the message is stored on every checkpoint and shown on every `tasks/get`.
pub const MAX_PROGRESS_BYTES: usize = 512;

/// `message` cut to [`MAX_PROGRESS_BYTES`] at a character boundary, ending with `…` when cut.
pub fn bounded_progress(message: &str) -> String {
    if message.len() <= MAX_PROGRESS_BYTES {
        return message.to_string();
    }
    let ellipsis = '…';
    let mut end = MAX_PROGRESS_BYTES - ellipsis.len_utf8();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ellipsis}", &message[..end])
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub job: JobRef,
    pub kind: String,
    /// The caller's idempotency key, scoped to (tenant, kind).
    pub operation_key: Option<String>,
    /// SHA-256 of the canonical input: a same-key start with another digest is a conflict.
    pub digest: String,
    pub input: Value,
    pub status: JobStatus,
    /// Starts at 1; every write adds one and is conditional on the previous value.
    pub revision: u64,
    pub lease: Option<Lease>,
    /// What the runner saved to resume from, written only under a live lease.
    pub checkpoint: Option<Value>,
    /// What the runner last said about how far it got ([`crate::JobContext::progress`]): a task's
    /// `statusMessage` while it works. At most [`MAX_PROGRESS_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// Started as a task ([`crate::Engine::start_task`]): its owner may follow it through
    /// `tasks/*` whether or not the app declared its kind.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task: bool,
    pub result: Option<Value>,
    pub error: Option<String>,
    /// How many times a worker has claimed the job.
    pub attempts: u32,
    pub cancel_requested: bool,
    /// Input requests the job waits on (key → request), while `InputRequired`.
    #[serde(default)]
    pub pending_input: Option<Value>,
    /// Every input response received so far (key → response).
    #[serde(default)]
    pub input_responses: Option<Value>,
    /// What the runner asked to get back when it resumes after input.
    #[serde(default)]
    pub resume_state: Option<Value>,
    /// A JSON-RPC error object when the job failed by a protocol error (tasks: `failed`).
    #[serde(default)]
    pub protocol_error: Option<Value>,
    /// The W3C `traceparent` of the request that started the job: its worker logs the same trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    /// When the record may be deleted (store TTL).
    pub expires_at: u64,
}

impl Job {
    /// The trace id of the request that started the job.
    pub fn trace_id(&self) -> Option<&str> {
        self.trace.as_deref().and_then(|t| t.split('-').nth(1))
    }

    /// A copy with `revision + 1` and `updated_at = now`, ready for a conditional write.
    pub fn next(&self, now: u64) -> Job {
        Job {
            revision: self.revision + 1,
            updated_at: now,
            ..self.clone()
        }
    }

    pub fn lease_live(&self, now: u64) -> bool {
        self.lease.as_ref().is_some_and(|l| l.expires_at > now)
    }

    /// The storage key of the job's operation-key record. Operation keys are scoped to the job's
    /// owner and kind: another principal's key never finds (or leaks) this principal's job.
    pub fn operation_record_key(&self, key: &str) -> RecordKey {
        RecordKey::new(
            self.job.owner(),
            "opkey",
            &format!("{}:{}{key}", self.kind.len(), self.kind),
        )
    }

    pub fn leased_by(&self, owner: &str, now: u64) -> bool {
        self.lease
            .as_ref()
            .is_some_and(|l| l.owner == owner && l.expires_at > now)
    }
}

/// What [`JobStore::create_job`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Created {
    /// This call created the job.
    New(Job),
    /// A job with this operation key already exists (compare its digest).
    Existing(Job),
}

/// The store of jobs. Adapters: SQLite (`relevo-embedded`), DynamoDB (`relevo-aws`).
pub trait JobStore: Send + Sync {
    /// Creates `job` (revision 1), and its operation-key record if it has a key, atomically. If the
    /// key is taken, returns the job it names instead and writes nothing.
    fn create_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Created>;

    /// The job, read consistently; `None` if absent (or owned by someone else: the key includes
    /// the owner).
    fn get_job<'a>(&'a self, job: &'a JobRef) -> StoreFuture<'a, Option<Job>>;

    /// Writes `job` (whose revision must be `expected_revision + 1`) only if the stored revision
    /// is still `expected_revision`; otherwise `Conflict` with the current record in the error's
    /// body (as a [`crate::Record`] whose body is the job JSON) or `NotFound`.
    fn put_job<'a>(&'a self, job: &'a Job, expected_revision: u64) -> StoreFuture<'a, Job>;

    /// Jobs not yet terminal (queued or running), oldest update first, for the reconciler.
    fn list_active<'a>(&'a self, limit: usize) -> StoreFuture<'a, Vec<Job>>;

    /// The job already started under `job`'s operation key (same owner and kind), if any.
    fn keyed_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Option<Job>>;
}

/// Reads the job out of a `Conflict` error's current record.
pub fn conflicting_job(error: &StoreError) -> Option<Job> {
    match error {
        StoreError::Conflict { current, .. } => serde_json::from_value(current.body.clone()).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::JobStatus::*;

    #[test]
    fn terminal_states_never_change() {
        for terminal in [Succeeded, Failed, Cancelled] {
            for next in [Queued, Running, Succeeded, Failed, Cancelled] {
                assert!(!terminal.may_become(next), "{terminal:?} -> {next:?}");
            }
        }
        assert!(Queued.may_become(Running));
        assert!(
            Running.may_become(Queued),
            "a released or expired lease requeues"
        );
        assert!(
            !Queued.may_become(Succeeded),
            "a job cannot succeed without running"
        );
    }
}
