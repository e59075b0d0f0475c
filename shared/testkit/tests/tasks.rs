//! The Tasks extension through `TestServer`, as a client that declared it meets it: a tool that
//! runs as a task answers a flat `CreateTaskResult`, `tasks/get` follows it to its result,
//! `tasks/cancel` ends one, and a client without the extension is refused `tasks/*`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use relevo_protocol::author::{JobContext, JobError, JobKind, ToolContext};
use relevo_protocol::{App, Ports, Tool};
use relevo_testkit::TestServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Sum {
    upto: u64,
}

const SUM: JobKind<Sum> = JobKind::new("sum");

async fn sum(input: Sum, cx: JobContext) -> Result<u64, JobError> {
    if cx.cancel_requested() {
        return Err(JobError::Cancelled);
    }
    Ok((1..=input.upto).sum())
}

fn app(ports: &Ports) -> App {
    let engine = ports.jobs.clone().unwrap();
    let start = move |input: Sum, cx: ToolContext| {
        let engine = engine.clone();
        async move { Ok(cx.start_task(&engine, &SUM, None, &input).await?.job.id) }
    };
    App::new("summer", "1.0.0")
        .tool(Tool::typed("sum", "Adds 1 to upto, as a task.", start))
        .job(&SUM, sum)
        .task_kind(SUM.name(), &[], &[])
}

#[tokio::test]
async fn a_task_is_created_polled_to_its_result_and_another_cancelled() {
    let server = TestServer::new(app);
    let created = server.call_tool_as_task("sum", json!({ "upto": 4 })).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working", "{created}");
    let id = created["taskId"].as_str().unwrap().to_string();

    let working = server.get_task(&id).await;
    assert_eq!(working["resultType"], "complete", "{working}");
    assert_eq!(working["status"], "working", "{working}");
    server.run_jobs().await;
    let done = server.get_task(&id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"], json!(10), "{done}");

    let other = server.call_tool_as_task("sum", json!({ "upto": 2 })).await;
    let other = other["taskId"].as_str().unwrap().to_string();
    let ack = server.cancel_task(&other).await;
    assert_eq!(ack["resultType"], "complete", "{ack}");
    server.run_jobs().await;
    assert_eq!(server.get_task(&other).await["status"], "cancelled");
}

#[tokio::test]
async fn a_client_without_the_extension_runs_the_tool_at_once_and_is_refused_tasks() {
    let server = TestServer::new(app);
    let plain = server.call_tool("sum", json!({ "upto": 3 })).await;
    assert_ne!(plain["resultType"], "task", "{plain}");
    let meta = json!({ "io.modelcontextprotocol/clientCapabilities": {} });
    let refused = server
        .rpc("tasks/get", json!({ "taskId": "any", "_meta": meta }))
        .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

#[tokio::test]
async fn a_callers_meta_is_merged_into_the_envelope_not_put_in_its_place() {
    let server = TestServer::new(app);
    // Only the progress token is the caller's: the version and capabilities still go.
    let params = json!({ "name": "sum", "arguments": { "upto": 1 },
        "_meta": { "progressToken": "p1" } });
    let reply = server.rpc("tools/call", params).await;
    assert!(reply.get("result").is_some(), "{reply}");
}
