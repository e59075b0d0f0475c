//! The `reconciler` function (scheduled): re-enqueues jobs left queued past their deadline,
//! requeues jobs whose lease expired, fails jobs past their attempt budget with a reason.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    relevo_lambda::run_reconciler(app::app).await
}
