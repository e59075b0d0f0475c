//! The Lambda side of every function: read settings once per cold start, then turn each API
//! Gateway proxy event into an `http::Request<Bytes>` for [`McpServer::handle`] and back.
//!
//! Responses are buffered: an SSE reply is collected whole and returned as one
//! `text/event-stream` body, which is valid SSE (notifications first, the response last).
//! Lambda response streaming arrives with the deploy issue.

use bytes::Bytes;
use lambda_http::{Body, Error, Request, Response, service_fn};
use relevo_protocol::{McpServer, Route, Settings};

/// Builds the server from the environment. Lambdas never use ephemeral keys: the instance that
/// verifies a `requestState` is rarely the one that sealed it.
pub fn server_from_env() -> Result<McpServer, Error> {
    let settings = Settings::from_env(false)?;
    let app = relevo_app::build(&settings.app)?;
    Ok(McpServer::new(app, settings.config, settings.keys))
}

/// Serves one proxy event.
pub async fn handle_event(server: &McpServer, route: Route, event: Request) -> Response<Body> {
    let (parts, body) = event.into_parts();
    let request = http_request(parts, body);
    let (parts, body) = server.handle(route, request).await.into_parts();
    let bytes = body.collect().await;
    let body = match String::from_utf8(bytes.to_vec()) {
        Ok(text) if text.is_empty() => Body::Empty,
        Ok(text) => Body::Text(text),
        Err(error) => Body::Binary(error.into_bytes()),
    };
    Response::from_parts(parts, body)
}

fn http_request(parts: lambda_http::http::request::Parts, body: Body) -> lambda_http::http::Request<Bytes> {
    let bytes = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(binary) => Bytes::from(binary),
        _ => Bytes::new(),
    };
    lambda_http::http::Request::from_parts(parts, bytes)
}

/// The whole `main` of a function: JSON logs for CloudWatch, settings, then the event loop.
pub async fn run(route: Route) -> Result<(), Error> {
    tracing_subscriber::fmt().json().with_target(false).without_time().init();
    let server = server_from_env()?;
    lambda_http::run(service_fn(move |event: Request| {
        let server = server.clone();
        async move { Ok::<_, Error>(handle_event(&server, route, event).await) }
    }))
    .await
}
