//! The log setup of every runner (feature `logging`): JSON lines on stdout written by our own
//! code, one buffer and one write per line, and EMF metrics when `RELEVO_METRICS=emf`
//! ([`relevo_state::emf`]).
//!
//! Three writers, one line per request ([`crate::observe`]):
//! - a request's line (`RequestLog::served` in [`crate::observe`]) is formatted straight from
//!   the request's fields: no tracing event, no formatter, no span on the request path. With
//!   metrics on it is the request's EMF line, `{"timestamp"?,"fields":{…},<dimensions>,
//!   <metrics>,"_aws":{…}}`, the access fields under `fields` as the access line has them, less
//!   what its root says (the function, method, tool name and latency; [`crate::observe`]);
//!   with metrics off it is the access line (target `relevo_protocol::server`, INFO),
//!   `{"timestamp"?,"level","fields":{…},"span"?:{…}}`, what tracing-subscriber's JSON
//!   formatter wrote before, so operators' queries keep their paths;
//! - every `tracing` event (a handler's, a job's, a library's) goes through [`JsonLines`], a
//!   small `Layer` over the `Registry`, in that same shape: its fields, then under `span` the
//!   request's context (trace id, request ids, function, method, name, tenant,
//!   `"name":"request"`) when it is logged inside a request's handler — a task-local
//!   ([`RequestContext`]) the server scopes around the handler's future, never a global, so
//!   concurrent requests keep their own — else the fields of the innermost entered span (the
//!   worker's `invocation`, a job's, the Lambda runtime's), sorted by name and followed by the
//!   span's `name`;
//! - the other EMF lines (a job's, the reconciler's, the ledger's) as [`relevo_state::emf`]
//!   writes them.
//!
//! The level: `RUST_LOG`, a level with optional per-target levels; `info` otherwise. On Lambda
//! the application log level of Lambda's log configuration (`AWS_LAMBDA_LOG_LEVEL`) bounds it
//! (see `levels`). The targets that matter: `relevo_protocol::server` (the access line:
//! `info,relevo_protocol::server=warn` turns it off; with metrics on the request's EMF line is
//! written whatever the level, as EMF lines always were) and `relevo::request` (the request
//! context on handler lines: `info,relevo::request=off` leaves it out). Both are decided once,
//! when the subscriber is built. Per-target levels, not a filter expression: the `EnvFilter` of
//! `tracing-subscriber` would link its regex engine into every binary for this.
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

use super::{RequestLog, RequestMetrics, push_f64, push_key, push_str};

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
        LogFormat::Lambda => std::env::var("AWS_LAMBDA_LOG_LEVEL").ok(),
        LogFormat::Local => None,
    };
    let rust_log = std::env::var("RUST_LOG").ok();
    let filter = levels(lambda_level.as_deref(), rust_log.as_deref());
    let stdout: LineSink = Arc::new(|line: &[u8]| {
        // A log line that cannot be written has nowhere else to go.
        let _ = std::io::stdout().lock().write_all(line);
    });
    relevo_state::emf::enable_from_env();
    let subscriber = log_subscriber(format, filter, relevo_state::emf::namespace(), stdout);
    // Already installed: the first subscriber stays (tests and embedders may set their own).
    let _ = tracing::subscriber::set_global_default(subscriber);
    log_panics();
}

/// The levels lines are written at. Lambda's application log level (`lambda`, from
/// `AWS_LAMBDA_LOG_LEVEL`, which Lambda sets from `LoggingConfig.ApplicationLogLevel`) is the
/// most detail written: Lambda drops the lines above it anyway. Within it, `RUST_LOG` (a level
/// with optional per-target levels) decides, so `info,relevo::request=off` still works where
/// the template sets INFO; without `RUST_LOG`, Lambda's level; without either, `info`. Lambda's
/// levels are TRACE, DEBUG, INFO, WARN, ERROR and FATAL (FATAL is ERROR here); a value that
/// does not parse is ignored.
fn levels(lambda: Option<&str>, rust_log: Option<&str>) -> Targets {
    let cap = lambda.and_then(|level| match level.trim().to_ascii_uppercase().as_str() {
        "FATAL" => Some(LevelFilter::ERROR),
        other => other.parse::<LevelFilter>().ok(),
    });
    let targets = rust_log.and_then(|value| value.parse::<Targets>().ok());
    match (targets, cap) {
        (Some(targets), None) => targets,
        (None, None) => Targets::new().with_default(LevelFilter::INFO),
        (None, Some(cap)) => Targets::new().with_default(cap),
        (Some(targets), Some(cap)) => {
            let capped = Targets::new().with_targets(
                targets
                    .iter()
                    .map(|(target, level)| (target.to_string(), level.min(cap))),
            );
            match targets.default_level() {
                Some(default) => capped.with_default(default.min(cap)),
                None => capped,
            }
        }
    }
}

/// The target of the line a panic writes ([`log_panics`]).
pub const PANIC_TARGET: &str = "relevo::panic";

/// The longest panic message the line carries, in characters (a handler may put caller text in
/// its panic; the line stays bounded whatever it holds).
pub const MAX_PANIC_CHARS: usize = 1024;

/// Makes every panic write one ERROR line first (target [`PANIC_TARGET`]: the panic's message
/// (cut to [`MAX_PANIC_CHARS`]) and where it happened, and, in a request's handler, that
/// request's context: trace id, request ids, method, tool, tenant), then what the hook before it
/// wrote (Rust's own text on stderr).
/// A deployed function aborts on panic (the release profile), so this line is how an operator
/// finds the request that ended the process. Once per process.
pub fn log_panics() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
                .unwrap_or("a panic without a message");
            let message = match message.char_indices().nth(MAX_PANIC_CHARS) {
                Some((end, _)) => &message[..end],
                None => message,
            };
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            tracing::error!(target: PANIC_TARGET, location, "panicked: {message}");
            previous(info);
        }));
    });
}

/// The subscriber [`init_logging`] installs, writing each line to `sink` at the levels `filter`
/// enables, a request's line as its EMF line in namespace `metrics` when that is set (tests
/// install it with `tracing::subscriber::set_default`).
pub fn log_subscriber(
    format: LogFormat,
    filter: Targets,
    metrics: Option<&str>,
    sink: LineSink,
) -> impl Subscriber + Send + Sync {
    let lines = JsonLines {
        timestamp: format == LogFormat::Local,
        access: filter.would_enable(ACCESS_TARGET, &Level::INFO),
        context: filter.would_enable(REQUEST_TARGET, &Level::INFO),
        metrics: metrics.map(String::from),
        sink,
    };
    Registry::default().with(lines).with(filter)
}

/// The layer that writes every event as one JSON line (module docs).
pub struct JsonLines {
    timestamp: bool,
    access: bool,
    context: bool,
    /// The EMF namespace when metrics are on: a request's line is then its EMF line.
    metrics: Option<String>,
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

/// Writes the request's one line when [`JsonLines`] is the current subscriber (true then): with
/// metrics on, its EMF line, whatever the level (the alarms read it; it was never filtered);
/// else its access line, when the level lets it out. False under any other subscriber (the
/// caller writes it).
pub(crate) fn write_served(fields: &RequestLog<'_>, metrics: &RequestMetrics<'_>) -> bool {
    tracing::dispatcher::get_default(|dispatch| {
        let Some(lines) = dispatch.downcast_ref::<JsonLines>() else {
            return false;
        };
        if let Some(namespace) = &lines.metrics {
            let now = SystemTime::now();
            let mut lead = Vec::new();
            if lines.timestamp {
                lead.extend_from_slice(b"\"timestamp\":\"");
                push_timestamp(&mut lead, now);
                lead.extend_from_slice(b"\",");
            }
            let millis = now
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis();
            let mut line = fields.emf_line(metrics, namespace, millis as u64, &lead);
            line.push(b'\n');
            (lines.sink)(&line);
            return true;
        }
        if !lines.access {
            return true;
        }
        let mut line = Vec::with_capacity(512);
        lines.begin(&mut line, &Level::INFO);
        fields.push_access_fields(
            &mut line,
            metrics.status,
            metrics.result_type,
            metrics.latency_ms,
        );
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use bytes::Bytes;
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use tracing::Instrument;

    use super::*;
    use crate::server::{MAX_LOGGED_CHARS, bounded};
    use crate::wire::CallToolResult;
    use crate::{
        App, KeyRing, McpServer, NoAuth, Outcome, RequestIds, Route, ServerConfig, Tool, handler,
    };

    /// The lines a test's subscriber wrote.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Captured {
        fn sink(&self) -> LineSink {
            let lines = self.0.clone();
            Arc::new(move |line: &[u8]| lines.lock().expect("lock").extend_from_slice(line))
        }
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("lock").clone()).expect("UTF-8")
        }
        /// Every line, parsed; a line that is not one JSON object fails the test.
        fn lines(&self) -> Vec<Value> {
            let text = self.text();
            assert!(text.is_empty() || text.ends_with('\n'), "{text}");
            text.lines()
                .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
                .collect()
        }
        fn with_message(&self, message: &str) -> Vec<Value> {
            self.lines()
                .into_iter()
                .filter(|l| l["fields"]["message"] == message)
                .collect()
        }
    }

    fn subscriber(format: LogFormat, filter: &str, logs: &Captured) -> impl Subscriber {
        log_subscriber(format, filter.parse().expect("targets"), None, logs.sink())
    }

    /// The subscriber `init_logging` installs where `RELEVO_METRICS=emf` (namespace `Relevo/t`).
    fn with_metrics(format: LogFormat, filter: &str, logs: &Captured) -> impl Subscriber {
        log_subscriber(
            format,
            filter.parse().expect("targets"),
            Some(NAMESPACE),
            logs.sink(),
        )
    }

    const NAMESPACE: &str = "Relevo/t";

    /// An app whose `greet` tool logs `said` (with `answer = 42`), after yielding once, and whose
    /// `quiet` tool logs nothing.
    fn server() -> McpServer {
        let greet = Tool::new(
            "greet",
            "",
            json!({ "type": "object" }),
            handler(|call| async move {
                let said = call.arguments["said"].as_str().unwrap_or("hi").to_string();
                tokio::task::yield_now().await;
                tracing::info!(answer = 42, "{said}");
                tokio::task::yield_now().await;
                Ok(Outcome::tool(CallToolResult::structured(
                    json!({ "ok": true }),
                )))
            }),
        );
        let quiet = Tool::new(
            "quiet",
            "",
            json!({ "type": "object" }),
            handler(|_call| async move {
                Ok(Outcome::tool(CallToolResult::structured(
                    json!({ "ok": true }),
                )))
            }),
        );
        let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
        McpServer::new(
            App::new("logs", "0").tool(greet).tool(quiet),
            ServerConfig::default(),
            keys,
            Arc::new(NoAuth),
        )
    }

    /// A `tools/call` of `tool` (the handler logs `said`), with the platform's request ids.
    async fn call(server: &McpServer, tool: &str, said: &str, ids: RequestIds) -> u16 {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": tool, "arguments": { "said": said }, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "0" } } } });
        let mut request = http::Request::post("/mcp")
            .header("host", "127.0.0.1:8080")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .body(Bytes::from(body.to_string()))
            .expect("a request");
        request.extensions_mut().insert(ids);
        server.handle(Route::All, request).await.status().as_u16()
    }

    fn ids(n: u32) -> RequestIds {
        RequestIds {
            apigw: Some(format!("apigw-{n}")),
            lambda: Some(format!("lambda-{n}")),
        }
    }

    /// One request in Lambda's `Lambda runtime invoke` span, as the runtime runs it.
    async fn one_request(format: LogFormat) -> Captured {
        let logs = Captured::default();
        let _installed = tracing::subscriber::set_default(subscriber(format, "info", &logs));
        let invoke = tracing::info_span!(
            "Lambda runtime invoke",
            requestId = "lambda-1",
            xrayTraceId = "Root=1-abc"
        );
        let status = call(&server(), "greet", "handler says \"hi\"", ids(1))
            .instrument(invoke)
            .await;
        assert_eq!(status, 200, "{}", logs.text());
        tracing::info!("outside");
        logs
    }

    /// The keys of `value`'s object, in order, as written (duplicates included).
    fn keys_of(line: &str, path: &str) -> Vec<String> {
        let start = line.find(path).expect("path") + path.len();
        let mut depth = 0;
        let object = &line[start..];
        let end = object
            .char_indices()
            .find(|(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .expect("closed")
            .0;
        let mut keys = Vec::new();
        let inner = &object[1..end];
        for part in inner.split(',') {
            if let Some((key, _)) = part.split_once("\":") {
                keys.push(key.trim_start_matches('"').to_string());
            }
        }
        keys
    }

    fn golden(format: LogFormat, logs: &Captured) {
        let text = logs.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        let parsed = logs.lines();
        let top: Vec<&str> = match format {
            LogFormat::Lambda => vec!["level", "fields", "span"],
            LogFormat::Local => vec!["timestamp", "level", "fields", "span"],
        };
        for (line, value) in lines.iter().zip(&parsed).take(2) {
            let keys: Vec<&str> = value
                .as_object()
                .expect("object")
                .keys()
                .map(String::as_str)
                .collect();
            let mut sorted_top = top.clone();
            sorted_top.sort_unstable();
            assert_eq!(keys, sorted_top, "{line}");
            let order: Vec<usize> = top
                .iter()
                .map(|k| line.find(&format!("\"{k}\":")).expect("key"))
                .collect();
            assert!(order.is_sorted(), "top-level keys in today's order: {line}");
            assert_eq!(value["level"], "INFO");
            if format == LogFormat::Local {
                let stamp = value["timestamp"].as_str().expect("a timestamp");
                assert_eq!(stamp.len(), 27, "RFC 3339 with microseconds: {stamp}");
                assert!(
                    stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T',
                    "{stamp}"
                );
            }
        }
        // The handler's line: its own fields, and the request's context under `span`.
        let (handler_line, handler) = (lines[0], &parsed[0]);
        assert_eq!(
            handler["fields"],
            json!({ "message": "handler says \"hi\"", "answer": 42 })
        );
        let trace_id = handler["span"]["trace_id"].as_str().expect("a trace id");
        assert_eq!(trace_id.len(), 32);
        assert_eq!(
            keys_of(handler_line, "\"span\":"),
            [
                "apigw_request_id",
                "function",
                "lambda_request_id",
                "method",
                "name",
                "tenant",
                "trace_id",
                "name"
            ]
        );
        assert!(
            handler_line.contains(&format!(
                "\"span\":{{\"apigw_request_id\":\"apigw-1\",\"function\":\"mcp\",\"lambda_request_id\":\"lambda-1\",\"method\":\"tools/call\",\"name\":\"greet\",\"tenant\":\"local\",\"trace_id\":\"{trace_id}\",\"name\":\"request\"}}}}"
            )),
            "{handler_line}"
        );
        // The access line: every field under `fields`, the runtime's span under `span`.
        let (access_line, access) = (lines[1], &parsed[1]);
        assert_eq!(
            keys_of(access_line, "\"fields\":"),
            [
                "message",
                "trace_id",
                "apigw_request_id",
                "lambda_request_id",
                "function",
                "method",
                "name",
                "tenant",
                "status",
                "result_type",
                "latency_ms"
            ]
        );
        let fields = &access["fields"];
        assert_eq!(fields["message"], "mcp request");
        assert_eq!(fields["trace_id"], trace_id);
        assert_eq!(fields["apigw_request_id"], "apigw-1");
        assert_eq!(fields["lambda_request_id"], "lambda-1");
        assert_eq!(fields["function"], "mcp");
        assert_eq!(fields["method"], "tools/call");
        assert_eq!(fields["name"], "greet");
        assert_eq!(fields["tenant"], "local");
        assert_eq!(fields["status"], 200);
        assert_eq!(fields["result_type"], "complete");
        assert!(fields["latency_ms"].is_f64(), "{access_line}");
        assert!(
            access_line.ends_with(
                ",\"span\":{\"requestId\":\"lambda-1\",\"xrayTraceId\":\"Root=1-abc\",\"name\":\"Lambda runtime invoke\"}}"
            ),
            "{access_line}"
        );
        // Outside any request: no request context, no span.
        assert_eq!(parsed[2]["fields"], json!({ "message": "outside" }));
        assert!(parsed[2].get("span").is_none(), "{}", lines[2]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lambda_lines_keep_todays_shape_without_a_timestamp() {
        golden(LogFormat::Lambda, &one_request(LogFormat::Lambda).await);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn local_lines_keep_todays_shape_with_a_timestamp_first() {
        golden(LogFormat::Local, &one_request(LogFormat::Local).await);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn at_warn_no_access_line_is_written() {
        let logs = Captured::default();
        let _installed =
            tracing::subscriber::set_default(subscriber(LogFormat::Lambda, "warn", &logs));
        assert_eq!(call(&server(), "greet", "hi", ids(1)).await, 200);
        tracing::warn!("kept");
        let lines = logs.lines();
        assert_eq!(lines.len(), 1, "{}", logs.text());
        assert_eq!(lines[0]["fields"]["message"], "kept");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_request_context_can_be_turned_off_by_its_target() {
        let logs = Captured::default();
        let filter = "info,relevo::request=off";
        let _installed =
            tracing::subscriber::set_default(subscriber(LogFormat::Lambda, filter, &logs));
        assert_eq!(call(&server(), "greet", "hi", ids(1)).await, 200);
        let handler = &logs.with_message("hi")[0];
        assert!(handler.get("span").is_none(), "{handler}");
        assert_eq!(logs.with_message("mcp request").len(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_span_entered_in_a_handler_is_the_span_of_its_lines() {
        let logs = Captured::default();
        let _installed =
            tracing::subscriber::set_default(subscriber(LogFormat::Lambda, "info", &logs));
        let fields = RequestLog {
            trace_id: "t",
            ids: &RequestIds::default(),
            function: "mcp",
            method: "tools/call",
            name: "greet",
            tenant: "acme",
        };
        fields
            .scope(async {
                tracing::info!("in the request");
                tracing::info_span!("job", job = "j1").in_scope(|| tracing::info!("in a job"));
            })
            .await;
        assert_eq!(
            logs.with_message("in the request")[0]["span"]["tenant"],
            "acme"
        );
        assert_eq!(
            logs.with_message("in a job")[0]["span"],
            json!({ "job": "j1", "name": "job" })
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn interleaved_requests_log_their_own_fields() {
        let logs = Captured::default();
        let _installed =
            tracing::subscriber::set_default(subscriber(LogFormat::Lambda, "info", &logs));
        let server = server();
        let (a, b) = tokio::join!(
            call(&server, "greet", "from a", ids(1)),
            call(&server, "greet", "from b", ids(2))
        );
        assert_eq!((a, b), (200, 200));
        let text = logs.text();
        let first_a = text.find("from a").expect("a logged");
        let first_b = text.find("from b").expect("b logged");
        let access = text.find("mcp request").expect("an access line");
        assert!(
            first_a.max(first_b) < access,
            "the handlers interleaved: {text}"
        );
        for (said, n) in [("from a", 1), ("from b", 2)] {
            let line = &logs.with_message(said)[0];
            assert_eq!(
                line["span"]["apigw_request_id"],
                format!("apigw-{n}"),
                "{line}"
            );
            assert_eq!(
                line["span"]["lambda_request_id"],
                format!("lambda-{n}"),
                "{line}"
            );
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panicking_handler_writes_one_error_line_with_its_request() {
        log_panics();
        let logs = Captured::default();
        let _installed =
            tracing::subscriber::set_default(subscriber(LogFormat::Lambda, "info", &logs));
        let boom = Tool::new(
            "boom",
            "",
            json!({ "type": "object" }),
            handler(|_call| async move {
                if std::hint::black_box(true) {
                    panic!("the \"tool\" broke\non a line");
                }
                Ok(Outcome::tool(CallToolResult::structured(json!({}))))
            }),
        );
        let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
        let server = McpServer::new(
            App::new("logs", "0").tool(boom),
            ServerConfig::default(),
            keys,
            Arc::new(NoAuth),
        );
        call(&server, "boom", "hi", ids(7)).await;
        let long = Tool::new(
            "long",
            "",
            json!({ "type": "object" }),
            handler(|call| async move {
                let said = call.arguments["said"].as_str().unwrap_or("").repeat(2000);
                if std::hint::black_box(true) {
                    panic!("{said}");
                }
                Ok(Outcome::tool(CallToolResult::structured(json!({}))))
            }),
        );
        let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
        let long_server = McpServer::new(
            App::new("logs", "0").tool(long),
            ServerConfig::default(),
            keys,
            Arc::new(NoAuth),
        );
        call(&long_server, "long", "é", ids(8)).await;
        let panics: Vec<Value> = logs
            .lines()
            .into_iter()
            .filter(|l| l["target"] == PANIC_TARGET || l["fields"]["location"].is_string())
            .collect();
        assert_eq!(panics.len(), 2, "{}", logs.text());
        let cut = panics[1]["fields"]["message"].as_str().expect("a message");
        assert_eq!(
            cut.chars().count(),
            "panicked: ".len() + MAX_PANIC_CHARS,
            "{cut}"
        );
        let line = &panics[0];
        assert_eq!(line["level"], "ERROR", "{line}");
        assert_eq!(
            line["fields"]["message"], "panicked: the \"tool\" broke\non a line",
            "{line}"
        );
        assert!(
            line["fields"]["location"]
                .as_str()
                .is_some_and(|l| l.contains("logging.rs")),
            "{line}"
        );
        assert_eq!(line["span"]["lambda_request_id"], "lambda-7", "{line}");
        assert_eq!(line["span"]["name"], "request", "{line}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn caller_names_on_the_line_are_bounded() {
        let logs = Captured::default();
        let _installed =
            tracing::subscriber::set_default(subscriber(LogFormat::Lambda, "info", &logs));
        let long = "\"q\\".repeat(1000);
        call(&server(), &long, "hi", ids(1)).await;
        let access = &logs.with_message("mcp request")[0];
        let name = access["fields"]["name"].as_str().expect("a name");
        assert_eq!(name.chars().count(), MAX_LOGGED_CHARS, "{access}");
    }

    /// The fields of a request (trace `t`) whose caller sent this method, name and tenant, cut
    /// as the server cuts them.
    fn sent<'a>(ids: &'a RequestIds, function: &'a str, text: [&'a str; 3]) -> RequestLog<'a> {
        let [method, name, tenant] = text;
        RequestLog {
            trace_id: "t",
            ids,
            function,
            method: bounded(method),
            name: bounded(name),
            tenant: bounded(tenant),
        }
    }

    fn hostile() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            proptest::collection::vec(
                prop_oneof![
                    Just("\"".to_string()),
                    Just("\\".to_string()),
                    Just("\\u00zz".to_string()),
                    Just("\n".to_string()),
                    Just("\r".to_string()),
                    Just("\u{2028}".to_string()),
                    Just("\u{0}".to_string()),
                    Just("\u{1b}]0;x\u{7}".to_string()),
                    Just("\"},\"level\":\"ERROR".to_string()),
                    "[a-z]{1,8}",
                ],
                0..400
            )
            .prop_map(|parts| parts.concat()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn hostile_text_stays_one_valid_json_line(
            method in hostile(), name in hostile(), tenant in hostile(),
            apigw in hostile(), said in hostile(),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
            let logs = Captured::default();
            let _installed =
                tracing::subscriber::set_default(subscriber(LogFormat::Local, "info", &logs));
            let ids = RequestIds { apigw: Some(apigw.clone()), lambda: Some(apigw.clone()) };
            let fields = sent(&ids, "mcp", [&method, &name, &tenant]);
            runtime.block_on(fields.scope(async { tracing::info!(said = said.as_str(), "{said}") }));
            fields.served(&served(&fields, None));
            let text = logs.text();
            prop_assert_eq!(text.matches('\n').count(), 2, "two lines: {}", text);
            let lines = logs.lines();
            prop_assert_eq!(&lines[0]["fields"]["message"], &json!(said));
            prop_assert_eq!(&lines[0]["span"]["tenant"], &json!(bounded(&tenant)));
            prop_assert_eq!(&lines[1]["fields"]["apigw_request_id"], &json!(apigw));
            for (key, sent) in [("method", &method), ("name", &name), ("tenant", &tenant)] {
                let logged = lines[1]["fields"][key].as_str().expect("a string");
                prop_assert_eq!(logged, bounded(sent));
                prop_assert!(logged.chars().count() <= MAX_LOGGED_CHARS);
            }
        }
    }

    /// What a served `tools/call` of `fields` measured: a 200 in 1.5 ms, `tool` if it resolved.
    fn served<'a>(fields: &RequestLog<'a>, tool: Option<&'a str>) -> RequestMetrics<'a> {
        RequestMetrics {
            function: fields.function,
            method: fields.method,
            tool,
            status: 200,
            result_type: "complete",
            latency_ms: 1.5,
            token_ms: None,
            cold_start: false,
        }
    }

    /// The members of the JSON object `line`, in order, duplicates kept (a `Value` keeps only
    /// the last of two members with one name: a forged duplicate would hide in it).
    fn members(line: &str) -> Vec<(String, Value)> {
        struct Members(Vec<(String, Value)>);
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Value>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        impl<'de> serde::Deserialize<'de> for Members {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_map(Visit)
            }
        }
        serde_json::from_str::<Members>(line)
            .unwrap_or_else(|e| panic!("{e}: {line}"))
            .0
    }

    fn names(members: &[(String, Value)]) -> Vec<&str> {
        members.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// The root members of a `tools/call`'s EMF line, in order, after the log format's own:
    /// ours, the dimensions, the request's metrics (`emf::PUBLISHED` lists them first, in the
    /// order the line writes them; `TokenVerification` when a credential was checked), `_aws`.
    fn emf_root(token: bool) -> Vec<&'static str> {
        // A counter that is 0 (every one, for a successful warm request) is left off the line.
        let metrics = relevo_state::emf::PUBLISHED
            .iter()
            .copied()
            .take_while(|metric| *metric != "JobsProcessed")
            .filter(|metric| matches!(*metric, "Latency" | "TokenVerification"))
            .filter(|metric| token || *metric != "TokenVerification");
        ["fields", "Function", "Method", "Tool"]
            .into_iter()
            .chain(metrics)
            .chain(["_aws"])
            .collect()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_served_request_writes_exactly_one_line_in_each_mode() {
        for format in [LogFormat::Lambda, LogFormat::Local] {
            // Metrics off (the local server's default): the access line, and nothing else.
            let logs = Captured::default();
            let installed = tracing::subscriber::set_default(subscriber(format, "info", &logs));
            assert_eq!(call(&server(), "quiet", "", ids(3)).await, 200);
            drop(installed);
            let lines = logs.lines();
            assert_eq!(lines.len(), 1, "{format:?}: {}", logs.text());
            assert_eq!(lines[0]["fields"]["message"], "mcp request");
            assert_eq!(lines[0]["fields"]["function"], "mcp");
            assert!(lines[0]["fields"]["latency_ms"].is_f64());
            assert!(lines[0].get("_aws").is_none(), "{}", logs.text());

            // Metrics on (the template): the EMF line carries the access fields; no access line.
            let logs = Captured::default();
            let installed = tracing::subscriber::set_default(with_metrics(format, "info", &logs));
            assert_eq!(call(&server(), "quiet", "", ids(3)).await, 200);
            drop(installed);
            let text = logs.text();
            assert_eq!(text.matches('\n').count(), 1, "{format:?}: {text}");
            let root = members(text.trim_end());
            // No credential was verified (NoAuth needs none): no TokenVerification.
            let mut expected = emf_root(false);
            if format == LogFormat::Local {
                expected.insert(0, "timestamp");
            }
            assert_eq!(names(&root), expected, "{text}");
            let line = &logs.lines()[0];
            // No level: Lambda's filter reads a line without one as INFO, which it is.
            assert!(line.get("level").is_none(), "{text}");
            let fields = &line["fields"];
            // The method and the tool's name are the Method and Tool dimensions: not twice.
            assert_eq!(
                keys_of(&text, "\"fields\":"),
                [
                    "trace_id",
                    "apigw_request_id",
                    "lambda_request_id",
                    "tenant",
                    "status",
                    "result_type"
                ],
                "{text}"
            );
            assert_eq!(fields["trace_id"].as_str().map(str::len), Some(32));
            assert_eq!(
                (&fields["apigw_request_id"], &fields["lambda_request_id"]),
                (&json!("apigw-3"), &json!("lambda-3"))
            );
            assert_eq!(fields["tenant"], json!("local"));
            assert_eq!(
                (&fields["status"], &fields["result_type"]),
                (&json!(200), &json!("complete"))
            );
            assert_eq!(
                (&line["Function"], &line["Method"], &line["Tool"]),
                (&json!("mcp"), &json!("tools/call"), &json!("quiet"))
            );
            assert!(line["Latency"].is_f64(), "the request's duration: {text}");
            let directive = &line["_aws"]["CloudWatchMetrics"][0];
            assert_eq!(directive["Namespace"], NAMESPACE);
            assert!(line["_aws"]["Timestamp"].is_u64());
        }
    }

    #[test]
    fn the_emf_line_of_a_tools_call_is_this_line() {
        let ids = RequestIds {
            apigw: Some("apigw-1".into()),
            lambda: Some("8476a536-e9f4-11e8-9739-2dfe598c3fcd".into()),
        };
        let fields = RequestLog {
            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
            ids: &ids,
            function: "tools-call",
            method: "tools/call",
            name: "greet",
            tenant: "acme",
        };
        let metrics = RequestMetrics {
            token_ms: Some(0.036_21),
            latency_ms: 0.348_847,
            ..served(&fields, Some("greet"))
        };
        let line = fields.emf_line(&metrics, "Relevo/prod", 1_796_544_016_758, b"");
        let golden = concat!(
            r#"{"fields":{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","#,
            r#""apigw_request_id":"apigw-1","lambda_request_id":"8476a536-e9f4-11e8-9739-2dfe598c3fcd","#,
            r#""tenant":"acme","status":200,"result_type":"complete"},"#,
            r#""Function":"tools-call","Method":"tools/call","Tool":"greet","Latency":0.349,"#,
            r#""TokenVerification":0.036,"_aws":{"Timestamp":1796544016758,"CloudWatchMetrics":[{"#,
            r#""Namespace":"Relevo/prod","Dimensions":[[],["Function","Method"],["Function","Method","Tool"]],"#,
            r#""Metrics":[{"Name":"Latency"},{"Name":"TokenVerification","Unit":"Milliseconds"}]}]}}"#
        );
        assert_eq!(String::from_utf8(line).expect("UTF-8"), golden);
        // Recalled: no TokenVerification; a call that did not resolve keeps the caller's name.
        let recalled = RequestMetrics {
            token_ms: None,
            ..served(&fields, None)
        };
        let line = fields.emf_line(&recalled, "Relevo/prod", 1_796_544_016_758, b"");
        let line: Value = serde_json::from_slice(&line).expect("JSON");
        assert!(line.get("TokenVerification").is_none(), "{line}");
        assert_eq!(
            (&line["Tool"], &line["fields"]["name"]),
            (&json!(relevo_state::emf::OTHER), &json!("greet"))
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn with_metrics_on_the_emf_line_is_written_at_any_level() {
        // EMF lines were never filtered by level (the alarms read them); the access fields ride
        // along.
        for filter in ["warn", "info,relevo_protocol::server=warn"] {
            let logs = Captured::default();
            let _installed =
                tracing::subscriber::set_default(with_metrics(LogFormat::Lambda, filter, &logs));
            assert_eq!(call(&server(), "quiet", "", ids(1)).await, 200);
            let lines = logs.lines();
            assert_eq!(lines.len(), 1, "{filter}: {}", logs.text());
            assert_eq!(lines[0]["fields"]["status"], 200);
            assert!(lines[0]["_aws"].is_object());
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn with_metrics_on_a_handlers_own_lines_are_unchanged() {
        let logs = Captured::default();
        let _installed =
            tracing::subscriber::set_default(with_metrics(LogFormat::Lambda, "info", &logs));
        assert_eq!(call(&server(), "greet", "hi", ids(2)).await, 200);
        let lines = logs.lines();
        assert_eq!(
            lines.len(),
            2,
            "the handler's line, the request's: {}",
            logs.text()
        );
        assert_eq!(lines[0]["fields"], json!({ "message": "hi", "answer": 42 }));
        assert_eq!(lines[0]["span"]["lambda_request_id"], "lambda-2");
        assert!(lines[0].get("_aws").is_none());
        assert!(lines[1]["_aws"].is_object());
    }

    #[test]
    fn lambdas_application_log_level_bounds_rust_log() {
        let enabled = |lambda: Option<&str>, rust_log: Option<&str>, target: &str, level: Level| {
            levels(lambda, rust_log).would_enable(target, &level)
        };
        // Neither: info.
        assert!(enabled(None, None, "app", Level::INFO));
        assert!(!enabled(None, None, "app", Level::DEBUG));
        // Lambda's level alone decides, as before.
        assert!(enabled(Some("DEBUG"), None, "app", Level::DEBUG));
        assert!(!enabled(Some("WARN"), None, "app", Level::INFO));
        assert!(enabled(Some("FATAL"), None, "app", Level::ERROR));
        assert!(!enabled(Some("FATAL"), None, "app", Level::WARN));
        // Within Lambda's INFO (what the template sets), RUST_LOG's targets still decide...
        let quiet = Some("info,relevo_protocol::server=warn,relevo::request=off");
        assert!(enabled(Some("INFO"), quiet, "app", Level::INFO));
        assert!(!enabled(Some("INFO"), quiet, ACCESS_TARGET, Level::INFO));
        assert!(!enabled(Some("INFO"), quiet, REQUEST_TARGET, Level::INFO));
        assert!(!enabled(Some("INFO"), Some("warn"), "app", Level::INFO));
        // ...but never for more detail than Lambda would keep.
        assert!(!enabled(Some("INFO"), Some("debug"), "app", Level::DEBUG));
        assert!(!enabled(
            Some("WARN"),
            Some("app=trace"),
            "app",
            Level::INFO
        ));
        // A value that does not parse is ignored.
        assert!(enabled(Some("LOUD"), Some("debug"), "app", Level::DEBUG));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn caller_text_cannot_forge_fields_or_dimensions_in_the_emf_line(
            method in hostile(), name in hostile(), tenant in hostile(),
            apigw in hostile(), lambda in hostile(), resolved in any::<bool>(),
        ) {
            let logs = Captured::default();
            let _installed =
                tracing::subscriber::set_default(with_metrics(LogFormat::Lambda, "info", &logs));
            let ids = RequestIds { apigw: Some(apigw.clone()), lambda: Some(lambda.clone()) };
            let fields = sent(&ids, "tools-call", [&method, &name, &tenant]);
            fields.served(&served(&fields, resolved.then_some("greet")));
            let text = logs.text();
            prop_assert_eq!(text.matches('\n').count(), 1, "one line: {}", text);
            let root = members(text.trim_end());
            // The root holds our names only, each once.
            let known = super::super::method_dimension(fields.method) == "tools/call";
            let expected: Vec<&str> = emf_root(false)
                .into_iter()
                .filter(|name| known || *name != "Tool")
                .collect();
            prop_assert_eq!(names(&root), expected, "{}", text);
            let line = &logs.lines()[0];
            // Dimensions from closed sets.
            prop_assert_eq!(&line["Function"], &json!("tools-call"));
            let method_dimension = line["Method"].as_str().expect("a string");
            prop_assert!(
                method_dimension == relevo_state::emf::OTHER
                    || crate::Method::from_wire(method_dimension).is_some()
                    || method_dimension == "-",
                "{}", method_dimension
            );
            if known {
                let tool = if resolved { "greet" } else { relevo_state::emf::OTHER };
                prop_assert_eq!(&line["Tool"], &json!(tool));
            }
            prop_assert_eq!(
                &line["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
                &if known {
                    json!([[], ["Function", "Method"], ["Function", "Method", "Tool"]])
                } else {
                    json!([[], ["Function", "Method"]])
                }
            );
            // The caller's text is in `fields`, exactly as sent (names cut), and nowhere else;
            // the method and name only where a dimension does not already say them.
            let mut expected = json!({
                "trace_id": "t", "apigw_request_id": apigw, "lambda_request_id": lambda,
                "tenant": bounded(&tenant), "status": 200, "result_type": "complete"
            });
            if method_dimension != fields.method {
                expected["method"] = json!(bounded(&method));
            }
            if !(known && resolved && fields.name == "greet") {
                expected["name"] = json!(bounded(&name));
            }
            prop_assert_eq!(&line["fields"], &expected);
        }
    }

    #[test]
    fn timestamps_are_rfc3339_in_utc_with_microseconds() {
        let mut line = Vec::new();
        let at = UNIX_EPOCH + std::time::Duration::from_micros(1_796_475_264_042_046);
        push_timestamp(&mut line, at);
        assert_eq!(
            String::from_utf8(line).expect("UTF-8"),
            "2026-12-05T12:54:24.042046Z"
        );
        let mut leap = Vec::new();
        push_timestamp(
            &mut leap,
            UNIX_EPOCH + std::time::Duration::from_secs(951_782_400),
        );
        assert_eq!(
            String::from_utf8(leap).expect("UTF-8"),
            "2000-02-29T00:00:00.000000Z"
        );
    }
}
