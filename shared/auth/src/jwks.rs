//! Where verification keys come from: the issuer's JWKS over HTTPS, or a fixed set (dev, tests).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::JwkSet;

use crate::ConfigError;
use tokio::sync::RwLock;

/// How long a JWKS fetch may take before the request fails with 503.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// An unknown `kid` triggers at most one refetch per interval.
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(30);

pub type KeysFuture<'a> = Pin<Box<dyn Future<Output = Result<JwkSet, String>> + Send + 'a>>;

pub trait KeySource: Send + Sync {
    fn fetch(&self) -> KeysFuture<'_>;
}

/// The issuer's JWKS endpoint.
#[derive(Clone)]
pub struct HttpKeySource {
    url: String,
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
}

impl std::fmt::Debug for HttpKeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpKeySource").field("url", &self.url).finish()
    }
}

/// A JWKS larger than this is refused (real ones are a few kilobytes).
const MAX_JWKS_BYTES: usize = 256 * 1024;

impl HttpKeySource {
    /// Trusts the system's root certificates; plain `http://` is accepted too (the dev issuer and
    /// local Lambda mode serve their JWKS on loopback). Fails when the system has no root
    /// certificates at all.
    pub fn new(url: &str) -> Result<Self, ConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let connector = HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(provider)
            .map_err(|e| ConfigError::NoRootCertificates(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(HttpKeySource { url: url.into(), client })
    }

    async fn get(&self) -> Result<Bytes, String> {
        let uri: http::Uri = self.url.parse().map_err(|e| format!("JWKS URL is invalid: {e}"))?;
        let response = self.client.get(uri).await.map_err(|e| format!("JWKS fetch failed: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("JWKS fetch returned HTTP {}", response.status()));
        }
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES).collect().await;
        Ok(body.map_err(|e| format!("JWKS body could not be read: {e}"))?.to_bytes())
    }
}

impl KeySource for HttpKeySource {
    fn fetch(&self) -> KeysFuture<'_> {
        Box::pin(async move {
            let body = tokio::time::timeout(FETCH_TIMEOUT, self.get())
                .await
                .map_err(|_| format!("JWKS fetch timed out after {FETCH_TIMEOUT:?}"))??;
            serde_json::from_slice::<JwkSet>(&body).map_err(|e| format!("JWKS is not a valid key set: {e}"))
        })
    }
}

/// A key set known in advance.
#[derive(Debug, Clone)]
pub struct StaticKeySource(pub JwkSet);

impl KeySource for StaticKeySource {
    fn fetch(&self) -> KeysFuture<'_> {
        let keys = self.0.clone();
        Box::pin(async move { Ok(keys) })
    }
}

/// The process-wide cache in front of a [`KeySource`].
pub(crate) struct KeyCache {
    source: Arc<dyn KeySource>,
    state: RwLock<Option<(JwkSet, Instant)>>,
}

impl KeyCache {
    pub(crate) fn new(source: Arc<dyn KeySource>) -> Self {
        KeyCache { source, state: RwLock::new(None) }
    }

    /// The key set, fetched on first use; refetched when `kid` is unknown and the cached copy is
    /// older than [`MIN_REFRESH_INTERVAL`].
    pub(crate) async fn keys_for(&self, kid: &str) -> Result<JwkSet, String> {
        if let Some((keys, fetched)) = self.state.read().await.as_ref()
            && (keys.find(kid).is_some() || fetched.elapsed() < MIN_REFRESH_INTERVAL)
        {
            return Ok(keys.clone());
        }
        let mut state = self.state.write().await;
        if let Some((keys, fetched)) = state.as_ref()
            && (keys.find(kid).is_some() || fetched.elapsed() < MIN_REFRESH_INTERVAL)
        {
            return Ok(keys.clone());
        }
        let keys = self.source.fetch().await?;
        *state = Some((keys.clone(), Instant::now()));
        Ok(keys)
    }
}
