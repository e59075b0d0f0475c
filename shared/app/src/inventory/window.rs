//! Policy over a window, not per request: the units an item was changed by without a person
//! are summed over the tenant's recent policy-authorized changes to it, so splitting a large
//! change into small ones needs the same person as making it at once (the salami case).
//!
//! Invariants: one record per (tenant, item) holds the policy-authorized changes of the last
//! [`WINDOW_SECS`]; a change is authorized by policy only in the same conditional transaction
//! that adds it to that record, so two proposals racing on one item cannot both fit under the
//! threshold. Changes a person approved do not count (a person saw them). The record holds at
//! most [`MAX_CHANGES`] entries: past that, every change needs a person until the window moves.

use relevo_state::{Owner, Record, RecordKey, Write};
use serde::{Deserialize, Serialize};

use super::InventoryError;
use super::policy::PERSON_THRESHOLD;

/// How far back policy-authorized changes count.
pub const WINDOW_SECS: u64 = 24 * 3600;
/// Policy-authorized changes one item's window holds.
pub const MAX_CHANGES: usize = 200;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Change {
    at: u64,
    units: u64,
    operation: String,
}

/// An item's window, as read (with the revision a write must match).
pub struct Window {
    key: RecordKey,
    revision: Option<u64>,
    changes: Vec<Change>,
}

pub fn window_key(tenant: &str, warehouse: &str, sku: &str) -> RecordKey {
    RecordKey::new(
        Owner::tenant(tenant),
        "policy-window",
        &format!("{warehouse}/{sku}"),
    )
}

impl Window {
    pub fn from_record(
        key: RecordKey,
        record: Option<&Record>,
        now: u64,
    ) -> Result<Window, InventoryError> {
        let changes: Vec<Change> = match record {
            None => Vec::new(),
            Some(record) => serde_json::from_value(record.body["changes"].clone())
                .map_err(|e| InventoryError::Internal(format!("unreadable policy window: {e}")))?,
        };
        let changes = changes
            .into_iter()
            .filter(|c| c.at + WINDOW_SECS > now)
            .collect();
        Ok(Window {
            key,
            revision: record.map(|r| r.revision),
            changes,
        })
    }

    /// Units changed without a person in the window.
    pub fn recent_units(&self) -> u64 {
        self.changes.iter().map(|c| c.units).sum()
    }

    /// Why a change of `units` more would need a person, if it would.
    pub fn needs_person(&self, units: u64) -> Option<String> {
        let recent = self.recent_units();
        if self.changes.len() >= MAX_CHANGES {
            return Some(format!(
                "{MAX_CHANGES} changes without a person in the last 24 h"
            ));
        }
        (units <= PERSON_THRESHOLD && recent + units > PERSON_THRESHOLD).then(|| {
            format!(
                "together with {recent} units changed without a person in the last 24 h, more than {PERSON_THRESHOLD} units"
            )
        })
    }

    /// The conditional write that adds a policy-authorized change of `units`.
    pub fn add(&self, units: u64, operation: &str, now: u64) -> Write {
        let mut changes = self.changes.clone();
        changes.push(Change {
            at: now,
            units,
            operation: operation.into(),
        });
        let body = serde_json::json!({ "changes": changes });
        match self.revision {
            Some(revision) => Write::Update {
                key: self.key.clone(),
                expected_revision: revision,
                body,
            },
            None => Write::Create {
                key: self.key.clone(),
                body,
                expires_at: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(units: &[(u64, u64)]) -> Window {
        let changes = units
            .iter()
            .map(|(at, units)| Change {
                at: *at,
                units: *units,
                operation: "op".into(),
            })
            .collect();
        Window {
            key: window_key("acme", "main", "MUG"),
            revision: Some(1),
            changes,
        }
    }

    #[test]
    fn small_changes_add_up_to_the_threshold_within_the_window_only() {
        assert_eq!(window(&[]).needs_person(20), None);
        assert!(
            window(&[(100, 20)]).needs_person(1).is_some(),
            "the second slice needs a person"
        );
        assert_eq!(
            window(&[(100, 5), (200, 5)]).needs_person(10),
            None,
            "20 in all is within"
        );
        let record = Record {
            key: window_key("acme", "main", "MUG"),
            revision: 3,
            body: serde_json::json!({ "changes": [{ "at": 100, "units": 20, "operation": "a" }] }),
            expires_at: None,
        };
        let later =
            Window::from_record(record.key.clone(), Some(&record), 100 + WINDOW_SECS).unwrap();
        assert_eq!(
            later.needs_person(20),
            None,
            "a day later the first change no longer counts"
        );
    }

    #[test]
    fn a_large_change_is_the_per_request_rule_s_and_not_counted_twice() {
        assert_eq!(
            window(&[(100, 20)]).needs_person(50),
            None,
            "over the threshold alone: the per-request rule says so"
        );
    }
}
