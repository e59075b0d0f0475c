//! Revisioned records with conditional writes: the port every business store implements.

use std::borrow::Cow;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

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
        Owner {
            tenant: tenant.into(),
            subject: Some(subject.into()),
        }
    }

    /// A record every principal of the tenant may see.
    pub fn tenant(tenant: &str) -> Self {
        Owner {
            tenant: tenant.into(),
            subject: None,
        }
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
        RecordKey {
            owner,
            kind: kind.into(),
            id: id.into(),
        }
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

/// Why a store call failed: what the adapter was doing (its context) and, where there is one,
/// the underlying error (the AWS SDK's, SQLite's, serde's) kept whole as [`Error::source`], so a
/// caller can walk the chain and downcast to it.
///
/// `Display` tells the context and the whole source chain (`context: error: its source…`,
/// skipping a link whose text the previous one already ends with), because logs print only
/// `Display`; a reporter that also walks [`Error::source`] sees the same text again.
///
/// Equality compares that text only (two causes are equal when they read the same): the source
/// errors themselves need not be comparable, and tests compare store errors.
#[derive(Debug, Clone)]
pub struct Cause {
    context: Cow<'static, str>,
    source: Option<Arc<dyn Error + Send + Sync + 'static>>,
}

impl Cause {
    /// A failure we describe ourselves (no underlying error).
    pub fn new(context: impl Into<Cow<'static, str>>) -> Self {
        Cause {
            context: context.into(),
            source: None,
        }
    }

    /// `error`, kept as the source, with what the adapter was doing (may be empty when the
    /// error says it all).
    pub fn with_source(
        context: impl Into<Cow<'static, str>>,
        error: impl Error + Send + Sync + 'static,
    ) -> Self {
        Cause {
            context: context.into(),
            source: Some(Arc::new(error)),
        }
    }

    /// What the adapter was doing.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The underlying error, if any (downcast it to the adapter's error type).
    pub fn error(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl From<&'static str> for Cause {
    fn from(context: &'static str) -> Self {
        Cause::new(context)
    }
}

impl From<String> for Cause {
    fn from(context: String) -> Self {
        Cause::new(context)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.context)?;
        let mut last = self.context.to_string();
        let mut next = self.source.as_deref().map(|e| e as &(dyn Error + 'static));
        while let Some(error) = next {
            let text = error.to_string();
            if !text.is_empty() && !last.ends_with(&text) {
                if !last.is_empty() {
                    f.write_str(": ")?;
                }
                f.write_str(&text)?;
                last = text;
            }
            next = error.source();
        }
        Ok(())
    }
}

impl Error for Cause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

/// Compares what the causes say (see [`Cause`]).
impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

/// Equality: `Unavailable` and `TimedOut` compare by variant and by what their [`Cause`] says,
/// not by the identity of the underlying error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    #[error("a record with this key already exists")]
    AlreadyExists(Box<Record>),
    #[error("the record does not exist")]
    NotFound,
    #[error("the record changed: expected revision {expected}, found {}", current.revision)]
    Conflict { expected: u64, current: Box<Record> },
    /// The store failed (unreachable, throttled, refused the request, returned what cannot be
    /// read): nothing is known to have been written.
    #[error("the store is unavailable: {0}")]
    Unavailable(#[source] Cause),
    /// The store did not answer within the operation timeout: the write may or may not have
    /// been applied (a conditional retry finds out).
    #[error("the store did not answer in time: {0}")]
    TimedOut(#[source] Cause),
}

impl StoreError {
    /// [`StoreError::Unavailable`] caused by `error` (kept as the source), while doing `context`.
    pub fn unavailable(
        context: impl Into<Cow<'static, str>>,
        error: impl Error + Send + Sync + 'static,
    ) -> Self {
        StoreError::Unavailable(Cause::with_source(context, error))
    }

    /// [`StoreError::TimedOut`] caused by `error` (kept as the source), while doing `context`.
    pub fn timed_out(
        context: impl Into<Cow<'static, str>>,
        error: impl Error + Send + Sync + 'static,
    ) -> Self {
        StoreError::TimedOut(Cause::with_source(context, error))
    }
}

pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The most writes one transaction may hold (DynamoDB's `TransactWriteItems` limit).
pub const MAX_TRANSACTION_WRITES: usize = 100;

/// One conditional write of a [`RecordStore::transact`] call.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Creates `key` at revision 1 if no live record has it.
    Create {
        key: RecordKey,
        body: Value,
        expires_at: Option<u64>,
    },
    /// Replaces the body of the live record at `expected_revision` (its expiry is kept).
    Update {
        key: RecordKey,
        expected_revision: u64,
        body: Value,
    },
    /// [`Write::Update`] that also sets the record's expiry to `expires_at`: sets it, moves it
    /// (earlier or later), or removes it (`None`: never expires). A time at or before the
    /// transaction's `now` makes the record read as absent at once.
    UpdateExpiring {
        key: RecordKey,
        expected_revision: u64,
        body: Value,
        expires_at: Option<u64>,
    },
    /// Writes nothing; holds only if the live record is at `expected_revision` (0: no live
    /// record). A refusal is `Conflict` (or `AlreadyExists` when 0 was expected).
    Check {
        key: RecordKey,
        expected_revision: u64,
    },
    /// Removes the live record at `expected_revision` (a refusal is `Conflict` or `NotFound`);
    /// its revision afterwards reads as 0.
    Delete {
        key: RecordKey,
        expected_revision: u64,
    },
}

impl Write {
    pub fn key(&self) -> &RecordKey {
        match self {
            Write::Create { key, .. }
            | Write::Update { key, .. }
            | Write::UpdateExpiring { key, .. }
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
    Refused {
        index: usize,
        #[source]
        cause: StoreError,
    },
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
        return Err(TransactError::Invalid(format!(
            "{} writes (1 to {MAX_TRANSACTION_WRITES} allowed)",
            writes.len()
        )));
    }
    let mut keys: Vec<String> = writes.iter().map(|w| w.key().storage_key()).collect();
    keys.sort();
    if keys.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(TransactError::Invalid("two writes to one key".into()));
    }
    Ok(())
}

/// The revision each write of a transaction left, in order.
pub type TransactFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<u64>, TransactError>> + Send + 'a>>;

/// Conditional reads and writes of records. Every write is conditional; none is blind.
///
/// A write may reach the store twice while its caller made one call (the AWS SDK sends an attempt
/// again when the first one's answer was lost, though the store applied it). An adapter answers
/// each call by its own outcome: a second send refused because the first one landed is the call's
/// success (same revision, applied once), never `Conflict` or `AlreadyExists`
/// (`contract::echo_contract`, with the `contract` feature). Another call's write is still
/// refused.
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

    /// Counts one more on the counter record `key`, if its count is below `limit`, in one atomic
    /// conditional write: `Some(new count)` when counted, `None` when the count has reached
    /// `limit` (or `limit` is 0), and then nothing is written. No live record counts as 0: the
    /// first call creates it at count 1, expiring at `expires_at` (later calls keep that expiry).
    /// The record reads (`get`) as the body `{"count": n}`, its revision one more on each count.
    /// Never a conflict: every concurrent caller is answered at once, at most `limit` of them
    /// with `Some`, each with its own count. `key` must name a counter only (no other write to it).
    /// [`RecordStore::count_up_by`] with `n` = 1.
    fn count_up<'a>(
        &'a self,
        key: &'a RecordKey,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        self.count_up_by(key, 1, limit, expires_at, now)
    }

    /// Counts `n` more on the counter record `key` in one atomic conditional write, if the
    /// count stays within `limit` (count + `n` <= `limit`): all `n` units or none. `Some(new
    /// count)` when counted; `None` when they do not fit (or `limit` is 0), and then nothing is
    /// written. Otherwise as [`RecordStore::count_up`]: no live record counts as 0 (the first
    /// call creates it at count `n`, expiring at `expires_at`, later calls keep that expiry), the
    /// revision grows by one per call, and concurrent callers never conflict: together they are
    /// counted at most `limit`. `n` = 0 is refused as `Unavailable` before touching the store.
    ///
    /// Every adapter implements it with one write (DynamoDB: `UpdateItem` `ADD :n` under
    /// `count <= limit - n`; SQLite: one `INSERT … ON CONFLICT DO UPDATE … WHERE`), never as
    /// `n` calls of one unit, which could stop half way.
    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        n: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>>;

    /// The live records of `keys` in one read where the store can (DynamoDB `BatchGetItem`,
    /// one SQLite query): `None` for an absent or expired one, in the order of `keys`. At most
    /// [`MAX_BATCH_READ`] keys; more is refused as `Unavailable` before touching the store.
    /// The default reads them one by one.
    fn get_many<'a>(
        &'a self,
        keys: &'a [RecordKey],
        now: u64,
    ) -> StoreFuture<'a, Vec<Option<Record>>> {
        Box::pin(async move {
            check_batch(keys)?;
            let mut found = Vec::with_capacity(keys.len());
            for key in keys {
                found.push(self.get(key, now).await?);
            }
            Ok(found)
        })
    }

    /// [`RecordStore::update`] that also sets the record's expiry to `expires_at` (`None`:
    /// never; a time at or before `now`: the record reads as absent at once and is swept), so a
    /// record shared by holders of different lifetimes can expire with its longest-lived one.
    /// The default keeps the expiry, as `update` does: a store that cannot move it.
    fn update_expiring<'a>(
        &'a self,
        key: &'a RecordKey,
        expected_revision: u64,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        let _ = expires_at;
        self.update(key, expected_revision, body, now)
    }
}

/// The most keys one [`RecordStore::get_many`] may read (DynamoDB's `BatchGetItem` limit).
pub const MAX_BATCH_READ: usize = 100;

/// Refuses a [`RecordStore::count_up_by`] of no unit: `Ok(false)` when `n` units cannot fit
/// under `limit` at all (answer `None` without touching the store), `Ok(true)` when they might.
pub fn check_count(n: u32, limit: u32) -> Result<bool, StoreError> {
    if n == 0 {
        return Err(StoreError::Unavailable(Cause::new(
            "counting up by 0 units",
        )));
    }
    Ok(n <= limit)
}

/// Refuses a batch read of more than [`MAX_BATCH_READ`] keys.
pub fn check_batch(keys: &[RecordKey]) -> Result<(), StoreError> {
    if keys.len() > MAX_BATCH_READ {
        return Err(StoreError::Unavailable(Cause::new(format!(
            "a batch read of {} keys (at most {MAX_BATCH_READ})",
            keys.len()
        ))));
    }
    Ok(())
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
        assert_ne!(
            shared.storage_key(),
            RecordKey::new(Owner::personal("acme", "-"), "note", "x").storage_key()
        );
    }

    #[test]
    fn a_store_error_keeps_the_original_error_as_its_source() {
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let error = StoreError::unavailable("reading the record", refused);
        assert_eq!(
            error.to_string(),
            "the store is unavailable: reading the record: connection refused"
        );
        fn io_source<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a std::io::Error> {
            std::iter::successors(Some(error), |e| (*e).source())
                .find_map(|e| e.downcast_ref::<std::io::Error>())
        }
        let original = io_source(&error).expect("the io::Error is in the source chain");
        assert_eq!(original.kind(), std::io::ErrorKind::ConnectionRefused);
        let refused = TransactError::Refused {
            index: 0,
            cause: error.clone(),
        };
        assert!(
            io_source(&refused).is_some()
                && io_source(&TransactError::Store(error.clone())).is_some()
        );
        assert_eq!(error.clone(), error, "a clone shares the cause");
        assert_ne!(
            error,
            StoreError::timed_out(
                "reading the record",
                std::io::Error::other("connection refused")
            )
        );
        assert_eq!(
            StoreError::Unavailable("switched off".into()).to_string(),
            "the store is unavailable: switched off"
        );
    }

    #[test]
    fn a_cause_does_not_repeat_a_source_its_error_already_tells() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer: {0}")]
        struct Outer(#[source] std::io::Error);
        let cause = Cause::with_source("", Outer(std::io::Error::other("disk full")));
        assert_eq!(cause.to_string(), "outer: disk full");
        assert_eq!(cause.context(), "");
        assert!(cause.error().is_some_and(|e| e.is::<Outer>()));
    }
}
