//! Trace context: one trace id for a request and everything it causes, across functions.
//!
//! A request's context comes, most specific first, from the MCP request's `params._meta`
//! (`traceparent`, `tracestate`, `baggage`, the keys the 2026-07-28 revision reserves), the HTTP
//! `traceparent` header (W3C Trace Context), or Lambda's X-Ray header (`Root=1-…;Parent=…;Sampled=…`);
//! without any, a new root. The server's work is a child span of it: same trace id, a span id
//! of its own. A job started during the request records the context, and its queue message
//! carries it as SQS's `AWSTraceHeader` (X-Ray form), so the worker and the reconciler log the
//! same trace id.
//!
//! Invariants: a trace id is 32 lowercase hex digits and not all zero, a span id 16 and not all
//! zero (W3C Trace Context §3.2); anything else is not a context and is ignored, never echoed.
//! `tracestate` and `baggage` are carried only up to [`MAX_CARRIED`] bytes (a caller cannot make
//! us hold or forward more).

use std::future::Future;

/// The longest `tracestate` or `baggage` carried on (W3C allows 512 bytes of tracestate and
/// 8192 of baggage to be propagated; we keep the common limit of both).
pub const MAX_CARRIED: usize = 512;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// This span (16 lowercase hex digits): the parent of whatever it causes.
    pub span_id: String,
    pub sampled: bool,
    pub tracestate: Option<String>,
    pub baggage: Option<String>,
}

fn is_hex(text: &str, len: usize) -> bool {
    text.len() == len
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && text.bytes().any(|b| b != b'0')
}

fn hex(raw: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(raw.len() * 2);
    for byte in raw {
        text.push(DIGITS[usize::from(byte >> 4)] as char);
        text.push(DIGITS[usize::from(byte & 0xf)] as char);
    }
    text
}

thread_local! {
    /// Each thread's SplitMix64 stream, seeded once from the operating system.
    static STREAM: std::cell::Cell<u64> = std::cell::Cell::new({
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        u64::from_le_bytes(seed) ^ unix_nanos() as u64
    });
}

/// 64 bits of a per-thread stream seeded from the operating system: ids that do not repeat and
/// cannot be guessed from outside, without a system call per request (ids are not secrets;
/// nothing is authorized by one).
fn next_u64() -> u64 {
    STREAM.with(|stream| {
        let mut z = stream.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        stream.set(z);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// `BYTES` (at most 16) random bytes as hex, never all zero (an all-zero id is invalid).
fn random_hex<const BYTES: usize>() -> String {
    let words = [next_u64().to_le_bytes(), next_u64().to_le_bytes()];
    let mut raw = [0u8; BYTES];
    for (at, byte) in raw.iter_mut().enumerate() {
        *byte = words[at / 8][at % 8];
    }
    if raw.iter().all(|b| *b == 0) {
        raw[0] = 1;
    }
    hex(&raw)
}

fn carried(value: Option<&str>) -> Option<String> {
    value
        .filter(|v| !v.is_empty() && v.len() <= MAX_CARRIED && v.is_ascii())
        .map(String::from)
}

impl TraceContext {
    /// A new trace: nobody upstream gave us one. Its first 8 hex digits are the time in seconds,
    /// as X-Ray requires of the trace ids it accepts (it refuses ids older than 30 days).
    pub fn root() -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs());
        let trace_id = format!("{:08x}{}", now as u32, random_hex::<12>());
        TraceContext {
            trace_id,
            span_id: random_hex::<8>(),
            sampled: true,
            tracestate: None,
            baggage: None,
        }
    }

    /// `version-traceid-parentid-flags` (W3C Trace Context §3.2.2). Versions above `00` are
    /// read by their first four fields, as the specification asks.
    pub fn from_traceparent(header: &str) -> Option<Self> {
        let mut parts = header.trim().split('-');
        let (version, trace_id, span_id, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let version_ok = is_hex(version, 2) || version == "00";
        if !version_ok || version == "ff" || (version == "00" && parts.next().is_some()) {
            return None;
        }
        if !is_hex(trace_id, 32) || !is_hex(span_id, 16) || flags.len() != 2 {
            return None;
        }
        let flags = u8::from_str_radix(flags, 16).ok()?;
        Some(TraceContext {
            trace_id: trace_id.into(),
            span_id: span_id.into(),
            sampled: flags & 1 == 1,
            tracestate: None,
            baggage: None,
        })
    }

    /// `Root=1-{8 hex time}-{24 hex};Parent={16 hex};Sampled={0|1}` (X-Ray's header, which
    /// Lambda passes as `Lambda-Runtime-Trace-Id` and SQS carries as `AWSTraceHeader`). The trace
    /// id is the root's two hex parts joined, as AWS maps X-Ray ids to W3C ones.
    pub fn from_xray(header: &str) -> Option<Self> {
        let (mut root, mut parent, mut sampled) = (None, None, false);
        for field in header.split(';') {
            match field.trim().split_once('=') {
                Some(("Root", value)) => root = Some(value),
                Some(("Parent", value)) => parent = Some(value),
                Some(("Sampled", value)) => sampled = value == "1",
                _ => {}
            }
        }
        let mut root_parts = root?.split('-');
        let (one, time, unique) = (root_parts.next()?, root_parts.next()?, root_parts.next()?);
        let trace_id = format!("{time}{unique}");
        if one != "1" || time.len() != 8 || root_parts.next().is_some() || !is_hex(&trace_id, 32) {
            return None;
        }
        let span_id = match parent {
            Some(parent) if is_hex(parent, 16) => parent.to_string(),
            _ => random_hex::<8>(),
        };
        Some(TraceContext {
            trace_id,
            span_id,
            sampled,
            tracestate: None,
            baggage: None,
        })
    }

    /// The context from `traceparent` with its `tracestate` and `baggage` (bounded).
    pub fn from_w3c(
        traceparent: &str,
        tracestate: Option<&str>,
        baggage: Option<&str>,
    ) -> Option<Self> {
        let mut context = TraceContext::from_traceparent(traceparent)?;
        context.tracestate = carried(tracestate);
        context.baggage = carried(baggage);
        Some(context)
    }

    /// A span of this trace whose parent is this one: what a service does on receiving it.
    pub fn child(&self) -> Self {
        TraceContext {
            span_id: random_hex::<8>(),
            ..self.clone()
        }
    }

    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{}",
            self.trace_id,
            self.span_id,
            if self.sampled { "01" } else { "00" }
        )
    }

    /// The same trace in X-Ray form, for SQS's `AWSTraceHeader`.
    pub fn xray(&self) -> String {
        format!(
            "Root=1-{}-{};Parent={};Sampled={}",
            &self.trace_id[..8],
            &self.trace_id[8..],
            self.span_id,
            u8::from(self.sampled)
        )
    }
}

/// What a span is to its trace (OpenTelemetry's `SpanKind`, with its OTLP numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// Answering a request (an MCP request).
    Server = 2,
    /// Processing a message (a job from the work queue).
    Consumer = 5,
}

/// A span that ended, for an exporter: the trace it belongs to, its parent, its times.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedSpan {
    pub trace_id: String,
    pub span_id: String,
    /// The span that caused it (the caller's, or the request that enqueued the job).
    pub parent_span_id: Option<String>,
    pub name: String,
    pub kind: SpanKind,
    pub start_unix_nanos: u128,
    pub end_unix_nanos: u128,
    pub attributes: Vec<(&'static str, String)>,
    pub failed: bool,
}

/// Where finished spans go (an OTLP exporter); none is installed unless tracing export is on.
pub trait SpanExporter: Send + Sync {
    fn record(&self, span: FinishedSpan);
}

static EXPORTER: std::sync::OnceLock<std::sync::Arc<dyn SpanExporter>> = std::sync::OnceLock::new();

/// Installs the process's exporter (once; later calls change nothing).
pub fn install_exporter(exporter: std::sync::Arc<dyn SpanExporter>) {
    let _ = EXPORTER.set(exporter);
}

/// Whether spans are exported (callers skip building them when not).
pub fn exporting() -> bool {
    EXPORTER.get().is_some()
}

/// Hands a finished span to the exporter, if one is installed.
pub fn record(span: FinishedSpan) {
    if let Some(exporter) = EXPORTER.get() {
        exporter.record(span);
    }
}

/// Nanoseconds since the epoch, for span times.
pub fn unix_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

tokio::task_local! {
    static CURRENT: TraceContext;
}

/// Runs `work` with `context` as the current trace (what [`current`] returns inside it).
pub async fn scope<F: Future>(context: TraceContext, work: F) -> F::Output {
    CURRENT.scope(context, work).await
}

/// The current trace, inside [`scope`].
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(TraceContext::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_read_and_written_back_the_same() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = TraceContext::from_traceparent(header).expect("valid");
        assert_eq!(context.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(context.sampled);
        assert_eq!(context.traceparent(), header);
    }

    #[test]
    fn malformed_or_all_zero_traceparents_are_not_contexts() {
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "not a header",
        ] {
            assert_eq!(TraceContext::from_traceparent(bad), None, "{bad}");
        }
        let future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert!(
            TraceContext::from_traceparent(future).is_some(),
            "a later version is read by its first fields"
        );
    }

    #[test]
    fn xray_and_w3c_name_the_same_trace() {
        let xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
        let context = TraceContext::from_xray(xray).expect("valid");
        assert_eq!(context.trace_id, "5759e988bd862e3fe1be46a994272793");
        assert_eq!(context.span_id, "53995c3f42cd8ad8");
        assert_eq!(context.xray(), xray);
        assert_eq!(
            TraceContext::from_traceparent(&context.traceparent()),
            Some(context.clone())
        );
        let lambda = TraceContext::from_xray("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0")
            .expect("no parent");
        assert_eq!(lambda.trace_id, context.trace_id);
        assert!(!lambda.sampled);
        assert_eq!(
            TraceContext::from_xray("Root=1-00000000-000000000000000000000000;Sampled=0"),
            None
        );
        assert_eq!(
            TraceContext::from_xray("Root=2-5759e988-bd862e3fe1be46a994272793"),
            None
        );
    }

    #[test]
    fn a_child_keeps_the_trace_and_takes_a_new_span() {
        let parent = TraceContext::root();
        let child = parent.child();
        assert_eq!(child.trace_id, parent.trace_id);
        assert_ne!(child.span_id, parent.span_id);
        assert!(is_hex(&child.span_id, 16) && is_hex(&parent.trace_id, 32));
    }

    #[test]
    fn new_traces_do_not_repeat_and_start_with_the_time() {
        let traces: std::collections::HashSet<String> =
            (0..10_000).map(|_| TraceContext::root().trace_id).collect();
        assert_eq!(traces.len(), 10_000);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let first = traces.iter().next().expect("one");
        let stamped = u64::from_str_radix(&first[..8], 16).expect("hex");
        assert!(
            now.abs_diff(stamped) < 5,
            "X-Ray reads the first 8 hex digits as the time: {first}"
        );
    }

    #[test]
    fn tracestate_and_baggage_are_carried_only_within_bounds() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let long = "k=".to_string() + &"v".repeat(MAX_CARRIED);
        let context = TraceContext::from_w3c(header, Some("vendor=1"), Some(&long)).expect("valid");
        assert_eq!(context.tracestate.as_deref(), Some("vendor=1"));
        assert_eq!(context.baggage, None);
    }

    #[tokio::test]
    async fn the_current_trace_is_the_scoped_one() {
        assert_eq!(current(), None);
        let first = TraceContext::root();
        let seen = scope(first.clone(), async { current() }).await;
        assert_eq!(seen, Some(first));
        assert_eq!(current(), None, "only inside the scope");
    }
}
