//! Customer-data export: a real long job. The request that starts it, the worker that runs it and
//! the request that reads the result may be three processes; any of them may die.
//!
//! The source is a seed-shaped dataset (rows derived deterministically from tenant and dataset),
//! read in windows; after each window the cursor and the rows so far are checkpointed under the
//! worker's lease, so a worker killed mid-way resumes from the last checkpoint. The result is a
//! private resource `exports://{jobId}` readable only by its owner.

use std::sync::Arc;
use std::time::Duration;

use relevo_protocol::author::{JobContext, JobError, JobKind, Required, ToolContext, ToolError};
use relevo_protocol::wire::{ResourceContents, ToolAnnotations};
use relevo_protocol::{McpError, ResourceTemplate, Tool};
use relevo_state::{Engine, Job, JobRef, JobStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The export job: its input names the dataset and the purpose.
pub const KIND: JobKind<ExportInput, ExportResult> = JobKind::new("export");
/// Rows in every seed dataset, and rows read per window.
pub const ROWS: u64 = 240;
pub const WINDOW: u64 = 30;
const MAX_PURPOSE_CHARS: usize = 200;

fn row(tenant: &str, dataset: &str, index: u64) -> String {
    let digest = Sha256::digest(format!("{tenant}/{dataset}/{index}").as_bytes());
    let code: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    match dataset {
        "orders" => format!(
            "{index},order-{code},{}.{:02}",
            digest[4] as u64 * 3,
            digest[5] % 100
        ),
        _ => format!(
            "{index},customer-{code},{code}@example.com,{}",
            ["DE", "FR", "US", "JP"][digest[6] as usize % 4]
        ),
    }
}

fn header(dataset: &str) -> &'static str {
    match dataset {
        "orders" => "id,order,total",
        _ => "id,name,email,country",
    }
}

/// The checkpoint saved after each window: the rows read so far.
#[derive(Default, Serialize, Deserialize)]
struct Progress {
    cursor: u64,
    rows: Vec<String>,
}

/// Runs one export job: reads the dataset window by window, checkpointing after each, and
/// resumes from the last checkpoint after a crash. `window_delay` stands in for the source's
/// latency per window.
pub async fn run(
    window_delay: Duration,
    input: ExportInput,
    cx: JobContext,
) -> Result<ExportResult, JobError> {
    let tenant = cx.job().job.tenant;
    let dataset = input.dataset.as_str();
    let Progress {
        mut cursor,
        mut rows,
    } = cx.checkpoint_as().unwrap_or_default();
    while cursor < ROWS {
        if cx.cancel_requested() {
            return Err(JobError::Cancelled);
        }
        tokio::time::sleep(window_delay).await;
        let end = (cursor + WINDOW).min(ROWS);
        rows.extend((cursor..end).map(|i| row(&tenant, dataset, i)));
        cursor = end;
        let progress = format!("read {cursor} of {ROWS} rows");
        cx.save_progress(
            &Progress {
                cursor,
                rows: rows.clone(),
            },
            progress,
        )
        .await?;
    }
    let csv = std::iter::once(header(dataset).to_string())
        .chain(rows.iter().cloned())
        .collect::<Vec<_>>()
        .join("\n");
    Ok(ExportResult {
        dataset: dataset.to_string(),
        purpose: input.purpose,
        rows: rows.len() as u64,
        sha256: relevo_state::sha256_hex(csv.as_bytes()),
        csv,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Dataset {
    Customers,
    Orders,
}

impl Dataset {
    pub fn as_str(self) -> &'static str {
        match self {
            Dataset::Customers => "customers",
            Dataset::Orders => "orders",
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartArgs {
    dataset: Dataset,
    #[schemars(length(min = 1, max = MAX_PURPOSE_CHARS))]
    purpose: String,
    /// Idempotency key: the same key and arguments give the same job
    #[serde(default)]
    #[schemars(length(min = 1, max = 128))]
    operation_key: Option<String>,
}

/// What an export job is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportInput {
    pub dataset: Dataset,
    pub purpose: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JobArgs {
    #[schemars(length(min = 1, max = 64))]
    job_id: String,
}

fn job_ref(cx: &ToolContext, id: &str) -> JobRef {
    let principal = cx.principal();
    JobRef {
        tenant: principal.tenant.clone(),
        subject: principal.subject.clone(),
        id: id.to_string(),
    }
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
    #[serde(rename = "input_required")]
    InputRequired,
}

/// The status view shared by `export_status`, `export_start` and the tasks extension.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct StatusView {
    job_id: String,
    status: Status,
    rows_exported: u64,
    rows_total: u64,
    resource_uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl StatusView {
    fn of(job: &Job) -> Self {
        let done = job
            .checkpoint
            .as_ref()
            .and_then(|c| c["cursor"].as_u64())
            .unwrap_or(0);
        let status = match job.status {
            JobStatus::Queued => Status::Queued,
            JobStatus::Running => Status::Running,
            JobStatus::Succeeded => Status::Succeeded,
            JobStatus::Failed => Status::Failed,
            JobStatus::Cancelled => Status::Cancelled,
            JobStatus::InputRequired => Status::InputRequired,
        };
        StatusView {
            job_id: job.job.id.clone(),
            status,
            rows_exported: if job.status == JobStatus::Succeeded {
                ROWS
            } else {
                done
            },
            rows_total: ROWS,
            resource_uri: format!("exports://{}", job.job.id),
            error: job
                .error
                .clone()
                .filter(|_| job.status == JobStatus::Failed),
        }
    }
}

/// A finished export: the job's output, and `export_result`'s.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ExportResult {
    pub dataset: String,
    pub purpose: String,
    pub rows: u64,
    pub sha256: String,
    pub csv: String,
}

/// The caller's export `id`, or `None` (absent, another principal's, or another kind of job).
async fn find_export(
    engine: &Engine,
    cx: &ToolContext,
    id: &str,
) -> Result<Option<Job>, ToolError> {
    Ok(engine
        .store
        .get_job(&job_ref(cx, id))
        .await?
        .filter(|job| job.kind == KIND.name()))
}

pub fn export_start() -> Tool {
    Tool::typed(
        "export_start",
        "Starts exporting a dataset (customers or orders) for a stated purpose; returns a job id to poll with export_status. Repeating a call with the same operationKey returns the same job. Finished exports are kept 7 days.",
        |args: StartArgs, cx: ToolContext| {
            async move {
                if args.purpose.trim().is_empty() {
                    return Err(ToolError::caller(format!("purpose must be 1 to {MAX_PURPOSE_CHARS} characters")));
                }
                let input = ExportInput { dataset: args.dataset, purpose: args.purpose };
                // A client that declared the Tasks extension follows the same job as a task.
                let job = cx.start_task(&KIND, args.operation_key.as_deref(), &input).await?;
                Ok(StatusView::of(&job))
            }
        },
    )
    .title("Start an export")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false))
    .scopes(&["exports:write"])
}

pub fn export_status(engine: Arc<Engine>) -> Tool {
    Tool::typed(
        "export_status",
        "Reports an export's status and progress.",
        move |args: JobArgs, cx: ToolContext| {
            let engine = engine.clone();
            async move {
                let job = find_export(&engine, &cx, &args.job_id).await?;
                Ok(StatusView::of(
                    &job.or_caller(format!("No export with id {}", args.job_id))?,
                ))
            }
        },
    )
    .title("Export status")
    .annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
    .scopes(&["exports:read"])
}

pub fn export_result(engine: Arc<Engine>) -> Tool {
    Tool::typed(
        "export_result",
        "Returns a finished export: row count, SHA-256 and the CSV (also readable as the resource exports://{jobId}).",
        move |args: JobArgs, cx: ToolContext| {
            let engine = engine.clone();
            async move {
                let job = find_export(&engine, &cx, &args.job_id).await?;
                let job = job.or_caller(format!("No export with id {}", args.job_id))?;
                match (&job.status, &job.result) {
                    (JobStatus::Succeeded, Some(result)) => {
                        serde_json::from_value::<ExportResult>(result.clone()).map_err(ToolError::internal)
                    }
                    _ => Err(ToolError::caller(format!(
                        "Export {} is {}, not finished",
                        job.job.id,
                        job.status.as_str()
                    ))),
                }
            }
        },
    )
    .title("Export result")
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .scopes(&["exports:read"])
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExportUri {
    job_id: String,
}

/// `exports://{jobId}`: the CSV of a finished export, for its owner only.
pub fn export_resource(engine: Arc<Engine>) -> ResourceTemplate {
    ResourceTemplate::typed(
        "exports://{jobId}",
        "export",
        "text/csv",
        move |uri: ExportUri, cx: ToolContext| {
            let engine = engine.clone();
            async move {
                let address = cx.call().uri.clone().unwrap_or_default();
                let job = find_export(&engine, &cx, &uri.job_id).await?;
                let job = job.ok_or_else(|| McpError::resource_not_found(&address))?;
                match (
                    &job.status,
                    job.result.as_ref().and_then(|r| r["csv"].as_str()),
                ) {
                    (JobStatus::Succeeded, Some(csv)) => {
                        Ok(vec![ResourceContents::TextResourceContents {
                            uri: address,
                            mime_type: Some("text/csv".into()),
                            text: csv.to_string(),
                            meta: None,
                        }])
                    }
                    _ => Err(McpError::invalid_params_with(
                        "Export not finished",
                        json!({ "uri": address, "status": job.status.as_str() }),
                    )
                    .into()),
                }
            }
        },
    )
    .description("A finished export's CSV")
    .private()
    .scopes(&["exports:read"])
}
