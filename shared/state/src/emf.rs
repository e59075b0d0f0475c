//! Metrics without a metrics server: CloudWatch Embedded Metric Format (EMF) lines on stdout,
//! which Lambda sends to CloudWatch Logs, where each line becomes metric data points.
//!
//! Specification: <https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>.
//! A line is one JSON object: `_aws` holds `Timestamp` (ms since the epoch) and
//! `CloudWatchMetrics`, a list of directives (`Namespace`, `Dimensions` — sets of at most 30
//! names — and `Metrics`, at most 100, each `Name` with an optional `Unit`); every name a
//! directive uses is a member of the root object, a string for a dimension and a number for a
//! metric. Other root members are properties: searchable in Logs Insights, not metrics.
//!
//! Off unless `RELEVO_METRICS=emf` ([`enable_from_env`]); the template turns it on in every
//! function. A request's EMF line is also its only log line (`relevo_protocol::observe`): it
//! carries the access fields and `"level":"INFO"` before the members written here. Invariants: [`Metrics::line`] only writes lines that meet the specification (the
//! builder cannot name a dimension or metric without its member, and bounds names and counts),
//! and every dimension value is one CloudWatch accepts ([`dimension_value_ok`]); any other value
//! is written as [`OTHER`].
//!
//! Threat model: every distinct dimension value is a new, billed metric series. So dimension
//! values come from closed sets the deployment defines (its functions, its methods, its tools,
//! its job kinds), never from caller text: a caller's method or tool name that names nothing
//! this deployment serves to it is counted under [`OTHER`], and the raw text, if kept at all,
//! is a property (searchable in Logs Insights, not a metric: a request's line keeps it as a JSON
//! string inside its `fields` object, written before [`Metrics::write_members`]). The callers of [`Metrics::dimension`]
//! keep this (`relevo_protocol::observe`, the worker); this module bounds what slips through.

use std::io::Write;
use std::sync::OnceLock;

use serde_json::Value;

/// Dimension names in one set, and metrics in one directive (the specification's limits).
pub const MAX_DIMENSIONS: usize = 30;
pub const MAX_METRICS: usize = 100;
/// The longest dimension value written (a tool or job kind named by the app).
pub const MAX_VALUE_CHARS: usize = 128;
/// The one value a dimension takes for anything outside its closed set (an unknown method, a
/// tool the call did not resolve to, a value CloudWatch would refuse). Parentheses appear in no
/// MCP method and no valid tool name, so it cannot collide with a real one.
pub const OTHER: &str = "(other)";

/// Every metric name the code writes (requests, jobs, the reconciler, the ledger): what an
/// alarm or a dashboard may read (the deploy check refuses any other name).
pub const PUBLISHED: &[&str] = &[
    "Latency",
    "ClientErrors",
    "ServerErrors",
    "Throttled",
    "InputRequired",
    "ColdStart",
    "TokenVerification",
    "JobsProcessed",
    "JobQueueLag",
    "JobAttempts",
    "JobRunTime",
    "JobRetries",
    "ReconcileRequeued",
    "ReconcileFailed",
    "ReconcileCancelled",
    "OperationsEnteredUnknown",
    "OperationsResolved",
    "ReconcileTime",
];

/// The units EMF accepts (CloudWatch `StandardUnit`); the ones we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// No unit on the line (CloudWatch records `None`): what the per-request counters use.
    None,
    Count,
    Milliseconds,
    Microseconds,
    Seconds,
    Bytes,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::None => "None",
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::Microseconds => "Microseconds",
            Unit::Seconds => "Seconds",
            Unit::Bytes => "Bytes",
        }
    }
}

/// One EMF document: dimensions, dimension sets, metrics and properties.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    dimensions: Vec<(&'static str, String)>,
    sets: Vec<Vec<&'static str>>,
    metrics: Vec<(&'static str, f64, Unit)>,
    properties: Vec<(&'static str, Value)>,
}

/// Whether CloudWatch accepts `value` as a dimension value. CloudWatch API reference,
/// `Dimension` (<https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_Dimension.html>):
/// `Value` is 1 to 1024 characters, ASCII, with at least one non-whitespace character, and no
/// ASCII control characters. (Values here are further cut to [`MAX_VALUE_CHARS`].)
pub fn dimension_value_ok(value: &str) -> bool {
    (1..=1024).contains(&value.len())
        && value.is_ascii()
        && !value.bytes().any(|b| b.is_ascii_control())
        && !value.trim().is_empty()
}

/// `text` as a dimension value: cut to [`MAX_VALUE_CHARS`], [`OTHER`] when CloudWatch would
/// refuse it.
fn bounded(text: &str) -> String {
    let text: String = text.chars().take(MAX_VALUE_CHARS).collect();
    if dimension_value_ok(&text) {
        text
    } else {
        OTHER.to_string()
    }
}

impl Metrics {
    pub fn new() -> Self {
        Metrics::default()
    }

    /// A dimension value, from a closed set (see the module's threat model): cut to
    /// [`MAX_VALUE_CHARS`]; a value CloudWatch would refuse ([`dimension_value_ok`]) becomes
    /// [`OTHER`].
    pub fn dimension(mut self, name: &'static str, value: &str) -> Self {
        self.dimensions.retain(|(n, _)| *n != name);
        self.dimensions.push((name, bounded(value)));
        self
    }

    /// A set of dimensions the metrics are aggregated by; names without a value are left out,
    /// and so is a set beyond [`MAX_DIMENSIONS`] names.
    pub fn by(mut self, names: &[&'static str]) -> Self {
        let set: Vec<&'static str> = names
            .iter()
            .copied()
            .filter(|n| self.dimensions.iter().any(|(d, _)| d == n))
            .collect();
        if set.len() <= MAX_DIMENSIONS && !self.sets.contains(&set) {
            self.sets.push(set);
        }
        self
    }

    /// A metric value; beyond [`MAX_METRICS`] or not finite, it is left out. `name` is one of
    /// [`PUBLISHED`] (checked in debug builds: a metric no alarm may name is a mistake).
    pub fn metric(mut self, name: &'static str, value: f64, unit: Unit) -> Self {
        debug_assert!(
            PUBLISHED.contains(&name),
            "metric {name} is not in emf::PUBLISHED"
        );
        if value.is_finite()
            && self.metrics.len() < MAX_METRICS
            && !self.metrics.iter().any(|(n, ..)| *n == name)
        {
            self.metrics.push((name, value, unit));
        }
        self
    }

    /// A property: on the line, searchable, not a metric (a trace id, a status, a request id).
    pub fn property(mut self, name: &'static str, value: impl Into<Value>) -> Self {
        let taken = self.dimensions.iter().any(|(d, _)| *d == name)
            || self.metrics.iter().any(|(m, ..)| *m == name);
        if !taken && name != "_aws" {
            self.properties.retain(|(n, _)| *n != name);
            self.properties.push((name, value.into()));
        }
        self
    }

    /// The EMF line for `namespace` at `timestamp_ms`, written straight into one buffer (it is
    /// built on every request: no JSON tree is assembled first).
    pub fn line(&self, namespace: &str, timestamp_ms: u64) -> String {
        let mut out = Vec::with_capacity(768);
        out.push(b'{');
        self.write_members(&mut out, namespace, timestamp_ms);
        out.push(b'}');
        String::from_utf8(out).unwrap_or_default()
    }

    /// The members of the EMF document (properties, dimensions, metrics, then `_aws`), comma
    /// separated, without the braces around them: for a caller that writes members of its own
    /// first on the same line (a request's `level` and access fields). Those members must not
    /// take the name of a dimension, a metric, a property or `_aws` (the caller's names are
    /// lower case, ours capitalised).
    pub fn write_members(&self, out: &mut Vec<u8>, namespace: &str, timestamp_ms: u64) {
        for (name, value) in &self.properties {
            member(out, name);
            let _ = serde_json::to_writer(&mut *out, value);
            out.push(b',');
        }
        for (name, value) in &self.dimensions {
            member(out, name);
            text(out, value);
            out.push(b',');
        }
        for (name, value, _) in &self.metrics {
            member(out, name);
            let _ = write!(out, "{value}");
            out.push(b',');
        }
        let _ = write!(
            out,
            "\"_aws\":{{\"Timestamp\":{timestamp_ms},\"CloudWatchMetrics\":[{{\"Namespace\":"
        );
        text(out, namespace);
        out.extend_from_slice(b",\"Dimensions\":[");
        let no_sets = [Vec::new()];
        let sets = if self.sets.is_empty() {
            &no_sets[..]
        } else {
            &self.sets[..]
        };
        for (at, set) in sets.iter().enumerate() {
            out.extend_from_slice(if at == 0 { b"[" } else { b",[" });
            for (at, name) in set.iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                text(out, name);
            }
            out.push(b']');
        }
        out.extend_from_slice(b"],\"Metrics\":[");
        for (at, (name, _, unit)) in self.metrics.iter().enumerate() {
            out.extend_from_slice(if at == 0 {
                b"{\"Name\":"
            } else {
                b",{\"Name\":"
            });
            text(out, name);
            if *unit == Unit::None {
                out.push(b'}');
            } else {
                let _ = write!(out, ",\"Unit\":\"{}\"}}", unit.as_str());
            }
        }
        out.extend_from_slice(b"]}]}");
    }

    /// Writes the line to stdout if metrics are on ([`enable_from_env`]).
    pub fn emit(&self) {
        let Some(namespace) = namespace() else {
            return;
        };
        let mut line = self.line(namespace, now_ms());
        line.push('\n');
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
    }
}

/// `"name":` (names are ours: no escaping needed beyond what `text` does).
fn member(out: &mut Vec<u8>, name: &str) {
    text(out, name);
    out.push(b':');
}

/// `text` as a JSON string.
fn text(out: &mut Vec<u8>, text: &str) {
    let _ = serde_json::to_writer(&mut *out, text);
}

/// `Some(namespace)` once metrics are on.
static NAMESPACE: OnceLock<Option<String>> = OnceLock::new();

/// The namespace metrics go to when they are on.
pub const DEFAULT_NAMESPACE: &str = "Relevo";

/// Turns EMF lines on when `RELEVO_METRICS=emf`, in `RELEVO_METRICS_NAMESPACE` (default
/// [`DEFAULT_NAMESPACE`]). Once per process; later calls change nothing.
pub fn enable_from_env() {
    let on = std::env::var("RELEVO_METRICS").is_ok_and(|v| v == "emf");
    let namespace = std::env::var("RELEVO_METRICS_NAMESPACE")
        .ok()
        .filter(|n| !n.trim().is_empty() && n.len() <= 255)
        .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
    let _ = NAMESPACE.set(on.then_some(namespace));
}

/// Whether [`Metrics::emit`] writes anything (callers skip building a line when it does not).
pub fn enabled() -> bool {
    namespace().is_some()
}

/// The namespace lines go to, once metrics are on ([`enable_from_env`]); `None` while they are off.
pub fn namespace() -> Option<&'static str> {
    NAMESPACE.get().and_then(Option::as_deref)
}

/// Now, in milliseconds since the epoch: an EMF line's `Timestamp`.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_names_every_dimension_and_metric_as_a_root_member() {
        let line = Metrics::new()
            .dimension("Method", "tools/call")
            .dimension("Tool", "")
            .by(&["Method"])
            .by(&["Method", "Tool", "Absent"])
            .metric("ClientErrors", 1.0, Unit::Count)
            .metric("Latency", 2.5, Unit::Milliseconds)
            .metric("Latency", 9.0, Unit::Milliseconds)
            .metric("JobRetries", f64::NAN, Unit::Count)
            .property("traceId", "abc")
            .property("Method", "overwrite")
            .line("Relevo", 1_700_000_000_000);
        let line: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(line["Method"], "tools/call");
        assert_eq!(line["Tool"], OTHER);
        assert_eq!(line["Latency"], 2.5);
        assert_eq!(line["traceId"], "abc");
        assert!(line.get("JobRetries").is_none());
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(
            directive["Dimensions"],
            json!([["Method"], ["Method", "Tool"]])
        );
        assert_eq!(
            directive["Metrics"],
            json!([{"Name": "ClientErrors", "Unit": "Count"}, {"Name": "Latency", "Unit": "Milliseconds"}])
        );
        assert_eq!(line["_aws"]["Timestamp"], 1_700_000_000_000u64);
    }

    #[test]
    fn the_members_follow_the_callers_own_on_one_line() {
        let metrics = Metrics::new()
            .dimension("Function", "tools-call")
            .by(&[])
            .by(&["Function"])
            .metric("ClientErrors", 1.0, Unit::Count)
            .property("traceId", "abc");
        let mut line = b"{\"level\":\"INFO\",".to_vec();
        metrics.write_members(&mut line, "Relevo", 7);
        line.push(b'}');
        let line = String::from_utf8(line).expect("UTF-8");
        assert_eq!(
            line,
            concat!(
                r#"{"level":"INFO","traceId":"abc","Function":"tools-call","ClientErrors":1,"#,
                r#""_aws":{"Timestamp":7,"CloudWatchMetrics":[{"Namespace":"Relevo","#,
                r#""Dimensions":[[],["Function"]],"Metrics":[{"Name":"ClientErrors","Unit":"Count"}]}]}}"#
            )
        );
        assert_eq!(
            metrics.line("Relevo", 7),
            line.replacen(r#""level":"INFO","#, "", 1),
            "line() is the members in braces"
        );
    }

    #[test]
    fn caller_text_in_a_dimension_is_bounded() {
        let long = "x".repeat(10_000);
        let line = Metrics::new()
            .dimension("Tool", &long)
            .by(&["Tool"])
            .line("Relevo", 0);
        let line: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(line["Tool"].as_str().map(str::len), Some(MAX_VALUE_CHARS));
    }

    #[test]
    fn a_value_cloudwatch_would_refuse_is_written_as_other() {
        for refused in [
            "",
            " ",
            "\t\n",
            "caf\u{e9}",
            "a\u{7}b",
            "\u{1b}[2J",
            "x\u{7f}",
            "\u{85}",
        ] {
            assert!(!dimension_value_ok(refused), "{refused:?}");
            let line = Metrics::new()
                .dimension("Tool", refused)
                .by(&["Tool"])
                .line("Relevo", 0);
            let line: Value = serde_json::from_str(&line).expect("JSON");
            assert_eq!(line["Tool"], OTHER, "{refused:?}");
        }
        for accepted in ["tools/call", "a b", "add", OTHER, "-"] {
            assert!(dimension_value_ok(accepted), "{accepted:?}");
        }
    }
}
