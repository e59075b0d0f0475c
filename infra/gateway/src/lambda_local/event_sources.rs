//! The SQS event source mapping and the EventBridge schedule, as the template declares them.

use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::{Value, json};

use super::runtime::Function;

/// One SQS event source mapping: the queue, the function, its batch size. It polls with the
/// function's execution role (through the IAM proxy), as Lambda's poller does.
pub struct SqsMapping {
    pub client: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub queue_arn: String,
    pub function: Function,
    pub batch_size: i32,
    /// The function's timeout: how long an invocation may take.
    pub timeout: Duration,
    pub report_batch_item_failures: bool,
}

/// Receive up to the batch size, invoke the function with an SQS event, delete what did not fail
/// (`batchItemFailures`, when the mapping reports them); failed messages reappear after the
/// queue's own visibility timeout (the template's, as the queue was created from it). A failed invocation (crash, timeout) leaves the whole batch to reappear.
pub async fn sqs_event_source(mapping: SqsMapping) {
    // Lambda reads the queue's attributes when it sets the mapping up (the execution role needs
    // sqs:GetQueueAttributes for it).
    if let Err(error) = mapping
        .client
        .get_queue_attributes()
        .queue_url(&mapping.queue_url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
    {
        tracing::error!(error = %error.into_service_error(), "the event source mapping cannot read its queue; it does not poll");
        return;
    }
    loop {
        let received = mapping
            .client
            .receive_message()
            .queue_url(&mapping.queue_url)
            .max_number_of_messages(mapping.batch_size.clamp(1, 10))
            .wait_time_seconds(1)
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .send()
            .await;
        let messages = match received {
            Ok(output) => output.messages.unwrap_or_default(),
            Err(error) => {
                tracing::warn!(error = %error.into_service_error(), "the event source mapping cannot receive");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if messages.is_empty() {
            continue;
        }
        let records: Vec<Value> = messages
            .iter()
            .map(|m| {
                let attributes: serde_json::Map<String, Value> = m
                    .attributes()
                    .map(|a| a.iter().map(|(k, v)| (k.as_str().to_string(), json!(v))).collect())
                    .unwrap_or_default();
                json!({
                    "messageId": m.message_id(), "receiptHandle": m.receipt_handle(), "body": m.body(),
                    "attributes": attributes, "messageAttributes": {}, "md5OfBody": m.md5_of_body(),
                    "eventSource": "aws:sqs", "eventSourceARN": mapping.queue_arn, "awsRegion": relevo_template::REGION
                })
            })
            .collect();
        let failed: Vec<String> = match mapping
            .function
            .invoke(
                json!({ "Records": records }),
                mapping.timeout + Duration::from_secs(1),
            )
            .await
        {
            Ok(answer) if mapping.report_batch_item_failures => answer["batchItemFailures"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f["itemIdentifier"].as_str().map(String::from))
                .collect(),
            Ok(_) => Vec::new(),
            Err(error) => {
                tracing::warn!(%error, "worker invocation failed; the batch will be redelivered");
                continue;
            }
        };
        for message in messages
            .iter()
            .filter(|m| !failed.iter().any(|f| Some(f.as_str()) == m.message_id()))
        {
            if let Some(receipt) = message.receipt_handle()
                && let Err(error) = mapping
                    .client
                    .delete_message()
                    .queue_url(&mapping.queue_url)
                    .receipt_handle(receipt)
                    .send()
                    .await
            {
                tracing::warn!(error = %error.into_service_error(), "the event source mapping cannot delete a message");
            }
        }
    }
}

/// The schedule of a function: an EventBridge scheduled event every `every`.
pub async fn schedule(rule: String, function: Function, every: Duration, timeout: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let event = json!({
            "version": "0", "id": relevo_state::Ids::new_id(&relevo_state::RandomIds), "detail-type": "Scheduled Event",
            "source": "aws.events", "account": relevo_template::ACCOUNT_ID, "region": relevo_template::REGION,
            "time": "2026-01-01T00:00:00Z",
            "resources": [format!("arn:aws:events:{}:{}:rule/{rule}", relevo_template::REGION, relevo_template::ACCOUNT_ID)],
            "detail": {}
        });
        if let Err(error) = function
            .invoke(event, timeout + Duration::from_secs(1))
            .await
        {
            tracing::warn!(%error, "scheduled invocation failed");
        }
    }
}
