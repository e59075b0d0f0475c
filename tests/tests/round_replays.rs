//! One run per elicitation round: a tool that acts on an accepted answer (here it "sends an
//! email": a record under a fresh id, the kind of effect nothing downstream deduplicates) acts
//! once per `requestState`, however often and wherever its final round is sent.
//!
//! - the same final round sent twice runs the tool once, and both answers are the same result;
//! - the same final round from eight clients at once, over four instances sharing one store
//!   (SQLite, and DynamoDB on moto): one email, every answer the recorded result or the retryable
//!   `round_in_progress` (a client that retries it gets the result), and the store's history shows
//!   one claim, the effect after it, one record of the outcome after the effect;
//! - another answer to a used round is refused (`round_already_answered`), whichever came first;
//! - an expired `requestState` is refused as before (`invalid_request_state`), whether or not its
//!   round ran;
//! - a round whose run never recorded its outcome answers "in progress" within its lease and
//!   `round_interrupted` after it, never a second run;
//! - a result too large to keep is answered once; its replay is refused, not run.
//!
//! Seeded pauses before every store call in the race (`relevo_tests::race`); a failure names the
//! seed (`RELEVO_RACE_SEED=… cargo test` replays it). Bounded: a handful of calls per scenario.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use relevo_embedded::SqliteStore;
use relevo_protocol::author::{Elicited, ToolContext, ToolError};
use relevo_protocol::{App, Clock, ManualClock, McpServer, NoAuth, SystemClock, Tool};
use relevo_state::records::{TransactFuture, Write};
use relevo_state::{Owner, Record, RecordKey, RecordStore, StoreError, StoreFuture};
use relevo_tests::race::{Backend, Both, RaceStore, Seed, backend, is_retryable};
use relevo_tests::*;
use serde_json::{Value, json};

const T0: u64 = 1_800_000_000;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Notify {
    /// Who gets the email
    to: String,
    /// A large report rather than an email
    #[serde(default)]
    report: bool,
}

/// The form the user fills.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Send it
    send: bool,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sent {
    /// The id of the email sent
    email: String,
    /// Emails sent by this tool so far (the effect counter)
    sent: usize,
    /// A long text, for the report
    report: String,
}

/// The effect counter and the store the effects are written to.
#[derive(Clone)]
struct Effects {
    sent: Arc<AtomicUsize>,
    store: Arc<dyn RecordStore>,
    /// How long the tool works before it sends.
    work: Duration,
}

/// `notify`: asks to confirm, then sends one email (a record under a fresh id) and says so.
fn app(effects: Effects) -> App {
    let notify = move |args: Notify, cx: ToolContext| {
        let effects = effects.clone();
        async move {
            let question = format!("Send the email to {}?", args.to);
            match cx.elicit::<Confirm>("confirm", &question)? {
                Elicited::Accept(Confirm { send: true }) => {}
                _ => return Err(ToolError::caller("not sent")),
            }
            tokio::time::sleep(effects.work).await;
            let email = relevo_state::Ids::new_id(&relevo_state::RandomIds);
            let key = RecordKey::new(Owner::tenant("effects"), "email", &email);
            let now = SystemClock.now_unix();
            effects
                .store
                .create(&key, &json!({ "to": args.to }), None, now)
                .await
                .map_err(ToolError::from)?;
            let sent = effects.sent.fetch_add(1, Ordering::SeqCst) + 1;
            let report = if args.report {
                "x".repeat(300 * 1024)
            } else {
                String::new()
            };
            Ok(Sent {
                email,
                sent,
                report,
            })
        }
    };
    App::new("round-replays", "0").tool(Tool::typed("notify", "Sends an email.", notify))
}

/// `count` instances over `store`, one key ring, one clock.
fn instances(
    store: Arc<dyn RecordStore>,
    effects: &Effects,
    clock: Arc<dyn Clock>,
    count: usize,
) -> Vec<axum::Router> {
    (0..count)
        .map(|_| {
            let server = McpServer::new(
                app(effects.clone()),
                test_config(),
                test_keys(),
                Arc::new(NoAuth),
            )
            .with_clock(clock.clone())
            .with_store(store.clone());
            router(server)
        })
        .collect()
}

async fn call(router: &axum::Router, params: Value) -> Value {
    let mut params = params;
    params["name"] = json!("notify");
    send(router, rpc(7, "tools/call", params)).await.json()
}

/// Round one: the question, and its requestState.
async fn ask(router: &axum::Router, arguments: &Value) -> Value {
    let asked = call(router, json!({ "arguments": arguments })).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    asked["result"]["requestState"].clone()
}

fn final_round(arguments: &Value, state: &Value, answer: Value) -> Value {
    json!({ "arguments": arguments, "inputResponses": { "confirm": answer }, "requestState": state })
}

fn accept() -> Value {
    json!({ "action": "accept", "content": { "send": true } })
}

fn decline() -> Value {
    json!({ "action": "decline" })
}

fn reason(answer: &Value) -> &str {
    answer["error"]["data"]["reason"]
        .as_str()
        .unwrap_or_default()
}

fn effects_on(store: Arc<dyn RecordStore>) -> Effects {
    Effects {
        sent: Arc::default(),
        store,
        work: Duration::ZERO,
    }
}

#[tokio::test]
async fn the_same_final_round_sent_twice_runs_the_tool_once_and_answers_the_same() {
    let store: Arc<dyn RecordStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let effects = effects_on(store.clone());
    let routers = instances(store, &effects, Arc::new(ManualClock::at(T0)), 2);
    let arguments = json!({ "to": "bob@example.com" });
    let state = ask(&routers[0], &arguments).await;
    let first = call(&routers[0], final_round(&arguments, &state, accept())).await;
    assert_eq!(first["result"]["isError"], false, "{first}");
    // The client's retry (its answer was lost), here on another instance.
    let second = call(&routers[1], final_round(&arguments, &state, accept())).await;
    assert_eq!(
        effects.sent.load(Ordering::SeqCst),
        1,
        "the tool ran once: {second}"
    );
    assert_eq!(first, second, "the replay is the first answer");
    assert_eq!(first["result"]["structuredContent"]["sent"], 1);
}

#[tokio::test]
async fn a_used_round_refuses_another_answer_whichever_came_first() {
    let store: Arc<dyn RecordStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let effects = effects_on(store.clone());
    let routers = instances(store, &effects, Arc::new(ManualClock::at(T0)), 2);
    let arguments = json!({ "to": "bob@example.com" });

    // Accepted first: a decline of the same round is refused, the email stands.
    let state = ask(&routers[0], &arguments).await;
    let accepted = call(&routers[0], final_round(&arguments, &state, accept())).await;
    assert_eq!(
        accepted["result"]["structuredContent"]["sent"], 1,
        "{accepted}"
    );
    let declined = call(&routers[1], final_round(&arguments, &state, decline())).await;
    assert_eq!(declined["error"]["code"], -32602, "{declined}");
    assert_eq!(reason(&declined), "round_already_answered", "{declined}");

    // Declined first: an accept of the same round is refused, and sends nothing.
    let state = ask(&routers[0], &arguments).await;
    let declined = call(&routers[0], final_round(&arguments, &state, decline())).await;
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    let accepted = call(&routers[1], final_round(&arguments, &state, accept())).await;
    assert_eq!(reason(&accepted), "round_already_answered", "{accepted}");
    let again = call(&routers[1], final_round(&arguments, &state, decline())).await;
    assert_eq!(
        again, declined,
        "the same decline again is the first answer"
    );
    assert_eq!(effects.sent.load(Ordering::SeqCst), 1, "one email in all");

    // Another answer to a used round differs in what it says, not in what it carries besides.
    let state = ask(&routers[0], &arguments).await;
    let first = call(&routers[0], final_round(&arguments, &state, accept())).await;
    let mut noisy = final_round(&arguments, &state, accept());
    noisy["inputResponses"]["confirm"]["_meta"] = json!({ "client": "retry" });
    noisy["inputResponses"]["unasked"] = json!({ "action": "cancel" });
    let replayed = call(&routers[1], noisy).await;
    assert_eq!(
        first, replayed,
        "extra keys and _meta are not another answer"
    );
    assert_eq!(effects.sent.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_expired_round_is_refused_as_before_whether_or_not_it_ran() {
    let store: Arc<dyn RecordStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let effects = effects_on(store.clone());
    let clock = Arc::new(ManualClock::at(T0));
    let routers = instances(store, &effects, clock.clone(), 1);
    let arguments = json!({ "to": "bob@example.com" });
    let unanswered = ask(&routers[0], &arguments).await;
    let answered = ask(&routers[0], &arguments).await;
    let first = call(&routers[0], final_round(&arguments, &answered, accept())).await;
    assert_eq!(first["result"]["structuredContent"]["sent"], 1, "{first}");

    clock.advance(test_config().request_state_ttl_secs);
    for state in [&unanswered, &answered] {
        let late = call(&routers[0], final_round(&arguments, state, accept())).await;
        assert_eq!(late["error"]["code"], -32602, "{late}");
        assert_eq!(reason(&late), "invalid_request_state", "{late}");
        assert_eq!(
            late["error"]["data"]["detail"], "token has expired",
            "{late}"
        );
    }
    assert_eq!(
        effects.sent.load(Ordering::SeqCst),
        1,
        "nothing ran after expiry"
    );
}

#[tokio::test]
async fn a_result_too_large_to_keep_is_answered_once_and_its_replay_refused() {
    let store: Arc<dyn RecordStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let effects = effects_on(store.clone());
    let routers = instances(store, &effects, Arc::new(ManualClock::at(T0)), 1);
    let arguments = json!({ "to": "bob@example.com", "report": true });
    let state = ask(&routers[0], &arguments).await;
    let first = call(&routers[0], final_round(&arguments, &state, accept())).await;
    assert_eq!(first["result"]["structuredContent"]["sent"], 1, "{first}");
    let replay = call(&routers[0], final_round(&arguments, &state, accept())).await;
    assert_eq!(reason(&replay), "round_result_too_large", "{replay}");
    assert_eq!(replay["error"]["code"], -32602, "{replay}");
    assert_eq!(effects.sent.load(Ordering::SeqCst), 1, "not run again");
}

/// SQLite whose writes of round outcomes fail while `refuse` is set: a run that claimed its
/// round and could not record what it did, as a crash after the effect leaves it.
struct LosesOutcomes {
    inner: SqliteStore,
    refuse: AtomicBool,
}

impl RecordStore for LosesOutcomes {
    fn create<'a>(
        &'a self,
        key: &'a RecordKey,
        body: &'a Value,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        self.inner.create(key, body, expires_at, now)
    }
    fn get<'a>(&'a self, key: &'a RecordKey, now: u64) -> StoreFuture<'a, Option<Record>> {
        self.inner.get(key, now)
    }
    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        expected: u64,
        body: &'a Value,
        now: u64,
    ) -> StoreFuture<'a, Record> {
        if key.kind == "round-outcome" && self.refuse.load(Ordering::SeqCst) {
            return Box::pin(async { Err(StoreError::Unavailable("switched off".into())) });
        }
        self.inner.update(key, expected, body, now)
    }
    fn transact<'a>(&'a self, writes: &'a [Write], now: u64) -> TransactFuture<'a> {
        self.inner.transact(writes, now)
    }
    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        n: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        self.inner.count_up_by(key, n, limit, expires_at, now)
    }
}

#[tokio::test]
async fn a_round_that_never_recorded_its_outcome_is_never_run_again() {
    let store = Arc::new(LosesOutcomes {
        inner: SqliteStore::in_memory().unwrap(),
        refuse: AtomicBool::new(true),
    });
    let effects = effects_on(store.clone());
    let clock = Arc::new(ManualClock::at(T0));
    let routers = instances(store.clone(), &effects, clock.clone(), 2);
    let arguments = json!({ "to": "bob@example.com" });
    let state = ask(&routers[0], &arguments).await;
    let first = call(&routers[0], final_round(&arguments, &state, accept())).await;
    assert_eq!(
        first["result"]["structuredContent"]["sent"], 1,
        "the run's own answer is its result, recorded or not: {first}"
    );
    store.refuse.store(false, Ordering::SeqCst);

    // Within the lease, the round may still be running somewhere: retryable, nothing run.
    let soon = call(&routers[1], final_round(&arguments, &state, accept())).await;
    assert!(is_retryable(&soon), "{soon}");
    assert_eq!(soon["error"]["code"], -31000, "{soon}");
    assert_eq!(reason(&soon), "round_in_progress", "{soon}");

    // After it, the run is known to have ended without a record: refused, never run again.
    clock.advance(relevo_protocol::author::rounds::DEFAULT_ROUND_LEASE_SECS);
    let late = call(&routers[1], final_round(&arguments, &state, accept())).await;
    assert_eq!(late["error"]["code"], -32602, "{late}");
    assert_eq!(reason(&late), "round_interrupted", "{late}");
    assert_eq!(effects.sent.load(Ordering::SeqCst), 1, "one email");

    // A fresh call is a new round, and runs.
    let state = ask(&routers[1], &arguments).await;
    let fresh = call(&routers[1], final_round(&arguments, &state, accept())).await;
    assert_eq!(fresh["result"]["structuredContent"]["sent"], 2, "{fresh}");
}

/// Eight clients send one final round at once, to four instances over one raced store: one
/// email, each answer the one result or "in progress" (then the result on retry), and a history
/// of one claim, the effect, one record.
async fn the_same_final_round_from_eight_clients_at_once_runs_the_tool_once(kind: Backend) {
    const CLIENTS: usize = 8;
    let seed = Seed::from_env(&format!("one final round from eight clients on {kind:?}"));
    let inner = Arc::new(Both(backend(kind).await));
    let store = Arc::new(RaceStore::new(inner, seed, Duration::from_millis(3)));
    let mut rng = seed.rng(2);
    let effects = Effects {
        sent: Arc::default(),
        store: store.clone(),
        // Half the time quick enough for the others to wait for its result, half the time not
        // (they are told it is in progress).
        work: Duration::from_millis(if rng.chance(50) {
            rng.below(40)
        } else {
            200 + rng.below(100)
        }),
    };
    let routers = Arc::new(instances(store.clone(), &effects, Arc::new(SystemClock), 4));
    let arguments = json!({ "to": "bob@example.com" });
    let state = ask(&routers[0], &arguments).await;
    let round = final_round(&arguments, &state, accept());

    let mut clients = tokio::task::JoinSet::new();
    for client in 0..CLIENTS {
        let (routers, round) = (routers.clone(), round.clone());
        clients.spawn(async move { call(&routers[client % routers.len()], round).await });
    }
    let answers = clients.join_all().await;
    seed.check(
        effects.sent.load(Ordering::SeqCst) == 1 && store.applied("email").len() == 1,
        format!(
            "one email: {} sent, {:?}",
            effects.sent.load(Ordering::SeqCst),
            store.applied("email")
        ),
    );
    let results: Vec<&Value> = answers
        .iter()
        .filter(|a| a.get("result").is_some())
        .collect();
    seed.check(
        !results.is_empty() && results.iter().all(|r| *r == results[0]),
        format!("every result is the one result: {answers:?}"),
    );
    let result = results[0].clone();
    seed.check(
        result["result"]["structuredContent"]["sent"] == 1,
        format!("the result is the email's: {result}"),
    );
    for answer in &answers {
        seed.check(
            *answer == result || (is_retryable(answer) && reason(answer) == "round_in_progress"),
            format!("an answer is neither the result nor in progress: {answer}"),
        );
    }
    // A client told "in progress" retries and gets the result.
    for answer in answers.iter().filter(|a| is_retryable(a)) {
        let mut retried = answer.clone();
        for _ in 0..100 {
            retried = call(&routers[3], round.clone()).await;
            if !is_retryable(&retried) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        seed.check(
            retried == result,
            format!("the retry gets the result: {retried}"),
        );
    }
    seed.check(
        effects.sent.load(Ordering::SeqCst) == 1,
        "still one email after the retries",
    );

    // The history: one claim applied, the email after it, one outcome recorded after the email.
    let history = store.history();
    let position = |wanted: &dyn Fn(&relevo_tests::race::Written) -> bool| {
        history
            .iter()
            .enumerate()
            .filter(|(_, w)| w.applied && wanted(w))
            .map(|(at, _)| at)
            .collect::<Vec<_>>()
    };
    let of_kind = |kind: &'static str, call: &'static str| {
        move |w: &relevo_tests::race::Written| {
            w.call == call && w.writes.iter().any(|(key, _)| key.kind == kind)
        }
    };
    let claims = position(&of_kind("round-outcome", "create"));
    let records = position(&of_kind("round-outcome", "update"));
    let emails = position(&of_kind("email", "create"));
    seed.check(
        claims.len() == 1 && records.len() == 1 && emails.len() == 1,
        format!("one claim {claims:?}, one record {records:?}, one email {emails:?}"),
    );
    seed.check(
        claims[0] < emails[0] && emails[0] < records[0],
        format!("claim {claims:?}, then the email {emails:?}, then the record {records:?}"),
    );
    let recorded = &history[records[0]].writes[0].1;
    seed.check(
        recorded["status"] == "done"
            && recorded["result"]["structuredContent"] == result["result"]["structuredContent"],
        format!("the record holds the answered result: {recorded}"),
    );
    let refused_claims = history
        .iter()
        .filter(|w| !w.applied && of_kind("round-outcome", "create")(w))
        .count();
    seed.check(
        refused_claims >= CLIENTS - 1,
        format!("every other request found the claim: {refused_claims} refused creates"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_final_round_from_eight_clients_at_once_runs_the_tool_once_on_sqlite() {
    the_same_final_round_from_eight_clients_at_once_runs_the_tool_once(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_final_round_from_eight_clients_at_once_runs_the_tool_once_on_dynamodb() {
    the_same_final_round_from_eight_clients_at_once_runs_the_tool_once(Backend::Dynamo).await;
}
