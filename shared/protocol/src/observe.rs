//! What a request tells operators: its trace, the ids AWS gave it, and its metrics.
//!
//! Every request runs in a trace ([`relevo_state::trace`]): the context from `params._meta`
//! (`traceparent`, `tracestate`, `baggage`), else the HTTP `traceparent` header, else the
//! context the front door's adapter put among the request's extensions (on Lambda: the X-Ray
//! header of the invocation), else a new root. The request's access line and every line logged
//! while its handler runs carry the trace id, the API Gateway and Lambda request ids
//! ([`RequestIds`]), the method, the tool and the tenant; jobs it starts keep the trace.
//!
//! Metrics are EMF lines ([`relevo_state::emf`]), one per request, when they are on.

use std::sync::atomic::{AtomicBool, Ordering};

use http::HeaderMap;
use relevo_state::emf::{self, Metrics, Unit};
use relevo_state::trace::TraceContext;
use serde_json::Value;

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
pub fn upstream_trace(headers: &HeaderMap, fallback: Option<&TraceContext>) -> Option<TraceContext> {
    header(headers, "traceparent")
        .and_then(|parent| TraceContext::from_w3c(parent, header(headers, "tracestate"), header(headers, "baggage")))
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

/// What one request did, for its EMF line.
pub struct RequestMetrics<'a> {
    pub function: &'a str,
    pub method: &'a str,
    pub tool: Option<&'a str>,
    pub status: u16,
    pub result_type: &'a str,
    pub latency_ms: f64,
    pub token_ms: Option<f64>,
    pub cold_start: bool,
    pub trace_id: &'a str,
    pub tenant: Option<&'a str>,
}

impl RequestMetrics<'_> {
    /// The EMF document: for the whole deployment (no dimensions: what alarms read), by
    /// function and method, and by function, method and tool for tool calls. `InputRequired` counts MRTR rounds (answers of `resultType: input_required`).
    pub fn metrics(&self) -> Metrics {
        let mut metrics = Metrics::new()
            .dimension("Function", self.function)
            .dimension("Method", self.method)
            .by(&[])
            .by(&["Function", "Method"]);
        if let Some(tool) = self.tool {
            metrics = metrics.dimension("Tool", tool).by(&["Function", "Method", "Tool"]);
        }
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        metrics = metrics
            .metric("Requests", 1.0, Unit::Count)
            .metric("Latency", self.latency_ms, Unit::Milliseconds)
            .metric("ClientErrors", flag((400..500).contains(&self.status)), Unit::Count)
            .metric("ServerErrors", flag(self.status >= 500), Unit::Count)
            .metric("Throttled", flag(self.status == 429), Unit::Count)
            .metric("InputRequired", flag(self.result_type == "input_required"), Unit::Count)
            .metric("ColdStart", flag(self.cold_start), Unit::Count);
        if let Some(token_ms) = self.token_ms {
            metrics = metrics.metric("TokenVerification", token_ms, Unit::Milliseconds);
        }
        metrics
            .property("status", self.status)
            .property("resultType", self.result_type)
            .property("traceId", self.trace_id)
            .property("tenant", self.tenant.unwrap_or("-"))
    }

    pub fn emit(&self) {
        if emf::enabled() {
            self.metrics().emit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_http_traceparent_wins_over_the_adapters_context() {
        let mut headers = HeaderMap::new();
        let xray = TraceContext::from_xray("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1").expect("valid");
        assert_eq!(upstream_trace(&headers, Some(&xray)), Some(xray.clone()));
        headers.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().expect("ok"));
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
        assert_eq!(meta_trace(serde_json::json!({"_meta": {"traceparent": 7}}).as_object().expect("object")), None);
    }
}
