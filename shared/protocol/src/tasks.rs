//! The Tasks extension (`io.modelcontextprotocol/tasks`): long tool calls as durable jobs.
//!
//! A task is a job of the durable-work engine, keyed by the caller's tenant and subject; its id
//! is the job id (128 random bits). `tools/call` returns a `CreateTaskResult` only after the job
//! is written, so an immediate `tasks/get` finds it. `tasks/get|update|cancel` read and write the
//! same job, with the principal from the token on every call: another principal's task id is
//! "unknown task". Only clients that declare the extension on the request see tasks.
//!
//! Status mapping: queued/running → `working`, parked for input → `input_required`, succeeded →
//! `completed` (a tool error is `completed` with `result.isError`), failed → `failed` (protocol
//! errors only, with `error`), cancelled → `cancelled`.
//!
//! A `working` task's `statusMessage` is the progress its job last reported
//! (`JobContext::progress`, bounded), and nothing when it reported none.
//!
//! A `failed` task's `statusMessage` is the `message` of the JSON-RPC error it carries in
//! `error`, nothing more: the worker stores only the error object a handler chose to answer
//! (never a Debug rendering of a cause), so the message exposes nothing the error does not.
//!
//! A task's result is held to the tool's `outputSchema` in the worker exactly as a direct call's
//! is (`registry::output`): a result that breaks it fails the task with `-32603`, and neither the
//! stored error nor the log line carries the result's content.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use relevo_state::work::BoxFuture;
use relevo_state::{Job, JobContext, JobFailure, JobRunner, JobStatus};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::author::Jobs;
use crate::error::McpError;
use crate::notify::Notifier;
use crate::registry::{App, Call, ClientContext, Outcome};
use crate::wire::JsonObject;

/// The Tasks extension's identifier, in capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The job kind of a tool call run as a task.
pub const TOOL_TASK_KIND: &str = "tool";
/// How often clients are told to poll.
pub const POLL_INTERVAL_MS: u64 = 500;

/// Whether a tool may, must, or must not run as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    #[default]
    /// Never as a task (the default): the call always runs synchronously.
    Forbidden,
    /// A task when the client declares the extension, else a synchronous call.
    Optional,
    /// Only as a task: a client without the extension gets `-32021`.
    Required,
}

impl ClientContext {
    /// True when this request declared the Tasks extension.
    pub fn declares_tasks(&self) -> bool {
        self.capabilities
            .get("extensions")
            .and_then(|e| e.get(EXTENSION))
            .is_some_and(Value::is_object)
    }
}

/// `-32021` naming the Tasks extension.
pub fn tasks_required() -> McpError {
    McpError::missing_capability(json!({ "extensions": { EXTENSION: {} } }))
}

/// `2026-11-29T14:24:33Z` for unix seconds.
pub fn iso8601(unix: u64) -> String {
    let (days, seconds) = (unix / 86_400, unix % 86_400);
    // Civil-from-days (Howard Hinnant), for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds / 3600,
        seconds % 3600 / 60,
        seconds % 60
    )
}

fn status(job: &Job) -> &'static str {
    match job.status {
        JobStatus::Queued | JobStatus::Running => "working",
        JobStatus::InputRequired => "input_required",
        JobStatus::Succeeded => "completed",
        JobStatus::Failed => "failed",
        JobStatus::Cancelled => "cancelled",
    }
}

/// The flat `Task` fields of a job.
pub fn task_fields(job: &Job) -> JsonObject {
    let mut task = JsonObject::new();
    task.insert("taskId".into(), json!(job.job.id));
    task.insert("status".into(), json!(status(job)));
    task.insert("createdAt".into(), json!(iso8601(job.created_at)));
    task.insert("lastUpdatedAt".into(), json!(iso8601(job.updated_at)));
    task.insert(
        "ttlMs".into(),
        json!(job.expires_at.saturating_sub(job.created_at) * 1000),
    );
    task.insert("pollIntervalMs".into(), json!(POLL_INTERVAL_MS));
    if matches!(job.status, JobStatus::Queued | JobStatus::Running)
        && let Some(message) = &job.progress
    {
        task.insert("statusMessage".into(), json!(message));
    }
    if job.status == JobStatus::Failed
        && let Some(message) = failure(job)["message"].as_str()
    {
        task.insert("statusMessage".into(), json!(message));
    }
    task
}

/// The JSON-RPC error a failed job carries: the one its runner stored, else `-32603` with the
/// job's failure reason.
fn failure(job: &Job) -> Value {
    job.protocol_error.clone().unwrap_or_else(|| {
        let message = job
            .error
            .clone()
            .unwrap_or_else(|| "the task failed".into());
        json!({ "code": -32603, "message": message })
    })
}

/// The `DetailedTask` of `tasks/get`: the task, plus what its status carries.
pub fn detailed_task(job: &Job) -> JsonObject {
    let mut task = task_fields(job);
    match job.status {
        JobStatus::InputRequired => {
            task.insert(
                "inputRequests".into(),
                job.pending_input.clone().unwrap_or_else(|| json!({})),
            );
        }
        JobStatus::Succeeded => {
            task.insert("result".into(), tool_result_of(job));
        }
        JobStatus::Failed => {
            task.insert("error".into(), failure(job));
        }
        _ => {}
    }
    task
}

/// The original tool result of a finished job: stored as is for tool-run tasks; for app jobs
/// (an export) the job's result as `structuredContent` with its JSON text.
fn tool_result_of(job: &Job) -> Value {
    let result = job.result.clone().unwrap_or(Value::Null);
    let mut tool_result = if result.get("content").is_some_and(Value::is_array) {
        result
    } else {
        json!({ "content": [{ "type": "text", "text": result.to_string() }], "structuredContent": result, "isError": false })
    };
    tool_result["resultType"] = json!("complete");
    tool_result
}

/// Runs a tool call as a task, in a worker ([`App::worker`] registers it).
pub struct ToolTaskRunner {
    app: Arc<App>,
    jobs: Jobs,
}

impl ToolTaskRunner {
    /// A runner calling the tools of `app`, which reach `jobs` as they do in a direct call.
    pub fn new(app: Arc<App>, jobs: Jobs) -> Self {
        ToolTaskRunner { app, jobs }
    }
}

/// What a tool-run task stores as its job input.
pub fn tool_task_input(name: &str, call: &Call) -> Value {
    json!({
        "tool": name,
        "arguments": call.arguments,
        "inputResponses": call.input_responses,
        "capabilities": call.client.capabilities,
        "protocolVersion": call.client.protocol_version,
    })
}

impl JobRunner for ToolTaskRunner {
    fn run<'a>(&'a self, ctx: &'a JobContext) -> BoxFuture<'a, Result<Value, JobFailure>> {
        Box::pin(async move {
            let job = ctx.job();
            let app = &self.app;
            let name = job.input["tool"].as_str().unwrap_or_default();
            let tool = app.find_tool(name).ok_or_else(|| {
                JobFailure::Protocol(
                    json!({ "code": -32602, "message": format!("Unknown tool: {name}") }),
                )
            })?;
            let object = |value: &Value| value.as_object().cloned().unwrap_or_default();
            let mut input_responses = object(&job.input["inputResponses"]);
            input_responses.extend(job.input_responses.as_ref().map(object).unwrap_or_default());
            let call = Call {
                arguments: object(&job.input["arguments"]),
                uri: None,
                input_responses,
                state: job.resume_state.clone(),
                client: ClientContext {
                    protocol_version: job.input["protocolVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .into(),
                    capabilities: object(&job.input["capabilities"]),
                    info: None,
                },
                principal: Principal::new(&job.job.tenant, &job.job.subject, Vec::<String>::new()),
                notifier: Notifier::silent(),
                answers: None,
                jobs: Some(self.jobs.clone()),
            };
            let run = AssertUnwindSafe((tool.handler)(call)).catch_unwind();
            let outcome = tokio::select! {
                outcome = run => outcome,
                () = watch_for_cancel(ctx) => return Err(JobFailure::Cancelled),
            };
            match outcome {
                Ok(Ok(Outcome::Complete(mut result))) => {
                    // Held to the tool's outputSchema as a direct call is: a result that breaks
                    // it fails the task (-32603), logged with the tool's name, never its content.
                    if let Some(schema) = tool.output.get() {
                        tool.output_check
                            .check(&tool.name, schema, &result)
                            .map_err(|error| JobFailure::Protocol(error.to_error_object()))?;
                    }
                    result.insert("resultType".into(), json!("complete"));
                    Ok(Value::Object(result))
                }
                Ok(Ok(Outcome::InputRequired { requests, state })) => Err(JobFailure::NeedsInput {
                    requests: Value::Object(
                        requests
                            .iter()
                            .map(|(k, r)| (k.clone(), r.to_wire()))
                            .collect(),
                    ),
                    state,
                }),
                Ok(Ok(Outcome::TaskCreated(_))) => Err(JobFailure::Protocol(
                    json!({ "code": -32603, "message": "a task cannot start a task" }),
                )),
                Ok(Err(error)) => Err(JobFailure::Protocol(error.to_error_object())),
                Err(_) => Err(JobFailure::Protocol(
                    json!({ "code": -32603, "message": "Internal error: the tool failed" }),
                )),
            }
        })
    }
}

/// Resolves once the job's cancel request is seen (polled from the store).
async fn watch_for_cancel(ctx: &JobContext) {
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if ctx.refresh().await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_formats_utc_seconds() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(1_764_426_273), "2025-11-29T14:24:33Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
    }
}
