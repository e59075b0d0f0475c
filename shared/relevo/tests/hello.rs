//! `examples/hello.rs` as a user runs it: built by cargo, started as its own process on
//! 127.0.0.1 with the local runner, and called over HTTP as an MCP client calls it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const PROTOCOL_VERSION: &str = "2026-07-28";

/// The example's binary, built with the same cargo and target folder as this test.
fn build_example() -> std::path::PathBuf {
    let output = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "relevo",
            "--example",
            "hello",
            "--message-format=json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo build --example hello failed"
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == "hello")
        .find_map(|message| message["executable"].as_str().map(std::path::PathBuf::from))
        .expect("cargo names the example's executable")
}

/// Kills the server when the test ends, pass or fail.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Starts the example and waits for its "listening" log line.
fn start(binary: &std::path::Path, dir: &std::path::Path, port: u16) -> Server {
    let mut child = Command::new(binary)
        .args([
            "--port",
            &port.to_string(),
            "--inject-dev-token",
            "dev:tester",
        ])
        .env_remove("RELEVO_AUTH")
        .env("RELEVO_STORE", "memory")
        .env("RELEVO_DEV_ISSUER_FILE", dir.join("dev-issuer.json"))
        .env("RUST_LOG", "info")
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the example starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let server = Server(child);
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        // Reads to the end, so that the server never writes its logs into a closed pipe.
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the example logs that it listens");
        if line.contains("listening") {
            assert!(
                line.contains(&format!("127.0.0.1:{port}")),
                "it listens on loopback: {line}"
            );
            return server;
        }
    }
}

async fn call(client: &reqwest::Client, port: u16, tool: &str, arguments: Value) -> Value {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": { "name": "hello-test", "version": "1" }
            }
        }
    });
    let response = client
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body.to_string())
        .send()
        .await
        .expect("the server answers");
    let text = response.text().await.expect("the body reads");
    let last = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .next_back();
    serde_json::from_str(last.unwrap_or(&text).trim())
        .unwrap_or_else(|_| panic!("a JSON-RPC answer: {text}"))
}

#[tokio::test]
async fn the_hello_example_serves_its_two_tools_on_loopback() {
    let binary = build_example();
    let dir = std::env::temp_dir().join(format!("relevo-hello-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let port = free_port();
    let _server = start(&binary, &dir, port);
    let client = reqwest::Client::new();

    let sum = call(&client, port, "add", json!({ "a": 2, "b": 40 })).await;
    assert_eq!(sum["result"]["structuredContent"]["sum"], 42, "{sum}");
    let greeting = call(&client, port, "greet", json!({ "name": "Ada" })).await;
    assert_eq!(
        greeting["result"]["structuredContent"]["greeting"], "Hello, Ada!",
        "{greeting}"
    );
    // The schema derived from the example's types is enforced before the tool runs.
    let refused = call(&client, port, "add", json!({ "a": 2 })).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");

    let _ = std::fs::remove_dir_all(&dir);
}
