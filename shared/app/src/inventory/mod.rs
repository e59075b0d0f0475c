//! Inventory changes an agent may not repeat: propose → authorize → execute, over the operation
//! ledger of `relevo-state`.
//!
//! - **Policy** ([`policy`]) sits next to the effect: which changes need a person, and which
//!   permissions the caller really has (user ∩ service ∩ task scopes).
//! - **Execution** is a compare-and-set on (tenant, item, version) in the same transaction that
//!   records the outcome in the ledger and writes the outbox entry. A version that moved is
//!   reported back (`rejected` with the current version) for a new read and a new decision; it is
//!   never rebased.
//! - **The downstream** (a warehouse API outside our table, simulated here with its own
//!   idempotency window) is told through the outbox, with the operation id as its idempotency
//!   key. An operation whose executor died or lost the downstream's answer becomes `unknown`, and
//!   [`Inventory::settle`] resolves it by asking the downstream for the operation's receipt, never
//!   by reading the current stock.
//!
//! Failure model: any process may die between any two writes, any call may be repeated or raced.
//! At most one commit per operation (the commit creates the outbox record keyed by the operation
//! id, and is conditional on the executor's revision of the operation); at most one downstream
//! effect per operation (its idempotency key); a dead executor is fenced out by the revision the
//! settling writes.

use std::sync::Arc;

use relevo_protocol::author::{JobContext, JobError, JobKind};
use relevo_protocol::{Clock, Principal};
use relevo_state::ledger::{Authorization, LedgerError, OpStatus, Operation, Proposal};
use relevo_state::{
    Engine, Ids, Lease, Owner, RecordKey, RecordStore, StoreError, TransactError, Write,
    constant_time_eq,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Proposals may be authorized and executed for a day.
pub const PROPOSAL_LIFETIME_SECS: u64 = 24 * 3600;
/// Operations and outbox entries are kept for 30 days.
pub const RETENTION_SECS: u64 = 30 * 24 * 3600;
/// Plans are kept (and may be applied) for one hour.
pub const PLAN_LIFETIME_SECS: u64 = 3600;
pub const MAX_QUANTITY: u64 = 1_000_000;
pub const MAX_PLAN_ITEMS: usize = 50;

mod desk;
mod downstream;
mod plan;
pub mod policy;
pub mod tools;
mod window;

use desk::Desk;
pub use desk::{MAX_DESK, REPORT_WINDOW_SECS};
pub use downstream::{BoxFuture, Downstream, DownstreamError, SimulatedWarehouse};
pub use plan::PlanLine;
pub use window::WINDOW_SECS as POLICY_WINDOW_SECS;
use window::Window;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InventoryError {
    #[error("{0}")]
    Invalid(String),
    #[error("not permitted: needs scope {0}")]
    NotPermitted(&'static str),
    #[error("no such operation or plan")]
    NotFound,
    #[error(
        "version conflict on {resource}: expected {expected}, found {current}; read it again and decide again"
    )]
    VersionConflict {
        resource: String,
        expected: u64,
        current: u64,
    },
    #[error("request key {0:?} was already used with different arguments")]
    KeyMismatch(String),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Concurrent writes kept winning over ours; the bounded retries ran out. Retryable.
    #[error("{0} kept changing under concurrent requests; try again")]
    Contention(&'static str),
    #[error("internal: {0}")]
    Internal(String),
}

impl From<TransactError> for InventoryError {
    fn from(error: TransactError) -> Self {
        match error {
            TransactError::Store(error) => InventoryError::Store(error),
            // A refusal the caller did not expect is a changed record: contention.
            TransactError::Refused {
                cause: StoreError::Conflict { .. },
                ..
            } => InventoryError::Contention("a record"),
            TransactError::Refused { cause, .. } => InventoryError::Store(cause),
            TransactError::Invalid(why) => InventoryError::Internal(why),
        }
    }
}

/// A stock level: absent items read as quantity 0 at version 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stock {
    pub warehouse: String,
    pub sku: String,
    pub quantity: u64,
    pub version: u64,
    /// False for items never stocked or deleted.
    #[serde(skip)]
    pub exists: bool,
}

/// What the agent asks for.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProposeRequest {
    /// Warehouse, e.g. main
    #[schemars(length(min = 1, max = 32), pattern("^[A-Za-z0-9-]+$"))]
    pub warehouse: String,
    /// Item SKU
    #[schemars(length(min = 1, max = 32), pattern("^[A-Za-z0-9-]+$"))]
    pub sku: String,
    /// The quantity wanted
    #[schemars(range(max = MAX_QUANTITY))]
    pub to: u64,
    /// The version inventory_read returned
    pub expected_version: u64,
    /// Optional: repeating a proposal with this key returns the first one
    #[serde(default)]
    #[schemars(length(min = 1, max = 64))]
    pub request_key: Option<String>,
    /// Optional: the scopes of your task, when narrower than yours
    #[serde(default)]
    pub task_scopes: Option<Vec<String>>,
}

#[derive(Clone)]
pub struct InventoryConfig {
    /// How long an executor holds an operation before it may be settled by someone else.
    pub lease_secs: u64,
    /// The approval page prefix, e.g. `http://127.0.0.1:8080/approvals`.
    pub approvals_url: String,
}

impl Default for InventoryConfig {
    fn default() -> Self {
        InventoryConfig {
            lease_secs: 30,
            approvals_url: "/approvals".into(),
        }
    }
}

/// The inventory service over the ports; tools, the approval page and the reconciler share it.
#[derive(Clone)]
pub struct Inventory {
    pub records: Arc<dyn RecordStore>,
    pub downstream: Arc<dyn Downstream>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn Ids>,
    pub config: InventoryConfig,
    /// The durable-work engine for the settle job each execution leaves behind (the reconciler
    /// path); `None` where no queue is configured (then only the agent's next apply settles).
    pub settler: Option<Arc<Engine>>,
}

/// The job that settles one operation if its executor dies: the inventory starts one, deferred,
/// before every execution ([`Inventory::execute`]); the worker runs it with [`Inventory::settle_job`].
pub const SETTLE: JobKind<SettleInput, Settled> = JobKind::new("inventory.settle");

/// The operation a settle job settles, in the job's tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleInput {
    pub operation_id: String,
}

/// Where a settle job left its operation: the operation's status, or `gone`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settled {
    pub operation_id: String,
    pub status: String,
}

fn valid_name(value: &str, what: &str) -> Result<(), InventoryError> {
    let ok = (1..=32).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(InventoryError::Invalid(format!(
            "{what} must be 1-32 characters of [A-Za-z0-9-]"
        )))
    }
}

pub fn stock_key(tenant: &str, warehouse: &str, sku: &str) -> RecordKey {
    RecordKey::new(
        Owner::tenant(tenant),
        "stock",
        &format!("{warehouse}/{sku}"),
    )
}

fn desk_key(tenant: &str, subject: &str) -> RecordKey {
    RecordKey::new(
        Owner::personal(tenant, subject),
        "inventory-desk",
        "operations",
    )
}

fn outbox_key(tenant: &str, operation_id: &str) -> RecordKey {
    RecordKey::new(Owner::tenant(tenant), "outbox", operation_id)
}

/// The write that sets a stock level at `version` (a create at version 0).
fn stock_write(
    tenant: &str,
    warehouse: &str,
    sku: &str,
    version: u64,
    quantity: Option<u64>,
) -> Write {
    let key = stock_key(tenant, warehouse, sku);
    let body = match quantity {
        Some(quantity) => json!({ "warehouse": warehouse, "sku": sku, "quantity": quantity }),
        None => json!({ "warehouse": warehouse, "sku": sku, "quantity": 0, "deleted": true }),
    };
    match version {
        0 => Write::Create {
            key,
            body,
            expires_at: None,
        },
        version => Write::Update {
            key,
            expected_revision: version,
            body,
        },
    }
}

/// One operation's outcome as `inventory_apply` reports it.
pub fn report(operation: &Operation, approvals_url: &str) -> Value {
    let p = &operation.proposal;
    let mut view = json!({
        "operationId": p.operation_id,
        "status": operation.status.as_str(),
        "resource": p.resource,
        "from": p.arguments["from"],
        "to": p.arguments["to"],
        "expectedVersion": p.expected_version,
        "digest": operation.digest,
        "attempts": operation.attempts,
    });
    if let Some(receipt) = &operation.receipt {
        view["receipt"] = receipt.clone();
    }
    if let Some(reason) = &operation.reason {
        view["reason"] = json!(reason);
    }
    if operation.status == OpStatus::Proposed {
        view["status"] = json!("waiting_for_person");
        view["needsPerson"] = json!(operation.needs_person);
        view["approvalUrl"] = json!(format!("{approvals_url}/{}", p.operation_id));
    }
    view
}

impl Inventory {
    fn now(&self) -> u64 {
        self.clock.now_unix()
    }

    pub async fn read(
        &self,
        tenant: &str,
        warehouse: &str,
        sku: &str,
    ) -> Result<Stock, InventoryError> {
        valid_name(warehouse, "warehouse")?;
        valid_name(sku, "sku")?;
        let record = self
            .records
            .get(&stock_key(tenant, warehouse, sku), self.now())
            .await?;
        let (quantity, version, exists) = match record {
            Some(r) if r.body["deleted"] != true => {
                (r.body["quantity"].as_u64().unwrap_or(0), r.revision, true)
            }
            Some(r) => (0, r.revision, false),
            None => (0, 0, false),
        };
        Ok(Stock {
            warehouse: warehouse.into(),
            sku: sku.into(),
            quantity,
            version,
            exists,
        })
    }

    /// The operation, if it exists in the caller's tenant.
    pub async fn operation(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<(Operation, u64)>, InventoryError> {
        if id.is_empty() || id.len() > 64 {
            return Ok(None);
        }
        match self
            .records
            .get(&Operation::key(tenant, id), self.now())
            .await?
        {
            Some(record) => Ok(Some((Operation::from_record(&record)?, record.revision))),
            None => Ok(None),
        }
    }

    /// Validates, records and returns the new operation (or, for a repeated request key with the
    /// same arguments, the first one).
    pub async fn propose(
        &self,
        caller: &Principal,
        request: &ProposeRequest,
    ) -> Result<Operation, InventoryError> {
        valid_name(&request.warehouse, "warehouse")?;
        valid_name(&request.sku, "sku")?;
        if request.to > MAX_QUANTITY {
            return Err(InventoryError::Invalid(format!(
                "to must be at most {MAX_QUANTITY}"
            )));
        }
        if let Some(key) = &request.request_key
            && !(1..=64).contains(&key.len())
        {
            return Err(InventoryError::Invalid(
                "requestKey must be 1-64 characters".into(),
            ));
        }
        if !policy::effective_scopes(caller, request.task_scopes.as_deref()).contains(policy::WRITE)
        {
            return Err(InventoryError::NotPermitted(policy::WRITE));
        }
        let request_digest = relevo_state::canonical_digest(&json!({
            "warehouse": request.warehouse, "sku": request.sku, "to": request.to,
            "expectedVersion": request.expected_version, "taskScopes": request.task_scopes,
        }));
        let key_record = request.request_key.as_ref().map(|k| {
            RecordKey::new(
                Owner::personal(&caller.tenant, &caller.subject),
                "proposal-key",
                k,
            )
        });
        if let Some(key_record) = &key_record
            && let Some(first) = self.records.get(key_record, self.now()).await?
        {
            return self
                .first_for_key(caller, request, &first.body, &request_digest)
                .await;
        }
        let stock = self
            .read(&caller.tenant, &request.warehouse, &request.sku)
            .await?;
        let resource = format!("stock/{}/{}", request.warehouse, request.sku);
        if stock.version != request.expected_version {
            return Err(InventoryError::VersionConflict {
                resource,
                expected: request.expected_version,
                current: stock.version,
            });
        }
        let now = self.now();
        let proposal = Proposal {
            operation_id: self.ids.new_id(),
            tenant: caller.tenant.clone(),
            proposer: caller.subject.clone(),
            tool: "inventory_propose".into(),
            resource,
            arguments: json!({ "warehouse": request.warehouse, "sku": request.sku, "from": stock.quantity, "to": request.to }),
            expected_version: stock.version,
            policy_version: policy::POLICY_VERSION.into(),
            created_at: now,
            expires_at: now + PROPOSAL_LIFETIME_SECS,
        };
        let units = stock.quantity.abs_diff(request.to);
        let window_key = window::window_key(&caller.tenant, &request.warehouse, &request.sku);
        for _ in 0..5 {
            // Small changes add up: the item's recent policy-authorized changes count too.
            let window_record = self.records.get(&window_key, now).await?;
            let window = Window::from_record(window_key.clone(), window_record.as_ref(), now)?;
            let mut reasons = policy::needs_person(&request.warehouse, stock.quantity, request.to);
            if reasons.is_empty() {
                reasons.extend(window.needs_person(units));
            }
            let by_policy = reasons.is_empty();
            let operation = Operation::new(proposal.clone(), reasons, self.ids.new_id());
            let record = self
                .records
                .get(&desk_key(&caller.tenant, &caller.subject), now)
                .await?;
            let mut desk = Desk::from_record(record.as_ref())?;
            desk.prune(now);
            if desk.open_count(now) >= MAX_DESK {
                // The finished marks are bookkeeping: before refusing, ask the operations.
                self.mark_finished(&caller.tenant, &mut desk, now).await?;
            }
            if desk.open_count(now) >= MAX_DESK {
                return Err(InventoryError::Invalid(format!(
                    "at most {MAX_DESK} open proposals; apply or let some expire"
                )));
            }
            desk.push(
                &operation.proposal.operation_id,
                operation.proposal.expires_at,
            );
            let mut writes = vec![Write::Create {
                key: operation.record_key(),
                body: operation.to_value(),
                expires_at: Some(now + RETENTION_SECS),
            }];
            writes.push(desk.write(
                desk_key(&caller.tenant, &caller.subject),
                record.as_ref(),
                now,
            ));
            let key_index = key_record.as_ref().map(|key_record| {
                writes.push(Write::Create {
                    key: key_record.clone(),
                    body: json!({ "operationId": operation.proposal.operation_id, "digest": request_digest }),
                    expires_at: Some(operation.proposal.expires_at),
                });
                writes.len() - 1
            });
            if by_policy {
                writes.push(window.add(units, &operation.proposal.operation_id, now));
            }
            match self.records.transact(&writes, now).await {
                Ok(_) => return Ok(operation),
                Err(TransactError::Refused {
                    index,
                    cause: StoreError::AlreadyExists(first),
                }) if Some(index) == key_index => {
                    return self
                        .first_for_key(caller, request, &first.body, &request_digest)
                        .await;
                }
                // The desk or the item's window changed under us (another proposal): read again.
                Err(TransactError::Refused { index, .. })
                    if index == 1 || (by_policy && index == writes.len() - 1) =>
                {
                    continue;
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(InventoryError::Contention("the proposal desk"))
    }

    async fn first_for_key(
        &self,
        caller: &Principal,
        request: &ProposeRequest,
        first: &Value,
        digest: &str,
    ) -> Result<Operation, InventoryError> {
        if !constant_time_eq(first["digest"].as_str().unwrap_or_default(), digest) {
            return Err(InventoryError::KeyMismatch(
                request.request_key.clone().unwrap_or_default(),
            ));
        }
        let id = first["operationId"].as_str().unwrap_or_default();
        self.operation(&caller.tenant, id)
            .await?
            .map(|(op, _)| op)
            .ok_or(InventoryError::NotFound)
    }

    /// A person's decision, bound to the digest they saw. Approvers hold `inventory:approve` and
    /// are not the proposer (four eyes). A repeat finds the operation decided and is refused.
    pub async fn decide(
        &self,
        person: &Principal,
        id: &str,
        digest: &str,
        approve: bool,
    ) -> Result<Operation, InventoryError> {
        if !(person.unrestricted || person.scopes.contains(policy::APPROVE)) {
            return Err(InventoryError::NotPermitted(policy::APPROVE));
        }
        let (operation, revision) = self
            .operation(&person.tenant, id)
            .await?
            .ok_or(InventoryError::NotFound)?;
        if operation.proposal.proposer == person.subject {
            return Err(InventoryError::Invalid(
                "the proposer cannot decide their own proposal".into(),
            ));
        }
        if !constant_time_eq(&operation.digest, digest)
            || operation.proposal.digest() != operation.digest
        {
            return Err(LedgerError::DigestMismatch.into());
        }
        if operation.status != OpStatus::Proposed {
            return Err(LedgerError::IllegalTransition {
                from: operation.status.as_str(),
                to: if approve { "authorized" } else { "rejected" },
            }
            .into());
        }
        let now = self.now();
        if operation.proposal.policy_version != policy::POLICY_VERSION {
            return Err(LedgerError::PolicyChanged {
                was: operation.proposal.policy_version.clone(),
                now: policy::POLICY_VERSION.into(),
            }
            .into());
        }
        if now >= operation.proposal.expires_at {
            return Err(LedgerError::Expired.into());
        }
        let next = if approve {
            let mut next = operation.advanced(OpStatus::Authorized, now, &person.subject, None)?;
            next.authorization = Some(Authorization {
                id: self.ids.new_id(),
                by: person.subject.clone(),
                at: now,
                digest: operation.digest.clone(),
                policy_version: policy::POLICY_VERSION.into(),
            });
            next
        } else {
            let mut next = operation.advanced(
                OpStatus::Rejected,
                now,
                &person.subject,
                Some("rejected by a person".into()),
            )?;
            next.reason = Some(format!("rejected by {}", person.subject));
            next
        };
        self.write(&next, revision).await?;
        Ok(next)
    }

    async fn write(&self, operation: &Operation, revision: u64) -> Result<u64, InventoryError> {
        match self
            .records
            .transact(&[operation.update_at(revision)], self.now())
            .await
        {
            Ok(revisions) => {
                operation.report_written();
                Ok(revisions[0])
            }
            Err(TransactError::Refused { .. }) => Err(LedgerError::Raced.into()),
            Err(other) => Err(other.into()),
        }
    }

    /// Marks the desk's open entries whose operation has finished.
    async fn mark_finished(
        &self,
        tenant: &str,
        desk: &mut Desk,
        now: u64,
    ) -> Result<(), InventoryError> {
        for id in desk.open_ids(now) {
            if self
                .operation(tenant, &id)
                .await?
                .is_none_or(|(op, _)| op.status.is_terminal())
            {
                desk.mark_finished(&id, now);
            }
        }
        Ok(())
    }

    /// Records on the caller's desk that `finished` have finished (so they stop counting as
    /// open). Bookkeeping only: after a few lost races it gives up, and the next full desk asks
    /// the operations themselves.
    async fn record_finished(
        &self,
        caller: &Principal,
        finished: &[String],
    ) -> Result<(), InventoryError> {
        for _ in 0..3 {
            let now = self.now();
            let Some(record) = self
                .records
                .get(&desk_key(&caller.tenant, &caller.subject), now)
                .await?
            else {
                return Ok(());
            };
            let mut desk = Desk::from_record(Some(&record))?;
            let marked = finished
                .iter()
                .filter(|id| desk.mark_finished(id, now))
                .count();
            if marked == 0 {
                return Ok(());
            }
            desk.prune(now);
            let write = desk.write(record.key.clone(), Some(&record), now);
            match self.records.transact(&[write], now).await {
                Ok(_) => return Ok(()),
                Err(TransactError::Refused { .. }) => continue,
                Err(other) => return Err(other.into()),
            }
        }
        Ok(())
    }

    /// Executes the caller's authorized operations in order; stops at the first still waiting for
    /// a person. Operations finished within the report window report their first outcome (and
    /// receipt), so a repeated apply whose first answer was lost learns the same; an operation
    /// named in `only` that has left the desk is looked up directly.
    pub async fn apply(
        &self,
        caller: &Principal,
        only: Option<&[String]>,
    ) -> Result<Vec<Value>, InventoryError> {
        if !policy::effective_scopes(caller, None).contains(policy::WRITE) {
            return Err(InventoryError::NotPermitted(policy::WRITE));
        }
        let now = self.now();
        let record = self
            .records
            .get(&desk_key(&caller.tenant, &caller.subject), now)
            .await?;
        let mut desk = Desk::from_record(record.as_ref())?;
        desk.prune(now);
        let desk = desk.ids();
        let mut reports = Vec::new();
        let mut finished = Vec::new();
        for id in desk
            .iter()
            .filter(|id| only.is_none_or(|only| only.contains(id)))
        {
            let Some((operation, revision)) = self.operation(&caller.tenant, id).await? else {
                continue;
            };
            if operation.proposal.proposer != caller.subject {
                continue;
            }
            let outcome = match operation.status {
                OpStatus::Authorized => self.execute(operation, revision).await?,
                OpStatus::Executing | OpStatus::Unknown => {
                    self.settle_operation(operation, revision).await?
                }
                _ => operation,
            };
            if outcome.status.is_terminal() {
                finished.push(id.clone());
            }
            let waiting = outcome.status == OpStatus::Proposed;
            reports.push(report(&outcome, &self.config.approvals_url));
            if waiting {
                break;
            }
        }
        if let Some(only) = only {
            for id in only.iter().filter(|id| !desk.contains(id)) {
                match self.operation(&caller.tenant, id).await? {
                    Some((operation, _)) if operation.proposal.proposer == caller.subject => {
                        reports.push(report(&operation, &self.config.approvals_url))
                    }
                    _ => reports.push(json!({ "operationId": id, "status": "not_found" })),
                }
            }
        }
        if !finished.is_empty() {
            // The effects are done and reported; a lost bookkeeping write must not fail the reply.
            let _ = self.record_finished(caller, &finished).await;
        }
        Ok(reports)
    }

    /// authorized → executing → (commit: stock CAS + ledger + outbox, one transaction) →
    /// downstream → succeeded. Returns the operation as it stands afterwards.
    pub async fn execute(
        &self,
        operation: Operation,
        revision: u64,
    ) -> Result<Operation, InventoryError> {
        let now = self.now();
        if let Err(invalid) = operation.check_authorization(policy::POLICY_VERSION, now) {
            let mut rejected =
                operation.advanced(OpStatus::Rejected, now, "policy", Some(invalid.to_string()))?;
            rejected.reason = Some(invalid.to_string());
            return self.write_or_current(&rejected, revision).await;
        }
        if let Some(engine) = &self.settler {
            // The dead man's switch first: if this executor dies, the reconciler runs it.
            let p = &operation.proposal;
            let input = SettleInput {
                operation_id: p.operation_id.clone(),
            };
            SETTLE
                .start_deferred(
                    engine,
                    &p.tenant,
                    &p.proposer,
                    Some(&p.operation_id),
                    &input,
                )
                .await
                .map_err(|e| match e {
                    relevo_state::StartError::Store(error) => InventoryError::Store(error),
                    other => InventoryError::Internal(other.to_string()),
                })?;
        }
        let mut executing =
            operation.advanced(OpStatus::Executing, now, &operation.proposal.proposer, None)?;
        executing.attempts += 1;
        executing.lease = Some(Lease {
            owner: self.ids.new_id(),
            expires_at: now + self.config.lease_secs,
        });
        let revision = match self.write(&executing, revision).await {
            Ok(revision) => revision,
            // Another executor took it first: report what it is now.
            Err(InventoryError::Ledger(LedgerError::Raced)) => {
                return self.current(&operation).await;
            }
            Err(other) => return Err(other),
        };
        self.commit(executing, revision).await
    }

    async fn current(&self, operation: &Operation) -> Result<Operation, InventoryError> {
        let p = &operation.proposal;
        self.operation(&p.tenant, &p.operation_id)
            .await?
            .map(|(op, _)| op)
            .ok_or(InventoryError::NotFound)
    }

    async fn write_or_current(
        &self,
        operation: &Operation,
        revision: u64,
    ) -> Result<Operation, InventoryError> {
        match self.write(operation, revision).await {
            Ok(_) => Ok(operation.clone()),
            Err(InventoryError::Ledger(LedgerError::Raced)) => self.current(operation).await,
            Err(other) => Err(other),
        }
    }

    fn payload(operation: &Operation, new_version: u64) -> Value {
        let p = &operation.proposal;
        json!({ "operationId": p.operation_id, "resource": p.resource, "from": p.arguments["from"], "to": p.arguments["to"], "version": new_version })
    }

    async fn commit(
        &self,
        executing: Operation,
        revision: u64,
    ) -> Result<Operation, InventoryError> {
        let now = self.now();
        let p = &executing.proposal;
        let (warehouse, sku) = (
            p.arguments["warehouse"].as_str().unwrap_or_default(),
            p.arguments["sku"].as_str().unwrap_or_default(),
        );
        let to = p.arguments["to"].as_u64().unwrap_or(0);
        let new_version = p.expected_version + 1;
        let mut committed = executing.clone();
        committed.committed = Some(json!({ "at": now, "version": new_version }));
        let writes = vec![
            stock_write(&p.tenant, warehouse, sku, p.expected_version, Some(to)),
            committed.update_at(revision),
            Write::Create {
                key: outbox_key(&p.tenant, &p.operation_id),
                body: json!({ "payload": Self::payload(&executing, new_version), "delivered": false }),
                expires_at: Some(now + RETENTION_SECS),
            },
        ];
        match self.records.transact(&writes, now).await {
            Ok(revisions) => self.deliver(committed, revisions[1]).await,
            Err(TransactError::Refused { index: 0, cause }) => {
                let current = match cause {
                    StoreError::Conflict { current, .. } | StoreError::AlreadyExists(current) => {
                        current.revision
                    }
                    _ => 0,
                };
                let note = format!(
                    "version conflict: expected {}, found {current}",
                    p.expected_version
                );
                let mut rejected =
                    executing.advanced(OpStatus::Rejected, now, "executor", Some(note.clone()))?;
                rejected.reason = Some(format!("{note}; read the item again and propose again"));
                rejected.receipt = Some(
                    json!({ "conflict": { "expectedVersion": p.expected_version, "currentVersion": current } }),
                );
                self.write_or_current(&rejected, revision).await
            }
            // Fenced: the operation moved on without us (settled by someone else).
            Err(TransactError::Refused { .. }) => self.current(&executing).await,
            // The store refused the whole transaction: nothing was applied, so the operation is
            // authorized again (a retry executes it) instead of waiting out its lease to be
            // rejected. A timeout is different: the commit may have happened; settling decides.
            Err(TransactError::Store(error @ StoreError::Unavailable(_))) => {
                let note =
                    format!("the commit failed and nothing was applied ({error}); apply again");
                let mut again =
                    executing.advanced(OpStatus::Authorized, self.now(), "executor", Some(note))?;
                again.lease = None;
                let _ = self.write_or_current(&again, revision).await;
                Err(InventoryError::Store(error))
            }
            Err(other) => Err(other.into()),
        }
    }

    /// Tells the downstream (idempotency key: the operation id), then records the receipt.
    async fn deliver(
        &self,
        committed: Operation,
        revision: u64,
    ) -> Result<Operation, InventoryError> {
        let p = &committed.proposal;
        let version = committed
            .committed
            .as_ref()
            .and_then(|c| c["version"].as_u64())
            .unwrap_or(0);
        let answer = self
            .downstream
            .deliver(
                &p.tenant,
                &p.operation_id,
                &Self::payload(&committed, version),
            )
            .await;
        let now = self.now();
        match answer {
            Ok(downstream) => self.succeed(committed, revision, downstream).await,
            Err(error) => {
                let unknown = committed.advanced(
                    OpStatus::Unknown,
                    now,
                    "executor",
                    Some(error.to_string()),
                )?;
                self.write_or_current(&unknown, revision).await
            }
        }
    }

    async fn succeed(
        &self,
        operation: Operation,
        revision: u64,
        downstream: Value,
    ) -> Result<Operation, InventoryError> {
        let now = self.now();
        let p = &operation.proposal;
        let version = operation
            .committed
            .as_ref()
            .and_then(|c| c["version"].as_u64())
            .unwrap_or(0);
        let mut done = operation.advanced(OpStatus::Succeeded, now, "executor", None)?;
        done.receipt = Some(json!({
            "operationId": p.operation_id, "resource": p.resource, "from": p.arguments["from"], "to": p.arguments["to"],
            "version": version, "authorizedBy": operation.authorization.as_ref().map(|a| a.by.clone()),
            "downstreamReceipt": downstream["receiptId"], "committedAt": operation.committed.as_ref().map(|c| c["at"].clone()),
        }));
        self.write_or_current(&done, revision).await
    }

    /// Resolves an operation left `executing` past its lease or `unknown`: by asking the
    /// downstream for its receipt (re-delivering from the outbox under the same key when the
    /// downstream never saw it), never by reading the current stock. An operation whose local
    /// commit never happened (the commit and the `committed` mark are one transaction) had no
    /// effect and is rejected.
    pub async fn settle(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<Operation>, InventoryError> {
        match self.operation(tenant, id).await? {
            Some((operation, revision)) => {
                Ok(Some(self.settle_operation(operation, revision).await?))
            }
            None => Ok(None),
        }
    }

    /// Runs one [`SETTLE`] job: settles its operation in the job's tenant. An operation still
    /// executing under a live lease, or whose downstream is still silent, is tried again later.
    pub async fn settle_job(self, input: SettleInput, cx: JobContext) -> Result<Settled, JobError> {
        let id = input.operation_id;
        let settled = |status: &str| {
            Ok(Settled {
                operation_id: id.clone(),
                status: status.to_string(),
            })
        };
        match self.settle(&cx.job().job.tenant, &id).await {
            Ok(Some(op)) if op.status.is_terminal() || op.status == OpStatus::Proposed => {
                settled(op.status.as_str())
            }
            // Authorized but never started: nothing was done, nothing to settle.
            Ok(Some(op)) if op.status == OpStatus::Authorized => settled("authorized"),
            Ok(Some(op)) => Err(JobError::retry(format!(
                "operation still {}",
                op.status.as_str()
            ))),
            Ok(None) => settled("gone"),
            Err(error) => Err(JobError::retry(error)),
        }
    }

    async fn settle_operation(
        &self,
        operation: Operation,
        revision: u64,
    ) -> Result<Operation, InventoryError> {
        let now = self.now();
        let (operation, revision) = match operation.status {
            OpStatus::Executing if operation.lease.as_ref().is_some_and(|l| l.expires_at > now) => {
                return Ok(operation);
            }
            OpStatus::Executing => {
                let unknown = operation.advanced(
                    OpStatus::Unknown,
                    now,
                    "reconciler",
                    Some("the executor's lease expired".into()),
                )?;
                match self.write(&unknown, revision).await {
                    Ok(revision) => (unknown, revision),
                    Err(InventoryError::Ledger(LedgerError::Raced)) => {
                        return self.current(&operation).await;
                    }
                    Err(other) => return Err(other),
                }
            }
            OpStatus::Unknown => (operation, revision),
            _ => return Ok(operation),
        };
        if operation.committed.is_none() {
            // The commit and the `committed` mark are one transaction: without the mark, nothing
            // was applied. The authorization stands; the next apply executes it (execute checks
            // expiry and policy again). A late commit from the dead executor is fenced by the
            // operation's revision, which this write moves.
            let note = "interrupted before the change was committed; nothing was applied; it runs on the next apply";
            let mut again =
                operation.advanced(OpStatus::Authorized, now, "reconciler", Some(note.into()))?;
            again.lease = None;
            return self.write_or_current(&again, revision).await;
        }
        let p = &operation.proposal;
        let known = match self.downstream.receipt(&p.tenant, &p.operation_id).await {
            Ok(Some(receipt)) => receipt,
            Ok(None) => {
                let outbox = self
                    .records
                    .get(&outbox_key(&p.tenant, &p.operation_id), now)
                    .await?;
                let Some(outbox) = outbox else {
                    return Ok(operation);
                };
                match self
                    .downstream
                    .deliver(&p.tenant, &p.operation_id, &outbox.body["payload"])
                    .await
                {
                    Ok(receipt) => receipt,
                    Err(_) => return Ok(operation),
                }
            }
            // Still no answer: stays unknown for the next pass.
            Err(_) => return Ok(operation),
        };
        self.succeed(operation, revision, known).await
    }
}
