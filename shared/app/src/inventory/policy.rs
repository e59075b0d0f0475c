//! The rules, in code beside the effect they guard. Changing any rule means a new
//! [`POLICY_VERSION`], which invalidates every authorization given under the old one.

use std::collections::BTreeSet;

use relevo_protocol::Principal;

/// 2026-12-01: small changes without a person add up over a day (`window`).
pub const POLICY_VERSION: &str = "inventory-policy-2026-12-01";
/// Changes of more units than this need a person.
pub const PERSON_THRESHOLD: u64 = 20;
/// The warehouse an agent may change without a person; any other needs one.
pub const HOME_WAREHOUSE: &str = "main";
pub const READ: &str = "inventory:read";
pub const WRITE: &str = "inventory:write";
pub const APPROVE: &str = "inventory:approve";
/// What this service itself is granted: a token cannot give it more.
pub const SERVICE_SCOPES: &[&str] = &[READ, WRITE];
/// A plan may change at most this share of its items unless the caller tolerates more.
pub const DEFAULT_TOLERATED_PERCENT: u64 = 50;

/// The scopes the caller really has: the user's, the service's and (when the task narrows
/// them) the task's, intersected.
pub fn effective_scopes(user: &Principal, task: Option<&[String]>) -> BTreeSet<String> {
    SERVICE_SCOPES
        .iter()
        .map(|s| s.to_string())
        .filter(|s| user.unrestricted || user.scopes.contains(s))
        .filter(|s| task.is_none_or(|task| task.contains(s)))
        .collect()
}

/// Why a person must decide `from → to` in `warehouse` (empty: the policy authorizes it).
pub fn needs_person(warehouse: &str, from: u64, to: u64) -> Vec<String> {
    let mut reasons = Vec::new();
    if from.abs_diff(to) > PERSON_THRESHOLD {
        reasons.push(format!(
            "changes more than {PERSON_THRESHOLD} units ({from} → {to})"
        ));
    }
    if warehouse != HOME_WAREHOUSE {
        reasons.push(format!(
            "warehouse {warehouse} is not the home warehouse {HOME_WAREHOUSE}"
        ));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_changes_and_other_warehouses_need_a_person() {
        assert!(
            needs_person("main", 10, 30).is_empty(),
            "20 units is within the threshold"
        );
        assert_eq!(needs_person("main", 10, 31).len(), 1);
        assert_eq!(needs_person("north", 10, 11).len(), 1, "another warehouse");
        assert_eq!(needs_person("north", 0, 100).len(), 2);
    }

    #[test]
    fn permissions_are_the_intersection_of_user_service_and_task_scopes() {
        let user = Principal::new("acme", "agent", [READ, WRITE, APPROVE, "notes:write"]);
        let all: BTreeSet<String> = [READ, WRITE].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            effective_scopes(&user, None),
            all,
            "the service never grants approve or other apps' scopes"
        );
        let task = vec![READ.to_string(), APPROVE.to_string()];
        assert_eq!(
            effective_scopes(&user, Some(&task)),
            BTreeSet::from([READ.to_string()]),
            "a task narrows"
        );
        let reader = Principal::new("acme", "r", [READ]);
        assert!(
            !effective_scopes(&reader, Some(&[WRITE.to_string()])).contains(WRITE),
            "a task cannot widen"
        );
    }
}
