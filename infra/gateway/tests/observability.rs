//! Operating signals in local Lambda mode: one trace id follows a tool call from the HTTP request
//! through the SQS message into the worker, the request writes one line (its EMF line, carrying
//! the access fields) and Lambda none of its own (the template's system log level is WARN), every
//! EMF line a function writes meets the CloudWatch Embedded Metric Format specification, and the
//! template's alarms and dashboard read what the request's line publishes.
//!
//! The log files are what local Lambda mode collects from each function's stdout and stderr
//! (`RELEVO_LAMBDA_LOG_DIR`, one file per function, as CloudWatch keeps one log group per
//! function). Needs the moto emulator that `make test` starts, and the function binaries.
//!
//! The EMF checker encodes the specification
//! (<https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>):
//! the structure as a JSON Schema, and the rules a schema cannot say (every referenced name is a
//! root member of the right type) as code. What stays unverified without an account: that
//! CloudWatch extracts these lines into metrics (the specification is all we can hold them to).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::{Duration, Instant};

use common::*;
use relevo_state::emf::{Metrics, Unit};
use serde_json::{Value, json};

const UNITS: [&str; 27] = [
    "Seconds",
    "Microseconds",
    "Milliseconds",
    "Bytes",
    "Kilobytes",
    "Megabytes",
    "Gigabytes",
    "Terabytes",
    "Bits",
    "Kilobits",
    "Megabits",
    "Gigabits",
    "Terabits",
    "Percent",
    "Count",
    "Bytes/Second",
    "Kilobytes/Second",
    "Megabytes/Second",
    "Gigabytes/Second",
    "Terabytes/Second",
    "Bits/Second",
    "Kilobits/Second",
    "Megabits/Second",
    "Gigabits/Second",
    "Terabits/Second",
    "Count/Second",
    "None",
];

/// The document structure: the root object, the `_aws` metadata object (`Timestamp`,
/// `CloudWatchMetrics`, nothing else), each MetricDirective (`Namespace`, `Dimensions`,
/// `Metrics`; at most 30 names per DimensionSet, 100 MetricDefinitions), each MetricDefinition
/// (`Name`, optional `Unit` from the list, optional `StorageResolution` 1 or 60).
fn emf_schema() -> Value {
    json!({
        "type": "object",
        "required": ["_aws"],
        "properties": {
            "_aws": {
                "type": "object",
                "additionalProperties": false,
                "required": ["Timestamp", "CloudWatchMetrics"],
                "properties": {
                    "Timestamp": { "type": "integer", "minimum": 0 },
                    "CloudWatchMetrics": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["Namespace", "Dimensions", "Metrics"],
                            "properties": {
                                "Namespace": { "type": "string", "minLength": 1, "maxLength": 1024, "pattern": "\\S" },
                                "Dimensions": {
                                    "type": "array",
                                    "items": {
                                        "type": "array",
                                        "maxItems": 30,
                                        "items": { "type": "string", "minLength": 1, "maxLength": 250 }
                                    }
                                },
                                "Metrics": {
                                    "type": "array",
                                    "maxItems": 100,
                                    "items": {
                                        "type": "object",
                                        "additionalProperties": false,
                                        "required": ["Name"],
                                        "properties": {
                                            "Name": { "type": "string", "minLength": 1, "maxLength": 1024 },
                                            "Unit": { "enum": UNITS },
                                            "StorageResolution": { "enum": [1, 60] }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}

/// Why `line` is not a valid EMF document (empty: it is one).
fn emf_problems(line: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if line.len() > 1024 * 1024 {
        problems.push(format!(
            "{} bytes: a log event holds at most 1 MB",
            line.len()
        ));
    }
    let Ok(document) = serde_json::from_str::<Value>(line) else {
        return vec!["not one JSON value".into()];
    };
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    let mut schemas = boon::Schemas::new();
    compiler.add_resource("urn:emf", emf_schema()).unwrap();
    let index = compiler.compile("urn:emf", &mut schemas).unwrap();
    if let Err(error) = schemas.validate(&document, index) {
        problems.push(format!("{error:#}"));
        return problems;
    }
    for directive in document["_aws"]["CloudWatchMetrics"].as_array().unwrap() {
        for name in directive["Dimensions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|set| set.as_array().unwrap())
        {
            let name = name.as_str().unwrap();
            match document.get(name) {
                // CloudWatch API reference, `Dimension`: 1..=1024 ASCII characters, not all
                // whitespace, no control characters.
                Some(Value::String(value))
                    if relevo_state::emf::dimension_value_ok(value) && !value.starts_with(':') => {}
                other => problems.push(format!(
                    "dimension {name:?} needs a value CloudWatch accepts, found {other:?}"
                )),
            }
        }
        let mut seen = std::collections::HashSet::new();
        for metric in directive["Metrics"].as_array().unwrap() {
            let name = metric["Name"].as_str().unwrap();
            if !seen.insert(name) {
                problems.push(format!("metric {name:?} is defined twice in one directive"));
            }
            let numbers =
                |values: &Vec<Value>| values.len() <= 100 && values.iter().all(Value::is_number);
            match document.get(name) {
                Some(Value::Number(_)) => {}
                Some(Value::Array(values)) if numbers(values) => {}
                other => problems.push(format!(
                    "metric {name:?} needs a number member, found {other:?}"
                )),
            }
        }
    }
    problems
}

#[test]
fn the_emf_checker_refuses_what_the_specification_refuses() {
    let good = Metrics::new()
        .dimension("Method", "tools/call")
        .by(&[])
        .by(&["Method"])
        .metric("ClientErrors", 1.0, Unit::Count)
        .property("traceId", "abc")
        .line("Relevo/test", 1_700_000_000_000);
    assert_eq!(emf_problems(&good), Vec::<String>::new(), "{good}");
    let mut document: Value = serde_json::from_str(&good).unwrap();
    let directive = "/_aws/CloudWatchMetrics/0";
    type Breaks = Box<dyn Fn(&mut Value)>;
    let bad: Vec<(&str, Breaks)> = vec![
        (
            "no _aws",
            Box::new(|d| drop(d.as_object_mut().unwrap().remove("_aws"))),
        ),
        (
            "no Timestamp",
            Box::new(|d| drop(d["_aws"].as_object_mut().unwrap().remove("Timestamp"))),
        ),
        (
            "a string Timestamp",
            Box::new(|d| d["_aws"]["Timestamp"] = json!("now")),
        ),
        (
            "an extra _aws member",
            Box::new(|d| d["_aws"]["LogGroup"] = json!("x")),
        ),
        (
            "a blank namespace",
            Box::new(move |d| d.pointer_mut(directive).unwrap()["Namespace"] = json!(" ")),
        ),
        (
            "an unknown unit",
            Box::new(move |d| {
                d.pointer_mut(directive).unwrap()["Metrics"][0]["Unit"] = json!("Ms")
            }),
        ),
        (
            "31 dimensions in one set",
            Box::new(move |d| {
                let names: Vec<String> = (0..31).map(|i| format!("D{i}")).collect();
                for name in &names {
                    d[name.as_str()] = json!("v");
                }
                d.pointer_mut(directive).unwrap()["Dimensions"] = json!([names]);
            }),
        ),
        (
            "a metric without its member",
            Box::new(|d| drop(d.as_object_mut().unwrap().remove("ClientErrors"))),
        ),
        (
            "a metric that is text",
            Box::new(|d| d["ClientErrors"] = json!("1")),
        ),
        (
            "a dimension that is a number",
            Box::new(|d| d["Method"] = json!(3)),
        ),
        (
            "a dimension without its member",
            Box::new(|d| drop(d.as_object_mut().unwrap().remove("Method"))),
        ),
        (
            "a blank dimension value",
            Box::new(|d| d["Method"] = json!("  ")),
        ),
        (
            "a non-ASCII dimension value",
            Box::new(|d| d["Method"] = json!("caf\u{e9}")),
        ),
        (
            "a control character in a dimension value",
            Box::new(|d| d["Method"] = json!("a\u{1b}[2J")),
        ),
        (
            "a metric defined twice",
            Box::new(move |d| {
                let metrics = &mut d.pointer_mut(directive).unwrap()["Metrics"];
                let first = metrics[0].clone();
                metrics.as_array_mut().unwrap().push(first);
            }),
        ),
        (
            "101 values of one metric",
            Box::new(|d| d["ClientErrors"] = json!(vec![1; 101])),
        ),
    ];
    for (what, break_it) in bad {
        let mut broken = document.clone();
        break_it(&mut broken);
        assert!(
            !emf_problems(&broken.to_string()).is_empty(),
            "{what} must be refused: {broken}"
        );
    }
    document["ClientErrors"] = json!([1, 2, 3]);
    assert_eq!(
        emf_problems(&document.to_string()),
        Vec::<String>::new(),
        "an array of values is allowed"
    );
}

/// The trace id a log line carries: the request line's own field (`fields.trace_id`), or its
/// span's.
fn trace_of(line: &Value) -> Option<&str> {
    line["fields"]["trace_id"]
        .as_str()
        .or_else(|| line["span"]["trace_id"].as_str())
}

#[tokio::test(flavor = "multi_thread")]
async fn one_trace_id_follows_a_tool_call_through_the_queue_into_the_worker() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let env = [("RUST_LOG", "info"), ("RELEVO_EXPORT_WINDOW_MS", "50")];
    let lambda = start_lambda_mode("trace", &translated(), &[], &env).await;
    let (http, url, token) = (reqwest::Client::new(), &lambda.url, &lambda.token);

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let params = json!({
        "name": "export_start",
        "arguments": { "dataset": "customers", "purpose": "trace test" },
        "_meta": { "traceparent": format!("00-{trace_id}-00f067aa0ba902b7-01"), "tracestate": "relevo=test" }
    });
    // The HTTP header names another trace: the request's own `_meta` is the more specific one.
    let started = mcp_request(&http, url, token, "tools/call", params)
        .header(
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        )
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let job = started["result"]["structuredContent"]["jobId"]
        .as_str()
        .expect("a job")
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = rpc(&http, url, token, "export_status", json!({ "jobId": job })).await;
        if status["result"]["structuredContent"]["status"] == "succeeded" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the export did not finish: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The worker's last line is written after the status it reports: give it a moment.
    let worker = {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lines = log_lines(&lambda, "WorkerFunction");
            if lines
                .iter()
                .any(|l| l["fields"]["message"] == "job processed" && trace_of(l) == Some(trace_id))
            {
                break lines;
            }
            assert!(
                Instant::now() < deadline,
                "no worker line with the trace: {lines:#?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };

    let calls = log_lines(&lambda, "ToolsCallFunction");
    // One line for the request (the template turns EMF on): its EMF line, carrying the access
    // fields where the access line had them, and no access line beside it.
    let own: Vec<&Value> = calls
        .iter()
        .filter(|l| l["fields"]["trace_id"] == trace_id)
        .collect();
    assert_eq!(own.len(), 1, "one line for the request: {own:#?}");
    let access = own[0];
    // Each fact once: no level (INFO to Lambda's filter), no message (`_aws` says what the line
    // is), the method and the tool's name as the Method and Tool dimensions only.
    assert!(access.get("level").is_none(), "{access}");
    assert!(access["_aws"].is_object(), "the EMF line: {access}");
    let fields = &access["fields"];
    assert_eq!(
        (&access["Method"], &access["Tool"], &fields["tenant"]),
        (&json!("tools/call"), &json!("export_start"), &json!("acme"))
    );
    for said in ["message", "method", "name", "function", "latency_ms"] {
        assert!(fields.get(said).is_none(), "{said} twice: {access}");
    }
    assert_eq!(access["Function"], "tools-call");
    for id in ["apigw_request_id", "lambda_request_id"] {
        let value = fields[id].as_str().unwrap();
        assert!(
            value != "-" && !value.is_empty(),
            "{id} is on the line: {access}"
        );
    }
    assert!(
        calls
            .iter()
            .all(|l| trace_of(l) != Some("0af7651916cd43dd8448eb211c80319c")),
        "the header's trace lost to _meta's"
    );

    let processed: Vec<&Value> = worker
        .iter()
        .filter(|l| l["fields"]["message"] == "job processed" && trace_of(l) == Some(trace_id))
        .collect();
    assert!(
        processed
            .iter()
            .any(|l| l["fields"]["result"] == "succeeded"),
        "{processed:#?}"
    );
    for line in &processed {
        assert_eq!(line["span"]["job"], json!(job), "{line}");
        assert_eq!(
            line["span"]["trace_from"], "message",
            "the trace came in the SQS AWSTraceHeader: {line}"
        );
        assert_eq!(line["span"]["tenant"], "acme");
    }

    // Every EMF line of every function meets the specification, and the call and the job have theirs.
    let mut emf = Vec::new();
    for entry in std::fs::read_dir(lambda.dir.join("logs")).unwrap() {
        let path = entry.unwrap().path();
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let Ok(mut value) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if value.get("_aws").is_none() {
                continue;
            }
            // Local Lambda mode adds the stream's name as CloudWatch records it; not ours.
            value.as_object_mut().unwrap().remove("logStream");
            let problems = emf_problems(&value.to_string());
            assert!(
                problems.is_empty(),
                "{}: {line}: {problems:?}",
                path.display()
            );
            emf.push(value);
        }
    }
    let call = emf
        .iter()
        .find(|m| m["Tool"] == "export_start" && m["fields"]["trace_id"] == trace_id)
        .unwrap_or_else(|| panic!("no EMF line for the call: {emf:#?}"));
    assert_eq!(
        (
            &call["Method"],
            call["Latency"].is_f64(),
            &call["fields"]["status"]
        ),
        (&json!("tools/call"), true, &json!(200))
    );
    the_alarms_and_the_dashboard_read_what_the_call_published(call);
    // A token is verified once per environment, then recalled: the first call of the
    // environment times its verification.
    assert!(
        emf.iter()
            .any(|m| m["Function"] == call["Function"] && m["TokenVerification"].is_f64()),
        "no TokenVerification from {}: {emf:#?}",
        call["Function"]
    );
    let job_metrics = emf
        .iter()
        .find(|m| m["Kind"].is_string() && m["traceId"] == trace_id && m["result"] == "succeeded");
    let job_metrics = job_metrics.unwrap_or_else(|| panic!("no EMF line for the job: {emf:#?}"));
    assert!(
        job_metrics["JobQueueLag"].as_f64().is_some()
            && job_metrics["JobAttempts"].as_f64() >= Some(1.0)
    );
    assert!(
        emf.iter().any(|m| m["ColdStart"] == 1.0),
        "the first request of an environment is a cold start"
    );
    // The template's system log level is WARN: Lambda writes no START, END or REPORT line.
    for entry in std::fs::read_dir(lambda.dir.join("logs")).unwrap() {
        let path = entry.unwrap().path();
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            assert!(
                !["START ", "END ", "REPORT "]
                    .iter()
                    .any(|p| line.starts_with(p))
                    && !line.contains("\"platform."),
                "{}: {line}",
                path.display()
            );
        }
    }
}

/// What the template's alarms and dashboard read of the requests' metrics (a metric the call's
/// EMF line publishes), as (metric, dimension names): an alarm without `Dimensions` reads the
/// metric without dimensions, a dashboard metric its listed dimensions, a `SEARCH` expression
/// the schema `{namespace,Dim,...}` it names.
fn read_by_alarms_and_dashboard(published: &[&str]) -> Vec<(String, Vec<String>)> {
    let template: Value =
        serde_json::from_str(&std::fs::read_to_string(translated()).unwrap()).unwrap();
    let mut read = Vec::new();
    for resource in template["Resources"].as_object().unwrap().values() {
        let properties = &resource["Properties"];
        match resource["Type"].as_str() {
            Some("AWS::CloudWatch::Alarm") => {
                if let Some(metric) = properties["MetricName"].as_str() {
                    let dimensions = properties["Dimensions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|d| d["Name"].as_str().map(String::from))
                        .collect();
                    read.push((metric.to_string(), dimensions));
                }
            }
            Some("AWS::CloudWatch::Dashboard") => {
                let body = &properties["DashboardBody"];
                let body = body["Fn::Sub"].as_str().or(body.as_str()).unwrap();
                let body: Value = serde_json::from_str(body).unwrap();
                for widget in body["widgets"].as_array().unwrap() {
                    for metric in widget["properties"]["metrics"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        let items = metric.as_array().unwrap();
                        if let Some(expression) = items[0]["expression"].as_str() {
                            let schema = expression.split('{').nth(1).unwrap().split('}').next();
                            let dimensions = schema.unwrap().split(',').skip(1).map(String::from);
                            let name = expression.split("MetricName=\"").nth(1).unwrap();
                            let name = name.split('"').next().unwrap().to_string();
                            read.push((name, dimensions.collect()));
                        } else if let Some(name) = items[1].as_str() {
                            let dimensions = items[2..]
                                .iter()
                                .take_while(|item| item.is_string())
                                .step_by(2)
                                .map(|d| d.as_str().unwrap().to_string())
                                .collect();
                            read.push((name.to_string(), dimensions));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    read.retain(|(metric, _)| published.contains(&metric.as_str()));
    read
}

/// The alarms and the dashboard keep working on the one line a request writes: every metric of
/// a request they read is on the line of a request it counts (the call's own line, and the lines
/// of a request that failed, was throttled, asked for input, or was an environment's first: a
/// counter that is 0 is left off), under the dimensions they read it by.
fn the_alarms_and_the_dashboard_read_what_the_call_published(call: &Value) {
    let outcome = |status: u16, result_type: &'static str, cold_start: bool| {
        let metrics = relevo_protocol::observe::RequestMetrics {
            function: "tools-call",
            method: "tools/call",
            tool: Some("export_start"),
            status,
            result_type,
            latency_ms: 1.0,
            token_ms: Some(0.1),
            cold_start,
        };
        serde_json::from_str::<Value>(&metrics.metrics().line("Relevo/t", 0)).unwrap()
    };
    let lines = [
        call.clone(),
        outcome(500, "-", false),
        outcome(429, "-", false),
        outcome(400, "-", false),
        outcome(200, "input_required", true),
    ];
    let mut published = Vec::new();
    for line in &lines {
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        let metrics: Vec<String> = directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap().to_string())
            .collect();
        let sets: Vec<Vec<String>> =
            serde_json::from_value(directive["Dimensions"].clone()).unwrap();
        let names: Vec<&str> = metrics.iter().map(String::as_str).collect();
        for (metric, mut dimensions) in read_by_alarms_and_dashboard(&names) {
            dimensions.sort();
            assert!(
                sets.iter().any(|set| {
                    let mut set = set.clone();
                    set.sort();
                    set == dimensions
                }),
                "{metric} is read by {dimensions:?}, published by {sets:?}"
            );
            published.push(metric);
        }
    }
    for wanted in ["ServerErrors", "Latency", "Throttled", "ColdStart"] {
        assert!(
            published.iter().any(|metric| metric == wanted),
            "{wanted} is read and published: {published:?}"
        );
    }
}

/// The OTLP/HTTP JSON shape of what we send (`ExportTraceServiceRequest`, with OTLP's JSON
/// rules: trace and span ids as hex of 16 and 8 bytes, times as decimal strings, `kind` and
/// `status.code` as their enum numbers; <https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding>).
fn otlp_schema() -> Value {
    let hex = |len: usize| json!({ "type": "string", "pattern": format!("^[0-9a-f]{{{len}}}$") });
    let attributes = json!({ "type": "array", "items": {
        "type": "object", "required": ["key", "value"], "additionalProperties": false,
        "properties": { "key": { "type": "string", "minLength": 1 }, "value": {
            "type": "object", "minProperties": 1, "maxProperties": 1,
            "properties": { "stringValue": { "type": "string" }, "intValue": { "type": "string" }, "boolValue": { "type": "boolean" } },
            "additionalProperties": false } } } });
    let span = json!({
        "type": "object",
        "required": ["traceId", "spanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano"],
        "additionalProperties": false,
        "properties": {
            "traceId": hex(32), "spanId": hex(16), "parentSpanId": hex(16),
            "name": { "type": "string", "minLength": 1 },
            "kind": { "enum": [0, 1, 2, 3, 4, 5] },
            "startTimeUnixNano": { "type": "string", "pattern": "^[0-9]+$" },
            "endTimeUnixNano": { "type": "string", "pattern": "^[0-9]+$" },
            "attributes": attributes,
            "status": { "type": "object", "additionalProperties": false, "properties": { "code": { "enum": [0, 1, 2] }, "message": { "type": "string" } } }
        }
    });
    json!({
        "type": "object", "required": ["resourceSpans"], "additionalProperties": false,
        "properties": { "resourceSpans": { "type": "array", "items": {
            "type": "object", "required": ["resource", "scopeSpans"], "additionalProperties": false,
            "properties": {
                "resource": { "type": "object", "required": ["attributes"], "properties": { "attributes": attributes } },
                "scopeSpans": { "type": "array", "items": {
                    "type": "object", "required": ["spans"], "additionalProperties": false,
                    "properties": { "scope": { "type": "object" }, "spans": { "type": "array", "items": span } } } }
            } } } }
    })
}

fn otlp_problems(body: &Value) -> Option<String> {
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    let mut schemas = boon::Schemas::new();
    compiler.add_resource("urn:otlp", otlp_schema()).unwrap();
    let index = compiler.compile("urn:otlp", &mut schemas).unwrap();
    let problem = schemas
        .validate(body, index)
        .err()
        .map(|e| format!("{e:#}"));
    let ordered = body["resourceSpans"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["scopeSpans"].as_array().into_iter().flatten())
        .flat_map(|s| s["spans"].as_array().into_iter().flatten())
        .all(|span| {
            let time = |key: &str| {
                span[key]
                    .as_str()
                    .and_then(|t| t.parse::<u128>().ok())
                    .unwrap_or(0)
            };
            time("startTimeUnixNano") <= time("endTimeUnixNano")
        });
    problem.or((!ordered).then(|| "a span ends before it starts".to_string()))
}

/// A local OTLP/HTTP endpoint: every body POSTed to /v1/traces, in order.
async fn otlp_receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let store = received.clone();
    let router = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let store = store.clone();
                async move {
                    assert_eq!(
                        headers.get("content-type").and_then(|v| v.to_str().ok()),
                        Some("application/json")
                    );
                    store
                        .lock()
                        .unwrap()
                        .push(serde_json::from_slice::<Value>(&body).unwrap());
                    "{}"
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, received)
}

#[test]
fn the_otlp_checker_refuses_malformed_spans() {
    let good = json!({ "resourceSpans": [{ "resource": { "attributes": [] }, "scopeSpans": [{ "spans": [{
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7", "name": "x", "kind": 2,
        "startTimeUnixNano": "1", "endTimeUnixNano": "2" }] }] }] });
    assert_eq!(otlp_problems(&good), None);
    let span = "/resourceSpans/0/scopeSpans/0/spans/0";
    for (key, bad) in [
        ("traceId", json!("4BF92F35")),
        ("kind", json!("SPAN_KIND_SERVER")),
        ("endTimeUnixNano", json!(2)),
        ("endTimeUnixNano", json!("0")),
    ] {
        let mut broken = good.clone();
        broken.pointer_mut(span).unwrap()[key] = bad.clone();
        assert!(
            otlp_problems(&broken).is_some(),
            "{key} = {bad} must be refused"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn exported_spans_chain_the_caller_the_request_and_the_job() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (collector, received) = otlp_receiver().await;
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.as_str()),
        ("RELEVO_EXPORT_WINDOW_MS", "50"),
    ];
    let lambda = start_lambda_mode("otlp", &translated(), &[], &env).await;
    let (http, url, token) = (reqwest::Client::new(), &lambda.url, &lambda.token);

    let (trace_id, caller_span) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let params = json!({
        "name": "export_start",
        "arguments": { "dataset": "customers", "purpose": "otlp test" },
        "_meta": { "traceparent": format!("00-{trace_id}-{caller_span}-01") }
    });
    let started = mcp_request(&http, url, token, "tools/call", params)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert!(
        started["result"]["structuredContent"]["jobId"].is_string(),
        "{started}"
    );

    let spans_of = |received: &std::sync::Mutex<Vec<Value>>| -> Vec<(String, Value)> {
        let bodies = received.lock().unwrap().clone();
        bodies
            .iter()
            .flat_map(|body| {
                let service =
                    body["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                body["resourceSpans"][0]["scopeSpans"][0]["spans"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |s| (service.clone(), s))
            })
            .filter(|(_, span)| span["traceId"] == trace_id)
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let spans = loop {
        let spans = spans_of(&received);
        if spans
            .iter()
            .any(|(_, s)| s["kind"] == 5 && s["attributes"].to_string().contains("succeeded"))
        {
            break spans;
        }
        assert!(
            Instant::now() < deadline,
            "no finished job span: {spans:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for body in received.lock().unwrap().iter() {
        assert_eq!(otlp_problems(body), None, "{body}");
    }
    let (service, request) = spans
        .iter()
        .find(|(_, s)| s["kind"] == 2)
        .expect("the request's span");
    assert_eq!(service, "ToolsCallFunction");
    assert_eq!(request["name"], "tools/call export_start");
    assert_eq!(
        request["parentSpanId"], caller_span,
        "the request's span is the caller's child"
    );
    let jobs: Vec<&(String, Value)> = spans.iter().filter(|(_, s)| s["kind"] == 5).collect();
    for (service, job) in &jobs {
        assert_eq!(service, "WorkerFunction");
        assert_eq!(
            job["parentSpanId"], request["spanId"],
            "the job's span is the request's child: {job}"
        );
        assert_ne!(job["spanId"], request["spanId"]);
    }
}
