//! The inventory desk (the per-principal list `inventory_apply` walks) expires with its last
//! entry: the latest open operation's own expiry, or a finished one's mark plus the report
//! window, whichever is later — the moment `prune` would empty it anyway. So a principal who
//! proposes once and never again leaves no record behind for ever. On SQLite and on DynamoDB
//! (moto, started by `make test`), over the inventory races' store.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use relevo_app::inventory::{PROPOSAL_LIFETIME_SECS, REPORT_WINDOW_SECS};
use relevo_state::ledger::OpStatus;
use relevo_state::{Owner, RecordKey, RecordStore};
use relevo_tests::inventory::{T0, World, agent, request, world};
use relevo_tests::race::{Backend, Seed};
use serde_json::Value;

fn desk_key(subject: &str) -> RecordKey {
    RecordKey::new(
        Owner::personal("acme", subject),
        "inventory-desk",
        "operations",
    )
}

/// The desk's (expiry, listed operation ids), read at `now`.
async fn desk(w: &World, subject: &str, now: u64) -> Option<(Option<u64>, usize)> {
    let record = w.store.get(&desk_key(subject), now).await.unwrap()?;
    Some((
        record.expires_at,
        record.body["operations"].as_array().map_or(0, Vec::len),
    ))
}

async fn the_desk_expires_with_its_last_entry(kind: Backend) {
    let w = world(kind, Seed::from_env(&format!("inventory desk on {kind:?}"))).await;
    let ann = agent("ann");
    let first = w.at(0).propose(&ann, &request("CUP", 5, 0)).await.unwrap();
    assert_eq!(first.status, OpStatus::Authorized);
    let first_expiry = T0 + PROPOSAL_LIFETIME_SECS;
    assert_eq!(
        desk(&w, "ann", T0).await,
        Some((Some(first_expiry), 1)),
        "a new desk expires with its only entry"
    );

    w.clock.advance(100);
    w.at(1)
        .propose(&ann, &request("SAUCER", 3, 0))
        .await
        .unwrap();
    let second_expiry = first_expiry + 100;
    assert_eq!(
        desk(&w, "ann", T0 + 100).await,
        Some((Some(second_expiry), 2)),
        "moved to the latest open entry"
    );

    // Both finish: the desk keeps them for the report window, then has nothing left.
    w.clock.advance(100);
    let finished_at = T0 + 200;
    let applied = w.at(2).apply(&ann, None).await.unwrap();
    let statuses: Vec<&Value> = applied.iter().map(|r| &r["status"]).collect();
    assert_eq!(statuses, ["succeeded", "succeeded"], "{applied:?}");
    let window_end = finished_at + REPORT_WINDOW_SECS;
    assert_eq!(
        desk(&w, "ann", finished_at).await,
        Some((Some(window_end), 2)),
        "the finished marks plus the window"
    );
    assert!(
        desk(&w, "ann", window_end - 1).await.is_some(),
        "still there to report a repeated apply"
    );
    assert_eq!(
        desk(&w, "ann", window_end).await,
        None,
        "gone when its last entry leaves"
    );

    // A proposal after that starts a desk again; a later one moves the expiry past the finished marks.
    w.clock.advance(REPORT_WINDOW_SECS);
    let now = finished_at + REPORT_WINDOW_SECS;
    w.at(0)
        .propose(&ann, &request("PLATE", 2, 0))
        .await
        .unwrap();
    assert_eq!(
        desk(&w, "ann", now).await,
        Some((Some(now + PROPOSAL_LIFETIME_SECS), 1)),
        "a fresh desk"
    );
    assert_eq!(
        desk(&w, "ann", now + PROPOSAL_LIFETIME_SECS).await,
        None,
        "an entry never applied expires with it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_desk_expires_with_its_last_entry_on_sqlite() {
    the_desk_expires_with_its_last_entry(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_desk_expires_with_its_last_entry_on_dynamodb() {
    the_desk_expires_with_its_last_entry(Backend::Dynamo).await;
}
