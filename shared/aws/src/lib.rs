//! DynamoDB and SQS adapters of the `relevo-state` ports.
//!
//! One table, partition key `pk` (the tenant-first storage key of `relevo-state`), no sort key.
//! Every write carries a `ConditionExpression`; a refused write returns the current item
//! (`ReturnValuesOnConditionCheckFailure=ALL_OLD`) instead of costing a second read, and carries
//! the `intent` id of the port call that made it (a transaction also as its `ClientRequestToken`):
//! a refusal whose current item carries the call's own intent is the SDK's resend of a write
//! already applied (its first answer lost), answered as the success it is. Reads that
//! decide correctness are strongly consistent. `expires_at` is the table's TTL attribute (items
//! past it read as absent here; DynamoDB deletes them eventually). Non-terminal jobs carry a sparse
//! `active` attribute indexed by the `active` GSI (sorted by `updated_at`) for the reconciler: one
//! of 16 shard values, so the index has no single hot partition; the reconciler reads every shard.
//!
//! The SDK runs on rustls with ring over HTTP/1.1 ([`http_client`]: hyper-util's pooled client,
//! no HTTP/2 linked); the endpoint comes from the standard `AWS_ENDPOINT_URL` setting, so tests
//! point it at a local emulator.

mod dead_letters;
mod dynamo;
mod failure;
mod http_client;
mod operator;
mod secrets;
mod sqs;

pub use dead_letters::SqsDeadLetters;
pub use dynamo::{DynamoStore, create_table};
pub use http_client::{MAX_RESPONSE_BYTES, NoRootCertificates, PooledClient, pooled_client};
pub use secrets::{SecretKeysError, key_ring_from_secret, load_key_ring};
pub use sqs::{SqsQueue, create_queue_with_dead_letters};

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::{SharedCredentialsProvider, SharedHttpClient};

/// The SDK configuration of a Lambda function: region and credentials from the variables Lambda
/// sets (`AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), the
/// endpoint from `AWS_ENDPOINT_URL` when set (local Lambda mode points it at the emulator), ring
/// TLS, the SDK's standard retries, and [`timeouts`]. It skips aws-config's default provider chain
/// (profiles, SSO, web identity, IMDS), which no function uses and which would add about 300 KB
/// to every binary.
pub fn sdk_config() -> SdkConfig {
    let region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .iter()
        .find_map(|name| std::env::var(name).ok());
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(https_client())
        .region(region.map(aws_config::Region::new))
        .credentials_provider(SharedCredentialsProvider::new(
            EnvironmentVariableCredentialsProvider::new(),
        ))
        .timeout_config(timeouts());
    if let Some(endpoint) = std::env::var("AWS_ENDPOINT_URL")
        .ok()
        .filter(|url| !url.is_empty())
    {
        config = config.endpoint_url(endpoint);
    }
    config.build()
}

fn https_client() -> SharedHttpClient {
    http_client::sdk_http_client()
}

/// Every AWS call ends within its operation timeout (`RELEVO_AWS_OPERATION_TIMEOUT_MS`, 5 s; each
/// attempt `RELEVO_AWS_ATTEMPT_TIMEOUT_MS`, 2 s; connecting 1 s), well inside any function's
/// timeout: a stalled store fails the call (a retryable error to the client) instead of holding
/// the function until the front door gives up and the write lands after the client was told it
/// failed. Without these the SDK waits as long as the connection does.
pub fn timeouts() -> aws_config::timeout::TimeoutConfig {
    let millis = |name: &str, default: u64| {
        std::time::Duration::from_millis(
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default),
        )
    };
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(std::time::Duration::from_secs(1))
        .operation_attempt_timeout(millis("RELEVO_AWS_ATTEMPT_TIMEOUT_MS", 2_000))
        .operation_timeout(millis("RELEVO_AWS_OPERATION_TIMEOUT_MS", 5_000))
        .build()
}

/// A configuration for a local emulator at `endpoint` (fixed test credentials, us-east-1).
pub async fn emulator_config(endpoint: &str) -> SdkConfig {
    emulator_config_as(endpoint, "test").await
}

/// As [`emulator_config`], signing with `access_key_id` (local Lambda mode gives each function
/// its own, and its IAM proxy tells them apart by it).
pub async fn emulator_config_as(endpoint: &str, access_key_id: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(https_client())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            access_key_id,
            "test",
            None,
            None,
            "emulator",
        ))
        .load()
        .await
}
