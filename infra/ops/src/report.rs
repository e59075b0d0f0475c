//! `ledger report`: the figures a person needs before letting an agent write on its own, read
//! from the operations' own histories (every transition is recorded with its time and actor).
//!
//! - **By state**: how many operations are in each ledger state.
//! - **Attempts**: per operation, how many times it entered `executing`; the distribution, the
//!   maximum and the mean over operations that executed at least once. More than one attempt
//!   means an execution was interrupted and run again.
//! - **Rejected**: rejected operations by cause: `conflicting write` (the executor's conditional
//!   write on the item was refused because its version moved: the store's refused conditional
//!   writes, as the ledger records them), `authorization no longer valid` (expired, or the policy
//!   changed), `declined by a person`. The store itself keeps no log of refused conditional
//!   writes beyond these.
//! - **Uncertain**: operations in `unknown` (the effect may or may not have happened) with how long
//!   they have been there, and operations still `executing` whose executor's lease ran out (the
//!   next settle moves them to `unknown`).
//! - **Reconciliation**: for every stay in `unknown` that ended, the time from entering `unknown`
//!   to leaving it (count, median, 90th percentile, maximum), and where the operations went.

use std::collections::BTreeMap;

use relevo_state::ledger::{OpStatus, Operation};
use serde_json::{Value, json};

use crate::output::{Output, duration, table};

pub const ALL_STATES: [OpStatus; 6] = [
    OpStatus::Proposed,
    OpStatus::Authorized,
    OpStatus::Executing,
    OpStatus::Succeeded,
    OpStatus::Rejected,
    OpStatus::Unknown,
];

/// How many times the operation entered `executing`, from its history.
pub fn attempts(operation: &Operation) -> u32 {
    operation
        .history
        .iter()
        .filter(|t| t.status == OpStatus::Executing)
        .count() as u32
}

/// When the operation last entered its current state.
pub fn in_state_since(operation: &Operation) -> u64 {
    operation
        .history
        .iter()
        .rev()
        .find(|t| t.status == operation.status)
        .map_or(operation.proposal.created_at, |t| t.at)
}

/// Every finished stay in `unknown`: (seconds it lasted, the state it left to).
pub fn reconciliations(operation: &Operation) -> Vec<(u64, OpStatus)> {
    operation
        .history
        .windows(2)
        .filter(|pair| pair[0].status == OpStatus::Unknown && pair[1].status != OpStatus::Unknown)
        .map(|pair| (pair[1].at.saturating_sub(pair[0].at), pair[1].status))
        .collect()
}

/// Why a rejected operation was rejected, from who rejected it.
pub fn rejection_cause(operation: &Operation) -> &'static str {
    let by = operation
        .history
        .iter()
        .rev()
        .find(|t| t.status == OpStatus::Rejected)
        .map(|t| t.by.as_str());
    match by {
        Some("executor") => "conflicting write",
        Some("policy") => "authorization no longer valid",
        _ => "declined by a person",
    }
}

/// The nearest-rank percentile `p` (0..=100) of sorted `values`.
fn percentile(sorted: &[u64], p: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// The report over `operations` at `now`.
pub fn ledger_report(operations: &[Operation], now: u64, truncated: bool) -> Output {
    let mut by_state: BTreeMap<&str, usize> = ALL_STATES.iter().map(|s| (s.as_str(), 0)).collect();
    let mut distribution: BTreeMap<u32, usize> = BTreeMap::new();
    let mut rejected: BTreeMap<&str, usize> = BTreeMap::new();
    let mut uncertain = Vec::new();
    let mut stays = Vec::new();
    let mut resolved_to: BTreeMap<&str, usize> = BTreeMap::new();
    for operation in operations {
        *by_state.entry(operation.status.as_str()).or_default() += 1;
        *distribution.entry(attempts(operation)).or_default() += 1;
        if operation.status == OpStatus::Rejected {
            *rejected.entry(rejection_cause(operation)).or_default() += 1;
        }
        let lease_expired = operation.status == OpStatus::Executing
            && operation
                .lease
                .as_ref()
                .is_none_or(|lease| lease.expires_at <= now);
        if operation.status == OpStatus::Unknown || lease_expired {
            let since = in_state_since(operation);
            uncertain.push((operation, since, now.saturating_sub(since)));
        }
        for (secs, to) in reconciliations(operation) {
            stays.push(secs);
            *resolved_to.entry(to.as_str()).or_default() += 1;
        }
    }
    uncertain.sort_by_key(|(_, since, _)| *since);
    stays.sort_unstable();
    let executed: Vec<u32> = operations.iter().map(attempts).filter(|a| *a > 0).collect();
    let max_attempts = executed.iter().copied().max().unwrap_or(0);
    let mean_attempts = if executed.is_empty() {
        0.0
    } else {
        executed.iter().map(|a| f64::from(*a)).sum::<f64>() / executed.len() as f64
    };
    let (p50, p90, max) = (
        percentile(&stays, 50),
        percentile(&stays, 90),
        stays.last().copied().unwrap_or(0),
    );

    let json = json!({
        "operations": operations.len(),
        "truncated": truncated,
        "byState": by_state,
        "attempts": {
            "distribution": distribution.iter().map(|(a, n)| (a.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "executed": executed.len(),
            "max": max_attempts,
            "mean": (mean_attempts * 100.0).round() / 100.0,
        },
        "rejected": {
            "total": rejected.values().sum::<usize>(),
            "byCause": rejected,
        },
        "uncertain": uncertain.iter().map(|(op, since, age)| json!({
            "operationId": op.proposal.operation_id,
            "tenant": op.proposal.tenant,
            "status": op.status.as_str(),
            "since": since,
            "ageSecs": age,
            "leaseExpired": op.status == OpStatus::Executing,
            "note": op.history.last().and_then(|t| t.note.clone()),
        })).collect::<Vec<Value>>(),
        "reconciliation": {
            "resolved": stays.len(),
            "p50Secs": p50,
            "p90Secs": p90,
            "maxSecs": max,
            "resolvedTo": resolved_to,
        },
    });

    let mut text = format!(
        "Ledger: {} operations{}\n\n",
        operations.len(),
        if truncated {
            " (listing cut at --limit)"
        } else {
            ""
        }
    );
    text.push_str("By state\n");
    let state_rows: Vec<Vec<String>> = ALL_STATES
        .iter()
        .map(|s| {
            vec![
                s.as_str().to_string(),
                by_state.get(s.as_str()).copied().unwrap_or(0).to_string(),
            ]
        })
        .collect();
    text.push_str(&table(&["state", "count"], &state_rows));
    text.push_str(&format!(
        "\nAttempts per operation (times it entered executing): max {max_attempts}, mean {mean_attempts:.2} over {} executed\n",
        executed.len()
    ));
    text.push_str(&table(
        &["attempts", "operations"],
        &distribution
            .iter()
            .map(|(a, n)| vec![a.to_string(), n.to_string()])
            .collect::<Vec<_>>(),
    ));
    text.push_str(&format!(
        "\nRejected: {}\n",
        rejected.values().sum::<usize>()
    ));
    text.push_str(&table(
        &["cause", "count"],
        &rejected
            .iter()
            .map(|(c, n)| vec![c.to_string(), n.to_string()])
            .collect::<Vec<_>>(),
    ));
    text.push_str(&format!(
        "\nUncertain: {} (unknown, or executing past the executor's lease)\n",
        uncertain.len()
    ));
    text.push_str(&table(
        &["operation", "tenant", "state", "for"],
        &uncertain
            .iter()
            .map(|(op, _, age)| {
                let state = if op.status == OpStatus::Executing {
                    "executing (lease expired)"
                } else {
                    op.status.as_str()
                };
                vec![
                    op.proposal.operation_id.clone(),
                    op.proposal.tenant.clone(),
                    state.to_string(),
                    duration(*age),
                ]
            })
            .collect::<Vec<_>>(),
    ));
    text.push_str(&format!(
        "\nReconciliation (time from entering unknown to leaving it): {} resolved",
        stays.len()
    ));
    if stays.is_empty() {
        text.push('\n');
    } else {
        let to: Vec<String> = resolved_to
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect();
        text.push_str(&format!(
            ", p50 {}, p90 {}, max {}; to {}\n",
            duration(p50),
            duration(p90),
            duration(max),
            to.join(", ")
        ));
    }
    Output { json, text }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use relevo_state::ledger::Proposal;

    fn operation(id: &str, path: &[(OpStatus, u64, &str)]) -> Operation {
        let proposal = Proposal {
            operation_id: id.into(),
            tenant: "acme".into(),
            proposer: "agent".into(),
            tool: "inventory_propose".into(),
            resource: "stock/main/MUG".into(),
            arguments: json!({}),
            expected_version: 1,
            policy_version: "p1".into(),
            created_at: 0,
            expires_at: 1_000_000,
        };
        let mut op = Operation::new(proposal, vec![], "auth".into());
        for (status, at, by) in path {
            op = op.advanced(*status, *at, by, None).unwrap();
        }
        op
    }

    #[test]
    fn attempts_and_reconciliation_times_come_from_the_history() {
        use OpStatus::*;
        let retried = operation(
            "a",
            &[
                (Executing, 10, "agent"),
                (Unknown, 20, "executor"),
                (Authorized, 80, "reconciler"),
                (Executing, 90, "agent"),
                (Succeeded, 95, "executor"),
            ],
        );
        assert_eq!(attempts(&retried), 2);
        assert_eq!(reconciliations(&retried), vec![(60, Authorized)]);
        let conflict = operation("b", &[(Executing, 10, "agent"), (Rejected, 11, "executor")]);
        assert_eq!(rejection_cause(&conflict), "conflicting write");
        let still = operation("c", &[(Executing, 10, "agent"), (Unknown, 100, "executor")]);
        let report = ledger_report(&[retried, conflict, still], 400, false).json;
        assert_eq!(report["byState"]["unknown"], 1);
        assert_eq!(report["attempts"]["max"], 2);
        assert_eq!(report["attempts"]["mean"], 1.33);
        assert_eq!(report["rejected"]["byCause"]["conflicting write"], 1);
        assert_eq!(report["uncertain"][0]["ageSecs"], 300);
        assert_eq!(
            (
                report["reconciliation"]["resolved"].clone(),
                report["reconciliation"]["maxSecs"].clone()
            ),
            (json!(1), json!(60))
        );
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let values: Vec<u64> = (1..=10).collect();
        assert_eq!(
            [
                percentile(&values, 50),
                percentile(&values, 90),
                percentile(&values, 100)
            ],
            [5, 9, 10]
        );
        assert_eq!(percentile(&[], 50), 0);
        assert_eq!(percentile(&[7], 90), 7);
    }
}
