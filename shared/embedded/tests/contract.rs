//! The RecordStore contract on SQLite, in memory and on disk across a reopen.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_state::{Owner, RecordKey, RecordStore};
use serde_json::json;

#[tokio::test]
async fn sqlite_in_memory_meets_the_record_store_contract() {
    relevo_state::contract::record_store_contract(Arc::new(SqliteStore::in_memory().unwrap()))
        .await;
}

#[tokio::test]
async fn sqlite_file_meets_the_contract_and_survives_a_reopen() {
    let dir = std::env::temp_dir().join(format!("relevo-contract-{}", std::process::id()));
    let path = dir.join("store.db");
    let _ = std::fs::remove_dir_all(&dir);
    relevo_state::contract::record_store_contract(Arc::new(SqliteStore::open(&path).unwrap()))
        .await;
    let reopened = SqliteStore::open(&path).unwrap();
    let key = RecordKey::new(Owner::personal("acme", "alice"), "note", "n1");
    assert_eq!(
        reopened
            .get(&key, 1_800_000_000)
            .await
            .unwrap()
            .unwrap()
            .body,
        json!({"text": "a2"})
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_counts_several_units_in_one_write_all_or_none() {
    relevo_state::contract::count_by_contract(Arc::new(SqliteStore::in_memory().unwrap())).await;
}

#[tokio::test]
async fn sqlite_transactions_are_all_or_nothing() {
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    relevo_state::contract::transaction_contract(store, relevo_state::contract::Racers::Concurrent)
        .await;
}

#[tokio::test]
async fn sqlite_transactions_set_move_and_remove_an_expiry() {
    relevo_state::contract::transaction_expiry_contract(Arc::new(
        SqliteStore::in_memory().unwrap(),
    ))
    .await;
}

#[tokio::test]
async fn sqlite_meets_the_job_store_contract() {
    relevo_state::contract::job_store_contract(Arc::new(SqliteStore::in_memory().unwrap())).await;
}

#[tokio::test]
async fn sqlite_meets_the_queue_contract_and_dead_letters() {
    let queue = relevo_embedded::SqliteQueue::new(SqliteStore::in_memory().unwrap(), 3);
    relevo_state::contract::queue_contract(Arc::new(queue.clone()), 3, 1_800_000_000).await;
    assert_eq!(
        queue.dead_letters().await.unwrap(),
        vec![("two".to_string(), 3)]
    );
}

#[tokio::test]
async fn the_database_file_and_its_directory_are_the_owner_s_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("relevo-perms-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("data").join("store.db");
    SqliteStore::open(&path).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600, "the database holds notes and exports");
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    // A file left readable by an older version is tightened on open.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    SqliteStore::open(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_sweep_removes_what_expired_and_keeps_the_rest() {
    let store = SqliteStore::in_memory().unwrap();
    let now = 1_800_000_000;
    let gone = RecordKey::new(Owner::tenant("acme"), "cart", "old");
    let kept = RecordKey::new(Owner::tenant("acme"), "cart", "new");
    let forever = RecordKey::new(Owner::tenant("acme"), "stock", "main/MUG");
    store
        .create(&gone, &json!({}), Some(now + 10), now)
        .await
        .unwrap();
    store
        .create(&kept, &json!({}), Some(now + 1000), now)
        .await
        .unwrap();
    store.create(&forever, &json!({}), None, now).await.unwrap();
    assert_eq!(store.sweep(now + 10).await.unwrap(), 1);
    assert_eq!(
        store.get(&gone, now).await.unwrap(),
        None,
        "removed, not merely hidden"
    );
    assert!(store.get(&kept, now).await.unwrap().is_some());
    assert!(store.get(&forever, now + 10_000).await.unwrap().is_some());
}

#[tokio::test]
async fn sqlite_answers_a_write_once_applied_as_success() {
    // SQLite's transport sends nothing twice; the contract is the same as DynamoDB's behind an SDK
    // that resends every write.
    relevo_state::contract::echo_contract(Arc::new(SqliteStore::in_memory().unwrap())).await;
}
