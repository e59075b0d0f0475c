//! The `well-known` function: the public documents about the server, on GET: protected-resource
//! metadata (RFC 9728), so that a client refused with `401` finds the authorization server; the
//! server card beside the MCP endpoint (`/mcp/server-card`) and the AI Catalog pointing at it
//! (`/.well-known/ai-catalog.json`, `/.well-known/mcp/catalog.json`), from
//! [`relevo_protocol::card`]. Behind a custom domain the catch-all `mcp` function answers the
//! same paths through the same [`public_document`].
//!
//! The server behind the card is built as the MCP functions build theirs (the same app, store
//! and settings, [`McpServer::from_ports`]), so the card's protocol versions are the ones
//! `server/discover` lists; building it reads nothing (no key, table or queue is touched), so
//! the function keeps a role without permissions.
//!
//! Threat model: the documents are public (no token, open CORS, nothing in them depends on a
//! caller), but they are served only to Hosts and Origins on the server's allow-list, as `/mcp`
//! is: a page answered to a rebound DNS name is one an attacker's site can read. They read no
//! store, so a flood costs compute only, bounded by the front door's throttling and the
//! documents' `Cache-Control`.

use bytes::Bytes;
use http::Request;
use lambda_http::{Body, Error, Response};
use relevo_auth::AuthSettings;
use relevo_protocol::{AppBuilder, McpServer, NoAuth, Settings};

use crate::env::backend_from_env;
use crate::events::forbidden;

/// The `well-known` function: the metadata, the server card and the catalog of `app` on GET.
pub async fn run_well_known(app: impl AppBuilder) -> Result<(), Error> {
    crate::serve::on_all_cores(move || serve_documents(app)).await
}

/// [`run_well_known`] on the runtime it was moved to.
async fn serve_documents(app: impl AppBuilder) -> Result<(), Error> {
    crate::logging::init_telemetry();
    let configured = match AuthSettings::from_env("") {
        Ok(settings) => document_server(&app).await.map(|server| (settings, server)),
        Err(error) => Err(error.into()),
    };
    let (settings, server) = match configured {
        Ok((settings, server)) => (std::sync::Arc::new(settings), std::sync::Arc::new(server)),
        Err(error) => return Err(crate::runtime::init_failed(error).await),
    };
    crate::serve::serve_http(move |event: Request<Bytes>| {
        let response = public_document(&server, Some(&settings), &event)
            .unwrap_or_else(|| not_found(&server, &event));
        std::future::ready(response)
    })
    .await
}

/// The server whose card is published: the MCP functions' app, store and settings, with a
/// key ring of its own (the documents seal nothing, so the state keys are not read).
async fn document_server(app: &impl AppBuilder) -> Result<McpServer, Error> {
    let settings = Settings::from_env(true).map_err(|e| e.to_string())?;
    let ports = backend_from_env().await.with_security(
        std::sync::Arc::new(NoAuth),
        settings.keys.clone(),
        settings.config.origin_policy.clone(),
    );
    Ok(McpServer::from_ports(app, &ports, settings.config))
}

/// The answer to a request for one of the public documents (`None` for any other path):
/// `403` to a Host or Origin outside the allow-list, else the document (or its `404`/`405`).
/// `metadata` is `None` where authorization is not configured.
pub fn public_document(
    server: &McpServer,
    metadata: Option<&AuthSettings>,
    event: &Request<Bytes>,
) -> Option<Response<Body>> {
    let path = event.uri().path();
    let is_metadata = relevo_auth::METADATA_PATHS.contains(&path.trim_end_matches('/'));
    let is_card = relevo_protocol::card::document_at(path).is_some();
    let served = is_card || (is_metadata && metadata.is_some());
    if !served {
        return None;
    }
    if let Err(refused) = server.origin_policy().admit(event.uri(), event.headers()) {
        return Some(forbidden(&refused));
    }
    let response = match metadata {
        Some(settings) if is_metadata => {
            relevo_auth::metadata_response(settings, event.method(), path)
        }
        _ => server.serve_discovery(event.method(), event.uri(), event.headers()),
    };
    let (parts, body) = response.into_parts();
    Some(Response::from_parts(parts, Body::Text(body)))
}

/// Any other path: the metadata's own `404` (behind the allow-list like the documents).
fn not_found(server: &McpServer, event: &Request<Bytes>) -> Response<Body> {
    if let Err(refused) = server.origin_policy().admit(event.uri(), event.headers()) {
        return forbidden(&refused);
    }
    let mut response = Response::new(Body::Text(r#"{"error":"not_found"}"#.into()));
    *response.status_mut() = lambda_http::http::StatusCode::NOT_FOUND;
    response.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    response
}
