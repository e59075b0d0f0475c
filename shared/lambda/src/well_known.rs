//! The `well-known` function: protected-resource metadata (RFC 9728) on GET, so that a client
//! refused with `401` finds the authorization server.
//!
//! Threat model: the document is public, but it is served only to Hosts and Origins on the
//! server's allow-list, as `/mcp` is: a page answered to a rebound DNS name is one an attacker's
//! site can read.

use lambda_http::{Body, Error, Request, Response, service_fn};
use relevo_auth::AuthSettings;

use crate::events::forbidden;

/// The `well-known` function: protected-resource metadata (RFC 9728) on GET.
pub async fn run_well_known() -> Result<(), Error> {
    crate::logging::init_telemetry();
    let settings = AuthSettings::from_env("")?;
    let origins = relevo_protocol::origin_policy(&|name: &str| std::env::var(name).ok());
    lambda_http::run(service_fn(move |event: Request| {
        let (settings, origins) = (settings.clone(), origins.clone());
        async move {
            if let Err(refused) = origins.check(event.headers()) {
                return Ok::<_, Error>(forbidden(&refused));
            }
            let response =
                relevo_auth::metadata_response(&settings, event.method(), event.uri().path());
            let (parts, body) = response.into_parts();
            Ok::<_, Error>(Response::from_parts(parts, Body::Text(body)))
        }
    }))
    .await
}
