//! One record per intent: a create that a client may retry (its answer lost to a timeout or a
//! 502) names its record by the client's idempotency key, so the retry finds the first record
//! instead of making a second one.
//!
//! Invariants: the record id is derived from the key and its owner (SHA-256 over the
//! length-prefixed owner, kind and key), so one principal's key names one record, and two
//! principals choosing the same key get different ids and the create is one conditional write — there is no key record that a
//! crash could leave without its effect, or the other way round. The record remembers the digest
//! of the arguments it was created with: the same key with other arguments is refused, never
//! answered with the first record. Keys are scoped by the record's owner (tenant and principal),
//! so one principal's key never names another's record.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{Owner, Record, RecordKey, RecordStore, StoreError};

/// The body field that holds the intent's digest.
pub const INTENT_FIELD: &str = "intent";

/// The longest idempotency key accepted.
pub const MAX_KEY_CHARS: usize = 64;

/// The record id an idempotency key names for `owner`'s records of `kind`: the owner is part of
/// it, so two principals choosing the same key get different ids.
pub fn keyed_id(owner: &Owner, kind: &str, key: &str) -> String {
    // The storage key is length-prefixed: no choice of parts makes two of them collide.
    let named = RecordKey::new(owner.clone(), kind, key).storage_key();
    let digest = Sha256::new()
        .chain_update("idempotency-key")
        .chain_update([0])
        .chain_update(named)
        .finalize();
    B64.encode(&digest[..16])
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IntentError {
    #[error("idempotencyKey must be 1 to {MAX_KEY_CHARS} characters")]
    BadKey,
    #[error("idempotency key {0:?} was already used with other arguments")]
    Mismatch(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What [`create_once`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Once {
    Created(Record),
    /// The key's record existed with the same arguments: the first answer's record.
    Replayed(Record),
}

impl Once {
    pub fn record(&self) -> &Record {
        match self {
            Once::Created(record) | Once::Replayed(record) => record,
        }
    }
}

/// Checks an optional idempotency key.
pub fn check_key(key: Option<&str>) -> Result<(), IntentError> {
    match key {
        Some(key) if key.is_empty() || key.chars().count() > MAX_KEY_CHARS => {
            Err(IntentError::BadKey)
        }
        _ => Ok(()),
    }
}

/// Creates `key`'s record with `body` (plus the intent `digest`), or finds the one the same
/// intent created before. `key` must come from [`keyed_id`] when the client gave a key.
pub async fn create_once(
    records: &dyn RecordStore,
    key: &RecordKey,
    client_key: &str,
    digest: &str,
    body: &Value,
    expires_at: Option<u64>,
    now: u64,
) -> Result<Once, IntentError> {
    let mut body = body.clone();
    body[INTENT_FIELD] = Value::String(digest.to_string());
    match records.create(key, &body, expires_at, now).await {
        Ok(record) => Ok(Once::Created(record)),
        Err(StoreError::AlreadyExists(first)) if first.body[INTENT_FIELD] == digest => {
            Ok(Once::Replayed(*first))
        }
        Err(StoreError::AlreadyExists(_)) => Err(IntentError::Mismatch(client_key.to_string())),
        Err(other) => Err(other.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_names_one_record_per_kind_and_owner() {
        let alice = Owner::personal("acme", "alice");
        assert_eq!(
            keyed_id(&alice, "cart", "k1"),
            keyed_id(&alice, "cart", "k1")
        );
        assert_ne!(
            keyed_id(&alice, "cart", "k1"),
            keyed_id(&alice, "cart", "k2")
        );
        assert_ne!(
            keyed_id(&alice, "cart", "k1"),
            keyed_id(&alice, "note", "k1")
        );
        assert_eq!(keyed_id(&alice, "cart", "k1").len(), 22);
    }

    #[test]
    fn two_owners_choosing_one_key_get_different_ids() {
        let (alice, bob) = (
            Owner::personal("acme", "alice"),
            Owner::personal("acme", "bob"),
        );
        assert_ne!(keyed_id(&alice, "cart", "k1"), keyed_id(&bob, "cart", "k1"));
        assert_ne!(
            keyed_id(&alice, "cart", "k1"),
            keyed_id(&Owner::personal("other", "alice"), "cart", "k1")
        );
        assert_ne!(
            keyed_id(&alice, "cart", "k1"),
            keyed_id(&Owner::tenant("acme"), "cart", "k1")
        );
    }

    #[test]
    fn keys_are_bounded() {
        assert_eq!(check_key(Some("")), Err(IntentError::BadKey));
        assert_eq!(check_key(Some(&"x".repeat(65))), Err(IntentError::BadKey));
        assert_eq!(check_key(Some("retry-1")), Ok(()));
        assert_eq!(check_key(None), Ok(()));
    }
}
