//! The `worker` function: SQS batches of work messages → claim, run, checkpoint, complete, every
//! write fenced by the job's lease; returns `batchItemFailures` for failed messages only.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    relevo_lambda::run_worker(app::app).await
}
