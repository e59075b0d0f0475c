//! The shop's built `relevo-ops` binary (`src/bin/relevo-ops.rs`: the framework's operator CLI,
//! `relevo_ops`, with the inventory's reconcile hook registered) against both backends: a
//! temporary SQLite file, and DynamoDB, SQS and Secrets Manager on the moto emulator
//! (`infra/scripts/with-moto.sh`, as `make test` runs it). The `ops reconcile` runs below are the
//! hook being called: they settle through the inventory's own code. The stores are seeded through the real ports (RecordStore, JobStore, Queue, the
//! app's simulated downstream), then every command runs as an operator would run it, in both
//! output forms. Without `RELEVO_TEST_AWS_ENDPOINT` the emulator tests fail on purpose: a missing
//! emulator must never look like a pass.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use relevo_app::inventory::{Downstream, SimulatedWarehouse};
use relevo_aws::{
    DynamoStore, SqsQueue, create_queue_with_dead_letters, create_table, emulator_config,
};
use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_state::ledger::{OpStatus, Operation, Proposal};
use relevo_state::seal::{KeyRing, SealError};
use relevo_state::{
    Ids, Job, JobRef, JobStatus, JobStore, Lease, Queue, RandomIds, RecordStore, WorkMessage,
};
use serde_json::{Value, json};

const REQUEST_STATE: &str = "request-state";

fn endpoint() -> String {
    std::env::var("RELEVO_TEST_AWS_ENDPOINT").unwrap_or_else(|_| {
        panic!("RELEVO_TEST_AWS_ENDPOINT is not set: these tests need the moto emulator; run them with `make test` (or infra/scripts/with-moto.sh cargo test -p relevo-gateway --test operator_cli)")
    })
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", RandomIds.new_id().replace(['_', '-'], "x"))
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// How the binary reaches a backend: its flags and environment.
#[derive(Clone)]
struct Target {
    flags: Vec<String>,
    env: Vec<(String, String)>,
}

impl Target {
    fn sqlite(path: &Path) -> Target {
        Target {
            flags: vec!["--sqlite".into(), path.display().to_string()],
            env: vec![],
        }
    }

    fn aws(flags: &[&str]) -> Target {
        let env = [
            ("AWS_ENDPOINT_URL", endpoint()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "test".into()),
            ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ];
        Target {
            flags: flags.iter().map(|f| f.to_string()).collect(),
            env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        }
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        assert_eq!(
            self.code, 0,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }

    fn text(&self) -> &str {
        assert_eq!(
            self.code, 0,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        &self.stdout
    }
}

fn ops(target: &Target, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_relevo-ops"));
    for name in [
        "RELEVO_TABLE",
        "RELEVO_STORE",
        "RELEVO_QUEUE_URL",
        "RELEVO_DLQ_URL",
        "AWS_ENDPOINT_URL",
    ] {
        command.env_remove(name);
    }
    command
        .envs(target.env.iter().map(|(k, v)| (k, v)))
        .args(&target.flags)
        .args(args);
    let output = command.output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn temporary_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(name));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---- seeding, through the ports ------------------------------------------------------------

fn proposal(tenant: &str, id: &str, created_at: u64) -> Proposal {
    Proposal {
        operation_id: id.into(),
        tenant: tenant.into(),
        proposer: "agent".into(),
        tool: "inventory_propose".into(),
        resource: "stock/main/MUG".into(),
        arguments: json!({ "warehouse": "main", "sku": "MUG", "from": 1, "to": 7 }),
        expected_version: 1,
        policy_version: "p1".into(),
        created_at,
        expires_at: created_at + 86_400,
    }
}

/// An operation authorized by the policy at `created_at`, then moved along `path`.
fn operation(tenant: &str, id: &str, created_at: u64, path: &[(OpStatus, u64, &str)]) -> Operation {
    let mut op = Operation::new(
        proposal(tenant, id, created_at),
        vec![],
        format!("auth-{id}"),
    );
    for (status, at, by) in path {
        op = op.advanced(*status, *at, by, None).unwrap();
        if *status == OpStatus::Executing {
            op.attempts += 1;
            op.lease = Some(Lease {
                owner: "executor".into(),
                expires_at: at + 30,
            });
        }
    }
    op
}

/// Six operations in two tenants: two unknown (one whose downstream did apply it, so reconciling
/// settles it), one that went through unknown and back (two attempts, 120 s in unknown), a
/// conflicting write, one waiting for a person, and one success in another tenant.
async fn seed_ledger(records: Arc<dyn RecordStore>, now: u64) {
    use OpStatus::*;
    let mut applied = operation(
        "acme",
        "op-unknown-old",
        now - 7300,
        &[
            (Executing, now - 7200, "agent"),
            (Unknown, now - 7000, "executor"),
        ],
    );
    applied.committed = Some(json!({ "at": now - 7200, "version": 2 }));
    let mut silent = operation(
        "acme",
        "op-unknown-new",
        now - 100,
        &[
            (Executing, now - 90, "agent"),
            (Unknown, now - 60, "executor"),
        ],
    );
    silent.committed = Some(json!({ "at": now - 90, "version": 2 }));
    let retried = operation(
        "acme",
        "op-retried",
        now - 5000,
        &[
            (Executing, now - 4990, "agent"),
            (Unknown, now - 4900, "executor"),
            (Authorized, now - 4780, "reconciler"),
            (Executing, now - 4700, "agent"),
            (Succeeded, now - 4690, "executor"),
        ],
    );
    let conflict = operation(
        "acme",
        "op-conflict",
        now - 3000,
        &[
            (Executing, now - 2990, "agent"),
            (Rejected, now - 2989, "executor"),
        ],
    );
    let waiting = Operation::new(
        proposal("acme", "op-waiting", now - 200),
        vec!["large change".into()],
        "a".into(),
    );
    let other = operation(
        "beta",
        "op-beta",
        now - 400,
        &[
            (Executing, now - 390, "agent"),
            (Succeeded, now - 389, "executor"),
        ],
    );
    for op in [applied, silent, retried, conflict, waiting, other] {
        records
            .create(&op.record_key(), &op.to_value(), None, now)
            .await
            .unwrap();
    }
    // The downstream applied op-unknown-old but its answer was lost: its receipt is there to find.
    let warehouse = SimulatedWarehouse {
        records: records.clone(),
        clock: Arc::new(relevo_protocol::SystemClock),
        ids: Arc::new(RandomIds),
        window_secs: 86_400,
    };
    warehouse
        .deliver(
            "acme",
            "op-unknown-old",
            &json!({ "operationId": "op-unknown-old" }),
        )
        .await
        .unwrap();
}

/// A job record as a worker would have left it (built from its JSON form, so fields added to
/// `Job` later with a default do not break the seeding).
fn job(
    id: &str,
    status: JobStatus,
    attempts: u32,
    updated_at: u64,
    lease: Option<u64>,
    now: u64,
) -> Job {
    let error = (status == JobStatus::Failed).then(|| {
        format!("attempt budget exhausted: {attempts} attempts, the last worker's lease expired")
    });
    serde_json::from_value(json!({
        "job": JobRef { tenant: "acme".into(), subject: "alice".into(), id: id.into() },
        "kind": "export", "operation_key": null, "digest": "d", "input": {}, "status": status, "revision": 1,
        "lease": lease.map(|expires_at| Lease { owner: "worker".into(), expires_at }),
        "checkpoint": null, "result": null, "error": error, "attempts": attempts, "cancel_requested": false,
        "created_at": updated_at, "updated_at": updated_at, "expires_at": now + 86_400,
    }))
    .unwrap()
}

async fn seed_jobs(jobs: Arc<dyn JobStore>, now: u64) {
    for job in [
        job(
            "job-queued-late",
            JobStatus::Queued,
            0,
            now - 600,
            None,
            now,
        ),
        job(
            "job-lease-expired",
            JobStatus::Running,
            1,
            now - 300,
            Some(now - 10),
            now,
        ),
        job("job-exhausted", JobStatus::Failed, 5, now - 900, None, now),
        job("job-fine", JobStatus::Queued, 0, now, None, now),
        job(
            "job-running",
            JobStatus::Running,
            1,
            now,
            Some(now + 600),
            now,
        ),
    ] {
        jobs.create_job(&job).await.unwrap();
    }
}

fn work_message() -> String {
    WorkMessage::new(JobRef {
        tenant: "acme".into(),
        subject: "alice".into(),
        id: "job-queued-late".into(),
    })
    .encode()
}

/// Delivers the queue's only message until its queue dead-letters it (a budget of one).
async fn dead_letter_one(queue: &dyn Queue, now: u64) {
    queue.send(&work_message()).await.unwrap();
    for _ in 0..5 {
        for message in queue.receive(10, 0, now).await.unwrap() {
            assert_eq!(message.body, work_message());
        }
    }
}

// ---- the commands, the same on both backends -------------------------------------------------

fn ids(list: &Value) -> Vec<String> {
    list["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["operationId"].as_str().unwrap().to_string())
        .collect()
}

fn ledger_commands_report_list_show_and_reconcile(target: &Target, now: u64) {
    let report = ops(target, &["ledger", "report", "--json"]).json();
    assert_eq!(report["operations"], 6, "{report:#}");
    let by_state = &report["byState"];
    assert_eq!(
        [
            &by_state["unknown"],
            &by_state["succeeded"],
            &by_state["rejected"],
            &by_state["proposed"],
            &by_state["authorized"]
        ],
        [&json!(2), &json!(2), &json!(1), &json!(1), &json!(0)],
        "{report:#}"
    );
    assert_eq!(
        (&report["attempts"]["max"], &report["attempts"]["executed"]),
        (&json!(2), &json!(5)),
        "{report:#}"
    );
    assert_eq!(
        report["attempts"]["distribution"],
        json!({ "0": 1, "1": 4, "2": 1 })
    );
    assert_eq!(
        report["rejected"],
        json!({ "total": 1, "byCause": { "conflicting write": 1 } })
    );
    let uncertain = report["uncertain"].as_array().unwrap();
    assert_eq!(
        uncertain
            .iter()
            .map(|u| u["operationId"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["op-unknown-old", "op-unknown-new"]
    );
    assert!(
        uncertain[0]["ageSecs"].as_u64().unwrap() >= 7000,
        "{report:#}"
    );
    assert_eq!(report["reconciliation"]["resolved"], 1);
    assert_eq!(report["reconciliation"]["maxSecs"], 120);
    assert_eq!(
        report["reconciliation"]["resolvedTo"],
        json!({ "authorized": 1 })
    );
    let beta = ops(target, &["ledger", "report", "--tenant", "beta", "--json"]).json();
    assert_eq!(
        (&beta["operations"], &beta["byState"]["succeeded"]),
        (&json!(1), &json!(1))
    );
    let text = ops(target, &["ledger", "report"]);
    for expected in [
        "Ledger: 6 operations",
        "By state",
        "conflicting write",
        "op-unknown-old",
        "1 resolved, p50 2m00s",
        "max 2, mean 1.20",
    ] {
        assert!(
            text.text().contains(expected),
            "{expected:?} in:\n{}",
            text.stdout
        );
    }

    let list = ops(target, &["ops", "list", "--json"]).json();
    assert_eq!(
        ids(&list),
        [
            "op-unknown-old",
            "op-unknown-new",
            "op-retried",
            "op-conflict",
            "op-beta",
            "op-waiting"
        ],
        "unknown first, then the oldest first"
    );
    assert_eq!(
        ids(&ops(
            target,
            &[
                "ops", "list", "--state", "unknown", "--tenant", "acme", "--json"
            ]
        )
        .json())
        .len(),
        2
    );
    assert_eq!(
        ids(&ops(target, &["ops", "list", "--tenant", "beta", "--json"]).json()),
        ["op-beta"]
    );
    let text = ops(target, &["ops", "list", "--state", "rejected"]);
    let rows: Vec<&str> = text.text().lines().collect();
    assert!(
        rows[0].contains("operation") && rows[0].contains("attempts"),
        "{}",
        text.stdout
    );
    assert!(
        rows[1].starts_with("  op-conflict") && rows[1].contains("rejected") && rows.len() == 2,
        "{}",
        text.stdout
    );
    assert_eq!(
        ops(target, &["ops", "list", "--state", "lost"]).code,
        2,
        "an unknown state is a usage error"
    );

    let shown = ops(
        target,
        &["ops", "show", "op-retried", "--tenant", "acme", "--json"],
    )
    .json();
    let history: Vec<&str> = shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        history,
        [
            "proposed",
            "authorized",
            "executing",
            "unknown",
            "authorized",
            "executing",
            "succeeded"
        ]
    );
    let text = ops(target, &["ops", "show", "op-retried", "--tenant", "acme"]);
    assert!(
        text.text().contains("state      succeeded") && text.text().contains("reconciler"),
        "{}",
        text.stdout
    );
    let elsewhere = ops(target, &["ops", "show", "op-retried", "--tenant", "beta"]);
    assert_eq!(elsewhere.code, 1, "another tenant's id reads as absent");
    assert!(
        elsewhere
            .stderr
            .contains("no operation \"op-retried\" in tenant \"beta\""),
        "{}",
        elsewhere.stderr
    );

    let settled = ops(
        target,
        &[
            "ops",
            "reconcile",
            "op-unknown-old",
            "--tenant",
            "acme",
            "--json",
        ],
    )
    .json();
    assert_eq!(
        (&settled["before"], &settled["after"], &settled["changed"]),
        (&json!("unknown"), &json!("succeeded"), &json!(true))
    );
    assert!(
        settled["operation"]["receipt"]["downstreamReceipt"].is_string(),
        "the downstream's receipt: {settled:#}"
    );
    let shown = ops(
        target,
        &[
            "ops",
            "show",
            "op-unknown-old",
            "--tenant",
            "acme",
            "--json",
        ],
    )
    .json();
    assert_eq!(
        shown["status"], "succeeded",
        "the settle was written to the store"
    );
    let silent = ops(
        target,
        &["ops", "reconcile", "op-unknown-new", "--tenant", "acme"],
    );
    assert!(silent.text().contains("still unknown"), "{}", silent.stdout);
    let done = ops(
        target,
        &["ops", "reconcile", "op-conflict", "--tenant", "acme"],
    );
    assert!(
        done.text().contains("nothing to reconcile"),
        "{}",
        done.stdout
    );
    let after = ops(target, &["ledger", "report", "--json"]).json();
    assert_eq!(
        (
            &after["byState"]["unknown"],
            &after["reconciliation"]["resolved"]
        ),
        (&json!(1), &json!(2))
    );
    assert!(
        after["reconciliation"]["maxSecs"].as_u64().unwrap() >= 7000,
        "{after:#}"
    );
    let _ = now;
}

fn jobs_stuck_lists_exactly_the_stuck_ones(target: &Target) {
    let stuck = ops(target, &["jobs", "stuck", "--json"]).json();
    let found: Vec<(&str, &str)> = stuck["stuck"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["jobId"].as_str().unwrap(), j["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            ("job-exhausted", "failed: attempts exhausted"),
            ("job-queued-late", "queued past its deadline"),
            (
                "job-lease-expired",
                "lease expired (the reconciler requeues it)"
            ),
        ],
        "{stuck:#}"
    );
    let text = ops(target, &["jobs", "stuck", "--queued-deadline-secs", "3600"]);
    assert!(
        !text.text().contains("job-queued-late") && text.text().contains("job-lease-expired"),
        "{}",
        text.stdout
    );
}

fn dlq_lists_and_redrives(target: &Target) {
    let listed = ops(target, &["dlq", "list", "--json"]).json();
    let letters = listed["deadLetters"].as_array().unwrap();
    assert_eq!(letters.len(), 1, "{listed:#}");
    assert_eq!(
        (&letters[0]["job"], &letters[0]["body"]),
        (&json!("acme/alice/job-queued-late"), &json!(work_message()))
    );
    let text = ops(target, &["dlq", "list"]);
    assert!(
        text.text().contains("acme/alice/job-queued-late"),
        "{}",
        text.stdout
    );
    let missing = ops(target, &["dlq", "redrive", "no-such-message"]);
    assert_eq!(missing.code, 1, "{}", missing.stdout);
    assert!(
        missing.stderr.contains("no dead letter"),
        "{}",
        missing.stderr
    );
    assert_eq!(ops(target, &["dlq", "redrive"]).code, 2, "--all or an id");
    let id = letters[0]["id"].as_str().unwrap();
    let moved = ops(target, &["dlq", "redrive", id, "--json"]).json();
    assert_eq!(moved["redriven"], json!([id]));
    assert_eq!(
        ops(target, &["dlq", "list", "--json"]).json()["deadLetters"],
        json!([])
    );
    let again = ops(target, &["dlq", "redrive", "--all"]);
    assert!(
        again.text().contains("redrove 0 message(s)"),
        "{}",
        again.stdout
    );
}

// ---- SQLite --------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_runs_against_the_sqlite_store_of_make_run() {
    let dir = temporary_dir("relevo-ops");
    let path = dir.join("store.db");
    let now = now();
    let store = SqliteStore::open(&path).unwrap();
    seed_ledger(Arc::new(store.clone()), now).await;
    seed_jobs(Arc::new(store.clone()), now).await;
    dead_letter_one(&SqliteQueue::new(store.clone(), 1), now).await;
    let target = Target::sqlite(&path);

    ledger_commands_report_list_show_and_reconcile(&target, now);
    jobs_stuck_lists_exactly_the_stuck_ones(&target);
    dlq_lists_and_redrives(&target);
    let redriven = SqliteQueue::new(store, 5)
        .receive(10, 30, now + 1)
        .await
        .unwrap();
    assert_eq!(
        redriven.iter().map(|m| m.body.clone()).collect::<Vec<_>>(),
        [work_message()],
        "back on the work queue"
    );

    let absent = ops(&Target::sqlite(&dir.join("absent.db")), &["ops", "list"]);
    assert_eq!(
        absent.code, 2,
        "a missing store is not created: {}",
        absent.stderr
    );
    assert!(!dir.join("absent.db").exists());
    let none = ops(
        &Target {
            flags: vec![],
            env: vec![],
        },
        &["ops", "list"],
    );
    assert!(
        none.code == 2 && none.stderr.contains("no backend"),
        "{}",
        none.stderr
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- DynamoDB + SQS on the emulator --------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_runs_against_dynamodb_and_sqs_on_the_emulator() {
    let config = emulator_config(&endpoint()).await;
    let dynamo = aws_sdk_dynamodb::Client::new(&config);
    let table = unique("relevo-ops");
    create_table(&dynamo, &table).await.unwrap();
    let store = DynamoStore::new(dynamo, &table);
    let now = now();
    seed_ledger(Arc::new(store.clone()), now).await;
    seed_jobs(Arc::new(store), now).await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let (queue_url, dlq_url) = create_queue_with_dead_letters(&sqs, &unique("relevo-ops"), 1)
        .await
        .unwrap();
    let queue = SqsQueue::new(sqs.clone(), &queue_url);
    dead_letter_one(&queue, now).await;
    let target = Target::aws(&[
        "--table",
        &table,
        "--queue-url",
        &queue_url,
        "--dlq-url",
        &dlq_url,
    ]);

    ledger_commands_report_list_show_and_reconcile(&target, now);
    jobs_stuck_lists_exactly_the_stuck_ones(&target);
    dlq_lists_and_redrives(&target);
    let redriven = queue.receive(10, 30, now).await.unwrap();
    assert_eq!(
        redriven.iter().map(|m| m.body.clone()).collect::<Vec<_>>(),
        [work_message()],
        "back on the work queue"
    );

    let no_queue = ops(&Target::aws(&["--table", &table]), &["dlq", "list"]);
    assert!(
        no_queue.code == 2 && no_queue.stderr.contains("--queue-url"),
        "{}",
        no_queue.stderr
    );
}

// ---- key rotation --------------------------------------------------------------------------

/// A state sealed before the rotation opens during the overlap and not after the old key is
/// retired; the rotated ring seals with the new key; no command prints a key.
async fn rotation_keeps_old_states_open_only_during_the_overlap(
    target: &Target,
    source: &[&str],
    load: impl AsyncFn() -> KeyRing,
    secrets: impl AsyncFn() -> Vec<String>,
) {
    let keys = |args: &[&str]| ops(target, &[args, source].concat());
    let now = now();
    let before = load().await;
    let sealed = before.seal(REQUEST_STATE, &json!({ "round": 1 }), now + 3600);
    assert!(sealed.starts_with("v1.old."), "{sealed}");

    let added = keys(&["keys", "add", "--kid", "new"]);
    assert!(
        added.text().contains("added new as the active key"),
        "{}",
        added.stdout
    );
    let during = load().await;
    assert_eq!(
        format!("{during:?}"),
        r#"KeyRing { key_ids: ["new", "old"] }"#
    );
    assert_eq!(
        during.open(REQUEST_STATE, &sealed, now).unwrap(),
        json!({ "round": 1 }),
        "the overlap opens old states"
    );
    let fresh = during.seal(REQUEST_STATE, &json!({ "round": 2 }), now + 3600);
    assert!(
        fresh.starts_with("v1.new."),
        "the new key is the active one: {fresh}"
    );
    assert_eq!(
        keys(&["keys", "add", "--kid", "new"]).code,
        1,
        "a kid is never reused"
    );
    let listed = keys(&["keys", "list", "--json"]).json();
    assert_eq!(listed["active"], "new");
    assert_eq!(
        listed["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].clone())
            .collect::<Vec<_>>(),
        [json!("new"), json!("old")]
    );

    let active = keys(&["keys", "retire", "new"]);
    assert!(
        active.code == 1 && active.stderr.contains("active key"),
        "{}",
        active.stderr
    );
    let retired = keys(&["keys", "retire", "old", "--force"]);
    assert!(retired.text().contains("retired old"), "{}", retired.stdout);
    let after = load().await;
    assert_eq!(format!("{after:?}"), r#"KeyRing { key_ids: ["new"] }"#);
    assert_eq!(
        after.open(REQUEST_STATE, &sealed, now),
        Err(SealError::UnknownKey),
        "after the overlap the old state is refused"
    );
    assert_eq!(
        after.open(REQUEST_STATE, &fresh, now).unwrap(),
        json!({ "round": 2 })
    );

    let printed = [
        added.stdout,
        added.stderr,
        listed.to_string(),
        retired.stdout,
        retired.stderr,
        active.stderr,
    ]
    .concat();
    for secret in secrets().await {
        assert!(!printed.contains(&secret), "a key was printed");
    }
}

#[tokio::test]
async fn key_rotation_in_a_keys_file_keeps_the_old_key_for_the_overlap_then_drops_it() {
    let dir = temporary_dir("relevo-keys");
    let path = dir.join("state-keys");
    let old_key = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [7u8; 32]);
    std::fs::write(&path, format!("old:{old_key}\n")).unwrap();
    let target = Target {
        flags: vec![],
        env: vec![],
    };
    let file = path.display().to_string();
    let load =
        async || KeyRing::from_config(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
    let secrets = async || {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut keys: Vec<String> = text
            .trim()
            .split(',')
            .map(|e| e.split_once(':').unwrap().1.to_string())
            .collect();
        keys.push(old_key.clone());
        keys
    };
    rotation_keeps_old_states_open_only_during_the_overlap(
        &target,
        &["--keys-file", &file],
        load,
        secrets,
    )
    .await;

    // The two-step rotation: a staged key is accepted before any environment seals with it.
    let staged = ops(
        &target,
        &[
            "keys",
            "add",
            "--staged",
            "--kid",
            "next",
            "--keys-file",
            &file,
        ],
    );
    assert!(
        staged.text().contains("added next as a staged key"),
        "{}",
        staged.stdout
    );
    let ring = load().await;
    assert_eq!(
        format!("{ring:?}"),
        r#"KeyRing { key_ids: ["new", "next"] }"#
    );
    assert!(
        ring.seal(REQUEST_STATE, &json!(1), now() + 60)
            .starts_with("v1.new."),
        "still sealing with the active key"
    );
    assert_eq!(
        ops(&target, &["keys", "activate", "next", "--keys-file", &file]).code,
        0
    );
    let ring = load().await;
    assert!(
        ring.seal(REQUEST_STATE, &json!(1), now() + 60)
            .starts_with("v1.next."),
        "{ring:?}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600,
        "the keys file is private"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn key_rotation_in_secrets_manager_keeps_the_old_key_for_the_overlap_then_drops_it() {
    let config = emulator_config(&endpoint()).await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let name = unique("relevo-ops-keys");
    let old_key = "o".repeat(48);
    client
        .create_secret()
        .name(&name)
        .secret_string(json!({ "kid": "old", "key": old_key }).to_string())
        .send()
        .await
        .unwrap();
    let target = Target::aws(&[]);
    let load = async || relevo_aws::load_key_ring(&client, &name).await.unwrap();

    let now = now();
    let sealed = load().await.seal(REQUEST_STATE, &json!(1), now + 3600);
    assert_eq!(
        ops(&target, &["keys", "add", "--kid", "new", "--secret", &name]).code,
        0
    );
    let early = ops(&target, &["keys", "retire", "old", "--secret", &name]);
    assert!(
        early.code == 1 && early.stderr.contains("overlap"),
        "retiring within the overlap is refused: {}",
        early.stderr
    );
    assert!(
        load().await.open(REQUEST_STATE, &sealed, now).is_ok(),
        "the refused retire kept the old key"
    );
    assert_eq!(
        ops(
            &target,
            &[
                "keys",
                "retire",
                "old",
                "--secret",
                &name,
                "--min-overlap-secs",
                "0"
            ]
        )
        .code,
        0
    );
    assert_eq!(
        load().await.open(REQUEST_STATE, &sealed, now),
        Err(SealError::UnknownKey)
    );

    // The full procedure again on a fresh secret, through the shared checks.
    let name = unique("relevo-ops-keys");
    client
        .create_secret()
        .name(&name)
        .secret_string(json!({ "kid": "old", "key": old_key }).to_string())
        .send()
        .await
        .unwrap();
    let load = async || relevo_aws::load_key_ring(&client, &name).await.unwrap();
    let secrets = async || {
        let text = client
            .get_secret_value()
            .secret_id(&name)
            .send()
            .await
            .unwrap()
            .secret_string()
            .unwrap()
            .to_string();
        let value: Value = serde_json::from_str(&text).unwrap();
        let mut keys = vec![value["key"].as_str().unwrap().to_string(), old_key.clone()];
        keys.extend(
            value["previous"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["key"].as_str().unwrap().to_string()),
        );
        keys
    };
    rotation_keeps_old_states_open_only_during_the_overlap(
        &target,
        &["--secret", &name],
        load,
        secrets,
    )
    .await;
}

// ---- hostile stored text -----------------------------------------------------------------------

/// What a `sub` claim (or any stored text) may hold to take over an operator's terminal: an
/// OSC title change, a screen clear, an 8-bit CSI, DEL, a line break that fakes a table row.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{7f}\nfake row";

/// Every byte a terminal acts on: C0 controls but the line breaks the printer writes, DEL, and
/// the C1 controls (U+0080..U+009F).
fn terminal_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| (c.is_control() && *c != '\n') || ('\u{80}'..='\u{9f}').contains(c))
        .collect()
}

async fn seed_hostile(
    records: Arc<dyn RecordStore>,
    jobs: Arc<dyn JobStore>,
    queue: &dyn Queue,
    now: u64,
) {
    let mut op = operation(
        "acme",
        "op-hostile",
        now - 100,
        &[(OpStatus::Executing, now - 90, HOSTILE)],
    );
    op.proposal.proposer = HOSTILE.into();
    op.proposal.resource = format!("stock/{HOSTILE}");
    records
        .create(&op.record_key(), &op.to_value(), None, now)
        .await
        .unwrap();
    let mut stuck = job("job-hostile", JobStatus::Failed, 5, now - 900, None, now);
    stuck.job.subject = HOSTILE.into();
    stuck.kind = HOSTILE.into();
    jobs.create_job(&stuck).await.unwrap();
    queue
        .send(&format!("not a work message {HOSTILE}"))
        .await
        .unwrap();
    for _ in 0..5 {
        let _ = queue.receive(10, 0, now).await.unwrap();
    }
}

fn hostile_text_reaches_the_terminal_inert(target: &Target) {
    let commands: [&[&str]; 5] = [
        &["ledger", "report"],
        &["ops", "list"],
        &["ops", "show", "op-hostile", "--tenant", "acme"],
        &["jobs", "stuck"],
        &["dlq", "list"],
    ];
    for command in commands {
        let text = ops(target, command);
        let shown = text.text();
        assert_eq!(
            terminal_controls(shown),
            Vec::<char>::new(),
            "{command:?} printed controls:\n{shown}"
        );
        assert!(
            !shown.lines().any(|line| line.starts_with("fake row")),
            "{command:?} let stored text add a line"
        );
        let json = ops(target, &[command, &["--json"]].concat());
        assert_eq!(
            terminal_controls(&json.stdout),
            Vec::<char>::new(),
            "{command:?} --json printed controls"
        );
        let value = json.json();
        let carries = command[0] != "ledger" && command[0] != "dlq";
        assert!(
            !carries || value.to_string().contains("pwned"),
            "the JSON keeps the text, escaped: {value}"
        );
    }
    assert!(
        ops(target, &["jobs", "stuck", "--json"])
            .json()
            .to_string()
            .contains(&json!(HOSTILE).to_string()[1..20])
    );
    let refused = ops(target, &["ops", "show", HOSTILE, "--tenant", HOSTILE]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert_eq!(
        terminal_controls(&refused.stderr),
        Vec::<char>::new(),
        "errors too: {}",
        refused.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_control_characters_reach_the_sqlite_operators_terminal_inert() {
    let dir = temporary_dir("relevo-ops-hostile");
    let path = dir.join("store.db");
    let store = SqliteStore::open(&path).unwrap();
    seed_hostile(
        Arc::new(store.clone()),
        Arc::new(store.clone()),
        &SqliteQueue::new(store.clone(), 1),
        now(),
    )
    .await;
    hostile_text_reaches_the_terminal_inert(&Target::sqlite(&path));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_control_characters_reach_the_dynamodb_operators_terminal_inert() {
    let config = emulator_config(&endpoint()).await;
    let dynamo = aws_sdk_dynamodb::Client::new(&config);
    let table = unique("relevo-ops-hostile");
    create_table(&dynamo, &table).await.unwrap();
    let store = DynamoStore::new(dynamo, &table);
    let sqs = aws_sdk_sqs::Client::new(&config);
    let (queue_url, dlq_url) =
        create_queue_with_dead_letters(&sqs, &unique("relevo-ops-hostile"), 1)
            .await
            .unwrap();
    let queue = SqsQueue::new(sqs, &queue_url);
    seed_hostile(Arc::new(store.clone()), Arc::new(store), &queue, now()).await;
    hostile_text_reaches_the_terminal_inert(&Target::aws(&[
        "--table",
        &table,
        "--queue-url",
        &queue_url,
        "--dlq-url",
        &dlq_url,
    ]));
}
