//! Spec checklist — Tasks extension (`io.modelcontextprotocol/tasks`), "Error Handling" → "Task
//! Execution Errors": "When the underlying request encounters a JSON-RPC protocol error during
//! execution, the task moves to the `failed` status. The `tasks/get` response **SHOULD** include a
//! `statusMessage` field with diagnostic information about the failure, and **MUST** include the
//! `error` field with the JSON-RPC error." (`Task.statusMessage`: "Additional information for
//! "failed" status (e.g., error details, what went wrong) … This MAY be exposed to the end-user
//! or model.")
//!
//! What holds, end to end through the router and the worker: a task whose tool answers a
//! JSON-RPC error is `failed` with that error in `error` and its `message` as `statusMessage`;
//! a task whose tool panics is `failed` with a generic `-32603`, and neither field carries what
//! the panic said (the status message is shown to users and models: no internals in it).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_protocol::{App, McpError, McpServer, NoAuth, Outcome, TaskSupport, Tool, handler};
use relevo_tests::*;
use serde_json::{Value, json};

fn tasks_meta() -> Value {
    envelope(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }))
}

#[tokio::test]
async fn a_failed_task_carries_its_errors_message_as_status_message_and_no_internals() {
    let refuses = handler(|_| async {
        Err::<Outcome, _>(McpError::invalid_params("the upstream rate limit is spent"))
    });
    let panics = handler(|_| async {
        if std::hint::black_box(true) {
            panic!("db password hunter2 rejected");
        }
        Ok(Outcome::Complete(Default::default()))
    });
    let tool = |name: &str, run| {
        Tool::new(name, "", json!({ "type": "object" }), run).tasks(TaskSupport::Required)
    };
    let app = Arc::new(
        App::new("task-failures", "0")
            .tool(tool("refuses", refuses))
            .tool(tool("panics", panics)),
    );
    let sqlite = SqliteStore::in_memory().unwrap();
    let queue = SqliteQueue::new(sqlite.clone(), 5);
    let engine = Arc::new(relevo_state::Engine::new(
        Arc::new(sqlite),
        Arc::new(queue.clone()),
        Arc::new(relevo_state::SystemClock),
        Arc::new(relevo_state::RandomIds),
        relevo_state::EngineConfig::default(),
    ));
    let worker = app.worker(engine.clone());
    let router = router(
        McpServer::new(app, test_config(), test_keys(), Arc::new(NoAuth)).with_tasks(engine),
    );
    let call = |method: &str, mut params: Value| {
        params["_meta"] = tasks_meta();
        rpc(1, method, params)
    };
    let mut ids = Vec::new();
    for name in ["refuses", "panics"] {
        let created = send(
            &router,
            call("tools/call", json!({ "name": name, "arguments": {} })),
        )
        .await
        .json();
        assert_eq!(created["result"]["resultType"], "task", "{name}: {created}");
        ids.push(created["result"]["taskId"].as_str().unwrap().to_string());
    }
    drain(&queue, &worker).await;
    let get = |id: String| send(&router, call("tasks/get", json!({ "taskId": id })));

    let refused = get(ids[0].clone()).await.json()["result"].clone();
    assert_eq!(refused["status"], "failed", "{refused}");
    assert_eq!(
        refused["error"],
        json!({ "code": -32602, "message": "the upstream rate limit is spent" })
    );
    assert_eq!(
        refused["statusMessage"], "the upstream rate limit is spent",
        "the failure described: {refused}"
    );

    let panicked = get(ids[1].clone()).await.json()["result"].clone();
    assert_eq!(panicked["status"], "failed", "{panicked}");
    assert_eq!(panicked["error"]["code"], -32603, "{panicked}");
    let message = panicked["statusMessage"].as_str().unwrap_or_else(|| {
        panic!("a failed task carries a statusMessage: {panicked}");
    });
    assert_eq!(message, panicked["error"]["message"], "{panicked}");
    assert!(
        !panicked.to_string().contains("hunter2"),
        "no internals in the task: {panicked}"
    );
}
