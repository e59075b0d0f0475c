//! The effect's other side: an API outside our table that applies a change once per idempotency
//! key, and the demo's simulated warehouse.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use relevo_protocol::Clock;
use relevo_state::{Ids, Owner, RecordKey, RecordStore, StoreError};
use serde_json::{Value, json};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DownstreamError {
    /// The request may or may not have been applied (timeout, lost response).
    #[error("no answer from the downstream: {0}")]
    NoAnswer(String),
}

/// An API outside our table that applies an effect once per idempotency key (within its window)
/// and can tell, by key, whether it did.
pub trait Downstream: Send + Sync {
    /// Applies `payload` under `key` (a repeat within the window returns the first receipt).
    fn deliver<'a>(
        &'a self,
        tenant: &'a str,
        key: &'a str,
        payload: &'a Value,
    ) -> BoxFuture<'a, Result<Value, DownstreamError>>;
    /// The receipt of `key`, if the downstream applied it.
    fn receipt<'a>(
        &'a self,
        tenant: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, DownstreamError>>;
}

/// The demo's warehouse API: its own records (kind `warehouse-api`), an idempotency window of
/// `window_secs`; every first delivery of a key is one effect.
pub struct SimulatedWarehouse {
    pub records: Arc<dyn RecordStore>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn Ids>,
    pub window_secs: u64,
}

impl SimulatedWarehouse {
    fn key(tenant: &str, key: &str) -> RecordKey {
        RecordKey::new(Owner::tenant(tenant), "warehouse-api", key)
    }
}

impl Downstream for SimulatedWarehouse {
    fn deliver<'a>(
        &'a self,
        tenant: &'a str,
        key: &'a str,
        payload: &'a Value,
    ) -> BoxFuture<'a, Result<Value, DownstreamError>> {
        Box::pin(async move {
            let now = self.clock.now_unix();
            let receipt = json!({ "receiptId": self.ids.new_id(), "key": key, "acceptedAt": now, "payload": payload });
            match self
                .records
                .create(
                    &Self::key(tenant, key),
                    &receipt,
                    Some(now + self.window_secs),
                    now,
                )
                .await
            {
                Ok(_) => Ok(receipt),
                Err(StoreError::AlreadyExists(first)) => Ok(first.body),
                Err(other) => Err(DownstreamError::NoAnswer(other.to_string())),
            }
        })
    }

    fn receipt<'a>(
        &'a self,
        tenant: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, DownstreamError>> {
        Box::pin(async move {
            let now = self.clock.now_unix();
            match self.records.get(&Self::key(tenant, key), now).await {
                Ok(found) => Ok(found.map(|r| r.body)),
                Err(other) => Err(DownstreamError::NoAnswer(other.to_string())),
            }
        })
    }
}
