//! OpenTelemetry trace export, off by default: when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (a full
//! URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (a base, `/v1/traces` appended) names an `http://`
//! collector — the ADOT or OpenTelemetry collector extension beside the function listens on
//! `localhost:4318` — every request and job span goes there as OTLP/HTTP with the JSON encoding
//! (<https://opentelemetry.io/docs/specs/otlp/#otlphttp>), sent at the end of each invocation,
//! before the environment may be frozen.
//!
//! Why not the OpenTelemetry SDK: it would link its runtime, protobuf and a second HTTP stack
//! into every function for the few spans a request makes; the JSON encoding of those spans is
//! what this module writes, and the test receives and checks it.
//!
//! Bounds: at most [`MAX_PENDING`] spans wait for a flush (more are dropped and counted in a
//! warning), and a flush waits at most [`FLUSH_TIMEOUT`]; an unreachable collector costs each
//! invocation that much and loses its spans, never the answer.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use relevo_state::trace::{self, FinishedSpan, SpanExporter};
use serde_json::{Value, json};

pub const MAX_PENDING: usize = 512;
pub const FLUSH_TIMEOUT: Duration = Duration::from_millis(500);

pub struct OtlpExporter {
    url: http::Uri,
    service: String,
    pending: Mutex<(Vec<FinishedSpan>, usize)>,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl SpanExporter for OtlpExporter {
    fn record(&self, span: FinishedSpan) {
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if pending.0.len() < MAX_PENDING {
            pending.0.push(span);
        } else {
            pending.1 += 1;
        }
    }
}

impl OtlpExporter {
    /// The exporter the environment configures, if any (module docs); `None` when export is off
    /// or the endpoint is not an `http://` URL (said once in the log).
    pub fn from_env() -> Option<Arc<OtlpExporter>> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let url = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| {
            var("OTEL_EXPORTER_OTLP_ENDPOINT")
                .map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
        })?;
        let parsed = url
            .parse::<http::Uri>()
            .ok()
            .filter(|u| u.scheme_str() == Some("http") && u.host().is_some());
        let Some(url) = parsed else {
            tracing::warn!(%url, "OTLP export is off: only an http:// collector beside the function is supported");
            return None;
        };
        let service = var("OTEL_SERVICE_NAME")
            .or_else(|| var("AWS_LAMBDA_FUNCTION_NAME"))
            .unwrap_or_else(|| "relevo".into());
        Some(Arc::new(OtlpExporter::new(url, &service)))
    }

    pub fn new(url: http::Uri, service: &str) -> Self {
        OtlpExporter {
            url,
            service: service.into(),
            pending: Mutex::new((Vec::new(), 0)),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// Sends what is pending, in one request; failures are logged, and the spans dropped.
    pub async fn flush(&self) {
        let (spans, dropped) = {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            (
                std::mem::take(&mut pending.0),
                std::mem::take(&mut pending.1),
            )
        };
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "spans dropped: more than {MAX_PENDING} waited for one flush"
            );
        }
        if spans.is_empty() {
            return;
        }
        let body = Bytes::from(encode(&self.service, &spans).to_string());
        let request = http::Request::post(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(body));
        let Ok(request) = request else { return };
        match tokio::time::timeout(FLUSH_TIMEOUT, self.client.request(request)).await {
            Ok(Ok(response)) if response.status().is_success() => {}
            Ok(Ok(response)) => tracing::warn!(
                status = response.status().as_u16(),
                spans = spans.len(),
                "the OTLP collector refused the spans"
            ),
            Ok(Err(error)) => {
                tracing::warn!(%error, spans = spans.len(), "the OTLP collector is unreachable")
            }
            Err(_) => tracing::warn!(
                spans = spans.len(),
                "the OTLP collector did not answer in time"
            ),
        }
    }
}

/// `ExportTraceServiceRequest` in OTLP's JSON encoding: ids as hex, times as decimal strings,
/// enums as numbers.
pub fn encode(service: &str, spans: &[FinishedSpan]) -> Value {
    let spans: Vec<Value> = spans
        .iter()
        .map(|span| {
            let mut encoded = json!({
                "traceId": span.trace_id,
                "spanId": span.span_id,
                "name": span.name,
                "kind": span.kind as u8,
                "startTimeUnixNano": span.start_unix_nanos.to_string(),
                "endTimeUnixNano": span.end_unix_nanos.to_string(),
                "attributes": span.attributes.iter().map(|(key, value)| json!({ "key": key, "value": { "stringValue": value } })).collect::<Vec<_>>(),
                // STATUS_CODE_ERROR = 2, STATUS_CODE_UNSET = 0.
                "status": { "code": if span.failed { 2 } else { 0 } },
            });
            if let Some(parent) = &span.parent_span_id {
                encoded["parentSpanId"] = json!(parent);
            }
            encoded
        })
        .collect();
    json!({ "resourceSpans": [{
        "resource": { "attributes": [{ "key": "service.name", "value": { "stringValue": service } }] },
        "scopeSpans": [{ "scope": { "name": "relevo" }, "spans": spans }],
    }]})
}

static INSTALLED: OnceLock<Option<Arc<OtlpExporter>>> = OnceLock::new();

/// Installs the configured exporter as the process's span exporter (once).
pub fn init_from_env() {
    let exporter = INSTALLED.get_or_init(OtlpExporter::from_env);
    if let Some(exporter) = exporter {
        trace::install_exporter(exporter.clone());
    }
}

/// Sends the spans of the invocation that just ended (nothing when export is off).
pub async fn flush() {
    if let Some(Some(exporter)) = INSTALLED.get() {
        // Boxed: only an exporting function carries the HTTP client's future.
        Box::pin(exporter.flush()).await;
    }
}
