//! `relevo-ops`: this repository's operator CLI, the framework's ([`relevo_ops`]) with the shop's
//! one hook registered. `ops reconcile` settles an operation through the inventory's own
//! [`relevo_app::inventory::Inventory::settle`] (the code the worker's settle jobs run), over the
//! store the operator names; every other command is the framework's, unchanged.
//!
//! Threat model: as [`relevo_ops`]; the hook adds no input of its own (the tenant and operation id
//! come from the command line, the store from the backend flags).

use std::process::ExitCode;

use relevo_app::inventory::InventoryError;
use relevo_ops::{Hooks, Ports};

fn main() -> ExitCode {
    let hooks = Hooks::new().reconcile(|ports: Ports, tenant: String, id: String| async move {
        let inventory = relevo_app::inventory(&ports).ok_or_else(|| {
            InventoryError::Internal("the app has no inventory over this store".into())
        })?;
        inventory.settle(&tenant, &id).await
    });
    relevo_ops::run("relevo-ops", std::env::args().skip(1).collect(), hooks)
}
