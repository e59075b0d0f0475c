//! 2025-11-25 `notifications/cancelled {requestId, reason?}`: the requests of a session that run
//! in this process, findable by their id while they run, so that the notification cancels the
//! one it names.
//!
//! Cancellation (2025-11-25, "Behavior Requirements"): receivers SHOULD stop processing the
//! cancelled request, free its resources and not send a response for it; they MAY ignore a
//! notification whose request is unknown or already finished. Here a cancelled request's handler
//! is dropped at its next await and its stream ends without a response (a request answered with
//! plain JSON gets an empty SSE body: the POST needs an answer, the request none).
//!
//! Invariants:
//! - An entry is keyed by the verified caller (tenant and subject), the session id and the
//!   request id (its JSON text, so `"1"` and `1` stay apart). A notification reaches only the
//!   requests of its own caller in its own session: another principal naming the same session
//!   and id finds nothing, exactly as an unknown id.
//! - An entry exists only while its request runs: [`Registration`] removes it when the request's
//!   work ends (completed, failed, dropped or cancelled). A finished or unknown id is ignored.
//! - Bounded: at most [`MAX_IN_FLIGHT`] entries per process. A request that finds the registry
//!   full, or its id already taken in its session (a client that reuses an id while the first
//!   still runs), runs uncancellable by notification (its stream still cancels it when closed).
//! - The lookup reads nothing from the store and writes nothing: the notification costs one map
//!   lookup, is answered 202 whatever it names, and says nothing about which ids exist.
//!
//! Where it reaches: only a request running in this process. The local server runs every
//! request of a session in one process, so it always does. On Lambda each invocation is its own
//! process (one request at a time per execution environment): the notification arrives in
//! another invocation than the request it names, finds nothing there and is ignored. Nothing is
//! stored to bridge them: a record read per notification would make every cancellation cost a
//! store read for a request that, on a buffered front door, cannot be stopped anyway. A
//! 2025-11-25 client on Lambda stops a call by closing its stream (where the front door streams)
//! or gets its answer and ignores it, as the spec tells the sender to.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::auth::Principal;

/// The most requests one process keeps findable for `notifications/cancelled` at once.
pub const MAX_IN_FLIGHT: usize = 1024;

/// (tenant, subject, session id, request id as JSON text).
type Key = (String, String, String, String);

/// The cancellable 2025-11-25 requests running in this process.
#[derive(Clone, Default)]
pub struct InFlight {
    entries: Arc<Mutex<HashMap<Key, (u64, CancellationToken)>>>,
    next: Arc<AtomicU64>,
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFlight")
            .field("entries", &self.len())
            .finish()
    }
}

impl InFlight {
    fn key(principal: &Principal, session: &str, request_id: &Value) -> Key {
        (
            principal.tenant.clone(),
            principal.subject.clone(),
            session.to_string(),
            request_id.to_string(),
        )
    }

    /// Makes request `request_id` of `session` cancellable through `cancel` until the returned
    /// registration is dropped; `None` (not findable) when the registry is full or the id is
    /// already running in that session.
    pub(crate) fn register(
        &self,
        principal: &Principal,
        session: &str,
        request_id: &Value,
        cancel: &CancellationToken,
    ) -> Option<Registration> {
        let key = Self::key(principal, session, request_id);
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= MAX_IN_FLIGHT {
            tracing::debug!("too many requests in flight: this one cannot be cancelled by id");
            return None;
        }
        if entries.contains_key(&key) {
            tracing::debug!("a request of this id is already running in the session");
            return None;
        }
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        entries.insert(key.clone(), (serial, cancel.clone()));
        Some(Registration {
            in_flight: self.clone(),
            key,
            serial,
        })
    }

    /// Cancels the caller's request `request_id` of `session`, if it runs here; true if it did.
    pub(crate) fn cancel(&self, principal: &Principal, session: &str, request_id: &Value) -> bool {
        let key = Self::key(principal, session, request_id);
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        match entries.get(&key) {
            Some((_, cancel)) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// How many requests are findable now.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// True when no request is findable.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A request's entry in [`InFlight`], removed when this is dropped.
pub struct Registration {
    in_flight: InFlight,
    key: Key,
    serial: u64,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("serial", &self.serial)
            .finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut entries = self
            .in_flight
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if entries
            .get(&self.key)
            .is_some_and(|(s, _)| *s == self.serial)
        {
            entries.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn alice() -> Principal {
        Principal::new("t1", "alice", Vec::<String>::new())
    }

    #[test]
    fn a_registered_request_is_cancelled_by_its_id_and_forgotten_when_it_ends() {
        let in_flight = InFlight::default();
        let token = CancellationToken::new();
        let registration = in_flight.register(&alice(), "s1", &json!(7), &token);
        assert!(registration.is_some());
        assert!(
            !in_flight.cancel(&alice(), "s1", &json!("7")),
            "\"7\" is not 7"
        );
        assert!(
            !in_flight.cancel(&alice(), "s2", &json!(7)),
            "another session"
        );
        assert!(!token.is_cancelled());
        assert!(in_flight.cancel(&alice(), "s1", &json!(7)));
        assert!(token.is_cancelled());
        drop(registration);
        assert!(in_flight.is_empty());
        assert!(!in_flight.cancel(&alice(), "s1", &json!(7)), "finished");
    }

    #[test]
    fn another_principal_cannot_cancel_and_a_reused_id_is_not_taken_over() {
        let in_flight = InFlight::default();
        let first = CancellationToken::new();
        let _kept = in_flight.register(&alice(), "s1", &json!(1), &first);
        let second = CancellationToken::new();
        let reused = in_flight.register(&alice(), "s1", &json!(1), &second);
        assert!(reused.is_none());
        drop(reused);
        let mallory = Principal::new("t1", "mallory", Vec::<String>::new());
        assert!(!in_flight.cancel(&mallory, "s1", &json!(1)));
        assert!(in_flight.cancel(&alice(), "s1", &json!(1)));
        assert!(first.is_cancelled() && !second.is_cancelled());
    }

    #[test]
    fn the_registry_is_bounded() {
        let in_flight = InFlight::default();
        let token = CancellationToken::new();
        let held: Vec<_> = (0..MAX_IN_FLIGHT)
            .map(|i| in_flight.register(&alice(), "s", &json!(i), &token))
            .collect();
        assert!(held.iter().all(Option::is_some));
        assert!(
            in_flight
                .register(&alice(), "s", &json!("one more"), &token)
                .is_none()
        );
        drop(held);
        assert!(in_flight.is_empty());
    }
}
