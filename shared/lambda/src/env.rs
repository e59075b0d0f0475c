//! What a function is built from, read once per cold start: the settings (state keys from
//! Secrets Manager or the environment), the backend (DynamoDB and SQS), the authenticator, and
//! the server or worker wired over them.
//!
//! Invariants: a function never uses ephemeral keys (the instance that verifies a
//! `requestState` is rarely the one that sealed it), and a feature whose port is missing is left
//! out of the app rather than failing at call time. The server is wired by
//! [`McpServer::from_ports`], the same constructor the local server and the testkit use. An MCP
//! function builds its authenticator before it reads the keys secret and starts its first JWKS
//! fetch then ([`relevo_protocol::Authenticator::prefetch`]), so that fetch overlaps init's
//! other waits rather than lengthening the first request. One AWS SDK configuration per process
//! ([`aws_sdk_config`]): the Secrets Manager, DynamoDB and SQS clients share its HTTP client,
//! connection pool and TLS configuration.

use std::sync::{Arc, OnceLock};

use lambda_http::Error;
use relevo_auth::AuthSettings;
use relevo_aws::{DynamoStore, SqsQueue};
use relevo_protocol::{AppBuilder, Authenticator, McpServer, Ports, Settings};
use relevo_state::{Engine, EngineConfig, InFlightLimits, RandomIds, SystemClock, Worker};

use crate::keys;

/// Builds the server of `app` from the environment. Lambdas never use ephemeral keys: the
/// instance that verifies a `requestState` is rarely the one that sealed it.
pub async fn server_from_env(streaming: bool, app: &impl AppBuilder) -> Result<McpServer, Error> {
    // The authenticator first: its first JWKS fetch runs beside the keys secret's read and the
    // Runtime API's first poll, instead of inside the first request. Its configuration error,
    // if any, is reported after the settings' own (they are read first, as before).
    let auth = authenticator_from_env();
    if let Ok(auth) = &auth {
        let prefetching = auth.clone();
        tokio::spawn(async move { prefetching.prefetch().await });
    }
    let mut settings = settings_from_env().await?;
    let auth = auth?;
    if !streaming && std::env::var("RELEVO_LISTEN_MAX_SECS").is_err() {
        // Buffered responses: a listen stream is acknowledged and ended at once.
        settings.config.listen_max_secs = 0;
    }
    // Server-to-client requests ride on a streamed `tools/call` answer; resource updates happen
    // in other environments, so no GET stream or subscription for 2025-11-25 clients.
    settings.config.streams_responses = streaming;
    settings.config.pushes_updates = false;
    let ports = ports_with(&settings, auth).await;
    Ok(McpServer::from_ports(app, &ports, settings.config))
}

/// The process's AWS SDK configuration ([`relevo_aws::sdk_config`]), built at its first use from
/// the environment and shared by every client the function makes.
pub fn aws_sdk_config() -> &'static relevo_aws::SdkConfig {
    static CONFIG: OnceLock<relevo_aws::SdkConfig> = OnceLock::new();
    CONFIG.get_or_init(relevo_aws::sdk_config)
}

pub(crate) fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// DynamoDB (`RELEVO_TABLE`) and SQS (`RELEVO_QUEUE_URL`) when configured; features whose port is
/// missing are left out of the app.
pub async fn backend_from_env() -> Ports {
    let table = std::env::var("RELEVO_TABLE").ok().filter(|t| !t.is_empty());
    let Some(table) = table else {
        return Ports::new(None);
    };
    let config = aws_sdk_config();
    let store = Arc::new(DynamoStore::new(
        aws_sdk_dynamodb::Client::new(config),
        &table,
    ));
    let pages_base = std::env::var("RELEVO_PAGES_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| {
            Ports::pages_beside(&std::env::var("RELEVO_AUTH_AUDIENCE").unwrap_or_default())
        });
    let ports = Ports::new(Some(store.clone())).with_pages_base(&pages_base);
    match std::env::var("RELEVO_QUEUE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        Some(url) => {
            let queue = Arc::new(SqsQueue::new(aws_sdk_sqs::Client::new(config), &url));
            let config = EngineConfig {
                lease_secs: env_number("RELEVO_LEASE_SECS", 60),
                ..EngineConfig::default()
            };
            let engine = Engine::new(
                store.clone(),
                queue,
                Arc::new(SystemClock),
                Arc::new(RandomIds),
                config,
            )
            .with_admission(store, InFlightLimits::from_env());
            ports.with_jobs(Arc::new(engine))
        }
        None => ports,
    }
}

/// Settings with the signing keys from Secrets Manager (`RELEVO_STATE_KEYS_SECRET`, name or ARN)
/// or from `RELEVO_STATE_KEYS`. Without either a function refuses to start: the instance that
/// verifies a `requestState` is rarely the one that sealed it, so a per-process key is wrong here.
pub async fn settings_from_env() -> Result<Settings, Error> {
    match std::env::var("RELEVO_STATE_KEYS_SECRET")
        .ok()
        .filter(|s| !s.is_empty())
    {
        Some(secret) => {
            let mut settings = Settings::from_env(true).map_err(|e| e.to_string())?;
            let client = aws_sdk_secretsmanager::Client::new(aws_sdk_config());
            settings.keys = relevo_aws::load_key_ring(&client, &secret).await?;
            settings.ephemeral_keys = false;
            keys::install(keys::KeyRefresh::new(
                client,
                &secret,
                settings.keys.clone(),
                keys::refresh_interval(),
            ));
            Ok(settings)
        }
        // Its Display, not its Debug: the error names the key entry's position, never its text.
        None => Ok(Settings::from_env(false).map_err(|e| e.to_string())?),
    }
}

/// What a function's app is built from: the configured backend, and the server's bearer-token
/// verification (`RELEVO_AUTH`, chosen by [`relevo_auth::authenticator`]; no dev issuer here),
/// signing keys and Host/Origin allow-list from `settings`.
pub(crate) async fn ports_from_env(settings: &Settings) -> Result<Ports, Error> {
    Ok(ports_with(settings, authenticator_from_env()?).await)
}

/// The server's bearer-token verification (`RELEVO_AUTH`, chosen by
/// [`relevo_auth::authenticator`]; no dev issuer here).
fn authenticator_from_env() -> Result<Arc<dyn Authenticator>, Error> {
    Ok(relevo_auth::authenticator(
        &AuthSettings::from_env("")?,
        None,
    )?)
}

/// [`ports_from_env`] with the authenticator `auth`.
async fn ports_with(settings: &Settings, auth: Arc<dyn Authenticator>) -> Ports {
    let origins = settings.config.origin_policy.clone();
    backend_from_env()
        .await
        .with_security(auth, settings.keys.clone(), origins)
}

/// The worker of `app`: its job runners and its tools' tasks, over the configured table and queue.
pub(crate) async fn worker_from_env(app: &impl AppBuilder) -> Result<Arc<Worker>, Error> {
    let ports = ports_from_env(&settings_from_env().await?).await?;
    let engine = ports
        .jobs
        .clone()
        .ok_or_else(|| Error::from("RELEVO_TABLE and RELEVO_QUEUE_URL are required"))?;
    Ok(Arc::new(Arc::new(app(&ports)).worker(engine)))
}

/// Whether this function answers with Lambda response streaming (`RELEVO_RESPONSE_STREAMING`,
/// see [`crate::http`]).
pub(crate) fn streaming_from_env() -> bool {
    std::env::var("RELEVO_RESPONSE_STREAMING").is_ok_and(|v| v == "true" || v == "1")
}
