//! Where verification keys come from: the issuer's JWKS over HTTPS, or a fixed set (dev, tests).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
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
#[derive(Debug, Clone)]
pub struct HttpKeySource {
    url: String,
    client: reqwest::Client,
}

impl HttpKeySource {
    pub fn new(url: &str) -> Self {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        HttpKeySource { url: url.into(), client }
    }
}

impl KeySource for HttpKeySource {
    fn fetch(&self) -> KeysFuture<'_> {
        Box::pin(async move {
            let response = self.client.get(&self.url).send().await.map_err(|e| format!("JWKS fetch failed: {e}"))?;
            if !response.status().is_success() {
                return Err(format!("JWKS fetch returned HTTP {}", response.status()));
            }
            response.json::<JwkSet>().await.map_err(|e| format!("JWKS is not a valid key set: {e}"))
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
