//! The fault matrix of the operation ledger (crash points × duplicate patterns × tenancy), on the
//! SQLite store and on DynamoDB (moto, started by `make test`).
//!
//! SQLite runs every combination (216 schedules); DynamoDB runs every fault × duplicate pattern
//! with the tenancies taking turns (72 schedules, each fault meeting each tenancy twice).
//!
//! One schedule: an agent proposes a change that needs a person (request key `k1`), a person
//! approves it, the agent applies it. One fault is injected at a chosen point: the process dies
//! right after the n-th store write (its future is dropped, as a dead Lambda's would be), or a
//! write is applied but its answer is lost, or the downstream dies or loses its answer after its
//! effect, or hangs before it. Then the duplicate pattern plays (an immediate retry while the
//! dead executor's lease is live, sequential retries, concurrent retries, a retry with the same
//! request key and other arguments, late retries after the end (an hour later, past the desk's
//! report window, naming the operation), a replayed approval), the clock
//! passes the lease, the reconciler settles, and someone of the chosen tenancy (the same agent,
//! another principal of the tenant, another tenant with the same raw ids) pokes at it.
//!
//! In the terms of the reliability matrix: C1 = `DieAfterWrite(1)` (the proposal), C2 =
//! `DieAfterWrite(2)` (proposed → authorized), C4 = `DieAfterWrite(3)` (authorized → executing),
//! the commit = `DieAfterWrite(4)` (stock CAS + ledger + outbox), C5 = `DieAfterEffect`, C6 =
//! `DieAfterWrite(5)` (executing → succeeded), C8 = `HangBeforeEffect`; F3 (applied, answer lost) =
//! `LoseWriteAnswer` and `LoseEffectAnswer`. C3/C7 (the queue) do not occur on this path: execution
//! runs in the request; the settle job it leaves is covered by the reconciler test at the end.
//! D1, D2, D3, D6 and D7 are the duplicate patterns below; D5 (a second executor while the first
//! is still leased) is the immediate retry every schedule makes. D4 (retry after the record's TTL)
//! is not simulated: operations are kept 30 days, proposals expire after one.
//!
//! Invariants checked after every schedule: at most one downstream effect and one stock commit
//! per operation, and exactly one when it succeeded; the history is a path of the allowed graph;
//! a request key reused with other arguments is a mismatch error; no read from another tenant or
//! principal finds the operation; nothing is left `executing` or `unknown` after the reconciler;
//! every reply about a finished operation carries the same first receipt.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed unwrap is a failed test

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use relevo_app::inventory::{
    BoxFuture, Downstream, DownstreamError, Inventory, InventoryConfig, InventoryError,
    ProposeRequest, stock_key,
};
use relevo_embedded::SqliteStore;
use relevo_protocol::Principal;
use relevo_state::ledger::{LedgerError, OpStatus, is_valid_path};
use relevo_state::records::{TransactFuture, Write};
use relevo_state::{
    ManualClock, Queue, RandomIds, Record, RecordKey, RecordStore, StoreError, StoreFuture,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

const T0: u64 = 1_900_000_000;
const LEASE: u64 = 30;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// The process dies right after the n-th store write (1 propose, 2 approve, 3 executing,
    /// 4 commit, 5 succeeded).
    DieAfterWrite(usize),
    /// The n-th write is applied but its answer is lost (the caller sees an error).
    LoseWriteAnswer(usize),
    /// The downstream applies the effect, then the process dies before hearing back.
    DieAfterEffect,
    /// The downstream applies the effect and its answer is lost.
    LoseEffectAnswer,
    /// The handler times out while the downstream call hangs (before any effect).
    HangBeforeEffect,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Duplicate {
    /// D0: no retry beyond recovery.
    None,
    /// D1: the same apply, sequentially, three times.
    Sequential,
    /// D2: four identical applies at once.
    Concurrent,
    /// D3: the same request key with another payload.
    OtherPayload,
    /// D6: late retries of propose and apply after the end.
    Late,
    /// D7: the approval replayed.
    ReplayedApproval,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tenancy {
    /// T0: the same principal.
    Same,
    /// T1: another principal of the same tenant.
    OtherPrincipal,
    /// T2: another tenant, with the same subject and operation id.
    OtherTenant,
}

struct Injector {
    fault: Fault,
    armed: AtomicBool,
    writes: AtomicUsize,
    crashed: Notify,
}

impl Injector {
    /// After a write went through: maybe die or lose the answer.
    async fn after_write(&self) -> Result<(), ()> {
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.armed.load(Ordering::SeqCst) {
            return Ok(());
        }
        match self.fault {
            Fault::DieAfterWrite(at) if at == n => self.die().await,
            Fault::LoseWriteAnswer(at) if at == n => {
                self.armed.store(false, Ordering::SeqCst);
                Err(())
            }
            _ => Ok(()),
        }
    }

    fn fires(&self, fault: Fault) -> bool {
        self.fault == fault && self.armed.swap(false, Ordering::SeqCst)
    }

    async fn die(&self) -> Result<(), ()> {
        self.armed.store(false, Ordering::SeqCst);
        self.crashed.notify_one();
        std::future::pending::<()>().await;
        Ok(())
    }
}

/// The store, with the injector after every write.
struct FaultyStore {
    inner: Arc<dyn RecordStore>,
    injector: Arc<Injector>,
}

fn lost() -> StoreError {
    StoreError::Unavailable("the answer was lost (timeout)".into())
}

impl RecordStore for FaultyStore {
    fn create<'a>(
        &'a self,
        key: &'a RecordKey,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            let written = self.inner.create(key, body, expires_at, now).await?;
            self.injector.after_write().await.map_err(|_| lost())?;
            Ok(written)
        })
    }

    fn get<'a>(&'a self, key: &'a RecordKey, now: u64) -> StoreFuture<'a, Option<Record>> {
        self.inner.get(key, now)
    }

    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        expected: u64,
        body: &'a Value,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        Box::pin(async move {
            let written = self.inner.update(key, expected, body, now).await?;
            self.injector.after_write().await.map_err(|_| lost())?;
            Ok(written)
        })
    }

    fn transact<'a>(&'a self, writes: &'a [Write], now: u64) -> TransactFuture<'a> {
        Box::pin(async move {
            let written = self.inner.transact(writes, now).await?;
            self.injector
                .after_write()
                .await
                .map_err(|_| relevo_state::TransactError::Store(lost()))?;
            Ok(written)
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
            let counted = self
                .inner
                .count_up_by(key, units, limit, expires_at, now)
                .await?;
            self.injector.after_write().await.map_err(|_| lost())?;
            Ok(counted)
        })
    }
}

/// A downstream with its own idempotency (by key), counting effects, with injected faults.
struct CountingDownstream {
    receipts: Mutex<HashMap<(String, String), Value>>,
    effects: Mutex<HashMap<(String, String), usize>>,
    injector: Arc<Injector>,
}

impl Downstream for CountingDownstream {
    fn deliver<'a>(
        &'a self,
        tenant: &'a str,
        key: &'a str,
        payload: &'a Value,
    ) -> BoxFuture<'a, Result<Value, DownstreamError>> {
        Box::pin(async move {
            if self.injector.fires(Fault::HangBeforeEffect) {
                self.injector.crashed.notify_one();
                std::future::pending::<()>().await;
            }
            let id = (tenant.to_string(), key.to_string());
            let receipt = {
                let mut receipts = self.receipts.lock().unwrap();
                if let Some(first) = receipts.get(&id) {
                    first.clone()
                } else {
                    let receipt = json!({ "receiptId": format!("r-{key}"), "payload": payload });
                    receipts.insert(id.clone(), receipt.clone());
                    *self.effects.lock().unwrap().entry(id).or_default() += 1;
                    receipt
                }
            };
            if self.injector.fires(Fault::DieAfterEffect) {
                self.injector.crashed.notify_one();
                std::future::pending::<()>().await;
            }
            if self.injector.fires(Fault::LoseEffectAnswer) {
                return Err(DownstreamError::NoAnswer("timeout".into()));
            }
            Ok(receipt)
        })
    }

    fn receipt<'a>(
        &'a self,
        tenant: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, DownstreamError>> {
        Box::pin(async move {
            Ok(self
                .receipts
                .lock()
                .unwrap()
                .get(&(tenant.to_string(), key.to_string()))
                .cloned())
        })
    }
}

struct World {
    inventory: Inventory,
    raw: Arc<dyn RecordStore>,
    clock: ManualClock,
    injector: Arc<Injector>,
    downstream: Arc<CountingDownstream>,
}

fn world(store: Arc<dyn RecordStore>, fault: Fault) -> World {
    let injector = Arc::new(Injector {
        fault,
        armed: false.into(),
        writes: AtomicUsize::new(0),
        crashed: Notify::new(),
    });
    let downstream = Arc::new(CountingDownstream {
        receipts: Mutex::default(),
        effects: Mutex::default(),
        injector: injector.clone(),
    });
    let clock = ManualClock::at(T0);
    let inventory = Inventory {
        records: Arc::new(FaultyStore {
            inner: store.clone(),
            injector: injector.clone(),
        }),
        downstream: downstream.clone(),
        clock: Arc::new(clock.clone()),
        ids: Arc::new(RandomIds),
        config: InventoryConfig {
            lease_secs: LEASE,
            approvals_url: "http://127.0.0.1/approvals".into(),
        },
        settler: None,
    };
    World {
        inventory,
        raw: store,
        clock,
        injector,
        downstream,
    }
}

impl World {
    /// Runs `step`; `None` if the process died during it.
    async fn attempt<T>(&self, step: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::select! {
            value = step => Some(value),
            _ = self.injector.crashed.notified() => None,
        }
    }

    fn effects(&self, tenant: &str, id: &str) -> usize {
        self.downstream
            .effects
            .lock()
            .unwrap()
            .get(&(tenant.to_string(), id.to_string()))
            .copied()
            .unwrap_or(0)
    }
}

fn agent(tenant: &str) -> Principal {
    Principal::new(tenant, "agent", ["inventory:read", "inventory:write"])
}

fn person(tenant: &str) -> Principal {
    Principal::new(tenant, "manager", ["inventory:read", "inventory:approve"])
}

fn request(to: u64) -> ProposeRequest {
    ProposeRequest {
        warehouse: "main".into(),
        sku: "MUG".into(),
        to,
        expected_version: 1,
        request_key: Some("k1".into()),
        task_scopes: None,
    }
}

async fn propose(w: &World, tenant: &str) -> relevo_state::ledger::Operation {
    for _ in 0..3 {
        if let Some(Ok(op)) = w
            .attempt(w.inventory.propose(&agent(tenant), &request(50)))
            .await
        {
            return op;
        }
    }
    panic!("propose never answered")
}

async fn run_schedule(
    store: Arc<dyn RecordStore>,
    n: usize,
    fault: Fault,
    duplicate: Duplicate,
    tenancy: Tenancy,
) {
    let label = format!("#{n} {fault:?} × {duplicate:?} × {tenancy:?}");
    let tenant = format!("acme-{n}");
    let w = world(store, fault);
    w.raw
        .create(
            &stock_key(&tenant, "main", "MUG"),
            &json!({ "warehouse": "main", "sku": "MUG", "quantity": 10 }),
            None,
            T0,
        )
        .await
        .unwrap();
    w.injector.armed.store(true, Ordering::SeqCst);

    // The agent proposes (a retry with the same request key finds the first proposal).
    let op = propose(&w, &tenant).await;
    let id = op.proposal.operation_id.clone();
    assert_eq!(
        op.status,
        OpStatus::Proposed,
        "{label}: 40 units need a person"
    );
    if duplicate == Duplicate::OtherPayload {
        let other = w.inventory.propose(&agent(&tenant), &request(51)).await;
        assert!(
            matches!(other, Err(InventoryError::KeyMismatch(_))),
            "{label}: D3 must be a mismatch: {other:?}"
        );
    }

    // A person approves; the answer may be lost or the process may die: they submit again.
    let mut approved = false;
    for _ in 0..3 {
        match w
            .attempt(w.inventory.decide(&person(&tenant), &id, &op.digest, true))
            .await
        {
            Some(Ok(_)) => approved = true,
            Some(Err(InventoryError::Ledger(LedgerError::IllegalTransition {
                from: "authorized",
                ..
            }))) => approved = true,
            _ => {}
        }
        if approved {
            break;
        }
    }
    assert!(approved, "{label}: the approval lands");
    if duplicate == Duplicate::ReplayedApproval {
        let replay = w
            .inventory
            .decide(&person(&tenant), &id, &op.digest, true)
            .await;
        assert!(
            matches!(
                replay,
                Err(InventoryError::Ledger(
                    LedgerError::IllegalTransition { .. }
                ))
            ),
            "{label}: {replay:?}"
        );
    }

    // The agent applies; the fault may strike here.
    let _ = w.attempt(w.inventory.apply(&agent(&tenant), None)).await;
    // D5: a retry while the first executor may still hold its lease starts nothing new.
    let _ = w.inventory.apply(&agent(&tenant), None).await;
    assert!(
        w.effects(&tenant, &id) <= 1,
        "{label}: at most one effect while leased"
    );

    // Time passes the lease; the reconciler settles by operation id.
    w.clock.advance(LEASE + 1);
    w.inventory.settle(&tenant, &id).await.unwrap();

    let mut replies = Vec::new();
    match duplicate {
        Duplicate::Sequential => {
            for _ in 0..3 {
                replies.push(w.inventory.apply(&agent(&tenant), None).await.unwrap());
            }
        }
        Duplicate::Concurrent => {
            let mut racers = tokio::task::JoinSet::new();
            for _ in 0..4 {
                let (inventory, principal) = (w.inventory.clone(), agent(&tenant));
                racers.spawn(async move { inventory.apply(&principal, None).await.unwrap() });
            }
            replies.extend(racers.join_all().await);
        }
        _ => replies.push(w.inventory.apply(&agent(&tenant), None).await.unwrap()),
    }
    if duplicate == Duplicate::Late {
        w.clock.advance(3600);
        let again = w
            .inventory
            .propose(&agent(&tenant), &request(50))
            .await
            .unwrap();
        assert_eq!(
            again.proposal.operation_id, id,
            "{label}: the same request key names the first operation"
        );
        // Past the desk's report window a finished operation has left the desk: the plain apply
        // runs nothing again (the effect count below), and naming the operation reports it.
        w.inventory.apply(&agent(&tenant), None).await.unwrap();
        replies.push(
            w.inventory
                .apply(&agent(&tenant), Some(std::slice::from_ref(&id)))
                .await
                .unwrap(),
        );
    }

    // Tenancy: others find nothing and change nothing.
    match tenancy {
        Tenancy::Same => {}
        Tenancy::OtherPrincipal => {
            let bob = Principal::new(&tenant, "bob", ["inventory:read", "inventory:write"]);
            let theirs = w
                .inventory
                .apply(&bob, Some(std::slice::from_ref(&id)))
                .await
                .unwrap();
            assert_eq!(
                theirs,
                vec![json!({ "operationId": id, "status": "not_found" })],
                "{label}"
            );
        }
        Tenancy::OtherTenant => {
            let foreign = format!("globex-{n}");
            assert_eq!(
                w.inventory.operation(&foreign, &id).await.unwrap(),
                None,
                "{label}: no cross-tenant read"
            );
            let theirs = w
                .inventory
                .apply(&agent(&foreign), Some(std::slice::from_ref(&id)))
                .await
                .unwrap();
            assert_eq!(
                theirs,
                vec![json!({ "operationId": id, "status": "not_found" })],
                "{label}"
            );
            let decided = w
                .inventory
                .decide(&person(&foreign), &id, &op.digest, false)
                .await;
            assert_eq!(
                decided,
                Err(InventoryError::NotFound),
                "{label}: another tenant cannot decide"
            );
        }
    }

    // Invariants.
    assert!(
        fault == Fault::None || !w.injector.armed.load(Ordering::SeqCst),
        "{label}: the fault was injected"
    );
    let (final_op, _) = w
        .inventory
        .operation(&tenant, &id)
        .await
        .unwrap()
        .expect("the operation is kept");
    assert!(
        is_valid_path(&final_op.statuses()),
        "{label}: history {:?}",
        final_op.statuses()
    );
    assert!(
        final_op.status.is_terminal(),
        "{label}: nothing left {:?} after the reconciler",
        final_op.status
    );
    let stock = w.inventory.read(&tenant, "main", "MUG").await.unwrap();
    let effects = w.effects(&tenant, &id);
    match final_op.status {
        OpStatus::Succeeded => {
            assert_eq!(
                (stock.quantity, stock.version, effects),
                (50, 2, 1),
                "{label}: exactly one commit and one effect"
            );
            let receipt = final_op.receipt.clone().unwrap();
            assert_eq!(
                receipt["downstreamReceipt"],
                json!(format!("r-{id}")),
                "{label}"
            );
            // Racing applies of a re-authorized operation: the one that won the execution
            // reports the receipt; a loser honestly reports it executing, and its next apply
            // reports the same receipt.
            let mut with_receipt = 0;
            for reply in &replies {
                let ours: Vec<&Value> = reply
                    .iter()
                    .filter(|r| r["operationId"] == json!(id))
                    .collect();
                assert_eq!(ours.len(), 1, "{label}: {reply:?}");
                if ours[0]["status"] == "executing" && duplicate == Duplicate::Concurrent {
                    assert_eq!(
                        ours[0]["receipt"],
                        Value::Null,
                        "{label}: no receipt before the commit"
                    );
                    continue;
                }
                assert_eq!(
                    ours[0]["receipt"], receipt,
                    "{label}: every finished reply carries the first receipt"
                );
                with_receipt += 1;
            }
            assert!(
                with_receipt >= 1 || duplicate == Duplicate::Concurrent,
                "{label}: some reply has the receipt"
            );
            let after = w
                .inventory
                .apply(&agent(&tenant), Some(std::slice::from_ref(&id)))
                .await
                .unwrap();
            assert_eq!(
                after[0]["receipt"], receipt,
                "{label}: the next apply reports the first receipt"
            );
        }
        // An executor that died before its commit leaves nothing applied: the operation is
        // authorized again and the next apply executes it, so nothing ends rejected.
        other => panic!("{label}: ended {other:?}: {:?}", final_op.reason),
    }
    // An executor that died before its commit made the first attempt; the next apply the second.
    let attempts = if matches!(fault, Fault::DieAfterWrite(3) | Fault::LoseWriteAnswer(3)) {
        2
    } else {
        1
    };
    assert!(
        final_op.attempts <= attempts,
        "{label}: {} execution attempts made, at most {attempts}",
        final_op.attempts
    );
}

fn faults() -> Vec<Fault> {
    let mut faults = vec![Fault::None];
    faults.extend((1..=5).map(Fault::DieAfterWrite));
    faults.extend((3..=5).map(Fault::LoseWriteAnswer));
    faults.extend([
        Fault::DieAfterEffect,
        Fault::LoseEffectAnswer,
        Fault::HangBeforeEffect,
    ]);
    faults
}

/// Every fault × every duplicate pattern; with `all_tenancies` each of those × every tenancy,
/// otherwise the tenancies take turns (each fault still meets each tenancy twice).
async fn matrix(store: Arc<dyn RecordStore>, all_tenancies: bool) -> usize {
    let duplicates = [
        Duplicate::None,
        Duplicate::Sequential,
        Duplicate::Concurrent,
        Duplicate::OtherPayload,
        Duplicate::Late,
        Duplicate::ReplayedApproval,
    ];
    let mut n = 0;
    let mut pairs = 0;
    for fault in faults() {
        for duplicate in duplicates {
            pairs += 1;
            for tenancy in [Tenancy::Same, Tenancy::OtherPrincipal, Tenancy::OtherTenant] {
                if !all_tenancies && pairs % 3 != tenancy as usize {
                    continue;
                }
                n += 1;
                run_schedule(store.clone(), n, fault, duplicate, tenancy).await;
            }
        }
    }
    n
}

#[tokio::test]
async fn every_fault_schedule_keeps_one_effect_a_valid_history_and_tenants_apart_on_sqlite() {
    let schedules = matrix(Arc::new(SqliteStore::in_memory().unwrap()), true).await;
    assert_eq!(schedules, 12 * 6 * 3);
}

#[tokio::test]
async fn every_fault_schedule_keeps_one_effect_a_valid_history_and_tenants_apart_on_dynamodb() {
    let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT").expect(
        "RELEVO_TEST_AWS_ENDPOINT is not set: run with `make test` (it starts the moto emulator)",
    );
    let client = aws_sdk_dynamodb::Client::new(&relevo_aws::emulator_config(&endpoint).await);
    let table = format!(
        "ledger-{}",
        relevo_state::Ids::new_id(&RandomIds).replace(['_', '-'], "x")
    );
    relevo_aws::create_table(&client, &table).await.unwrap();
    // The emulator answers in milliseconds, not microseconds: the tenancies take turns here.
    let schedules = matrix(
        Arc::new(relevo_aws::DynamoStore::new(client, &table)),
        false,
    )
    .await;
    assert_eq!(schedules, 12 * 6);
}

/// The reconciler path: an executor dies right after its commit, and nobody retries. The settle
/// job it left behind (deferred, so it costs nothing when the executor lives) is enqueued by the
/// reconciler once past its deadline; the worker settles the operation by asking the downstream.
#[tokio::test]
async fn an_executor_that_dies_after_its_commit_is_settled_by_the_reconciler_without_any_retry() {
    let sqlite = SqliteStore::in_memory().unwrap();
    let mut w = world(Arc::new(sqlite.clone()), Fault::DieAfterWrite(4));
    let queue = relevo_embedded::SqliteQueue::new(sqlite.clone(), 5);
    let config = relevo_state::EngineConfig {
        lease_secs: 60,
        max_attempts: 5,
        queued_deadline_secs: 60,
        retention_secs: 3600,
    };
    let engine = Arc::new(relevo_state::Engine::new(
        Arc::new(sqlite),
        Arc::new(queue.clone()),
        Arc::new(w.clock.clone()),
        Arc::new(RandomIds),
        config,
    ));
    w.inventory.settler = Some(engine.clone());
    let (inventory, settle) = (w.inventory.clone(), relevo_app::inventory::SETTLE);
    let settle = settle.runner(move |input, cx| inventory.clone().settle_job(input, cx));
    let engine =
        relevo_state::Worker::new(engine).runner(relevo_app::inventory::SETTLE.name(), settle);

    let tenant = "acme";
    w.raw
        .create(
            &stock_key(tenant, "main", "MUG"),
            &json!({ "quantity": 10 }),
            None,
            T0,
        )
        .await
        .unwrap();
    w.injector.armed.store(true, Ordering::SeqCst);
    let op = propose(&w, tenant).await;
    let id = op.proposal.operation_id.clone();
    w.inventory
        .decide(&person(tenant), &id, &op.digest, true)
        .await
        .unwrap();
    assert!(
        w.attempt(w.inventory.apply(&agent(tenant), None))
            .await
            .is_none(),
        "the executor dies after its commit"
    );
    let stuck = w.inventory.operation(tenant, &id).await.unwrap().unwrap().0;
    assert_eq!(
        (stuck.status, w.effects(tenant, &id)),
        (OpStatus::Executing, 0)
    );
    let now = relevo_state::Clock::now_unix(&w.clock);
    assert!(
        queue.receive(10, 30, now).await.unwrap().is_empty(),
        "the settle job waits unqueued"
    );

    w.clock.advance(61);
    let report = engine.reconcile(100).await.unwrap();
    assert_eq!(report.requeued, 1, "the reconciler enqueues the settle job");
    let now = relevo_state::Clock::now_unix(&w.clock);
    for message in queue.receive(10, 30, now).await.unwrap() {
        engine.process_message(&message.body).await.unwrap();
    }
    let settled = w.inventory.operation(tenant, &id).await.unwrap().unwrap().0;
    assert_eq!(settled.status, OpStatus::Succeeded, "{:?}", settled.history);
    assert!(is_valid_path(&settled.statuses()));
    assert_eq!(
        settled.statuses(),
        [
            OpStatus::Proposed,
            OpStatus::Authorized,
            OpStatus::Executing,
            OpStatus::Unknown,
            OpStatus::Succeeded
        ]
    );
    assert_eq!(
        w.effects(tenant, &id),
        1,
        "one effect, delivered from the outbox"
    );
    assert_eq!(
        w.inventory
            .read(tenant, "main", "MUG")
            .await
            .unwrap()
            .quantity,
        50
    );
}
