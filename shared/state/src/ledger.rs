//! The operation ledger: writes an agent may not repeat, recorded as proposal → decision →
//! execution, so a person can tell who authorized what, on which version, how many times it was
//! tried, and what confirms the effect.
//!
//! Invariants:
//! - A [`Proposal`] is normalized once and never changes: the operation id is minted by the server,
//!   tenant and proposer come from the verified token, and its [`Proposal::digest`] (SHA-256 of the
//!   canonical JSON) is what a person approves. An authorization names that digest and the policy
//!   version it was given under; a changed argument (another proposal, another digest) or a
//!   changed policy version invalidates it.
//! - Status moves only along [`OpStatus::may_become`]: `proposed → authorized → executing →
//!   succeeded | rejected | unknown`, `rejected` also from `proposed` and `authorized`, and
//!   `unknown` only from `executing` (the effect may have happened); only reconciliation by
//!   operation id leaves `unknown`. Terminal states never change. Every transition is a
//!   conditional write on the record's revision, appended to the history it carries.
//! - Records are keyed tenant-first (`Owner::tenant`): a lookup from another tenant finds nothing,
//!   exactly like an id that never existed. Within a tenant, who may act on an operation is the
//!   caller's decision to make (the proposer applies, a person with the approver scope decides).
//!
//! Threat model: operation ids are bearer-like handles, so they are unguessable (128 random bits)
//! and never enough on their own (the tenant comes from the token). A replayed decision finds the
//! record past `proposed` and is refused by the conditional write, never applied twice.

use serde::{Deserialize, Serialize};

use crate::emf::{Metrics, Unit};
use serde_json::Value;

use crate::canonical::canonical_digest;
use crate::jobs::Lease;
use crate::records::{Owner, Record, RecordKey, StoreError, Write};

pub const OPERATION_KIND: &str = "operation";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpStatus {
    Proposed,
    Authorized,
    Executing,
    Succeeded,
    Rejected,
    /// The effect may have happened (timeout, lost response, dead process).
    Unknown,
}

impl OpStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, OpStatus::Succeeded | OpStatus::Rejected)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OpStatus::Proposed => "proposed",
            OpStatus::Authorized => "authorized",
            OpStatus::Executing => "executing",
            OpStatus::Succeeded => "succeeded",
            OpStatus::Rejected => "rejected",
            OpStatus::Unknown => "unknown",
        }
    }

    /// Whether the ledger allows `self → next`. `executing → authorized` and
    /// `unknown → authorized` return an operation whose commit is known not to have happened (a
    /// refused or failed transaction, or settled as never committed): nothing was applied, and
    /// its authorization still stands for the next execution.
    pub fn may_become(self, next: OpStatus) -> bool {
        use OpStatus::*;
        matches!(
            (self, next),
            (Proposed, Authorized | Rejected)
                | (Authorized, Executing | Rejected)
                | (Executing, Succeeded | Rejected | Unknown | Authorized)
                | (Unknown, Succeeded | Rejected | Authorized)
        )
    }
}

/// True when `history` starts at `proposed` and every step is allowed.
pub fn is_valid_path(history: &[OpStatus]) -> bool {
    history.first() == Some(&OpStatus::Proposed)
        && history.windows(2).all(|step| step[0].may_become(step[1]))
}

/// The normalized, immutable proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    pub operation_id: String,
    pub tenant: String,
    pub proposer: String,
    pub tool: String,
    /// What the change is about (for the example shop's inventory: `stock/<warehouse>/<sku>`).
    pub resource: String,
    pub arguments: Value,
    /// The resource's version the change was computed against (0: the resource does not exist).
    pub expected_version: u64,
    pub policy_version: String,
    pub created_at: u64,
    /// No authorization or execution after this instant.
    pub expires_at: u64,
}

impl Proposal {
    /// SHA-256 (hex) of the canonical JSON of the whole proposal.
    pub fn digest(&self) -> String {
        canonical_digest(&serde_json::to_value(self).unwrap_or(Value::Null))
    }
}

/// Who authorized an operation, under which digest and policy version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authorization {
    pub id: String,
    /// The approver's subject, or `policy` when no person was needed.
    pub by: String,
    pub at: u64,
    pub digest: String,
    pub policy_version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    pub status: OpStatus,
    pub at: u64,
    pub by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One operation: the proposal and everything that happened to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    pub proposal: Proposal,
    pub digest: String,
    pub status: OpStatus,
    /// Why a person must decide (empty: the policy authorized it).
    pub needs_person: Vec<String>,
    pub authorization: Option<Authorization>,
    /// The executor holding the operation while `executing`.
    pub lease: Option<Lease>,
    /// How many times execution was started.
    pub attempts: u32,
    /// What the local commit wrote (set in the same transaction as the commit).
    pub committed: Option<Value>,
    /// What confirms the effect; the first receipt is the only one.
    pub receipt: Option<Value>,
    pub reason: Option<String>,
    pub history: Vec<Transition>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    #[error("no such operation")]
    NotFound,
    #[error("the operation is {from}; it cannot become {to}")]
    IllegalTransition {
        from: &'static str,
        to: &'static str,
    },
    #[error("the decision names another version of the proposal (digest mismatch)")]
    DigestMismatch,
    #[error("the policy changed since the proposal ({was} → {now}); propose again")]
    PolicyChanged { was: String, now: String },
    #[error("the proposal expired")]
    Expired,
    #[error("the operation changed meanwhile; read it again")]
    Raced,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Operation {
    /// A new operation from `proposal`: `proposed`, or already `authorized` by the policy when no
    /// person is needed (both steps are in the history).
    pub fn new(proposal: Proposal, needs_person: Vec<String>, authorization_id: String) -> Self {
        let digest = proposal.digest();
        let at = proposal.created_at;
        let mut operation = Operation {
            digest,
            status: OpStatus::Proposed,
            needs_person,
            authorization: None,
            lease: None,
            attempts: 0,
            committed: None,
            receipt: None,
            reason: None,
            history: vec![Transition {
                status: OpStatus::Proposed,
                at,
                by: proposal.proposer.clone(),
                note: None,
            }],
            proposal,
        };
        if operation.needs_person.is_empty() {
            let policy = operation.proposal.policy_version.clone();
            let digest = operation.digest.clone();
            operation.authorization = Some(Authorization {
                id: authorization_id,
                by: "policy".into(),
                at,
                digest,
                policy_version: policy,
            });
            operation.history.push(Transition {
                status: OpStatus::Authorized,
                at,
                by: "policy".into(),
                note: None,
            });
            operation.status = OpStatus::Authorized;
        }
        operation
    }

    pub fn key(tenant: &str, id: &str) -> RecordKey {
        RecordKey::new(Owner::tenant(tenant), OPERATION_KIND, id)
    }

    pub fn record_key(&self) -> RecordKey {
        Operation::key(&self.proposal.tenant, &self.proposal.operation_id)
    }

    pub fn from_record(record: &Record) -> Result<Operation, StoreError> {
        serde_json::from_value(record.body.clone())
            .map_err(|e| StoreError::unavailable("corrupt operation record", e))
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    pub fn statuses(&self) -> Vec<OpStatus> {
        self.history.iter().map(|t| t.status).collect()
    }

    /// A copy moved to `next`, with the step in its history; refused if the graph forbids it.
    pub fn advanced(
        &self,
        next: OpStatus,
        at: u64,
        by: &str,
        note: Option<String>,
    ) -> Result<Operation, LedgerError> {
        if !self.status.may_become(next) {
            return Err(LedgerError::IllegalTransition {
                from: self.status.as_str(),
                to: next.as_str(),
            });
        }
        let mut advanced = self.clone();
        advanced.status = next;
        advanced.history.push(Transition {
            status: next,
            at,
            by: by.into(),
            note,
        });
        if next != OpStatus::Executing {
            advanced.lease = None;
        }
        Ok(advanced)
    }

    /// Reports the step this operation's last transition took, once it is written: entering
    /// `unknown` (an effect whose outcome nobody knows yet) and leaving it (with how long the
    /// reconciliation took) are a log line and EMF metrics, what the operations alarm reads.
    pub fn report_written(&self) {
        let [.., before, last] = self.history.as_slice() else {
            return;
        };
        let p = &self.proposal;
        let metrics = match (before.status, last.status) {
            (_, OpStatus::Unknown) => {
                tracing::warn!(operation = %p.operation_id, tenant = %p.tenant, reason = last.note.as_deref().unwrap_or("-"), "operation outcome unknown");
                Metrics::new()
                    .by(&[])
                    .metric("OperationsEnteredUnknown", 1.0, Unit::Count)
            }
            (OpStatus::Unknown, status) => {
                let took = last.at.saturating_sub(before.at);
                tracing::info!(operation = %p.operation_id, tenant = %p.tenant, status = status.as_str(), reconcile_secs = took, "operation reconciled");
                Metrics::new()
                    .by(&[])
                    .metric("OperationsResolved", 1.0, Unit::Count)
                    .metric("ReconcileTime", took as f64, Unit::Seconds)
            }
            _ => return,
        };
        metrics
            .property("operationId", p.operation_id.as_str())
            .property("tenant", p.tenant.as_str())
            .emit();
    }

    /// Checks that the stored authorization still holds: same digest, same policy version, not
    /// expired, and the proposal itself still hashes to its digest.
    pub fn check_authorization(&self, policy_version: &str, now: u64) -> Result<(), LedgerError> {
        let Some(authorization) = &self.authorization else {
            return Err(LedgerError::IllegalTransition {
                from: self.status.as_str(),
                to: "executing",
            });
        };
        if self.proposal.digest() != self.digest || authorization.digest != self.digest {
            return Err(LedgerError::DigestMismatch);
        }
        if authorization.policy_version != policy_version
            || self.proposal.policy_version != policy_version
        {
            return Err(LedgerError::PolicyChanged {
                was: authorization.policy_version.clone(),
                now: policy_version.into(),
            });
        }
        if now >= self.proposal.expires_at {
            return Err(LedgerError::Expired);
        }
        Ok(())
    }

    /// The conditional write that stores `self` over the record at `revision`.
    pub fn update_at(&self, revision: u64) -> Write {
        Write::Update {
            key: self.record_key(),
            expected_revision: revision,
            body: self.to_value(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OpStatus::*;
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn proposal() -> Proposal {
        Proposal {
            operation_id: "op".into(),
            tenant: "acme".into(),
            proposer: "agent".into(),
            tool: "inventory_propose".into(),
            resource: "stock/main/MUG".into(),
            arguments: json!({ "to": 7 }),
            expected_version: 3,
            policy_version: "p1".into(),
            created_at: 100,
            expires_at: 200,
        }
    }

    #[test]
    fn unknown_is_reached_only_from_executing_and_terminal_states_never_change() {
        let all = [
            Proposed, Authorized, Executing, Succeeded, Rejected, Unknown,
        ];
        for from in all {
            assert_eq!(
                from.may_become(Unknown),
                from == Executing,
                "{from:?} -> unknown"
            );
        }
        for terminal in [Succeeded, Rejected] {
            assert!(
                all.iter().all(|next| !terminal.may_become(*next)),
                "{terminal:?} is final"
            );
        }
        assert!(
            !Proposed.may_become(Executing),
            "no execution without an authorization"
        );
    }

    #[test]
    fn a_changed_argument_changes_the_digest_and_breaks_the_authorization() {
        let original = Operation::new(proposal(), vec![], "auth-1".into());
        assert_eq!(original.status, Authorized);
        assert_eq!(original.check_authorization("p1", 150), Ok(()));
        let mut tampered = original.clone();
        tampered.proposal.arguments = json!({ "to": 8 });
        assert_eq!(
            tampered.check_authorization("p1", 150),
            Err(LedgerError::DigestMismatch)
        );
        assert!(matches!(
            original.check_authorization("p2", 150),
            Err(LedgerError::PolicyChanged { .. })
        ));
        assert_eq!(
            original.check_authorization("p1", 200),
            Err(LedgerError::Expired)
        );
    }

    #[test]
    fn a_proposal_that_needs_a_person_starts_proposed_without_authorization() {
        let operation = Operation::new(proposal(), vec!["large".into()], "auth-1".into());
        assert_eq!(
            (operation.status, operation.authorization.is_none()),
            (Proposed, true)
        );
        assert!(operation.advanced(Executing, 1, "x", None).is_err());
        let decided = operation.advanced(Rejected, 1, "boss", None).unwrap();
        assert_eq!(decided.statuses(), vec![Proposed, Rejected]);
    }

    proptest! {
        #[test]
        fn any_sequence_of_allowed_steps_is_a_valid_path(steps in proptest::collection::vec(0usize..6, 0..8)) {
            let all = [Proposed, Authorized, Executing, Succeeded, Rejected, Unknown];
            let mut operation = Operation::new(proposal(), vec!["person".into()], "a".into());
            for step in steps {
                match operation.advanced(all[step], 1, "t", None) {
                    Ok(next) => operation = next,
                    Err(LedgerError::IllegalTransition { .. }) => prop_assert!(!operation.status.may_become(all[step])),
                    Err(other) => prop_assert!(false, "unexpected {other:?}"),
                }
                prop_assert!(is_valid_path(&operation.statuses()));
            }
        }
    }
}
