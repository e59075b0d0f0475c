//! Metric dimensions come from closed sets: a caller cannot create CloudWatch custom metrics by
//! sending names. Every distinct dimension value is a billed metric series, so the `Tool`
//! dimension names only a tool the call resolved to and the caller may see, and the `Method`
//! dimension only a method the server knows; anything else is one fixed value (the raw text
//! stays a log property). Every value meets CloudWatch's rules for a dimension value.
//!
//! EMF lines go to stdout (as on Lambda), so the test runs its server in a child process of this
//! test binary (`RELEVO_METRICS=emf`) and reads the child's stdout. The same way, a served request
//! writes one stdout line, metrics on (its EMF line, carrying the access fields) or off (its
//! access line).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_protocol::wire::{CallToolResult, ContentBlock};
use relevo_protocol::{App, McpServer, Method, Outcome, Tool, handler};
use relevo_tests::*;
use serde_json::{Value, json};

/// Set in the child process: it serves the random requests with EMF on.
const CHILD: &str = "RELEVO_METRICS_TEST_CHILD";
/// Set in the child process of the one-line test: it serves a few calls with the runners' log
/// setup (`init_logging`), between two marker lines.
const ONE_LINE_CHILD: &str = "RELEVO_ONE_LINE_TEST_CHILD";
const BEGIN: &str = "-- requests begin --";
const END: &str = "-- requests end --";
const CALLS: usize = 3;
/// The one value a dimension takes for anything outside its closed set.
const OTHER: &str = "(other)";
/// What a 2025-11-25 session may ask beyond the shared methods, and the non-POST verbs.
const LEGACY_ONLY: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];
const SEEN_WITHOUT_METHOD: [&str; 4] = ["GET", "DELETE", "(response)", "-"];

/// CloudWatch API reference, `Dimension`: a value is 1 to 1024 characters, ASCII, with at least
/// one non-whitespace character and no ASCII control character.
fn cloudwatch_refuses(value: &str) -> Option<&'static str> {
    if value.is_empty() || value.len() > 1024 {
        Some("length outside 1..=1024")
    } else if !value.is_ascii() {
        Some("not ASCII")
    } else if value.bytes().any(|b| b.is_ascii_control()) {
        Some("a control character")
    } else if value.trim().is_empty() {
        Some("only whitespace")
    } else {
        None
    }
}

fn app() -> App {
    let answer = |text: &'static str| {
        handler(move |_| async move {
            Ok(Outcome::tool(CallToolResult::success(vec![
                ContentBlock::text(text),
            ])))
        })
    };
    App::new("metrics-test", "0")
        .tool(Tool::new(
            "open_tool",
            "Anyone may call it.",
            json!({ "type": "object" }),
            answer("open"),
        ))
        .tool(
            Tool::new(
                "admin_tool",
                "Needs the admin scope.",
                json!({ "type": "object" }),
                answer("admin"),
            )
            .scopes(&["admin"]),
        )
}

/// A seeded stream of names: printable, non-ASCII, control characters, blank, long.
fn names(seed: u64, count: usize) -> Vec<String> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    let pieces = [
        "a",
        "Z",
        "_",
        "-",
        "/",
        " ",
        "\t",
        "\u{7}",
        "\u{1b}[2J",
        "é",
        "名",
        "\u{85}",
        "\u{feff}",
        "0",
    ];
    let mut names: Vec<String> = vec![
        "".into(),
        " ".into(),
        "\u{0}".into(),
        "tool\nname".into(),
        "x".repeat(2000),
        "admin_tool".into(),
    ];
    while names.len() < count {
        let len = 1 + next() % 12;
        names.push(
            (0..len)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect(),
        );
    }
    names
}

/// The local server's router over the app (dev tokens, a SQLite store in memory), and a token
/// of tenant `tenant-a` without the `admin` scope.
fn served_app() -> (axum::Router, String) {
    let (settings, issuer, auth) = dev_auth();
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let server =
        McpServer::new(app(), test_config(), test_keys(), Arc::new(auth)).with_store(store);
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    let router = relevo_local::router(server, options);
    (router, dev_token(&issuer, "tenant-a", "alice", &[]))
}

/// The child's work: random tool names on `tools/call` (2026-07-28), random method names in a
/// 2025-11-25 session, from a caller without the `admin` scope.
async fn serve_random_names() {
    let (router, token) = served_app();
    for (at, name) in names(7, 60).iter().enumerate() {
        let body = json!({ "jsonrpc": "2.0", "id": at, "method": "tools/call",
            "params": { "name": name, "arguments": {}, "_meta": envelope(json!({})) } });
        let request = axum::http::Request::post("/mcp")
            .header("host", "127.0.0.1:8080")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", "tools/call")
            .header("authorization", format!("Bearer {token}"))
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        send(&router, request).await;
        send(
            &router,
            rpc_as(
                Some(&token),
                1,
                "tools/call",
                json!({ "name": "open_tool", "arguments": {} }),
            ),
        )
        .await;
    }
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "metrics", "version": "0" } } });
    let reply = send(&router, legacy_post(&token, None, &init)).await;
    let session = reply
        .headers
        .get("mcp-session-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    for (at, method) in names(11, 60).iter().enumerate() {
        let body = json!({ "jsonrpc": "2.0", "id": at + 1, "method": method, "params": { "name": "open_tool" } });
        send(&router, legacy_post(&token, Some(&session), &body)).await;
        let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": method, "arguments": {} } });
        send(&router, legacy_post(&token, Some(&session), &call)).await;
    }
}

#[tokio::test]
async fn random_names_add_no_dimension_value_and_every_value_is_one_cloudwatch_accepts() {
    if std::env::var_os(CHILD).is_some() {
        relevo_state::emf::enable_from_env();
        serve_random_names().await;
        return;
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "random_names_add_no_dimension_value_and_every_value_is_one_cloudwatch_accepts",
        ])
        .args(["--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("RELEVO_METRICS", "emf")
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(
        child.status.success(),
        "the child failed: {}",
        String::from_utf8_lossy(&child.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&child.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line.get("_aws").is_some())
        .collect();
    assert!(
        lines.len() > 200,
        "the child wrote {} EMF lines",
        lines.len()
    );

    let known_methods: BTreeSet<&str> = Method::ALL
        .iter()
        .map(|m| m.as_str())
        .chain(LEGACY_ONLY)
        .chain(SEEN_WITHOUT_METHOD)
        .chain([OTHER])
        .collect();
    let mut tools = BTreeSet::new();
    let mut methods = BTreeSet::new();
    for line in &lines {
        for set in line["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
            .as_array()
            .unwrap()
        {
            for name in set.as_array().unwrap() {
                let name = name.as_str().unwrap();
                let value = line[name]
                    .as_str()
                    .unwrap_or_else(|| panic!("dimension {name} is not a string: {line}"));
                if let Some(why) = cloudwatch_refuses(value) {
                    panic!("dimension {name} = {value:?} is refused by CloudWatch ({why})");
                }
                match name {
                    "Tool" => tools.insert(value.to_string()),
                    "Method" => methods.insert(value.to_string()),
                    _ => false,
                };
            }
        }
    }
    let allowed_tools: BTreeSet<String> =
        ["open_tool", OTHER].iter().map(|t| t.to_string()).collect();
    assert!(
        tools.is_subset(&allowed_tools),
        "tool dimension values beyond the visible tools: {tools:?}"
    );
    assert!(
        tools.contains("open_tool") && tools.contains(OTHER),
        "{tools:?}"
    );
    let unknown: Vec<&String> = methods
        .iter()
        .filter(|m| !known_methods.contains(m.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "method dimension values beyond the known methods: {unknown:?}"
    );
}

/// The child's work for the one-line test: `CALLS` calls of a tool that logs nothing, under the
/// log setup every runner installs, between the markers.
async fn serve_calls() {
    relevo_local::init_logging(relevo_local::LogFormat::Lambda);
    let (router, token) = served_app();
    println!("{BEGIN}");
    for id in 0..CALLS as u64 {
        let params = json!({ "name": "open_tool", "arguments": {} });
        let reply = send(&router, rpc_as(Some(&token), id, "tools/call", params)).await;
        assert_eq!(reply.status, 200);
    }
    println!("{END}");
}

#[tokio::test]
async fn a_served_request_writes_one_stdout_line_with_metrics_on_or_off() {
    if std::env::var_os(ONE_LINE_CHILD).is_some() {
        serve_calls().await;
        return;
    }
    for metrics in [true, false] {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args([
                "--exact",
                "a_served_request_writes_one_stdout_line_with_metrics_on_or_off",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(ONE_LINE_CHILD, "1")
            .env("RUST_LOG", "info")
            .env_remove("AWS_LAMBDA_LOG_LEVEL");
        if metrics {
            child.env("RELEVO_METRICS", "emf");
        } else {
            child.env_remove("RELEVO_METRICS");
        }
        let output = child.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the child failed: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let between = stdout
            .split_once(BEGIN)
            .and_then(|(_, rest)| rest.split_once(END))
            .map(|(lines, _)| lines.trim())
            .unwrap_or_else(|| panic!("no markers: {stdout}"));
        let lines: Vec<Value> = between
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        assert_eq!(lines.len(), CALLS, "metrics {metrics}: {between}");
        for line in &lines {
            assert_eq!(line["fields"]["tenant"], "tenant-a", "{line}");
            assert_eq!(line.get("_aws").is_some(), metrics, "{line}");
            if metrics {
                // The EMF line says each fact once: the tool is its `Tool` dimension, the line
                // is INFO by having no level (Lambda's filter reads a missing level as INFO).
                assert_eq!(
                    (&line["Tool"], line["Latency"].is_f64()),
                    (&json!("open_tool"), true),
                    "{line}"
                );
                assert!(line.get("level").is_none(), "{line}");
                assert!(line["fields"].get("name").is_none(), "{line}");
                assert!(line["fields"].get("message").is_none(), "{line}");
            } else {
                assert_eq!(line["level"], "INFO", "{line}");
                assert_eq!(line["fields"]["message"], "mcp request", "{line}");
                assert_eq!(line["fields"]["name"], "open_tool", "{line}");
                assert!(line["fields"]["latency_ms"].is_f64(), "{line}");
            }
        }
    }
}
