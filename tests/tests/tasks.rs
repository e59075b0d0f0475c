//! The Tasks extension over HTTP with the demo export: a task is the durable job, readable and
//! cancellable only by its owner; without the extension the same tool answers synchronously.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_protocol::wire::CallToolResult;
use relevo_protocol::{App, McpServer, NoAuth, Outcome, ServerConfig, TaskSupport, Tool, handler};
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
    let server = McpServer::new(
        jobs.app.clone(),
        ServerConfig::default(),
        test_keys(),
        Arc::new(auth),
    )
    .with_tasks(jobs.engine.clone());
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    Fixture {
        router: relevo_local::router(server, options),
        issuer,
        jobs,
        queue,
    }
}

fn tasks_meta() -> Value {
    envelope(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }))
}

impl Fixture {
    async fn rpc(&self, token: &str, method: &str, mut params: Value) -> Value {
        params["_meta"] = tasks_meta();
        send(&self.router, rpc_as(Some(token), 1, method, params))
            .await
            .json()
    }

    async fn drain(&self) {
        drain(&self.queue, &self.jobs.worker).await;
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
    assert!(
        task.get("requestState").is_none() && task.get("task").is_none(),
        "flat CreateTaskResult"
    );
    assert!(task["ttlMs"].is_u64() && task["pollIntervalMs"].is_u64());
    let id = task["taskId"].as_str().unwrap().to_string();

    let got = f.rpc(&alice, "tasks/get", json!({ "taskId": id })).await;
    assert_eq!(got["result"]["resultType"], "complete");
    assert_eq!(
        got["result"]["status"], "working",
        "readable at once: created before the reply"
    );

    for (who, token) in [
        (
            "other principal",
            dev_token(&f.issuer, "acme", "bob", SCOPES),
        ),
        (
            "other tenant",
            dev_token(&f.issuer, "globex", "alice", SCOPES),
        ),
    ] {
        for method in ["tasks/get", "tasks/cancel"] {
            let refused = f.rpc(&token, method, json!({ "taskId": id })).await;
            assert_eq!(
                refused["error"]["code"], -32602,
                "{who} {method}: {refused}"
            );
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
    let plain = send(
        &f.router,
        rpc_as(Some(&alice), 1, "tasks/get", json!({ "taskId": "x" })),
    )
    .await;
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
    // The shop's approval view adds MCP Apps' `io.modelcontextprotocol/ui` beside it.
    assert_eq!(
        discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    assert!(discover["result"]["capabilities"].get("tasks").is_none());
}

/// What the tests' log lines say, collected from a subscriber set for the current thread.
#[derive(Clone, Default)]
struct Logs(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_task_result_that_breaks_its_output_schema_fails_the_task() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    // The tool returns a result its declared outputSchema refuses (`n` is not an integer).
    let answer = |structured: Value| {
        handler(move |_| {
            let structured = structured.clone();
            async move { Ok(Outcome::tool(CallToolResult::structured(structured))) }
        })
    };
    let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] });
    let tool = |name: &str, structured: Value| {
        Tool::new(name, "", json!({ "type": "object" }), answer(structured))
            .with_output_schema(schema.clone())
            .tasks(TaskSupport::Required)
    };
    let app = Arc::new(
        App::new("task-outputs", "0")
            .tool(tool("keeps", json!({ "n": 1 })))
            .tool(tool("breaks", json!({ "n": "private-words" }))),
    );
    let sqlite = SqliteStore::in_memory().unwrap();
    let queue = SqliteQueue::new(sqlite.clone(), 5);
    let records = Arc::new(sqlite);
    let engine = Arc::new(relevo_state::Engine::new(
        records,
        Arc::new(queue.clone()),
        Arc::new(relevo_state::SystemClock),
        Arc::new(relevo_state::RandomIds),
        relevo_state::EngineConfig::default(),
    ));
    let worker = app.worker(engine.clone());
    let router = router(
        McpServer::new(app, test_config(), test_keys(), Arc::new(NoAuth)).with_tasks(engine),
    );
    let call = |id: u64, method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = tasks_meta();
        rpc(id, method, params)
    };
    let mut tasks = Vec::new();
    for name in ["keeps", "breaks"] {
        let created = send(
            &router,
            call(1, "tools/call", json!({ "name": name, "arguments": {} })),
        )
        .await
        .json();
        assert_eq!(created["result"]["resultType"], "task", "{name}: {created}");
        tasks.push(created["result"]["taskId"].as_str().unwrap().to_string());
    }
    drain(&queue, &worker).await;
    let got = |id: &str| send(&router, call(2, "tasks/get", json!({ "taskId": id })));

    let kept = got(&tasks[0]).await.json();
    assert_eq!(kept["result"]["status"], "completed", "{kept}");
    assert_eq!(
        kept["result"]["result"]["structuredContent"],
        json!({ "n": 1 })
    );

    let broke = got(&tasks[1]).await.json();
    assert_eq!(
        broke["result"]["status"], "failed",
        "a result that breaks the schema is no success: {broke}"
    );
    assert_eq!(broke["result"]["error"]["code"], -32603, "{broke}");
    assert!(
        broke["result"]["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("outputSchema"),
        "{broke}"
    );
    assert!(
        !broke.to_string().contains("private-words"),
        "no result content in the task: {broke}"
    );
    let logged = logs.text();
    let line = logged
        .lines()
        .find(|l| l.contains("broke its outputSchema"))
        .unwrap_or_else(|| panic!("{logged}"));
    assert!(line.contains("breaks"), "the log names the tool: {line}");
    assert!(
        !logged.contains("private-words"),
        "no result content in the log: {logged}"
    );
}
