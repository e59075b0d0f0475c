//! API Gateway (or a Function URL) in front of the functions, as the translated template
//! declares it.
//!
//! Front door A (the stack has a custom domain with routing rules): the rules, by priority with
//! API Gateway's glob semantics, pick a REST API stage; the API's routes pick the function; the
//! event is payload 1.0 and response headers are remapped as REST remaps them. Front door B (an
//! HTTP API): its routes pick the function, payload 2.0, headers passed on. Front door C (a
//! Function URL): every path and method reaches the URL's function, with the Function URL event
//! (payload 2.0, `routeKey` and `stage` `$default`, `accountId` `anonymous` for a `NONE` URL),
//! streamed when its `InvokeMode` is `RESPONSE_STREAM`, cut at the function's own timeout (no
//! integration timeout): <https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html>.
//!
//! The limits a client can see are API Gateway's and Lambda's: a request over 10 MB is refused
//! (413), an event over 6 MB is refused by Lambda (500), a buffered answer over 6 MB fails (502),
//! the integration timeout of the route answers 504 (REST) or 503 (HTTP API) while the function
//! keeps running, a streamed answer is cut after the route's timeout (at most 15 minutes) or after
//! 5 minutes without a byte. Status codes are documented; the JSON messages of API Gateway's own
//! errors follow what it is seen to send (`Endpoint request timed out`, …) and stay unverified.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use relevo_template::apis::{Api, ApiKind, Route};
use relevo_template::routing::{self, RoutingRule};
use serde_json::Value;
use tokio::sync::mpsc;

use super::events::{
    Door, Failure, Incoming, buffered_response, function_url_event, gateway_error, http_event,
    rest_event, streamed_response,
};
use super::runtime::{Answer, Function, InvokeError};
use relevo_local::InjectedToken;

/// API Gateway's request payload limit.
pub const MAX_REQUEST_BYTES: usize = 10 * 1024 * 1024;
/// Lambda's synchronous request payload limit.
pub const MAX_EVENT_BYTES: usize = 6 * 1024 * 1024;

/// How long a streamed answer may run and stay silent.
#[derive(Debug, Clone, Copy)]
pub struct StreamLimits {
    pub idle: Duration,
    pub total: Duration,
}

impl Default for StreamLimits {
    /// Regional REST streams: five minutes idle, fifteen minutes in all.
    fn default() -> Self {
        StreamLimits {
            idle: Duration::from_secs(300),
            total: Duration::from_secs(900),
        }
    }
}

/// Which front door the stack declares.
pub enum Routes {
    /// A custom domain's routing rules in front of REST APIs.
    Domain {
        rules: Vec<RoutingRule>,
        apis: Vec<Api>,
    },
    /// One HTTP API.
    Http { api: Api },
    /// One Function URL: every request reaches its function.
    Url { route: Route },
}

impl Routes {
    /// Front door C: the stack's one Function URL, as a route to its function that lasts as long
    /// as the function may run.
    pub fn from_function_urls(
        urls: Vec<relevo_template::functions::FunctionUrl>,
        functions: &[relevo_template::functions::Function],
    ) -> Result<Routes, String> {
        let mut urls = urls.into_iter();
        let (Some(url), None) = (urls.next(), urls.next()) else {
            return Err("front door C needs exactly one Function URL in the stack".into());
        };
        let function = functions
            .iter()
            .find(|f| Some(&f.logical_id) == url.function.as_ref())
            .ok_or_else(|| format!("{} invokes no function of the stack", url.logical_id))?;
        Ok(Routes::Url {
            route: Route {
                path: "/{proxy+}".into(),
                method: "ANY".into(),
                function: function.logical_id.clone(),
                streaming: url.streaming,
                timeout_ms: function.timeout_secs * 1000,
                streaming_uri: url.streaming,
                payload_format: Some("2.0".into()),
            },
        })
    }

    /// Front door A when the stack has routing rules, else its HTTP API.
    pub fn from_stack(rules: Vec<RoutingRule>, apis: Vec<Api>) -> Result<Routes, String> {
        if !rules.is_empty() {
            return Ok(Routes::Domain { rules, apis });
        }
        let mut http = apis.into_iter().filter(|api| api.kind == ApiKind::Http);
        match (http.next(), http.next()) {
            (Some(api), None) => Ok(Routes::Http { api }),
            _ => Err("the stack has neither routing rules nor exactly one HTTP API".into()),
        }
    }
}

struct Inner {
    routes: Routes,
    /// By logical id.
    functions: HashMap<String, Function>,
    inject_token: Option<InjectedToken>,
    limits: StreamLimits,
}

#[derive(Clone)]
pub struct FrontDoor(Arc<Inner>);

impl FrontDoor {
    pub fn new(
        routes: Routes,
        functions: HashMap<String, Function>,
        inject_token: Option<InjectedToken>,
        limits: StreamLimits,
    ) -> FrontDoor {
        FrontDoor(Arc::new(Inner {
            routes,
            functions,
            inject_token,
            limits,
        }))
    }

    pub fn router(self) -> Router {
        Router::new().fallback(handle).with_state(self)
    }
}

async fn handle(State(door): State<FrontDoor>, request: Request) -> Response {
    let inner = &door.0;
    let (mut parts, body) = request.into_parts();
    let kind = match inner.routes {
        Routes::Domain { .. } => Door::Rest,
        Routes::Http { .. } | Routes::Url { .. } => Door::Http,
    };
    if let Some(injected) = &inner.inject_token
        && !parts.headers.contains_key(http::header::AUTHORIZATION)
        && let Some(value) = injected
            .mint()
            .and_then(|t| http::HeaderValue::from_str(&format!("Bearer {t}")).ok())
    {
        parts.headers.insert(http::header::AUTHORIZATION, value);
    }
    let bytes = match relevo_local::body::read_limited(body, MAX_REQUEST_BYTES).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let mut refused = gateway_error(kind, Failure::TooLarge);
            relevo_local::body::close_unless_drained(&mut refused, error);
            return refused;
        }
    };
    let domain = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    let request_id = relevo_state::Ids::new_id(&relevo_state::RandomIds);
    let path = parts.uri.path();
    match &inner.routes {
        Routes::Domain { rules, apis } => {
            let headers: Vec<(&str, &str)> = parts
                .headers
                .iter()
                .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)))
                .collect();
            let Some(rule) = routing::first_match(rules, &headers, path) else {
                return gateway_error(kind, Failure::NoRule);
            };
            let Some(action) = rule.actions.first() else {
                return gateway_error(kind, Failure::NoRule);
            };
            let forwarded = routing::forwarded_path(rule, action, path);
            let Some(route) = apis
                .iter()
                .find(|a| a.logical_id == action.api)
                .and_then(|a| a.route(parts.method.as_str(), &forwarded))
            else {
                return gateway_error(kind, Failure::NoRoute);
            };
            let incoming = Incoming {
                method: &parts.method,
                path: &forwarded,
                query: parts.uri.query(),
                headers: &parts.headers,
                body: &bytes,
                resource: &route.path,
                stage: &action.stage,
                domain: &domain,
                request_id: &request_id,
            };
            invoke(inner, kind, route, rest_event(&incoming)).await
        }
        Routes::Http { api } => {
            let Some(route) = api.route(parts.method.as_str(), path) else {
                return gateway_error(kind, Failure::NoRoute);
            };
            let incoming = Incoming {
                method: &parts.method,
                path,
                query: parts.uri.query(),
                headers: &parts.headers,
                body: &bytes,
                resource: &route.path,
                stage: "$default",
                domain: &domain,
                request_id: &request_id,
            };
            let route_key = format!("{} {}", route.method, route.path);
            invoke(inner, kind, route, http_event(&incoming, &route_key)).await
        }
        Routes::Url { route } => {
            let incoming = Incoming {
                method: &parts.method,
                path,
                query: parts.uri.query(),
                headers: &parts.headers,
                body: &bytes,
                resource: path,
                stage: "$default",
                domain: &domain,
                request_id: &request_id,
            };
            invoke(inner, kind, route, function_url_event(&incoming)).await
        }
    }
}

async fn invoke(inner: &Inner, door: Door, route: &Route, event: Value) -> Response {
    if event.to_string().len() > MAX_EVENT_BYTES {
        return gateway_error(door, Failure::InvokeRefused);
    }
    let Some(function) = inner.functions.get(&route.function) else {
        return gateway_error(door, Failure::BadAnswer);
    };
    let timeout = Duration::from_millis(route.timeout_ms);
    match function.invoke_http(event, timeout).await {
        Ok(Answer::Buffered(answer)) => buffered_response(door, &answer),
        Ok(Answer::Streamed { prelude, body }) if route.streaming => {
            let limits = StreamLimits {
                idle: inner.limits.idle,
                total: inner.limits.total.min(timeout),
            };
            streamed_response(door, &prelude, relay(body, limits))
        }
        // A streamed answer to a buffered integration is not a proxy response.
        Ok(Answer::Streamed { .. }) => gateway_error(door, Failure::BadAnswer),
        Err(InvokeError::Waited(..)) => gateway_error(door, Failure::IntegrationTimeout),
        Err(error) => {
            tracing::warn!(function = %route.function, %error, "invocation failed");
            gateway_error(door, Failure::BadAnswer)
        }
    }
}

/// The chunks of a streamed answer, cut (an error, so the client sees a broken stream) after
/// `limits.idle` without a chunk or `limits.total` in all.
fn relay(
    body: mpsc::Receiver<Result<Bytes, String>>,
    limits: StreamLimits,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let deadline = tokio::time::Instant::now() + limits.total;
    futures_util::stream::unfold((body, false), move |(mut body, ended)| async move {
        if ended {
            return None;
        }
        let wait = limits
            .idle
            .min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        match tokio::time::timeout(wait, body.recv()).await {
            Ok(Some(Ok(chunk))) => Some((Ok(chunk), (body, false))),
            Ok(Some(Err(error))) => Some((Err(std::io::Error::other(error)), (body, true))),
            Ok(None) => None,
            Err(_) => {
                let why = if tokio::time::Instant::now() >= deadline {
                    "the stream's time limit"
                } else {
                    "the idle timeout"
                };
                tracing::warn!("a streamed answer was cut at {why}");
                Some((
                    Err(std::io::Error::other(format!("cut at {why}"))),
                    (body, true),
                ))
            }
        }
    })
}
