//! `ops list`, `ops show`, `ops reconcile`: the operation ledger, one operation at a time.
//!
//! Reconciling is not reimplemented here: `ops reconcile` calls the app's reconcile hook
//! ([`crate::Hooks::reconcile`]), which is the app's own settle (the shop's is
//! `Inventory::settle`, the code the settle jobs of the worker and the agent's next apply run),
//! over the same store. The hook asks the downstream for the operation's receipt (re-delivering
//! from the outbox under the operation id, its idempotency key) and writes only through the
//! ledger's conditional writes, so running it beside a live reconciler is safe: one of the two
//! wins each transition, the other is refused and reads the result. This module reads the
//! operation before and after, and reports the transition.

use std::sync::Arc;

use relevo_protocol::Ports;
use relevo_state::ledger::{OPERATION_KIND, OpStatus, Operation};
use serde_json::{Value, json};

use crate::backend::Backend;
use crate::error::CliError;
use crate::hooks::ReconcileFn;
use crate::output::{Output, duration, inert, table};
use crate::report::{attempts, in_state_since};

/// The operations of `tenant` (every tenant when `None`), at most `limit`, and whether the
/// listing was cut.
pub async fn load(
    backend: &Backend,
    tenant: Option<&str>,
    limit: usize,
    now: u64,
) -> Result<(Vec<Operation>, bool), CliError> {
    let listing = backend
        .view
        .list_records(OPERATION_KIND, tenant, limit, now)
        .await
        .map_err(CliError::store("listing the operations"))?;
    let operations = listing
        .items
        .iter()
        .map(|record| {
            Operation::from_record(record).map_err(CliError::store(format!(
                "reading operation {:?}",
                record.key.id
            )))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((operations, listing.truncated))
}

pub fn parse_state(text: &str) -> Result<OpStatus, CliError> {
    crate::report::ALL_STATES.into_iter().find(|s| s.as_str() == text).ok_or_else(|| {
        CliError::Usage(format!(
            "--state must be one of proposed, authorized, executing, succeeded, rejected, unknown; got {text:?}"
        ))
    })
}

/// `unknown` first, then the oldest first (by creation), then by id.
pub fn sort_for_operators(operations: &mut [Operation]) {
    operations.sort_by(|a, b| {
        (
            a.status != OpStatus::Unknown,
            a.proposal.created_at,
            &a.proposal.operation_id,
        )
            .cmp(&(
                b.status != OpStatus::Unknown,
                b.proposal.created_at,
                &b.proposal.operation_id,
            ))
    });
}

fn summary(operation: &Operation, now: u64) -> Value {
    let p = &operation.proposal;
    json!({
        "operationId": p.operation_id,
        "tenant": p.tenant,
        "status": operation.status.as_str(),
        "attempts": attempts(operation),
        "createdAt": p.created_at,
        "ageSecs": now.saturating_sub(p.created_at),
        "inStateSecs": now.saturating_sub(in_state_since(operation)),
        "tool": p.tool,
        "resource": p.resource,
        "proposer": p.proposer,
    })
}

pub fn list(
    mut operations: Vec<Operation>,
    state: Option<OpStatus>,
    truncated: bool,
    now: u64,
) -> Output {
    operations.retain(|op| state.is_none_or(|s| op.status == s));
    sort_for_operators(&mut operations);
    let rows: Vec<Vec<String>> = operations
        .iter()
        .map(|op| {
            vec![
                op.proposal.operation_id.clone(),
                op.proposal.tenant.clone(),
                op.status.as_str().to_string(),
                attempts(op).to_string(),
                duration(now.saturating_sub(op.proposal.created_at)),
                duration(now.saturating_sub(in_state_since(op))),
                op.proposal.resource.clone(),
            ]
        })
        .collect();
    let mut text = table(
        &[
            "operation",
            "tenant",
            "state",
            "attempts",
            "age",
            "in state",
            "resource",
        ],
        &rows,
    );
    if truncated {
        text.push_str("  (listing cut at --limit: more operations exist)\n");
    }
    let json = json!({
        "operations": operations.iter().map(|op| summary(op, now)).collect::<Vec<_>>(),
        "truncated": truncated,
    });
    Output { json, text }
}

async fn read(backend: &Backend, tenant: &str, id: &str, now: u64) -> Result<Operation, CliError> {
    let record = backend
        .records
        .get(&Operation::key(tenant, id), now)
        .await
        .map_err(CliError::store(format!("reading operation {id:?}")))?
        .ok_or_else(|| CliError::NoSuchOperation {
            tenant: tenant.into(),
            id: id.into(),
        })?;
    Operation::from_record(&record).map_err(CliError::store(format!("reading operation {id:?}")))
}

fn history_table(operation: &Operation) -> String {
    let rows: Vec<Vec<String>> = operation
        .history
        .iter()
        .map(|t| {
            vec![
                t.at.to_string(),
                t.status.as_str().to_string(),
                t.by.clone(),
                t.note.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(&["at", "state", "by", "note"], &rows)
}

pub async fn show(backend: &Backend, tenant: &str, id: &str, now: u64) -> Result<Output, CliError> {
    let operation = read(backend, tenant, id, now).await?;
    let p = &operation.proposal;
    let mut text = format!(
        "operation {}\n  tenant     {}\n  state      {} (for {})\n  tool       {}\n  resource   {}\n  proposer   {}\n  attempts   {}\n  digest     {}\n",
        inert(&p.operation_id),
        inert(&p.tenant),
        operation.status.as_str(),
        duration(now.saturating_sub(in_state_since(&operation))),
        inert(&p.tool),
        inert(&p.resource),
        inert(&p.proposer),
        attempts(&operation),
        inert(&operation.digest),
    );
    if let Some(authorization) = &operation.authorization {
        text.push_str(&format!(
            "  authorized by {} at {}\n",
            inert(&authorization.by),
            authorization.at
        ));
    }
    if let Some(reason) = &operation.reason {
        text.push_str(&format!("  reason     {}\n", inert(reason)));
    }
    if let Some(receipt) = &operation.receipt {
        text.push_str(&format!("  receipt    {}\n", inert(&receipt.to_string())));
    }
    text.push_str("History\n");
    text.push_str(&history_table(&operation));
    Ok(Output {
        json: operation.to_value(),
        text,
    })
}

/// Settles operation `id` of `tenant` through the app's `hook`.
pub async fn reconcile(
    backend: &Backend,
    hook: &ReconcileFn,
    tenant: &str,
    id: &str,
    now: u64,
) -> Result<Output, CliError> {
    let before = read(backend, tenant, id, now).await?;
    let ports = Ports::new(Some(Arc::clone(&backend.records)));
    let after = hook(ports, tenant.into(), id.into())
        .await
        .map_err(|e| CliError::Reconcile {
            id: id.into(),
            reason: e.to_string(),
        })?
        .ok_or_else(|| CliError::NoSuchOperation {
            tenant: tenant.into(),
            id: id.into(),
        })?;
    let changed = after.history.len() != before.history.len();
    let outcome = match (before.status, after.status) {
        (from, _) if !matches!(from, OpStatus::Unknown | OpStatus::Executing) => {
            format!("{} is {}: nothing to reconcile", id, from.as_str())
        }
        (_, OpStatus::Unknown) => {
            format!("{id} is still unknown: the downstream did not confirm it yet; try again later")
        }
        (OpStatus::Executing, OpStatus::Executing) => {
            format!("{id} is executing under a live lease: nothing to do yet")
        }
        (from, to) => format!("{id}: {} → {}", from.as_str(), to.as_str()),
    };
    let mut text = format!("{}\n", inert(&outcome));
    if changed {
        text.push_str("History\n");
        text.push_str(&history_table(&after));
    }
    let json = json!({
        "operationId": id,
        "tenant": tenant,
        "before": before.status.as_str(),
        "after": after.status.as_str(),
        "changed": changed,
        "operation": after.to_value(),
    });
    Ok(Output { json, text })
}
