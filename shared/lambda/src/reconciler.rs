//! The `reconciler` function (scheduled): one pass over the jobs of the app
//! ([`relevo_state::Engine::reconcile`]: jobs left queued past the deadline re-enqueued by id,
//! jobs whose lease expired requeued or, past their attempts, failed, cancelled queued jobs
//! finished); its report goes to the log and to EMF metrics.
//!
//! Invariant: it runs no job itself. It is built like the worker so that both fail to start on
//! the same missing configuration.

use lambda_http::{Error, LambdaEvent};
use relevo_protocol::AppBuilder;
use relevo_state::emf::{Metrics, Unit};

use crate::env::worker_from_env;

/// The `reconciler` function (scheduled): one reconcile pass over the jobs of `app`; returns
/// its report. It re-enqueues by job id and runs nothing itself, but it is built like the worker
/// so that both fail to start on the same missing configuration.
pub async fn run_reconciler(app: impl AppBuilder) -> Result<(), Error> {
    crate::logging::init_telemetry();
    let worker = match worker_from_env(&app).await {
        Ok(worker) => worker,
        Err(error) => return Err(crate::runtime::init_failed(error).await),
    };
    crate::serve::serve_events(move |_: LambdaEvent<serde_json::Value>| {
        let worker = worker.clone();
        async move {
            let report = worker.reconcile(500).await?;
            tracing::info!(?report, "reconciled");
            Metrics::new()
                .by(&[])
                .metric("ReconcileRequeued", report.requeued as f64, Unit::Count)
                .metric("ReconcileFailed", report.failed as f64, Unit::Count)
                .metric("ReconcileCancelled", report.cancelled as f64, Unit::Count)
                .emit();
            Ok::<_, Error>(serde_json::json!({
                "requeued": report.requeued, "failed": report.failed, "cancelled": report.cancelled, "skipped": report.skipped
            }))
        }
    })
    .await
}
