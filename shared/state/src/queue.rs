//! The work queue port: at-least-once delivery with visibility timeouts and dead-lettering.
//! Adapters: SQLite (`relevo-embedded`), SQS (`relevo-aws`). In Lambda the worker is fed by the
//! SQS event source mapping instead of `receive`; the same message bodies flow either way.

use serde::{Deserialize, Serialize};

use crate::jobs::JobRef;
use crate::records::StoreFuture;
use crate::trace::TraceContext;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueMessage {
    pub id: String,
    /// Names this delivery; needed to delete the message or change its visibility.
    pub receipt: String,
    pub body: String,
    /// 1 on the first delivery.
    pub receive_count: u32,
}

pub trait Queue: Send + Sync {
    fn send<'a>(&'a self, body: &'a str) -> StoreFuture<'a, ()>;

    /// Sends `body` with the trace that caused it, where the queue carries one (SQS: the
    /// `AWSTraceHeader` system attribute). A queue without trace headers just sends.
    fn send_traced<'a>(
        &'a self,
        body: &'a str,
        trace: Option<&'a TraceContext>,
    ) -> StoreFuture<'a, ()> {
        let _ = trace;
        self.send(body)
    }

    /// Up to `max` visible messages, each hidden for `visibility_secs` from `now`. A message
    /// delivered more than the queue's limit goes to the dead-letter queue instead.
    fn receive<'a>(
        &'a self,
        max: usize,
        visibility_secs: u64,
        now: u64,
    ) -> StoreFuture<'a, Vec<QueueMessage>>;

    fn delete<'a>(&'a self, receipt: &'a str) -> StoreFuture<'a, ()>;

    /// Makes a received message visible again after `visibility_secs` from `now` (0: at once).
    fn change_visibility<'a>(
        &'a self,
        receipt: &'a str,
        visibility_secs: u64,
        now: u64,
    ) -> StoreFuture<'a, ()>;
}

/// The body of a work message: which job to run. Versioned so old messages stay readable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkMessage {
    pub v: u32,
    pub job: JobRef,
}

impl WorkMessage {
    pub fn new(job: JobRef) -> Self {
        WorkMessage { v: 1, job }
    }

    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn decode(body: &str) -> Option<Self> {
        serde_json::from_str::<WorkMessage>(body)
            .ok()
            .filter(|m| m.v == 1)
    }
}
