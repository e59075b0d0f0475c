//! The inventory tools: the MCP face of [`super::Inventory`].

use relevo_protocol::author::{Structured, ToolContext, ToolError};
use relevo_protocol::registry::apps::{self, UiMeta, Visibility};
use relevo_protocol::wire::ToolAnnotations;
use relevo_protocol::{McpError, Resource, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{Inventory, InventoryError, MAX_PLAN_ITEMS, PlanLine, ProposeRequest, policy, report};

/// Whose fault an inventory error is: the store's and contention are retryable, a bug internal,
/// the rest (refusals, conflicts, unknown operations) the caller's.
impl From<InventoryError> for ToolError {
    fn from(error: InventoryError) -> Self {
        match error {
            InventoryError::Store(error) => error.into(),
            InventoryError::Contention(what) => {
                tracing::warn!(
                    what,
                    cause = "contention",
                    "inventory write kept losing: answered retryable"
                );
                McpError::Retryable(relevo_protocol::Retry::Contention).into()
            }
            InventoryError::Internal(why) => ToolError::internal(format!("inventory: {why}")),
            other => ToolError::caller(other),
        }
    }
}

fn writes() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(false)
        .destructive(true)
        .idempotent(true)
        .open_world(true)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// Warehouse, e.g. main
    #[schemars(length(min = 1, max = 32), pattern("^[A-Za-z0-9-]+$"))]
    warehouse: String,
    /// Item SKU
    #[schemars(length(min = 1, max = 32), pattern("^[A-Za-z0-9-]+$"))]
    sku: String,
}

pub fn inventory_read(inventory: Inventory) -> Tool {
    Tool::typed(
        "inventory_read",
        "Reads a stock level and its version (pass the version as expectedVersion when you propose a change). Items never stocked read as quantity 0, version 0.",
        move |args: ReadArgs, cx: ToolContext| {
            let inventory = inventory.clone();
            async move {
                let stock = inventory.read(&cx.principal().tenant, &args.warehouse, &args.sku).await?;
                Ok(Structured(serde_json::to_value(stock).map_err(ToolError::internal)?))
            }
        },
    )
    .title("Read a stock level")
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .scopes(&[policy::READ])
    .cache_no_store()
}

pub fn inventory_propose(inventory: Inventory) -> Tool {
    Tool::typed(
        "inventory_propose",
        "Proposes setting a stock level (nothing changes yet). Returns the operation id, its digest and status: `authorized` when policy allows it, or `proposed` with an approvalUrl a person must open. Then call inventory_apply.",
        move |request: ProposeRequest, cx: ToolContext| {
            let inventory = inventory.clone();
            async move {
                let op = inventory.propose(cx.principal(), &request).await?;
                Ok(Structured(report(&op, &inventory.config.approvals_url)))
            }
        },
    )
    .title("Propose a stock change")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&[policy::WRITE])
    .cache_no_store()
    // MCP Apps: a host with the extension shows the proposal in the approval view; every other
    // client reads the same result as text, with the approval page's URL.
    .view(APPROVAL_VIEW)
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApplyArgs {
    /// Optional: only these operations
    #[serde(default)]
    #[schemars(length(max = 100), inner(length(max = 64)))]
    operation_ids: Option<Vec<String>>,
}

pub fn inventory_apply(inventory: Inventory) -> Tool {
    Tool::typed(
        "inventory_apply",
        "Executes your authorized proposals in the order you made them and stops at the first one still waiting for a person. Safe to repeat: an operation already done returns its first receipt. A version conflict is reported, never rebased: read again and propose again.",
        move |args: ApplyArgs, cx: ToolContext| {
            let inventory = inventory.clone();
            async move {
                let operations = inventory.apply(cx.principal(), args.operation_ids.as_deref()).await?;
                Ok(Structured(json!({ "operations": operations })))
            }
        },
    )
    .title("Apply approved stock changes")
    .annotations(writes())
    .scopes(&[policy::WRITE])
    .cache_no_store()
    .invalidates(&["inventory.*"])
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OperationArgs {
    #[schemars(length(min = 1, max = 64))]
    operation_id: String,
}

pub fn inventory_operation(inventory: Inventory) -> Tool {
    Tool::typed(
        "inventory_operation",
        "Shows one operation's record: the proposal, its digest, who authorized it under which policy version, every transition, how many times it was tried and the receipt that confirms the effect. Visible to its proposer and to approvers.",
        move |args: OperationArgs, cx: ToolContext| {
            let inventory = inventory.clone();
            async move {
                let principal = cx.principal();
                match inventory.operation(&principal.tenant, &args.operation_id).await? {
                    Some((op, _))
                        if op.proposal.proposer == principal.subject
                            || principal.unrestricted
                            || principal.scopes.contains(policy::APPROVE) =>
                    {
                        Ok(Structured(op.to_value()))
                    }
                    _ => Err(InventoryError::NotFound.into()),
                }
            }
        },
    )
    .title("Show an operation")
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .scopes(&[policy::READ])
    .cache_no_store()
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    /// Warehouse, e.g. main
    #[schemars(length(min = 1, max = 32), pattern("^[A-Za-z0-9-]+$"))]
    warehouse: String,
    #[schemars(length(min = 1, max = MAX_PLAN_ITEMS))]
    items: Vec<PlanLine>,
}

pub fn inventory_plan(inventory: Inventory) -> Tool {
    Tool::typed(
        "inventory_plan",
        "A dry run: for each item, whether setting it to the wanted quantity (null: delete) is an insert, update, delete or unchanged against its current version. Writes no stock; the plan is kept one hour for inventory_apply_plan.",
        move |args: PlanArgs, cx: ToolContext| {
            let inventory = inventory.clone();
            async move { Ok(Structured(inventory.plan(cx.principal(), &args.warehouse, &args.items).await?)) }
        },
    )
    .title("Plan stock changes (dry run)")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&[policy::WRITE])
    .cache_no_store()
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApplyPlanArgs {
    #[schemars(length(min = 1, max = 64))]
    plan_id: String,
    #[serde(default)]
    #[schemars(range(max = 100))]
    tolerated_percent: Option<u64>,
}

pub fn inventory_apply_plan(inventory: Inventory) -> Tool {
    Tool::typed(
        "inventory_apply_plan",
        "Applies a plan from inventory_plan once, all items or none. Refuses if any item's version moved since the plan, if more than the tolerated share of items (default 50%) would change, or if a change needs a person. Repeating returns the first result.",
        move |args: ApplyPlanArgs, cx: ToolContext| {
            let inventory = inventory.clone();
            async move {
                let tolerated = args.tolerated_percent.unwrap_or(policy::DEFAULT_TOLERATED_PERCENT);
                Ok(Structured(inventory.apply_plan(cx.principal(), &args.plan_id, tolerated).await?))
            }
        },
    )
    .title("Apply a stock plan")
    .annotations(writes())
    .scopes(&[policy::WRITE])
    .cache_no_store()
    .invalidates(&["inventory.*"])
}

/// The approval view's URI (MCP Apps): [`approval_view`] serves it, [`inventory_propose`]
/// points at it, [`inventory_decide`] is its button.
pub const APPROVAL_VIEW: &str = "ui://relevo-shop/inventory-approval";

/// The approval view: a self-contained page (no external origin, so the host's strict default
/// CSP) that shows the proposal the host hands it and decides it with [`inventory_decide`],
/// through the ext-apps postMessage bridge. Clients without MCP Apps use the approval page.
pub fn approval_view() -> Resource {
    apps::view(
        APPROVAL_VIEW,
        "inventory_approval",
        include_str!("approval.html"),
        UiMeta::default().prefers_border(true),
    )
    .title("Stock change approval")
    .description("Shows a proposed stock change and lets a person approve or decline it.")
}

/// What a person decides.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Approve,
    Decline,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DecideArgs {
    #[schemars(length(min = 1, max = 64))]
    operation_id: String,
    /// The digest of the proposal the person saw
    #[schemars(length(min = 1, max = 128))]
    digest: String,
    decision: Decision,
}

/// The approval view's decision (app-only: `_meta.ui.visibility: ["app"]`, so a host never
/// offers it to the model and a client without MCP Apps can neither list nor call it). The same
/// ledger transition as the approval page ([`Inventory::decide`]): the caller's own principal
/// needs `inventory:approve` in the operation's tenant and is not its proposer, the digest must
/// be the one shown, a decline is recorded as `rejected`, and a repeated decision finds the
/// operation decided and is refused, with no second effect.
pub fn inventory_decide(inventory: Inventory) -> Tool {
    Tool::typed(
        "inventory_decide",
        "Approves or declines a proposed stock change on behalf of the person using the approval view.",
        move |args: DecideArgs, cx: ToolContext| {
            let inventory = inventory.clone();
            async move {
                let approve = args.decision == Decision::Approve;
                let op = inventory
                    .decide(cx.principal(), &args.operation_id, &args.digest, approve)
                    .await?;
                Ok(Structured(report(&op, &inventory.config.approvals_url)))
            }
        },
    )
    .title("Decide a stock change")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&[policy::APPROVE])
    .cache_no_store()
    .view(APPROVAL_VIEW)
    .visibility(&[Visibility::App])
}
