//! A warm environment's requestState keys follow their secret.
//!
//! An execution environment can live for hours, and it read the keys secret once, at its cold
//! start. A rotation (`relevo-ops keys add`, later `keys retire`) changes the secret; without a
//! re-read, an environment that never saw the new key refuses the states its neighbours seal
//! with it, and one that never saw the retirement keeps accepting the retired key. So the ring
//! is read again at the start of the first invocation after `RELEVO_STATE_KEYS_REFRESH_SECS`
//! (300 by default; 0: every invocation), and replaced in place for every holder of it
//! ([`KeyRing::replace_with`]). A failed read keeps the keys held and is tried again after the
//! same interval, so an outage of Secrets Manager costs no request.
//!
//! Single-flight: several invocations in flight in one environment (Managed Instances) that find
//! the refresh due at once read the secret once ([`KeyRefresh::if_due_at`]).
//!
//! What this bounds: every environment holds the secret's current keys within the interval of
//! its next invocation. The rotation procedure (`shared/relevo/docs/ops-cli.md`, "Rotating the
//! `requestState` key") waits that long between its steps.

use std::future::Future;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use relevo_protocol::KeyRing;

/// How an environment re-reads its keys: the secret, the ring it replaces, and when next.
pub struct KeyRefresh {
    client: aws_sdk_secretsmanager::Client,
    secret_id: String,
    ring: KeyRing,
    every: Duration,
    next: Mutex<Instant>,
}

impl KeyRefresh {
    pub fn new(
        client: aws_sdk_secretsmanager::Client,
        secret_id: &str,
        ring: KeyRing,
        every: Duration,
    ) -> Self {
        KeyRefresh {
            client,
            secret_id: secret_id.into(),
            ring,
            every,
            next: Mutex::new(Instant::now() + every),
        }
    }

    /// Reads the secret again if the interval has passed since the last read.
    pub async fn if_due(&self) {
        // Boxed: the SDK call's future is hundreds of kilobytes, and every invocation's future
        // would carry (and move) it, due or not.
        self.if_due_at(Instant::now(), || {
            Box::pin(relevo_aws::load_key_ring(&self.client, &self.secret_id))
        })
        .await;
    }

    /// [`KeyRefresh::if_due`] at `now`, reading the ring with `load`. Single-flight: the caller
    /// that finds the refresh due claims it (the next one moves an interval on) before it reads,
    /// so of the invocations in flight at once (Managed Instances) one reads the secret and the
    /// others go on with the keys held, as they would through a failed read.
    pub async fn if_due_at<F, Fut, E>(&self, now: Instant, load: F)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<KeyRing, E>>,
        E: std::fmt::Display,
    {
        {
            let mut next = self
                .next
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if now < *next {
                return;
            }
            *next = now + self.every;
        }
        match load().await {
            Ok(newer) => {
                let (before, after) = (self.ring.key_ids(), newer.key_ids());
                self.ring.replace_with(&newer);
                if before != after {
                    tracing::info!(
                        ?before,
                        ?after,
                        "requestState keys changed in the secret; now in use"
                    );
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot re-read the keys secret; keeping the keys held")
            }
        }
    }
}

static REFRESH: OnceLock<KeyRefresh> = OnceLock::new();

/// The refresh interval from `RELEVO_STATE_KEYS_REFRESH_SECS` (module docs).
pub fn refresh_interval() -> Duration {
    let secs = std::env::var("RELEVO_STATE_KEYS_REFRESH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    Duration::from_secs(secs)
}

/// Makes `refresh` the process's (once), for [`refresh_if_due`].
pub fn install(refresh: KeyRefresh) {
    let _ = REFRESH.set(refresh);
}

/// At the start of an invocation: the keys re-read if due (nothing without a keys secret).
pub async fn refresh_if_due() {
    if let Some(refresh) = REFRESH.get() {
        refresh.if_due().await;
    }
}
