//! The RecordStore contract on SQLite, in memory and on disk across a reopen.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_state::{Owner, RecordKey, RecordStore};
use serde_json::json;

#[tokio::test]
async fn sqlite_in_memory_meets_the_record_store_contract() {
    relevo_state::contract::record_store_contract(Arc::new(SqliteStore::in_memory().unwrap())).await;
}

#[tokio::test]
async fn sqlite_file_meets_the_contract_and_survives_a_reopen() {
    let dir = std::env::temp_dir().join(format!("relevo-contract-{}", std::process::id()));
    let path = dir.join("store.db");
    let _ = std::fs::remove_dir_all(&dir);
    relevo_state::contract::record_store_contract(Arc::new(SqliteStore::open(&path).unwrap())).await;
    let reopened = SqliteStore::open(&path).unwrap();
    let key = RecordKey::new(Owner::personal("acme", "alice"), "note", "n1");
    assert_eq!(reopened.get(&key, 1_800_000_000).await.unwrap().unwrap().body, json!({"text": "a2"}));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn sqlite_transactions_are_all_or_nothing() {
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    relevo_state::contract::transaction_contract(store, relevo_state::contract::Racers::Concurrent).await;
}

#[tokio::test]
async fn sqlite_meets_the_job_store_contract() {
    relevo_state::contract::job_store_contract(Arc::new(SqliteStore::in_memory().unwrap())).await;
}

#[tokio::test]
async fn sqlite_meets_the_queue_contract_and_dead_letters() {
    let queue = relevo_embedded::SqliteQueue::new(SqliteStore::in_memory().unwrap(), 3);
    relevo_state::contract::queue_contract(Arc::new(queue.clone()), 3, 1_800_000_000).await;
    assert_eq!(queue.dead_letters().await.unwrap(), vec![("two".to_string(), 3)]);
}
