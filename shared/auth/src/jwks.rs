//! Where verification keys come from: the issuer's JWKS over HTTPS, or a fixed set (dev, tests),
//! and the process's cache in front of it (`KeyCache`).
//!
//! The fetch goes through `relevo-https`, the client stack the AWS SDK's calls use too: one TLS
//! configuration per process, the system's roots read at the first `https://` connection (a
//! loopback `http://` issuer, as in tests and the bench, never reads them).
//!
//! Key revocation: a fetch whose key set lacks a key the cache held, or holds it changed, starts
//! a new key generation (`KeyCache::generation`): every token remembered as verified under an
//! earlier generation is forgotten (`crate::verifier`), so a key the issuer removed admits no
//! remembered token after that fetch. Keys are fetched again only as the invariants below allow
//! (a token naming a `kid` not held), so the worst case of a key's removal reaching a warm
//! environment is documented in `crate::verifier` and in the auth guide.
//!
//! Threat model: anyone can send a token naming a `kid` the issuer never had. Such a token must
//! neither make this process a request amplifier against the issuer (one fetch per token, from
//! every warm environment) nor delay other users: while a fetch for it is slow or hangs, tokens
//! with a known `kid` are verified as if nothing happened. Refetches are bounded per interval
//! and single-flight, and a fetch holds no lock that a known-`kid` reader waits on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use jsonwebtoken::jwk::JwkSet;

use relevo_protocol::Clock;
use tokio::sync::Mutex;

/// How long a JWKS fetch may take before the request fails with 503.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// While keys are held, at most one fetch starts per interval (an unknown `kid`), whatever its
/// outcome.
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
/// While no keys are held (the first fetch failed), at most one fetch starts per interval. Shorter
/// than [`MIN_REFRESH_INTERVAL`]: every token is refused until a fetch succeeds, so waiting
/// longer would only lengthen the outage, and the bound per process still holds.
pub const COLD_RETRY_INTERVAL: Duration = Duration::from_secs(5);

pub type KeysFuture<'a> = Pin<Box<dyn Future<Output = Result<JwkSet, String>> + Send + 'a>>;

pub trait KeySource: Send + Sync {
    fn fetch(&self) -> KeysFuture<'_>;
}

/// The issuer's JWKS endpoint.
#[derive(Clone)]
pub struct HttpKeySource {
    url: String,
    /// The same client as the AWS SDK's in `relevo-aws`: one copy of its code in a function, one
    /// TLS configuration in the process.
    client: relevo_https::PooledClient,
}

impl std::fmt::Debug for HttpKeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpKeySource")
            .field("url", &self.url)
            .finish()
    }
}

/// A JWKS larger than this is refused (real ones are a few kilobytes).
const MAX_JWKS_BYTES: usize = 256 * 1024;

impl HttpKeySource {
    /// Trusts the system's root certificates, read at the first `https://` fetch of the process
    /// (a system without any fails that fetch, and every token is refused with 503 until it has
    /// some); plain `http://` is accepted too (the dev issuer and local Lambda mode serve their
    /// JWKS on loopback).
    pub fn new(url: &str) -> Self {
        HttpKeySource {
            url: url.into(),
            client: relevo_https::pooled_client(None),
        }
    }

    async fn get(&self) -> Result<Bytes, String> {
        let uri: http::Uri = self
            .url
            .parse()
            .map_err(|e| format!("JWKS URL is invalid: {e}"))?;
        let response = self
            .client
            .get(uri)
            .await
            .map_err(|e| format!("JWKS fetch failed: {}", with_causes(&e)))?;
        if !response.status().is_success() {
            return Err(format!("JWKS fetch returned HTTP {}", response.status()));
        }
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await;
        Ok(body
            .map_err(|e| format!("JWKS body could not be read: {e}"))?
            .to_bytes())
    }
}

/// `error` and each of its causes, `: `-separated (hyper-util's own text names no cause).
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    text
}

impl KeySource for HttpKeySource {
    fn fetch(&self) -> KeysFuture<'_> {
        Box::pin(async move {
            let body = tokio::time::timeout(FETCH_TIMEOUT, self.get())
                .await
                .map_err(|_| format!("JWKS fetch timed out after {FETCH_TIMEOUT:?}"))??;
            serde_json::from_slice::<JwkSet>(&body)
                .map_err(|e| format!("JWKS is not a valid key set: {e}"))
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
///
/// Invariants:
/// - A token whose `kid` is held is answered from memory: its path takes a read lock held for a
///   clone, never across a fetch, so the issuer being down or slow costs it nothing.
/// - At most one fetch is in flight per process (single-flight): only callers that need one (the
///   first token, or a `kid` not held) wait on it, and they share its outcome; a token that comes
///   while the init's prefetch ([`KeyCache::prefetch`]) is in flight waits for that one.
/// - At most one fetch starts per [`MIN_REFRESH_INTERVAL`] while keys are held, and per
///   [`COLD_RETRY_INTERVAL`] while none are, counted from the start of the last attempt whether
///   it succeeded or failed: a flood of tokens with invented `kid`s, or an issuer that is down,
///   costs the issuer one request per interval from this process, not one per token.
/// - A failed fetch keeps the keys held.
/// - The generation grows by one when a fetch returns a set that lacks a held key or holds it
///   changed (a key added alone changes nothing), never otherwise, and never goes back: whatever
///   was decided with the keys of an earlier generation may rest on a key the issuer revoked.
pub(crate) struct KeyCache {
    source: Arc<dyn KeySource>,
    clock: Arc<dyn Clock>,
    held: std::sync::RwLock<Held>,
    /// [`Held::generation`], readable without the lock (every remembered-token lookup reads it).
    generation: AtomicU64,
    /// Held across a fetch; only callers that need a fetch take it.
    flight: Mutex<()>,
}

#[derive(Default)]
struct Held {
    keys: Option<JwkSet>,
    /// When the last fetch started (unix seconds of the cache's clock).
    last_attempt: Option<u64>,
    /// How many fetches so far revoked a held key (module docs).
    generation: u64,
}

/// The keys to verify a token with, and the generation they belong to.
pub(crate) struct Keys {
    pub(crate) set: JwkSet,
    pub(crate) generation: u64,
}

/// Whether moving from `held` to `fetched` revokes anything: a held key is absent from
/// `fetched`, or present under its `kid` with other parameters.
fn revokes(held: &JwkSet, fetched: &JwkSet) -> bool {
    held.keys.iter().any(|key| !fetched.keys.contains(key))
}

impl KeyCache {
    pub(crate) fn new(source: Arc<dyn KeySource>, clock: Arc<dyn Clock>) -> Self {
        KeyCache {
            source,
            clock,
            held: std::sync::RwLock::new(Held::default()),
            generation: AtomicU64::new(0),
            flight: Mutex::new(()),
        }
    }

    fn held(&self) -> std::sync::RwLockReadGuard<'_, Held> {
        self.held
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The current key generation (module invariants): a token remembered under another one
    /// must be verified again.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The first fetch of the process, before any token asks for it (a function's init, beside
    /// its other waits): nothing if keys are held or a fetch has already started. It is
    /// single-flight like any fetch: a token that comes while it is in flight waits for it and
    /// shares its outcome. A failed prefetch is forgotten (no caller asked for it, so it spends
    /// no caller's attempt): the first token fetches again at once, and the module's bounds
    /// count from that token's attempt.
    pub(crate) async fn prefetch(&self) {
        let _flight = self.flight.lock().await;
        {
            let mut held = self
                .held
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if held.keys.is_some() || held.last_attempt.is_some() {
                return;
            }
            held.last_attempt = Some(self.clock.now_unix());
        }
        match self.source.fetch().await {
            Ok(fetched) => {
                let mut held = self
                    .held
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // No key was held before this, the first attempt: nothing to revoke.
                held.keys.get_or_insert(fetched);
            }
            Err(error) => {
                tracing::warn!(%error, "cannot fetch the issuer's JWKS at init");
                let mut held = self
                    .held
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if held.keys.is_none() {
                    held.last_attempt = None;
                }
            }
        }
    }

    /// The held keys if they include `kid`.
    fn holding(&self, kid: &str) -> Option<Keys> {
        let held = self.held();
        held.keys
            .as_ref()
            .filter(|keys| keys.find(kid).is_some())
            .map(|set| Keys {
                set: set.clone(),
                generation: held.generation,
            })
    }

    /// The key set to look `kid` up in: the held one if it has `kid`; else the result of a fetch
    /// if one may start now (module invariants), else the held one as it is (the caller finds
    /// no `kid` in it). An error only when no keys are held at all, or the fetch this call
    /// started failed.
    pub(crate) async fn keys_for(&self, kid: &str) -> Result<Keys, String> {
        if let Some(keys) = self.holding(kid) {
            return Ok(keys);
        }
        let _flight = self.flight.lock().await;
        let now = self.clock.now_unix();
        {
            let mut held = self
                .held
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(set) = held.keys.as_ref().filter(|keys| keys.find(kid).is_some()) {
                // Fetched by the flight this call waited for.
                return Ok(Keys {
                    set: set.clone(),
                    generation: held.generation,
                });
            }
            let interval = if held.keys.is_some() {
                MIN_REFRESH_INTERVAL
            } else {
                COLD_RETRY_INTERVAL
            }
            .as_secs();
            let due = held
                .last_attempt
                .is_none_or(|last| now < last || now - last >= interval);
            if !due {
                let generation = held.generation;
                return held
                    .keys
                    .clone()
                    .map(|set| Keys { set, generation })
                    .ok_or_else(|| {
                        format!("the issuer's JWKS could not be fetched; the next attempt is within {interval} s")
                    });
            }
            held.last_attempt = Some(now);
        }
        let fetched = self.source.fetch().await?;
        let mut held = self
            .held
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if held
            .keys
            .as_ref()
            .is_some_and(|keys| revokes(keys, &fetched))
        {
            held.generation += 1;
            self.generation.store(held.generation, Ordering::Release);
            tracing::warn!(
                generation = held.generation,
                "the issuer's JWKS no longer holds a key it held (or holds it changed): every remembered token is verified again"
            );
        }
        held.keys = Some(fetched.clone());
        Ok(Keys {
            set: fetched,
            generation: held.generation,
        })
    }
}
