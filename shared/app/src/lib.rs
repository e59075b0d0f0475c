//! The example app Relevo ships, built on the public API of `relevo-protocol` only, as a team's
//! own app is: a shop (catalog, carts, a checkout the user confirms through elicitation), private
//! notes, a customer-data export that runs as a durable job, and an inventory whose larger changes
//! a person approves on its pages.
//!
//! [`app`] is the builder every runner takes (`relevo_lambda::run(route, relevo_app::app)`). The
//! app knows nothing of HTTP, Lambda or AWS: it gets its store, jobs, clock and ids as [`Ports`].
//!
//! Layout, one thing a file:
//! - [`demo`]: the small pieces (a few tools, a resource, a prompt);
//! - [`shop`]: the catalog, carts and the checkout;
//! - [`notes`]: private notes; [`export`]: the customer-data export job;
//! - [`inventory`](mod@inventory): the inventory service, with [`inventory::tools`] its MCP tools, and
//!   [`approvals`] its pages (under their own prefix, [`approvals::PREFIX`]);
//! - [`create_once`]: the create-once write the record-backed tools share;
//! - this file: the one assembly ([`features`], [`app_with`]) and the inventory's wiring.

pub mod approvals;
pub mod create_once;
pub mod demo;
pub mod export;
pub mod inventory;
pub mod notes;
pub mod shop;

use std::sync::Arc;
use std::time::Duration;

use relevo_protocol::{App, Ports, TaskAccess};

use crate::notes::NotesPorts;
use crate::shop::ShopPorts;

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

/// The example app over `ports`: [`features`], their job runners, the approval pages and the
/// manifest. The one place the app is assembled, with [`features`].
pub fn app_with(ports: &Ports, config: &ShopConfig) -> App {
    let mut app = features(ports);
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

/// The example app's tools, resources and prompts over `ports`, each feature only where its
/// ports exist: the small pieces ([`demo`]) and the catalog always; carts, checkout, notes and
/// the inventory with a record store; the export with a jobs engine. No job runners, pages or
/// manifest ([`app_with`] adds them): what the in-process tests serve.
pub fn features(ports: &Ports) -> App {
    let mut app = App::new("relevo-shop", env!("CARGO_PKG_VERSION"))
        .title("Relevo example shop")
        .description("An example shop: browse the catalog, fill a cart, check out, export data, keep notes.")
        .instructions("A Relevo example shop: browse the catalog, fill a cart, check out (you confirm the total), export customer data, keep private notes.")
        .tool(demo::greet_tool())
        .tool(demo::add_tool())
        .tool(demo::count_tool())
        .resource(demo::about_resource())
        .prompt(demo::explain_prompt())
        .tool(shop::catalog_list());
    if let Some(records) = &ports.records {
        let shop = ShopPorts {
            records: records.clone(),
            ids: ports.ids.clone(),
            clock: ports.clock.clone(),
        };
        app = app
            .tool(shop::cart_create(shop.clone()))
            .tool(shop::cart_add_item(shop.clone()))
            .tool(shop::cart_view_tool(shop.clone()))
            .tool(shop::cart_checkout(shop.clone()))
            .template(shop::cart_resource(shop));
    }
    if let Some(inventory) = inventory(ports) {
        use inventory::tools;
        app = app
            .tool(tools::inventory_read(inventory.clone()))
            .tool(tools::inventory_propose(inventory.clone()))
            .tool(tools::inventory_apply(inventory.clone()))
            .tool(tools::inventory_operation(inventory.clone()))
            .tool(tools::inventory_plan(inventory.clone()))
            .tool(tools::inventory_apply_plan(inventory.clone()))
            .tool(tools::inventory_decide(inventory))
            .resource(tools::approval_view());
    }
    if let Some(records) = &ports.records {
        let notes = NotesPorts {
            records: records.clone(),
            ids: ports.ids.clone(),
            clock: ports.clock.clone(),
        };
        app = app
            .tool(notes::note_create(notes.clone()))
            .tool(notes::note_read(notes.clone()))
            .template(notes::note_resource(notes));
    }
    if let Some(engine) = &ports.jobs {
        app = app
            .tool(export::export_start())
            .tool(export::export_status(engine.clone()))
            .tool(export::export_result(engine.clone()))
            .template(export::export_resource(engine.clone()))
            // export_start's jobs are tasks too: reading one is reading the export.
            .task_kind(
                &export::KIND,
                TaskAccess::owner()
                    .read_scopes(["exports:read"])
                    .write_scopes(["exports:write"]),
            );
    }
    app
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
