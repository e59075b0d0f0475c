//! Fault injection for durable work: the worker is killed at every write point (after the claim,
//! after each checkpoint, after a side effect, before and after completion), then time passes,
//! the reconciler runs, and the message is redelivered to two workers at once. Across every
//! schedule: no job lost, no job completed twice, no effect applied twice, every job terminal.
//!
//! Every schedule runs against both job stores: the SQLite adapter, and the DynamoDB adapter on the
//! moto emulator that `make test` starts. The queue is the SQLite one in both (SQS visibility runs
//! on the emulator's wall clock; its semantics are covered by the queue contract). The "kill"
//! drops the worker's future at the chosen point (a wrapper that, after letting the chosen write
//! through, never returns), like a process that died.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_state::jobs::{Created, Job, JobRef, JobStatus, JobStore};
use relevo_state::work::BoxFuture;
use relevo_state::{
    Engine, EngineConfig, JobContext, JobFailure, JobRunner, ManualClock, Queue, RandomIds,
    StartError, StoreFuture, Worker,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

const T0: u64 = 1_800_000_000;
const WINDOWS: u64 = 4;

/// Counts every effect per (job, window); an effect is applied once no matter how often a
/// runner asks (the downstream is idempotent by key), and repeats are counted separately.
#[derive(Default)]
struct Sink {
    applied: Mutex<HashMap<(String, u64), usize>>,
}

impl Sink {
    fn apply(&self, job: &str, window: u64) {
        *self
            .applied
            .lock()
            .unwrap()
            .entry((job.to_string(), window))
            .or_default() += 1;
    }
}

/// Where to kill the worker.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kill {
    Never,
    /// Right after the n-th job write of the first worker (1 = the claim).
    AfterWrite(usize),
    /// Right after the effect of window w, before its checkpoint.
    AfterEffect(u64),
}

struct Crash {
    kill: Kill,
    writes: AtomicUsize,
    armed: std::sync::atomic::AtomicBool,
    crashed: Notify,
}

impl Crash {
    async fn maybe_die_after_write(&self) {
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if self.armed.load(Ordering::SeqCst) && self.kill == Kill::AfterWrite(n) {
            self.die().await;
        }
    }

    async fn maybe_die_after_effect(&self, window: u64) {
        if self.armed.load(Ordering::SeqCst) && self.kill == Kill::AfterEffect(window) {
            self.die().await;
        }
    }

    async fn die(&self) {
        self.armed.store(false, Ordering::SeqCst);
        self.crashed.notify_one();
        std::future::pending::<()>().await;
    }
}

/// A job store with a crash point after writes.
struct CrashingStore {
    inner: Arc<dyn JobStore>,
    crash: Arc<Crash>,
    completions: AtomicUsize,
}

impl JobStore for CrashingStore {
    fn create_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Created> {
        self.inner.create_job(job)
    }

    fn get_job<'a>(&'a self, job: &'a JobRef) -> StoreFuture<'a, Option<Job>> {
        self.inner.get_job(job)
    }

    fn put_job<'a>(&'a self, job: &'a Job, expected_revision: u64) -> StoreFuture<'a, Job> {
        Box::pin(async move {
            let written = self.inner.put_job(job, expected_revision).await?;
            if written.status == JobStatus::Succeeded {
                self.completions.fetch_add(1, Ordering::SeqCst);
            }
            self.crash.maybe_die_after_write().await;
            Ok(written)
        })
    }

    fn list_active<'a>(&'a self, limit: usize) -> StoreFuture<'a, Vec<Job>> {
        self.inner.list_active(limit)
    }

    fn keyed_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Option<Job>> {
        self.inner.keyed_job(job)
    }
}

/// Processes WINDOWS windows, each an effect then a checkpoint; resumes from the checkpoint.
struct WindowRunner {
    sink: Arc<Sink>,
    crash: Arc<Crash>,
}

impl JobRunner for WindowRunner {
    fn run<'a>(&'a self, ctx: &'a JobContext) -> BoxFuture<'a, Result<Value, JobFailure>> {
        Box::pin(async move {
            let id = ctx.job().job.id.clone();
            let mut next = ctx
                .checkpoint()
                .and_then(|c| c["next"].as_u64())
                .unwrap_or(0);
            while next < WINDOWS {
                self.sink.apply(&id, next);
                self.crash.maybe_die_after_effect(next).await;
                next += 1;
                ctx.save_checkpoint(json!({ "next": next })).await?;
            }
            Ok(json!({ "windows": WINDOWS }))
        })
    }
}

struct Harness {
    engine: Arc<Worker>,
    store: Arc<CrashingStore>,
    queue: SqliteQueue,
    clock: ManualClock,
    sink: Arc<Sink>,
    crash: Arc<Crash>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Backend {
    Sqlite,
    Dynamo,
}

async fn job_store(backend: Backend, sqlite: &SqliteStore) -> Arc<dyn JobStore> {
    match backend {
        Backend::Sqlite => Arc::new(sqlite.clone()),
        Backend::Dynamo => {
            let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT")
                .expect("RELEVO_TEST_AWS_ENDPOINT is not set: run with `make test` (it starts the moto emulator)");
            let client =
                aws_sdk_dynamodb::Client::new(&relevo_aws::emulator_config(&endpoint).await);
            let table = format!(
                "faults-{}",
                relevo_state::Ids::new_id(&RandomIds).replace(['_', '-'], "x")
            );
            relevo_aws::create_table(&client, &table).await.unwrap();
            Arc::new(relevo_aws::DynamoStore::new(client, &table))
        }
    }
}

async fn harness(kill: Kill, backend: Backend) -> Harness {
    let sqlite = SqliteStore::in_memory().unwrap();
    let crash = Arc::new(Crash {
        kill,
        writes: AtomicUsize::new(0),
        armed: false.into(),
        crashed: Notify::new(),
    });
    let inner = job_store(backend, &sqlite).await;
    let store = Arc::new(CrashingStore {
        inner,
        crash: crash.clone(),
        completions: AtomicUsize::new(0),
    });
    let queue = SqliteQueue::new(sqlite, 10);
    let clock = ManualClock::at(T0);
    let sink = Arc::new(Sink::default());
    let config = EngineConfig {
        lease_secs: 30,
        max_attempts: 5,
        queued_deadline_secs: 60,
        retention_secs: 3600,
    };
    let engine = Worker::new(Arc::new(Engine::new(
        store.clone(),
        Arc::new(queue.clone()),
        Arc::new(clock.clone()),
        Arc::new(RandomIds),
        config,
    )))
    .runner(
        "windows",
        Arc::new(WindowRunner {
            sink: sink.clone(),
            crash: crash.clone(),
        }),
    );
    Harness {
        engine: Arc::new(engine),
        store,
        queue,
        clock,
        sink,
        crash,
    }
}

impl Harness {
    /// Receives everything visible and processes it with `workers` concurrent deliveries per
    /// message (duplicates on purpose); deletes a message when its processing says so.
    async fn deliver(&self, workers: usize) {
        let now = self.clock.now();
        for message in self.queue.receive(10, 30, now).await.unwrap() {
            let mut runs = tokio::task::JoinSet::new();
            for _ in 0..workers {
                let (engine, body) = (self.engine.clone(), message.body.clone());
                runs.spawn(async move { engine.process_message(&body).await });
            }
            let outcomes = runs.join_all().await;
            if outcomes.iter().any(|o| o.is_ok()) {
                self.queue.delete(&message.receipt).await.unwrap();
            }
        }
    }
}

trait Now {
    fn now(&self) -> u64;
}

impl Now for ManualClock {
    fn now(&self) -> u64 {
        relevo_state::Clock::now_unix(self)
    }
}

async fn run_schedule(kill: Kill, backend: Backend) {
    let h = harness(kill, backend).await;
    let job = h
        .engine
        .start(
            "acme",
            "alice",
            "windows",
            Some("op-1"),
            json!({ "dataset": "d" }),
        )
        .await
        .unwrap();

    // First worker: killed at the chosen point (its future is dropped, like a dead process).
    h.crash.armed.store(true, Ordering::SeqCst);
    let message = h
        .queue
        .receive(1, 30, h.clock.now())
        .await
        .unwrap()
        .remove(0);
    let engine = h.engine.clone();
    let body = message.body.clone();
    tokio::select! {
        outcome = engine.process_message(&body) => {
            assert_eq!(kill, Kill::Never, "only the schedule without a kill may finish: {outcome:?}");
            h.queue.delete(&message.receipt).await.unwrap();
        }
        _ = h.crash.crashed.notified() => {}
    }

    // Recovery: leases and visibility time out, the reconciler runs, messages are redelivered
    // to two workers at once, until nothing is left (bounded).
    for _ in 0..6 {
        h.clock.advance(61);
        h.engine.reconcile(100).await.unwrap();
        h.deliver(2).await;
    }

    let final_job = h
        .store
        .get_job(&job.job)
        .await
        .unwrap()
        .expect("no job is lost");
    assert_eq!(
        final_job.status,
        JobStatus::Succeeded,
        "{kill:?} on {backend:?}: ends terminal ({:?})",
        final_job.error
    );
    assert_eq!(
        final_job.result,
        Some(json!({ "windows": WINDOWS })),
        "{kill:?}"
    );
    assert_eq!(
        h.store.completions.load(Ordering::SeqCst),
        1,
        "{kill:?}: completed exactly once"
    );
    let applied = h.sink.applied.lock().unwrap().clone();
    for window in 0..WINDOWS {
        let times = applied
            .get(&(job.job.id.clone(), window))
            .copied()
            .unwrap_or(0);
        // A kill between an effect and its checkpoint repeats that one effect on resume (which an
        // idempotent downstream absorbs); every other window is applied exactly once.
        let allowed = if kill == Kill::AfterEffect(window) {
            2
        } else {
            1
        };
        assert!(
            (1..=allowed).contains(&times),
            "{kill:?} on {backend:?}: window {window} applied {times} times"
        );
    }
    assert!(
        h.queue.dead_letters().await.unwrap().is_empty(),
        "{kill:?}: nothing dead-lettered"
    );
}

fn schedules() -> Vec<Kill> {
    // Writes of one clean run: 1 claim + WINDOWS checkpoints + 1 completion.
    let mut schedules = vec![Kill::Never];
    schedules.extend((1..=(WINDOWS as usize + 2)).map(Kill::AfterWrite));
    schedules.extend((0..WINDOWS).map(Kill::AfterEffect));
    schedules
}

#[tokio::test]
async fn killing_the_worker_at_any_write_point_loses_nothing_and_repeats_nothing_on_sqlite() {
    for kill in schedules() {
        run_schedule(kill, Backend::Sqlite).await;
    }
}

#[tokio::test]
async fn killing_the_worker_at_any_write_point_loses_nothing_and_repeats_nothing_on_dynamodb() {
    for kill in schedules() {
        run_schedule(kill, Backend::Dynamo).await;
    }
}

#[tokio::test]
async fn same_key_same_input_is_the_same_job_and_other_input_is_a_named_conflict() {
    let h = harness(Kill::Never, Backend::Sqlite).await;
    let first = h
        .engine
        .start(
            "acme",
            "alice",
            "windows",
            Some("k"),
            json!({ "a": 1, "b": 2 }),
        )
        .await
        .unwrap();
    let again = h
        .engine
        .start(
            "acme",
            "alice",
            "windows",
            Some("k"),
            json!({ "b": 2, "a": 1 }),
        )
        .await
        .unwrap();
    assert_eq!(
        first.job.id, again.job.id,
        "key order does not change the digest"
    );
    match h
        .engine
        .start("acme", "alice", "windows", Some("k"), json!({ "a": 2 }))
        .await
    {
        Err(StartError::KeyConflict {
            operation_key,
            existing,
        }) => {
            assert_eq!(
                (operation_key.as_str(), existing.as_str()),
                ("k", first.job.id.as_str())
            );
        }
        other => panic!("expected a key conflict, got {other:?}"),
    }
}

#[tokio::test]
async fn concurrent_starts_with_one_key_make_one_job() {
    let h = harness(Kill::Never, Backend::Sqlite).await;
    let mut starts = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let engine = h.engine.clone();
        starts.spawn(async move {
            engine
                .start("acme", "alice", "windows", Some("same"), json!({ "x": 1 }))
                .await
                .unwrap()
                .job
                .id
        });
    }
    let ids = starts.join_all().await;
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(h.store.list_active(100).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_job_past_its_attempt_budget_fails_with_a_reason() {
    let h = harness(Kill::Never, Backend::Sqlite).await;
    let job = h
        .engine
        .start("acme", "alice", "windows", None, json!({}))
        .await
        .unwrap();
    let mut stuck = h.store.get_job(&job.job).await.unwrap().unwrap();
    for _ in 0..5 {
        // A worker claims and dies without a trace: only the claim is written.
        let mut claimed = stuck.next(h.clock.now());
        claimed.status = JobStatus::Running;
        claimed.attempts += 1;
        claimed.lease = Some(relevo_state::Lease {
            owner: "dead".into(),
            expires_at: h.clock.now() + 30,
        });
        h.store.put_job(&claimed, stuck.revision).await.unwrap();
        h.clock.advance(31);
        h.engine.reconcile(100).await.unwrap();
        stuck = h.store.get_job(&job.job).await.unwrap().unwrap();
    }
    assert_eq!(stuck.status, JobStatus::Failed);
    assert!(stuck.error.unwrap().contains("attempt budget exhausted"));
}

#[tokio::test]
async fn cancel_is_idempotent_and_a_queued_job_never_runs() {
    let h = harness(Kill::Never, Backend::Sqlite).await;
    let job = h
        .engine
        .start("acme", "alice", "windows", None, json!({}))
        .await
        .unwrap();
    let first = h.engine.cancel(&job.job).await.unwrap().unwrap();
    let second = h.engine.cancel(&job.job).await.unwrap().unwrap();
    assert_eq!(
        (first.status, second.status),
        (JobStatus::Cancelled, JobStatus::Cancelled)
    );
    assert_eq!(
        second.revision, first.revision,
        "a second cancel writes nothing"
    );
    h.deliver(1).await;
    assert!(
        h.sink.applied.lock().unwrap().is_empty(),
        "a cancelled job never runs"
    );
    let other = JobRef {
        tenant: "globex".into(),
        ..job.job.clone()
    };
    assert_eq!(
        h.engine.cancel(&other).await.unwrap(),
        None,
        "another tenant cannot cancel it"
    );
}
