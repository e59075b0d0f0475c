//! The per-person desk: the operations one principal proposed, in the order proposed, which
//! `inventory_apply` walks.
//!
//! Invariants: at most [`MAX_DESK`] *open* operations (neither finished nor expired) per
//! principal; a finished operation stays listed for [`REPORT_WINDOW_SECS`] so that a repeated
//! `inventory_apply` (its first answer lost) reports the same outcome and receipt, then leaves; at
//! most [`MAX_DESK`] finished entries are kept, so the record is bounded whatever the caller does.
//! A finished mark is bookkeeping, never a decision: the operation record is the truth, and a
//! full desk is checked against it before a proposal is refused.
//!
//! The record expires with its last entry ([`Desk::expires_at`]), the moment [`Desk::prune`]
//! would leave it empty anyway: a principal who stops proposing leaves no desk behind. Every
//! write of the desk sets that expiry ([`Desk::write`]), in the same transaction as the change.

use relevo_state::{Record, RecordKey, Write};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::InventoryError;

/// Operations one principal may have open on its desk at once.
pub const MAX_DESK: usize = 100;
/// How long a finished operation stays on the desk (and in `inventory_apply`'s report).
pub const REPORT_WINDOW_SECS: u64 = 3600;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Desk {
    operations: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    id: String,
    expires_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finished_at: Option<u64>,
}

impl Entry {
    fn is_open(&self, now: u64) -> bool {
        self.finished_at.is_none() && self.expires_at > now
    }
}

impl Desk {
    pub fn from_record(record: Option<&Record>) -> Result<Desk, InventoryError> {
        match record {
            None => Ok(Desk::default()),
            Some(record) => serde_json::from_value(record.body.clone())
                .map_err(|e| InventoryError::Internal(format!("unreadable proposal desk: {e}"))),
        }
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a desk serializes")
    }

    /// Every listed operation id, in the order proposed.
    pub fn ids(&self) -> Vec<String> {
        self.operations.iter().map(|e| e.id.clone()).collect()
    }

    /// The ids of open operations (candidates for a finished mark).
    pub fn open_ids(&self, now: u64) -> Vec<String> {
        self.operations
            .iter()
            .filter(|e| e.is_open(now))
            .map(|e| e.id.clone())
            .collect()
    }

    pub fn open_count(&self, now: u64) -> usize {
        self.operations.iter().filter(|e| e.is_open(now)).count()
    }

    pub fn push(&mut self, id: &str, expires_at: u64) {
        self.operations.push(Entry {
            id: id.into(),
            expires_at,
            finished_at: None,
        });
    }

    /// Marks `id` finished at `now`; false when it was not listed or already marked.
    pub fn mark_finished(&mut self, id: &str, now: u64) -> bool {
        match self
            .operations
            .iter_mut()
            .find(|e| e.id == id && e.finished_at.is_none())
        {
            Some(entry) => {
                entry.finished_at = Some(now);
                true
            }
            None => false,
        }
    }

    /// When the last entry leaves: the latest of each open entry's own expiry and each finished
    /// entry's mark + [`REPORT_WINDOW_SECS`]; `None` for an empty desk.
    pub fn expires_at(&self) -> Option<u64> {
        self.operations
            .iter()
            .map(|e| {
                e.finished_at
                    .map_or(e.expires_at, |at| at + REPORT_WINDOW_SECS)
            })
            .max()
    }

    /// The write that stores this desk under `key` over `current` (the record it was read from,
    /// if any), expiring with its last entry; an empty desk expires at `now`.
    pub fn write(&self, key: RecordKey, current: Option<&Record>, now: u64) -> Write {
        let expires_at = Some(self.expires_at().unwrap_or(now));
        match current {
            Some(record) => Write::UpdateExpiring {
                key,
                expected_revision: record.revision,
                body: self.to_value(),
                expires_at,
            },
            None => Write::Create {
                key,
                body: self.to_value(),
                expires_at,
            },
        }
    }

    /// Drops expired open entries, finished entries past the report window, and the oldest
    /// finished entries beyond [`MAX_DESK`].
    pub fn prune(&mut self, now: u64) {
        self.operations.retain(|e| match e.finished_at {
            Some(at) => at + REPORT_WINDOW_SECS > now,
            None => e.expires_at > now,
        });
        let finished = self
            .operations
            .iter()
            .filter(|e| e.finished_at.is_some())
            .count();
        let mut excess = finished.saturating_sub(MAX_DESK);
        self.operations.retain(|e| {
            if excess > 0 && e.finished_at.is_some() {
                excess -= 1;
                return false;
            }
            true
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_operations_do_not_count_against_the_open_limit_and_leave_after_the_window() {
        let mut desk = Desk::default();
        for i in 0..MAX_DESK {
            desk.push(&format!("op{i}"), 10_000);
        }
        assert_eq!(desk.open_count(0), MAX_DESK);
        assert!(desk.mark_finished("op0", 100));
        assert!(
            !desk.mark_finished("op0", 200),
            "a second mark changes nothing"
        );
        assert_eq!(desk.open_count(100), MAX_DESK - 1);
        desk.prune(100 + REPORT_WINDOW_SECS - 1);
        assert!(
            desk.ids().contains(&"op0".to_string()),
            "still reported inside the window"
        );
        desk.prune(100 + REPORT_WINDOW_SECS);
        assert!(
            !desk.ids().contains(&"op0".to_string()),
            "gone after the window"
        );
    }

    #[test]
    fn the_desk_stays_bounded_whatever_the_caller_finishes() {
        let mut desk = Desk::default();
        for i in 0..3 * MAX_DESK {
            desk.push(&format!("op{i}"), 10_000);
            desk.mark_finished(&format!("op{i}"), 5);
            desk.prune(5);
        }
        assert_eq!(desk.ids().len(), MAX_DESK);
        assert_eq!(
            desk.ids()[0],
            format!("op{}", 2 * MAX_DESK),
            "the oldest finished leave first"
        );
    }

    #[test]
    fn the_desk_expires_when_its_last_entry_would_leave() {
        let mut desk = Desk::default();
        assert_eq!(desk.expires_at(), None);
        desk.push("long", 10_000);
        desk.push("short", 500);
        assert_eq!(
            desk.expires_at(),
            Some(10_000),
            "the latest open entry's own expiry"
        );
        desk.mark_finished("long", 100);
        assert_eq!(
            desk.expires_at(),
            Some(100 + REPORT_WINDOW_SECS),
            "a finished one's mark plus the window"
        );
        desk.mark_finished("short", 200);
        assert_eq!(
            desk.expires_at(),
            Some(200 + REPORT_WINDOW_SECS),
            "whichever is later"
        );
        desk.prune(200 + REPORT_WINDOW_SECS);
        assert_eq!(
            desk.expires_at(),
            None,
            "prune empties it at that very moment"
        );
    }

    #[test]
    fn expired_open_entries_leave() {
        let mut desk = Desk::default();
        desk.push("late", 50);
        desk.prune(50);
        assert!(desk.ids().is_empty());
    }
}
