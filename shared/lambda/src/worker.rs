//! The `worker` function: SQS batches of job messages, each run by the app's worker (its job
//! runners and its tools' tasks) under the job's lease.
//!
//! Invariant: a failure is the failed message's only. The batch answers `batchItemFailures`
//! naming just the messages that failed (a panic in one message fails that message only), so
//! SQS redelivers those and deletes the rest. This needs `ReportBatchItemFailures` on the event
//! source mapping, or failed messages are deleted with the batch.

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_http::{Error, LambdaEvent};
use relevo_protocol::AppBuilder;
use relevo_state::{TraceContext, Worker};
use tracing::Instrument;

use crate::env::worker_from_env;
use crate::{keys, otlp};

/// The `worker` function: an SQS batch in, `batchItemFailures` out (only the failed messages;
/// a panic in one message fails that message only). Needs `ReportBatchItemFailures` on the
/// event source mapping, or failed messages are deleted with the batch.
pub async fn run_worker(app: impl AppBuilder) -> Result<(), Error> {
    crate::logging::init_telemetry();
    let worker = match worker_from_env(&app).await {
        Ok(worker) => worker,
        Err(error) => return Err(crate::runtime::init_failed(error).await),
    };
    crate::serve::serve_events(move |event: LambdaEvent<SqsEvent>| {
        let worker = worker.clone();
        let span = tracing::info_span!("invocation", lambda_request_id = %event.context.request_id);
        async move {
            keys::refresh_if_due().await;
            let response = handle_sqs_batch(&worker, event.payload)
                .instrument(span)
                .await;
            otlp::flush().await;
            Ok::<_, Error>(response)
        }
    })
    .await
}

/// One SQS event: every record processed, the failed ones reported by message id.
/// Each message is processed in the trace its `AWSTraceHeader` attribute carries.
pub async fn handle_sqs_batch(worker: &Worker, event: SqsEvent) -> SqsBatchResponse {
    let batch = event
        .records
        .into_iter()
        .map(|m| {
            let trace = m
                .attributes
                .get("AWSTraceHeader")
                .and_then(|h| TraceContext::from_xray(h));
            (
                m.message_id.unwrap_or_default(),
                m.body.unwrap_or_default(),
                trace,
            )
        })
        .collect();
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = worker
        .process_traced_batch(batch)
        .await
        .into_iter()
        .map(|id| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failure
        })
        .collect();
    response
}
