//! The DynamoDB and SQS adapters against a real emulator (moto server), started by `make test`
//! (`infra/scripts/with-moto.sh`). Without `RELEVO_TEST_AWS_ENDPOINT` these tests fail on purpose:
//! a missing emulator must never look like a pass.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_aws::{
    DynamoStore, SqsQueue, create_queue_with_dead_letters, create_table, emulator_config,
};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_counts_several_units_in_one_write_all_or_none() {
    relevo_state::contract::count_by_contract(Arc::new(store().await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_transactions_are_all_or_nothing_and_isolated_from_each_other() {
    // Concurrent: `infra/scripts/moto_serial.py` gives moto DynamoDB's isolation (its threaded
    // server alone lets a losing transaction's rollback erase the winner's write).
    relevo_state::contract::transaction_contract(
        Arc::new(store().await),
        relevo_state::contract::Racers::Concurrent,
    )
    .await;
}

#[tokio::test]
async fn dynamodb_transactions_set_move_and_remove_an_expiry() {
    relevo_state::contract::transaction_expiry_contract(Arc::new(store().await)).await;
}

/// An HTTP client that sends every DynamoDB write twice and answers the second send, as the SDK
/// does when the first attempt was applied but its answer was lost (an attempt timeout).
#[derive(Debug)]
struct SendsWritesTwice(aws_sdk_dynamodb::config::SharedHttpClient);

#[derive(Debug)]
struct TwiceConnector(aws_smithy_runtime_api::client::http::SharedHttpConnector);

impl aws_sdk_dynamodb::config::HttpClient for SendsWritesTwice {
    fn http_connector(
        &self,
        settings: &aws_smithy_runtime_api::client::http::HttpConnectorSettings,
        components: &aws_sdk_dynamodb::config::RuntimeComponents,
    ) -> aws_smithy_runtime_api::client::http::SharedHttpConnector {
        aws_smithy_runtime_api::client::http::SharedHttpConnector::new(TwiceConnector(
            self.0.http_connector(settings, components),
        ))
    }
}

impl aws_smithy_runtime_api::client::http::HttpConnector for TwiceConnector {
    fn call(
        &self,
        request: aws_smithy_runtime_api::client::orchestrator::HttpRequest,
    ) -> aws_smithy_runtime_api::client::http::HttpConnectorFuture {
        let inner = self.0.clone();
        aws_smithy_runtime_api::client::http::HttpConnectorFuture::new(async move {
            let target = request
                .headers()
                .get("x-amz-target")
                .unwrap_or_default()
                .to_string();
            let write = ["PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"]
                .iter()
                .any(|w| target.ends_with(w));
            if write && let Some(first) = request.try_clone() {
                let _lost = inner.call(first).await;
            }
            inner.call(request).await
        })
    }
}

#[tokio::test]
async fn dynamodb_answers_a_write_sent_twice_as_applied_once() {
    let config = emulator_config(&endpoint()).await;
    let twice = SendsWritesTwice(config.http_client().unwrap());
    let config = config
        .into_builder()
        .http_client(aws_sdk_dynamodb::config::SharedHttpClient::new(twice))
        .build();
    let client = aws_sdk_dynamodb::Client::new(&config);
    let table = unique("relevo");
    create_table(&client, &table).await.unwrap();
    relevo_state::contract::echo_contract(Arc::new(DynamoStore::new(client, &table))).await;
}

#[tokio::test]
async fn dynamodb_meets_the_job_store_contract() {
    relevo_state::contract::job_store_contract(Arc::new(store().await)).await;
}

#[tokio::test]
async fn sqs_meets_the_queue_contract_and_dead_letters_after_max_receives() {
    let config = emulator_config(&endpoint()).await;
    let client = aws_sdk_sqs::Client::new(&config);
    let (url, dead) = create_queue_with_dead_letters(&client, &unique("relevo"), 3)
        .await
        .unwrap();
    relevo_state::contract::queue_contract(Arc::new(SqsQueue::new(client.clone(), &url)), 3, 0)
        .await;
    let moved = client
        .receive_message()
        .queue_url(&dead)
        .send()
        .await
        .unwrap();
    assert_eq!(
        moved
            .messages()
            .iter()
            .map(|m| m.body().unwrap_or_default())
            .collect::<Vec<_>>(),
        vec!["two"]
    );
}

#[tokio::test]
async fn the_key_ring_loads_from_secrets_manager() {
    let config = emulator_config(&endpoint()).await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let name = unique("relevo-keys");
    let secret = serde_json::json!({ "kid": "k2", "key": "x".repeat(48), "previous": [{ "kid": "k1", "key": "y".repeat(48) }] });
    client
        .create_secret()
        .name(&name)
        .secret_string(secret.to_string())
        .send()
        .await
        .unwrap();
    let ring = relevo_aws::load_key_ring(&client, &name).await.unwrap();
    assert_eq!(format!("{ring:?}"), r#"KeyRing { key_ids: ["k2", "k1"] }"#);
    assert!(
        relevo_aws::load_key_ring(&client, "no-such-secret")
            .await
            .is_err(),
        "a missing secret is an error, never a default key"
    );
}

/// The emulator is as strict as DynamoDB about concurrent transactions on one item: of eight
/// clients creating one order at once (with a mark on its cart, as checkout does), one wins, and
/// the table keeps the winner's order. moto's threaded server alone fails this (two winners, or
/// the winner's write erased by a loser's rollback); `infra/scripts/moto_serial.py` is what
/// makes it hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_transactions_on_one_item_have_one_winner_whose_write_stays() {
    use relevo_state::{Owner, RecordKey, RecordStore, TransactError, Write};
    let config = emulator_config(&endpoint()).await;
    let table = unique("isolation");
    create_table(&aws_sdk_dynamodb::Client::new(&config), &table)
        .await
        .unwrap();
    // A table with some content: moto copies the whole table for every transaction, and the
    // copy is the window in which its threads interleave.
    let filler = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), &table);
    for n in 0..600 {
        let key = RecordKey::new(Owner::tenant("acme"), "filler", &format!("f{n}"));
        filler
            .create(
                &key,
                &serde_json::json!({ "n": n, "pad": "x".repeat(200) }),
                None,
                1,
            )
            .await
            .unwrap();
    }
    for round in 0..15 {
        let order = RecordKey::new(Owner::tenant("acme"), "order", &format!("cart-{round}"));
        let mut racing = tokio::task::JoinSet::new();
        for racer in 0..8 {
            // A client each, as separate function environments have.
            let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), &table);
            let order = order.clone();
            racing.spawn(async move {
                let mark =
                    RecordKey::new(Owner::tenant("acme"), "mark", &format!("{round}-{racer}"));
                let writes = [
                    Write::Create {
                        key: order,
                        body: serde_json::json!({ "winner": racer }),
                        expires_at: None,
                    },
                    Write::Create {
                        key: mark,
                        body: serde_json::json!(racer),
                        expires_at: None,
                    },
                ];
                (racer, store.transact(&writes, 1).await)
            });
        }
        let results = racing.join_all().await;
        let winners: Vec<u64> = results
            .iter()
            .filter(|(_, r)| r.is_ok())
            .map(|(racer, _)| *racer)
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: winners {winners:?}: {results:?}"
        );
        for (_, result) in results.iter().filter(|(_, r)| r.is_err()) {
            assert!(
                matches!(result, Err(TransactError::Refused { index: 0, .. })),
                "round {round}: {result:?}"
            );
        }
        let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), &table);
        let kept = store
            .get(&order, 1)
            .await
            .unwrap()
            .expect("the winner's order stays");
        assert_eq!(
            kept.body["winner"], winners[0],
            "round {round}: the table keeps the winner's write"
        );
    }
}
