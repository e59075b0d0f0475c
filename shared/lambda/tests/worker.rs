//! The worker's SQS batch handling with a real-shaped SQS event: only failed messages are
//! reported, and a panicking job fails its own message, not the batch.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use aws_lambda_events::sqs::SqsEvent;
use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_state::work::BoxFuture;
use relevo_state::{
    Engine, EngineConfig, JobContext, JobFailure, JobRunner, JobStatus, JobStore, RandomIds,
    SystemClock, WorkMessage, Worker,
};
use serde_json::{Value, json};

struct Fine;
impl JobRunner for Fine {
    fn run<'a>(&'a self, _: &'a JobContext) -> BoxFuture<'a, Result<Value, JobFailure>> {
        Box::pin(async { Ok(json!("done")) })
    }
}

struct Panics;
impl JobRunner for Panics {
    fn run<'a>(&'a self, _: &'a JobContext) -> BoxFuture<'a, Result<Value, JobFailure>> {
        Box::pin(async { panic!("a bug in one job") })
    }
}

#[tokio::test]
async fn only_failed_messages_are_reported_and_a_panic_fails_only_its_own() {
    let sqlite = SqliteStore::in_memory().unwrap();
    let engine = Worker::new(Arc::new(Engine::new(
        Arc::new(sqlite.clone()),
        Arc::new(SqliteQueue::new(sqlite.clone(), 5)),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        EngineConfig::default(),
    )))
    .runner("fine", Arc::new(Fine))
    .runner("panics", Arc::new(Panics));
    let ok = engine
        .start("acme", "alice", "fine", None, json!({}))
        .await
        .unwrap();
    let bad = engine
        .start("acme", "alice", "panics", None, json!({}))
        .await
        .unwrap();

    let fixture = include_str!("fixtures/sqs-work-batch.json")
        .replace(
            "\"__OK__\"",
            &serde_json::to_string(&WorkMessage::new(ok.job.clone()).encode()).unwrap(),
        )
        .replace(
            "\"__PANICS__\"",
            &serde_json::to_string(&WorkMessage::new(bad.job.clone()).encode()).unwrap(),
        );
    let event: SqsEvent = serde_json::from_str(&fixture).unwrap();
    let response = relevo_lambda::handle_sqs_batch(&engine, event).await;

    let mut failed: Vec<String> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    failed.sort();
    assert_eq!(failed, vec!["m-garbage", "m-panics"]);
    let wire = serde_json::to_value(&response).unwrap();
    assert!(
        wire["batchItemFailures"][0]["itemIdentifier"]
            .as_str()
            .is_some(),
        "the exact keys Lambda reads"
    );
    assert_eq!(
        sqlite.get_job(&ok.job).await.unwrap().unwrap().status,
        JobStatus::Succeeded
    );
    assert_eq!(
        sqlite.get_job(&bad.job).await.unwrap().unwrap().status,
        JobStatus::Queued,
        "released for a retry"
    );
}
