//! The example app Relevo ships, built on the public API of `relevo-protocol` only, as a team's
//! own app is: a shop (catalog, carts, a checkout the user confirms through elicitation), private
//! notes, a customer-data export that runs as a durable job, and an inventory whose larger changes
//! a person approves on its pages.
//!
//! [`app`] is the builder every runner takes (`relevo_lambda::run(route, relevo_app::app)`). The
//! app knows nothing of HTTP, Lambda or AWS: it gets its store, jobs, clock and ids as [`Ports`].

pub mod approvals;
pub mod create_once;
pub mod demo;
pub mod export;
pub mod inventory;
pub mod inventory_tools;
pub mod notes;
pub mod shop;

use std::sync::Arc;
use std::time::Duration;

use relevo_protocol::{App, Ports};

/// Knobs of the example app.
#[derive(Debug, Clone)]
pub struct ShopConfig {
    /// Paces the export's reads (the stand-in for a slow source).
    pub export_window: Duration,
}

impl ShopConfig {
    /// `RELEVO_EXPORT_WINDOW_MS` (default 250 ms).
    pub fn from_env() -> Self {
        let millis = std::env::var("RELEVO_EXPORT_WINDOW_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(250);
        ShopConfig {
            export_window: Duration::from_millis(millis),
        }
    }
}

/// The example app over `ports`, configured from the environment.
pub fn app(ports: &Ports) -> App {
    app_with(ports, &ShopConfig::from_env())
}

/// The example app over `ports`: the features whose ports exist, their job runners and the
/// approval pages.
pub fn app_with(ports: &Ports, config: &ShopConfig) -> App {
    let mut app = demo::app(ports);
    if ports.jobs.is_some() {
        let window = config.export_window;
        app = app.job(&export::KIND, move |input, cx| {
            export::run(window, input, cx)
        });
    }
    if let Some(inventory) = inventory(ports) {
        let pages = approvals::ApprovalPages {
            inventory: inventory.clone(),
            auth: ports.auth.clone(),
            keys: ports.keys.clone(),
            clock: ports.clock.clone(),
            origins: ports.origins.clone(),
        };
        app = app
            .job(&inventory::SETTLE, move |input, cx| {
                inventory.clone().settle_job(input, cx)
            })
            .pages(Arc::new(pages));
    }
    app.with_manifest()
}

/// The inventory service over these ports, with the simulated warehouse API downstream
/// (idempotency window: one day). `None` without a record store.
pub fn inventory(ports: &Ports) -> Option<inventory::Inventory> {
    let records = ports.records.clone()?;
    let downstream = inventory::SimulatedWarehouse {
        records: records.clone(),
        clock: ports.clock.clone(),
        ids: ports.ids.clone(),
        window_secs: 24 * 3600,
    };
    Some(inventory::Inventory {
        records,
        downstream: Arc::new(downstream),
        clock: ports.clock.clone(),
        ids: ports.ids.clone(),
        config: inventory::InventoryConfig {
            approvals_url: ports.page_url(approvals::PREFIX),
            ..Default::default()
        },
        settler: ports.jobs.clone(),
    })
}
