//! A durable job, started by a tool and followed as a task:
//!
//! ```text
//! cargo run -p relevo --example job -- --port 8080
//! ```
//!
//! `tally` starts a `TALLY` job and returns at once; a client that declared the Tasks extension
//! (`io.modelcontextprotocol/tasks`) gets a task and polls `tasks/get`: `working` (the job's
//! progress as `statusMessage`), then `completed` with the job's output. The job is stored before
//! the tool answers and run by the worker (the embedded queue here, SQS on Lambda), resuming from
//! its last checkpoint if a worker dies. Jobs need a store: `RELEVO_STORE=none` leaves it out.

use std::time::Duration;

use relevo::prelude::*;

/// The job's input; the same constant registers the runner and starts jobs.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde", deny_unknown_fields)]
struct Tally {
    /// Adds 1 + 2 + … + upto, one number a step
    #[schemars(range(min = 1, max = 20))]
    upto: u64,
}

const TALLY: JobKind<Tally> = JobKind::new("tally");

/// Saved after every step: where a new run resumes; `statusMessage` is the task's progress.
#[derive(Default, Serialize, Deserialize)]
#[serde(crate = "relevo::serde", rename_all = "camelCase")]
struct Progress {
    added: u64,
    sum: u64,
    status_message: String,
}

#[derive(Serialize)]
#[serde(crate = "relevo::serde")]
struct Total {
    sum: u64,
}

async fn tally(input: Tally, cx: JobContext) -> Result<Total, JobError> {
    let mut progress: Progress = cx.checkpoint_as().unwrap_or_default();
    while progress.added < input.upto {
        if cx.cancel_requested() {
            return Err(JobError::Cancelled);
        }
        relevo::tokio::time::sleep(Duration::from_millis(100)).await; // the slow part
        progress.added += 1;
        progress.sum += progress.added;
        progress.status_message = format!("added {} of {}", progress.added, input.upto);
        cx.save_checkpoint_as(&progress).await?;
    }
    Ok(Total { sum: progress.sum })
}

fn app(ports: &Ports) -> App {
    let app = App::new("job", "1.0.0");
    let Some(engine) = ports.jobs.clone() else {
        return app;
    };
    // A Tasks client gets the task (`?` answers with it); any other gets the job's id as text.
    let start = move |input: Tally, cx: ToolContext| {
        let engine = engine.clone();
        async move { Ok(cx.start_task(&engine, &TALLY, None, &input).await?.job.id) }
    };
    app.tool(Tool::typed(
        "tally",
        "Adds 1 to upto, slowly, as a task.",
        start,
    ))
    .job(&TALLY, tally)
    // Its jobs are tasks: each caller may read (tasks/get) and cancel their own.
    .task_kind(TALLY.name(), &[], &[])
}

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo::local::run(app).await
}
