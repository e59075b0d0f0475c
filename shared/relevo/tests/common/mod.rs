//! What the example tests share: build an example with cargo, start it as its own process on a
//! free 127.0.0.1 port with the local runner (in-memory store, a dev token injected into every
//! `/mcp` request that has none), and call it over HTTP as an MCP client does.
//!
//! Every server is a [`Server`], killed when it drops, so a failed test leaves no process behind;
//! every server gets its own scratch folder (its dev issuer file), removed on drop.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The examples' binaries by name, built with the same cargo and target folder as the test.
///
/// The build runs without the variables cargo sets for this test's process (such as
/// `CARGO_MANIFEST_DIR`): a build script watching one (`ring`'s does) would otherwise see it
/// change and rebuild half the tree on every run, here and again in the next plain build.
///
/// `--workspace` (the example names are unique in it) rather than `-p relevo`: the libraries then
/// resolve their features as `cargo test --workspace` resolves them, so the examples that test
/// built are reused; `-p relevo` alone would resolve its own features and compile the facade's
/// whole tree again.
pub fn build_examples(names: &[&str]) -> HashMap<String, PathBuf> {
    let set_for_this_test = std::env::vars().map(|(name, _)| name).filter(|name| {
        [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_CRATE_",
            "CARGO_PRIMARY_",
            "CARGO_TARGET_TMPDIR",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix))
    });
    let mut cargo = Command::new(env!("CARGO"));
    for name in set_for_this_test {
        cargo.env_remove(name);
    }
    let output = cargo
        .args(["build", "--quiet", "--workspace", "--message-format=json"])
        .args(names.iter().flat_map(|name| ["--example", name]))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "cargo build of {names:?} failed");
    let built: HashMap<String, PathBuf> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|message| {
            let name = message["target"]["name"].as_str()?.to_string();
            let executable = message["executable"].as_str()?;
            names
                .contains(&name.as_str())
                .then(|| (name, PathBuf::from(executable)))
        })
        .collect();
    assert_eq!(
        built.len(),
        names.len(),
        "cargo names each example's executable: {built:?}"
    );
    built
}

/// A running example: killed, and its scratch folder removed, when the test ends, pass or fail.
pub struct Server {
    child: Child,
    dir: PathBuf,
    pub port: u16,
    client: reqwest::Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Starts `binary` on a free port and waits for its "listening" log line. A port taken by
/// another process between the probe and the bind is tried again with another.
pub fn start(binary: &Path) -> Server {
    for _ in 0..3 {
        if let Some(server) = try_start(binary, free_port()) {
            return server;
        }
    }
    panic!("{} did not start on any of three ports", binary.display())
}

fn try_start(binary: &Path, port: u16) -> Option<Server> {
    let dir = std::env::temp_dir().join(format!("relevo-example-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
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
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the example starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let client = reqwest::Client::new();
    let server = Server {
        child,
        dir,
        port,
        client,
    };
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        // Reads to the end, so that the server never writes its logs into a closed pipe.
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    loop {
        // A closed channel is a server that exited (its port was taken): try another port.
        let line = match lines.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("the example never logged that it listens")
            }
        };
        if line.contains("listening") {
            assert!(
                line.contains(&format!("127.0.0.1:{port}")),
                "it listens on loopback: {line}"
            );
            return Some(server);
        }
    }
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.client
    }

    /// One JSON-RPC request of a client declaring `capabilities`; the whole answer (`result`
    /// or `error`). `Mcp-Name` mirrors the body's name, URI or task id, as the spec asks.
    pub async fn rpc_with(&self, method: &str, mut params: Value, capabilities: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": { "name": "relevo-example-test", "version": "1" }
        });
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let mut request = self
            .client
            .post(self.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .header("mcp-method", method);
        let name = ["name", "uri", "taskId"]
            .iter()
            .find_map(|key| params[key].as_str());
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let response = request
            .body(body.to_string())
            .send()
            .await
            .expect("the server answers");
        let text = response.text().await.expect("the body reads");
        // An SSE answer ends with the response; notifications come before it.
        let last = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .next_back();
        serde_json::from_str(last.unwrap_or(&text).trim())
            .unwrap_or_else(|_| panic!("a JSON-RPC answer: {text}"))
    }

    /// [`Server::rpc_with`] for a client that declares no capabilities.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.rpc_with(method, params, json!({})).await
    }

    /// `tools/call` of `tool` with `arguments`.
    pub async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.rpc(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }
}
