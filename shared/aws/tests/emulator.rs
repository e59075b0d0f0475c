//! The DynamoDB and SQS adapters against a real emulator (moto server), started by `make test`
//! (`infra/scripts/with-moto.sh`). Without `RELEVO_TEST_AWS_ENDPOINT` these tests fail on purpose:
//! a missing emulator must never look like a pass.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_aws::{DynamoStore, SqsQueue, create_queue_with_dead_letters, create_table, emulator_config};
use relevo_state::{Ids, RandomIds};

fn endpoint() -> String {
    std::env::var("RELEVO_TEST_AWS_ENDPOINT").unwrap_or_else(|_| {
        panic!("RELEVO_TEST_AWS_ENDPOINT is not set: these tests need the moto emulator; run them with `make test` (or infra/scripts/with-moto.sh cargo test)")
    })
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", RandomIds.new_id().replace(['_', '-'], "x"))
}

async fn store() -> DynamoStore {
    let config = emulator_config(&endpoint()).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let table = unique("relevo");
    create_table(&client, &table).await.unwrap();
    DynamoStore::new(client, &table)
}

#[tokio::test]
async fn dynamodb_meets_the_record_store_contract() {
    relevo_state::contract::record_store_contract(Arc::new(store().await)).await;
}

#[tokio::test]
async fn dynamodb_transactions_are_all_or_nothing() {
    // Serial: moto does not isolate concurrent TransactWriteItems (see `Racers::Serial`).
    relevo_state::contract::transaction_contract(Arc::new(store().await), relevo_state::contract::Racers::Serial).await;
}

#[tokio::test]
async fn dynamodb_meets_the_job_store_contract() {
    relevo_state::contract::job_store_contract(Arc::new(store().await)).await;
}

#[tokio::test]
async fn sqs_meets_the_queue_contract_and_dead_letters_after_max_receives() {
    let config = emulator_config(&endpoint()).await;
    let client = aws_sdk_sqs::Client::new(&config);
    let (url, dead) = create_queue_with_dead_letters(&client, &unique("relevo"), 3).await.unwrap();
    relevo_state::contract::queue_contract(Arc::new(SqsQueue::new(client.clone(), &url)), 3, 0).await;
    let moved = client.receive_message().queue_url(&dead).send().await.unwrap();
    assert_eq!(moved.messages().iter().map(|m| m.body().unwrap_or_default()).collect::<Vec<_>>(), vec!["two"]);
}

#[tokio::test]
async fn the_key_ring_loads_from_secrets_manager() {
    let config = emulator_config(&endpoint()).await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let name = unique("relevo-keys");
    let secret =
        serde_json::json!({ "kid": "k2", "key": "x".repeat(48), "previous": [{ "kid": "k1", "key": "y".repeat(48) }] });
    client.create_secret().name(&name).secret_string(secret.to_string()).send().await.unwrap();
    let ring = relevo_aws::load_key_ring(&client, &name).await.unwrap();
    assert_eq!(format!("{ring:?}"), r#"KeyRing { key_ids: ["k2", "k1"] }"#);
    assert!(
        relevo_aws::load_key_ring(&client, "no-such-secret").await.is_err(),
        "a missing secret is an error, never a default key"
    );
}
