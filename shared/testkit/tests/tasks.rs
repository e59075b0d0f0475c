//! The Tasks extension through `TestServer`, as a client that declared it meets it: a tool that
//! runs as a task answers a flat `CreateTaskResult`, `tasks/get` follows it to its result,
//! `tasks/cancel` ends one, and a client without the extension is refused `tasks/*`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use relevo_protocol::author::{JobContext, JobError, JobKind, ToolContext, ToolError};
use relevo_protocol::{App, Ports, Tool};
use relevo_testkit::TestServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Sum {
    upto: u64,
}

const SUM: JobKind<Sum, u64> = JobKind::new("sum");

/// Adds one number a run: each run reports its progress, and all but the last ask to run again.
async fn sum(input: Sum, cx: JobContext) -> Result<u64, JobError> {
    if cx.cancel_requested() {
        return Err(JobError::Cancelled);
    }
    let (added, total) = cx.checkpoint_as::<(u64, u64)>().unwrap_or((0, 0));
    let (added, total) = (added + 1, total + added + 1);
    if added < input.upto {
        cx.save_progress(&(added, total), format!("added {added} of {}", input.upto))
            .await?;
        return Err(JobError::retry("one number a run"));
    }
    Ok(total)
}

/// Starts `SUM` as a task: a plain `async fn`, the engine reached through the context, and no
/// `task_kind` declaration (starting it as a task is the registration).
async fn start(input: Sum, cx: ToolContext) -> Result<String, ToolError> {
    Ok(cx.start_task(&SUM, None, &input).await?.job.id)
}

/// A kind the app registers no runner for.
const ORPHAN: JobKind<Sum, u64> = JobKind::new("orphan");

async fn start_orphan(input: Sum, cx: ToolContext) -> Result<String, ToolError> {
    Ok(cx.start_task(&ORPHAN, None, &input).await?.job.id)
}

fn app(_: &Ports) -> App {
    App::new("summer", "1.0.0")
        .tool(Tool::typed("sum", "Adds 1 to upto, as a task.", start))
        .tool(Tool::typed(
            "orphan",
            "Starts a job nobody runs.",
            start_orphan,
        ))
        .job(&SUM, sum)
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
    assert_eq!(
        working.get("statusMessage"),
        None,
        "no progress yet: {working}"
    );
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

#[tokio::test]
async fn a_working_task_says_the_progress_its_job_reported() {
    let server = TestServer::new(app);
    let created = server.call_tool_as_task("sum", json!({ "upto": 3 })).await;
    let id = created["taskId"].as_str().unwrap().to_string();
    // One run: the job adds one number, reports it and asks to run again.
    assert_eq!(server.run_jobs_once().await, 1);
    let working = server.get_task(&id).await;
    assert_eq!(working["status"], "working", "{working}");
    assert_eq!(working["statusMessage"], "added 1 of 3", "{working}");
    server.run_jobs().await;
    let done = server.get_task(&id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done.get("statusMessage"),
        None,
        "progress is a working task's: {done}"
    );
}

#[tokio::test]
async fn starting_a_kind_the_app_runs_no_function_for_is_refused_and_writes_nothing() {
    let server = TestServer::new(app);
    let refused = server
        .call_tool_as_task("orphan", json!({ "upto": 1 }))
        .await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(
        server
            .engine()
            .store
            .list_active(10)
            .await
            .unwrap()
            .is_empty(),
        "no job was written"
    );
}
