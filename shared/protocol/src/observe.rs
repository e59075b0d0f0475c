//! What a request tells operators: its trace, the ids AWS gave it, and its metrics.
//!
//! Every request runs in a trace ([`relevo_state::trace`]): the context from `params._meta`
//! (`traceparent`, `tracestate`, `baggage`), else the HTTP `traceparent` header, else the
//! context the front door's adapter put among the request's extensions (on Lambda: the X-Ray
//! header of the invocation), else a new root. The request's access fields and every line
//! logged while its handler runs carry the trace id, the API Gateway and Lambda request ids
//! ([`RequestIds`]), the method, the tool and the tenant; jobs it starts keep the trace.
//!
//! One line per request (CloudWatch Logs bills every byte it ingests). With EMF metrics on
//! (`RELEVO_METRICS=emf`, what the template sets) the request writes its EMF line
//! ([`relevo_state::emf`]) and nothing else: `{"fields":{…},<dimensions>,<metrics>,"_aws":{…}}`.
//! Each fact is on it once: `fields` holds the access fields under the names and paths the
//! access line gives them (`fields.trace_id`, `fields.status`…) except those a root member
//! already says: the function and the latency are its `Function` dimension and `Latency`
//! metric, the method is its `Method` dimension (`fields.method` only when that dimension is
//! [`emf::OTHER`]: the caller's raw text), a tool call's name is its `Tool` dimension
//! (`fields.name` only when the two differ), and the line has no `level` (Lambda's log-level
//! filter takes a line without one as INFO, which it is) and no `message` (its `_aws` member
//! says what it is). The request count is the `Latency` metric's `SampleCount`, not a metric of
//! its own. A warm `tools/call` line through the HTTP API is ~470 bytes. With EMF off (the
//! local server's default) the request writes its access line,
//! `{"timestamp"?,"level":"INFO","fields":{"message":"mcp request",…}}`, as before.
//! Lines a handler logs, warnings and errors are written as they are logged, in both modes.
//!
//! Logging costs a buffer per line, not a span per request: the handler runs with the request's
//! fields in a task-local (`RequestLog::scope`), read only when a line is written, and the
//! request's line is formatted straight into one buffer and written at once
//! (`RequestLog::served`), both by `init_logging`'s own layer (module `logging`). Under any
//! other subscriber (an embedder's, a test's) the handler's fields travel as before, in a
//! `relevo::request` span, and the access line is a tracing event (the EMF line, when metrics
//! are on, goes to stdout).
//!
//! Threat model: method, name, tenant, the request ids and whatever a handler logs are caller
//! text. They reach a line only as JSON strings escaped by `serde_json` (no raw newline or
//! control character, no forged field), only inside `fields` on the EMF line (never a root
//! member: the root's names are ours, so caller text can neither add a dimension or a metric
//! nor replace one), and the caller's names are cut to [`crate::server::MAX_LOGGED_CHARS`]
//! first.
//!
//! With the `logging` feature, `init_logging` is the one log setup of every runner (Lambda's
//! and the local server's formats).
//!
//! Invariant: every dimension value comes from a closed set, so a caller cannot create metric
//! series (each one billed) by sending names: `Function` is the function's own name, `Method` a
//! method this server knows ([`method_dimension`]) and `Tool` a tool the call resolved to and the
//! caller may see; anything else is [`emf::OTHER`]. The caller's raw method and name stay on the
//! line in `fields` (bounded), where they are searchable but not metrics.

#[cfg(feature = "logging")]
mod logging;

#[cfg(feature = "logging")]
pub use logging::{
    ACCESS_TARGET, JsonLines, LineSink, LogFormat, MAX_PANIC_CHARS, PANIC_TARGET, REQUEST_TARGET,
    init_logging, log_panics, log_subscriber,
};

use std::io::Write as _;
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

    /// Leaves the request's one line on stdout. With EMF on ([`relevo_state::emf::enabled`], or
    /// the metrics `init_logging`'s subscriber was built with): its EMF line, which carries the
    /// access fields ([`RequestLog::emf_line`]), and no access line. With EMF off: the access
    /// line (`mcp request`, INFO, target `relevo_protocol::server`), formatted into one buffer
    /// and written at once under `init_logging`'s subscriber, a tracing event under any other.
    pub(crate) fn served(&self, metrics: &RequestMetrics<'_>) {
        #[cfg(feature = "logging")]
        if logging::write_served(self, metrics) {
            return;
        }
        if let Some(namespace) = emf::namespace() {
            let mut line = self.emf_line(metrics, namespace, emf::now_ms(), b"");
            line.push(b'\n');
            // A log line that cannot be written has nowhere else to go.
            let _ = std::io::stdout().lock().write_all(&line);
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
            status = metrics.status,
            result_type = metrics.result_type,
            latency_ms = metrics.latency_ms,
            "mcp request"
        );
    }

    /// The access fields, in the access line's order: `"message":"mcp request"`, `trace_id`,
    /// `apigw_request_id` and `lambda_request_id` (when the platform gave them), `function`,
    /// `method`, `name`, `tenant`, `status`, `result_type`, `latency_ms`.
    #[cfg(feature = "logging")]
    pub(crate) fn push_access_fields(
        &self,
        line: &mut Vec<u8>,
        status: u16,
        result_type: &str,
        latency_ms: f64,
    ) {
        let mut first = true;
        push_key(line, &mut first, "message");
        push_str(line, ACCESS_MESSAGE);
        self.push_named(
            line,
            &mut first,
            [
                ("trace_id", Some(self.trace_id)),
                ("apigw_request_id", self.ids.apigw.as_deref()),
                ("lambda_request_id", self.ids.lambda.as_deref()),
                ("function", Some(self.function)),
                ("method", Some(self.method)),
                ("name", Some(self.name)),
                ("tenant", Some(self.tenant)),
            ],
        );
        push_key(line, &mut first, "status");
        let _ = write!(line, "{status}");
        push_key(line, &mut first, "result_type");
        push_str(line, result_type);
        push_key(line, &mut first, "latency_ms");
        push_f64(line, latency_ms);
    }

    /// The access fields of the EMF line, in the same order, less what the line's root says
    /// (module docs): no `message`, `function` or `latency_ms`; `method` only when its
    /// `Method` dimension is not the method itself, `name` only when `tool` (the `Tool`
    /// dimension, tool calls only) is not the name itself.
    fn push_emf_fields(
        &self,
        line: &mut Vec<u8>,
        status: u16,
        result_type: &str,
        method_dimension: &str,
        tool: Option<&str>,
    ) {
        let mut first = true;
        let method = (method_dimension != self.method).then_some(self.method);
        let name = (tool != Some(self.name)).then_some(self.name);
        self.push_named(
            line,
            &mut first,
            [
                ("trace_id", Some(self.trace_id)),
                ("apigw_request_id", self.ids.apigw.as_deref()),
                ("lambda_request_id", self.ids.lambda.as_deref()),
                ("method", method),
                ("name", name),
                ("tenant", Some(self.tenant)),
            ],
        );
        push_key(line, &mut first, "status");
        let _ = write!(line, "{status}");
        push_key(line, &mut first, "result_type");
        push_str(line, result_type);
    }

    /// `"key":"value"` for each present value, as JSON strings.
    fn push_named<const N: usize>(
        &self,
        line: &mut Vec<u8>,
        first: &mut bool,
        named: [(&str, Option<&str>); N],
    ) {
        for (key, value) in named {
            if let Some(value) = value {
                push_key(line, first, key);
                push_str(line, value);
            }
        }
    }

    /// The request's one line with EMF on, without its newline: `{`, then `lead` (members the
    /// log format puts first: the local format's `"timestamp":…,`), `"fields":{…}` (the access
    /// fields the root does not say, [`RequestLog::push_emf_fields`], so the queries on
    /// `fields.trace_id`, `fields.status`, `fields.tenant` find it as they find the access
    /// line), then the EMF document of `metrics` ([`RequestMetrics::metrics`]: dimensions,
    /// metrics, `_aws`) for `namespace` at `timestamp_ms`.
    ///
    /// Invariant: the caller's text (method, name, tenant, request ids) is only inside `fields`,
    /// as JSON strings; the root holds our own names only, and the dimensions come from closed
    /// sets (module docs).
    pub(crate) fn emf_line(
        &self,
        metrics: &RequestMetrics<'_>,
        namespace: &str,
        timestamp_ms: u64,
        lead: &[u8],
    ) -> Vec<u8> {
        let document = metrics.metrics();
        let mut line = Vec::with_capacity(512);
        line.push(b'{');
        line.extend_from_slice(lead);
        line.extend_from_slice(b"\"fields\":{");
        self.push_emf_fields(
            &mut line,
            metrics.status,
            metrics.result_type,
            method_dimension(metrics.method),
            metrics.tool_dimension(),
        );
        line.extend_from_slice(b"},");
        document.write_members(&mut line, namespace, timestamp_ms);
        line.push(b'}');
        line
    }
}

/// The `message` of the access fields, on the access line and on the request's EMF line: what
/// operators filter on (`fields.message = "mcp request"`).
pub const ACCESS_MESSAGE: &str = "mcp request";

/// `,"key":` (no comma before the first key of an object).
fn push_key(line: &mut Vec<u8>, first: &mut bool, key: &str) {
    if !std::mem::take(first) {
        line.push(b',');
    }
    push_str(line, key);
    line.push(b':');
}

/// `text` as a JSON string, escaped by `serde_json` (quotes, backslashes and every control
/// character: the value can neither end its line nor close its object).
fn push_str(line: &mut Vec<u8>, text: &str) {
    let _ = serde_json::to_writer(&mut *line, text);
}

#[cfg(feature = "logging")]
/// A number as `serde_json` writes it (`null` when it is not finite, as before).
fn push_f64(line: &mut Vec<u8>, value: f64) {
    let _ = serde_json::to_writer(&mut *line, &value);
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

/// What one request did, for its EMF line: its dimensions and metrics. The access fields the
/// line carries beside them (trace id, request ids, the caller's method and name, tenant) are
/// the request's log fields (`RequestLog`, crate-private).
pub struct RequestMetrics<'a> {
    /// The function that served the request (`tools-call`, `mcp`, …): a dimension.
    pub function: &'a str,
    /// The method the request named (caller text: the dimension is [`method_dimension`] of it).
    pub method: &'a str,
    /// For `tools/call`: the tool the call resolved to, if the caller may see it (a dimension).
    pub tool: Option<&'a str>,
    /// The HTTP status answered.
    pub status: u16,
    /// The result's `resultType` (`complete`, `input_required`, …), or `-` when there is none.
    pub result_type: &'a str,
    /// Time from receipt to answer, in milliseconds: the request's duration (the `Latency`
    /// metric; what Lambda's REPORT line gave as `Duration`, less the Runtime API's round trip).
    pub latency_ms: f64,
    /// Time spent verifying the credential, in milliseconds, if one was verified (a signature
    /// checked; `None` when it was recalled from the environment's memory or none was needed).
    pub token_ms: Option<f64>,
    /// Whether this was the first request of the process (a Lambda cold start: what REPORT's
    /// `Init Duration` told).
    pub cold_start: bool,
}

/// `ms` to the microsecond: what a latency is worth on the line (fewer digits, same figure).
fn to_micros(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

impl RequestMetrics<'_> {
    /// The `Tool` dimension: for `tools/call`, the tool the call resolved to if the caller may
    /// see it, else [`emf::OTHER`]; no dimension for other methods.
    pub fn tool_dimension(&self) -> Option<&str> {
        (method_dimension(self.method) == Method::ToolsCall.as_str())
            .then(|| self.tool.unwrap_or(emf::OTHER))
    }

    /// The EMF document: for the whole deployment (no dimensions: what alarms read), by
    /// function and method, and by function, method and tool for tool calls (a call that did
    /// not resolve to a tool the caller may see counts as tool [`emf::OTHER`]).
    ///
    /// `Latency` is on every line, so its `SampleCount` is the request count (no `Requests`
    /// metric: 32 bytes a line for a figure the statistic already gives); it carries no unit
    /// (milliseconds, to the microsecond; a unit is 22 bytes a line and changes no statistic or
    /// alarm). `InputRequired` counts MRTR rounds (answers of `resultType: input_required`).
    /// `TokenVerification` is the time a credential's verification took, on the lines of the
    /// requests whose credential was verified (a signature checked), not of those recalled
    /// from the environment's memory of verified tokens. No properties: the request's line
    /// writes its access fields before these (module docs).
    pub fn metrics(&self) -> Metrics {
        let method = method_dimension(self.method);
        let mut metrics = Metrics::new()
            .dimension("Function", self.function)
            .dimension("Method", method)
            .by(&[])
            .by(&["Function", "Method"]);
        if let Some(tool) = self.tool_dimension() {
            metrics = metrics
                .dimension("Tool", tool)
                .by(&["Function", "Method", "Tool"]);
        }
        metrics = metrics.metric("Latency", to_micros(self.latency_ms), Unit::None);
        // A counter that is 0 is left off the line: a Sum (what every alarm and dashboard of
        // the template reads, missing data not breaching) is the same, and a request's line is
        // ~270 bytes shorter. An Average of a counter means nothing then: divide Sums by the
        // SampleCount of Latency instead.
        for (counter, counts) in [
            ("ClientErrors", (400..500).contains(&self.status)),
            ("ServerErrors", self.status >= 500),
            ("Throttled", self.status == 429),
            ("InputRequired", self.result_type == "input_required"),
            ("ColdStart", self.cold_start),
        ] {
            if counts {
                metrics = metrics.metric(counter, 1.0, Unit::None);
            }
        }
        if let Some(token_ms) = self.token_ms {
            metrics = metrics.metric("TokenVerification", to_micros(token_ms), Unit::Milliseconds);
        }
        metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The EMF line of a request for `method` whose call resolved to `tool`, named
    /// `\u{1b}]0;pwned\u{7}` by its caller.
    fn call(method: &str, tool: Option<&str>) -> Value {
        let ids = RequestIds::default();
        let log = RequestLog {
            trace_id: "t",
            ids: &ids,
            function: "tools-call",
            method,
            name: "\u{1b}]0;pwned\u{7}",
            tenant: "-",
        };
        let request = RequestMetrics {
            function: "tools-call",
            method,
            tool,
            status: 200,
            result_type: "complete",
            latency_ms: 1.0,
            token_ms: None,
            cold_start: false,
        };
        serde_json::from_slice(&log.emf_line(&request, "Relevo", 0, b"")).expect("JSON")
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
            unresolved["fields"]["name"], "\u{1b}]0;pwned\u{7}",
            "the raw name stays in the access fields"
        );
        let unknown = call("tools/cal\u{7}", None);
        assert_eq!(unknown["Method"], emf::OTHER);
        assert_eq!(unknown["fields"]["method"], "tools/cal\u{7}");
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
