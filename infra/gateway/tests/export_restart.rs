//! End to end over HTTP with the real gateway binary: start an export, kill the gateway (SIGKILL,
//! like a crashed host) while the export is mid-way, start it again, and get the whole result.
//! The job resumes from its last checkpoint after the dead lease expires. Bounded: 60 s at most.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use relevo_auth::DevIssuer;
use serde_json::{Value, json};

const KEY: &str = "test:QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5eg==";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A gateway process that is killed when dropped, so a failing test leaves nothing running.
struct Gateway(Child);

impl Gateway {
    fn crash(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_gateway(dir: &Path, port: u16) -> Gateway {
    let child = Command::new(env!("CARGO_BIN_EXE_relevo-gateway"))
        .args(["--port", &port.to_string()])
        .env("RELEVO_AUTH", "dev")
        .env("RELEVO_STATE_KEYS", KEY)
        .env(
            "RELEVO_STORE",
            format!("sqlite:{}", dir.join("store.db").display()),
        )
        .env("RELEVO_DEV_ISSUER_FILE", dir.join("issuer.json"))
        .env("RELEVO_EXPORT_WINDOW_MS", "150")
        .env("RELEVO_LEASE_SECS", "2")
        .env("RELEVO_RECONCILE_SECS", "1")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the gateway did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Gateway(child)
}

struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
    next_id: u64,
}

impl Client {
    async fn rpc(&mut self, method: &str, mut params: Value) -> Value {
        self.next_id += 1;
        params["_meta"] = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
        let name = params
            .get("name")
            .or(params.get("uri"))
            .and_then(Value::as_str)
            .map(String::from);
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .json(&json!({ "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params }));
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        request.send().await.unwrap().json().await.unwrap()
    }

    async fn tool(&mut self, name: &str, arguments: Value) -> Value {
        self.rpc(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
        .await["result"]
            .clone()
    }

    async fn status(&mut self, job: &str) -> Value {
        self.tool("export_status", json!({ "jobId": job })).await["structuredContent"].clone()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_export_survives_a_gateway_crash_mid_way_and_completes_whole() {
    let dir: PathBuf = std::env::temp_dir().join(format!("relevo-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let gateway = start_gateway(&dir, port);

    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let issuer = DevIssuer::load(&dir.join("issuer.json")).unwrap();
    let token = issuer
        .mint(
            "acme",
            "alice",
            &["exports:read", "exports:write"],
            now,
            600,
        )
        .unwrap();
    let mut client = Client {
        http: reqwest::Client::new(),
        url: format!("http://127.0.0.1:{port}/mcp"),
        token,
        next_id: 0,
    };

    let started = client
        .tool(
            "export_start",
            json!({ "dataset": "customers", "purpose": "audit", "operationKey": "audit-1" }),
        )
        .await;
    let job = started["structuredContent"]["jobId"]
        .as_str()
        .unwrap()
        .to_string();

    let deadline = Instant::now() + Duration::from_secs(20);
    let exported_before_crash = loop {
        let status = client.status(&job).await;
        let rows = status["rowsExported"].as_u64().unwrap();
        if rows > 0 {
            assert!(rows < 240, "the crash must come mid-way: {status}");
            break rows;
        }
        assert!(
            Instant::now() < deadline,
            "the export never started: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    gateway.crash();

    let gateway = start_gateway(&dir, port);
    let again = client
        .tool(
            "export_start",
            json!({ "dataset": "customers", "purpose": "audit", "operationKey": "audit-1" }),
        )
        .await;
    assert_eq!(
        again["structuredContent"]["jobId"],
        job.as_str(),
        "the same operation key finds the same job after the restart"
    );
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let status = client.status(&job).await;
        if status["status"] == "succeeded" {
            break;
        }
        assert!(
            status["rowsExported"].as_u64().unwrap() >= exported_before_crash,
            "progress never goes back: {status}"
        );
        assert!(
            Instant::now() < deadline,
            "the export did not finish after the restart: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let result =
        client.tool("export_result", json!({ "jobId": job })).await["structuredContent"].clone();
    assert_eq!(result["rows"], 240);
    let csv = result["csv"].as_str().unwrap();
    assert_eq!(
        csv.lines().count(),
        241,
        "a header and every row, none twice"
    );
    let ids: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        ids,
        (0..240)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    let read = client
        .rpc(
            "resources/read",
            json!({ "uri": format!("exports://{job}") }),
        )
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], csv);
    assert_eq!(read["result"]["cacheScope"], "private");

    drop(gateway);
    std::fs::remove_dir_all(&dir).unwrap();
}
