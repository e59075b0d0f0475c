//! The operator's view of a store: listing records of one kind and jobs by status, which no
//! request path needs and [`crate::RecordStore`] deliberately cannot do.
//!
//! This is an operator path, not a request path. On SQLite a listing is one indexed-enough query
//! over a local file; on DynamoDB it is a `Scan` of the whole table with a filter (every item is
//! read and paid for, matched or not), bounded by `limit` matches. No handler may call it: a
//! request must cost the same whatever the table holds. The operator's CLI (`relevo-ops`) is its
//! only caller.
//!
//! Invariants:
//! - A listing returns live records only (expired ones read as absent, as [`crate::RecordStore::get`]
//!   has them), each with its full [`RecordKey`] recovered from the storage key, and only records
//!   whose kind is exactly the one asked for: a crafted tenant, subject or id that contains a
//!   kind's text never makes another kind's record match ([`parse_storage_key`] reads the
//!   length-prefixed parts, it does not search the text).
//! - A listing is bounded: at most `limit` items, and `truncated` says when more may exist, so an
//!   operator never mistakes a partial listing for a complete one.
//!
//! Threat model: whoever holds this port reads every tenant's records. It is built only by the
//! operator's CLI, from credentials the operator holds; it never reaches a handler.

use crate::jobs::{Job, JobStatus};
use crate::records::{Owner, Record, RecordKey, StoreFuture};

/// At most this many items per listing, whatever the caller asks.
pub const MAX_LISTING: usize = 10_000;

/// What a listing found, at most its limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing<T> {
    pub items: Vec<T>,
    /// True when the listing stopped at its limit and more items may match.
    pub truncated: bool,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            items: Vec::new(),
            truncated: false,
        }
    }
}

/// Listing for operators (see the module documentation for what it costs and who may call it).
pub trait OperatorView: Send + Sync {
    /// Live records of exactly `kind`, of `tenant` only when given, at most `limit` (capped at
    /// [`MAX_LISTING`]), in no particular order.
    fn list_records<'a>(
        &'a self,
        kind: &'a str,
        tenant: Option<&'a str>,
        limit: usize,
        now: u64,
    ) -> StoreFuture<'a, Listing<Record>>;

    /// Jobs whose status is one of `statuses`, at most `limit` (capped at [`MAX_LISTING`]), in no
    /// particular order.
    fn list_jobs<'a>(
        &'a self,
        statuses: &'a [JobStatus],
        limit: usize,
    ) -> StoreFuture<'a, Listing<Job>>;
}

/// The text every storage key of `kind` holds between its owner and its id; a cheap pre-filter
/// for adapters (a match must still be confirmed by [`parse_storage_key`]).
pub fn kind_marker(kind: &str) -> String {
    format!("|k{}:{kind}|", kind.len())
}

/// The storage key's prefix of every record of `tenant`.
pub fn tenant_prefix(tenant: &str) -> String {
    format!("t{}:{tenant}|", tenant.len())
}

/// The [`RecordKey`] a storage key was made from ([`RecordKey::storage_key`] read back), or
/// `None` for text no key produces.
pub fn parse_storage_key(storage_key: &str) -> Option<RecordKey> {
    let mut rest = storage_key;
    let tenant = take_part(&mut rest, 't')?;
    rest = rest.strip_prefix('|')?;
    let subject = match rest.strip_prefix("p-") {
        Some(after) => {
            rest = after;
            None
        }
        None => Some(take_part(&mut rest, 'p')?),
    };
    rest = rest.strip_prefix('|')?;
    let kind = take_part(&mut rest, 'k')?;
    rest = rest.strip_prefix('|')?;
    let id = take_part(&mut rest, 'i')?;
    if !rest.is_empty() {
        return None;
    }
    let owner = Owner {
        tenant: tenant.to_string(),
        subject: subject.map(str::to_string),
    };
    Some(RecordKey::new(owner, kind, id))
}

/// Reads `{tag}{len}:{value}` off the front of `rest`.
fn take_part<'a>(rest: &mut &'a str, tag: char) -> Option<&'a str> {
    let after_tag = rest.strip_prefix(tag)?;
    let (len, after_len) = after_tag.split_once(':')?;
    if len.is_empty() || !len.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let len: usize = len.parse().ok()?;
    let value = after_len.get(..len)?;
    *rest = &after_len[len..];
    Some(value)
}

/// Whether `record` belongs in a listing of `kind` (and `tenant`) at `now`.
pub fn listed(record: &Record, kind: &str, tenant: Option<&str>, now: u64) -> bool {
    record.key.kind == kind
        && tenant.is_none_or(|t| record.key.owner.tenant == t)
        && record.expires_at.is_none_or(|e| e > now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_keys_read_back_to_the_key_they_were_made_from() {
        for key in [
            RecordKey::new(Owner::tenant("acme"), "operation", "op-1"),
            RecordKey::new(Owner::personal("acme", "alice"), "job", "j|k9:operation|x"),
            RecordKey::new(Owner::personal("t|p-", "p-"), "k", ""),
            RecordKey::new(Owner::tenant("ünï"), "operation", "é|"),
        ] {
            assert_eq!(
                parse_storage_key(&key.storage_key()),
                Some(key.clone()),
                "{}",
                key.storage_key()
            );
        }
    }

    #[test]
    fn a_crafted_id_holding_a_kind_marker_does_not_change_the_kind() {
        let key = RecordKey::new(Owner::tenant("acme"), "note", "x|k9:operation|i1:y");
        assert!(
            key.storage_key().contains(&kind_marker("operation")),
            "the pre-filter matches"
        );
        assert_eq!(
            parse_storage_key(&key.storage_key()).map(|k| k.kind),
            Some("note".into()),
            "the parse does not"
        );
    }

    #[test]
    fn text_no_key_produces_is_refused() {
        for text in [
            "",
            "t4:acme",
            "t4:acme|p-|k2:op|i1:x|extra",
            "t9:acme|p-|k2:op|i1:x",
            "tx:a|p-|k1:k|i1:i",
        ] {
            assert_eq!(parse_storage_key(text), None, "{text}");
        }
    }
}
