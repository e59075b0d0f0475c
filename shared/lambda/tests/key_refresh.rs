//! A warm environment follows a rotation of its keys secret (Secrets Manager on the moto
//! emulator that `make test` starts; without `RELEVO_TEST_AWS_ENDPOINT` this fails on purpose).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::Duration;

use relevo_lambda::keys::KeyRefresh;
use relevo_state::seal::SealError;
use serde_json::json;

fn endpoint() -> String {
    std::env::var("RELEVO_TEST_AWS_ENDPOINT").expect(
        "RELEVO_TEST_AWS_ENDPOINT is not set: run with `make test` (it starts the moto emulator)",
    )
}

#[tokio::test]
async fn a_warm_environment_takes_up_a_rotation_in_its_overlap_and_forgets_a_retired_key() {
    let config = relevo_aws::emulator_config(&endpoint()).await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let name = format!("relevo-refresh-{}", std::process::id());
    let (old, new) = (
        json!({ "kid": "k1", "key": "a".repeat(48) }),
        json!({ "kid": "k2", "key": "b".repeat(48) }),
    );
    client
        .create_secret()
        .name(&name)
        .secret_string(old.to_string())
        .send()
        .await
        .unwrap();
    let ring = relevo_aws::load_key_ring(&client, &name).await.unwrap();
    let sealed_before = ring.seal("state", &json!({ "round": 1 }), u64::MAX);

    let slow = KeyRefresh::new(
        client.clone(),
        &name,
        ring.clone(),
        Duration::from_secs(3600),
    );
    let every_call = KeyRefresh::new(client.clone(), &name, ring.clone(), Duration::ZERO);
    let rotate = |body: serde_json::Value| {
        let client = client.clone();
        let name = name.clone();
        async move {
            client
                .put_secret_value()
                .secret_id(name)
                .secret_string(body.to_string())
                .send()
                .await
                .unwrap()
        }
    };

    // Rotation: the new key active, the old one kept for the overlap.
    rotate(json!({ "kid": "k2", "key": new["key"], "previous": [old] })).await;
    slow.if_due().await;
    assert_eq!(ring.key_ids(), ["k1"], "not due yet: the interval holds");
    every_call.if_due().await;
    assert_eq!(ring.key_ids(), ["k2", "k1"]);
    assert_eq!(
        ring.open("state", &sealed_before, 1).unwrap(),
        json!({ "round": 1 }),
        "old state opens in the overlap"
    );
    assert!(
        ring.seal("state", &json!(2), u64::MAX)
            .starts_with("v1.k2."),
        "and new state is sealed with the new key"
    );

    // Retirement: the old key leaves the secret, and the environment stops accepting it.
    rotate(new.clone()).await;
    every_call.if_due().await;
    assert_eq!(ring.key_ids(), ["k2"]);
    assert_eq!(
        ring.open("state", &sealed_before, 1),
        Err(SealError::UnknownKey)
    );

    // A secret that cannot be read keeps the keys held.
    client
        .delete_secret()
        .secret_id(&name)
        .force_delete_without_recovery(true)
        .send()
        .await
        .unwrap();
    every_call.if_due().await;
    assert_eq!(ring.key_ids(), ["k2"]);
}
