//! Spec checklist — Tasks extension (`io.modelcontextprotocol/tasks`), "Task Status
//! Notifications": "To begin listening for task status notifications, clients send a
//! `subscriptions/listen` request to the server including a list of task IDs the client is
//! interested in … In its acknowledgement notification, the server includes the list of task IDs
//! it has agreed to send task status notifications for" and "Each notification carries a complete
//! `DetailedTask` for the current status, identical to what `tasks/get` would have returned at
//! that moment." — "If a client requests task status notifications but does not declare the
//! `io.modelcontextprotocol/tasks` extension capability, the server **MUST** return a JSON-RPC
//! error" (`-32021`). With the core's Subscriptions page: the server "MUST NOT send any
//! notification type that was not requested", and every notification carries the subscription id.
//!
//! What holds, end to end through the router, the durable store and the worker: the ack echoes
//! only the ids of the listener's own tasks (another principal's task and a made-up id are left
//! out alike, revealing nothing); when the listener's task finishes, `notifications/tasks` carries
//! it as `tasks/get` answers it, tagged with the subscription id; nothing is sent of the other
//! principal's task; a token without the scopes `tasks/get` needs watches none of its own tasks
//! either; more than `MAX_WATCHED_TASKS` ids is invalid params; a listener that did not declare
//! the extension gets `-32021` and no stream. Every task read of the stream is paid from the
//! tenant's quota before it happens, as the stream's resource reads are (the listen poll surface).
//!
//! Where the filter asks with no extension declared, the extension's MUST (`-32021`) is followed,
//! not the core's "leave out what is not honoured".

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::time::Duration;

use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_protocol::{McpServer, ServerConfig};
use relevo_tests::race::{RaceStore, Seed};
use relevo_tests::*;
use serde_json::{Value, json};

const SCOPES: &[&str] = &["exports:read", "exports:write"];

struct Fixture {
    router: axum::Router,
    counted: Arc<RaceStore<SqliteStore>>,
    issuer: relevo_auth::DevIssuer,
    jobs: ShopJobs,
    queue: SqliteQueue,
}

/// The fixed time the server counts quota windows at (one window for the whole test).
const NOW: u64 = 1_800_000_010;
/// The tenant's quota: requests per hour.
const QUOTA: u32 = 100_000;

fn fixture() -> Fixture {
    let (settings, issuer, auth) = dev_auth();
    let sqlite = SqliteStore::in_memory().unwrap();
    let queue = SqliteQueue::new(sqlite.clone(), 5);
    let jobs = shop_jobs(Arc::new(sqlite.clone()), Arc::new(queue.clone()), None);
    // The server's records through a store that keeps the history of its writes (no pauses):
    // each quota count is one write, its units the step between counts.
    let counted = Arc::new(RaceStore::new(
        Arc::new(sqlite.clone()),
        Seed(0),
        Duration::ZERO,
    ));
    // Leases of one unit: each count is one request's own units (what is asserted).
    let quotas = relevo_protocol::quota::Quotas {
        max_lease: Some(1),
        ..relevo_protocol::quota::Quotas::parse(Some(&format!("{QUOTA}/3600")), None).unwrap()
    };
    let config = ServerConfig {
        listen_max_secs: 2,
        listen_poll_ms: 100,
        quotas,
        ..ServerConfig::default()
    };
    let server = McpServer::new(jobs.app.clone(), config, test_keys(), Arc::new(auth))
        .with_tasks(jobs.engine.clone())
        .with_store(counted.clone())
        .with_clock(Arc::new(relevo_protocol::ManualClock::at(NOW)));
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    Fixture {
        router: relevo_local::router(server, options),
        counted,
        issuer,
        jobs,
        queue,
    }
}

fn tasks_meta() -> Value {
    envelope(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }))
}

impl Fixture {
    fn request(
        &self,
        token: &str,
        method: &str,
        mut params: Value,
    ) -> http::Request<axum::body::Body> {
        params["_meta"] = tasks_meta();
        rpc_as(Some(token), 42, method, params)
    }

    async fn rpc(&self, token: &str, method: &str, params: Value) -> Value {
        send(&self.router, self.request(token, method, params))
            .await
            .json()
    }

    async fn export(&self, token: &str) -> String {
        let created = self
            .rpc(
                token,
                "tools/call",
                json!({ "name": "export_start", "arguments": { "dataset": "orders", "purpose": "audit" } }),
            )
            .await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        created["result"]["taskId"].as_str().unwrap().to_string()
    }
}

impl Fixture {
    /// The units of each count of the tenant's quota so far, in order.
    fn counts(&self) -> Vec<u64> {
        let totals: Vec<u64> = self
            .counted
            .applied(relevo_state::rate::KIND)
            .iter()
            .map(|(_, body)| body["count"].as_u64().unwrap())
            .collect();
        let mut last = 0;
        totals
            .into_iter()
            .map(|total| total - std::mem::replace(&mut last, total))
            .collect()
    }
}

fn task_notifications(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/tasks")
        .collect()
}

#[tokio::test]
async fn the_ack_echoes_only_the_listeners_own_tasks_and_each_status_change_is_pushed() {
    let f = fixture();
    let alice = dev_token(&f.issuer, "acme", "alice", SCOPES);
    let bob = dev_token(&f.issuer, "acme", "bob", SCOPES);
    let (alices, bobs) = (f.export(&alice).await, f.export(&bob).await);
    let asked = json!([alices, bobs, "no-such-task"]);

    let listen = f.request(
        &alice,
        "subscriptions/listen",
        json!({ "notifications": { "taskIds": asked } }),
    );
    let router = f.router.clone();
    let listening = tokio::spawn(async move { send(&router, listen).await });
    tokio::time::sleep(Duration::from_millis(400)).await;
    drain(&f.queue, &f.jobs.worker).await; // both exports run to completion
    let messages = listening.await.unwrap().sse_messages();

    assert_eq!(
        messages[0]["method"], "notifications/subscriptions/acknowledged",
        "{messages:?}"
    );
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({ "taskIds": [alices] }),
        "only alice's own task is honoured; bob's reads as unknown"
    );
    let pushed = task_notifications(&messages);
    assert!(!pushed.is_empty(), "the completion is pushed: {messages:?}");
    for notification in &pushed {
        assert_eq!(
            notification["params"]["taskId"],
            alices.as_str(),
            "{notification}"
        );
        assert_eq!(
            notification["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 42,
            "{notification}"
        );
    }
    let last = &pushed.last().unwrap()["params"];
    assert_eq!(last["status"], "completed", "{last}");
    let mut got = f
        .rpc(&alice, "tasks/get", json!({ "taskId": alices }))
        .await["result"]
        .clone();
    // Everything but the envelope: tasks/get's `resultType` and `_meta`, the notification's tag.
    let mut sent = last.clone();
    for fields in [&mut got, &mut sent] {
        let fields = fields.as_object_mut().unwrap();
        fields.remove("resultType");
        fields.remove("_meta");
    }
    assert!(
        sent == got,
        "the DetailedTask tasks/get answers: sent {} keys, got {} keys",
        sent.as_object().unwrap().len(),
        got.as_object().unwrap().len()
    );
    assert!(
        !messages
            .iter()
            .any(|m| m.to_string().contains(bobs.as_str())),
        "nothing of bob's task: {messages:?}"
    );
    assert_eq!(
        messages.last().unwrap()["result"]["resultType"],
        "complete",
        "ended with the listen result"
    );
}

#[tokio::test]
async fn task_ids_without_the_extension_are_32021_without_scopes_unheard_and_bounded() {
    let f = fixture();
    let alice = dev_token(&f.issuer, "acme", "alice", SCOPES);
    let id = f.export(&alice).await;

    // The default envelope declares no extension.
    let filter = json!({ "notifications": { "taskIds": [id] } });
    let refused = send(
        &f.router,
        rpc_as(Some(&alice), 7, "subscriptions/listen", filter),
    )
    .await;
    assert!(!refused.is_sse(), "no stream: {}", refused.text);
    let refused = refused.json();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
    );

    // Alice's own task, but a token without the scopes `tasks/get` needs: left out, silently.
    let bare = dev_token(&f.issuer, "acme", "alice", &[]);
    let filter = json!({ "notifications": { "taskIds": [id] } });
    let messages = send(&f.router, f.request(&bare, "subscriptions/listen", filter))
        .await
        .sse_messages();
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({}),
        "{messages:?}"
    );
    assert!(task_notifications(&messages).is_empty(), "{messages:?}");

    let many: Vec<String> = (0..=relevo_protocol::MAX_WATCHED_TASKS)
        .map(|i| format!("t{i}"))
        .collect();
    let refused = f
        .rpc(
            &alice,
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": many } }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test]
async fn every_task_read_of_a_listen_stream_is_paid_from_the_tenants_quota_before_it_reads() {
    let f = fixture();
    let alice = dev_token(&f.issuer, "acme", "alice", SCOPES);
    let own = [f.export(&alice).await, f.export(&alice).await];
    let asked = json!([own[0], own[1], "no-such-task"]);
    let before = f.counts().len();
    let messages = send(
        &f.router,
        f.request(
            &alice,
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": asked } }),
        ),
    )
    .await
    .sse_messages();
    assert_eq!(
        messages[0]["params"]["notifications"]["taskIds"],
        json!(own),
        "{messages:?}"
    );
    // The request's own unit, the baseline's 3 reads (every id asked for costs its read), then
    // each poll 1 + 1 per watched task (the two still working: nothing drains them).
    let paid = f.counts().split_off(before);
    assert_eq!(paid[..2], [1, 3], "{paid:?}");
    assert!(paid.len() >= 2 + 5, "a poll every 100 ms for 2 s: {paid:?}");
    assert!(
        paid[2..].iter().all(|&n| n == 3),
        "each poll paid: {paid:?}"
    );
}
