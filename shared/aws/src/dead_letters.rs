//! The SQS dead-letter queue for operators ([`DeadLetters`]): listed by receiving (and making
//! the messages visible again), redriven by receive → send to the work queue → delete.
//!
//! SQS's own `StartMessageMoveTask` moves a whole DLQ server-side; it is not used here because
//! it cannot pick one message and the emulator the tests run on does not implement it. For a
//! dead-letter queue of many thousands of messages, prefer it (console: "Start DLQ redrive").
//!
//! Invariants: a message is sent to the work queue before it is deleted from the dead-letter
//! queue (a failure in between delivers it twice, never loses it; work messages are idempotent).
//! A listing or a redrive touches at most [`MAX_LISTING`] messages, and every message it received
//! but did not move is made visible again before it returns.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use relevo_state::dead_letters::{DeadLetter, DeadLetters, Redrive};
use relevo_state::operator::MAX_LISTING;
use relevo_state::{StoreError, StoreFuture};

use crate::failure::sdk_failure;

/// How long a message received by a listing stays hidden while the listing goes on (so it is
/// not received twice by the same listing). It is made visible again at the end.
const HOLD_SECS: i32 = 60;

/// The dead-letter queue at `dead_letter_url` of the work queue at `queue_url`.
#[derive(Clone, Debug)]
pub struct SqsDeadLetters {
    client: Client,
    queue_url: String,
    dead_letter_url: String,
}

impl SqsDeadLetters {
    pub fn new(client: Client, queue_url: &str, dead_letter_url: &str) -> Self {
        SqsDeadLetters {
            client,
            queue_url: queue_url.into(),
            dead_letter_url: dead_letter_url.into(),
        }
    }

    /// Up to ten messages of the dead-letter queue, hidden for [`HOLD_SECS`].
    async fn receive(&self) -> Result<Vec<Message>, StoreError> {
        let output = self
            .client
            .receive_message()
            .queue_url(&self.dead_letter_url)
            .max_number_of_messages(10)
            .visibility_timeout(HOLD_SECS)
            .wait_time_seconds(1)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await
            .map_err(sdk_failure)?;
        Ok(output.messages.unwrap_or_default())
    }

    /// Makes received messages visible again (best effort: they reappear after [`HOLD_SECS`]
    /// anyway).
    async fn release(&self, held: &[Message]) {
        for message in held {
            if let Some(receipt) = message.receipt_handle() {
                let released = self
                    .client
                    .change_message_visibility()
                    .queue_url(&self.dead_letter_url)
                    .receipt_handle(receipt)
                    .visibility_timeout(0)
                    .send()
                    .await;
                if let Err(error) = released {
                    tracing::warn!(error = %sdk_failure(error), "a dead letter stays hidden until its hold ends");
                }
            }
        }
    }

    async fn move_back(&self, message: &Message) -> Result<(), StoreError> {
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(message.body().unwrap_or_default())
            .send()
            .await
            .map_err(sdk_failure)?;
        self.client
            .delete_message()
            .queue_url(&self.dead_letter_url)
            .receipt_handle(message.receipt_handle().unwrap_or_default())
            .send()
            .await
            .map_err(sdk_failure)?;
        Ok(())
    }
}

fn dead_letter(message: &Message) -> DeadLetter {
    DeadLetter {
        id: message.message_id().unwrap_or_default().to_string(),
        body: message.body().unwrap_or_default().to_string(),
        receive_count: message
            .attributes()
            .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
    }
}

impl DeadLetters for SqsDeadLetters {
    fn list_dead_letters<'a>(&'a self, limit: usize) -> StoreFuture<'a, Vec<DeadLetter>> {
        Box::pin(async move {
            let limit = limit.min(MAX_LISTING);
            let mut held = Vec::new();
            let outcome = async {
                while held.len() < limit {
                    let batch = self.receive().await?;
                    if batch.is_empty() {
                        break;
                    }
                    held.extend(batch);
                }
                Ok::<_, StoreError>(())
            }
            .await;
            let listed = held.iter().take(limit).map(dead_letter).collect();
            self.release(&held).await;
            outcome.map(|()| listed)
        })
    }

    fn redrive<'a>(&'a self, which: Redrive<'a>) -> StoreFuture<'a, Vec<String>> {
        Box::pin(async move {
            let mut moved = Vec::new();
            let mut held = Vec::new();
            let outcome = async {
                'receiving: while moved.len() + held.len() < MAX_LISTING {
                    let batch = self.receive().await?;
                    if batch.is_empty() {
                        break;
                    }
                    let mut batch = batch.into_iter();
                    while let Some(message) = batch.next() {
                        let chosen = match which {
                            Redrive::All => true,
                            Redrive::One(id) => message.message_id() == Some(id),
                        };
                        if !chosen {
                            held.push(message);
                            continue;
                        }
                        self.move_back(&message).await?;
                        moved.push(message.message_id().unwrap_or_default().to_string());
                        if matches!(which, Redrive::One(_)) {
                            held.extend(batch);
                            break 'receiving;
                        }
                    }
                }
                Ok::<_, StoreError>(())
            }
            .await;
            self.release(&held).await;
            outcome.map(|()| moved)
        })
    }
}
