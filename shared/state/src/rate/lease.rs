//! Quota leases: an environment spends a window's units from a lease it took in one conditional
//! write, instead of writing once per request.
//!
//! A lease is `B` units of a (tenant, scope) window, counted in the store by one
//! [`Counter::count_up_by`] before any of them is admitted (pre-debit), then spent from memory.
//! `B` follows this environment's own recent rate for that key, so that a lease lasts about
//! [`LEASE_HORIZON_MS`]: 1 for a quiet tenant (every request writes, as without leases), more
//! for a busy one, growing at most twofold per take and never past [`lease_cap`] or past what
//! the rest of the window would spend at that rate. When a window has no room left for a lease,
//! the environment takes just what the request needs; when it has none for that either, the
//! environment remembers the refusal and refuses that key from memory until the window turns
//! (a request needing fewer units than the refused one still asks the store).
//!
//! Invariants:
//! - Never more than the limit admitted per window, across any number of environments: every
//!   admitted unit was counted in the store's window record first, by the same atomic
//!   conditional write as without leases (`count + B <= limit`).
//! - Stranded units (counted in a window, never admitted in it: a lease still held when the
//!   window turns, or dropped from a full book) are fewer than [`lease_cap`]`(limit)` per
//!   environment, key and window, so `N` environments strand fewer than `N × lease_cap(limit)`
//!   of a window; they are refusals the window could have admitted, never admissions beyond it.
//! - A refused window costs at most two refused writes per environment and key (the lease, then
//!   the units the request needs); later refusals in the same window cost nothing.
//! - One take at a time per key and environment: concurrent requests of one tenant (several
//!   invocations in flight) wait for the take in progress instead of each taking a lease.
//! - Bounded memory: at most [`MAX_LEASES`] keys per environment; when full, keys of windows
//!   that are over go first, then all (their held units are stranded, within the bound above
//!   for each key).
//! - A store failure admits nothing and changes no lease ([`RateError::Store`]).
//!
//! Threat model: as for [`super`]: callers of one tenant cannot be admitted beyond its window,
//! whichever environments they reach; keys are a verified tenant and a scope from a closed set
//! (the tenant, or a registered tool), so a caller cannot grow the book with made-up keys.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Admission, Rate, RateError, window_key};
use crate::{RecordKey, RecordStore, StoreFuture};

/// How long a lease should last at the environment's observed rate, milliseconds.
pub const LEASE_HORIZON_MS: u64 = 1_000;
/// The most units one take reserves.
pub const MAX_LEASE: u32 = 64;
/// And never more than this fraction of a window's limit (`limit / LEASE_SHARE`).
pub const LEASE_SHARE: u32 = 32;
/// Keys (tenant and scope) one environment keeps leases for at most.
pub const MAX_LEASES: usize = 4_096;

/// The most units one take of a window of `limit` reserves with leases of at most `max_lease`
/// units: `min(max_lease, limit / LEASE_SHARE)`, at least 1. An environment strands fewer than
/// this per key and window.
pub fn lease_cap(max_lease: u32, limit: u32) -> u32 {
    max_lease.min(limit / LEASE_SHARE).max(1)
}

/// The store operation leases are taken with: one atomic conditional count
/// ([`RecordStore::count_up_by`]). Every [`RecordStore`] is one; the bench's simulation
/// implements it over memory.
pub trait Counter: Send + Sync {
    /// [`RecordStore::count_up_by`].
    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        n: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>>;
}

impl<S: RecordStore + ?Sized> Counter for S {
    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        n: u32,
        limit: u32,
        expires_at: Option<u64>,
        now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        RecordStore::count_up_by(self, key, n, limit, expires_at, now)
    }
}

/// What one environment's leases have done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeaseStats {
    /// Store writes that took units.
    pub takes: u64,
    /// Store writes refused (the window had no room).
    pub refused_takes: u64,
    /// Units taken in all.
    pub taken_units: u64,
    /// Units admitted in all.
    pub admitted_units: u64,
    /// Requests refused from memory (no store call).
    pub refused_from_memory: u64,
    /// Held units dropped with their key when the book was full.
    pub dropped_units: u64,
}

/// One environment's leases, by tenant and scope.
pub struct Leases {
    max_lease: u32,
    book: Mutex<HashMap<String, Arc<Entry>>>,
    takes: AtomicU64,
    refused_takes: AtomicU64,
    taken_units: AtomicU64,
    admitted_units: AtomicU64,
    refused_from_memory: AtomicU64,
    dropped_units: AtomicU64,
}

impl std::fmt::Debug for Leases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leases")
            .field("stats", &self.stats())
            .finish()
    }
}

struct Entry {
    /// The end of the window the lease was last used in (seconds), read without the lease's
    /// lock when the book is full.
    ends: AtomicU64,
    lease: tokio::sync::Mutex<Lease>,
}

#[derive(Default)]
struct Lease {
    /// The first second of the window `units` were taken in.
    window: u64,
    /// Units taken and not yet admitted.
    units: u32,
    /// The fewest units the window refused to a take (0: none refused): a request needing as
    /// many more is refused from memory until the window turns.
    refused_need: u32,
    /// The window's count after the last take.
    count: u32,
    /// The last take's size.
    batch: u32,
    /// When the last take happened (milliseconds; 0 before the first).
    taken_at_ms: u64,
    /// Units admitted since the last take.
    spent: u32,
}

impl Lease {
    /// The size of the next take: what [`LEASE_HORIZON_MS`] (or the rest of the window, if
    /// shorter) would spend at the rate observed since the last take, at most twice the last
    /// take and [`lease_cap`]; 1 for the first take and for a quiet key.
    fn next_batch(&self, cap: u32, now_ms: u64, window_end_ms: u64) -> u32 {
        if self.taken_at_ms == 0 || cap <= 1 {
            return 1;
        }
        let elapsed = now_ms.saturating_sub(self.taken_at_ms).max(1);
        let spent = u64::from(self.spent);
        let at_rate = |span_ms: u64| (spent * span_ms).div_ceil(elapsed);
        let wanted = at_rate(LEASE_HORIZON_MS).min(at_rate(window_end_ms.saturating_sub(now_ms)));
        let grown = u64::from(self.batch.max(1)) * 2;
        wanted.min(grown).min(u64::from(cap)).max(1) as u32
    }
}

impl Default for Leases {
    fn default() -> Leases {
        Leases::new(MAX_LEASE)
    }
}

impl Leases {
    /// Leases of at most `max_lease` units per take (1: one write per request, the window
    /// counted exactly; [`MAX_LEASE`] by default).
    pub fn new(max_lease: u32) -> Leases {
        Leases {
            max_lease: max_lease.max(1),
            book: Mutex::default(),
            takes: AtomicU64::default(),
            refused_takes: AtomicU64::default(),
            taken_units: AtomicU64::default(),
            admitted_units: AtomicU64::default(),
            refused_from_memory: AtomicU64::default(),
            dropped_units: AtomicU64::default(),
        }
    }

    /// The most units one take of a window of `limit` reserves ([`lease_cap`]).
    pub fn cap(&self, limit: u32) -> u32 {
        lease_cap(self.max_lease, limit)
    }

    /// What this environment's leases have done so far.
    pub fn stats(&self) -> LeaseStats {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        LeaseStats {
            takes: load(&self.takes),
            refused_takes: load(&self.refused_takes),
            taken_units: load(&self.taken_units),
            admitted_units: load(&self.admitted_units),
            refused_from_memory: load(&self.refused_from_memory),
            dropped_units: load(&self.dropped_units),
        }
    }

    /// Admits `units` (at least 1) of `scope` for `tenant` at `now_ms` from this environment's
    /// lease, taking a new one from `store` when it does not hold enough: all of them or none.
    pub async fn admit<C: Counter + ?Sized>(
        &self,
        store: &C,
        tenant: &str,
        scope: &str,
        rate: Rate,
        units: u32,
        now_ms: u64,
    ) -> Result<Admission, RateError> {
        let units = units.max(1);
        let now = now_ms / 1000;
        let (window, end) = (rate.window_start(now), rate.window_end(now));
        let limited = Admission::Limited {
            retry_after_secs: end.saturating_sub(now).max(1),
        };
        if rate.limit == 0 {
            return Ok(limited);
        }
        let entry = self.entry(tenant, scope, end, now);
        let mut lease = entry.lease.lock().await;
        entry.ends.store(end, Ordering::Relaxed);
        if lease.window != window {
            // A new window: what was held belongs to the old one (stranded there, expiring with
            // it); the observed rate carries over.
            lease.window = window;
            lease.units = 0;
            lease.refused_need = 0;
            lease.count = 0;
        }
        if lease.units < units {
            let need = units - lease.units;
            if lease.refused_need != 0 && need >= lease.refused_need {
                self.refused_from_memory.fetch_add(1, Ordering::Relaxed);
                return Ok(limited);
            }
            let cap = self.cap(rate.limit);
            let want = need.max(lease.next_batch(cap, now_ms, end.saturating_mul(1000)));
            let key = window_key(tenant, scope, rate, now);
            let mut taken = self.take(store, scope, &key, want, rate, end, now).await?;
            if taken.is_none() && want > need {
                taken = self.take(store, scope, &key, need, rate, end, now).await?;
            }
            let Some((took, count)) = taken else {
                lease.refused_need = need;
                return Ok(limited);
            };
            lease.units += took;
            lease.count = count;
            lease.batch = took;
            lease.taken_at_ms = now_ms;
            lease.spent = 0;
        }
        lease.units -= units;
        lease.spent = lease.spent.saturating_add(units);
        self.admitted_units
            .fetch_add(u64::from(units), Ordering::Relaxed);
        Ok(Admission::Allowed { count: lease.count })
    }

    /// One conditional write of `n` units: `Some((n, the window's new count))`, or `None` when
    /// they do not fit.
    #[allow(clippy::too_many_arguments)]
    async fn take<C: Counter + ?Sized>(
        &self,
        store: &C,
        scope: &str,
        key: &RecordKey,
        n: u32,
        rate: Rate,
        end: u64,
        now: u64,
    ) -> Result<Option<(u32, u32)>, RateError> {
        let counted = store
            .count_up_by(key, n, rate.limit, Some(end), now)
            .await
            .map_err(|source| RateError::Store {
                scope: scope.to_string(),
                source,
            })?;
        match counted {
            Some(count) => {
                self.takes.fetch_add(1, Ordering::Relaxed);
                self.taken_units.fetch_add(u64::from(n), Ordering::Relaxed);
                Ok(Some((n, count)))
            }
            None => {
                self.refused_takes.fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
        }
    }

    /// The entry of (`tenant`, `scope`), made when missing; when the book is full, keys whose
    /// window is over are dropped first, then every key.
    fn entry(&self, tenant: &str, scope: &str, end: u64, now: u64) -> Arc<Entry> {
        let mut name = String::with_capacity(scope.len() + 1 + tenant.len());
        name.push_str(scope);
        name.push('\n');
        name.push_str(tenant);
        let mut book = self
            .book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(entry) = book.get(&name) {
            return entry.clone();
        }
        if book.len() >= MAX_LEASES {
            let dropped = &self.dropped_units;
            let mut drop_held = |entry: &Arc<Entry>| {
                if let Ok(lease) = entry.lease.try_lock() {
                    dropped.fetch_add(u64::from(lease.units), Ordering::Relaxed);
                }
            };
            book.retain(|_, entry| {
                let live = entry.ends.load(Ordering::Relaxed) > now;
                if !live {
                    drop_held(entry);
                }
                live
            });
            if book.len() >= MAX_LEASES {
                book.values().for_each(&mut drop_held);
                book.clear();
            }
        }
        let entry = Arc::new(Entry {
            ends: AtomicU64::new(end),
            lease: tokio::sync::Mutex::new(Lease::default()),
        });
        book.insert(name, entry.clone());
        entry
    }
}

/// Window counters in memory with the store's contract (one atomic conditional count: all `n`
/// units under `limit`, or none) and a count of its writes: leases simulated at a scale no
/// machine holds (`make bench`), and tested without a store. Never expires a window.
#[derive(Debug, Default)]
pub struct MemoryCounter {
    counts: Mutex<HashMap<String, u32>>,
    writes: AtomicU64,
}

impl MemoryCounter {
    /// The count of the window `key`.
    pub fn count(&self, key: &RecordKey) -> u32 {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key.storage_key())
            .copied()
            .unwrap_or(0)
    }

    /// Writes so far (counted or refused).
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

impl Counter for MemoryCounter {
    fn count_up_by<'a>(
        &'a self,
        key: &'a RecordKey,
        n: u32,
        limit: u32,
        _expires_at: Option<u64>,
        _now: u64,
    ) -> StoreFuture<'a, Option<u32>> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = counts.entry(key.storage_key()).or_default();
        let counted = (u64::from(*count) + u64::from(n) <= u64::from(limit)).then(|| {
            *count += n;
            *count
        });
        Box::pin(std::future::ready(Ok(counted)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::StoreError;

    /// A [`MemoryCounter`] that can be switched off.
    #[derive(Default)]
    struct Memory {
        counter: MemoryCounter,
        down: std::sync::atomic::AtomicBool,
    }

    impl Memory {
        fn count(&self, key: &RecordKey) -> u32 {
            self.counter.count(key)
        }
    }

    impl Counter for Memory {
        fn count_up_by<'a>(
            &'a self,
            key: &'a RecordKey,
            n: u32,
            limit: u32,
            expires_at: Option<u64>,
            now: u64,
        ) -> StoreFuture<'a, Option<u32>> {
            if self.down.load(Ordering::SeqCst) {
                return Box::pin(std::future::ready(Err(StoreError::Unavailable(
                    "the store is down".into(),
                ))));
            }
            self.counter.count_up_by(key, n, limit, expires_at, now)
        }
    }

    const T0: u64 = 1_800_000_000_000;
    const PER_MINUTE: Rate = Rate {
        limit: 1_200,
        window_secs: 60,
    };

    #[tokio::test]
    async fn a_quiet_tenant_takes_one_unit_per_request() {
        let (store, leases) = (Memory::default(), Leases::default());
        for call in 0..5 {
            let admitted = leases
                .admit(&store, "acme", "tenant", PER_MINUTE, 1, T0 + call * 5_000)
                .await
                .unwrap();
            assert!(matches!(admitted, Admission::Allowed { .. }));
        }
        assert_eq!(store.counter.writes(), 5, "one write per request");
        let key = window_key("acme", "tenant", PER_MINUTE, T0 / 1000);
        assert_eq!(
            store.count(&key),
            5,
            "nothing held beyond what was admitted"
        );
    }

    #[tokio::test]
    async fn a_busy_tenant_writes_once_per_lease_and_never_more_than_the_cap() {
        let (store, leases) = (Memory::default(), Leases::default());
        // 1,000 requests a second for 1 s.
        for call in 0..1_000 {
            leases
                .admit(&store, "acme", "tenant", PER_MINUTE, 1, T0 + call)
                .await
                .unwrap();
        }
        let writes = store.counter.writes();
        assert!(
            writes <= 1_000 / 32 + 8,
            "{writes} writes for 1,000 requests"
        );
        let key = window_key("acme", "tenant", PER_MINUTE, T0 / 1000);
        let held = store.count(&key) - 1_000;
        assert!(
            held < leases.cap(PER_MINUTE.limit),
            "{held} units held past what was admitted"
        );
        assert_eq!(leases.cap(PER_MINUTE.limit), 37);
    }

    #[tokio::test]
    async fn a_spent_window_is_refused_from_memory_until_it_turns() {
        let rate = Rate {
            limit: 64,
            window_secs: 60,
        };
        let (store, leases) = (Memory::default(), Leases::default());
        let (mut admitted, mut writes_at_refusal) = (0, None);
        for call in 0..200 {
            match leases
                .admit(&store, "acme", "tenant", rate, 1, T0 + call)
                .await
                .unwrap()
            {
                Admission::Allowed { .. } => admitted += 1,
                Admission::Limited { .. } => {
                    let writes = store.counter.writes();
                    writes_at_refusal.get_or_insert(writes);
                }
            }
        }
        assert_eq!(admitted, 64, "one environment admits the whole window");
        assert_eq!(
            Some(store.counter.writes()),
            writes_at_refusal,
            "after the first refusal, no write"
        );
        let stats = leases.stats();
        assert_eq!(stats.refused_from_memory, 200 - 64 - 1);
        assert_eq!(store.counter.writes(), stats.takes + stats.refused_takes);
        // The next window admits again.
        let next = leases
            .admit(&store, "acme", "tenant", rate, 1, T0 + 60_000)
            .await
            .unwrap();
        assert!(matches!(next, Admission::Allowed { .. }));
    }

    #[tokio::test]
    async fn a_window_with_less_room_than_a_lease_still_admits_one_by_one() {
        let rate = Rate {
            limit: 100,
            window_secs: 60,
        };
        let store = Memory::default();
        let key = window_key("acme", "tenant", rate, T0 / 1000);
        // Another environment took all but 2 units.
        store.count_up_by(&key, 98, 100, None, 0).await.unwrap();
        let leases = Leases::default();
        // Warm the rate up first in an earlier window, so the next take wants a lease.
        for call in 0..50 {
            leases
                .admit(&store, "acme", "tenant", rate, 1, T0 - 60_000 + call)
                .await
                .unwrap();
        }
        let mut admitted = 0;
        for call in 0..10 {
            if let Admission::Allowed { .. } = leases
                .admit(&store, "acme", "tenant", rate, 1, T0 + call)
                .await
                .unwrap()
            {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 2);
        assert_eq!(store.count(&key), 100);
    }

    #[tokio::test]
    async fn a_failing_store_admits_nothing_and_keeps_the_lease_as_it_was() {
        let (store, leases) = (Memory::default(), Leases::default());
        store.down.store(true, Ordering::SeqCst);
        let error = leases
            .admit(&store, "acme", "tool:greet", PER_MINUTE, 1, T0)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("tool:greet"), "{error}");
        assert_eq!(leases.stats().admitted_units, 0);
        store.down.store(false, Ordering::SeqCst);
        assert!(matches!(
            leases
                .admit(&store, "acme", "tool:greet", PER_MINUTE, 1, T0)
                .await
                .unwrap(),
            Admission::Allowed { count: 1 }
        ));
    }

    #[tokio::test]
    async fn several_units_are_admitted_whole_or_not_at_all() {
        let rate = Rate {
            limit: 5,
            window_secs: 60,
        };
        let (store, leases) = (Memory::default(), Leases::default());
        assert!(matches!(
            leases
                .admit(&store, "acme", "tenant", rate, 3, T0)
                .await
                .unwrap(),
            Admission::Allowed { .. }
        ));
        assert!(matches!(
            leases
                .admit(&store, "acme", "tenant", rate, 3, T0)
                .await
                .unwrap(),
            Admission::Limited {
                retry_after_secs: 60
            }
        ));
        assert_eq!(leases.stats().admitted_units, 3);
        // Smaller than the refused request: the store is asked, and its 2 units fit.
        assert!(matches!(
            leases
                .admit(&store, "acme", "tenant", rate, 2, T0)
                .await
                .unwrap(),
            Admission::Allowed { count: 5 }
        ));
    }

    #[tokio::test]
    async fn leases_of_one_unit_write_once_per_request_and_strand_nothing() {
        let (store, leases) = (Memory::default(), Leases::new(1));
        for call in 0..500 {
            leases
                .admit(&store, "acme", "tenant", PER_MINUTE, 1, T0 + call)
                .await
                .unwrap();
        }
        assert_eq!(store.counter.writes(), 500);
        let key = window_key("acme", "tenant", PER_MINUTE, T0 / 1000);
        assert_eq!(store.count(&key), 500);
    }

    #[tokio::test]
    async fn a_full_book_drops_keys_of_windows_that_are_over_first() {
        let (store, leases) = (Memory::default(), Leases::default());
        for tenant in 0..MAX_LEASES {
            leases
                .admit(&store, &format!("t{tenant}"), "tenant", PER_MINUTE, 1, T0)
                .await
                .unwrap();
        }
        leases
            .admit(&store, "late", "tenant", PER_MINUTE, 1, T0 + 60_000)
            .await
            .unwrap();
        let book = leases.book.lock().unwrap();
        assert_eq!(book.len(), 1, "every key of the old window was dropped");
    }
}
