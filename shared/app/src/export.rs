//! Customer-data export: a real long job. The request that starts it, the worker that runs it and
//! the request that reads the result may be three processes; any of them may die.
//!
//! The source is a seed-shaped dataset (rows derived deterministically from tenant and dataset),
//! read in windows; after each window the cursor and the rows so far are checkpointed under the
//! worker's lease, so a worker killed mid-way resumes from the last checkpoint. The result is a
//! private resource `exports://{jobId}` readable only by its owner.

use std::sync::Arc;
use std::time::Duration;

use relevo_protocol::wire::{CallToolResult, ResourceContents, ToolAnnotations};
use relevo_protocol::{Call, McpError, Outcome, ResourceTemplate, Tool, handler};
use relevo_state::work::BoxFuture;
use relevo_state::{Engine, Job, JobContext, JobFailure, JobRef, JobRunner, JobStatus, StartError, StoreError};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub const KIND: &str = "export";
pub const DATASETS: &[&str] = &["customers", "orders"];
/// Rows in every seed dataset, and rows read per window.
pub const ROWS: u64 = 240;
pub const WINDOW: u64 = 30;
const MAX_PURPOSE_CHARS: usize = 200;

/// The export runner. `window_delay` stands in for the source's latency per window.
pub struct ExportRunner {
    pub window_delay: Duration,
}

fn row(tenant: &str, dataset: &str, index: u64) -> String {
    let digest = Sha256::digest(format!("{tenant}/{dataset}/{index}").as_bytes());
    let code: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    match dataset {
        "orders" => format!("{index},order-{code},{}.{:02}", digest[4] as u64 * 3, digest[5] % 100),
        _ => format!("{index},customer-{code},{code}@example.com,{}", ["DE", "FR", "US", "JP"][digest[6] as usize % 4]),
    }
}

fn header(dataset: &str) -> &'static str {
    match dataset {
        "orders" => "id,order,total",
        _ => "id,name,email,country",
    }
}

impl JobRunner for ExportRunner {
    fn run<'a>(&'a self, ctx: &'a JobContext) -> BoxFuture<'a, Result<Value, JobFailure>> {
        Box::pin(async move {
            let job = ctx.job();
            let dataset = job.input["dataset"].as_str().unwrap_or_default().to_string();
            if !DATASETS.contains(&dataset.as_str()) {
                return Err(JobFailure::Failed(format!("unknown dataset {dataset:?}")));
            }
            let checkpoint = ctx.checkpoint().unwrap_or_else(|| json!({ "cursor": 0, "rows": [] }));
            let mut cursor = checkpoint["cursor"].as_u64().unwrap_or(0);
            let mut rows: Vec<Value> = checkpoint["rows"].as_array().cloned().unwrap_or_default();
            while cursor < ROWS {
                if ctx.cancel_requested() {
                    return Err(JobFailure::Cancelled);
                }
                tokio::time::sleep(self.window_delay).await;
                let end = (cursor + WINDOW).min(ROWS);
                rows.extend((cursor..end).map(|i| json!(row(&job.job.tenant, &dataset, i))));
                cursor = end;
                ctx.save_checkpoint(json!({ "cursor": cursor, "rows": rows })).await?;
            }
            let csv = std::iter::once(header(&dataset).to_string())
                .chain(rows.iter().filter_map(|r| r.as_str().map(String::from)))
                .collect::<Vec<_>>()
                .join("\n");
            let sha256 = relevo_state::sha256_hex(csv.as_bytes());
            Ok(json!({
                "dataset": dataset,
                "purpose": job.input["purpose"],
                "rows": rows.len(),
                "sha256": sha256,
                "csv": csv,
            }))
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartArgs {
    dataset: String,
    purpose: String,
    #[serde(default)]
    operation_key: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobArgs {
    job_id: String,
}

fn job_ref(call: &Call, id: &str) -> JobRef {
    JobRef { tenant: call.principal.tenant.clone(), subject: call.principal.subject.clone(), id: id.to_string() }
}

/// The status view shared by `export_status`, `export_start` and the tasks extension.
pub fn status_view(job: &Job) -> Value {
    let done = job.checkpoint.as_ref().and_then(|c| c["cursor"].as_u64()).unwrap_or(0);
    let mut view = json!({
        "jobId": job.job.id,
        "status": job.status.as_str(),
        "rowsExported": if job.status == JobStatus::Succeeded { ROWS } else { done },
        "rowsTotal": ROWS,
        "resourceUri": format!("exports://{}", job.job.id),
    });
    if let Some(error) = &job.error
        && job.status == JobStatus::Failed
    {
        view["error"] = json!(error);
    }
    view
}

/// The caller's export `id`, or `None` (absent, another principal's, or another kind of job).
async fn find_export(engine: &Engine, call: &Call, id: &str) -> Result<Option<Job>, McpError> {
    Ok(engine.store.get_job(&job_ref(call, id)).await.map_err(store_failure)?.filter(|job| job.kind == KIND))
}

fn store_failure(error: StoreError) -> McpError {
    relevo_protocol::store_failure("export")(error)
}

fn job_id_schema() -> Value {
    json!({ "type": "object", "properties": { "jobId": { "type": "string", "minLength": 1, "maxLength": 64 } }, "required": ["jobId"], "additionalProperties": false })
}

fn status_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "jobId": { "type": "string" },
            "status": { "type": "string", "enum": ["queued", "running", "succeeded", "failed", "cancelled"] },
            "rowsExported": { "type": "integer" },
            "rowsTotal": { "type": "integer" },
            "resourceUri": { "type": "string" },
            "error": { "type": "string" }
        },
        "required": ["jobId", "status", "rowsExported", "rowsTotal", "resourceUri"]
    })
}

/// Validates the start arguments; `Err` is a tool error the model can read.
pub fn start_input(arguments: &serde_json::Map<String, Value>) -> Result<(Value, Option<String>), Outcome> {
    let args: StartArgs = serde_json::from_value(Value::Object(arguments.clone()))
        .map_err(|e| Outcome::tool_error(format!("Invalid arguments: {e}")))?;
    if !DATASETS.contains(&args.dataset.as_str()) {
        return Err(Outcome::tool_error(format!("dataset must be one of {DATASETS:?}")));
    }
    if args.purpose.trim().is_empty() || args.purpose.chars().count() > MAX_PURPOSE_CHARS {
        return Err(Outcome::tool_error(format!("purpose must be 1 to {MAX_PURPOSE_CHARS} characters")));
    }
    Ok((json!({ "dataset": args.dataset, "purpose": args.purpose }), args.operation_key))
}

/// Starts (or finds, for a repeated operation key) the export job of `call`'s principal.
pub async fn start(engine: &Engine, call: &Call) -> Result<Result<Job, Outcome>, McpError> {
    let (input, key) = match start_input(&call.arguments) {
        Ok(parsed) => parsed,
        Err(tool_error) => return Ok(Err(tool_error)),
    };
    match engine.start(&call.principal.tenant, &call.principal.subject, KIND, key.as_deref(), input).await {
        Ok(job) => Ok(Ok(job)),
        Err(error @ StartError::KeyConflict { .. }) => Ok(Err(Outcome::tool_error(error.to_string()))),
        Err(StartError::Store(error)) => Err(store_failure(error)),
        Err(StartError::LimitReached { what, max }) => Err(McpError::LimitReached { what, max }),
        Err(error @ StartError::UnknownKind(_)) => {
            tracing::error!(%error, "the export runner is not registered");
            Err(McpError::Internal)
        }
    }
}

pub fn export_start(engine: Arc<Engine>) -> Tool {
    Tool::new(
        "export_start",
        "Starts exporting a dataset (customers or orders) for a stated purpose; returns a job id to poll with export_status. Repeating a call with the same operationKey returns the same job. Finished exports are kept 7 days.",
        json!({
            "type": "object",
            "properties": {
                "dataset": { "type": "string", "enum": DATASETS },
                "purpose": { "type": "string", "minLength": 1, "maxLength": MAX_PURPOSE_CHARS },
                "operationKey": { "type": "string", "minLength": 1, "maxLength": 128, "description": "Idempotency key: the same key and arguments give the same job" }
            },
            "required": ["dataset", "purpose"],
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let engine = engine.clone();
            async move {
                Ok(match start(&engine, &call).await? {
                    // A client that declared the Tasks extension follows the same job as a task.
                    Ok(job) if call.client.declares_tasks() => Outcome::TaskCreated(Box::new(job)),
                    Ok(job) => Outcome::tool(CallToolResult::structured(status_view(&job))),
                    Err(tool_error) => tool_error,
                })
            }
        }),
    )
    .title("Start an export")
    .output_schema(status_schema())
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false))
    .scopes(&["exports:write"])
}

pub fn export_status(engine: Arc<Engine>) -> Tool {
    Tool::new(
        "export_status",
        "Reports an export's status and progress.",
        job_id_schema(),
        handler(move |call: Call| {
            let engine = engine.clone();
            async move {
                let args: JobArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                Ok(match find_export(&engine, &call, &args.job_id).await? {
                    Some(job) => Outcome::tool(CallToolResult::structured(status_view(&job))),
                    None => Outcome::tool_error(format!("No export with id {}", args.job_id)),
                })
            }
        }),
    )
    .title("Export status")
    .output_schema(status_schema())
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .scopes(&["exports:read"])
}

pub fn export_result(engine: Arc<Engine>) -> Tool {
    Tool::new(
        "export_result",
        "Returns a finished export: row count, SHA-256 and the CSV (also readable as the resource exports://{jobId}).",
        job_id_schema(),
        handler(move |call: Call| {
            let engine = engine.clone();
            async move {
                let args: JobArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                Ok(match find_export(&engine, &call, &args.job_id).await? {
                    Some(job) => match (&job.status, &job.result) {
                        (JobStatus::Succeeded, Some(result)) => {
                            Outcome::tool(CallToolResult::structured(result.clone()))
                        }
                        _ => Outcome::tool_error(format!(
                            "Export {} is {}, not finished",
                            job.job.id,
                            job.status.as_str()
                        )),
                    },
                    None => Outcome::tool_error(format!("No export with id {}", args.job_id)),
                })
            }
        }),
    )
    .title("Export result")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "dataset": { "type": "string" }, "purpose": { "type": "string" }, "rows": { "type": "integer" },
            "sha256": { "type": "string" }, "csv": { "type": "string" }
        },
        "required": ["dataset", "purpose", "rows", "sha256", "csv"]
    }))
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .scopes(&["exports:read"])
}

/// `exports://{jobId}`: the CSV of a finished export, for its owner only.
pub fn export_resource(engine: Arc<Engine>) -> ResourceTemplate {
    ResourceTemplate::new(
        "exports://{jobId}",
        "export",
        "text/csv",
        handler(move |call: Call| {
            let engine = engine.clone();
            async move {
                let uri = call.uri.clone().unwrap_or_default();
                let id = call.arguments.get("jobId").and_then(Value::as_str).unwrap_or_default().to_string();
                match find_export(&engine, &call, &id).await? {
                    Some(job) => match (&job.status, job.result.as_ref().and_then(|r| r["csv"].as_str())) {
                        (JobStatus::Succeeded, Some(csv)) => {
                            Ok(Outcome::contents(vec![ResourceContents::TextResourceContents {
                                uri,
                                mime_type: Some("text/csv".into()),
                                text: csv.to_string(),
                                meta: None,
                            }]))
                        }
                        _ => Err(McpError::invalid_params_with(
                            "Export not finished",
                            json!({ "uri": uri, "status": job.status.as_str() }),
                        )),
                    },
                    None => Err(McpError::resource_not_found(uri)),
                }
            }
        }),
    )
    .description("A finished export's CSV")
    .private()
    .scopes(&["exports:read"])
}
