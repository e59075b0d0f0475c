//! The inventory tools: the MCP face of [`crate::inventory::Inventory`].

use relevo_protocol::wire::{CallToolResult, ToolAnnotations};
use relevo_protocol::{Call, McpError, Outcome, Tool, handler};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::inventory::{Inventory, InventoryError, PlanLine, ProposeRequest, policy, report};

fn outcome(result: Result<Value, InventoryError>) -> Result<Outcome, McpError> {
    match result {
        Ok(value) => Ok(Outcome::tool(CallToolResult::structured(value))),
        Err(InventoryError::Store(error)) => Err(relevo_protocol::store_failure("inventory")(error)),
        Err(InventoryError::Contention(what)) => {
            tracing::warn!(what, cause = "contention", "inventory write kept losing: answered retryable");
            Err(McpError::Retryable(relevo_protocol::Retry::Contention))
        }
        Err(InventoryError::Internal(why)) => {
            tracing::error!(%why, "inventory internal error");
            Err(McpError::Internal)
        }
        Err(error) => Ok(Outcome::tool_error(error.to_string())),
    }
}

fn writes() -> ToolAnnotations {
    ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(true)
}

fn name_schema(what: &str) -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": 32, "pattern": "^[A-Za-z0-9-]+$", "description": what })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    warehouse: String,
    sku: String,
}

pub fn inventory_read(inventory: Inventory) -> Tool {
    Tool::new(
        "inventory_read",
        "Reads a stock level and its version (pass the version as expectedVersion when you propose a change). Items never stocked read as quantity 0, version 0.",
        json!({
            "type": "object",
            "properties": { "warehouse": name_schema("Warehouse, e.g. main"), "sku": name_schema("Item SKU") },
            "required": ["warehouse", "sku"],
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let inventory = inventory.clone();
            async move {
                let args: ReadArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                let stock = inventory.read(&call.principal.tenant, &args.warehouse, &args.sku).await;
                outcome(stock.map(|s| serde_json::to_value(s).unwrap_or(Value::Null)))
            }
        }),
    )
    .title("Read a stock level")
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .scopes(&[policy::READ])
    .cache_no_store()
}

pub fn inventory_propose(inventory: Inventory) -> Tool {
    Tool::new(
        "inventory_propose",
        "Proposes setting a stock level (nothing changes yet). Returns the operation id, its digest and status: `authorized` when policy allows it, or `proposed` with an approvalUrl a person must open. Then call inventory_apply.",
        json!({
            "type": "object",
            "properties": {
                "warehouse": name_schema("Warehouse, e.g. main"),
                "sku": name_schema("Item SKU"),
                "to": { "type": "integer", "minimum": 0, "maximum": crate::inventory::MAX_QUANTITY, "description": "The quantity wanted" },
                "expectedVersion": { "type": "integer", "minimum": 0, "description": "The version inventory_read returned" },
                "requestKey": { "type": "string", "minLength": 1, "maxLength": 64, "description": "Optional: repeating a proposal with this key returns the first one" },
                "taskScopes": { "type": "array", "items": { "type": "string" }, "description": "Optional: the scopes of your task, when narrower than yours" }
            },
            "required": ["warehouse", "sku", "to", "expectedVersion"],
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let inventory = inventory.clone();
            async move {
                let request: ProposeRequest = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                let proposed = inventory.propose(&call.principal, &request).await;
                outcome(proposed.map(|op| report(&op, &inventory.config.approvals_url)))
            }
        }),
    )
    .title("Propose a stock change")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&[policy::WRITE])
    .cache_no_store()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApplyArgs {
    #[serde(default)]
    operation_ids: Option<Vec<String>>,
}

pub fn inventory_apply(inventory: Inventory) -> Tool {
    Tool::new(
        "inventory_apply",
        "Executes your authorized proposals in the order you made them and stops at the first one still waiting for a person. Safe to repeat: an operation already done returns its first receipt. A version conflict is reported, never rebased: read again and propose again.",
        json!({
            "type": "object",
            "properties": { "operationIds": { "type": "array", "items": { "type": "string", "maxLength": 64 }, "maxItems": 100, "description": "Optional: only these operations" } },
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let inventory = inventory.clone();
            async move {
                let args: ApplyArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                let applied = inventory.apply(&call.principal, args.operation_ids.as_deref()).await;
                outcome(applied.map(|operations| json!({ "operations": operations })))
            }
        }),
    )
    .title("Apply approved stock changes")
    .annotations(writes())
    .scopes(&[policy::WRITE])
    .cache_no_store()
    .invalidates(&["inventory.*"])
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OperationArgs {
    operation_id: String,
}

pub fn inventory_operation(inventory: Inventory) -> Tool {
    Tool::new(
        "inventory_operation",
        "Shows one operation's record: the proposal, its digest, who authorized it under which policy version, every transition, how many times it was tried and the receipt that confirms the effect. Visible to its proposer and to approvers.",
        json!({
            "type": "object",
            "properties": { "operationId": { "type": "string", "minLength": 1, "maxLength": 64 } },
            "required": ["operationId"],
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let inventory = inventory.clone();
            async move {
                let args: OperationArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                let principal = &call.principal;
                let found = inventory.operation(&principal.tenant, &args.operation_id).await;
                outcome(found.and_then(|found| match found {
                    Some((op, _))
                        if op.proposal.proposer == principal.subject
                            || principal.unrestricted
                            || principal.scopes.contains(policy::APPROVE) =>
                    {
                        Ok(op.to_value())
                    }
                    _ => Err(InventoryError::NotFound),
                }))
            }
        }),
    )
    .title("Show an operation")
    .annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false))
    .scopes(&[policy::READ])
    .cache_no_store()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    warehouse: String,
    items: Vec<PlanLine>,
}

pub fn inventory_plan(inventory: Inventory) -> Tool {
    Tool::new(
        "inventory_plan",
        "A dry run: for each item, whether setting it to the wanted quantity (null: delete) is an insert, update, delete or unchanged against its current version. Writes no stock; the plan is kept one hour for inventory_apply_plan.",
        json!({
            "type": "object",
            "properties": {
                "warehouse": name_schema("Warehouse, e.g. main"),
                "items": { "type": "array", "minItems": 1, "maxItems": crate::inventory::MAX_PLAN_ITEMS, "items": {
                    "type": "object",
                    "properties": { "sku": name_schema("Item SKU"), "quantity": { "type": ["integer", "null"], "minimum": 0 } },
                    "required": ["sku", "quantity"], "additionalProperties": false } }
            },
            "required": ["warehouse", "items"],
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let inventory = inventory.clone();
            async move {
                let args: PlanArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                outcome(inventory.plan(&call.principal, &args.warehouse, &args.items).await)
            }
        }),
    )
    .title("Plan stock changes (dry run)")
    .annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
    .scopes(&[policy::WRITE])
    .cache_no_store()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApplyPlanArgs {
    plan_id: String,
    #[serde(default)]
    tolerated_percent: Option<u64>,
}

pub fn inventory_apply_plan(inventory: Inventory) -> Tool {
    Tool::new(
        "inventory_apply_plan",
        "Applies a plan from inventory_plan once, all items or none. Refuses if any item's version moved since the plan, if more than the tolerated share of items (default 50%) would change, or if a change needs a person. Repeating returns the first result.",
        json!({
            "type": "object",
            "properties": {
                "planId": { "type": "string", "minLength": 1, "maxLength": 64 },
                "toleratedPercent": { "type": "integer", "minimum": 0, "maximum": 100 }
            },
            "required": ["planId"],
            "additionalProperties": false
        }),
        handler(move |call: Call| {
            let inventory = inventory.clone();
            async move {
                let args: ApplyPlanArgs = match call.args() {
                    Ok(args) => args,
                    Err(error) => return Ok(error),
                };
                let tolerated = args.tolerated_percent.unwrap_or(policy::DEFAULT_TOLERATED_PERCENT);
                outcome(inventory.apply_plan(&call.principal, &args.plan_id, tolerated).await)
            }
        }),
    )
    .title("Apply a stock plan")
    .annotations(writes())
    .scopes(&[policy::WRITE])
    .cache_no_store()
    .invalidates(&["inventory.*"])
}

/// The inventory's tools.
pub fn tools(inventory: &Inventory) -> Vec<Tool> {
    vec![
        inventory_read(inventory.clone()),
        inventory_propose(inventory.clone()),
        inventory_apply(inventory.clone()),
        inventory_operation(inventory.clone()),
        inventory_plan(inventory.clone()),
        inventory_apply_plan(inventory.clone()),
    ]
}
