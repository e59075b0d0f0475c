//! The `reconciler` function: the scheduled reconciler: re-enqueues jobs left queued past their deadline and requeues expired leases.

#[global_allocator]
static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), relevo::lambda::Error> {
    relevo::lambda::run_reconciler(app::app).await
}
