//! The local gateway: what API Gateway's routing rules and the per-method Lambdas do in
//! production, in one process on 127.0.0.1.
//!
//! `POST /mcp` with an `Mcp-Method` header naming a known method goes to that method's handler
//! (`Route::Only`), exactly like a routing rule on that header; anything else goes to the
//! catch-all `mcp` handler (`Route::All`). Each handler still checks the body's method itself.
//! Threat model: the gateway binds loopback only, and the core refuses foreign Host/Origin
//! values (DNS rebinding), so a web page cannot drive it through a victim's browser.

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use relevo_protocol::wire::header;
use relevo_protocol::{McpServer, Method, ReplyBody, Route};
use tokio_stream::wrappers::UnboundedReceiverStream;

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
            other => Err(format!("unknown routing {other:?}: expected per-method or single")),
        }
    }
}

/// The function a request would reach in production, decided on the `Mcp-Method` header only.
pub fn route_for(headers: &http::HeaderMap) -> Route {
    let mut values = headers.get_all(header::METHOD).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => value.to_str().ok().and_then(Method::from_wire).map_or(Route::All, Route::Only),
        _ => Route::All,
    }
}

/// The gateway's router: `/mcp` for MCP, 404 elsewhere.
pub fn router(server: McpServer, max_body_bytes: usize, routing: Routing) -> Router {
    Router::new().route("/mcp", axum::routing::any(serve_mcp)).with_state(Gateway { server, max_body_bytes, routing })
}

#[derive(Clone)]
struct Gateway {
    server: McpServer,
    max_body_bytes: usize,
    routing: Routing,
}

async fn serve_mcp(State(gateway): State<Gateway>, request: Request) -> Response {
    let Gateway { server, max_body_bytes, routing } = gateway;
    let route = match routing {
        Routing::PerMethod => route_for(request.headers()),
        Routing::Single => Route::All,
    };
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, max_body_bytes + 1).await {
        Ok(bytes) => bytes,
        // Over the limit (or a broken upload): give the core a body it will refuse by size.
        Err(_) => Bytes::from(vec![b' '; max_body_bytes + 1]),
    };
    let reply = server.handle(route, http::Request::from_parts(parts, bytes)).await;
    let (parts, body) = reply.into_parts();
    let body = match body {
        ReplyBody::Full(bytes) => Body::from(bytes),
        ReplyBody::Sse(frames) => {
            Body::from_stream(UnboundedReceiverStream::new(frames).map(Ok::<_, std::convert::Infallible>))
        }
    };
    Response::from_parts(parts, body)
}
