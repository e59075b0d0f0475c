//! Request rates over the store: at most `limit` admissions per key per fixed window, counted
//! across every instance, because the count lives in one record per (key, window).
//!
//! The record of a window is `RecordKey(Owner::tenant(tenant), "rate", "<scope>/<secs>@<start>")`,
//! where `start` is the window's first second (`now - now % secs`). It is a counter record of
//! [`RecordStore::count_up`]: it reads as `{"count": n}` (SQLite keeps that body, DynamoDB a
//! numeric `count` attribute) and expires at the window's end (`expires_at`, the table's TTL
//! attribute), so a window's record is never counted again once it is over and a sweep removes it.
//!
//! Threat model: the callers of one tenant (honest bursts, or one leaked token) race for the
//! same window record from every instance at once; they can spend the window's budget and be
//! refused (429), but cannot be admitted beyond it, cannot make the store refuse other tenants'
//! windows, and cannot make the quota answer anything but admitted, limited or a store failure.
//!
//! Invariants:
//! - Across any number of instances, at most `limit` requests are admitted per key per window:
//!   an admission is one atomic conditional write, [`RecordStore::count_up_by`] (DynamoDB: one
//!   `UpdateItem` that adds `n` under `count <= limit - n`; SQLite: one `INSERT … ON CONFLICT
//!   DO UPDATE … WHERE count <= limit - n RETURNING`). Each admission gets its own count, 1 to
//!   `limit`, so no two admissions can be counted as one; one that costs several units
//!   ([`admit_units`]) is counted whole or refused whole, never half way.
//! - No read, no retry loop, no contention: concurrent requests on one hot window are each
//!   answered by their single write, admitted or [`Admission::Limited`]; a burst of honest callers
//!   never gets a retryable "contention" from the quota itself.
//! - A refusal writes nothing: a caller over its rate costs one refused conditional write per
//!   request and cannot grow the record.
//! - A store failure is [`RateError::Store`] (retryable for the caller). A write whose outcome is
//!   unknown (the store timed out) may have spent a unit without admitting, never admitted
//!   without counting.
//! - Fixed windows: a caller may spend one window's budget at its end and the next one's at its
//!   start, so any span of `secs` seconds admits at most `2 × limit`; each window admits at most
//!   `limit`.

use crate::{Owner, RecordKey, RecordStore, StoreError};

mod lease;

pub use lease::{
    Counter, LEASE_HORIZON_MS, LEASE_SHARE, LeaseStats, Leases, MAX_LEASE, MAX_LEASES,
    MemoryCounter, lease_cap,
};

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

/// Why a request's rate could not be counted (the request was not admitted).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateError {
    /// The store failed or did not answer in time: retryable.
    #[error("counting the request rate of {scope}: {source}")]
    Store {
        scope: String,
        #[source]
        source: StoreError,
    },
}

/// The record that counts `scope` of `tenant` in the window `now` falls in.
pub fn window_key(tenant: &str, scope: &str, rate: Rate, now: u64) -> RecordKey {
    let id = format!(
        "{scope}/{}@{}",
        rate.window_secs.max(1),
        rate.window_start(now)
    );
    RecordKey::new(Owner::tenant(tenant), KIND, &id)
}

/// Counts one request of `scope` (e.g. `tenant`, `tool:my_tool`) for `tenant` at `now`, if
/// its window has room: one call to the store, whatever the load.
pub async fn admit(
    records: &dyn RecordStore,
    tenant: &str,
    scope: &str,
    rate: Rate,
    now: u64,
) -> Result<Admission, RateError> {
    admit_units(records, tenant, scope, rate, 1, now).await
}

/// Counts `units` (at least 1) of `scope` for `tenant` at `now` in one conditional write
/// ([`RecordStore::count_up_by`]): all of them if the window has room for all, else none
/// ([`Admission::Limited`], nothing written). A request that makes the deployment do the work
/// of several (a listen poll that runs several handlers) pays for each.
pub async fn admit_units(
    records: &dyn RecordStore,
    tenant: &str,
    scope: &str,
    rate: Rate,
    units: u32,
    now: u64,
) -> Result<Admission, RateError> {
    let end = rate.window_end(now);
    let limited = Admission::Limited {
        retry_after_secs: end.saturating_sub(now).max(1),
    };
    if rate.limit == 0 {
        return Ok(limited);
    }
    let key = window_key(tenant, scope, rate, now);
    match records
        .count_up_by(&key, units.max(1), rate.limit, Some(end), now)
        .await
    {
        Ok(Some(count)) => Ok(Admission::Allowed { count }),
        Ok(None) => Ok(limited),
        Err(source) => Err(RateError::Store {
            scope: scope.to_string(),
            source,
        }),
    }
}
