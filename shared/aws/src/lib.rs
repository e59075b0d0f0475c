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
//! of 16 shard values, so the index has no single hot partition; the reconciler reads every shard,
//! a few queries in flight at once.
//!
//! The SDK runs on rustls with ring over HTTP/1.1 ([`http_client`]: hyper-util's pooled client,
//! no HTTP/2 linked); the endpoint comes from the standard `AWS_ENDPOINT_URL` setting, so tests
//! point it at a local emulator.
//!
//! A function builds one [`SdkConfig`] ([`sdk_config`]) at init and every client it makes
//! (Secrets Manager, DynamoDB, SQS) from it, so they share one HTTP client (one connection pool,
//! the process's one TLS configuration, roots read at the first `https://` connection), one
//! identity cache, and the settings below, each chosen for a call on a request's path:
//! - stalled-stream protection off: it wraps both bodies of every call to watch their
//!   throughput, which guards streaming downloads; here every request body is in memory and
//!   every answer is read whole by [`http_client`], bounded at [`MAX_RESPONSE_BYTES`], within the
//!   attempt and operation timeouts ([`timeouts`]), so a stalled answer already ends as a
//!   timeout;
//! - retries: [`retry_config`];
//! - endpoints: resolved by each service's own resolver, which keeps the last resolution (the
//!   parameters of a function's calls never change); a resolver fixed at init measured no
//!   difference (`infra/bench/benches/aws_sdk.rs`), so none is added.

mod dead_letters;
mod dynamo;
mod failure;
mod http_client;
mod operator;
mod secrets;
mod sqs;

/// The SDK configuration type every client is made from (`aws_config`'s).
pub use aws_config::SdkConfig;
pub use dead_letters::SqsDeadLetters;
pub use dynamo::{DynamoStore, create_table};
pub use http_client::{MAX_RESPONSE_BYTES, PooledClient, pooled_client};
pub use secrets::{SecretKeysError, key_ring_from_secret, load_key_ring};
pub use sqs::{SqsQueue, create_queue_with_dead_letters};

use aws_config::BehaviorVersion;
use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::identity::IdentityCache;
use aws_config::retry::RetryConfig;
use aws_config::stalled_stream_protection::StalledStreamProtectionConfig;
use aws_sdk_dynamodb::config::{SharedCredentialsProvider, SharedHttpClient};
use aws_smithy_types::retry::RetrySpec;

/// The SDK configuration of a Lambda function: region and credentials from the variables Lambda
/// sets (`AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), the
/// endpoint from `AWS_ENDPOINT_URL` when set (local Lambda mode points it at the emulator), and
/// the rest as [`sdk_config_for`]. It skips aws-config's default provider chain (profiles, SSO,
/// web identity, IMDS), which no function uses and which would add about 300 KB to every binary.
pub fn sdk_config() -> SdkConfig {
    sdk_config_for(AwsTarget::from_env())
}

/// Where a configuration's calls go and whom they are signed as.
#[derive(Debug, Clone)]
pub struct AwsTarget {
    pub region: Option<aws_config::Region>,
    /// Every service's endpoint (`AWS_ENDPOINT_URL`); `None`: AWS's own.
    pub endpoint: Option<String>,
    pub credentials: SharedCredentialsProvider,
}

impl AwsTarget {
    /// From the variables Lambda sets (see [`sdk_config`]).
    pub fn from_env() -> Self {
        let region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
            .iter()
            .find_map(|name| std::env::var(name).ok());
        AwsTarget {
            region: region.map(aws_config::Region::new),
            endpoint: std::env::var("AWS_ENDPOINT_URL")
                .ok()
                .filter(|url| !url.is_empty()),
            credentials: SharedCredentialsProvider::new(
                EnvironmentVariableCredentialsProvider::new(),
            ),
        }
    }
}

/// The SDK configuration every function's clients share, for `target`: one HTTP client over
/// [`http_client`] (ring TLS), one identity cache, [`retry_config`], [`timeouts`], and no
/// stalled-stream protection (module docs say why each).
pub fn sdk_config_for(target: AwsTarget) -> SdkConfig {
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(https_client())
        .identity_cache(IdentityCache::lazy().build())
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
        .retry_config(retry_config())
        .region(target.region)
        .credentials_provider(target.credentials)
        .timeout_config(timeouts());
    if let Some(endpoint) = target.endpoint {
        config = config.endpoint_url(endpoint);
    }
    config.build()
}

fn https_client() -> SharedHttpClient {
    http_client::sdk_http_client()
}

/// Retries sized for a request's path, where a caller waits: standard mode (a retry token
/// bucket per client, so an outage does not multiply every call by its attempts), with the
/// SDK's Retry Behavior 2.1 (`RetrySpec::v2_1`), which lets each service apply its own rules:
/// DynamoDB's client then makes at most 4 attempts, backing off at most 25, 50 and 100 ms
/// (jittered, so 88 ms on average in all) after a transient error, SQS and Secrets Manager at
/// most 3 with 50 ms then 100 ms. A throttled call backs off from 100 ms (at most 100, 200,
/// 400 ms) and never more than 1 s at a time. The SDK's own default (a 1 s initial backoff,
/// up to 3 s of waiting across three attempts) spends most of a 5 s operation timeout asleep;
/// with these, a call that keeps failing spends its budget on attempts (each at most 2 s,
/// [`timeouts`]), and the operation timeout still bounds the whole call.
pub fn retry_config() -> RetryConfig {
    RetryConfig::standard()
        .with_max_attempts(3)
        .with_initial_backoff(std::time::Duration::from_millis(100))
        .with_max_backoff(std::time::Duration::from_secs(1))
        .with_retry_spec(RetrySpec::v2_1())
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

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::config::Credentials;

    fn config() -> SdkConfig {
        sdk_config_for(AwsTarget {
            region: Some(aws_config::Region::new("us-east-1")),
            endpoint: Some("http://127.0.0.1:9".into()),
            credentials: SharedCredentialsProvider::new(Credentials::new(
                "test", "test", None, None, "test",
            )),
        })
    }

    #[test]
    fn calls_carry_no_stalled_stream_bookkeeping() {
        let protection = config().stalled_stream_protection().expect("set");
        assert!(!protection.is_enabled());
        let dynamodb = aws_sdk_dynamodb::Config::from(&config());
        assert!(
            !dynamodb
                .stalled_stream_protection()
                .expect("set")
                .is_enabled()
        );
    }

    #[test]
    fn retries_back_off_in_milliseconds_within_the_operation_timeout() {
        let shared = config().retry_config().cloned().expect("set");
        assert_eq!(shared.max_attempts(), 3);
        assert!(shared.initial_backoff() <= std::time::Duration::from_millis(100));
        assert!(shared.max_backoff() <= std::time::Duration::from_secs(1));
        // DynamoDB's client applies its own Retry Behavior 2.1 rules: 4 attempts, 25 ms.
        let dynamodb = aws_sdk_dynamodb::Config::from(&config());
        let retries = dynamodb.retry_config().expect("set");
        assert_eq!(retries.max_attempts(), 4);
        let spec = retries.retry_spec().expect("Retry Behavior 2.1");
        assert!(spec.is_at_least(RetrySpec::V2_1));
        assert_eq!(
            spec.non_throttling_initial_backoff(),
            std::time::Duration::from_millis(25)
        );
        // Backoffs after every failed attempt fit well inside the operation timeout.
        let longest_waits: std::time::Duration = (0..retries.max_attempts() - 1)
            .map(|attempt| {
                retries
                    .max_backoff()
                    .min(retries.initial_backoff() * 2u32.pow(attempt))
            })
            .sum();
        assert!(longest_waits < timeouts().operation_timeout().expect("set") / 2);
    }
}
