//! The MCP functions (`mcp` and one per method): each API Gateway proxy event becomes an
//! `http::Request<Bytes>` for [`McpServer::handle`] and its reply goes back (module `events`).
//!
//! Two response modes, chosen per function by `RELEVO_RESPONSE_STREAMING`:
//! - buffered (default): an SSE reply is collected whole and returned as one `text/event-stream`
//!   body, which is valid SSE (notifications first, the response last); listen streams end at
//!   once. This is what HTTP APIs (front door B) and plain REST integrations need.
//! - streaming (`true`): Lambda response streaming (prelude, eight NUL bytes, then each SSE frame
//!   as it is produced), for REST integrations with `ResponseTransferMode: RESPONSE_STREAM`
//!   (front door A). A streamed answer to a buffered invoke would not be a proxy response, so the
//!   template sets the variable only where the integration streams.
//!
//! What streaming costs: the prelude and a JSON answer leave as one chunk, on a Runtime API
//! connection with `TCP_NODELAY` ([`crate::runtime`]). lambda_runtime 1.5 wrote them as four
//! writes on a connection of its own without it, and Nagle's algorithm held each until the
//! Runtime API's delayed ACK (~40 ms on Linux): a streamed invocation lasted ~40 ms longer than
//! a buffered one. `tests/streamed_wall_time.rs` keeps it from coming back.
//!
//! Cancellation by a closed stream (Streamable HTTP, "Cancellation") follows the body: the core
//! cancels a call and drops its handler when the reply's SSE body is dropped. Streaming, the
//! runtime drops the body when its write of the stream to the Runtime API fails; whether a
//! client's disconnect from the front door makes that write fail is up to the platform (not
//! observable here), and when it does not, the call runs on as buffered does. Buffered, there is
//! nothing to close: the body is collected whole inside the invocation, the client's disconnect
//! never reaches the function, and the handler runs to its end or to the invocation's deadline.
//! A 2025-11-25 `notifications/cancelled` arrives in another invocation than the call it names
//! and is ignored there ([`relevo_protocol::legacy::InFlight`]).
//!
//! Behind a custom domain the catch-all also receives the public documents' paths — the
//! protected-resource metadata, the server card and the catalog — (no routing rule claims
//! them), so the all-methods function answers them as `well-known` does, through the same
//! [`public_document`], behind the same Host/Origin allow-list.

use std::sync::Arc;

use bytes::Bytes;
use http::Request;
use lambda_http::{Body, Error, Response};
use relevo_auth::AuthSettings;
use relevo_protocol::{AppBuilder, McpServer, Method, Reply, ReplyBody, Route};

use crate::env::{server_from_env, streaming_from_env};
use crate::events::buffered;
use crate::well_known::public_document;
use crate::{keys, otlp};

/// Serves one proxy event, buffered.
pub async fn handle_event(
    server: &McpServer,
    route: Route,
    event: Request<Bytes>,
) -> Response<Body> {
    buffered(serve(server, route, None, event).await).await
}

/// Serves one proxy event, buffered, as the all-methods function does behind a custom domain:
/// the public documents too (the metadata with `metadata`, the server card and the catalog).
pub async fn handle_catch_all_event(
    server: &McpServer,
    metadata: Option<&AuthSettings>,
    event: Request<Bytes>,
) -> Response<Body> {
    buffered(serve(server, Route::All, Some(metadata), event).await).await
}

/// The server's reply to one event; the all-methods function (`public` set) also answers the
/// public documents, as the `well-known` function does.
async fn serve(
    server: &McpServer,
    route: Route,
    public: Option<Option<&AuthSettings>>,
    event: Request<Bytes>,
) -> Reply {
    if let Some(metadata) = public
        && let Some(response) = public_document(server, metadata, &event)
    {
        let (parts, body) = response.into_parts();
        let body = match body {
            Body::Text(text) => Bytes::from(text),
            Body::Binary(bytes) => Bytes::from(bytes),
            Body::Empty => Bytes::new(),
            _ => Bytes::new(),
        };
        return Response::from_parts(parts, ReplyBody::Full(body));
    }
    server.handle(route, event).await
}

pub async fn run(route: Route, app: impl AppBuilder) -> Result<(), Error> {
    crate::serve::on_all_cores(move || serve_mcp(route, app)).await
}

/// [`run`] on the runtime it was moved to.
async fn serve_mcp(route: Route, app: impl AppBuilder) -> Result<(), Error> {
    if matches!(route, Route::All | Route::Only(Method::ToolsCall)) {
        // Tool arguments are validated: the validator's one-time setup overlaps init's waits.
        relevo_protocol::schema::prepare_validator();
    }
    crate::logging::init_telemetry();
    let streaming = streaming_from_env();
    let server = match server_from_env(streaming, &app).await {
        Ok(server) => Arc::new(server),
        Err(error) => return Err(crate::runtime::init_failed(error).await),
    };
    // Behind a custom domain the catch-all also receives the public documents' paths (no
    // routing rule claims them), so the all-methods function answers them as `well-known` does.
    let public = Arc::new((route == Route::All).then(|| AuthSettings::from_env("").ok()));
    let reply = move |event: Request<Bytes>| {
        let (server, public) = (server.clone(), public.clone());
        async move {
            keys::refresh_if_due().await;
            let public = public.as_ref().as_ref().map(Option::as_ref);
            let reply = serve(&server, route, public, event).await;
            // The request's span has ended; send it before the environment may be frozen.
            otlp::flush().await;
            reply
        }
    };
    if streaming {
        crate::serve::serve_http_streaming(reply).await
    } else {
        crate::serve::serve_http(move |event| {
            // The reply's future is made inside the block that awaits it ([`crate::serve`]).
            let reply = reply.clone();
            async move { buffered(reply(event).await).await }
        })
        .await
    }
}
