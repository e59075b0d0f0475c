//! Time as a port, so expiry logic is tested with a fixed clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Seconds since the Unix epoch.
    fn now_unix(&self) -> u64;

    /// Milliseconds since the Unix epoch (for rates measured within a second, such as a quota
    /// lease's); by default the second's first millisecond.
    fn now_millis(&self) -> u64 {
        self.now_unix().saturating_mul(1000)
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }

    fn now_millis(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to (kept in milliseconds).
#[derive(Debug, Default, Clone)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn at(unix: u64) -> Self {
        ManualClock(Arc::new(AtomicU64::new(unix.saturating_mul(1000))))
    }

    pub fn advance(&self, seconds: u64) {
        self.0
            .fetch_add(seconds.saturating_mul(1000), Ordering::SeqCst);
    }

    pub fn advance_millis(&self, millis: u64) {
        self.0.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_unix(&self) -> u64 {
        self.0.load(Ordering::SeqCst) / 1000
    }

    fn now_millis(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
