//! SQLite adapters of the `relevo-state` ports: the same contract as DynamoDB, on one machine.
//!
//! Conditional writes are single SQL statements (`INSERT … ON CONFLICT … WHERE expired`,
//! `UPDATE … WHERE revision = ?`, a counter's `INSERT … ON CONFLICT DO UPDATE … WHERE count <=
//! limit - n RETURNING count`), so they are atomic without explicit transactions. The database
//! survives restarts (WAL mode); `:memory:` is available for tests. Calls run on the blocking pool
//! behind one connection, which serializes writers as SQLite would anyway.

mod jobs;
mod operator;

pub use jobs::SqliteQueue;

use std::path::Path;
use std::sync::{Arc, Mutex};

use relevo_state::records::{TransactError, TransactFuture, Write, validate_transaction};
use relevo_state::{Record, RecordKey, RecordStore, StoreError, StoreFuture};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

#[derive(Clone)]
pub struct SqliteStore {
    connection: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

const SCHEMA: &str = "
    PRAGMA journal_mode = WAL;
    PRAGMA busy_timeout = 5000;
    CREATE TABLE IF NOT EXISTS records (
        pk         TEXT PRIMARY KEY,
        tenant     TEXT NOT NULL,
        revision   INTEGER NOT NULL,
        body       TEXT NOT NULL,
        expires_at INTEGER
    );
";

impl SqliteStore {
    /// Opens (and creates if needed) the database at `path`.
    /// Opens (or creates) the database at `path`. It holds notes, carts and exports: the file
    /// (and a directory made for it) is the owner's only (0600 / 0700), whatever the umask.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        let io = |e: std::io::Error| StoreError::unavailable(path.display().to_string(), e);
        if let Some(parent) = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty() && !p.exists())
        {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(io)?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        let store = Self::with(Connection::open(path).map_err(unavailable)?)?;
        Ok(store)
    }

    /// Removes what has expired: records and jobs past their `expires_at`, and operation keys
    /// of jobs gone. DynamoDB's TTL does this in AWS; the gateway calls it on its reconciler loop.
    /// Returns how many rows went.
    pub async fn sweep(&self, now: u64) -> Result<usize, StoreError> {
        self.run(move |connection| {
            let now = now as i64;
            let mut removed = 0;
            for statement in [
                "DELETE FROM records WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                "DELETE FROM jobs WHERE expires_at <= ?1",
                "DELETE FROM operation_keys WHERE expires_at <= ?1",
            ] {
                removed += connection
                    .execute(statement, params![now])
                    .map_err(unavailable)?;
            }
            Ok(removed)
        })
        .await
    }

    /// A private in-memory database.
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::with(Connection::open_in_memory().map_err(unavailable)?)
    }

    fn with(connection: Connection) -> Result<Self, StoreError> {
        connection.execute_batch(SCHEMA).map_err(unavailable)?;
        connection
            .execute_batch(jobs::SCHEMA)
            .map_err(unavailable)?;
        Ok(SqliteStore {
            connection: Arc::new(Mutex::new(connection)),
        })
    }

    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let connection = self.connection.clone();
        tokio::task::spawn_blocking(move || {
            let connection = connection
                .lock()
                .map_err(|_| StoreError::Unavailable("connection lock poisoned".into()))?;
            work(&connection)
        })
        .await
        .map_err(|e| StoreError::unavailable("the SQLite call did not finish", e))?
    }
}

/// A SQLite failure, kept whole as the source of the store error.
pub(crate) fn unavailable(error: rusqlite::Error) -> StoreError {
    StoreError::unavailable("SQLite", error)
}

fn read(connection: &Connection, key: &RecordKey, now: u64) -> Result<Option<Record>, StoreError> {
    connection
        .query_row(
            "SELECT revision, body, expires_at FROM records WHERE pk = ?1 AND (expires_at IS NULL OR expires_at > ?2)",
            params![key.storage_key(), now as i64],
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?, row.get::<_, Option<i64>>(2)?)),
        )
        .optional()
        .map_err(unavailable)?
        .map(|(revision, body, expires_at)| {
            let body: Value = serde_json::from_str(&body).map_err(|e| StoreError::unavailable("corrupt record", e))?;
            Ok(Record { key: key.clone(), revision: revision as u64, body, expires_at: expires_at.map(|e| e as u64) })
        })
        .transpose()
}

/// The live records of `keys` in one `IN (…)` query, in the order of `keys`.
fn read_many(
    connection: &Connection,
    keys: &[RecordKey],
    now: u64,
) -> Result<Vec<Option<Record>>, StoreError> {
    let placeholders: Vec<String> = (0..keys.len()).map(|n| format!("?{}", n + 2)).collect();
    let sql = format!(
        "SELECT pk, revision, body, expires_at FROM records WHERE (expires_at IS NULL OR expires_at > ?1) AND pk IN ({})",
        placeholders.join(", ")
    );
    let mut statement = connection.prepare(&sql).map_err(unavailable)?;
    let storage: Vec<String> = keys.iter().map(RecordKey::storage_key).collect();
    let mut bound: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(keys.len() + 1);
    let now = now as i64;
    bound.push(&now);
    bound.extend(storage.iter().map(|k| k as &dyn rusqlite::ToSql));
    let rows = statement
        .query_map(bound.as_slice(), |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Option<i64>>(3)?,
            ))
        })
        .map_err(unavailable)?;
    let mut found = std::collections::HashMap::new();
    for row in rows {
        let (pk, revision, body, expires_at) = row.map_err(unavailable)?;
        found.insert(pk, (revision, body, expires_at));
    }
    keys.iter()
        .zip(&storage)
        .map(|(key, pk)| {
            found
                .get(pk)
                .map(|(revision, body, expires_at)| {
                    let body: Value = serde_json::from_str(body)
                        .map_err(|e| StoreError::unavailable("corrupt record", e))?;
                    Ok(Record {
                        key: key.clone(),
                        revision: *revision as u64,
                        body,
                        expires_at: expires_at.map(|e| e as u64),
                    })
                })
                .transpose()
        })
        .collect()
}

impl RecordStore for SqliteStore {
    fn create<'a>(
        &'a self,
        key: &'a RecordKey,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        let write = Write::Create {
            key: key.clone(),
            body: body.clone(),
            expires_at,
        };
        Box::pin(self.run(move |connection| apply(connection, &write, now)?))
    }

    fn get<'a>(&'a self, key: &'a RecordKey, now: u64) -> StoreFuture<'a, Option<Record>> {
        let key = key.clone();
        Box::pin(self.run(move |connection| read(connection, &key, now)))
    }

    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        expected_revision: u64,
        body: &'a Value,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        let write = Write::Update {
            key: key.clone(),
            expected_revision,
            body: body.clone(),
        };
        Box::pin(self.run(move |connection| apply(connection, &write, now)?))
    }

    fn update_expiring<'a>(
        &'a self,
        key: &'a RecordKey,
        expected_revision: u64,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        let write = Write::UpdateExpiring {
            key: key.clone(),
            expected_revision,
            body: body.clone(),
            expires_at,
        };
        Box::pin(self.run(move |connection| apply(connection, &write, now)?))
    }

    fn get_many<'a>(
        &'a self,
        keys: &'a [RecordKey],
        now: u64,
    ) -> StoreFuture<'a, Vec<Option<Record>>> {
        let keys = keys.to_vec();
        Box::pin(async move {
            relevo_state::records::check_batch(&keys)?;
            if keys.is_empty() {
                return Ok(Vec::new());
            }
            self.run(move |connection| read_many(connection, &keys, now))
                .await
        })
    }

    fn transact<'a>(&'a self, writes: &'a [Write], now: u64) -> TransactFuture<'a> {
        let writes = writes.to_vec();
        Box::pin(async move {
            validate_transaction(&writes)?;
            self.run(move |connection| {
                // Dropping the transaction without commit rolls every earlier write back.
                let tx = connection.unchecked_transaction().map_err(unavailable)?;
                let mut written = Vec::with_capacity(writes.len());
                for (index, write) in writes.iter().enumerate() {
                    match apply(&tx, write, now)? {
                        Ok(record) => written.push(record.revision),
                        Err(cause) => return Ok(Err(TransactError::Refused { index, cause })),
                    }
                }
                tx.commit().map_err(unavailable)?;
                Ok(Ok(written))
            })
            .await?
        })
    }

    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        n: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        let key = key.clone();
        Box::pin(async move {
            if !relevo_state::records::check_count(n, limit)? {
                return Ok(None);
            }
            self.run(move |connection| count_up_by(connection, &key, n, limit, expires_at, now))
                .await
        })
    }
}

/// One statement counts `n` or refuses: a live counter with room for `n` under `limit` goes `n`
/// up, an absent or expired one starts again at `n` (with the new expiry), and without room the
/// `WHERE` leaves the row untouched and returns nothing. The caller checked `1 <= n <= limit`.
fn count_up_by(
    connection: &Connection,
    key: &RecordKey,
    n: u32,
    limit: u32,
    expires_at: Option<u64>,
    now: u64,
) -> Result<Option<u32>, StoreError> {
    let counted: Option<i64> = connection
        .query_row(
            "INSERT INTO records (pk, tenant, revision, body, expires_at)
             VALUES (?1, ?2, 1, json_object('count', ?6), ?3)
             ON CONFLICT (pk) DO UPDATE SET
                 revision = CASE WHEN records.expires_at IS NOT NULL AND records.expires_at <= ?4
                            THEN 1 ELSE records.revision + 1 END,
                 body = CASE WHEN records.expires_at IS NOT NULL AND records.expires_at <= ?4
                        THEN excluded.body
                        ELSE json_object('count', json_extract(records.body, '$.count') + ?6) END,
                 expires_at = CASE WHEN records.expires_at IS NOT NULL AND records.expires_at <= ?4
                              THEN excluded.expires_at ELSE records.expires_at END
             WHERE (records.expires_at IS NOT NULL AND records.expires_at <= ?4)
                OR json_extract(records.body, '$.count') <= ?5 - ?6
             RETURNING json_extract(body, '$.count')",
            params![
                key.storage_key(),
                key.owner.tenant,
                expires_at.map(|e| e as i64),
                now as i64,
                i64::from(limit),
                i64::from(n)
            ],
            |row| row.get(0),
        )
        .optional()
        .map_err(unavailable)?;
    counted
        .map(|count| {
            u32::try_from(count).map_err(|e| StoreError::unavailable("corrupt counter", e))
        })
        .transpose()
}

/// One conditional write (alone, or inside an open transaction): `Ok(Err(cause))` when its
/// condition fails.
fn apply(
    connection: &Connection,
    write: &Write,
    now: u64,
) -> Result<Result<Record, StoreError>, StoreError> {
    match write {
        Write::Create {
            key,
            body,
            expires_at,
        } => {
            let written = connection
                .execute(
                    "INSERT INTO records (pk, tenant, revision, body, expires_at) VALUES (?1, ?2, 1, ?3, ?4)
                     ON CONFLICT (pk) DO UPDATE SET revision = 1, body = excluded.body, expires_at = excluded.expires_at
                     WHERE records.expires_at IS NOT NULL AND records.expires_at <= ?5",
                    params![
                        key.storage_key(),
                        key.owner.tenant,
                        body.to_string(),
                        expires_at.map(|e| e as i64),
                        now as i64
                    ],
                )
                .map_err(unavailable)?;
            if written == 1 {
                return Ok(Ok(Record {
                    key: key.clone(),
                    revision: 1,
                    body: body.clone(),
                    expires_at: *expires_at,
                }));
            }
            Ok(Err(match read(connection, key, now)? {
                Some(current) => StoreError::AlreadyExists(Box::new(current)),
                None => StoreError::Unavailable("create lost a race with an expiry".into()),
            }))
        }
        Write::Check {
            key,
            expected_revision,
        } => Ok(match (read(connection, key, now)?, *expected_revision) {
            (None, 0) => Ok(Record {
                key: key.clone(),
                revision: 0,
                body: Value::Null,
                expires_at: None,
            }),
            (Some(current), 0) => Err(StoreError::AlreadyExists(Box::new(current))),
            (Some(current), expected) if current.revision == expected => Ok(current),
            (Some(current), expected) => Err(StoreError::Conflict {
                expected,
                current: Box::new(current),
            }),
            (None, _) => Err(StoreError::NotFound),
        }),
        Write::Delete {
            key,
            expected_revision,
        } => {
            let removed = connection
                .execute(
                    "DELETE FROM records WHERE pk = ?1 AND revision = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
                    params![key.storage_key(), *expected_revision as i64, now as i64],
                )
                .map_err(unavailable)?;
            if removed == 1 {
                return Ok(Ok(Record {
                    key: key.clone(),
                    revision: 0,
                    body: Value::Null,
                    expires_at: None,
                }));
            }
            Ok(Err(match read(connection, key, now)? {
                Some(current) => StoreError::Conflict {
                    expected: *expected_revision,
                    current: Box::new(current),
                },
                None => StoreError::NotFound,
            }))
        }
        Write::Update {
            key,
            expected_revision,
            body,
        } => update(connection, key, *expected_revision, body, None, now),
        Write::UpdateExpiring {
            key,
            expected_revision,
            body,
            expires_at,
        } => update(
            connection,
            key,
            *expected_revision,
            body,
            Some(*expires_at),
            now,
        ),
    }
}

/// A conditional update of the live record at `expected_revision`: its expiry set to
/// `expiry` (`Some(None)`: never expires) or kept (`None`), in one statement.
fn update(
    connection: &Connection,
    key: &RecordKey,
    expected_revision: u64,
    body: &Value,
    expiry: Option<Option<u64>>,
    now: u64,
) -> Result<Result<Record, StoreError>, StoreError> {
    // `?5` says whether the expiry is set (to `?6`; NULL: never) or kept.
    let written: Option<Option<i64>> = connection
        .query_row(
            "UPDATE records SET revision = revision + 1, body = ?1,
                 expires_at = CASE WHEN ?5 THEN ?6 ELSE expires_at END
             WHERE pk = ?2 AND revision = ?3 AND (expires_at IS NULL OR expires_at > ?4)
             RETURNING expires_at",
            params![
                body.to_string(),
                key.storage_key(),
                expected_revision as i64,
                now as i64,
                expiry.is_some(),
                expiry.flatten().map(|e| e as i64)
            ],
            |row| row.get(0),
        )
        .optional()
        .map_err(unavailable)?;
    if let Some(expires_at) = written {
        let expires_at = expires_at.map(|e| e as u64);
        return Ok(Ok(Record {
            key: key.clone(),
            revision: expected_revision + 1,
            body: body.clone(),
            expires_at,
        }));
    }
    Ok(Err(match read(connection, key, now)? {
        Some(current) => StoreError::Conflict {
            expected: expected_revision,
            current: Box::new(current),
        },
        None => StoreError::NotFound,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlite_failure_keeps_the_rusqlite_error_as_its_source() {
        let dir = std::env::temp_dir().join(format!("relevo-cause-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let path = dir.join("store.db");
        std::fs::write(&path, vec![b'x'; 4096]).expect("a file that is not a database");
        let error = SqliteStore::open(&path).expect_err("not a database");
        std::fs::remove_dir_all(&dir).expect("cleaned up");
        assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
        let chain =
            std::iter::successors(Some(&error as &(dyn std::error::Error + 'static)), |e| {
                (*e).source()
            });
        let sqlite = chain
            .filter_map(|e| e.downcast_ref::<rusqlite::Error>())
            .next()
            .expect("rusqlite::Error in the chain");
        assert_eq!(
            sqlite.sqlite_error_code(),
            Some(rusqlite::ErrorCode::NotADatabase),
            "{sqlite:?}"
        );
        assert!(
            error.to_string().contains("not a database"),
            "Display tells the cause: {error}"
        );
    }
}
