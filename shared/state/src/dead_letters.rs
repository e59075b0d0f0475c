//! The dead-letter queue, for operators: what it holds, and sending messages back to the work
//! queue ("redrive"). Adapters: SQLite (`relevo-embedded`, its `dead_letters` table), SQS
//! (`relevo-aws`: receive from the dead-letter queue, send to the work queue, delete).
//!
//! Invariants:
//! - A redriven message is sent to the work queue before it is removed from the dead letters, so
//!   a failure between the two leaves it in both places (delivered twice), never in neither. Work
//!   messages are safe to deliver twice: the worker's claim is a conditional write on the job.
//! - A redriven message starts again with no deliveries counted, so it gets the queue's full
//!   delivery budget before it is dead-lettered again.
//!
//! An operator path, like [`crate::operator`]: no handler calls it.

use crate::records::StoreFuture;

/// One message parked in the dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub id: String,
    pub body: String,
    /// Deliveries counted before it was dead-lettered (SQS: as the dead-letter queue reports it).
    pub receive_count: u32,
}

/// Which dead letters to redrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redrive<'a> {
    All,
    /// The message with this id.
    One(&'a str),
}

pub trait DeadLetters: Send + Sync {
    /// Up to `limit` dead letters, oldest first where the backend knows the order.
    fn list_dead_letters<'a>(&'a self, limit: usize) -> StoreFuture<'a, Vec<DeadLetter>>;

    /// Moves the chosen dead letters back to the work queue; returns the ids moved (empty when
    /// none matched).
    fn redrive<'a>(&'a self, which: Redrive<'a>) -> StoreFuture<'a, Vec<String>>;
}
