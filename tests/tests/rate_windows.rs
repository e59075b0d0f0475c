//! Request-rate windows (`relevo_state::rate`) over the embedded SQLite store, the adapter the
//! local server runs (the same admissions over DynamoDB on the emulator, and across server
//! instances, are in `quotas.rs`), with an injected clock.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_state::rate::{Admission, Rate, admit, window_key};
use relevo_state::{
    Clock, ManualClock, Record, RecordKey, RecordStore, StoreError, StoreFuture, TransactError,
    TransactFuture, Write,
};
use serde_json::{Value, json};

fn sqlite() -> SqliteStore {
    SqliteStore::in_memory().unwrap()
}

const PER_MINUTE: Rate = Rate {
    limit: 3,
    window_secs: 60,
};

#[tokio::test]
async fn a_window_admits_its_limit_then_says_when_the_next_one_starts() {
    let (store, clock) = (sqlite(), ManualClock::at(1_800_000_010));
    for n in 1..=3 {
        let admitted = admit(&store, "acme", "tenant", PER_MINUTE, clock.now_unix())
            .await
            .unwrap();
        assert_eq!(admitted, Admission::Allowed { count: n });
    }
    clock.advance(15);
    let refused = admit(&store, "acme", "tenant", PER_MINUTE, clock.now_unix())
        .await
        .unwrap();
    // 1_800_000_000 is a multiple of 60: the window runs to …060, and it is …025 now.
    assert_eq!(
        refused,
        Admission::Limited {
            retry_after_secs: 35
        }
    );
    let key = window_key("acme", "tenant", PER_MINUTE, clock.now_unix());
    assert_eq!(
        store
            .get(&key, clock.now_unix())
            .await
            .unwrap()
            .unwrap()
            .body,
        json!({ "count": 3 }),
        "a refusal writes nothing"
    );
}

#[tokio::test]
async fn the_next_window_starts_from_zero_and_the_old_one_expires() {
    let (store, clock) = (sqlite(), ManualClock::at(1_800_000_059));
    for _ in 0..3 {
        admit(&store, "acme", "tenant", PER_MINUTE, clock.now_unix())
            .await
            .unwrap();
    }
    let old = window_key("acme", "tenant", PER_MINUTE, clock.now_unix());
    let last = admit(&store, "acme", "tenant", PER_MINUTE, clock.now_unix())
        .await
        .unwrap();
    assert_eq!(
        last,
        Admission::Limited {
            retry_after_secs: 1
        },
        "at least one second, never zero"
    );
    clock.advance(1);
    let next = admit(&store, "acme", "tenant", PER_MINUTE, clock.now_unix())
        .await
        .unwrap();
    assert_eq!(next, Admission::Allowed { count: 1 });
    assert_eq!(
        store.get(&old, clock.now_unix()).await.unwrap(),
        None,
        "the old window reads as absent"
    );
}

#[tokio::test]
async fn tenants_scopes_and_window_lengths_are_counted_apart() {
    let (store, now) = (sqlite(), 1_800_000_000);
    for _ in 0..3 {
        admit(&store, "acme", "tenant", PER_MINUTE, now)
            .await
            .unwrap();
    }
    assert!(matches!(
        admit(&store, "acme", "tenant", PER_MINUTE, now).await,
        Ok(Admission::Limited { .. })
    ));
    assert_eq!(
        admit(&store, "globex", "tenant", PER_MINUTE, now)
            .await
            .unwrap(),
        Admission::Allowed { count: 1 }
    );
    let tool = admit(&store, "acme", "tool:cart_checkout", PER_MINUTE, now)
        .await
        .unwrap();
    assert_eq!(tool, Admission::Allowed { count: 1 });
    let reconfigured = Rate {
        limit: 3,
        window_secs: 10,
    };
    assert_eq!(
        admit(&store, "acme", "tenant", reconfigured, now)
            .await
            .unwrap(),
        Admission::Allowed { count: 1 }
    );
}

#[tokio::test]
async fn a_zero_limit_admits_nothing_and_writes_nothing() {
    let store = sqlite();
    let refused = admit(
        &store,
        "acme",
        "tenant",
        Rate {
            limit: 0,
            window_secs: 60,
        },
        1_800_000_000,
    )
    .await;
    assert_eq!(
        refused.unwrap(),
        Admission::Limited {
            retry_after_secs: 60
        }
    );
    let key = window_key(
        "acme",
        "tenant",
        Rate {
            limit: 0,
            window_secs: 60,
        },
        1_800_000_000,
    );
    assert_eq!(
        store.get(&key, 1_800_000_000).await.unwrap(),
        None,
        "nothing was written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_on_many_instances_admit_exactly_the_limit() {
    let store: Arc<dyn RecordStore> = Arc::new(sqlite());
    let rate = Rate {
        limit: 25,
        window_secs: 60,
    };
    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..100 {
        let store = store.clone();
        racing.spawn(
            async move { admit(store.as_ref(), "acme", "tenant", rate, 1_800_000_000).await },
        );
    }
    let answers = racing.join_all().await;
    let mut counts: Vec<u32> = answers
        .iter()
        .filter_map(|a| match a {
            Ok(Admission::Allowed { count }) => Some(*count),
            _ => None,
        })
        .collect();
    counts.sort_unstable();
    assert_eq!(
        counts,
        (1..=25).collect::<Vec<_>>(),
        "each admission counted once, in order, none twice"
    );
    let refused = answers
        .iter()
        .filter(|a| matches!(a, Ok(Admission::Limited { .. })))
        .count();
    assert_eq!(
        refused, 75,
        "every other request is refused, none lost to contention: {answers:?}"
    );
}

#[tokio::test]
async fn a_failing_store_is_an_error_that_names_the_scope() {
    struct Down;
    impl RecordStore for Down {
        fn create<'a>(
            &'a self,
            _: &'a RecordKey,
            _: &'a Value,
            _: Option<u64>,
            _: u64,
        ) -> StoreFuture<'a, Record> {
            Box::pin(async { Err(StoreError::Unavailable("switched off".into())) })
        }
        fn get<'a>(&'a self, _: &'a RecordKey, _: u64) -> StoreFuture<'a, Option<Record>> {
            Box::pin(async { Ok(None) })
        }
        fn update<'a>(
            &'a self,
            _: &'a RecordKey,
            _: u64,
            _: &'a Value,
            _: u64,
        ) -> StoreFuture<'a, Record> {
            Box::pin(async { Err(StoreError::NotFound) })
        }
        fn transact<'a>(&'a self, _: &'a [Write], _: u64) -> TransactFuture<'a> {
            Box::pin(async { Err(TransactError::Invalid("unused".into())) })
        }
        fn count_up_by<'a>(
            &'a self,
            _: &'a RecordKey,
            _: u32,
            _: u32,
            _: Option<u64>,
            _: u64,
        ) -> StoreFuture<'a, Option<u32>> {
            Box::pin(async { Err(StoreError::Unavailable("switched off".into())) })
        }
    }
    let error = admit(&Down, "acme", "tool:x", PER_MINUTE, 1_800_000_000)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "counting the request rate of tool:x: the store is unavailable: switched off"
    );
}

/// Every store call `admit` makes, by name, over the real SQLite store.
#[derive(Default)]
struct Calls(std::sync::Mutex<Vec<&'static str>>);

struct Counting {
    inner: SqliteStore,
    calls: Arc<Calls>,
}

impl Counting {
    fn called(&self, name: &'static str) {
        self.calls.0.lock().unwrap().push(name);
    }
}

impl RecordStore for Counting {
    fn create<'a>(
        &'a self,
        key: &'a RecordKey,
        body: &'a Value,
        exp: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        self.called("create");
        self.inner.create(key, body, exp, now)
    }
    fn get<'a>(&'a self, key: &'a RecordKey, now: u64) -> StoreFuture<'a, Option<Record>> {
        self.called("get");
        self.inner.get(key, now)
    }
    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        rev: u64,
        body: &'a Value,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        self.called("update");
        self.inner.update(key, rev, body, now)
    }
    fn transact<'a>(&'a self, writes: &'a [Write], now: u64) -> TransactFuture<'a> {
        self.called("transact");
        self.inner.transact(writes, now)
    }
    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        units: u32,
        limit: u32,
        exp: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        self.called("count_up_by");
        self.inner.count_up_by(key, units, limit, exp, now)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_request_is_one_atomic_count_with_no_read_and_no_retry() {
    let calls = Arc::new(Calls::default());
    let store: Arc<dyn RecordStore> = Arc::new(Counting {
        inner: sqlite(),
        calls: calls.clone(),
    });
    let rate = Rate {
        limit: 10,
        window_secs: 60,
    };
    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..64 {
        let store = store.clone();
        racing.spawn(
            async move { admit(store.as_ref(), "acme", "tenant", rate, 1_800_000_000).await },
        );
    }
    let answers = racing.join_all().await;
    assert!(
        answers.iter().all(Result::is_ok),
        "no answer is an error: {answers:?}"
    );
    let admitted = answers
        .iter()
        .filter(|a| matches!(a, Ok(Admission::Allowed { .. })))
        .count();
    assert_eq!(admitted, 10);
    let made = calls.0.lock().unwrap().clone();
    assert_eq!(
        made,
        vec!["count_up_by"; 64],
        "one counting write per request, nothing else"
    );
    let key = window_key("acme", "tenant", rate, 1_800_000_000);
    let window = store.get(&key, 1_800_000_000).await.unwrap().unwrap();
    assert_eq!(
        (window.body, window.revision),
        (json!({ "count": 10 }), 10),
        "54 refusals wrote nothing"
    );
    assert_eq!(
        window.expires_at,
        Some(1_800_000_060),
        "the window's record expires at the window's end"
    );
}
