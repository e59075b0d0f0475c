//! Durable path: JOBS jobs (four checkpointed windows each) through the engine on the embedded
//! SQLite store and queue, as the local worker loop does (batches of 10), timed end to end; and
//! the store and queue calls per job, counted by wrapping the store and the queue. Each store call
//! maps to one DynamoDB request in the AWS adapter (create_job → TransactWriteItems, get_job →
//! GetItem, put_job → PutItem) and each queue call to one SQS request (send → SendMessage,
//! receive → ReceiveMessage, delete → DeleteMessage). DynamoDB units follow [`crate::cost`]'s
//! rules on the job's size (its JSON plus [`crate::cost::ITEM_OVERHEAD_BYTES`]): create_job with
//! an operation key is a transaction of two items (the key's small item and the job), 2 WRU per
//! item per KB; a get 1 RRU per 4 KB (strongly consistent); a put 1 WRU per KB.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_state::jobs::{Created, Job, JobRef, JobStore};
use relevo_state::work::BoxFuture;
use relevo_state::{
    Engine, EngineConfig, JobContext, JobFailure, JobRunner, Queue, QueueMessage, RandomIds,
    StoreFuture, SystemClock, Worker,
};
use serde_json::{Value, json};

#[derive(Default)]
struct Calls {
    create: AtomicU64,
    get: AtomicU64,
    put: AtomicU64,
    send: AtomicU64,
    receive: AtomicU64,
    delete: AtomicU64,
    /// Read and write units, in thousandths.
    rru_milli: AtomicU64,
    wru_milli: AtomicU64,
}

fn job_bytes(job: &Job) -> usize {
    serde_json::to_string(job).map_or(0, |j| j.len()) + crate::cost::ITEM_OVERHEAD_BYTES
}

fn add_units(counter: &AtomicU64, units: f64) {
    counter.fetch_add((units * 1000.0).round() as u64, Ordering::Relaxed);
}

struct Counted<T> {
    inner: T,
    calls: Arc<Calls>,
}

impl<T: JobStore> JobStore for Counted<T> {
    fn create_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Created> {
        self.calls.create.fetch_add(1, Ordering::Relaxed);
        let units = if job.operation_key.is_some() {
            crate::cost::transact_units(crate::cost::ITEM_OVERHEAD_BYTES)
                + crate::cost::transact_units(job_bytes(job))
        } else {
            crate::cost::write_units(job_bytes(job))
        };
        add_units(&self.calls.wru_milli, units);
        self.inner.create_job(job)
    }
    fn get_job<'a>(&'a self, job: &'a JobRef) -> StoreFuture<'a, Option<Job>> {
        self.calls.get.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let found = self.inner.get_job(job).await;
            let bytes = match &found {
                Ok(Some(job)) => job_bytes(job),
                _ => 0,
            };
            add_units(&self.calls.rru_milli, crate::cost::read_units(bytes));
            found
        })
    }
    fn put_job<'a>(&'a self, job: &'a Job, expected: u64) -> StoreFuture<'a, Job> {
        self.calls.put.fetch_add(1, Ordering::Relaxed);
        add_units(
            &self.calls.wru_milli,
            crate::cost::write_units(job_bytes(job)),
        );
        self.inner.put_job(job, expected)
    }
    fn list_active<'a>(&'a self, limit: usize) -> StoreFuture<'a, Vec<Job>> {
        self.inner.list_active(limit)
    }

    fn keyed_job<'a>(&'a self, job: &'a Job) -> StoreFuture<'a, Option<Job>> {
        self.inner.keyed_job(job)
    }
}

impl<T: Queue> Queue for Counted<T> {
    fn send<'a>(&'a self, body: &'a str) -> StoreFuture<'a, ()> {
        self.calls.send.fetch_add(1, Ordering::Relaxed);
        self.inner.send(body)
    }
    fn receive<'a>(
        &'a self,
        max: usize,
        visibility: u64,
        now: u64,
    ) -> StoreFuture<'a, Vec<QueueMessage>> {
        self.calls.receive.fetch_add(1, Ordering::Relaxed);
        self.inner.receive(max, visibility, now)
    }
    fn delete<'a>(&'a self, receipt: &'a str) -> StoreFuture<'a, ()> {
        self.calls.delete.fetch_add(1, Ordering::Relaxed);
        self.inner.delete(receipt)
    }
    fn change_visibility<'a>(
        &'a self,
        receipt: &'a str,
        secs: u64,
        now: u64,
    ) -> StoreFuture<'a, ()> {
        self.inner.change_visibility(receipt, secs, now)
    }
}

const WINDOWS: u64 = 4;

struct Windows;

impl JobRunner for Windows {
    fn run<'a>(&'a self, ctx: &'a JobContext) -> BoxFuture<'a, Result<Value, JobFailure>> {
        Box::pin(async move {
            let mut next = ctx
                .checkpoint()
                .and_then(|c| c["next"].as_u64())
                .unwrap_or(0);
            while next < WINDOWS {
                next += 1;
                ctx.save_checkpoint(json!({ "next": next })).await?;
            }
            Ok(json!({ "windows": WINDOWS }))
        })
    }
}

/// What one durable run measured.
pub struct Durable {
    pub jobs: u64,
    pub windows: u64,
    pub starts_per_sec: f64,
    pub jobs_per_sec: f64,
    /// utime + stime of this process per job, end to end (relevo's engine and the embedded SQLite).
    pub cpu_us_per_job: f64,
    pub create: f64,
    pub get: f64,
    pub put: f64,
    pub send: f64,
    pub receive: f64,
    pub delete: f64,
    /// DynamoDB read and write request units per job.
    pub rru: f64,
    pub wru: f64,
}

impl Durable {
    pub fn dynamo(&self) -> f64 {
        self.create + self.get + self.put
    }
    pub fn sqs(&self) -> f64 {
        self.send + self.receive + self.delete
    }
}

pub async fn run(jobs: u64) -> Result<Durable, Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("relevo-bench-{}", std::process::id()));
    let sqlite = SqliteStore::open(&dir.join("bench.db"))?;
    let calls = Arc::new(Calls::default());
    let store = Arc::new(Counted {
        inner: sqlite.clone(),
        calls: calls.clone(),
    });
    let queue = Arc::new(Counted {
        inner: SqliteQueue::new(sqlite, 5),
        calls: calls.clone(),
    });
    let engine = Worker::new(Arc::new(Engine::new(
        store,
        queue.clone(),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        EngineConfig::default(),
    )))
    .runner("windows", Arc::new(Windows));

    let ticks = crate::load::ticks_per_sec().map_err(|e| e.to_string())?;
    let cpu_before = crate::rig::process_cpu_secs("self", ticks).map_err(|e| e.to_string())?;
    let started = Instant::now();
    for n in 0..jobs {
        engine
            .start(
                "bench",
                "runner",
                "windows",
                Some(&format!("job-{n}")),
                json!({ "n": n }),
            )
            .await?;
    }
    let enqueued = started.elapsed();
    let mut done = 0;
    while done < jobs {
        let messages = queue.receive(10, 60, 0).await?;
        let batch = messages
            .iter()
            .map(|m| (m.id.clone(), m.body.clone()))
            .collect();
        let failed = engine.process_batch(batch).await;
        for message in messages.iter().filter(|m| !failed.contains(&m.id)) {
            queue.delete(&message.receipt).await?;
            done += 1;
        }
    }
    let elapsed = started.elapsed();
    let cpu = crate::rig::process_cpu_secs("self", ticks).map_err(|e| e.to_string())? - cpu_before;
    std::fs::remove_dir_all(&dir)?;

    let per_job = |counter: &AtomicU64| counter.load(Ordering::Relaxed) as f64 / jobs as f64;
    Ok(Durable {
        jobs,
        windows: WINDOWS,
        starts_per_sec: jobs as f64 / enqueued.as_secs_f64(),
        jobs_per_sec: jobs as f64 / elapsed.as_secs_f64(),
        cpu_us_per_job: cpu * 1e6 / jobs as f64,
        create: per_job(&calls.create),
        get: per_job(&calls.get),
        put: per_job(&calls.put),
        send: per_job(&calls.send),
        receive: per_job(&calls.receive),
        delete: per_job(&calls.delete),
        rru: per_job(&calls.rru_milli) / 1000.0,
        wru: per_job(&calls.wru_milli) / 1000.0,
    })
}

/// The figures as the original `relevo-bench JOBS` printed them.
pub fn print(d: &Durable) {
    println!(
        "durable work, embedded SQLite store and queue, {} jobs of {} checkpointed windows, batches of 10",
        d.jobs, d.windows
    );
    println!(
        "  starts (create + enqueue): {:.0} jobs/s",
        d.starts_per_sec
    );
    println!(
        "  end to end (start, claim, {} checkpoints, complete, delete): {:.0} jobs/s",
        d.windows, d.jobs_per_sec
    );
    println!("  CPU per job, end to end: {:.0} µs", d.cpu_us_per_job);
    println!(
        "  DynamoDB-equivalent calls per job: {:.2} (TransactWriteItems {:.2}, GetItem {:.2}, PutItem {:.2})",
        d.dynamo(),
        d.create,
        d.get,
        d.put
    );
    println!(
        "  SQS-equivalent calls per job: {:.2} (SendMessage {:.2}, ReceiveMessage {:.2}, DeleteMessage {:.2})",
        d.sqs(),
        d.send,
        d.receive,
        d.delete
    );
}
