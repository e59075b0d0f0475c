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
    let created = store
        .create(&alice, &json!({"text": "a"}), None, NOW)
        .await
        .unwrap();
    assert_eq!(created.revision, 1, "create starts at revision 1");
    match store.create(&alice, &json!({"text": "b"}), None, NOW).await {
        Err(StoreError::AlreadyExists(current)) => {
            assert_eq!(
                current.body,
                json!({"text": "a"}),
                "AlreadyExists carries the current record"
            )
        }
        other => panic!("second create must be AlreadyExists, got {other:?}"),
    }

    // the same id under another principal and another tenant is another record
    assert_eq!(
        store.get(&bob, NOW).await.unwrap(),
        None,
        "another principal's lookup finds nothing"
    );
    assert_eq!(
        store.get(&other_tenant, NOW).await.unwrap(),
        None,
        "another tenant's lookup finds nothing"
    );
    store
        .create(&other_tenant, &json!({"text": "g"}), None, NOW)
        .await
        .unwrap();
    assert_eq!(
        store.get(&alice, NOW).await.unwrap().unwrap().body,
        json!({"text": "a"}),
        "tenants do not see each other"
    );
    assert_eq!(
        store.get(&other_tenant, NOW).await.unwrap().unwrap().body,
        json!({"text": "g"})
    );

    // conditional update on revision
    let updated = store
        .update(&alice, 1, &json!({"text": "a2"}), NOW)
        .await
        .unwrap();
    assert_eq!(updated.revision, 2, "update bumps the revision");
    match store
        .update(&alice, 1, &json!({"text": "stale"}), NOW)
        .await
    {
        Err(StoreError::Conflict {
            expected: 1,
            current,
        }) => {
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
        matches!(
            store.update(&bob, 1, &json!({}), NOW).await,
            Err(StoreError::NotFound)
        ),
        "update of another principal's id is NotFound"
    );

    // expiry: an expired record reads as absent and can be created again
    let short = RecordKey::new(Owner::tenant("acme"), "cart", "c1");
    store
        .create(&short, &json!(1), Some(NOW + 10), NOW)
        .await
        .unwrap();
    assert!(store.get(&short, NOW + 9).await.unwrap().is_some());
    assert_eq!(
        store.get(&short, NOW + 10).await.unwrap(),
        None,
        "expired reads as absent"
    );
    assert!(
        matches!(
            store.update(&short, 1, &json!(2), NOW + 10).await,
            Err(StoreError::NotFound)
        ),
        "expired cannot be updated"
    );
    let again = store
        .create(&short, &json!(3), None, NOW + 10)
        .await
        .unwrap();
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
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "exactly one concurrent create wins"
    );
    assert!(
        results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(StoreError::AlreadyExists(_)))),
        "the losers see AlreadyExists"
    );

    counter_contract(store).await;
}

/// [`RecordStore::count_up`]: one atomic conditional count, up to a limit, on a counter record.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn counter_contract(store: Arc<dyn RecordStore>) {
    let window = RecordKey::new(Owner::tenant("acme"), "rate", "tenant/60@1800000000");
    let end = Some(NOW + 60);

    assert_eq!(
        store.count_up(&window, 0, end, NOW).await.unwrap(),
        None,
        "a zero limit counts nothing"
    );
    assert_eq!(
        store.get(&window, NOW).await.unwrap(),
        None,
        "and writes nothing"
    );

    for n in 1..=3 {
        assert_eq!(
            store.count_up(&window, 3, end, NOW).await.unwrap(),
            Some(n),
            "count {n} of 3"
        );
    }
    assert_eq!(
        store.count_up(&window, 3, end, NOW).await.unwrap(),
        None,
        "at the limit: refused"
    );
    let counter = store
        .get(&window, NOW)
        .await
        .unwrap()
        .expect("the counter reads as a record");
    assert_eq!(
        (counter.body, counter.revision, counter.expires_at),
        (json!({ "count": 3 }), 3, end),
        "a refusal wrote nothing; the counter reads as its count, one revision per count"
    );
    assert_eq!(
        store
            .count_up(&window, 5, Some(NOW + 600), NOW)
            .await
            .unwrap(),
        Some(4),
        "a higher limit counts on from the same record"
    );
    assert_eq!(
        store.get(&window, NOW).await.unwrap().unwrap().expires_at,
        end,
        "the first expiry is kept"
    );

    let other_tenant = RecordKey::new(Owner::tenant("globex"), "rate", "tenant/60@1800000000");
    assert_eq!(
        store.count_up(&other_tenant, 3, end, NOW).await.unwrap(),
        Some(1),
        "another tenant counts apart"
    );

    // expiry: an expired counter reads as absent and counts again from 1, with the new expiry
    assert_eq!(
        store.get(&window, NOW + 60).await.unwrap(),
        None,
        "an expired counter reads as absent"
    );
    assert_eq!(
        store
            .count_up(&window, 5, Some(NOW + 120), NOW + 60)
            .await
            .unwrap(),
        Some(1),
        "restarts at 1"
    );
    assert_eq!(
        store
            .get(&window, NOW + 60)
            .await
            .unwrap()
            .unwrap()
            .expires_at,
        Some(NOW + 120)
    );
    assert_eq!(
        store
            .count_up(&window, 5, Some(NOW + 120), NOW + 61)
            .await
            .unwrap(),
        Some(2)
    );

    let forever = RecordKey::new(Owner::tenant("acme"), "rate", "forever");
    assert_eq!(
        store.count_up(&forever, 1, None, NOW).await.unwrap(),
        Some(1)
    );
    assert_eq!(
        store
            .count_up(&forever, 1, None, NOW + 1_000_000)
            .await
            .unwrap(),
        None,
        "no expiry, no restart"
    );

    // concurrent counts of one hot counter: exactly the limit counted, each count once, no error
    let hot = RecordKey::new(Owner::tenant("acme"), "rate", "hot");
    let mut racers = tokio::task::JoinSet::new();
    for _ in 0..24 {
        let (store, hot) = (store.clone(), hot.clone());
        racers.spawn(async move { store.count_up(&hot, 10, end, NOW).await });
    }
    let results = racers.join_all().await;
    let mut counted: Vec<u32> = results.iter().filter_map(|r| r.clone().unwrap()).collect();
    counted.sort_unstable();
    assert_eq!(
        counted,
        (1..=10).collect::<Vec<_>>(),
        "each count 1..=10 once, none lost to a conflict"
    );
    assert_eq!(
        store.get(&hot, NOW).await.unwrap().unwrap().body,
        json!({ "count": 10 })
    );
}

/// [`RecordStore::count_up_by`]: several units in one atomic conditional write, all or none.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn count_by_contract(store: Arc<dyn RecordStore>) {
    let window = RecordKey::new(Owner::tenant("acme"), "rate", "tenant/60@1800000000");
    let end = Some(NOW + 60);

    assert!(
        matches!(
            store.count_up_by(&window, 0, 5, end, NOW).await,
            Err(StoreError::Unavailable(_))
        ),
        "counting no unit is refused"
    );
    assert_eq!(
        store.count_up_by(&window, 6, 5, end, NOW).await.unwrap(),
        None,
        "more units than the limit"
    );
    assert_eq!(
        store.get(&window, NOW).await.unwrap(),
        None,
        "neither refusal wrote anything"
    );

    assert_eq!(
        store.count_up_by(&window, 3, 5, end, NOW).await.unwrap(),
        Some(3),
        "a new counter starts at n"
    );
    assert_eq!(
        store.count_up_by(&window, 3, 5, end, NOW).await.unwrap(),
        None,
        "3 more do not fit under 5"
    );
    let counter = store
        .get(&window, NOW)
        .await
        .unwrap()
        .expect("the counter reads as a record");
    assert_eq!(
        (counter.body, counter.revision, counter.expires_at),
        (json!({ "count": 3 }), 1, end),
        "the refusal counted none of its units and wrote nothing"
    );
    assert_eq!(
        store.count_up_by(&window, 2, 5, end, NOW).await.unwrap(),
        Some(5),
        "2 fit exactly"
    );
    assert_eq!(
        store.count_up(&window, 5, end, NOW).await.unwrap(),
        None,
        "full"
    );
    assert_eq!(
        store.get(&window, NOW).await.unwrap().unwrap().revision,
        2,
        "one revision per counting call"
    );

    // expiry: an expired counter starts again at n, with the new expiry
    assert_eq!(
        store
            .count_up_by(&window, 4, 5, Some(NOW + 120), NOW + 60)
            .await
            .unwrap(),
        Some(4),
        "restarts at n"
    );
    assert_eq!(
        store
            .get(&window, NOW + 60)
            .await
            .unwrap()
            .unwrap()
            .expires_at,
        Some(NOW + 120)
    );

    // 12 concurrent callers of 3 units under 20: six fit (18), none half way, none lost
    let hot = RecordKey::new(Owner::tenant("acme"), "rate", "hot-by");
    let mut racers = tokio::task::JoinSet::new();
    for _ in 0..12 {
        let (store, hot) = (store.clone(), hot.clone());
        racers.spawn(async move { store.count_up_by(&hot, 3, 20, end, NOW).await });
    }
    let results = racers.join_all().await;
    let mut counted: Vec<u32> = results.iter().filter_map(|r| r.clone().unwrap()).collect();
    counted.sort_unstable();
    assert_eq!(
        counted,
        vec![3, 6, 9, 12, 15, 18],
        "each admitted caller counted its 3 units at once: {results:?}"
    );
    assert_eq!(
        store.get(&hot, NOW).await.unwrap().unwrap().body,
        json!({ "count": 18 }),
        "the 6 refused wrote nothing"
    );
    assert_eq!(
        store.count_up_by(&hot, 2, 20, end, NOW).await.unwrap(),
        Some(20),
        "the room left is still there"
    );
}

/// The behaviour every [`JobStore`](crate::JobStore) adapter must show.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn job_store_contract(store: Arc<dyn crate::JobStore>) {
    use crate::jobs::{Created, Job, JobRef, JobStatus, conflicting_job};

    let job = |tenant: &str, subject: &str, id: &str, key: Option<&str>, updated_at: u64| Job {
        job: JobRef {
            tenant: tenant.into(),
            subject: subject.into(),
            id: id.into(),
        },
        kind: "export".into(),
        operation_key: key.map(String::from),
        digest: "d1".into(),
        input: json!({"dataset": "customers"}),
        status: JobStatus::Queued,
        revision: 1,
        lease: None,
        checkpoint: None,
        progress: None,
        task: false,
        result: None,
        error: None,
        attempts: 0,
        cancel_requested: false,
        pending_input: None,
        input_responses: None,
        resume_state: None,
        protocol_error: None,
        trace: None,
        created_at: NOW,
        updated_at,
        expires_at: NOW + 3600,
    };

    let first = job("acme", "alice", "j1", Some("k1"), NOW);
    assert_eq!(
        store.create_job(&first).await.unwrap(),
        Created::New(first.clone()),
        "first create is New"
    );
    match store
        .create_job(&job("acme", "alice", "j2", Some("k1"), NOW))
        .await
        .unwrap()
    {
        Created::Existing(existing) => assert_eq!(
            existing.job.id, "j1",
            "a taken operation key names the first job"
        ),
        other => panic!("same key must give Existing, got {other:?}"),
    }
    assert_eq!(
        store
            .get_job(&JobRef {
                tenant: "acme".into(),
                subject: "alice".into(),
                id: "j2".into()
            })
            .await
            .unwrap(),
        None,
        "the refused job was not written"
    );
    assert!(
        matches!(
            store
                .create_job(&job("acme", "bob", "j3", Some("k1"), NOW))
                .await
                .unwrap(),
            Created::New(_)
        ),
        "operation keys are per principal"
    );
    assert!(matches!(
        store
            .create_job(&job("acme", "alice", "j4", None, NOW + 1))
            .await
            .unwrap(),
        Created::New(_)
    ));

    let alice_j1 = first.job.clone();
    assert_eq!(store.get_job(&alice_j1).await.unwrap().unwrap().revision, 1);
    let bob_j1 = JobRef {
        subject: "bob".into(),
        ..alice_j1.clone()
    };
    let globex_j1 = JobRef {
        tenant: "globex".into(),
        ..alice_j1.clone()
    };
    assert_eq!(
        store.get_job(&bob_j1).await.unwrap(),
        None,
        "another principal's job id finds nothing"
    );
    assert_eq!(
        store.get_job(&globex_j1).await.unwrap(),
        None,
        "another tenant's job id finds nothing"
    );

    let mut running = first.next(NOW + 2);
    running.status = JobStatus::Running;
    running.progress = Some("step 1 of 3 · ünïcode".into());
    running.task = true;
    let written = store.put_job(&running, 1).await.unwrap();
    assert_eq!(written.revision, 2);
    assert_eq!(
        store.get_job(&alice_j1).await.unwrap().as_ref(),
        Some(&running),
        "a put keeps every field, progress and the task flag included"
    );
    let mut stale = first.next(NOW + 3);
    stale.status = JobStatus::Cancelled;
    let error = store.put_job(&stale, 1).await.unwrap_err();
    assert_eq!(
        conflicting_job(&error).map(|j| (j.revision, j.status)),
        Some((2, JobStatus::Running)),
        "Conflict carries the current job"
    );
    assert_eq!(
        store.get_job(&alice_j1).await.unwrap().unwrap().status,
        JobStatus::Running,
        "a refused put changes nothing"
    );
    let ghost = job("acme", "alice", "ghost", None, NOW).next(NOW);
    assert!(matches!(
        store.put_job(&ghost, 1).await,
        Err(StoreError::NotFound)
    ));

    let mut done = running.next(NOW + 4);
    done.status = JobStatus::Succeeded;
    store.put_job(&done, 2).await.unwrap();
    let active: Vec<String> = store
        .list_active(10)
        .await
        .unwrap()
        .into_iter()
        .map(|j| format!("{}/{}", j.job.subject, j.job.id))
        .collect();
    assert_eq!(
        active,
        vec!["bob/j3", "alice/j4"],
        "active jobs, oldest update first, terminal ones left out"
    );

    let mut racers = tokio::task::JoinSet::new();
    for n in 0..8 {
        let store = store.clone();
        let racer = job("acme", "carol", &format!("race-{n}"), Some("same-key"), NOW);
        racers.spawn(async move { store.create_job(&racer).await.unwrap() });
    }
    let outcomes = racers.join_all().await;
    let winners: Vec<&Created> = outcomes
        .iter()
        .filter(|c| matches!(c, Created::New(_)))
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one concurrent start with one key creates a job"
    );
    let Created::New(winner) = winners[0] else {
        unreachable!()
    };
    assert!(
        outcomes.iter().all(|c| match c {
            Created::New(j) | Created::Existing(j) => j.job.id == winner.job.id,
        }),
        "every racer sees the winner's job"
    );
}

/// The behaviour every [`Queue`](crate::Queue) adapter must show, for a queue created with
/// `max_receives` deliveries before dead-lettering. `now` must be the adapter's idea of the
/// current time (SQS ignores it and uses its own clock).
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn queue_contract(queue: Arc<dyn crate::Queue>, max_receives: u32, now: u64) {
    queue.send("one").await.unwrap();
    queue.send("two").await.unwrap();
    let mut first = queue.receive(10, 30, now).await.unwrap();
    first.sort_by(|a, b| a.body.cmp(&b.body));
    assert_eq!(
        first.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(),
        vec!["one", "two"]
    );
    assert!(
        first.iter().all(|m| m.receive_count == 1),
        "first delivery counts 1"
    );
    assert!(
        queue.receive(10, 30, now).await.unwrap().is_empty(),
        "received messages are invisible"
    );

    queue.delete(&first[0].receipt).await.unwrap();
    queue
        .change_visibility(&first[1].receipt, 0, now)
        .await
        .unwrap();
    let again = queue.receive(10, 30, now).await.unwrap();
    assert_eq!(
        again.len(),
        1,
        "a deleted message is gone, a released one is back"
    );
    assert_eq!((again[0].body.as_str(), again[0].receive_count), ("two", 2));

    let mut receipt = again[0].receipt.clone();
    let mut deliveries = 2;
    loop {
        queue.change_visibility(&receipt, 0, now).await.unwrap();
        let next = queue.receive(10, 30, now).await.unwrap();
        match next.first() {
            Some(message) => {
                deliveries = message.receive_count;
                receipt = message.receipt.clone();
                assert!(deliveries <= max_receives, "no delivery beyond the limit");
            }
            None => break,
        }
    }
    assert_eq!(
        deliveries, max_receives,
        "delivered exactly max_receives times, then dead-lettered"
    );
}

/// How the transaction contract races its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Racers {
    /// At once: the store isolates concurrent transactions (SQLite; DynamoDB, and moto behind
    /// `infra/scripts/moto_serial.py`).
    Concurrent,
    /// One after another, for a store that does not isolate concurrent transactions (moto's
    /// threaded server alone snapshots whole tables for each TransactWriteItems and restores
    /// them when one fails, so a concurrent loser's restore can erase the winner's write): the
    /// conditions and all-or-nothing can still be shown.
    Serial,
}

/// The behaviour of [`RecordStore::transact`]: all writes or none, each condition checked, the
/// refused write named with the current record, tenants apart.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn transaction_contract(store: Arc<dyn RecordStore>, racers: Racers) {
    use crate::records::{TransactError, Write};

    let item = RecordKey::new(Owner::tenant("acme"), "stock", "main/MUG");
    let op = RecordKey::new(Owner::tenant("acme"), "operation", "op1");
    let outbox = RecordKey::new(Owner::tenant("acme"), "outbox", "op1");
    store
        .create(&item, &json!({"quantity": 5}), None, NOW)
        .await
        .unwrap();
    store
        .create(&op, &json!({"status": "executing"}), Some(NOW + 100), NOW)
        .await
        .unwrap();

    let commit = |item_rev: u64, op_rev: u64| {
        vec![
            Write::Update {
                key: item.clone(),
                expected_revision: item_rev,
                body: json!({"quantity": 7}),
            },
            Write::Update {
                key: op.clone(),
                expected_revision: op_rev,
                body: json!({"status": "succeeded"}),
            },
            Write::Create {
                key: outbox.clone(),
                body: json!({"op": "op1"}),
                expires_at: Some(NOW + 50),
            },
        ]
    };
    assert_eq!(
        store.transact(&commit(1, 1), NOW).await.unwrap(),
        vec![2, 2, 1],
        "new revisions, in order"
    );
    assert_eq!(
        store.get(&item, NOW).await.unwrap().unwrap().body,
        json!({"quantity": 7})
    );
    let op_now = store.get(&op, NOW).await.unwrap().unwrap();
    assert_eq!(
        (op_now.revision, op_now.expires_at),
        (2, Some(NOW + 100)),
        "an update keeps the expiry"
    );

    // A delete holds only at the live revision, and only with the rest of its transaction.
    let doomed = RecordKey::new(Owner::tenant("acme"), "session", "s1");
    store
        .create(&doomed, &json!({"open": true}), Some(NOW + 100), NOW)
        .await
        .unwrap();
    let wrong = [Write::Delete {
        key: doomed.clone(),
        expected_revision: 7,
    }];
    assert!(
        matches!(
            store.transact(&wrong, NOW).await,
            Err(TransactError::Refused {
                index: 0,
                cause: StoreError::Conflict { .. }
            })
        ),
        "a delete at another revision is a conflict"
    );
    let with_a_failure = [
        Write::Delete {
            key: doomed.clone(),
            expected_revision: 1,
        },
        Write::Check {
            key: item.clone(),
            expected_revision: 99,
        },
    ];
    assert!(store.transact(&with_a_failure, NOW).await.is_err());
    assert!(
        store.get(&doomed, NOW).await.unwrap().is_some(),
        "nothing is deleted when the transaction fails"
    );
    assert_eq!(
        store
            .transact(
                &[Write::Delete {
                    key: doomed.clone(),
                    expected_revision: 1
                }],
                NOW
            )
            .await
            .unwrap(),
        vec![0]
    );
    assert_eq!(store.get(&doomed, NOW).await.unwrap(), None, "deleted");
    let again = [Write::Delete {
        key: doomed.clone(),
        expected_revision: 1,
    }];
    assert!(
        matches!(
            store.transact(&again, NOW).await,
            Err(TransactError::Refused {
                index: 0,
                cause: StoreError::NotFound
            })
        ),
        "a second delete finds nothing"
    );

    // A stale version anywhere refuses everything, and names the write with the current record.
    let stale = vec![
        Write::Update {
            key: op.clone(),
            expected_revision: 2,
            body: json!({"status": "again"}),
        },
        Write::Update {
            key: item.clone(),
            expected_revision: 1,
            body: json!({"quantity": 9}),
        },
    ];
    match store.transact(&stale, NOW).await {
        Err(TransactError::Refused {
            index: 1,
            cause:
                StoreError::Conflict {
                    expected: 1,
                    current,
                },
        }) => {
            assert_eq!(
                (current.revision, current.body.clone()),
                (2, json!({"quantity": 7}))
            )
        }
        other => panic!("a stale version must refuse write 1 with Conflict, got {other:?}"),
    }
    assert_eq!(
        store.get(&op, NOW).await.unwrap().unwrap().body,
        json!({"status": "succeeded"}),
        "a refused transaction writes nothing"
    );

    // A create of an existing key refuses the whole transaction too.
    let twice = vec![
        Write::Update {
            key: item.clone(),
            expected_revision: 2,
            body: json!({"quantity": 1}),
        },
        Write::Create {
            key: outbox.clone(),
            body: json!({"op": "other"}),
            expires_at: None,
        },
    ];
    match store.transact(&twice, NOW).await {
        Err(TransactError::Refused {
            index: 1,
            cause: StoreError::AlreadyExists(current),
        }) => {
            assert_eq!(current.body, json!({"op": "op1"}))
        }
        other => panic!("a second create must be AlreadyExists, got {other:?}"),
    }
    assert_eq!(
        store.get(&item, NOW).await.unwrap().unwrap().revision,
        2,
        "the update beside it did not happen"
    );

    // Checks write nothing and hold only at the expected revision (0: absent).
    let absent = RecordKey::new(Owner::tenant("acme"), "stock", "main/NEW");
    let checked = vec![
        Write::Check {
            key: item.clone(),
            expected_revision: 2,
        },
        Write::Check {
            key: absent.clone(),
            expected_revision: 0,
        },
        Write::Update {
            key: op.clone(),
            expected_revision: 2,
            body: json!({"status": "checked"}),
        },
    ];
    assert_eq!(store.transact(&checked, NOW).await.unwrap(), vec![2, 0, 3]);
    assert_eq!(
        store.get(&item, NOW).await.unwrap().unwrap().revision,
        2,
        "a check writes nothing"
    );
    let moved = vec![
        Write::Update {
            key: op.clone(),
            expected_revision: 3,
            body: json!({"status": "never"}),
        },
        Write::Check {
            key: item.clone(),
            expected_revision: 1,
        },
    ];
    assert!(
        matches!(
            store.transact(&moved, NOW).await,
            Err(TransactError::Refused {
                index: 1,
                cause: StoreError::Conflict { .. }
            })
        ),
        "a check on a moved version refuses the transaction"
    );
    let present = vec![Write::Check {
        key: item.clone(),
        expected_revision: 0,
    }];
    assert!(matches!(
        store.transact(&present, NOW).await,
        Err(TransactError::Refused {
            index: 0,
            cause: StoreError::AlreadyExists(_)
        })
    ));
    assert_eq!(
        store.get(&op, NOW).await.unwrap().unwrap().body,
        json!({"status": "checked"})
    );

    // Another tenant's key with the same ids is not found; malformed transactions are refused.
    let foreign = RecordKey::new(Owner::tenant("globex"), "stock", "main/MUG");
    let refused = store
        .transact(
            &[Write::Update {
                key: foreign,
                expected_revision: 2,
                body: json!({"quantity": 0}),
            }],
            NOW,
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(TransactError::Refused {
                index: 0,
                cause: StoreError::NotFound
            })
        ),
        "{refused:?}"
    );
    let same_key = vec![
        Write::Update {
            key: item.clone(),
            expected_revision: 2,
            body: json!({}),
        },
        Write::Update {
            key: item.clone(),
            expected_revision: 3,
            body: json!({}),
        },
    ];
    assert!(matches!(
        store.transact(&same_key, NOW).await,
        Err(TransactError::Invalid(_))
    ));
    assert!(matches!(
        store.transact(&[], NOW).await,
        Err(TransactError::Invalid(_))
    ));

    // Transactions on one version (concurrent where the store isolates them): exactly one commits.
    let race = |n: u64| {
        let (store, item) = (store.clone(), item.clone());
        async move {
            let marker = RecordKey::new(Owner::tenant("acme"), "marker", &format!("m{n}"));
            let writes = vec![
                Write::Update {
                    key: item,
                    expected_revision: 2,
                    body: json!({ "quantity": 100 + n }),
                },
                Write::Create {
                    key: marker,
                    body: json!(n),
                    expires_at: None,
                },
            ];
            store.transact(&writes, NOW).await
        }
    };
    let results = match racers {
        Racers::Concurrent => {
            let mut set = tokio::task::JoinSet::new();
            for n in 0..6u64 {
                set.spawn(race(n));
            }
            set.join_all().await
        }
        Racers::Serial => {
            let mut results = Vec::new();
            for n in 0..6u64 {
                results.push(race(n).await);
            }
            results
        }
    };
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "exactly one racer commits: {results:?}"
    );
    let mut markers = 0;
    for n in 0..6 {
        let marker = RecordKey::new(Owner::tenant("acme"), "marker", &format!("m{n}"));
        markers += usize::from(store.get(&marker, NOW).await.unwrap().is_some());
    }
    assert_eq!(markers, 1, "the losers' other writes did not happen");
}

/// A write whose answer was lost is sent again by the store's transport (the AWS SDK retries an
/// attempt that timed out; SQLite sends nothing twice): `store` is one whose transport does so for
/// every write. Each call is still answered as its success, applied once — the second send fails
/// its condition against the first one's own write, and that echo is recognised (never a
/// conflict, never `AlreadyExists`) — while another call's write is still refused.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn echo_contract(store: Arc<dyn RecordStore>) {
    use crate::records::Write;

    let cart = RecordKey::new(Owner::personal("acme", "alice"), "cart", "c1");
    let created = store
        .create(&cart, &json!({"lines": []}), Some(NOW + 100), NOW)
        .await;
    assert_eq!(
        created.map(|r| r.revision),
        Ok(1),
        "a create sent twice is answered as created"
    );
    let updated = store.update(&cart, 1, &json!({"lines": [1]}), NOW).await;
    assert_eq!(
        updated.map(|r| r.revision),
        Ok(2),
        "an update sent twice is answered as applied"
    );
    let current = store.get(&cart, NOW).await.unwrap().unwrap();
    assert_eq!(
        (current.revision, current.body),
        (2, json!({"lines": [1]})),
        "applied once: one revision each"
    );

    let order = RecordKey::new(Owner::personal("acme", "alice"), "order", "o1");
    let writes = [
        Write::Update {
            key: cart.clone(),
            expected_revision: 2,
            body: json!({"lines": [1], "order": "o1"}),
        },
        Write::Create {
            key: order.clone(),
            body: json!({"cart": "c1"}),
            expires_at: None,
        },
    ];
    assert_eq!(
        store.transact(&writes, NOW).await,
        Ok(vec![3, 1]),
        "a transaction sent twice is answered as applied"
    );
    assert_eq!(store.get(&cart, NOW).await.unwrap().unwrap().revision, 3);
    assert_eq!(store.get(&order, NOW).await.unwrap().unwrap().revision, 1);

    // Another call's write is not an echo.
    assert!(matches!(
        store.create(&order, &json!({}), None, NOW).await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert!(matches!(
        store.update(&cart, 2, &json!({}), NOW).await,
        Err(StoreError::Conflict { .. })
    ));
    let stale = [Write::Update {
        key: cart.clone(),
        expected_revision: 2,
        body: json!({}),
    }];
    assert!(
        store.transact(&stale, NOW).await.is_err(),
        "a stale transaction is refused"
    );
    assert_eq!(
        store.get(&cart, NOW).await.unwrap().unwrap().revision,
        3,
        "nothing else was applied"
    );
}

/// [`Write::UpdateExpiring`](crate::records::Write::UpdateExpiring) inside a transaction: it sets
/// an expiry on a record that had none, moves it later and earlier, removes it, and expires the
/// record at once with a time at or before `now`; a stale `expected_revision` is refused like any
/// update, and then neither the expiry nor the rest of the transaction is written.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn transaction_expiry_contract(store: Arc<dyn RecordStore>) {
    use crate::records::{TransactError, Write};

    let desk = RecordKey::new(Owner::personal("acme", "alice"), "desk", "operations");
    let op = RecordKey::new(Owner::tenant("acme"), "operation", "op-expiry");
    store
        .create(&desk, &json!({"n": 0}), None, NOW)
        .await
        .unwrap();
    let expiring = |revision: u64, n: u64, expires_at: Option<u64>| Write::UpdateExpiring {
        key: desk.clone(),
        expected_revision: revision,
        body: json!({ "n": n }),
        expires_at,
    };
    let read = || async {
        store
            .get(&desk, NOW)
            .await
            .unwrap()
            .map(|r| (r.revision, r.body["n"].clone(), r.expires_at))
    };

    // Set, with another write in the same transaction.
    let writes = [
        expiring(1, 1, Some(NOW + 100)),
        Write::Create {
            key: op.clone(),
            body: json!({}),
            expires_at: None,
        },
    ];
    assert_eq!(
        store.transact(&writes, NOW).await,
        Ok(vec![2, 1]),
        "an expiry set in a transaction"
    );
    assert_eq!(
        read().await,
        Some((2, json!(1), Some(NOW + 100))),
        "the expiry is set"
    );
    // Moved later, then earlier.
    assert_eq!(
        store
            .transact(&[expiring(2, 2, Some(NOW + 500))], NOW)
            .await,
        Ok(vec![3])
    );
    assert_eq!(
        read().await,
        Some((3, json!(2), Some(NOW + 500))),
        "moved later"
    );
    assert_eq!(
        store.transact(&[expiring(3, 3, Some(NOW + 50))], NOW).await,
        Ok(vec![4])
    );
    assert_eq!(
        read().await,
        Some((4, json!(3), Some(NOW + 50))),
        "moved earlier"
    );
    assert_eq!(
        store.get(&desk, NOW + 50).await.unwrap(),
        None,
        "absent from its new expiry on"
    );
    // A plain update keeps it.
    let plain = Write::Update {
        key: desk.clone(),
        expected_revision: 4,
        body: json!({"n": 4}),
    };
    assert_eq!(store.transact(&[plain], NOW).await, Ok(vec![5]));
    assert_eq!(
        read().await,
        Some((5, json!(4), Some(NOW + 50))),
        "Update keeps the expiry"
    );

    // A stale revision is refused with the current record, and nothing of the transaction lands.
    let marker = RecordKey::new(Owner::tenant("acme"), "marker", "expiry-stale");
    let stale = [
        Write::Create {
            key: marker.clone(),
            body: json!({}),
            expires_at: None,
        },
        expiring(4, 99, Some(NOW + 9_000)),
    ];
    match store.transact(&stale, NOW).await {
        Err(TransactError::Refused {
            index: 1,
            cause:
                StoreError::Conflict {
                    expected: 4,
                    current,
                },
        }) => {
            assert_eq!(
                (current.revision, current.expires_at),
                (5, Some(NOW + 50)),
                "the current record"
            );
        }
        other => panic!("a stale expected_revision must be refused as a conflict, got {other:?}"),
    }
    assert_eq!(
        read().await,
        Some((5, json!(4), Some(NOW + 50))),
        "neither body nor expiry was written"
    );
    assert_eq!(
        store.get(&marker, NOW).await.unwrap(),
        None,
        "nor the rest of the transaction"
    );

    // Removed: the record never expires again.
    assert_eq!(
        store.transact(&[expiring(5, 5, None)], NOW).await,
        Ok(vec![6])
    );
    assert_eq!(
        read().await,
        Some((6, json!(5), None)),
        "the expiry is removed"
    );
    assert!(
        store.get(&desk, NOW + 10_000_000).await.unwrap().is_some(),
        "and it no longer expires"
    );

    // A time at or before `now` expires it at once: a create may take the key again.
    assert_eq!(
        store.transact(&[expiring(6, 6, Some(NOW))], NOW).await,
        Ok(vec![7])
    );
    assert_eq!(
        store.get(&desk, NOW).await.unwrap(),
        None,
        "expired at once"
    );
    assert!(
        matches!(
            store.transact(&[expiring(7, 7, None)], NOW).await,
            Err(TransactError::Refused {
                index: 0,
                cause: StoreError::NotFound
            })
        ),
        "an expired record cannot be updated"
    );
    assert_eq!(
        store
            .create(&desk, &json!({"n": 0}), None, NOW)
            .await
            .map(|r| r.revision),
        Ok(1),
        "its key is free again"
    );
}
