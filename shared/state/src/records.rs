//! Revisioned records with conditional writes: the port every business store implements.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// Who a record belongs to: always a tenant, and a subject when the record is personal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    pub tenant: String,
    pub subject: Option<String>,
}

impl Owner {
    /// A record only this principal may see.
    pub fn personal(tenant: &str, subject: &str) -> Self {
        Owner { tenant: tenant.into(), subject: Some(subject.into()) }
    }

    /// A record every principal of the tenant may see.
    pub fn tenant(tenant: &str) -> Self {
        Owner { tenant: tenant.into(), subject: None }
    }
}

/// The full key of a record: owner, kind and id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordKey {
    pub owner: Owner,
    pub kind: String,
    pub id: String,
}

impl RecordKey {
    pub fn new(owner: Owner, kind: &str, id: &str) -> Self {
        RecordKey { owner, kind: kind.into(), id: id.into() }
    }

    /// The storage key: length-prefixed parts, tenant first, so no crafted id can make two keys
    /// collide or step into another tenant's range (`t5:acme|p5:alice|k4:note|i3:abc`).
    pub fn storage_key(&self) -> String {
        let part = |tag: char, value: &str| format!("{tag}{}:{value}", value.len());
        let mut parts = vec![part('t', &self.owner.tenant)];
        parts.push(match &self.owner.subject {
            Some(subject) => part('p', subject),
            None => "p-".to_string(),
        });
        parts.push(part('k', &self.kind));
        parts.push(part('i', &self.id));
        parts.join("|")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub key: RecordKey,
    /// Starts at 1 and grows by one on every write.
    pub revision: u64,
    pub body: Value,
    /// Unix seconds after which the record reads as absent (and a TTL sweep may delete it).
    pub expires_at: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    #[error("a record with this key already exists")]
    AlreadyExists(Box<Record>),
    #[error("the record does not exist")]
    NotFound,
    #[error("the record changed: expected revision {expected}, found {}", current.revision)]
    Conflict { expected: u64, current: Box<Record> },
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    /// The store did not answer within the operation timeout: the write may or may not have
    /// been applied (a conditional retry finds out).
    #[error("the store did not answer in time: {0}")]
    TimedOut(String),
}

pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The most writes one transaction may hold (DynamoDB's `TransactWriteItems` limit).
pub const MAX_TRANSACTION_WRITES: usize = 100;

/// One conditional write of a [`RecordStore::transact`] call.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Creates `key` at revision 1 if no live record has it.
    Create { key: RecordKey, body: Value, expires_at: Option<u64> },
    /// Replaces the body of the live record at `expected_revision` (its expiry is kept).
    Update { key: RecordKey, expected_revision: u64, body: Value },
    /// Writes nothing; holds only if the live record is at `expected_revision` (0: no live
    /// record). A refusal is `Conflict` (or `AlreadyExists` when 0 was expected).
    Check { key: RecordKey, expected_revision: u64 },
    /// Removes the live record at `expected_revision` (a refusal is `Conflict` or `NotFound`);
    /// its revision afterwards reads as 0.
    Delete { key: RecordKey, expected_revision: u64 },
}

impl Write {
    pub fn key(&self) -> &RecordKey {
        match self {
            Write::Create { key, .. }
            | Write::Update { key, .. }
            | Write::Check { key, .. }
            | Write::Delete { key, .. } => key,
        }
    }
}

/// Why a transaction wrote nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TransactError {
    /// The condition of write `index` failed (`AlreadyExists`, `Conflict` or `NotFound`, with the
    /// current record where there is one); no write of the transaction happened.
    #[error("write {index} of the transaction was refused: {cause}")]
    Refused { index: usize, cause: StoreError },
    /// Empty, too large, or two writes to one key: refused before touching the store.
    #[error("invalid transaction: {0}")]
    Invalid(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for TransactError {
    fn from(error: StoreError) -> Self {
        TransactError::Store(error)
    }
}

/// Checks the shape every adapter refuses alike: 1..=100 writes, each key once.
pub fn validate_transaction(writes: &[Write]) -> Result<(), TransactError> {
    if writes.is_empty() || writes.len() > MAX_TRANSACTION_WRITES {
        return Err(TransactError::Invalid(format!("{} writes (1 to {MAX_TRANSACTION_WRITES} allowed)", writes.len())));
    }
    let mut keys: Vec<String> = writes.iter().map(|w| w.key().storage_key()).collect();
    keys.sort();
    if keys.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(TransactError::Invalid("two writes to one key".into()));
    }
    Ok(())
}

/// The revision each write of a transaction left, in order.
pub type TransactFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<u64>, TransactError>> + Send + 'a>>;

/// Conditional reads and writes of records. Every write is conditional; none is blind.
pub trait RecordStore: Send + Sync {
    /// Writes `body` as revision 1 if no live record has this key; otherwise `AlreadyExists` with
    /// the current record (so an idempotent caller can compare instead of reading again).
    fn create<'a>(
        &'a self,
        key: &'a RecordKey,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record>;

    /// The live record, or `None` for absent and expired alike.
    fn get<'a>(&'a self, key: &'a RecordKey, now: u64) -> StoreFuture<'a, Option<Record>>;

    /// Replaces the body if the live record is at `expected_revision`; the new revision is one more.
    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        expected_revision: u64,
        body: &'a Value,
        now: u64,
    ) -> StoreFuture<'a, Record>;

    /// Applies every write or none (all conditions are checked together, atomically). Returns the
    /// new revision of each write, in order. A refused condition names the write and carries the current
    /// record, so the caller can report it without a second read.
    fn transact<'a>(&'a self, writes: &'a [Write], now: u64) -> TransactFuture<'a>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_keys_start_with_the_tenant_and_cannot_be_forged_by_ids() {
        let a = RecordKey::new(Owner::personal("acme", "alice"), "note", "x|p5:bob");
        let b = RecordKey::new(Owner::personal("acme", "alice|p5:bob"), "note", "x");
        assert_ne!(a.storage_key(), b.storage_key());
        assert!(a.storage_key().starts_with("t4:acme|"));
        let shared = RecordKey::new(Owner::tenant("acme"), "note", "x");
        assert_ne!(shared.storage_key(), RecordKey::new(Owner::personal("acme", "-"), "note", "x").storage_key());
    }
}
