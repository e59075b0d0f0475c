//! Request rates over the store: at most `limit` admissions per key per fixed window, counted
//! across every instance, because the count lives in one record per (key, window).
//!
//! The record of a window is `RecordKey(Owner::tenant(tenant), "rate", "<scope>/<secs>@<start>")`,
//! where `start` is the window's first second (`now - now % secs`). It holds
//! `{"count": n}` and expires at the window's end, so a window's record is never read again
//! once it is over and a TTL sweep removes it.
//!
//! Invariants:
//! - Across any number of instances, at most `limit` requests are admitted per key per window:
//!   an admission is a conditional write only — a create at `count: 1` (refused if the record
//!   exists) or an update to `count + 1` at the revision where `count < limit` was read
//!   (refused if anyone wrote since). A lost write decides again on the fresh record (which the
//!   refusal carries), so no two admissions can be counted as one.
//! - Bounded: after [`ATTEMPTS`] lost writes in a row the answer is [`RateError::Contention`],
//!   retryable, never an admission that was not counted.
//! - A refusal writes nothing: a caller over its rate costs one consistent read per request and
//!   cannot grow the record.
//! - A write whose outcome is unknown (the store timed out) is answered as a retryable failure:
//!   it may have spent a unit without admitting, never admitted without counting.
//! - Fixed windows: a caller may spend one window's budget at its end and the next one's at its
//!   start, so any span of `secs` seconds admits at most `2 × limit`; each window admits at most
//!   `limit`.

use serde_json::{Value, json};

use crate::{Owner, Record, RecordKey, RecordStore, StoreError};

/// Conditional writes lost in a row before giving up as contention. More than
/// [`crate::contention::ATTEMPTS`]: every racer of a hot key wants the same record, and each
/// write has exactly one winner until the limit is reached (then every racer is answered at once).
pub const ATTEMPTS: u32 = 16;

/// The record kind of rate windows.
pub const KIND: &str = "rate";

/// At most `limit` admissions per `window_secs` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub limit: u32,
    pub window_secs: u64,
}

impl Rate {
    /// The first second of the window `now` falls in.
    pub fn window_start(&self, now: u64) -> u64 {
        let secs = self.window_secs.max(1);
        now - now % secs
    }

    /// The first second of the next window.
    pub fn window_end(&self, now: u64) -> u64 {
        self.window_start(now) + self.window_secs.max(1)
    }
}

/// What [`admit`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Counted: this request is the `count`-th of its window.
    Allowed { count: u32 },
    /// The window's `limit` is spent: the next window starts in `retry_after_secs` (at least 1).
    Limited { retry_after_secs: u64 },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateError {
    #[error("counting the request rate of {scope}: {source}")]
    Store {
        scope: String,
        #[source]
        source: StoreError,
    },
    /// Other requests kept winning the conditional write on the window's record: retryable.
    #[error("the request rate of {0} kept changing under concurrent requests")]
    Contention(String),
}

/// The record that counts `scope` of `tenant` in the window `now` falls in.
pub fn window_key(tenant: &str, scope: &str, rate: Rate, now: u64) -> RecordKey {
    let id = format!("{scope}/{}@{}", rate.window_secs.max(1), rate.window_start(now));
    RecordKey::new(Owner::tenant(tenant), KIND, &id)
}

fn count_of(record: &Record) -> u32 {
    record.body.get("count").and_then(Value::as_u64).map_or(u32::MAX, |c| u32::try_from(c).unwrap_or(u32::MAX))
}

/// Counts one request of `scope` (e.g. `tenant`, `tool:cart_checkout`) for `tenant` at `now`, if
/// its window has room.
pub async fn admit(
    records: &dyn RecordStore,
    tenant: &str,
    scope: &str,
    rate: Rate,
    now: u64,
) -> Result<Admission, RateError> {
    let key = window_key(tenant, scope, rate, now);
    let end = rate.window_end(now);
    let limited = Admission::Limited { retry_after_secs: end.saturating_sub(now).max(1) };
    if rate.limit == 0 {
        return Ok(limited);
    }
    let failed = |source: StoreError| RateError::Store { scope: scope.to_string(), source };
    // What the last refusal showed of the record (it is as fresh as a read): decide on it at
    // once. `None`: read the record (again, after a pause that spreads the racers out: deciding
    // on a record seen before a pause would lose again to whoever wrote meanwhile). Reading first
    // keeps a refusal a read only, where a create-first would spend a failed write on it.
    let mut known: Option<Option<Record>> = None;
    for attempt in 0..ATTEMPTS {
        let current = match known.take() {
            Some(current) => current,
            None => {
                crate::contention::pause(attempt).await;
                records.get(&key, now).await.map_err(failed)?
            }
        };
        let written = match &current {
            None => records.create(&key, &json!({ "count": 1 }), Some(end), now).await,
            Some(record) => {
                let count = count_of(record);
                if count >= rate.limit {
                    return Ok(limited);
                }
                records.update(&key, record.revision, &json!({ "count": count + 1 }), now).await
            }
        };
        match written {
            Ok(record) => return Ok(Admission::Allowed { count: count_of(&record) }),
            // Another request created the window first: its record is fresh, decide on it now.
            Err(StoreError::AlreadyExists(fresh)) => known = Some(Some(*fresh)),
            // Another request counted first: read again after a pause.
            Err(StoreError::Conflict { .. }) => known = None,
            // Gone between the read and the write (a sweep, or the window just ended).
            Err(StoreError::NotFound) => known = Some(None),
            Err(other) => return Err(failed(other)),
        }
    }
    Err(RateError::Contention(scope.to_string()))
}
