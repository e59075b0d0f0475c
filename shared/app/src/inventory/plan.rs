//! Plans: a dry run of many item changes against the current versions, stored for a while, and
//! applied item by item under the same compare-and-set as a single change.

use std::collections::BTreeSet;

use relevo_protocol::Principal;
use relevo_state::ledger::LedgerError;
use relevo_state::{Owner, RecordKey, StoreError, TransactError, Write};
use serde::Deserialize;
use serde_json::{Value, json};

use super::window::{Window, window_key};
use super::{
    Inventory, InventoryError, MAX_PLAN_ITEMS, MAX_QUANTITY, PLAN_LIFETIME_SECS, policy, stock_key,
    stock_write, valid_name,
};

/// One wanted line of a plan: a quantity, or `None` to delete the item.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanLine {
    /// Item SKU
    #[schemars(length(min = 1, max = 32), pattern("^[A-Za-z0-9-]+$"))]
    pub sku: String,
    /// The quantity wanted; null deletes the item
    #[schemars(required, schema_with = "wanted_quantity")]
    pub quantity: Option<u64>,
}

/// A quantity or null, and present either way: leaving it out is not a way to delete.
fn wanted_quantity(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "anyOf": [{ "type": "integer", "minimum": 0 }, { "type": "null" }] })
}

fn plan_key(caller: &Principal, id: &str) -> RecordKey {
    RecordKey::new(
        Owner::personal(&caller.tenant, &caller.subject),
        "inventory-plan",
        id,
    )
}

impl Inventory {
    /// A dry run: per item insert / update / delete / unchanged against the current versions,
    /// stored as one record for [`PLAN_LIFETIME_SECS`]. Nothing else is written.
    pub async fn plan(
        &self,
        caller: &Principal,
        warehouse: &str,
        lines: &[PlanLine],
    ) -> Result<Value, InventoryError> {
        if !policy::effective_scopes(caller, None).contains(policy::WRITE) {
            return Err(InventoryError::NotPermitted(policy::WRITE));
        }
        valid_name(warehouse, "warehouse")?;
        if lines.is_empty() || lines.len() > MAX_PLAN_ITEMS {
            return Err(InventoryError::Invalid(format!(
                "a plan has 1 to {MAX_PLAN_ITEMS} items"
            )));
        }
        let mut skus = BTreeSet::new();
        let mut items = Vec::with_capacity(lines.len());
        for line in lines {
            valid_name(&line.sku, "sku")?;
            if !skus.insert(line.sku.clone()) {
                return Err(InventoryError::Invalid(format!(
                    "{} appears twice",
                    line.sku
                )));
            }
            if line.quantity.is_some_and(|q| q > MAX_QUANTITY) {
                return Err(InventoryError::Invalid(format!(
                    "quantities are at most {MAX_QUANTITY}"
                )));
            }
            let stock = self.read(&caller.tenant, warehouse, &line.sku).await?;
            let action = match (stock.exists, line.quantity) {
                (true, None) => "delete",
                (true, Some(q)) if q == stock.quantity => "unchanged",
                (true, Some(_)) => "update",
                (false, Some(_)) => "insert",
                (false, None) => "unchanged",
            };
            items.push(json!({
                "sku": line.sku, "action": action, "from": stock.exists.then_some(stock.quantity),
                "to": line.quantity, "version": stock.version,
            }));
        }
        let now = self.now();
        let id = self.ids.new_id();
        let changed = items.iter().filter(|i| i["action"] != "unchanged").count();
        let plan = json!({
            "planId": id, "warehouse": warehouse, "items": items, "changed": changed,
            "policyVersion": policy::POLICY_VERSION, "expiresAt": now + PLAN_LIFETIME_SECS, "applied": null,
        });
        self.records
            .create(
                &plan_key(caller, &id),
                &plan,
                Some(now + PLAN_LIFETIME_SECS),
                now,
            )
            .await?;
        Ok(plan)
    }

    /// Applies a stored plan once, in one transaction: every changed item by compare-and-set,
    /// every unchanged one checked at its version. Refuses (writing nothing) if any version moved,
    /// if more than `tolerated_percent` of the items change, or if a change needs a person. A
    /// repeat returns the first result.
    pub async fn apply_plan(
        &self,
        caller: &Principal,
        id: &str,
        tolerated_percent: u64,
    ) -> Result<Value, InventoryError> {
        if !policy::effective_scopes(caller, None).contains(policy::WRITE) {
            return Err(InventoryError::NotPermitted(policy::WRITE));
        }
        let now = self.now();
        let key = plan_key(caller, id);
        let Some(plan) = self.records.get(&key, now).await? else {
            return Err(InventoryError::NotFound);
        };
        if !plan.body["applied"].is_null() {
            return Ok(plan.body["applied"].clone());
        }
        if plan.body["policyVersion"] != policy::POLICY_VERSION {
            return Err(LedgerError::PolicyChanged {
                was: plan.body["policyVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
                now: policy::POLICY_VERSION.into(),
            }
            .into());
        }
        let warehouse = plan.body["warehouse"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let items = plan.body["items"].as_array().cloned().unwrap_or_default();
        let changed = plan.body["changed"].as_u64().unwrap_or(0);
        if changed * 100 > tolerated_percent.min(100) * items.len() as u64 {
            return Err(InventoryError::Invalid(format!(
                "the plan changes {changed} of {} items, more than the tolerated {tolerated_percent}%",
                items.len()
            )));
        }
        let mut writes = Vec::with_capacity(2 * items.len() + 1);
        // Each changed item's policy window, written in the same transaction (after the items).
        let mut windows = Vec::new();
        let result = json!({ "planId": id, "applied": true, "changed": changed, "appliedAt": now, "items": items });
        let mut done = plan.body.clone();
        done["applied"] = result.clone();
        writes.push(Write::Update {
            key: key.clone(),
            expected_revision: plan.revision,
            body: done,
        });
        for item in &items {
            let sku = item["sku"].as_str().unwrap_or_default();
            let version = item["version"].as_u64().unwrap_or(0);
            let from = item["from"].as_u64().unwrap_or(0);
            let to = item["to"].as_u64();
            if item["action"] != "unchanged" {
                let mut reasons = policy::needs_person(&warehouse, from, to.unwrap_or(0));
                let at = window_key(&caller.tenant, &warehouse, sku);
                let window = Window::from_record(
                    at.clone(),
                    self.records.get(&at, now).await?.as_ref(),
                    now,
                )?;
                let units = from.abs_diff(to.unwrap_or(0));
                if reasons.is_empty() {
                    reasons.extend(window.needs_person(units));
                }
                if !reasons.is_empty() {
                    // A racing apply of this same plan may have committed since the plan was read:
                    // its own units are then in the window. A repeat returns the first result.
                    if let Some(current) = self.records.get(&key, now).await?
                        && !current.body["applied"].is_null()
                    {
                        return Ok(current.body["applied"].clone());
                    }
                    return Err(InventoryError::Invalid(format!(
                        "{sku} needs a person ({}): propose it with inventory_propose",
                        reasons.join("; ")
                    )));
                }
                windows.push(window.add(units, &format!("plan/{id}"), now));
            }
            writes.push(match item["action"].as_str() {
                Some("unchanged") => Write::Check {
                    key: stock_key(&caller.tenant, &warehouse, sku),
                    expected_revision: version,
                },
                _ => stock_write(&caller.tenant, &warehouse, sku, version, to),
            });
        }
        let items_end = writes.len();
        writes.extend(windows);
        match self.records.transact(&writes, now).await {
            Ok(_) => Ok(result),
            // An item's window moved (another change of it without a person): try again.
            Err(TransactError::Refused { index, .. }) if index >= items_end => {
                Err(LedgerError::Raced.into())
            }
            Err(TransactError::Refused { index: 0, .. }) => {
                match self.records.get(&key, now).await? {
                    Some(current) if !current.body["applied"].is_null() => {
                        Ok(current.body["applied"].clone())
                    }
                    _ => Err(LedgerError::Raced.into()),
                }
            }
            Err(TransactError::Refused { index, cause }) => {
                let item = &items[index - 1];
                let current = match cause {
                    StoreError::Conflict { current, .. } | StoreError::AlreadyExists(current) => {
                        current.revision
                    }
                    _ => 0,
                };
                Err(InventoryError::VersionConflict {
                    resource: format!(
                        "stock/{warehouse}/{}",
                        item["sku"].as_str().unwrap_or_default()
                    ),
                    expected: item["version"].as_u64().unwrap_or(0),
                    current,
                })
            }
            Err(other) => Err(other.into()),
        }
    }
}
