//! DynamoDB and SQS adapters of the `relevo-state` ports.
//!
//! One table, partition key `pk` (the tenant-first storage key of `relevo-state`), no sort key.
//! Every write carries a `ConditionExpression`; a refused write returns the current item
//! (`ReturnValuesOnConditionCheckFailure=ALL_OLD`) instead of costing a second read. Reads that
//! decide correctness are strongly consistent. `expires_at` is the table's TTL attribute (items
//! past it read as absent here; DynamoDB deletes them eventually). Non-terminal jobs carry a sparse
//! `active` attribute indexed by the `active` GSI (sorted by `updated_at`) for the reconciler.
//!
//! The SDK runs on rustls with ring and the hyper 1 client; the endpoint comes from the standard
//! `AWS_ENDPOINT_URL` setting, so tests point it at a local emulator.

mod dynamo;
mod secrets;
mod sqs;

pub use dynamo::{DynamoStore, create_table};
pub use secrets::{SecretKeysError, key_ring_from_secret, load_key_ring};
pub use sqs::{SqsQueue, create_queue_with_dead_letters};

use aws_config::{BehaviorVersion, SdkConfig};
use aws_smithy_http_client::{Builder, tls};

/// The SDK configuration from the environment, with the ring TLS provider.
pub async fn sdk_config() -> SdkConfig {
    let http = Builder::new().tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring)).build_https();
    aws_config::defaults(BehaviorVersion::latest()).http_client(http).load().await
}

/// A configuration for a local emulator at `endpoint` (fixed test credentials, us-east-1).
pub async fn emulator_config(endpoint: &str) -> SdkConfig {
    let http = Builder::new().tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring)).build_https();
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(http)
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new("test", "test", None, None, "emulator"))
        .load()
        .await
}
