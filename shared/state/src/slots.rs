//! Bounded holders over the store: at most `max` live holders of one key (a principal's listen
//! streams, its sessions, its jobs in flight), counted across every instance, because the count
//! lives in one record.
//!
//! Invariants: a holder is added only by a conditional write on the record's revision that sees
//! fewer than `max` live holders, so racing acquirers cannot exceed `max`; every holder carries
//! its own expiry, so one that crashed without releasing frees its slot when it lapses; the
//! record never holds more than `max` entries.
//!
//! The record expires with its last holder: every write sets its expiry to the latest `until`
//! of the live holders it keeps ([`RecordStore::update_expiring`]), and the release of the last
//! one expires it at once. So a principal that came once leaves no record behind (the store's
//! TTL sweep removes it), whether its holders ended cleanly or their instance died.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{RecordKey, RecordStore, StoreError};

/// Conditional writes lost in a row before giving up as contention.
const ATTEMPTS: u32 = 8;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Holder {
    id: String,
    until: u64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SlotError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Other acquirers kept winning the conditional write: retryable.
    #[error("the slots of {0} kept changing under concurrent requests")]
    Contention(String),
}

/// What [`acquire`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// `holder` holds a slot (it may have held one already).
    Held,
    /// `max` live holders already: wait for one to end.
    Full,
}

fn live(body: &serde_json::Value, now: u64) -> Vec<Holder> {
    serde_json::from_value::<Vec<Holder>>(body["holders"].clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|h| h.until > now)
        .collect()
}

/// When the last of `holders` lapses (`None` without one).
fn last_until(holders: &[Holder]) -> Option<u64> {
    holders.iter().map(|h| h.until).max()
}

/// Takes a slot of `key` for `holder` until `until`, if fewer than `max` are held.
pub async fn acquire(
    records: &dyn RecordStore,
    key: &RecordKey,
    holder: &str,
    until: u64,
    max: usize,
    now: u64,
) -> Result<Acquired, SlotError> {
    for attempt in 0..ATTEMPTS {
        crate::contention::pause(attempt).await;
        let current = records.get(key, now).await?;
        let mut holders = current
            .as_ref()
            .map(|r| live(&r.body, now))
            .unwrap_or_default();
        if let Some(mine) = holders.iter_mut().find(|h| h.id == holder) {
            mine.until = mine.until.max(until);
        } else if holders.len() >= max {
            return Ok(Acquired::Full);
        } else {
            holders.push(Holder {
                id: holder.into(),
                until,
            });
        }
        let body = json!({ "holders": holders });
        let expires_at = last_until(&holders);
        let written = match &current {
            Some(record) => records
                .update_expiring(key, record.revision, &body, expires_at, now)
                .await
                .map(|_| ()),
            None => records
                .create(key, &body, expires_at, now)
                .await
                .map(|_| ()),
        };
        match written {
            Ok(()) => return Ok(Acquired::Held),
            Err(
                StoreError::Conflict { .. } | StoreError::AlreadyExists(_) | StoreError::NotFound,
            ) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(SlotError::Contention(key.kind.clone()))
}

/// The live holders of `key`.
pub async fn holders(
    records: &dyn RecordStore,
    key: &RecordKey,
    now: u64,
) -> Result<Vec<String>, StoreError> {
    Ok(records
        .get(key, now)
        .await?
        .map(|r| live(&r.body, now))
        .unwrap_or_default()
        .into_iter()
        .map(|h| h.id)
        .collect())
}

/// Gives `holder`'s slot back (nothing if it holds none).
pub async fn release(
    records: &dyn RecordStore,
    key: &RecordKey,
    holder: &str,
    now: u64,
) -> Result<(), SlotError> {
    for attempt in 0..ATTEMPTS {
        crate::contention::pause(attempt).await;
        let Some(current) = records.get(key, now).await? else {
            return Ok(());
        };
        let holders: Vec<Holder> = live(&current.body, now)
            .into_iter()
            .filter(|h| h.id != holder)
            .collect();
        // No holder left: the record expires now (and is swept).
        let expires_at = last_until(&holders).or(Some(now));
        match records
            .update_expiring(
                key,
                current.revision,
                &json!({ "holders": holders }),
                expires_at,
                now,
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(StoreError::Conflict { .. }) => continue,
            Err(StoreError::NotFound) => return Ok(()),
            Err(other) => return Err(other.into()),
        }
    }
    Err(SlotError::Contention(key.kind.clone()))
}
