//! The shop's jobs in their typed form, run by the shop's own worker, on SQLite and on DynamoDB
//! (moto): an export started with its typed input finishes with its typed result; a settle job
//! reports where it left its operation; a stored input that does not fit its kind's type fails
//! the job for good, naming the field, and is never run again.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_app::export::{Dataset, ExportInput, ExportResult, KIND as EXPORT, ROWS};
use relevo_app::inventory::{SETTLE, SettleInput, Settled};
use relevo_state::{Job, JobStatus, Processed};
use relevo_tests::ShopJobs;
use relevo_tests::race::{Backend, Both, backend};
use serde_json::json;

async fn shop(kind: Backend) -> ShopJobs {
    let records = Arc::new(Both(backend(kind).await));
    let queue =
        relevo_embedded::SqliteQueue::new(relevo_embedded::SqliteStore::in_memory().unwrap(), 5);
    relevo_tests::shop_jobs(records, Arc::new(queue), None)
}

/// Runs `job` once through the shop's worker; what it did and the job afterwards.
async fn run(shop: &ShopJobs, job: &Job) -> (Processed, Job) {
    let processed = shop.worker.process(&job.job).await.unwrap();
    (
        processed,
        shop.engine.store.get_job(&job.job).await.unwrap().unwrap(),
    )
}

async fn an_export_runs_from_its_typed_input_to_its_typed_result(kind: Backend) {
    let shop = shop(kind).await;
    let input = ExportInput {
        dataset: Dataset::Orders,
        purpose: "audit".into(),
    };
    let job = EXPORT
        .start(&shop.engine, "acme", "alice", Some("q3"), &input)
        .await
        .unwrap();
    assert_eq!(
        job.input,
        json!({ "dataset": "orders", "purpose": "audit" }),
        "{kind:?}"
    );
    let (processed, done) = run(&shop, &job).await;
    assert_eq!(
        processed,
        Processed::Finished(JobStatus::Succeeded),
        "{kind:?}: {:?}",
        done.error
    );
    let result: ExportResult = serde_json::from_value(done.result.unwrap()).unwrap();
    assert_eq!(
        (
            result.dataset.as_str(),
            result.purpose.as_str(),
            result.rows
        ),
        ("orders", "audit", ROWS)
    );
    assert!(
        result.csv.starts_with("id,order,total\n0,order-"),
        "{kind:?}"
    );
    assert_eq!(
        result.sha256,
        relevo_state::sha256_hex(result.csv.as_bytes())
    );
}

async fn an_export_of_no_known_dataset_fails_for_good_naming_the_field(kind: Backend) {
    let shop = shop(kind).await;
    let stored = json!({ "dataset": "invoices", "purpose": "audit" });
    let job = shop
        .engine
        .start("acme", "alice", EXPORT.name(), None, stored)
        .await
        .unwrap();
    let (processed, failed) = run(&shop, &job).await;
    assert_eq!(
        processed,
        Processed::Finished(JobStatus::Failed),
        "{kind:?}"
    );
    let reason = failed.error.unwrap();
    assert!(
        reason.contains("\"export\"") && reason.contains("`dataset`"),
        "{kind:?}: {reason}"
    );
    assert!(
        reason.contains("unknown variant `invoices`"),
        "{kind:?}: {reason}"
    );
    assert_eq!(
        shop.worker.process(&job.job).await.unwrap(),
        Processed::NothingToDo,
        "{kind:?}: not run again"
    );
}

async fn a_settle_job_reports_where_it_left_its_operation(kind: Backend) {
    let shop = shop(kind).await;
    let input = SettleInput {
        operation_id: "op-never-proposed".into(),
    };
    let job = SETTLE
        .start(
            &shop.engine,
            "acme",
            "alice",
            Some("op-never-proposed"),
            &input,
        )
        .await
        .unwrap();
    assert_eq!(job.input, json!({ "operationId": "op-never-proposed" }));
    let (processed, done) = run(&shop, &job).await;
    assert_eq!(
        processed,
        Processed::Finished(JobStatus::Succeeded),
        "{kind:?}: {:?}",
        done.error
    );
    let settled: Settled = serde_json::from_value(done.result.unwrap()).unwrap();
    assert_eq!(
        settled,
        Settled {
            operation_id: "op-never-proposed".into(),
            status: "gone".into()
        }
    );
}

/// The untyped runner read a missing `operationId` as "" and reported that operation `gone`.
async fn a_settle_job_without_an_operation_id_fails_for_good_instead_of_settling_nothing(
    kind: Backend,
) {
    let shop = shop(kind).await;
    let job = shop
        .engine
        .start(
            "acme",
            "alice",
            SETTLE.name(),
            None,
            json!({ "operation": "op-1" }),
        )
        .await
        .unwrap();
    let (processed, failed) = run(&shop, &job).await;
    assert_eq!(
        processed,
        Processed::Finished(JobStatus::Failed),
        "{kind:?}: {:?}",
        failed.result
    );
    let reason = failed.error.unwrap();
    assert!(
        reason.contains("\"inventory.settle\"") && reason.contains("missing field `operationId`"),
        "{reason}"
    );
    assert_eq!(failed.attempts, 1, "{kind:?}");
}

async fn all(kind: Backend) {
    an_export_runs_from_its_typed_input_to_its_typed_result(kind).await;
    an_export_of_no_known_dataset_fails_for_good_naming_the_field(kind).await;
    a_settle_job_reports_where_it_left_its_operation(kind).await;
    a_settle_job_without_an_operation_id_fails_for_good_instead_of_settling_nothing(kind).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shops_typed_jobs_run_on_sqlite() {
    all(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shops_typed_jobs_run_on_dynamodb() {
    all(Backend::Dynamo).await;
}
