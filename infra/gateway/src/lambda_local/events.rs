//! The events API Gateway sends a Lambda proxy integration, and what it makes of the answer.
//!
//! - REST APIs send payload 1.0 (`httpMethod`, `headers` + `multiValueHeaders`, `resource`,
//!   `pathParameters`, `requestContext.stage`) and remap some response headers: a Lambda's
//!   `WWW-Authenticate` reaches the client as `x-amzn-Remapped-WWW-Authenticate` ("Amazon API
//!   Gateway important notes for REST APIs",
//!   <https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-known-issues.html>).
//! - HTTP APIs send payload 2.0 (`routeKey`, `rawPath`, lower-cased `headers` with repeated
//!   values comma-joined, `cookies`, `requestContext.http`) and take a 2.0 response (`cookies`,
//!   or a bare JSON value as a 200 `application/json` body).

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use bytes::Bytes;
use serde_json::{Map, Value, json};

/// Response headers a REST API renames to `x-amzn-Remapped-<name>` (Lambda proxy column).
const REST_REMAPPED: [&str; 8] = [
    "authorization",
    "connection",
    "content-md5",
    "max-forwards",
    "user-agent",
    "www-authenticate",
    "date",
    "server",
];
/// Response headers a REST API drops.
const REST_DROPPED: [&str; 8] = [
    "expect",
    "host",
    "proxy-authenticate",
    "te",
    "transfer-encoding",
    "trailer",
    "upgrade",
    "via",
];

/// What a request looked like when it reached the integration.
pub struct Incoming<'a> {
    pub method: &'a http::Method,
    /// The path the API sees (after a routing rule stripped its base path, if it does).
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub headers: &'a http::HeaderMap,
    pub body: &'a [u8],
    /// The route's path template (`/mcp`, `/{proxy+}`) and what its parameters matched.
    pub resource: &'a str,
    pub stage: &'a str,
    pub domain: &'a str,
    pub request_id: &'a str,
}

fn body_field(body: &[u8]) -> (Value, bool) {
    match std::str::from_utf8(body) {
        Ok(text) => (json!(text), false),
        Err(_) => (
            json!(base64::engine::general_purpose::STANDARD.encode(body)),
            true,
        ),
    }
}

/// The values a path template's `{name}` and `{name+}` segments matched.
pub fn path_parameters(template: &str, path: &str) -> Map<String, Value> {
    let mut parameters = Map::new();
    let actual: Vec<&str> = path.trim_matches('/').split('/').collect();
    for (index, segment) in template.trim_matches('/').split('/').enumerate() {
        let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
            continue;
        };
        match name.strip_suffix('+') {
            Some(greedy) => {
                parameters.insert(
                    greedy.to_string(),
                    json!(
                        actual
                            .get(index..)
                            .map(|rest| rest.join("/"))
                            .unwrap_or_default()
                    ),
                );
            }
            None => {
                parameters.insert(
                    name.to_string(),
                    json!(actual.get(index).copied().unwrap_or_default()),
                );
            }
        }
    }
    parameters
}

fn query_parameters(query: Option<&str>) -> (Value, Value) {
    let Some(query) = query.filter(|q| !q.is_empty()) else {
        return (Value::Null, Value::Null);
    };
    let mut single = Map::new();
    let mut multi: Map<String, Value> = Map::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        single.insert(key.to_string(), json!(value));
        match multi.get_mut(key.as_ref()) {
            Some(Value::Array(values)) => values.push(json!(value)),
            _ => drop(multi.insert(key.to_string(), json!([value]))),
        }
    }
    (Value::Object(single), Value::Object(multi))
}

/// The REST API proxy event (payload 1.0).
pub fn rest_event(request: &Incoming) -> Value {
    let mut single = Map::new();
    let mut multi: Map<String, Value> = Map::new();
    for (name, value) in request.headers {
        let value = value.to_str().unwrap_or_default().to_string();
        single.insert(name.as_str().to_string(), json!(value));
        match multi.get_mut(name.as_str()) {
            Some(Value::Array(values)) => values.push(json!(value)),
            _ => drop(multi.insert(name.as_str().to_string(), json!([value]))),
        }
    }
    let (query, multi_query) = query_parameters(request.query);
    let parameters = path_parameters(request.resource, request.path);
    let (body, encoded) = body_field(request.body);
    json!({
        "resource": request.resource,
        "path": request.path,
        "httpMethod": request.method.as_str(),
        "headers": single,
        "multiValueHeaders": multi,
        "queryStringParameters": query,
        "multiValueQueryStringParameters": multi_query,
        "pathParameters": if parameters.is_empty() { Value::Null } else { Value::Object(parameters) },
        "stageVariables": null,
        "requestContext": {
            "accountId": relevo_template::ACCOUNT_ID,
            "apiId": "local",
            "domainName": request.domain,
            "httpMethod": request.method.as_str(),
            "path": request.path,
            "protocol": "HTTP/1.1",
            "requestId": request.request_id,
            "requestTimeEpoch": epoch_millis(),
            "resourceId": "local",
            "resourcePath": request.resource,
            "stage": request.stage,
            "identity": { "sourceIp": "127.0.0.1" }
        },
        "body": body,
        "isBase64Encoded": encoded,
    })
}

fn epoch_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// The HTTP API proxy event (payload 2.0).
pub fn http_event(request: &Incoming, route_key: &str) -> Value {
    let mut headers: Map<String, Value> = Map::new();
    let mut cookies = Vec::new();
    for (name, value) in request.headers {
        let value = value.to_str().unwrap_or_default();
        if name == http::header::COOKIE {
            cookies.extend(value.split(';').map(|c| json!(c.trim())));
            continue;
        }
        match headers.get_mut(name.as_str()) {
            Some(Value::String(joined)) => {
                joined.push(',');
                joined.push_str(value);
            }
            _ => drop(headers.insert(name.as_str().to_string(), json!(value))),
        }
    }
    let (query, _) = query_parameters(request.query);
    let parameters = path_parameters(request.resource, request.path);
    let (body, encoded) = body_field(request.body);
    json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.path,
        "rawQueryString": request.query.unwrap_or_default(),
        "cookies": if cookies.is_empty() { Value::Null } else { Value::Array(cookies) },
        "headers": headers,
        "queryStringParameters": query,
        "pathParameters": if parameters.is_empty() { Value::Null } else { Value::Object(parameters) },
        "requestContext": {
            "accountId": relevo_template::ACCOUNT_ID,
            "apiId": "local",
            "domainName": request.domain,
            "domainPrefix": request.domain.split('.').next().unwrap_or_default(),
            "http": {
                "method": request.method.as_str(), "path": request.path, "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1", "userAgent": request.headers.get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or_default()
            },
            "requestId": request.request_id,
            "routeKey": route_key,
            "stage": request.stage,
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": epoch_millis(),
        },
        "body": body,
        "isBase64Encoded": encoded,
    })
}

/// A Function URL's event (payload 2.0): as the HTTP API's, with `routeKey` and `stage`
/// `$default`, no path parameters, and `accountId` `anonymous` (an `AuthType: NONE` URL's
/// caller): <https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html#urls-payloads>.
pub fn function_url_event(request: &Incoming) -> Value {
    as_function_url_event(http_event(request, "$default"))
}

/// An HTTP API event (payload 2.0) as a Function URL sends the same request.
pub fn as_function_url_event(mut event: Value) -> Value {
    event["routeKey"] = json!("$default");
    let context = &mut event["requestContext"];
    context["routeKey"] = json!("$default");
    context["stage"] = json!("$default");
    context["accountId"] = json!("anonymous");
    let domain = context["domainName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    context["apiId"] = json!(domain.split('.').next().unwrap_or_default());
    if let Some(object) = event.as_object_mut() {
        object.remove("pathParameters");
    }
    event
}

/// Which API a response passes through: REST remaps headers, HTTP APIs pass them on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    Rest,
    Http,
}

/// The header name the client sees for a Lambda's response header `name`, or `None` if dropped.
pub fn client_header(door: Door, name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    match door {
        Door::Http => Some(lower),
        Door::Rest if REST_DROPPED.contains(&lower.as_str()) => None,
        Door::Rest if REST_REMAPPED.contains(&lower.as_str()) => {
            Some(format!("x-amzn-remapped-{lower}"))
        }
        Door::Rest => Some(lower),
    }
}

/// The status (`statusCode`, 502 when absent or invalid) and the headers under each of
/// `headers_keys` (each a value or a list of values) of a function's answer, as `door` passes
/// them to the client.
fn response_head(door: Door, answer: &Value, headers_keys: &[&str]) -> http::response::Builder {
    let status = answer["statusCode"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
        .and_then(|s| http::StatusCode::from_u16(s).ok())
        .unwrap_or(http::StatusCode::BAD_GATEWAY);
    let mut builder = Response::builder().status(status);
    for key in headers_keys {
        for (name, values) in answer[*key].as_object().into_iter().flatten() {
            let Some(name) = client_header(door, name) else {
                continue;
            };
            let values: Vec<&str> = match values {
                Value::Array(values) => values.iter().filter_map(Value::as_str).collect(),
                value => value.as_str().into_iter().collect(),
            };
            for value in values {
                builder = builder.header(name.as_str(), value);
            }
        }
    }
    for cookie in answer["cookies"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        builder = builder.header(http::header::SET_COOKIE, cookie);
    }
    builder
}

fn decoded_body(answer: &Value) -> Vec<u8> {
    let body = answer["body"].as_str().unwrap_or_default();
    if answer["isBase64Encoded"].as_bool() == Some(true) {
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap_or_default()
    } else {
        body.as_bytes().to_vec()
    }
}

/// A buffered proxy integration response, as the client receives it.
pub fn buffered_response(door: Door, answer: &Value) -> Response {
    if door == Door::Http && answer.get("statusCode").is_none() {
        // Payload 2.0: a result without statusCode is a 200 JSON body.
        return (
            [(http::header::CONTENT_TYPE, "application/json")],
            answer.to_string(),
        )
            .into_response();
    }
    let keys: &[&str] = match door {
        // Payload 1.0: multiValueHeaders, when present, win over headers.
        Door::Rest
            if answer["multiValueHeaders"]
                .as_object()
                .is_some_and(|h| !h.is_empty()) =>
        {
            &["multiValueHeaders"]
        }
        Door::Rest | Door::Http => &["headers"],
    };
    response_head(door, answer, keys)
        .body(Body::from(decoded_body(answer)))
        .unwrap_or_else(|_| gateway_error(door, Failure::BadAnswer))
}

/// A streamed integration response: the prelude's status and headers, then the chunks as the
/// function writes them. `chunks` ends with an error when the stream broke or idled out.
pub fn streamed_response(
    door: Door,
    prelude: &Value,
    chunks: impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
) -> Response {
    response_head(door, prelude, &["headers"])
        .body(Body::from_stream(chunks))
        .unwrap_or_else(|_| gateway_error(door, Failure::BadAnswer))
}

/// What went wrong between the front door and the function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The function failed, died, timed out or answered what the integration cannot use.
    BadAnswer,
    /// The integration timeout passed first.
    IntegrationTimeout,
    /// Lambda refused the invocation (e.g. an event over 6 MB).
    InvokeRefused,
    /// The request is over the API's payload limit.
    TooLarge,
    /// No route (REST: "Missing Authentication Token"; HTTP API: "Not Found").
    NoRoute,
    /// No routing rule matched.
    NoRule,
}

/// API Gateway's own answer for `failure` (status and the JSON `message` it sends).
pub fn gateway_error(door: Door, failure: Failure) -> Response {
    use http::StatusCode as S;
    let (status, message) = match (door, failure) {
        (Door::Rest, Failure::BadAnswer) => (S::BAD_GATEWAY, "Internal server error"),
        (Door::Rest, Failure::InvokeRefused) => (S::INTERNAL_SERVER_ERROR, "Internal server error"),
        (Door::Rest, Failure::IntegrationTimeout) => {
            (S::GATEWAY_TIMEOUT, "Endpoint request timed out")
        }
        (Door::Rest, Failure::TooLarge) => (S::PAYLOAD_TOO_LARGE, "Request Too Long"),
        (Door::Rest, Failure::NoRoute) => (S::FORBIDDEN, "Missing Authentication Token"),
        (_, Failure::NoRule) => (S::FORBIDDEN, "Forbidden"),
        (Door::Http, Failure::BadAnswer | Failure::InvokeRefused) => {
            (S::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
        (Door::Http, Failure::IntegrationTimeout) => {
            (S::SERVICE_UNAVAILABLE, "Service Unavailable")
        }
        (Door::Http, Failure::TooLarge) => (S::PAYLOAD_TOO_LARGE, "Request Entity Too Large"),
        (Door::Http, Failure::NoRoute) => (S::NOT_FOUND, "Not Found"),
    };
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        json!({ "message": message }).to_string(),
    )
        .into_response()
}
