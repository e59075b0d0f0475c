//! The operator paths on SQLite: listings ([`OperatorView`]) and the dead-letter table
//! ([`DeadLetters`]). Only the operator's CLI calls them; see `relevo_state::operator`.
//!
//! A listing pre-filters in SQL (the kind's marker inside the storage key, the tenant column,
//! the expiry) and confirms every row by parsing its storage key, so a crafted id never makes a
//! record of another kind match. A redrive moves rows from `dead_letters` back to `queue` in one
//! transaction: a message is in exactly one of the two tables.

use relevo_state::dead_letters::{DeadLetter, DeadLetters, Redrive};
use relevo_state::jobs::{Job, JobStatus};
use relevo_state::operator::{
    Listing, MAX_LISTING, OperatorView, kind_marker, listed, parse_storage_key,
};
use relevo_state::{Record, StoreError, StoreFuture};
use rusqlite::params;
use serde_json::Value;

use crate::{SqliteQueue, SqliteStore, unavailable};

impl OperatorView for SqliteStore {
    fn list_records<'a>(
        &'a self,
        kind: &'a str,
        tenant: Option<&'a str>,
        limit: usize,
        now: u64,
    ) -> StoreFuture<'a, Listing<Record>> {
        let (kind, tenant, limit) = (
            kind.to_string(),
            tenant.map(str::to_string),
            limit.min(MAX_LISTING),
        );
        Box::pin(self.run(move |connection| {
            let mut statement = connection
                .prepare(
                    "SELECT pk, revision, body, expires_at FROM records
                     WHERE instr(pk, ?1) > 0 AND (?2 IS NULL OR tenant = ?2) AND (expires_at IS NULL OR expires_at > ?3)",
                )
                .map_err(unavailable)?;
            let mut rows =
                statement.query(params![kind_marker(&kind), tenant, now as i64]).map_err(unavailable)?;
            let mut listing = Listing::default();
            while let Some(row) = rows.next().map_err(unavailable)? {
                let pk: String = row.get(0).map_err(unavailable)?;
                let Some(key) = parse_storage_key(&pk) else { continue };
                let body: String = row.get(2).map_err(unavailable)?;
                let record = Record {
                    key,
                    revision: row.get::<_, i64>(1).map_err(unavailable)? as u64,
                    body: serde_json::from_str::<Value>(&body)
                        .map_err(|e| StoreError::unavailable(format!("corrupt record {pk}"), e))?,
                    expires_at: row.get::<_, Option<i64>>(3).map_err(unavailable)?.map(|e| e as u64),
                };
                if !listed(&record, &kind, tenant.as_deref(), now) {
                    continue;
                }
                if listing.items.len() == limit {
                    listing.truncated = true;
                    break;
                }
                listing.items.push(record);
            }
            Ok(listing)
        }))
    }

    fn list_jobs<'a>(
        &'a self,
        statuses: &'a [JobStatus],
        limit: usize,
    ) -> StoreFuture<'a, Listing<Job>> {
        let (statuses, limit) = (statuses.to_vec(), limit.min(MAX_LISTING));
        Box::pin(self.run(move |connection| {
            let mut statement = connection
                .prepare("SELECT body FROM jobs WHERE status = ?1 ORDER BY updated_at")
                .map_err(unavailable)?;
            let mut listing = Listing::default();
            for status in statuses {
                let mut rows = statement
                    .query(params![status.as_str()])
                    .map_err(unavailable)?;
                while let Some(row) = rows.next().map_err(unavailable)? {
                    if listing.items.len() == limit {
                        listing.truncated = true;
                        return Ok(listing);
                    }
                    let body: String = row.get(0).map_err(unavailable)?;
                    listing.items.push(
                        serde_json::from_str(&body)
                            .map_err(|e| StoreError::unavailable("corrupt job", e))?,
                    );
                }
            }
            Ok(listing)
        }))
    }
}

impl DeadLetters for SqliteQueue {
    fn list_dead_letters<'a>(&'a self, limit: usize) -> StoreFuture<'a, Vec<DeadLetter>> {
        let limit = limit.min(MAX_LISTING) as i64;
        Box::pin(self.store().run(move |connection| {
            let mut statement = connection
                .prepare("SELECT id, body, receive_count FROM dead_letters ORDER BY rowid LIMIT ?1")
                .map_err(unavailable)?;
            let rows = statement
                .query_map(params![limit], |r| {
                    Ok(DeadLetter {
                        id: r.get(0)?,
                        body: r.get(1)?,
                        receive_count: r.get::<_, i64>(2)? as u32,
                    })
                })
                .map_err(unavailable)?;
            rows.map(|r| r.map_err(unavailable)).collect()
        }))
    }

    fn redrive<'a>(&'a self, which: Redrive<'a>) -> StoreFuture<'a, Vec<String>> {
        let only = match which {
            Redrive::All => None,
            Redrive::One(id) => Some(id.to_string()),
        };
        Box::pin(self.store().run(move |connection| {
            let tx = connection.unchecked_transaction().map_err(unavailable)?;
            let chosen: Vec<(String, String)> = {
                let mut statement = tx
                    .prepare("SELECT id, body FROM dead_letters WHERE ?1 IS NULL OR id = ?1 ORDER BY rowid")
                    .map_err(unavailable)?;
                let rows = statement.query_map(params![only], |r| Ok((r.get(0)?, r.get(1)?))).map_err(unavailable)?;
                rows.collect::<Result<_, _>>().map_err(unavailable)?
            };
            for (id, body) in &chosen {
                tx.execute(
                    "INSERT INTO queue (id, body, visible_at, receive_count) VALUES (?1, ?2, 0, 0)
                     ON CONFLICT (id) DO UPDATE SET visible_at = 0, receive_count = 0, receipt = NULL",
                    params![id, body],
                )
                .map_err(unavailable)?;
                tx.execute("DELETE FROM dead_letters WHERE id = ?1", params![id]).map_err(unavailable)?;
            }
            tx.commit().map_err(unavailable)?;
            Ok(chosen.into_iter().map(|(id, _)| id).collect())
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use relevo_state::{Owner, Queue, RecordKey, RecordStore};
    use serde_json::json;

    #[tokio::test]
    async fn a_listing_holds_live_records_of_exactly_the_kind_and_tenant_asked_for() {
        let store = SqliteStore::in_memory().unwrap();
        let put = |owner: Owner, kind: &'static str, id: &'static str, expires_at: Option<u64>| {
            let store = store.clone();
            async move {
                store
                    .create(&RecordKey::new(owner, kind, id), &json!(id), expires_at, 1)
                    .await
                    .unwrap()
            }
        };
        put(Owner::tenant("acme"), "operation", "a", None).await;
        put(Owner::tenant("acme"), "operation", "gone", Some(5)).await;
        put(Owner::tenant("beta"), "operation", "b", None).await;
        put(Owner::tenant("acme"), "note", "x|k9:operation|i1:y", None).await;
        let ids = |listing: Listing<Record>| {
            let mut ids: Vec<String> = listing.items.into_iter().map(|r| r.key.id).collect();
            ids.sort();
            ids
        };
        assert_eq!(
            ids(store.list_records("operation", None, 10, 10).await.unwrap()),
            ["a", "b"]
        );
        assert_eq!(
            ids(store
                .list_records("operation", Some("acme"), 10, 10)
                .await
                .unwrap()),
            ["a"]
        );
        let bounded = store.list_records("operation", None, 1, 10).await.unwrap();
        assert_eq!((bounded.items.len(), bounded.truncated), (1, true));
    }

    #[tokio::test]
    async fn a_redriven_dead_letter_is_delivered_again_with_a_fresh_budget() {
        let store = SqliteStore::in_memory().unwrap();
        let queue = SqliteQueue::new(store, 1);
        queue.send("poison").await.unwrap();
        assert_eq!(queue.receive(10, 0, 1).await.unwrap().len(), 1);
        assert!(
            queue.receive(10, 0, 1).await.unwrap().is_empty(),
            "the second delivery dead-letters it"
        );
        let parked = queue.list_dead_letters(10).await.unwrap();
        assert_eq!(
            parked.iter().map(|d| d.body.as_str()).collect::<Vec<_>>(),
            ["poison"]
        );
        assert!(
            queue
                .redrive(Redrive::One("no-such-id"))
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            queue.redrive(Redrive::All).await.unwrap(),
            vec![parked[0].id.clone()]
        );
        assert!(queue.list_dead_letters(10).await.unwrap().is_empty());
        let again = queue.receive(10, 0, 2).await.unwrap();
        assert_eq!((again.len(), again[0].receive_count), (1, 1), "{again:?}");
    }
}
