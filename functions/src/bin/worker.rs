//! The `worker` function: the worker: an SQS batch of job messages in, the failed ones out.

#[global_allocator]
static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), relevo::lambda::Error> {
    relevo::lambda::run_worker(app::app).await
}
