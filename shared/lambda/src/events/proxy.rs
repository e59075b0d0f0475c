//! API Gateway's proxy events read straight into the core's request: REST (payload 1.0), and
//! HTTP API and Lambda Function URLs (payload 2.0), in one pass over the event.
//!
//! lambda_http's reader tries each event type in turn (a payload 2.0 event is parsed twice),
//! builds every field of the request context, reads each header through an untagged enum and
//! makes the URI through the `url` crate: a sixth of a warm `tools/call`'s CPU on Managed
//! Instances (perf, `shared/relevo/docs/performance.md`). This reader keeps what a request is
//! made of (method, path and query, headers and cookies, body, API Gateway's request id and
//! stage), skips the rest without building it, and shares the event's buffer with the header
//! values and, when it has no escapes, the body.
//!
//! Invariants:
//! - the request is the one lambda_http 1.3 builds from the same event (method, URI, headers,
//!   body), which the tests check event by event against lambda_http's own reader; where the two
//!   differ it is said here: a header value with bytes outside visible ASCII is kept (HTTP's
//!   `obs-text`; lambda_http refuses the event), and a path that does not start with `/` is read
//!   from `/` (lambda_http would have read it as part of the URI's authority);
//! - an event neither payload describes, a header outside HTTP's grammar or a body flagged base64
//!   that is not is an [`EventError`]: the invocation fails and nothing panics (lambda_http
//!   panics on such a body, and on a host the `url` crate refuses, which ends the process).
//!
//! Threat model: every field but the request context is the caller's (API Gateway passes the
//! headers, path, query and body through). Nothing here trusts them beyond their grammar; the
//! Host/Origin allow-list and the core's ladder judge them after.

use std::borrow::Cow;
use std::fmt;

use base64::Engine;
use bytes::Bytes;
use http::header::{COOKIE, HOST, HeaderName};
use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::Origin;

/// Why an invocation's event is no proxy event this reader serves.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EventError {
    /// The event is not JSON of either payload's shape.
    #[error("the event is not an API Gateway proxy event: {0}")]
    Shape(#[from] serde_json::Error),
    /// Neither `httpMethod` (1.0) nor `requestContext.http.method` (2.0), or no HTTP method.
    #[error("the event names no HTTP method")]
    Method,
    /// A header name or value outside HTTP's grammar.
    #[error("the event's header {0:?} is not an HTTP header")]
    Header(String),
    /// `isBase64Encoded` is set and the body is not base64.
    #[error("the event's body is flagged base64 and is not: {0}")]
    Base64(#[from] base64::DecodeError),
    /// A path and query no URI can carry, even normalized.
    #[error("the event's path is not a URI path")]
    Path,
}

/// What an event is read into.
pub(crate) struct ProxyRequest {
    /// The request as the core serves it.
    pub request: Request<Bytes>,
    /// Which proxy response the event wants back.
    pub origin: Origin,
    /// API Gateway's `requestContext.requestId`.
    pub request_id: Option<String>,
}

/// Reads `event`. `ignore_stage` is `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH` being set: the path
/// is then the client's, else a stage other than `$default` prefixes it, as lambda_http does.
pub(crate) fn read(event: &Bytes, ignore_stage: bool) -> Result<ProxyRequest, EventError> {
    let fields: Event<'_> = serde_json::from_slice(event)?;
    let http_api = fields.version.as_ref().is_some_and(|v| v.0 == "2.0")
        || (fields.http_method.is_none() && fields.request_context.http.is_some());
    let method = if http_api {
        fields.request_context.http.as_ref().map(|h| &h.method)
    } else {
        fields.http_method.as_ref()
    };
    let method = method
        .and_then(|m| Method::from_bytes(m.0.as_bytes()).ok())
        .ok_or(EventError::Method)?;

    let mut headers = HeaderMap::with_capacity(fields.headers.0.len());
    if http_api {
        fill(&mut headers, event, fields.headers, false)?;
        if let Some(cookies) = &fields.cookies {
            let joined = cookies.iter().map(|c| &*c.0).collect::<Vec<_>>().join("; ");
            if let Ok(value) = HeaderValue::from_str(&joined) {
                headers.insert(COOKIE, value);
            }
        }
    } else {
        // lambda_http's rule: every `multiValueHeaders` value, then `headers` replacing a name.
        fill(&mut headers, event, fields.multi_value_headers, false)?;
        fill(&mut headers, event, fields.headers, true)?;
    }

    let context = &fields.request_context;
    let raw_path = if http_api {
        &fields.raw_path
    } else {
        &fields.path
    };
    let raw_path = raw_path.as_ref().map_or("", |p| &*p.0);
    let path = with_stage(
        context.stage.as_ref().map(|s| &*s.0),
        raw_path,
        ignore_stage,
    );
    let path = normalized(&path).ok_or(EventError::Path)?;
    let query = if http_api {
        fields.raw_query_string.map(|q| q.0).unwrap_or_default()
    } else {
        let pairs = if fields.multi_value_query_string_parameters.0.is_empty() {
            fields.query_string_parameters
        } else {
            fields.multi_value_query_string_parameters
        };
        Cow::Owned(encoded(&pairs))
    };
    let host = match headers.get(HOST) {
        Some(host) => host.to_str().ok(),
        None => context.domain_name.as_ref().map(|d| &*d.0),
    };
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|s| s.to_str().ok())
        .unwrap_or("https");
    let uri = target(scheme, host, &path, &query)?;

    let body = match fields.body {
        None => Bytes::new(),
        Some(text) if fields.is_base64_encoded => {
            Bytes::from(base64::engine::general_purpose::STANDARD.decode(text.0.as_bytes())?)
        }
        Some(text) => shared(event, text),
    };
    let request_id = context.request_id.as_ref().map(|id| id.0.to_string());

    let mut request = Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    let origin = if http_api {
        Origin::HttpApi
    } else {
        Origin::Rest
    };
    Ok(ProxyRequest {
        request,
        origin,
        request_id,
    })
}

/// The fields of either payload that a request is made of; the rest of the event is skipped.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    #[serde(borrow, default)]
    version: Option<Text<'a>>,
    /// 1.0's method, path and query.
    #[serde(borrow, default)]
    http_method: Option<Text<'a>>,
    #[serde(borrow, default)]
    path: Option<Text<'a>>,
    #[serde(borrow, default)]
    query_string_parameters: Fields<'a>,
    #[serde(borrow, default)]
    multi_value_query_string_parameters: Fields<'a>,
    #[serde(borrow, default)]
    multi_value_headers: Fields<'a>,
    /// 2.0's path, query and cookies.
    #[serde(borrow, default)]
    raw_path: Option<Text<'a>>,
    #[serde(borrow, default)]
    raw_query_string: Option<Text<'a>>,
    #[serde(borrow, default)]
    cookies: Option<Vec<Text<'a>>>,
    /// Both.
    #[serde(borrow, default)]
    headers: Fields<'a>,
    #[serde(borrow, default)]
    request_context: Context<'a>,
    #[serde(borrow, default)]
    body: Option<Text<'a>>,
    #[serde(default)]
    is_base64_encoded: bool,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Context<'a> {
    #[serde(borrow, default)]
    request_id: Option<Text<'a>>,
    #[serde(borrow, default)]
    stage: Option<Text<'a>>,
    #[serde(borrow, default)]
    domain_name: Option<Text<'a>>,
    /// 2.0's method.
    #[serde(borrow, default)]
    http: Option<Http<'a>>,
}

#[derive(Deserialize)]
struct Http<'a> {
    #[serde(borrow)]
    method: Text<'a>,
}

/// A JSON string, borrowed from the event when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visit)
    }
}

/// A name's value: one string, or (in 1.0's `multiValue…` maps) a list of them; either is
/// accepted in every map, as lambda_http does.
enum Values<'a> {
    One(Text<'a>),
    Many(Vec<Text<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Values<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Values<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Values<'de>, E> {
                Ok(Values::One(Text(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Values<'de>, E> {
                Ok(Values::One(Text(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Values<'de>, E> {
                Ok(Values::One(Text(Cow::Owned(v))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Values<'de>, A::Error> {
                let mut all = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(value) = seq.next_element()? {
                    all.push(value);
                }
                Ok(Values::Many(all))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// A map of names to values (headers or query parameters) in the event's order; `null` is empty.
#[derive(Default)]
struct Fields<'a>(Vec<(Text<'a>, Values<'a>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings or lists of strings, or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Fields<'de>, E> {
                Ok(Fields::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Fields<'de>, E> {
                Ok(Fields::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Fields<'de>, D::Error> {
                d.deserialize_map(self)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut all = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(entry) = map.next_entry()? {
                    all.push(entry);
                }
                Ok(Fields(all))
            }
        }
        deserializer.deserialize_option(Visit)
    }
}

/// `fields` into `headers`: a single value replaces the name's (lambda_http's `insert`), a list
/// is appended; `replace` makes every name's values replace what is there (1.0's `headers`
/// over its `multiValueHeaders`).
fn fill(
    headers: &mut HeaderMap,
    event: &Bytes,
    fields: Fields<'_>,
    replace: bool,
) -> Result<(), EventError> {
    let refused = |name: &str| EventError::Header(name.chars().take(64).collect());
    for (name, values) in fields.0 {
        let key = HeaderName::from_bytes(name.0.as_bytes()).map_err(|_| refused(&name.0))?;
        let value = |text: Text<'_>| {
            HeaderValue::from_maybe_shared(shared(event, text)).map_err(|_| refused(&name.0))
        };
        match values {
            Values::One(text) => {
                headers.insert(key, value(text)?);
            }
            Values::Many(texts) => {
                if replace {
                    headers.remove(&key);
                }
                for text in texts {
                    headers.append(&key, value(text)?);
                }
            }
        }
    }
    Ok(())
}

/// `text`'s bytes: a view of `event` when the string had no escapes, else its own.
fn shared(event: &Bytes, text: Text<'_>) -> Bytes {
    match text.0 {
        Cow::Borrowed(borrowed) => event.slice_ref(borrowed.as_bytes()),
        Cow::Owned(owned) => Bytes::from(owned),
    }
}

/// `/{stage}{path}` unless the stage is `$default` or absent, the path already starts with it,
/// or `ignore_stage` (lambda_http's `apigw_path_with_stage`).
fn with_stage<'p>(stage: Option<&str>, path: &'p str, ignore_stage: bool) -> Cow<'p, str> {
    match stage {
        Some(stage) if !ignore_stage && stage != "$default" => {
            let prefix = format!("/{stage}/");
            if path.starts_with(&prefix) {
                Cow::Borrowed(path)
            } else {
                Cow::Owned(format!("/{stage}{path}"))
            }
        }
        _ => Cow::Borrowed(path),
    }
}

/// The path as a URL parser leaves it: unchanged when it is plain (only unreserved,
/// sub-delimiter, `:`, `@`, `/` and `%` bytes, no `.` or `..` segment), else through the
/// `url` crate as lambda_http reads every path (dot segments resolved, the rest
/// percent-encoded).
fn normalized(path: &str) -> Option<Cow<'_, str>> {
    let plain = path.starts_with('/')
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/%".contains(&b))
        && !path.split('/').any(|segment| {
            matches!(
                segment.to_ascii_lowercase().as_str(),
                "." | ".." | "%2e" | ".%2e" | "%2e." | "%2e%2e"
            )
        });
    if plain {
        return Some(Cow::Borrowed(path));
    }
    let slash = if path.starts_with('/') { "" } else { "/" };
    let url = url::Url::parse(&format!("http://localhost{slash}{path}")).ok()?;
    Some(Cow::Owned(url.path().to_owned()))
}

/// 1.0's decoded query parameters, encoded again (`application/x-www-form-urlencoded`).
fn encoded(pairs: &Fields<'_>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, values) in &pairs.0 {
        match values {
            Values::One(value) => {
                query.append_pair(&name.0, &value.0);
            }
            Values::Many(values) => {
                for value in values {
                    query.append_pair(&name.0, &value.0);
                }
            }
        }
    }
    query.finish()
}

/// The request's target: absolute (`scheme://host/path?query`) when a host is known and makes
/// one, else the path and query alone (the `Host` header, if any, then names the authority and
/// the allow-list judges it).
fn target(scheme: &str, host: Option<&str>, path: &str, query: &str) -> Result<Uri, EventError> {
    let mark = if query.is_empty() { "" } else { "?" };
    if let Some(host) = host
        && let Ok(uri) = Uri::try_from(format!("{scheme}://{host}{path}{mark}{query}"))
    {
        return Ok(uri);
    }
    Uri::try_from(format!("{path}{mark}{query}")).map_err(|_| EventError::Path)
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
