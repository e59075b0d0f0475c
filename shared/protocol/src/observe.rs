//! What a request tells operators: its trace, the ids AWS gave it, and its metrics.
//!
//! Every request runs in a trace ([`relevo_state::trace`]): the context from `params._meta`
//! (`traceparent`, `tracestate`, `baggage`), else the HTTP `traceparent` header, else the
//! context the front door's adapter put among the request's extensions (on Lambda: the X-Ray
//! header of the invocation), else a new root. The request's access line and every line logged
//! while its handler runs carry the trace id, the API Gateway and Lambda request ids
//! ([`RequestIds`]), the method, the tool and the tenant; jobs it starts keep the trace.
//!
//! Logging costs a buffer per line, not a span per request: the handler runs with the request's
//! fields in a task-local (`RequestLog::scope`), read only when a line is written, and the access
//! line is formatted straight into one buffer and written at once (`RequestLog::access`), both
//! by `init_logging`'s own layer (module `logging`). Under any other subscriber (an embedder's,
//! a test's) the same fields travel as before: a `relevo::request` span and a tracing event.
//!
//! Threat model: method, name, tenant and whatever a handler logs are caller text. They reach a
//! log line only as JSON strings escaped by `serde_json` (no raw newline or control character, no
//! forged field), and the caller's names are cut to [`crate::server::MAX_LOGGED_CHARS`] first.
//!
//! Metrics are EMF lines ([`relevo_state::emf`]), one per request, when they are on. With the
//! `logging` feature, `init_logging` is the one log setup of every runner (Lambda's and the
//! local server's formats).
//!
//! Invariant: every dimension value comes from a closed set, so a caller cannot create metric
//! series (each one billed) by sending names: `Function` is the function's own name, `Method` a
//! method this server knows ([`method_dimension`]) and `Tool` a tool the call resolved to and the
//! caller may see; anything else is [`emf::OTHER`]. The caller's raw method and name stay on the
//! line as properties (bounded), where they are searchable but not metrics.

#[cfg(feature = "logging")]
mod logging;

#[cfg(feature = "logging")]
pub use logging::{
    ACCESS_TARGET, JsonLines, LineSink, LogFormat, MAX_PANIC_CHARS, PANIC_TARGET, REQUEST_TARGET,
    init_logging, log_panics, log_subscriber,
};

use std::sync::atomic::{AtomicBool, Ordering};

use http::HeaderMap;
use relevo_state::emf::{self, Metrics, Unit};
use relevo_state::trace::TraceContext;
use serde_json::Value;

use crate::method::Method;

/// The fields that name one request on its log lines: its access line and, while its handler
/// runs, every line it logs. The caller's text (method, name, tenant) comes here already cut
/// to [`crate::server::MAX_LOGGED_CHARS`].
pub(crate) struct RequestLog<'a> {
    pub trace_id: &'a str,
    pub ids: &'a RequestIds,
    pub function: &'a str,
    pub method: &'a str,
    pub name: &'a str,
    pub tenant: &'a str,
}

impl RequestLog<'_> {
    /// Runs the handler's `work` so that every line it logs carries this request's fields:
    /// with `init_logging`'s subscriber, a task-local the log layer reads (no span); under
    /// any other subscriber, a `relevo::request` span as before.
    pub(crate) async fn scope<T>(&self, work: impl Future<Output = T>) -> T {
        #[cfg(feature = "logging")]
        match logging::request_context(self) {
            Some(Some(context)) => return logging::scope(context, work).await,
            Some(None) => return work.await,
            None => {}
        }
        let span = tracing::info_span!(
            target: "relevo::request",
            "request",
            trace_id = self.trace_id,
            apigw_request_id = self.ids.apigw.as_deref(),
            lambda_request_id = self.ids.lambda.as_deref(),
            function = self.function,
            method = self.method,
            name = self.name,
            tenant = self.tenant,
        );
        tracing::Instrument::instrument(work, span).await
    }

    /// Writes the request's access line (`mcp request`, INFO, target `relevo_protocol::server`):
    /// formatted into one buffer and written at once under `init_logging`'s subscriber, a
    /// tracing event under any other.
    pub(crate) fn access(&self, status: u16, result_type: &str, latency_ms: f64) {
        #[cfg(feature = "logging")]
        if logging::write_access(self, status, result_type, latency_ms) {
            return;
        }
        tracing::info!(
            target: "relevo_protocol::server",
            trace_id = self.trace_id,
            apigw_request_id = self.ids.apigw.as_deref(),
            lambda_request_id = self.ids.lambda.as_deref(),
            function = self.function,
            method = self.method,
            name = self.name,
            tenant = self.tenant,
            status,
            result_type,
            latency_ms,
            "mcp request"
        );
    }
}

/// The ids the platform gave one request, set by the front door's adapter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestIds {
    /// API Gateway's `requestContext.requestId`.
    pub apigw: Option<String>,
    /// Lambda's invocation id (`Lambda-Runtime-Aws-Request-Id`).
    pub lambda: Option<String>,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The context the HTTP request carries (`traceparent`, `tracestate`, `baggage`), else the one
/// the adapter found (`fallback`).
pub fn upstream_trace(
    headers: &HeaderMap,
    fallback: Option<&TraceContext>,
) -> Option<TraceContext> {
    header(headers, "traceparent")
        .and_then(|parent| {
            TraceContext::from_w3c(
                parent,
                header(headers, "tracestate"),
                header(headers, "baggage"),
            )
        })
        .or_else(|| fallback.cloned())
}

/// The context an MCP request carries in `params._meta`.
pub fn meta_trace(params: &serde_json::Map<String, Value>) -> Option<TraceContext> {
    let meta = params.get("_meta")?;
    let text = |key: &str| meta.get(key).and_then(Value::as_str);
    TraceContext::from_w3c(text("traceparent")?, text("tracestate"), text("baggage"))
}

/// True once, for the first request this process serves (a cold start).
pub fn first_request() -> bool {
    static SERVED: AtomicBool = AtomicBool::new(false);
    !SERVED.swap(true, Ordering::Relaxed)
}

/// What a 2025-11-25 session may ask beyond the methods of [`Method`], and what the access line
/// records for a request that has no JSON-RPC method (its HTTP verb, a client's response, `-`).
const OTHER_KNOWN_METHODS: [&str; 9] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "GET",
    "DELETE",
    "(response)",
    "-",
];

/// The `Method` dimension of `method`: itself when this server knows it, else [`emf::OTHER`].
pub fn method_dimension(method: &str) -> &'static str {
    Method::from_wire(method)
        .map(Method::as_str)
        .or_else(|| {
            OTHER_KNOWN_METHODS
                .iter()
                .copied()
                .find(|known| *known == method)
        })
        .unwrap_or(emf::OTHER)
}

/// What one request did, for its EMF line.
pub struct RequestMetrics<'a> {
    /// The function that served the request (`tools-call`, `mcp`, …): a dimension.
    pub function: &'a str,
    /// The method the request named (caller text: a property; the dimension is
    /// [`method_dimension`] of it).
    pub method: &'a str,
    /// For `tools/call`: the tool the call resolved to, if the caller may see it (a dimension).
    pub tool: Option<&'a str>,
    /// The name or URI the request named (caller text: a property only).
    pub target: Option<&'a str>,
    /// The HTTP status answered.
    pub status: u16,
    /// The result's `resultType` (`complete`, `input_required`, …), or `-` when there is none.
    pub result_type: &'a str,
    /// Time from receipt to answer, in milliseconds.
    pub latency_ms: f64,
    /// Time spent verifying the credential, in milliseconds, if one was verified.
    pub token_ms: Option<f64>,
    /// Whether this was the first request of the process (a Lambda cold start).
    pub cold_start: bool,
    /// The request's trace id, to find its log lines.
    pub trace_id: &'a str,
    /// The caller's tenant, once authenticated (a property only).
    pub tenant: Option<&'a str>,
}

impl RequestMetrics<'_> {
    /// The EMF document: for the whole deployment (no dimensions: what alarms read), by
    /// function and method, and by function, method and tool for tool calls (a call that did
    /// not resolve to a tool the caller may see counts as tool [`emf::OTHER`]). `InputRequired`
    /// counts MRTR rounds (answers of `resultType: input_required`).
    pub fn metrics(&self) -> Metrics {
        let method = method_dimension(self.method);
        let mut metrics = Metrics::new()
            .dimension("Function", self.function)
            .dimension("Method", method)
            .by(&[])
            .by(&["Function", "Method"]);
        if method == Method::ToolsCall.as_str() {
            let tool = self.tool.unwrap_or(emf::OTHER);
            metrics = metrics
                .dimension("Tool", tool)
                .by(&["Function", "Method", "Tool"]);
        }
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        metrics = metrics
            .metric("Requests", 1.0, Unit::Count)
            .metric("Latency", self.latency_ms, Unit::Milliseconds)
            .metric(
                "ClientErrors",
                flag((400..500).contains(&self.status)),
                Unit::Count,
            )
            .metric("ServerErrors", flag(self.status >= 500), Unit::Count)
            .metric("Throttled", flag(self.status == 429), Unit::Count)
            .metric(
                "InputRequired",
                flag(self.result_type == "input_required"),
                Unit::Count,
            )
            .metric("ColdStart", flag(self.cold_start), Unit::Count);
        if let Some(token_ms) = self.token_ms {
            metrics = metrics.metric("TokenVerification", token_ms, Unit::Milliseconds);
        }
        metrics
            .property("status", self.status)
            .property("resultType", self.result_type)
            .property("traceId", self.trace_id)
            .property("tenant", self.tenant.unwrap_or("-"))
            .property("requestedMethod", self.method)
            .property("requestedName", self.target.unwrap_or("-"))
    }

    /// Writes the EMF line to stdout, when EMF is enabled.
    pub fn emit(&self) {
        if emf::enabled() {
            self.metrics().emit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(method: &str, tool: Option<&str>) -> Value {
        let request = RequestMetrics {
            function: "tools-call",
            method,
            tool,
            target: Some("\u{1b}]0;pwned\u{7}"),
            status: 200,
            result_type: "complete",
            latency_ms: 1.0,
            token_ms: None,
            cold_start: false,
            trace_id: "t",
            tenant: None,
        };
        serde_json::from_str(&request.metrics().line("Relevo", 0)).expect("JSON")
    }

    #[test]
    fn dimensions_name_only_known_methods_and_resolved_tools() {
        let known = call("tools/call", Some("add"));
        assert_eq!(
            (known["Method"].as_str(), known["Tool"].as_str()),
            (Some("tools/call"), Some("add"))
        );
        let unresolved = call("tools/call", None);
        assert_eq!(unresolved["Tool"], emf::OTHER);
        assert_eq!(
            unresolved["requestedName"], "\u{1b}]0;pwned\u{7}",
            "the raw name stays a property"
        );
        let unknown = call("tools/cal\u{7}", None);
        assert_eq!(unknown["Method"], emf::OTHER);
        assert_eq!(unknown["requestedMethod"], "tools/cal\u{7}");
        assert!(unknown.get("Tool").is_none());
        for method in Method::ALL {
            assert_eq!(method_dimension(method.as_str()), method.as_str());
        }
        assert_eq!(method_dimension("initialize"), "initialize");
        assert_eq!(method_dimension("Initialize"), emf::OTHER);
    }

    #[test]
    fn the_http_traceparent_wins_over_the_adapters_context() {
        let mut headers = HeaderMap::new();
        let xray = TraceContext::from_xray("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
            .expect("valid");
        assert_eq!(upstream_trace(&headers, Some(&xray)), Some(xray.clone()));
        headers.insert(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                .parse()
                .expect("ok"),
        );
        headers.insert("tracestate", "vendor=1".parse().expect("ok"));
        let http = upstream_trace(&headers, Some(&xray)).expect("from the header");
        assert_eq!(http.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(http.tracestate.as_deref(), Some("vendor=1"));
        headers.insert("traceparent", "garbage".parse().expect("ok"));
        assert_eq!(upstream_trace(&headers, None), None);
    }

    #[test]
    fn the_meta_context_is_read_from_the_reserved_keys() {
        let params = serde_json::json!({"name": "x", "_meta": {
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "baggage": "userId=alice"
        }});
        let context = meta_trace(params.as_object().expect("object")).expect("a context");
        assert_eq!(context.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(context.baggage.as_deref(), Some("userId=alice"));
        assert_eq!(
            meta_trace(
                serde_json::json!({"_meta": {"traceparent": 7}})
                    .as_object()
                    .expect("object")
            ),
            None
        );
    }
}
