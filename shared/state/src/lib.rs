//! Business state and its ports. Adapters (`relevo-embedded` on SQLite, the AWS adapters on
//! DynamoDB) implement the ports; handlers see only the traits.
//!
//! Tenancy invariant: every storage key starts with the tenant, and with the principal when the
//! record is personal. Keys are built only from a verified principal ([`Owner`]), never from
//! arguments, so a lookup of another tenant's or principal's id finds nothing — it answers exactly
//! like an id that never existed.

pub mod canonical;
pub mod clock;
pub mod contention;
#[cfg(feature = "contract")]
pub mod contract;
pub mod dead_letters;
pub mod emf;
pub mod ids;
pub mod intent;
pub mod jobs;
pub mod ledger;
pub mod operator;
pub mod queue;
pub mod rate;
pub mod records;
pub mod seal;
pub mod slots;
pub mod trace;
pub mod work;

pub use canonical::{canonical_digest, canonical_json, canonical_object_digest, sha256_hex};
pub use clock::{Clock, ManualClock, SystemClock};
pub use ids::{Ids, RandomIds};
pub use jobs::{Created, Job, JobRef, JobStatus, JobStore, Lease};
pub use queue::{Queue, QueueMessage, WorkMessage};
pub use records::{
    Cause, Owner, Record, RecordKey, RecordStore, StoreError, StoreFuture, TransactError,
    TransactFuture, Write,
};
pub use seal::constant_time_eq;
pub use trace::TraceContext;
pub use work::{
    Engine, EngineConfig, InFlightLimits, JobContext, JobFailure, JobRunner, Processed,
    ReconcileReport, StartError, WorkError, Worker,
};
