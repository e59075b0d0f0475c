//! The log setup of every runner (feature `logging`): JSON lines on stdout written by our own
//! code, one buffer and one write per line, and EMF metrics when `RELEVO_METRICS=emf`
//! ([`relevo_state::emf`]).
//!
//! Two writers share one line shape (`{"timestamp"?,"level","fields":{…},"span"?:{…}}`, what
//! tracing-subscriber's JSON formatter wrote before, so operators' queries keep their paths):
//! - the access line of every request ([`crate::observe::RequestLog::access`], target
//!   `relevo_protocol::server`, INFO) is formatted straight from the request's fields: no tracing
//!   event, no formatter, no span on the request path;
//! - every `tracing` event (a handler's, a job's, a library's) goes through [`JsonLines`], a
//!   small `Layer` over the `Registry`: its fields, then under `span` the request's context
//!   (trace id, request ids, function, method, name, tenant, `"name":"request"`) when it is
//!   logged inside a request's handler — a task-local ([`RequestContext`]) the server scopes
//!   around the handler's future, never a global, so concurrent requests keep their own — else
//!   the fields of the innermost entered span (the worker's `invocation`, a job's, the Lambda
//!   runtime's), sorted by name and followed by the span's `name`.
//!
//! The level: `RUST_LOG`, a level with optional per-target levels; `info` otherwise. On Lambda
//! the level Lambda's log configuration sets (`AWS_LAMBDA_LOG_LEVEL`) comes first. The targets
//! that matter: `relevo_protocol::server` (the access line: `info,relevo_protocol::server=warn`
//! turns it off) and `relevo::request` (the request context on handler lines:
//! `info,relevo::request=off` leaves it out). Both are decided once, when the subscriber is
//! built. Per-target levels, not a filter expression: the `EnvFilter` of `tracing-subscriber`
//! would link its regex engine into every binary for this.
//!
//! Threat model: the method, tool name, tenant and request ids on a line are caller text, and a
//! handler may log anything. Every string goes through `serde_json`'s escaping (quotes,
//! backslashes and every control character, newlines included, are escaped), so a value can
//! neither end its line nor forge a field; caller names are cut to
//! [`crate::server::MAX_LOGGED_CHARS`] before they get here. Invariant: one line per write.
//!
//! Invariant: no AWS crate here; the Lambda runner and the local server share this function,
//! and the local server links nothing of Lambda's.

use std::io::Write as _;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Registry;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use super::RequestLog;

/// The target of the access line (the module that logged it before; operators' filters name it).
pub const ACCESS_TARGET: &str = "relevo_protocol::server";
/// The target of the request context that handler lines carry.
pub const REQUEST_TARGET: &str = "relevo::request";

/// How log lines look, by where the process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// A Lambda function: JSON lines without a timestamp (CloudWatch stamps each line), the
    /// level from `AWS_LAMBDA_LOG_LEVEL`, else `RUST_LOG`.
    Lambda,
    /// A process on this machine (the local server, the emulator): JSON lines with their
    /// timestamp, the level from `RUST_LOG`.
    Local,
}

/// Where finished lines go: each call gets one whole line, newline included.
pub type LineSink = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// Installs the process's log subscriber and turns EMF metrics on as the environment says.
/// Once per process: a later call (or a subscriber installed before) changes nothing.
pub fn init_logging(format: LogFormat) {
    let lambda_level = match format {
        LogFormat::Lambda => std::env::var("AWS_LAMBDA_LOG_LEVEL")
            .ok()
            .and_then(|level| level.parse::<LevelFilter>().ok()),
        LogFormat::Local => None,
    };
    let rust_log = std::env::var("RUST_LOG")
        .ok()
        .and_then(|value| value.parse::<Targets>().ok());
    let filter = match (lambda_level, rust_log) {
        (Some(level), _) => Targets::new().with_default(level),
        (None, Some(targets)) => targets,
        (None, None) => Targets::new().with_default(LevelFilter::INFO),
    };
    let stdout: LineSink = Arc::new(|line: &[u8]| {
        // A log line that cannot be written has nowhere else to go.
        let _ = std::io::stdout().lock().write_all(line);
    });
    // Already installed: the first subscriber stays (tests and embedders may set their own).
    let _ = tracing::subscriber::set_global_default(log_subscriber(format, filter, stdout));
    relevo_state::emf::enable_from_env();
}

/// The subscriber [`init_logging`] installs, writing each line to `sink` at the levels `filter`
/// enables (tests install it with `tracing::subscriber::set_default`).
pub fn log_subscriber(
    format: LogFormat,
    filter: Targets,
    sink: LineSink,
) -> impl Subscriber + Send + Sync {
    let lines = JsonLines {
        timestamp: format == LogFormat::Local,
        access: filter.would_enable(ACCESS_TARGET, &Level::INFO),
        context: filter.would_enable(REQUEST_TARGET, &Level::INFO),
        sink,
    };
    Registry::default().with(lines).with(filter)
}

/// The layer that writes every event as one JSON line (module docs).
pub struct JsonLines {
    timestamp: bool,
    access: bool,
    context: bool,
    sink: LineSink,
}

/// One request's context as handler lines carry it: the rendered `span` object, and the span
/// that was current when the handler started (an event in a span entered inside the handler
/// reports that span instead, as a span entered inside a span did).
pub struct RequestContext {
    outer: Option<Id>,
    span: Vec<u8>,
}

tokio::task_local! {
    static REQUEST: RequestContext;
}

/// What [`JsonLines`] decides for a request about to run its handler: `None` when it is not
/// the installed subscriber (the caller falls back to a tracing span), `Some(None)` when the
/// request context is off, else the context to scope the handler in.
pub(crate) fn request_context(fields: &RequestLog<'_>) -> Option<Option<RequestContext>> {
    tracing::dispatcher::get_default(|dispatch| {
        let lines = dispatch.downcast_ref::<JsonLines>()?;
        if !lines.context {
            return Some(None);
        }
        let mut span = Vec::with_capacity(256);
        span.push(b'{');
        let mut entries: [(&str, Option<&str>); 7] = [
            ("apigw_request_id", fields.ids.apigw.as_deref()),
            ("function", Some(fields.function)),
            ("lambda_request_id", fields.ids.lambda.as_deref()),
            ("method", Some(fields.method)),
            ("name", Some(fields.name)),
            ("tenant", Some(fields.tenant)),
            ("trace_id", Some(fields.trace_id)),
        ];
        entries.sort_by_key(|(key, _)| *key);
        let mut first = true;
        for (key, value) in entries {
            if let Some(value) = value {
                push_key(&mut span, &mut first, key);
                push_str(&mut span, value);
            }
        }
        push_key(&mut span, &mut first, "name");
        push_str(&mut span, "request");
        span.push(b'}');
        Some(Some(RequestContext {
            outer: dispatch.current_span().id().cloned(),
            span,
        }))
    })
}

/// Runs `work` with `context` as the request context of the lines it logs.
pub(crate) async fn scope<T>(context: RequestContext, work: impl Future<Output = T>) -> T {
    REQUEST.scope(context, work).await
}

/// Writes the access line when [`JsonLines`] is the current subscriber (true then, whether
/// the level lets the line out or not); false otherwise (the caller logs it through tracing).
pub(crate) fn write_access(
    fields: &RequestLog<'_>,
    status: u16,
    result_type: &str,
    latency_ms: f64,
) -> bool {
    tracing::dispatcher::get_default(|dispatch| {
        let Some(lines) = dispatch.downcast_ref::<JsonLines>() else {
            return false;
        };
        if !lines.access {
            return true;
        }
        let mut line = Vec::with_capacity(512);
        lines.begin(&mut line, &Level::INFO);
        let mut first = true;
        push_key(&mut line, &mut first, "message");
        line.extend_from_slice(b"\"mcp request\"");
        let text = [
            ("trace_id", Some(fields.trace_id)),
            ("apigw_request_id", fields.ids.apigw.as_deref()),
            ("lambda_request_id", fields.ids.lambda.as_deref()),
            ("function", Some(fields.function)),
            ("method", Some(fields.method)),
            ("name", Some(fields.name)),
            ("tenant", Some(fields.tenant)),
        ];
        for (key, value) in text {
            if let Some(value) = value {
                push_key(&mut line, &mut first, key);
                push_str(&mut line, value);
            }
        }
        push_key(&mut line, &mut first, "status");
        let _ = write!(line, "{status}");
        push_key(&mut line, &mut first, "result_type");
        push_str(&mut line, result_type);
        push_key(&mut line, &mut first, "latency_ms");
        push_f64(&mut line, latency_ms);
        line.push(b'}');
        if let (Some(registry), Some(id)) = (
            dispatch.downcast_ref::<Registry>(),
            dispatch.current_span().id(),
        ) && let Some(span) = registry.span(id)
        {
            line.extend_from_slice(b",\"span\":");
            push_span(
                &mut line,
                span.name(),
                span.extensions().get::<SpanFields>(),
            );
        }
        line.extend_from_slice(b"}\n");
        (lines.sink)(&line);
        true
    })
}

impl JsonLines {
    /// `{"timestamp":…,"level":…,"fields":{` (the fields' object left open).
    fn begin(&self, line: &mut Vec<u8>, level: &Level) {
        line.push(b'{');
        if self.timestamp {
            line.extend_from_slice(b"\"timestamp\":\"");
            push_timestamp(line, SystemTime::now());
            line.extend_from_slice(b"\",");
        }
        line.extend_from_slice(b"\"level\":\"");
        line.extend_from_slice(level.as_str().as_bytes());
        line.extend_from_slice(b"\",\"fields\":{");
    }
}

impl<S> Layer<S> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = SpanFields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            let mut extensions = span.extensions_mut();
            if let Some(fields) = extensions.get_mut::<SpanFields>() {
                values.record(fields);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut line = Vec::with_capacity(256);
        self.begin(&mut line, event.metadata().level());
        let mut fields = EventFields {
            line: &mut line,
            first: true,
        };
        event.record(&mut fields);
        line.push(b'}');
        let leaf = ctx.event_span(event);
        let leaf_id = leaf.as_ref().map(|span| span.id());
        let from_request = REQUEST
            .try_with(|request| {
                if request.outer == leaf_id {
                    line.extend_from_slice(b",\"span\":");
                    line.extend_from_slice(&request.span);
                    true
                } else {
                    false
                }
            })
            .unwrap_or(false);
        if !from_request && let Some(span) = leaf {
            line.extend_from_slice(b",\"span\":");
            push_span(
                &mut line,
                span.name(),
                span.extensions().get::<SpanFields>(),
            );
        }
        line.extend_from_slice(b"}\n");
        (self.sink)(&line);
    }
}

/// A span's fields, each rendered as JSON, sorted by name (a field recorded again replaces
/// its value).
#[derive(Default)]
struct SpanFields(Vec<(&'static str, Vec<u8>)>);

impl SpanFields {
    fn set(&mut self, name: &'static str, value: Vec<u8>) {
        match self.0.binary_search_by(|(key, _)| key.cmp(&name)) {
            Ok(at) => self.0[at].1 = value,
            Err(at) => self.0.insert(at, (name, value)),
        }
    }
}

impl Visit for SpanFields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut rendered = Vec::new();
        push_str(&mut rendered, &format!("{value:?}"));
        self.set(field.name(), rendered);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let mut rendered = Vec::new();
        push_str(&mut rendered, value);
        self.set(field.name(), rendered);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field.name(), value.to_string().into_bytes());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field.name(), value.to_string().into_bytes());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field.name(), value.to_string().into_bytes());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        let mut rendered = Vec::new();
        push_f64(&mut rendered, value);
        self.set(field.name(), rendered);
    }
}

/// An event's fields, written in the order the event gives them.
struct EventFields<'a> {
    line: &'a mut Vec<u8>,
    first: bool,
}

impl Visit for EventFields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        push_key(self.line, &mut self.first, field.name());
        push_str(self.line, &format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        push_key(self.line, &mut self.first, field.name());
        push_str(self.line, value);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        push_key(self.line, &mut self.first, field.name());
        let _ = write!(self.line, "{value}");
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        push_key(self.line, &mut self.first, field.name());
        let _ = write!(self.line, "{value}");
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        push_key(self.line, &mut self.first, field.name());
        let _ = write!(self.line, "{value}");
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        push_key(self.line, &mut self.first, field.name());
        push_f64(self.line, value);
    }
}

/// `{"field":value,…,"name":"span name"}`: the shape tracing-subscriber gave a span.
fn push_span(line: &mut Vec<u8>, name: &str, fields: Option<&SpanFields>) {
    line.push(b'{');
    let mut first = true;
    for (key, value) in fields.map(|f| f.0.as_slice()).unwrap_or_default() {
        push_key(line, &mut first, key);
        line.extend_from_slice(value);
    }
    push_key(line, &mut first, "name");
    push_str(line, name);
    line.push(b'}');
}

/// `,"key":` (no comma before the first key of an object).
fn push_key(line: &mut Vec<u8>, first: &mut bool, key: &str) {
    if !std::mem::take(first) {
        line.push(b',');
    }
    push_str(line, key);
    line.push(b':');
}

/// `text` as a JSON string, escaped by `serde_json`.
fn push_str(line: &mut Vec<u8>, text: &str) {
    let _ = serde_json::to_writer(&mut *line, text);
}

/// A number as `serde_json` writes it (`null` when it is not finite, as before).
fn push_f64(line: &mut Vec<u8>, value: f64) {
    let _ = serde_json::to_writer(&mut *line, &value);
}

/// `2026-12-05T12:54:24.042046Z`: RFC 3339 in UTC with microseconds (the format before).
fn push_timestamp(line: &mut Vec<u8>, now: SystemTime) {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let _ = write!(
        line,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_micros()
    );
}
