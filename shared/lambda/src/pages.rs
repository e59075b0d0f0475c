//! The `pages` function: the pages an app serves beside `/mcp`,
//! through the core's page gate (tenant quotas counted in the store).
//!
//! Threat model: the pages are behind the server's Host/Origin allow-list (a page answered to a
//! rebound DNS name is one an attacker's site can read); the pages sign people in with the
//! server's authenticator and seal their own tokens with its keys, both from the same ports as
//! the MCP functions. An app without pages answers 404.

use bytes::Bytes;
use http::Request;
use lambda_http::{Body, Error, Response};
use relevo_protocol::AppBuilder;

use crate::env::{ports_from_env, settings_from_env};
use crate::events::forbidden;
use crate::keys;

/// The `pages` function: the pages `app` serves beside `/mcp`,
/// behind the server's Host/Origin allow-list. An app without pages answers 404.
pub async fn run_pages(app: impl AppBuilder) -> Result<(), Error> {
    crate::serve::on_all_cores(move || serve_pages(app)).await
}

/// [`run_pages`] on the runtime it was moved to.
async fn serve_pages(app: impl AppBuilder) -> Result<(), Error> {
    crate::logging::init_telemetry();
    let (settings, ports) = match configured().await {
        Ok(configured) => configured,
        Err(error) => return Err(crate::runtime::init_failed(error).await),
    };
    let origins = ports.origins.clone();
    let pages = app(&ports).find_pages().cloned();
    let gate = relevo_protocol::PageGate {
        quotas: settings.config.quotas.clone(),
        store: ports.records.clone(),
        clock: ports.clock.clone(),
        leases: std::sync::Arc::new(settings.config.quotas.leases()),
    };
    crate::serve::serve_http(move |event: Request<Bytes>| {
        let (pages, origins, gate) = (pages.clone(), origins.clone(), gate.clone());
        async move {
            keys::refresh_if_due().await;
            if let Err(refused) = origins.admit(event.uri(), event.headers()) {
                return forbidden(&refused);
            }
            let Some(pages) = pages else {
                let mut response = Response::new(Body::Empty);
                *response.status_mut() = lambda_http::http::StatusCode::NOT_FOUND;
                return response;
            };
            let (parts, bytes) = event.into_parts();
            // Behind a stage or a base path the pages are still addressed from their prefix.
            let path = parts.uri.path();
            let path = path.find(pages.prefix()).map_or(path, |at| &path[at..]);
            let served = relevo_protocol::pages::serve(
                &*pages,
                &gate,
                &parts.method,
                path,
                &parts.headers,
                &bytes,
            );
            let (out, html) = served.await.into_parts();
            Response::from_parts(out, Body::Text(html))
        }
    })
    .await
}

/// The settings and ports the pages are served from.
async fn configured() -> Result<(relevo_protocol::Settings, relevo_protocol::Ports), Error> {
    let settings = settings_from_env().await?;
    let ports = ports_from_env(&settings).await?;
    Ok((settings, ports))
}
