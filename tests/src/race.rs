//! The race harness: many clients and instances interleaving different requests for the same
//! thing, over one store, with the history of every store write kept for the invariants a test
//! checks afterwards.
//!
//! Interleavings are seeded: [`RaceStore`] pauses a seeded random time (0 to a bound) before
//! every call it passes on, so the same seed replays the same schedule of pauses, and another
//! seed shakes the clients into another order. The seed comes from `RELEVO_RACE_SEED` (to replay
//! a failure) or the clock, and is printed with every check that fails ([`Seed::check`]).
//! Pauses do not make a backend concurrent that serialises calls itself (moto answers one request
//! at a time); the interleaving of the clients' read-decide-write steps is what they shake.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use relevo_state::jobs::{Created, Job, JobRef, JobStore};
use relevo_state::records::{TransactFuture, Write};
use relevo_state::{Record, RecordKey, RecordStore, StoreFuture};
use serde_json::Value;

/// A run's seed.
#[derive(Debug, Clone, Copy)]
pub struct Seed(pub u64);

impl Seed {
    /// `RELEVO_RACE_SEED`, or one from the clock; printed so a failing run can be replayed.
    pub fn from_env(test: &str) -> Seed {
        let seed = std::env::var("RELEVO_RACE_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32)
            });
        eprintln!("{test}: race seed {seed} (replay: RELEVO_RACE_SEED={seed})");
        Seed(seed)
    }

    /// Asserts an invariant, naming the seed that broke it.
    #[track_caller]
    pub fn check(&self, holds: bool, invariant: impl std::fmt::Display) {
        assert!(
            holds,
            "invariant broken with RELEVO_RACE_SEED={}: {invariant}",
            self.0
        );
    }

    pub fn rng(&self, stream: u64) -> Rng {
        Rng(self.0 ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}

/// splitmix64: small, fast, and the same sequence for the same seed on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// 0..n.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One store call that writes, and whether it wrote.
#[derive(Debug, Clone)]
pub struct Written {
    pub call: &'static str,
    /// The records it writes (each with its body).
    pub writes: Vec<(RecordKey, Value)>,
    pub applied: bool,
}

/// A store that passes every call on after a seeded pause and keeps the history of writes.
pub struct RaceStore<S> {
    inner: Arc<S>,
    history: Arc<Mutex<Vec<Written>>>,
    rng: Mutex<Rng>,
    max_pause: Duration,
}

impl<S> RaceStore<S> {
    pub fn new(inner: Arc<S>, seed: Seed, max_pause: Duration) -> Self {
        RaceStore {
            inner,
            history: Arc::default(),
            rng: Mutex::new(seed.rng(1)),
            max_pause,
        }
    }

    /// Every write so far, in the order they finished.
    pub fn history(&self) -> Vec<Written> {
        self.history.lock().map(|h| h.clone()).unwrap_or_default()
    }

    /// The applied writes of records of `kind`.
    pub fn applied(&self, kind: &str) -> Vec<(RecordKey, Value)> {
        self.history()
            .into_iter()
            .filter(|w| w.applied)
            .flat_map(|w| w.writes)
            .filter(|(key, _)| key.kind == kind)
            .collect()
    }

    async fn pause(&self) {
        let micros = self
            .rng
            .lock()
            .map(|mut r| r.below(self.max_pause.as_micros() as u64 + 1))
            .unwrap_or(0);
        if micros == 0 {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(Duration::from_micros(micros)).await;
        }
    }

    fn record(&self, call: &'static str, writes: Vec<(RecordKey, Value)>, applied: bool) {
        if let Ok(mut history) = self.history.lock() {
            history.push(Written {
                call,
                writes,
                applied,
            });
        }
    }
}

impl<S: RecordStore + 'static> RecordStore for RaceStore<S> {
    fn create<'a>(
        &'a self,
        key: &'a RecordKey,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            self.pause().await;
            let result = self.inner.create(key, body, expires_at, now).await;
            self.record("create", vec![(key.clone(), body.clone())], result.is_ok());
            result
        })
    }

    fn get<'a>(&'a self, key: &'a RecordKey, now: u64) -> StoreFuture<'a, Option<Record>> {
        Box::pin(async move {
            self.pause().await;
            self.inner.get(key, now).await
        })
    }

    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        expected_revision: u64,
        body: &'a Value,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            self.pause().await;
            let result = self.inner.update(key, expected_revision, body, now).await;
            self.record("update", vec![(key.clone(), body.clone())], result.is_ok());
            result
        })
    }

    fn transact<'a>(&'a self, writes: &'a [Write], now: u64) -> TransactFuture<'a> {
        Box::pin(async move {
            self.pause().await;
            let result = self.inner.transact(writes, now).await;
            let written = writes
                .iter()
                .filter_map(|w| match w {
                    Write::Create { key, body, .. }
                    | Write::Update { key, body, .. }
                    | Write::UpdateExpiring { key, body, .. } => Some((key.clone(), body.clone())),
                    Write::Check { .. } => None,
                    Write::Delete { key, .. } => Some((key.clone(), Value::Null)),
                })
                .collect();
            self.record("transact", written, result.is_ok());
            result
        })
    }

    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        units: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        Box::pin(async move {
            self.pause().await;
            let result = self
                .inner
                .count_up_by(key, units, limit, expires_at, now)
                .await;
            let (body, applied) = match &result {
                Ok(Some(count)) => (serde_json::json!({ "count": count }), true),
                _ => (Value::Null, false),
            };
            self.record("count_up_by", vec![(key.clone(), body)], applied);
            result
        })
    }

    fn get_many<'a>(
        &'a self,
        keys: &'a [RecordKey],
        now: u64,
    ) -> StoreFuture<'a, Vec<Option<Record>>> {
        Box::pin(async move {
            self.pause().await;
            self.inner.get_many(keys, now).await
        })
    }

    fn update_expiring<'a>(
        &'a self,
        key: &'a RecordKey,
        expected_revision: u64,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            self.pause().await;
            let result = self
                .inner
                .update_expiring(key, expected_revision, body, expires_at, now)
                .await;
            self.record("update", vec![(key.clone(), body.clone())], result.is_ok());
            result
        })
    }
}

impl<S: JobStore + 'static> JobStore for RaceStore<S> {
    fn create_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Created> {
        Box::pin(async move {
            self.pause().await;
            let result = self.inner.create_job(job).await;
            let applied = matches!(result, Ok(Created::New(_)));
            self.record(
                "create_job",
                vec![(
                    job.job.record_key(),
                    serde_json::to_value(job).unwrap_or_default(),
                )],
                applied,
            );
            result
        })
    }

    fn get_job<'a>(&'a self, job: &'a JobRef) -> StoreFuture<'a, Option<Job>> {
        Box::pin(async move {
            self.pause().await;
            self.inner.get_job(job).await
        })
    }

    fn put_job<'a>(&'a self, job: &'a Job, expected_revision: u64) -> StoreFuture<'a, Job> {
        Box::pin(async move {
            self.pause().await;
            let result = self.inner.put_job(job, expected_revision).await;
            self.record(
                "put_job",
                vec![(
                    job.job.record_key(),
                    serde_json::to_value(job).unwrap_or_default(),
                )],
                result.is_ok(),
            );
            result
        })
    }

    fn list_active<'a>(&'a self, limit: usize) -> StoreFuture<'a, Vec<Job>> {
        Box::pin(async move {
            self.pause().await;
            self.inner.list_active(limit).await
        })
    }

    fn keyed_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Option<Job>> {
        Box::pin(async move {
            self.pause().await;
            self.inner.keyed_job(job).await
        })
    }
}

/// The stores a race runs on.
#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Sqlite,
    Dynamo,
}

pub async fn backend(backend: Backend) -> Arc<dyn StoreBoth> {
    match backend {
        Backend::Sqlite => {
            Arc::new(relevo_embedded::SqliteStore::in_memory().expect("an in-memory SQLite store"))
        }
        Backend::Dynamo => {
            let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT")
                .expect("RELEVO_TEST_AWS_ENDPOINT is not set: run with `make test` (it starts the moto emulator)");
            let client =
                aws_sdk_dynamodb::Client::new(&relevo_aws::emulator_config(&endpoint).await);
            let table = format!(
                "races-{}",
                relevo_state::Ids::new_id(&relevo_state::RandomIds).replace(['_', '-'], "x")
            );
            relevo_aws::create_table(&client, &table)
                .await
                .expect("the emulator creates the table");
            Arc::new(relevo_aws::DynamoStore::new(client, &table))
        }
    }
}

/// Both store ports behind one object.
pub trait StoreBoth: RecordStore + JobStore {}
impl<S: RecordStore + JobStore> StoreBoth for S {}

pub struct Both(pub Arc<dyn StoreBoth>);

impl RecordStore for Both {
    fn create<'a>(
        &'a self,
        key: &'a relevo_state::RecordKey,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> relevo_state::StoreFuture<'a, relevo_state::Record> {
        self.0.create(key, body, expires_at, now)
    }
    fn get<'a>(
        &'a self,
        key: &'a relevo_state::RecordKey,
        now: u64,
    ) -> relevo_state::StoreFuture<'a, Option<relevo_state::Record>> {
        self.0.get(key, now)
    }
    fn update<'a>(
        &'a self,
        key: &'a relevo_state::RecordKey,
        expected: u64,
        body: &'a Value,
        now: u64,
    ) -> relevo_state::StoreFuture<'a, relevo_state::Record> {
        self.0.update(key, expected, body, now)
    }
    fn transact<'a>(
        &'a self,
        writes: &'a [relevo_state::records::Write],
        now: u64,
    ) -> relevo_state::records::TransactFuture<'a> {
        self.0.transact(writes, now)
    }
    fn count_up_by<'a>(
        &'a self,
        key: &'a relevo_state::RecordKey,
        units: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> relevo_state::StoreFuture<'a, Option<u32>> {
        self.0.count_up_by(key, units, limit, expires_at, now)
    }
    fn get_many<'a>(
        &'a self,
        keys: &'a [relevo_state::RecordKey],
        now: u64,
    ) -> relevo_state::StoreFuture<'a, Vec<Option<relevo_state::Record>>> {
        self.0.get_many(keys, now)
    }
    fn update_expiring<'a>(
        &'a self,
        key: &'a relevo_state::RecordKey,
        expected: u64,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> relevo_state::StoreFuture<'a, relevo_state::Record> {
        self.0.update_expiring(key, expected, body, expires_at, now)
    }
}

impl JobStore for Both {
    fn create_job<'a>(
        &'a self,
        job: &'a relevo_state::jobs::Job,
    ) -> relevo_state::StoreFuture<'a, relevo_state::jobs::Created> {
        self.0.create_job(job)
    }
    fn get_job<'a>(
        &'a self,
        job: &'a relevo_state::jobs::JobRef,
    ) -> relevo_state::StoreFuture<'a, Option<relevo_state::jobs::Job>> {
        self.0.get_job(job)
    }
    fn put_job<'a>(
        &'a self,
        job: &'a relevo_state::jobs::Job,
        expected: u64,
    ) -> relevo_state::StoreFuture<'a, relevo_state::jobs::Job> {
        self.0.put_job(job, expected)
    }
    fn list_active<'a>(
        &'a self,
        limit: usize,
    ) -> relevo_state::StoreFuture<'a, Vec<relevo_state::jobs::Job>> {
        self.0.list_active(limit)
    }
    fn keyed_job<'a>(
        &'a self,
        job: &'a relevo_state::jobs::Job,
    ) -> relevo_state::StoreFuture<'a, Option<relevo_state::jobs::Job>> {
        self.0.keyed_job(job)
    }
}

/// What kind of failure a JSON-RPC error answer reports, for invariants over answers.
pub fn is_retryable(answer: &Value) -> bool {
    answer["error"]["data"]["retryable"] == true
}
