//! A durable job, started by a tool and followed as a task:
//!
//! ```text
//! cargo run -p relevo --example job -- --port 8080
//! ```
//!
//! `tally` starts a `TALLY` job and returns at once; a client that declared the Tasks extension
//! (`io.modelcontextprotocol/tasks`) gets a task and polls `tasks/get`: `working` (the progress
//! the job reports with `save_progress`, as `statusMessage`), then `completed` with the job's
//! output. The job is stored before the tool answers and run by the worker (the embedded queue
//! here, SQS on Lambda), resuming from its last checkpoint if a worker dies. Jobs need a store:
//! with `RELEVO_STORE=none` the tool answers `-32603` and logs why.

use std::time::Duration;

use relevo::prelude::*;

/// The job's input; the same constant registers the runner, starts jobs and reads them back.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde", deny_unknown_fields)]
struct Tally {
    /// Adds 1 + 2 + … + upto, one number a step
    #[schemars(range(min = 1, max = 20))]
    upto: u64,
}

/// The job's output: what `tasks/get` answers once it completes.
#[derive(Serialize, Deserialize)]
#[serde(crate = "relevo::serde")]
struct Total {
    sum: u64,
}

const TALLY: JobKind<Tally, Total> = JobKind::new("tally");

/// Saved after every step: where a new run resumes.
#[derive(Default, Serialize, Deserialize)]
#[serde(crate = "relevo::serde")]
struct Done {
    added: u64,
    sum: u64,
}

async fn tally(input: Tally, cx: JobContext) -> Result<Total, JobError> {
    let mut done: Done = cx.checkpoint_as().unwrap_or_default();
    while done.added < input.upto {
        if cx.cancel_requested() {
            return Err(JobError::Cancelled);
        }
        relevo::tokio::time::sleep(Duration::from_millis(100)).await; // the slow part
        done.added += 1;
        done.sum += done.added;
        // One write: where to resume, and the task's statusMessage.
        let progress = format!("added {} of {}", done.added, input.upto);
        cx.save_progress(&done, progress).await?;
    }
    Ok(Total { sum: done.sum })
}

/// Starts a `TALLY` job as a task: a Tasks client gets the task (`?` answers with it), any other
/// gets the job's id as text. Starting it as a task is all the registration it needs.
async fn start(input: Tally, cx: ToolContext) -> Result<String, ToolError> {
    Ok(cx.start_task(&TALLY, None, &input).await?.job.id)
}

fn app(_: &Ports) -> App {
    App::new("job", "1.0.0")
        .tool(Tool::typed(
            "tally",
            "Adds 1 to upto, slowly, as a task.",
            start,
        ))
        .job(&TALLY, tally)
}

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo::local::run(app).await
}
