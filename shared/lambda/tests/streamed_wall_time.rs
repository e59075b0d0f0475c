//! What a streamed answer costs in wall time, which Lambda bills: the `tools-call` runner with
//! response streaming on (`RELEVO_RESPONSE_STREAMING=true`, as front door A deploys it) answers
//! 30 `tools/call` invocations back to back under a Runtime API made of plain sockets, as
//! Lambda's (RAPID, a Go server) is: no `TCP_QUICKACK`, so the kernel delays its ACKs (~40 ms
//! on Linux) as it would in an execution environment.
//!
//! A streamed answer leaves as several writes (the request head, the prelude with the first
//! frame, the end). lambda_runtime 1.5's client wrote them on a connection without
//! `TCP_NODELAY`, so Nagle's algorithm held each until the previous one was acknowledged: every
//! streamed invocation lasted ~40 ms longer than the function worked (measured 43 ms p50 against
//! 0.9 ms with `TCP_NODELAY`, debug build). The runners' own poll loop (`relevo_lambda::runtime`)
//! sets it, and writes a JSON answer with its prelude as one chunk; this test keeps the whole
//! function's streamed answer under the bound. The socket option itself is seen by the runtime's
//! own test of an answer streamed over time (`runtime::tests`), which fails without it.
//!
//! A timing bound, for want of anything better to observe: the Runtime API cannot see the
//! client's socket options, and the function's socket is not ours to inspect. The margin is
//! wide (20 ms against a 40 ms stall and a ~1 ms answer).
//!
//! The function runs in a child process (this test binary again, [`function_child`]), because
//! lambda_runtime reads its configuration from the environment.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CHILD: &str = "RELEVO_TEST_STREAMED_FUNCTION";
const KEY: &str = "test:QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5eg==";
const WARM_UP: usize = 3;
const MEASURED: usize = 30;

/// The function: `tools-call`'s main, when the parent test starts this binary as one.
#[test]
#[ignore = "the function process of a_streamed_answer_costs_no_delayed_ack; not a test"]
fn function_child() {
    if std::env::var(CHILD).is_err() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let route = relevo_protocol::Route::Only(relevo_protocol::Method::ToolsCall);
    runtime
        .block_on(relevo_lambda::run(route, relevo_app::app))
        .unwrap();
}

struct Function(Child);

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_streamed_answer_costs_no_delayed_ack() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let _function = Function(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "function_child", "--ignored", "--quiet"])
            .env(CHILD, "1")
            .env("AWS_LAMBDA_RUNTIME_API", address.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", "tools-call")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_REGION", "us-east-1")
            .env("RELEVO_STATE_KEYS", KEY)
            .env("RELEVO_AUTH", "off")
            .env("RELEVO_RESPONSE_STREAMING", "true")
            .env("RUST_LOG", "warn")
            .spawn()
            .unwrap(),
    );
    let (stream, _) = listener.accept().unwrap();
    // As Go's net/http (RAPID) does; it changes nothing about this side's delayed ACKs.
    stream.set_nodelay(true).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut walls = Vec::new();
    let mut answered = Instant::now();
    for invocation in 0..2 * (WARM_UP + MEASURED) {
        let (path, body) = read_request(&mut reader);
        if path.ends_with("/invocation/next") {
            let id = invocation / 2;
            let event = event(id).to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\nlambda-runtime-aws-request-id: r{id}\r\n\
                 lambda-runtime-deadline-ms: {}\r\n\
                 lambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:123456789012:function:tools-call\r\n\
                 lambda-runtime-trace-id: Root=1-00000000-000000000000000000000000;Sampled=0\r\n\
                 content-type: application/json\r\ncontent-length: {}\r\n\r\n",
                epoch_millis() + 30_000,
                event.len()
            );
            writer.write_all((head + &event).as_bytes()).unwrap();
            answered = Instant::now();
        } else {
            assert!(path.ends_with("/response"), "{path}: {body:?}");
            let wall = answered.elapsed();
            let text = String::from_utf8_lossy(&body);
            assert!(text.contains("Hello, bench!"), "{text}");
            if invocation / 2 >= WARM_UP {
                walls.push(wall);
            }
            writer
                .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                .unwrap();
        }
    }
    walls.sort();
    let p50 = walls[walls.len() / 2];
    assert!(
        p50 < Duration::from_millis(20),
        "a streamed invocation takes {p50:?} (p50 of {MEASURED}): a write waits for a delayed ACK"
    );
}

/// One request from the runtime client: its path and its body (a chunked body decoded).
fn read_request(reader: &mut BufReader<TcpStream>) -> (String, Vec<u8>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let path = line.split(' ').nth(1).unwrap_or_default().to_string();
    let (mut length, mut chunked) = (0, false);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end().to_ascii_lowercase();
        if header.is_empty() {
            break;
        }
        if let Some(value) = header.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        if header == "transfer-encoding: chunked" {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if !chunked {
        body.resize(length, 0);
        reader.read_exact(&mut body).unwrap();
        return (path, body);
    }
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            // Trailers, then the blank line that ends the message.
            loop {
                let mut trailer = String::new();
                reader.read_line(&mut trailer).unwrap();
                if trailer.trim().is_empty() {
                    return (path, body);
                }
            }
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).unwrap();
        body.extend_from_slice(&chunk[..size]);
    }
}

/// A REST API proxy event (front door A) for `tools/call greet`.
fn event(id: usize) -> Value {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "greet", "arguments": { "name": "bench" },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    let headers = json!({
        "host": "127.0.0.1",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "greet"
    });
    let multi: serde_json::Map<String, Value> = headers
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), json!([v])))
        .collect();
    json!({
        "resource": "/mcp", "path": "/mcp", "httpMethod": "POST",
        "headers": headers, "multiValueHeaders": multi,
        "queryStringParameters": null, "multiValueQueryStringParameters": null,
        "pathParameters": null, "stageVariables": null,
        "requestContext": {
            "accountId": "123456789012", "apiId": "local", "domainName": "127.0.0.1",
            "httpMethod": "POST", "path": "/mcp", "protocol": "HTTP/1.1",
            "requestId": format!("r{id}"), "requestTimeEpoch": epoch_millis(),
            "resourceId": "local", "resourcePath": "/mcp", "stage": "live",
            "identity": { "sourceIp": "127.0.0.1" }
        },
        "body": body.to_string(),
        "isBase64Encoded": false
    })
}

fn epoch_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}
