//! The Tasks extension over HTTP with the demo export: a task is the durable job, readable and
//! cancellable only by its owner; without the extension the same tool answers synchronously.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_protocol::{McpServer, ServerConfig};
use relevo_tests::*;
use serde_json::{Value, json};

const SCOPES: &[&str] = &["exports:read", "exports:write"];

struct Fixture {
    router: axum::Router,
    issuer: relevo_auth::DevIssuer,
    jobs: relevo_tests::ShopJobs,
    queue: SqliteQueue,
}

fn fixture() -> Fixture {
    let (settings, issuer, auth) = dev_auth();
    let sqlite = SqliteStore::in_memory().unwrap();
    let queue = SqliteQueue::new(sqlite.clone(), 5);
    let jobs = relevo_tests::shop_jobs(Arc::new(sqlite), Arc::new(queue.clone()), None);
    let server = McpServer::new(jobs.app.clone(), ServerConfig::default(), test_keys(), Arc::new(auth))
        .with_tasks(jobs.engine.clone());
    let options = relevo_local::GatewayOptions { auth: Some(settings), ..gateway_options() };
    Fixture { router: relevo_local::router(server, options), issuer, jobs, queue }
}

fn tasks_meta() -> Value {
    envelope(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }))
}

impl Fixture {
    async fn rpc(&self, token: &str, method: &str, mut params: Value) -> Value {
        params["_meta"] = tasks_meta();
        send(&self.router, rpc_as(Some(token), 1, method, params)).await.json()
    }

    /// Runs everything queued, as the worker would.
    async fn drain(&self) {
        use relevo_state::Queue;
        loop {
            let messages =
                self.queue.receive(10, 60, relevo_state::Clock::now_unix(&relevo_state::SystemClock)).await.unwrap();
            if messages.is_empty() {
                return;
            }
            for message in messages {
                self.jobs.worker.process_message(&message.body).await.unwrap();
                self.queue.delete(&message.receipt).await.unwrap();
            }
        }
    }
}

#[tokio::test]
async fn the_export_is_a_task_that_only_its_owner_can_read_or_cancel() {
    let f = fixture();
    let alice = dev_token(&f.issuer, "acme", "alice", SCOPES);
    let created = f
        .rpc(
            &alice,
            "tools/call",
            json!({ "name": "export_start", "arguments": { "dataset": "orders", "purpose": "audit" } }),
        )
        .await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working");
    assert!(task.get("requestState").is_none() && task.get("task").is_none(), "flat CreateTaskResult");
    assert!(task["ttlMs"].is_u64() && task["pollIntervalMs"].is_u64());
    let id = task["taskId"].as_str().unwrap().to_string();

    let got = f.rpc(&alice, "tasks/get", json!({ "taskId": id })).await;
    assert_eq!(got["result"]["resultType"], "complete");
    assert_eq!(got["result"]["status"], "working", "readable at once: created before the reply");

    for (who, token) in [
        ("other principal", dev_token(&f.issuer, "acme", "bob", SCOPES)),
        ("other tenant", dev_token(&f.issuer, "globex", "alice", SCOPES)),
    ] {
        for method in ["tasks/get", "tasks/cancel"] {
            let refused = f.rpc(&token, method, json!({ "taskId": id })).await;
            assert_eq!(refused["error"]["code"], -32602, "{who} {method}: {refused}");
            assert_eq!(refused["error"]["message"], "Unknown task");
        }
    }

    f.drain().await;
    let done = f.rpc(&alice, "tasks/get", json!({ "taskId": id })).await["result"].clone();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["structuredContent"]["rows"], 240);
    assert_eq!(done["result"]["resultType"], "complete");

    let ack = f.rpc(&alice, "tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(
        ack["result"],
        json!({ "resultType": "complete", "_meta": ack["result"]["_meta"] }),
        "cancel of a finished task is an empty ack"
    );
    assert_eq!(
        f.rpc(&alice, "tasks/get", json!({ "taskId": id })).await["result"]["status"],
        "completed",
        "and changes nothing"
    );
}

#[tokio::test]
async fn without_the_extension_tasks_methods_are_32021_and_the_export_is_synchronous() {
    let f = fixture();
    let alice = dev_token(&f.issuer, "acme", "alice", SCOPES);
    let plain = send(&f.router, rpc_as(Some(&alice), 1, "tasks/get", json!({ "taskId": "x" }))).await;
    assert_eq!(plain.status, 400);
    assert_eq!(
        plain.json()["error"]["data"]["requiredCapabilities"],
        json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
    );
    let started = send(
        &f.router,
        rpc_as(
            Some(&alice),
            2,
            "tools/call",
            json!({ "name": "export_start", "arguments": { "dataset": "orders", "purpose": "audit" } }),
        ),
    )
    .await
    .json();
    assert_eq!(started["result"]["resultType"], "complete");
    assert_eq!(started["result"]["structuredContent"]["status"], "queued");
}

#[tokio::test]
async fn discover_advertises_the_tasks_extension() {
    let f = fixture();
    let alice = dev_token(&f.issuer, "acme", "alice", &[]);
    let discover = f.rpc(&alice, "server/discover", json!({})).await;
    assert_eq!(discover["result"]["capabilities"]["extensions"], json!({ "io.modelcontextprotocol/tasks": {} }));
    assert!(discover["result"]["capabilities"].get("tasks").is_none());
}
