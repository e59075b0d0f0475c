//! `relevo-local`: a Relevo app served on this machine, as API Gateway's routing rules and the
//! per-method Lambdas serve it in production, in one process on 127.0.0.1. It is what a project's
//! `make run` and the testkit link: the router ([`router`]), the whole `main` of a local server
//! ([`run_local`]), the bounded body reader ([`body`]) and connection loop ([`serve`]), and the
//! JSON log setup ([`init_logging`], shared with the Lambda runner). It links no AWS SDK, no example app and no Lambda emulator
//! (those are this repository's development tools, in `relevo-gateway`).
//!
//! `POST /mcp` with an `Mcp-Method` header naming a known method goes to that method's handler
//! (`Route::Only`), exactly like a routing rule on that header; anything else goes to the
//! catch-all `mcp` handler (`Route::All`). Each handler still checks the body's method itself.
//! `GET /.well-known/oauth-protected-resource[/mcp]` is the metadata function; in dev mode
//! `GET /.well-known/jwks.json` publishes the dev issuer's key. `GET /mcp/server-card` and the
//! catalog (`/.well-known/ai-catalog.json`, `/.well-known/mcp/catalog.json`) are the
//! well-known function's too ([`relevo_protocol::card`]): public, like the metadata.
//!
//! Threat model: the server binds loopback only, and the core refuses foreign Host/Origin
//! values (DNS rebinding), so a web page cannot drive it through a victim's browser; the same
//! allow-list guards every other route it serves. Token injection (for test harnesses that
//! cannot send a token) exists only in dev mode, and every injected token still goes through
//! full verification. Bodies and connections are bounded in size and time ([`body`], [`serve`]).

pub mod body;
mod local;
pub mod serve;

pub use local::run_local;
/// The log setup of every runner; the local server's is [`LogFormat::Local`].
pub use relevo_protocol::observe::{LogFormat, init_logging};

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use relevo_auth::{AuthSettings, DevIssuer};
use relevo_protocol::wire::header;
use relevo_protocol::{McpServer, Method, ReplyBody, Route};

/// How the gateway picks a function, mirroring the two production front doors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    /// Front door A: routing rules on `Mcp-Method`, one function per method, catch-all `mcp`.
    #[default]
    PerMethod,
    /// Front door B: every request to the all-methods `mcp` function.
    Single,
}

impl std::str::FromStr for Routing {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "per-method" => Ok(Routing::PerMethod),
            "single" => Ok(Routing::Single),
            other => Err(format!(
                "unknown routing {other:?}: expected per-method or single"
            )),
        }
    }
}

/// A dev token the gateway adds to requests that carry none (for harnesses that cannot send one).
#[derive(Clone, Debug)]
pub struct InjectedToken {
    pub issuer: DevIssuer,
    pub tenant: String,
    pub subject: String,
    pub scopes: Vec<String>,
}

impl InjectedToken {
    pub fn mint(&self) -> Option<String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs();
        let scopes: Vec<&str> = self.scopes.iter().map(String::as_str).collect();
        self.issuer
            .mint(&self.tenant, &self.subject, &scopes, now, 300)
            .ok()
    }
}

#[derive(Clone, Default)]
pub struct GatewayOptions {
    pub max_body_bytes: usize,
    pub routing: Routing,
    /// Serves protected-resource metadata when authorization is on.
    pub auth: Option<AuthSettings>,
    /// The dev issuer whose JWKS the gateway publishes.
    pub dev_issuer: Option<DevIssuer>,
    pub inject_token: Option<InjectedToken>,
    /// The app's pages beside `/mcp`, under their own prefix.
    pub pages: Option<Arc<dyn relevo_protocol::Pages>>,
}

/// The function a request would reach in production, decided on the `Mcp-Method` header only.
pub fn route_for(headers: &http::HeaderMap) -> Route {
    let mut values = headers.get_all(header::METHOD).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => value
            .to_str()
            .ok()
            .and_then(Method::from_wire)
            .map_or(Route::All, Route::Only),
        _ => Route::All,
    }
}

/// The router's state, cloned by every handler and middleware of every request: two `Arc`s.
#[derive(Clone)]
struct Gateway {
    server: Arc<McpServer>,
    options: Arc<GatewayOptions>,
}

/// The gateway's router: `/mcp` for MCP, the well-known documents, 404 elsewhere.
pub fn router(server: McpServer, options: GatewayOptions) -> Router {
    let mut router = Router::new().route("/mcp", axum::routing::any(serve_mcp));
    for path in relevo_auth::METADATA_PATHS {
        router = router.route(path, axum::routing::any(serve_metadata));
    }
    router = router.route("/.well-known/jwks.json", axum::routing::get(serve_jwks));
    let card = format!("/mcp{}", relevo_protocol::card::CARD_SUFFIX);
    for path in
        std::iter::once(card.as_str()).chain(relevo_protocol::card::CATALOG_PATHS.iter().copied())
    {
        router = router.route(path, axum::routing::any(serve_discovery));
    }
    if let Some(prefix) = options
        .pages
        .as_ref()
        .map(|pages| pages.prefix().to_string())
    {
        router = router.route(&prefix, axum::routing::any(serve_pages));
        router = router.route(
            &format!("{prefix}/{{*rest}}"),
            axum::routing::any(serve_pages),
        );
    }
    let gateway = Gateway {
        server: Arc::new(server),
        options: Arc::new(options),
    };
    router
        .layer(axum::middleware::from_fn_with_state(
            gateway.clone(),
            allowed_host,
        ))
        .with_state(gateway)
}

/// The Host/Origin allow-list of `/mcp`, on every route the gateway serves (metadata, keys,
/// the app's pages): a page answered to a rebound DNS name is a page an attacker's site can read.
/// `/mcp` itself is checked by the core, which answers in JSON-RPC.
async fn allowed_host(
    State(gateway): State<Gateway>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    if request.uri().path() == "/mcp" {
        return next.run(request).await;
    }
    match gateway
        .server
        .origin_policy()
        .admit(request.uri(), request.headers())
    {
        Ok(_) => next.run(request).await,
        Err(refused) => {
            let body = serde_json::json!({ "error": "forbidden", "error_description": refused.to_string() });
            (http::StatusCode::FORBIDDEN, axum::Json(body)).into_response()
        }
    }
}

async fn serve_metadata(State(gateway): State<Gateway>, request: Request) -> Response {
    match &gateway.options.auth {
        Some(settings) => {
            let (parts, body) =
                relevo_auth::metadata_response(settings, request.method(), request.uri().path())
                    .into_parts();
            Response::from_parts(parts, Body::from(body))
        }
        None => http::StatusCode::NOT_FOUND.into_response(),
    }
}

/// The server card and the catalog, as the well-known function serves them.
async fn serve_discovery(State(gateway): State<Gateway>, request: Request) -> Response {
    let (parts, body) = gateway
        .server
        .serve_discovery(request.method(), request.uri(), request.headers())
        .into_parts();
    Response::from_parts(parts, Body::from(body))
}

/// The app's pages (the `pages` function), served in-process.
async fn serve_pages(State(gateway): State<Gateway>, request: Request) -> Response {
    let Some(pages) = gateway.options.pages.clone() else {
        return http::StatusCode::NOT_FOUND.into_response();
    };
    let (parts, body) = request.into_parts();
    let bytes = match body::read_limited(body, 64 * 1024).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let mut refused = http::StatusCode::PAYLOAD_TOO_LARGE.into_response();
            body::close_unless_drained(&mut refused, error);
            return refused;
        }
    };
    let gate = gateway.server.page_gate();
    let served = relevo_protocol::pages::serve(
        &*pages,
        &gate,
        &parts.method,
        parts.uri.path(),
        &parts.headers,
        &bytes,
    );
    let (parts_out, html) = served.await.into_parts();
    Response::from_parts(parts_out, Body::from(html))
}

async fn serve_jwks(State(gateway): State<Gateway>) -> Response {
    match &gateway.options.dev_issuer {
        Some(issuer) => axum::Json(issuer.jwks()).into_response(),
        None => http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn serve_mcp(State(gateway): State<Gateway>, request: Request) -> Response {
    let options = &gateway.options;
    let route = match options.routing {
        Routing::PerMethod => route_for(request.headers()),
        Routing::Single => Route::All,
    };
    let (mut parts, body) = request.into_parts();
    if let Some(injected) = &options.inject_token
        && !parts.headers.contains_key(http::header::AUTHORIZATION)
        && let Some(value) = injected
            .mint()
            .and_then(|t| http::HeaderValue::from_str(&format!("Bearer {t}")).ok())
    {
        parts.headers.insert(http::header::AUTHORIZATION, value);
    }
    let (bytes, refused) = match body::read_limited(body, options.max_body_bytes).await {
        Ok(bytes) => (bytes, None),
        Err(error @ (body::BodyError::TooSlow | body::BodyError::Broken)) => {
            let status = if error == body::BodyError::TooSlow {
                http::StatusCode::REQUEST_TIMEOUT
            } else {
                http::StatusCode::BAD_REQUEST
            };
            let answer = serde_json::json!({ "jsonrpc": "2.0", "error": { "code": -32600, "message": error.to_string() } });
            let mut response = (status, axum::Json(answer)).into_response();
            body::close_unless_drained(&mut response, error);
            return response;
        }
        // Over the limit: give the core a body it will refuse by size (after its Host checks).
        Err(error) => (
            Bytes::from(vec![b' '; options.max_body_bytes + 1]),
            Some(error),
        ),
    };
    let reply = gateway
        .server
        .handle(route, http::Request::from_parts(parts, bytes))
        .await;
    let (parts, body) = reply.into_parts();
    let body = match body {
        ReplyBody::Full(bytes) => Body::from(bytes),
        streamed => Body::from_stream(
            streamed
                .into_chunks()
                .map(Ok::<_, std::convert::Infallible>),
        ),
    };
    let mut response = Response::from_parts(parts, body);
    if let Some(error) = refused {
        body::close_unless_drained(&mut response, error);
    }
    response
}
