//! The Lambda side of every function: read settings once per cold start, then turn each API
//! Gateway proxy event into an `http::Request<Bytes>` for [`McpServer::handle`] and back.
//!
//! Responses are buffered: an SSE reply is collected whole and returned as one
//! `text/event-stream` body, which is valid SSE (notifications first, the response last).
//! Lambda response streaming arrives with the deploy issue.

use bytes::Bytes;
use lambda_http::{Body, Error, Request, Response, service_fn};
use relevo_app::Ports;
use relevo_auth::AuthSettings;
use relevo_protocol::{McpServer, Route, Settings};

/// Builds the server from the environment. Lambdas never use ephemeral keys: the instance that
/// verifies a `requestState` is rarely the one that sealed it.
pub fn server_from_env() -> Result<McpServer, Error> {
    let settings = Settings::from_env(false)?;
    let auth = relevo_auth::lambda_authenticator(&AuthSettings::from_env("")?)?;
    // No durable store is wired into Lambda yet: features that need one are left out of the app.
    let app = relevo_app::build(&settings.app, &Ports::new(None))?;
    Ok(McpServer::new(app, settings.config, settings.keys, auth))
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

fn init_logging() {
    tracing_subscriber::fmt().json().with_target(false).without_time().init();
}

/// The `well-known` function: protected-resource metadata (RFC 9728) on GET.
pub async fn run_well_known() -> Result<(), Error> {
    init_logging();
    let settings = AuthSettings::from_env("")?;
    lambda_http::run(service_fn(move |event: Request| {
        let settings = settings.clone();
        async move {
            let response = relevo_auth::metadata_response(&settings, event.method(), event.uri().path());
            let (parts, body) = response.into_parts();
            Ok::<_, Error>(Response::from_parts(parts, Body::Text(body)))
        }
    }))
    .await
}

/// The whole `main` of a function: JSON logs for CloudWatch, settings, then the event loop.
pub async fn run(route: Route) -> Result<(), Error> {
    init_logging();
    let server = server_from_env()?;
    lambda_http::run(service_fn(move |event: Request| {
        let server = server.clone();
        async move { Ok::<_, Error>(handle_event(&server, route, event).await) }
    }))
    .await
}
