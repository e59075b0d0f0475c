//! In-process costs, with criterion (`cargo bench -p relevo-bench --bench inprocess`; `make bench`
//! runs it and puts the medians in its table):
//! - `handle_tools_call_greet`, `handle_tools_list`: one request through `McpServer::handle` —
//!   origin/host checks, the validation ladder (headers, JSON parse, envelope), dispatch, the
//!   handler and the JSON answer — on the shop app, authorization off, on a current-thread
//!   runtime. Building the `http::Request` is outside the timing (`iter_batched`). No tracing
//!   subscriber is installed, so the per-request log line costs nothing here (it does in the
//!   HTTP figures).
//! - `seal_request_state`, `open_request_state`: `KeyRing::seal`/`open` of a requestState shaped
//!   like the server's (`{"b": binding, "s": state}`).
//! - `cursor_encode`, `cursor_decode`: a pagination cursor.
//! - `state_binding_greet`: what `McpServer::call` computes for every `tools/call` before the
//!   handler runs, whether or not a requestState is involved (`state_binding` in
//!   `shared/protocol/src/server.rs`: arguments cloned, canonical JSON, SHA-256, hex by `format!`
//!   per byte, a JSON object) — reproduced here, as the server's function is private.

use std::sync::Arc;

use bytes::Bytes;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use relevo_protocol::Ports;
use relevo_protocol::{KeyRing, McpServer, Method, NoAuth, Route, ServerConfig, cursor};
use serde_json::json;

fn keys() -> KeyRing {
    KeyRing::new(vec![("bench".into(), vec![7u8; 32])]).expect("a 32-byte key is valid")
}

fn request(method: Method, name: Option<&str>, params: serde_json::Value) -> http::Request<Bytes> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method.as_str(), "params": params })
        .to_string();
    let mut builder = http::Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method.as_str());
    if let Some(name) = name {
        builder = builder.header("mcp-name", name);
    }
    builder.body(Bytes::from(body)).expect("a valid request")
}

fn handle(c: &mut Criterion) {
    let app = relevo_app::app(&Ports::new(None));
    let server = McpServer::new(app, ServerConfig::default(), keys(), Arc::new(NoAuth));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("inprocess");
    let cases = [
        (
            "handle_tools_call_greet",
            Method::ToolsCall,
            Some("greet"),
            json!({ "name": "greet", "arguments": { "name": "bench" } }),
        ),
        ("handle_tools_list", Method::ToolsList, None, json!({})),
    ];
    for (id, method, name, params) in cases {
        let probe = runtime.block_on(async {
            server
                .handle(Route::Only(method), request(method, name, params.clone()))
                .await
                .into_body()
                .collect()
                .await
        });
        let text = String::from_utf8_lossy(&probe);
        assert!(
            text.contains("\"result\"") && !text.contains("\"error\""),
            "{id} must answer a result: {text}"
        );
        group.bench_function(id, |b| {
            b.iter_batched(
                || request(method, name, params.clone()),
                |request| {
                    runtime.block_on(async {
                        server
                            .handle(Route::Only(method), request)
                            .await
                            .into_body()
                            .collect()
                            .await
                    })
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

fn seal(c: &mut Criterion) {
    let keys = keys();
    let payload = json!({
        "b": { "tn": "acme", "sb": "alice", "m": "tools/call", "t": "cart_checkout",
               "a": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" },
        "s": { "round": 2, "cartId": "c-0123456789", "totalCents": 12345, "nonce": "n-0123456789abcdef", "revision": 3 }
    });
    let token = keys.seal("request-state", &payload, u64::MAX);
    let mut group = c.benchmark_group("inprocess");
    group.bench_function("seal_request_state", |b| {
        b.iter(|| keys.seal("request-state", &payload, u64::MAX))
    });
    group.bench_function("open_request_state", |b| {
        b.iter(|| {
            keys.open("request-state", &token, 0)
                .expect("the token opens")
        })
    });
    let cursor = cursor::encode(&keys, "tools", 100, 0);
    group.bench_function("cursor_encode", |b| {
        b.iter(|| cursor::encode(&keys, "tools", 100, 0))
    });
    group.bench_function("cursor_decode", |b| {
        b.iter(|| cursor::decode(&keys, "tools", &cursor, 0).expect("the cursor decodes"))
    });
    group.finish();
}

fn state_binding(c: &mut Criterion) {
    let arguments = json!({ "name": "bench" });
    let arguments = arguments.as_object().expect("an object").clone();
    let mut group = c.benchmark_group("inprocess");
    // What binds a requestState to its call: the digest of the call's canonical arguments.
    group.bench_function("state_binding_greet", |b| {
        b.iter(|| relevo_state::canonical_object_digest(&arguments))
    });
    group.finish();
}

/// What a function's cold start spends on the app: the example app built over a store and jobs,
/// as the per-method functions build it (20 tools whose schemas are derived from their types,
/// their resources and prompts, the manifest).
fn build_app(c: &mut Criterion) {
    let sqlite = relevo_embedded::SqliteStore::in_memory().expect("an in-memory store");
    let queue = relevo_embedded::SqliteQueue::new(sqlite.clone(), 5);
    let engine = relevo_state::Engine::new(
        Arc::new(sqlite.clone()),
        Arc::new(queue),
        Arc::new(relevo_state::SystemClock),
        Arc::new(relevo_state::RandomIds),
        relevo_state::EngineConfig::default(),
    );
    let ports = Ports::new(Some(Arc::new(sqlite))).with_jobs(Arc::new(engine));
    assert_eq!(
        relevo_app::app(&ports).tools().count(),
        20,
        "every tool of the shop"
    );
    let mut group = c.benchmark_group("inprocess");
    group.bench_function("build_shop_app", |b| b.iter(|| relevo_app::app(&ports)));
    group.bench_function("derive_cart_view_schema", |b| {
        b.iter(relevo_protocol::author::schema::tool_schema::<relevo_app::shop::CartView>)
    });
    group.finish();
}

criterion_group!(benches, handle, seal, state_binding, build_app);
criterion_main!(benches);
