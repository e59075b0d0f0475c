//! One binary for every function of a stack, told which by name: the conformance fixtures'
//! binary does this (`RELEVO_FUNCTION`), so they are never linked into a real function.
//!
//! Invariant: the names are the template's (a `[[bin]]` of `functions/`); a method
//! function's name is its wire method with `-` for `/`. An unknown name refuses to start.

use lambda_http::Error;
use relevo_protocol::{AppBuilder, Method, Route};

use crate::{run, run_pages, run_reconciler, run_well_known, run_worker};

/// The function a deployment names `name` (a `[[bin]]` of `functions/` and the template's binary):
/// for a binary that serves every function of a stack, told which by `RELEVO_FUNCTION` (the
/// conformance fixtures' binary does this, so they are never linked into a real function).
pub async fn run_function(name: &str, app: impl AppBuilder) -> Result<(), Error> {
    let method = match name {
        "mcp" => return run(Route::All, app).await,
        "worker" => return run_worker(app).await,
        "reconciler" => return run_reconciler(app).await,
        "pages" => return run_pages(app).await,
        "well-known" => return run_well_known(app).await,
        "discover" => Method::Discover,
        "completion" => Method::Complete,
        "subscriptions-listen" => Method::SubscriptionsListen,
        other => Method::from_wire(&other.replace('-', "/"))
            .ok_or_else(|| Error::from(format!("no function {other:?}")))?,
    };
    run(Route::Only(method), app).await
}
