//! The inventory service as the inventory tests run it: three service instances (each its own
//! `Inventory` and warehouse client) over one raced store ([`RaceStore`]), on SQLite or DynamoDB
//! (moto), with one manual clock they share; and the principals and requests they use.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use relevo_app::inventory::{Inventory, InventoryConfig, ProposeRequest, SimulatedWarehouse};
use relevo_protocol::Principal;
use relevo_state::ledger::OpStatus;
use relevo_state::{ManualClock, RandomIds, RecordStore};
use serde_json::json;

use crate::race::{Backend, Both, RaceStore, Seed, backend};

/// The time every world starts at.
pub const T0: u64 = 1_900_000_000;

pub struct World {
    /// The one store every instance writes through, with its history.
    pub store: Arc<RaceStore<Both>>,
    pub instances: Vec<Inventory>,
    /// The instances' clock, starting at [`T0`].
    pub clock: ManualClock,
}

/// A fresh store of `kind`, raced by `seed`, and three instances over it.
pub async fn world(kind: Backend, seed: Seed) -> World {
    let store = Arc::new(RaceStore::new(
        Arc::new(Both(backend(kind).await)),
        seed,
        Duration::from_millis(3),
    ));
    let clock = ManualClock::at(T0);
    let instances = (0..3)
        .map(|_| {
            let records: Arc<dyn RecordStore> = store.clone();
            let downstream = SimulatedWarehouse {
                records: records.clone(),
                clock: Arc::new(clock.clone()),
                ids: Arc::new(RandomIds),
                window_secs: 24 * 3600,
            };
            Inventory {
                records,
                downstream: Arc::new(downstream),
                clock: Arc::new(clock.clone()),
                ids: Arc::new(RandomIds),
                config: InventoryConfig {
                    lease_secs: 30,
                    approvals_url: "/approvals".into(),
                },
                settler: None,
            }
        })
        .collect();
    World {
        store,
        instances,
        clock,
    }
}

impl World {
    /// Instance `n` (round robin).
    pub fn at(&self, n: usize) -> Inventory {
        self.instances[n % self.instances.len()].clone()
    }

    /// Stock commits per item, from the store's history.
    pub fn stock_commits(&self, sku: &str) -> usize {
        self.store
            .applied("stock")
            .iter()
            .filter(|(key, _)| key.id.ends_with(&format!("/{sku}")))
            .count()
    }

    /// Downstream effects per operation id.
    pub fn effects(&self) -> BTreeMap<String, usize> {
        let mut effects = BTreeMap::new();
        for written in self
            .store
            .history()
            .into_iter()
            .filter(|w| w.applied && w.call == "create")
        {
            for (key, _) in written
                .writes
                .into_iter()
                .filter(|(key, _)| key.kind == "warehouse-api")
            {
                *effects.entry(key.id).or_default() += 1;
            }
        }
        effects
    }

    /// (quantity, version) of `sku` in warehouse `main`.
    pub async fn stock(&self, sku: &str) -> (u64, u64) {
        let stock = self.instances[0]
            .read("acme", "main", sku)
            .await
            .expect("the stock reads");
        (stock.quantity, stock.version)
    }

    /// Stocks `sku` at `quantity` (from nothing) through a proposal policy authorizes.
    pub async fn seed_stock(&self, sku: &str, quantity: u64) {
        let agent = agent("setup");
        let op = self
            .at(0)
            .propose(&agent, &request(sku, quantity, 0))
            .await
            .expect("the stock is proposed");
        assert_eq!(
            op.status,
            OpStatus::Authorized,
            "a first small stock needs no person"
        );
        let applied = self
            .at(0)
            .apply(&agent, None)
            .await
            .expect("the stock is applied");
        assert_eq!(applied[0]["status"], "succeeded", "{applied:?}");
    }
}

/// An agent of tenant `acme` that may read and change stock.
pub fn agent(subject: &str) -> Principal {
    Principal::new("acme", subject, ["inventory:read", "inventory:write"])
}

/// A person of tenant `acme` who may approve.
pub fn person(subject: &str) -> Principal {
    Principal::new("acme", subject, ["inventory:read", "inventory:approve"])
}

/// A proposal to set `sku` in warehouse `main` to `to`, from `expected_version`.
pub fn request(sku: &str, to: u64, expected_version: u64) -> ProposeRequest {
    serde_json::from_value(
        json!({ "warehouse": "main", "sku": sku, "to": to, "expectedVersion": expected_version }),
    )
    .expect("a valid proposal")
}
