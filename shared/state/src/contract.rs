//! The behaviour every [`RecordStore`] adapter must show. Each adapter's tests call
//! [`record_store_contract`] against a fresh store; a failed expectation panics with its name.

use std::sync::Arc;

use serde_json::json;

use crate::records::{Owner, RecordKey, RecordStore, StoreError};

const NOW: u64 = 1_800_000_000;

#[allow(clippy::unwrap_used, clippy::panic)] // contract checks: a failure must stop the test loudly
pub async fn record_store_contract(store: Arc<dyn RecordStore>) {
    let alice = RecordKey::new(Owner::personal("acme", "alice"), "note", "n1");
    let bob = RecordKey::new(Owner::personal("acme", "bob"), "note", "n1");
    let other_tenant = RecordKey::new(Owner::personal("globex", "alice"), "note", "n1");

    // create, then create again: the second sees the first, unchanged
    let created = store.create(&alice, &json!({"text": "a"}), None, NOW).await.unwrap();
    assert_eq!(created.revision, 1, "create starts at revision 1");
    match store.create(&alice, &json!({"text": "b"}), None, NOW).await {
        Err(StoreError::AlreadyExists(current)) => {
            assert_eq!(current.body, json!({"text": "a"}), "AlreadyExists carries the current record")
        }
        other => panic!("second create must be AlreadyExists, got {other:?}"),
    }

    // the same id under another principal and another tenant is another record
    assert_eq!(store.get(&bob, NOW).await.unwrap(), None, "another principal's lookup finds nothing");
    assert_eq!(store.get(&other_tenant, NOW).await.unwrap(), None, "another tenant's lookup finds nothing");
    store.create(&other_tenant, &json!({"text": "g"}), None, NOW).await.unwrap();
    assert_eq!(
        store.get(&alice, NOW).await.unwrap().unwrap().body,
        json!({"text": "a"}),
        "tenants do not see each other"
    );
    assert_eq!(store.get(&other_tenant, NOW).await.unwrap().unwrap().body, json!({"text": "g"}));

    // conditional update on revision
    let updated = store.update(&alice, 1, &json!({"text": "a2"}), NOW).await.unwrap();
    assert_eq!(updated.revision, 2, "update bumps the revision");
    match store.update(&alice, 1, &json!({"text": "stale"}), NOW).await {
        Err(StoreError::Conflict { expected: 1, current }) => {
            assert_eq!(current.revision, 2, "Conflict carries the current record")
        }
        other => panic!("stale update must be Conflict, got {other:?}"),
    }
    assert_eq!(
        store.get(&alice, NOW).await.unwrap().unwrap().body,
        json!({"text": "a2"}),
        "a refused update changes nothing"
    );
    assert!(
        matches!(store.update(&bob, 1, &json!({}), NOW).await, Err(StoreError::NotFound)),
        "update of another principal's id is NotFound"
    );

    // expiry: an expired record reads as absent and can be created again
    let short = RecordKey::new(Owner::tenant("acme"), "cart", "c1");
    store.create(&short, &json!(1), Some(NOW + 10), NOW).await.unwrap();
    assert!(store.get(&short, NOW + 9).await.unwrap().is_some());
    assert_eq!(store.get(&short, NOW + 10).await.unwrap(), None, "expired reads as absent");
    assert!(
        matches!(store.update(&short, 1, &json!(2), NOW + 10).await, Err(StoreError::NotFound)),
        "expired cannot be updated"
    );
    let again = store.create(&short, &json!(3), None, NOW + 10).await.unwrap();
    assert_eq!(again.revision, 1, "an expired key can be created afresh");

    // concurrent creates of one key: exactly one wins, the others see it
    let mut racers = tokio::task::JoinSet::new();
    for n in 0..8 {
        let store = store.clone();
        racers.spawn(async move {
            let race = RecordKey::new(Owner::tenant("acme"), "job", "race");
            store.create(&race, &json!({ "n": n }), None, NOW).await
        });
    }
    let results = racers.join_all().await;
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "exactly one concurrent create wins");
    assert!(
        results.iter().all(|r| r.is_ok() || matches!(r, Err(StoreError::AlreadyExists(_)))),
        "the losers see AlreadyExists"
    );
}
