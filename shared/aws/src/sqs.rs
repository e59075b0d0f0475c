//! `Queue` on SQS. Dead-lettering is the queue's redrive policy (`maxReceiveCount`).

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{
    MessageSystemAttributeName, MessageSystemAttributeNameForSends, MessageSystemAttributeValue,
    QueueAttributeName,
};
use relevo_state::{Queue, QueueMessage, StoreError, StoreFuture, TraceContext};

use crate::failure::sdk_failure;

#[derive(Clone, Debug)]
pub struct SqsQueue {
    client: Client,
    url: String,
}

impl SqsQueue {
    pub fn new(client: Client, url: &str) -> Self {
        SqsQueue {
            client,
            url: url.into(),
        }
    }
}

/// A failure this adapter tells itself (no underlying error).
fn unavailable(message: &'static str) -> StoreError {
    StoreError::Unavailable(message.into())
}

fn seconds(secs: u64) -> i32 {
    secs.min(12 * 3600) as i32
}

impl Queue for SqsQueue {
    fn send<'a>(&'a self, body: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.client
                .send_message()
                .queue_url(&self.url)
                .message_body(body)
                .send()
                .await
                .map_err(sdk_failure)?;
            Ok(())
        })
    }

    /// The trace rides as the `AWSTraceHeader` system attribute, in X-Ray form: the one SQS
    /// itself carries to the event source mapping and X-Ray reads (SendMessage,
    /// `MessageSystemAttributes`).
    fn send_traced<'a>(
        &'a self,
        body: &'a str,
        trace: Option<&'a TraceContext>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut send = self
                .client
                .send_message()
                .queue_url(&self.url)
                .message_body(body);
            if let Some(trace) = trace {
                let header = MessageSystemAttributeValue::builder()
                    .data_type("String")
                    .string_value(trace.xray())
                    .build()
                    .map_err(|e| StoreError::unavailable("cannot build the trace header", e))?;
                send = send.message_system_attributes(
                    MessageSystemAttributeNameForSends::AwsTraceHeader,
                    header,
                );
            }
            send.send().await.map_err(sdk_failure)?;
            Ok(())
        })
    }

    fn receive<'a>(
        &'a self,
        max: usize,
        visibility_secs: u64,
        _now: u64,
    ) -> StoreFuture<'a, Vec<QueueMessage>> {
        Box::pin(async move {
            let output = self
                .client
                .receive_message()
                .queue_url(&self.url)
                .max_number_of_messages(max.clamp(1, 10) as i32)
                .visibility_timeout(seconds(visibility_secs))
                .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
                .send()
                .await
                .map_err(sdk_failure)?;
            Ok(output
                .messages()
                .iter()
                .map(|m| QueueMessage {
                    id: m.message_id().unwrap_or_default().to_string(),
                    receipt: m.receipt_handle().unwrap_or_default().to_string(),
                    body: m.body().unwrap_or_default().to_string(),
                    receive_count: m
                        .attributes()
                        .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(1),
                })
                .collect())
        })
    }

    fn delete<'a>(&'a self, receipt: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.client
                .delete_message()
                .queue_url(&self.url)
                .receipt_handle(receipt)
                .send()
                .await
                .map_err(sdk_failure)?;
            Ok(())
        })
    }

    fn change_visibility<'a>(
        &'a self,
        receipt: &'a str,
        visibility_secs: u64,
        _now: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.client
                .change_message_visibility()
                .queue_url(&self.url)
                .receipt_handle(receipt)
                .visibility_timeout(seconds(visibility_secs))
                .send()
                .await
                .map_err(sdk_failure)?;
            Ok(())
        })
    }
}

/// Creates `name` with a dead-letter queue `name-dlq` after `max_receives` deliveries; returns
/// (queue URL, dead-letter queue URL). For tests and local emulation; SAM creates them in AWS.
pub async fn create_queue_with_dead_letters(
    client: &Client,
    name: &str,
    max_receives: u32,
) -> Result<(String, String), StoreError> {
    let dead = client
        .create_queue()
        .queue_name(format!("{name}-dlq"))
        .send()
        .await
        .map_err(sdk_failure)?
        .queue_url
        .ok_or_else(|| unavailable("no dead-letter queue URL"))?;
    let arn = client
        .get_queue_attributes()
        .queue_url(&dead)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(sdk_failure)?
        .attributes
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .ok_or_else(|| unavailable("no dead-letter queue ARN"))?;
    let policy = serde_json::json!({ "deadLetterTargetArn": arn, "maxReceiveCount": max_receives })
        .to_string();
    let url = client
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::RedrivePolicy, policy)
        .send()
        .await
        .map_err(sdk_failure)?
        .queue_url
        .ok_or_else(|| unavailable("no queue URL"))?;
    Ok((url, dead))
}
