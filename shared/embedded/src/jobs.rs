//! SQLite `JobStore` and `Queue`.
//!
//! Jobs: one row per job, the full record as JSON plus the columns conditions and the reconciler
//! need; operation keys in their own table, created with the job in one transaction. Queue: one
//! row per message with its visibility time and receive count; a message received more than
//! `max_receives` times moves to `dead_letters` instead of being delivered.

use relevo_state::jobs::{Created, Job, JobRef, JobStore};
use relevo_state::{Ids, Queue, QueueMessage, RandomIds, Record, StoreError, StoreFuture};
use rusqlite::{Connection, OptionalExtension, params};

use crate::{SqliteStore, unavailable};

pub(crate) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS jobs (
        pk         TEXT PRIMARY KEY,
        tenant     TEXT NOT NULL,
        status     TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        revision   INTEGER NOT NULL,
        body       TEXT NOT NULL,
        expires_at INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS jobs_active ON jobs (updated_at) WHERE status IN ('queued', 'running');
    CREATE TABLE IF NOT EXISTS operation_keys (
        pk         TEXT PRIMARY KEY,
        job_pk     TEXT NOT NULL,
        expires_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS queue (
        seq           INTEGER PRIMARY KEY AUTOINCREMENT,
        id            TEXT NOT NULL UNIQUE,
        body          TEXT NOT NULL,
        visible_at    INTEGER NOT NULL,
        receive_count INTEGER NOT NULL DEFAULT 0,
        receipt       TEXT
    );
    CREATE TABLE IF NOT EXISTS dead_letters (
        id            TEXT PRIMARY KEY,
        body          TEXT NOT NULL,
        receive_count INTEGER NOT NULL
    );
";

fn read_job(connection: &Connection, pk: &str) -> Result<Option<Job>, StoreError> {
    let body: Option<String> = connection
        .query_row("SELECT body FROM jobs WHERE pk = ?1", params![pk], |row| {
            row.get(0)
        })
        .optional()
        .map_err(unavailable)?;
    body.map(|b| serde_json::from_str(&b).map_err(|e| StoreError::unavailable("corrupt job", e)))
        .transpose()
}

fn as_record(job: &Job) -> Record {
    Record {
        key: job.job.record_key(),
        revision: job.revision,
        body: serde_json::to_value(job).unwrap_or_default(),
        expires_at: Some(job.expires_at),
    }
}

fn encode(job: &Job) -> Result<String, StoreError> {
    serde_json::to_string(job).map_err(|e| StoreError::unavailable("cannot encode the job", e))
}

impl JobStore for SqliteStore {
    fn create_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Created> {
        let job = job.clone();
        Box::pin(self.run(move |connection| {
            let tx = connection.unchecked_transaction().map_err(unavailable)?;
            let pk = job.job.record_key().storage_key();
            if let Some(key) = &job.operation_key {
                let inserted = tx
                    .execute(
                        "INSERT INTO operation_keys (pk, job_pk, expires_at) VALUES (?1, ?2, ?3) ON CONFLICT (pk) DO NOTHING",
                        params![job.operation_record_key(key).storage_key(), pk, job.expires_at as i64],
                    )
                    .map_err(unavailable)?;
                if inserted == 0 {
                    let existing_pk: String = tx
                        .query_row("SELECT job_pk FROM operation_keys WHERE pk = ?1", params![job.operation_record_key(key).storage_key()], |r| r.get(0))
                        .map_err(unavailable)?;
                    let existing = read_job(&tx, &existing_pk)?.ok_or_else(|| StoreError::Unavailable("operation key names a missing job".into()))?;
                    return Ok(Created::Existing(existing));
                }
            }
            tx.execute(
                "INSERT INTO jobs (pk, tenant, status, updated_at, revision, body, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![pk, job.job.tenant, job.status.as_str(), job.updated_at as i64, job.revision as i64, encode(&job)?, job.expires_at as i64],
            )
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
                    StoreError::AlreadyExists(Box::new(as_record(&job)))
                }
                other => unavailable(other),
            })?;
            tx.commit().map_err(unavailable)?;
            Ok(Created::New(job))
        }))
    }

    fn get_job<'a>(&'a self, job: &'a JobRef) -> StoreFuture<'a, Option<Job>> {
        let pk = job.record_key().storage_key();
        Box::pin(self.run(move |connection| read_job(connection, &pk)))
    }

    fn keyed_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Option<Job>> {
        let key = job
            .operation_key
            .as_ref()
            .map(|key| job.operation_record_key(key).storage_key());
        Box::pin(self.run(move |connection| {
            let Some(key) = key else { return Ok(None) };
            let job_pk: Option<String> = connection
                .query_row(
                    "SELECT job_pk FROM operation_keys WHERE pk = ?1",
                    params![key],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?;
            match job_pk {
                Some(pk) => read_job(connection, &pk),
                None => Ok(None),
            }
        }))
    }

    fn put_job<'a>(&'a self, job: &'a Job, expected_revision: u64) -> StoreFuture<'a, Job> {
        let job = job.clone();
        Box::pin(self.run(move |connection| {
            if job.revision != expected_revision + 1 {
                return Err(StoreError::Unavailable("put_job needs revision = expected + 1".into()));
            }
            let pk = job.job.record_key().storage_key();
            let written = connection
                .execute(
                    "UPDATE jobs SET status = ?1, updated_at = ?2, revision = ?3, body = ?4, expires_at = ?5 WHERE pk = ?6 AND revision = ?7",
                    params![job.status.as_str(), job.updated_at as i64, job.revision as i64, encode(&job)?, job.expires_at as i64, pk, expected_revision as i64],
                )
                .map_err(unavailable)?;
            if written == 1 {
                return Ok(job);
            }
            match read_job(connection, &pk)? {
                Some(current) => Err(StoreError::Conflict { expected: expected_revision, current: Box::new(as_record(&current)) }),
                None => Err(StoreError::NotFound),
            }
        }))
    }

    fn list_active<'a>(&'a self, limit: usize) -> StoreFuture<'a, Vec<Job>> {
        Box::pin(self.run(move |connection| {
            let mut statement = connection
                .prepare("SELECT body FROM jobs WHERE status IN ('queued', 'running') ORDER BY updated_at LIMIT ?1")
                .map_err(unavailable)?;
            let bodies =
                statement.query_map(params![limit as i64], |row| row.get::<_, String>(0)).map_err(unavailable)?;
            bodies
                .map(|body| {
                    let body = body.map_err(unavailable)?;
                    serde_json::from_str(&body).map_err(|e| StoreError::unavailable("corrupt job", e))
                })
                .collect()
        }))
    }
}

/// The SQLite queue: `max_receives` deliveries, then the dead-letter table.
#[derive(Clone, Debug)]
pub struct SqliteQueue {
    store: SqliteStore,
    max_receives: u32,
}

impl SqliteQueue {
    pub fn new(store: SqliteStore, max_receives: u32) -> Self {
        SqliteQueue {
            store,
            max_receives,
        }
    }

    /// The database the queue's tables live in.
    pub(crate) fn store(&self) -> &SqliteStore {
        &self.store
    }

    /// Messages moved to the dead-letter table (body, receive count).
    pub async fn dead_letters(&self) -> Result<Vec<(String, u32)>, StoreError> {
        self.store
            .run(|connection| {
                let mut statement = connection
                    .prepare("SELECT body, receive_count FROM dead_letters ORDER BY id")
                    .map_err(unavailable)?;
                let rows = statement
                    .query_map([], |r| {
                        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u32))
                    })
                    .map_err(unavailable)?;
                rows.map(|r| r.map_err(unavailable)).collect()
            })
            .await
    }
}

impl Queue for SqliteQueue {
    fn send<'a>(&'a self, body: &'a str) -> StoreFuture<'a, ()> {
        let body = body.to_string();
        Box::pin(self.store.run(move |connection| {
            connection
                .execute(
                    "INSERT INTO queue (id, body, visible_at) VALUES (?1, ?2, 0)",
                    params![RandomIds.new_id(), body],
                )
                .map_err(unavailable)?;
            Ok(())
        }))
    }

    fn receive<'a>(
        &'a self,
        max: usize,
        visibility_secs: u64,
        now: u64,
    ) -> StoreFuture<'a, Vec<QueueMessage>> {
        let max_receives = self.max_receives;
        Box::pin(self.store.run(move |connection| {
            let tx = connection.unchecked_transaction().map_err(unavailable)?;
            let candidates: Vec<(String, String, u32)> = {
                let mut statement = tx
                    .prepare("SELECT id, body, receive_count FROM queue WHERE visible_at <= ?1 ORDER BY seq LIMIT ?2")
                    .map_err(unavailable)?;
                let rows = statement
                    .query_map(params![now as i64, max as i64], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u32))
                    })
                    .map_err(unavailable)?;
                rows.collect::<Result<_, _>>().map_err(unavailable)?
            };
            let mut delivered = Vec::new();
            for (id, body, count) in candidates {
                if count >= max_receives {
                    tx.execute(
                        "INSERT OR REPLACE INTO dead_letters (id, body, receive_count) VALUES (?1, ?2, ?3)",
                        params![id, body, count as i64],
                    )
                    .map_err(unavailable)?;
                    tx.execute("DELETE FROM queue WHERE id = ?1", params![id]).map_err(unavailable)?;
                    continue;
                }
                let receipt = format!("{id}.{}", RandomIds.new_id());
                tx.execute(
                    "UPDATE queue SET receive_count = receive_count + 1, visible_at = ?1, receipt = ?2 WHERE id = ?3",
                    params![(now + visibility_secs) as i64, receipt, id],
                )
                .map_err(unavailable)?;
                delivered.push(QueueMessage { id, receipt, body, receive_count: count + 1 });
            }
            tx.commit().map_err(unavailable)?;
            Ok(delivered)
        }))
    }

    fn delete<'a>(&'a self, receipt: &'a str) -> StoreFuture<'a, ()> {
        let receipt = receipt.to_string();
        Box::pin(self.store.run(move |connection| {
            connection
                .execute("DELETE FROM queue WHERE receipt = ?1", params![receipt])
                .map_err(unavailable)?;
            Ok(())
        }))
    }

    fn change_visibility<'a>(
        &'a self,
        receipt: &'a str,
        visibility_secs: u64,
        now: u64,
    ) -> StoreFuture<'a, ()> {
        let receipt = receipt.to_string();
        Box::pin(self.store.run(move |connection| {
            connection
                .execute(
                    "UPDATE queue SET visible_at = ?1 WHERE receipt = ?2",
                    params![(now + visibility_secs) as i64, receipt],
                )
                .map_err(unavailable)?;
            Ok(())
        }))
    }
}
