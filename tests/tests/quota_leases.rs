//! Quota leases across processes: four server processes (four Lambda environments, each with its
//! own leases) over one store, 64 concurrent callers on each, one tenant spending more than its
//! window, on the SQLite store (one file) and on DynamoDB (moto, started by `make test`).
//!
//! Checked over what the callers heard and what the store holds afterwards:
//! - never a unit over the limit: the callers admitted at most the window's limit, and the
//!   store's count is at most that limit;
//! - the stranded units (counted, never admitted) stay under the documented bound, fewer than
//!   `lease_cap` per environment, for a tenant that spends its window (`acme`) and for one that
//!   stays under it (`globex`, whose leases are still held when the calls stop);
//! - the quota never answers contention: every answer is 200 or 429, no 503;
//! - leases amortize: the four environments wrote far fewer times than they were called.
//!
//! Each server runs in a child process (this test binary again, [`lease_instance`]) that prints
//! its port, serves until its stdin closes, then prints its lease statistics. The window is an
//! hour on the system clock, so a run (a few seconds) crossing into the next window is counted
//! as two windows, each held to the same bounds.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use relevo_protocol::McpServer;
use relevo_protocol::quota::Quotas;
use relevo_state::RecordStore;
use relevo_state::rate::{Rate, lease_cap, window_key};
use relevo_tests::race::Backend;
use relevo_tests::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const CHILD: &str = "RELEVO_TEST_LEASE_INSTANCE";
const INSTANCES: usize = 4;
const CALLERS: usize = 64;
/// `acme`'s calls per caller: 4 × 64 × 10 = 2,560 calls at a limit of 1,600.
const CALLS: usize = 10;
/// `globex`'s calls per caller: 4 × 64 × 2 = 512, under the limit.
const UNDER: usize = 2;
const RATE: Rate = Rate {
    limit: 1_600,
    window_secs: 3_600,
};

/// One server of the deployment, when the parent test starts this binary as one.
#[test]
#[ignore = "a server process of leases_hold_across_processes_*; not a test"]
fn lease_instance() {
    if std::env::var(CHILD).is_err() {
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(instance());
}

async fn instance() {
    let spec = std::env::var("LEASE_STORE").unwrap();
    let store: Arc<dyn RecordStore> = match spec.split_once(':').unwrap() {
        ("sqlite", path) => Arc::new(relevo_embedded::SqliteStore::open(path.as_ref()).unwrap()),
        ("dynamo", table) => Arc::new(relevo_aws::DynamoStore::new(dynamo_client().await, table)),
        (other, _) => panic!("no store {other}"),
    };
    let issuer =
        relevo_auth::DevIssuer::load(std::env::var("LEASE_ISSUER").unwrap().as_ref()).unwrap();
    let (settings, _, _) = dev_auth();
    let auth = relevo_auth::BearerAuthenticator::new(
        settings.clone(),
        Arc::new(relevo_auth::StaticKeySource(issuer.jwks())),
    );
    let config = relevo_protocol::ServerConfig {
        quotas: Quotas::parse(Some("1600/3600"), None).unwrap(),
        ..test_config()
    };
    let ports = relevo_protocol::Ports::new(Some(store.clone()));
    let server = McpServer::new(
        relevo_app::features(&ports),
        config,
        test_keys(),
        Arc::new(auth),
    )
    .with_store(store);
    let leases = server.leases();
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    let router = relevo_local::router(server, options);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("PORT {}", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, router).await });
    tokio::task::spawn_blocking(|| {
        use std::io::Read;
        std::io::stdin().read_to_end(&mut Vec::new())
    })
    .await
    .unwrap()
    .unwrap();
    let stats = leases.stats();
    println!(
        "STATS {}",
        json!({
            "takes": stats.takes, "refusedTakes": stats.refused_takes,
            "takenUnits": stats.taken_units, "admittedUnits": stats.admitted_units,
        })
    );
}

async fn dynamo_client() -> aws_sdk_dynamodb::Client {
    let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT").expect(
        "RELEVO_TEST_AWS_ENDPOINT is not set: run with `make test` (it starts the moto emulator)",
    );
    aws_sdk_dynamodb::Client::new(&relevo_aws::emulator_config(&endpoint).await)
}

/// A server process, killed when dropped.
struct Instance {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    port: u16,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Instance {
    async fn start(store: &str, issuer: &PathBuf) -> Instance {
        let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "lease_instance",
                "--ignored",
                "--nocapture",
                "--quiet",
            ])
            .env(CHILD, "1")
            .env("LEASE_STORE", store)
            .env("LEASE_ISSUER", issuer)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the instance starts");
            if let Some(port) = line.strip_prefix("PORT ") {
                break port.parse().unwrap();
            }
        };
        Instance { child, lines, port }
    }

    /// Its lease statistics, once its stdin is closed.
    async fn stats(mut self) -> serde_json::Value {
        drop(self.child.stdin.take());
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("the instance reports");
            if let Some(stats) = line.strip_prefix("STATS ") {
                return serde_json::from_str(stats).unwrap();
            }
        }
    }
}

/// One `tools/call greet` to the instance on `port`: its status.
async fn call(
    client: &hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        Full<Bytes>,
    >,
    port: u16,
    token: &str,
) -> u16 {
    let request = rpc_as(
        Some(token),
        1,
        "tools/call",
        json!({ "name": "greet", "arguments": { "name": "lease" } }),
    );
    let (mut parts, body) = request.into_parts();
    parts.uri = format!("http://127.0.0.1:{port}/mcp").parse().unwrap();
    let body = body.collect().await.unwrap().to_bytes();
    let response = client
        .request(http::Request::from_parts(parts, Full::new(body)))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    if status == 200 {
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    status
}

async fn leases_hold_across_processes(kind: Backend) {
    let dir = std::env::temp_dir().join(format!(
        "relevo-leases-{}",
        relevo_state::Ids::new_id(&relevo_state::RandomIds)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (store, spec): (Arc<dyn RecordStore>, String) = match kind {
        Backend::Sqlite => {
            let path = dir.join("store.db");
            let store = relevo_embedded::SqliteStore::open(&path).unwrap();
            (Arc::new(store), format!("sqlite:{}", path.display()))
        }
        Backend::Dynamo => {
            let client = dynamo_client().await;
            let table = format!(
                "leases-{}",
                relevo_state::Ids::new_id(&relevo_state::RandomIds).replace(['_', '-'], "x")
            );
            relevo_aws::create_table(&client, &table).await.unwrap();
            (
                Arc::new(relevo_aws::DynamoStore::new(client, &table)),
                format!("dynamo:{table}"),
            )
        }
    };
    let (_, issuer, _) = dev_auth();
    let issuer_file = dir.join("issuer.json");
    issuer.save(&issuer_file).unwrap();
    let tokens: Vec<String> = (0..8)
        .map(|n| dev_token(&issuer, "acme", &format!("caller{n}"), &["shop"]))
        .collect();
    let under = dev_token(&issuer, "globex", "gina", &["shop"]);
    let mut instances = Vec::new();
    for _ in 0..INSTANCES {
        instances.push(Instance::start(&spec, &issuer_file).await);
    }
    let first = now();

    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .pool_max_idle_per_host(CALLERS)
        .build_http::<Full<Bytes>>();
    let mut callers = tokio::task::JoinSet::new();
    for (n, instance) in instances.iter().enumerate() {
        for caller in 0..CALLERS {
            let (client, port) = (client.clone(), instance.port);
            let token = tokens[(n * CALLERS + caller) % tokens.len()].clone();
            let under = under.clone();
            callers.spawn(async move {
                let mut statuses = Vec::with_capacity(CALLS + UNDER);
                for _ in 0..CALLS {
                    statuses.push(("acme", call(&client, port, &token).await));
                }
                for _ in 0..UNDER {
                    statuses.push(("globex", call(&client, port, &under).await));
                }
                statuses
            });
        }
    }
    let answers: Vec<(&str, u16)> = callers.join_all().await.into_iter().flatten().collect();
    let last = now();
    let mut stats = Vec::new();
    for instance in instances {
        stats.push(instance.stats().await);
    }

    let other: Vec<&(&str, u16)> = answers
        .iter()
        .filter(|(_, s)| *s != 200 && *s != 429)
        .collect();
    assert!(
        other.is_empty(),
        "answers other than 200 and 429: {other:?}"
    );
    let cap = u64::from(lease_cap(relevo_state::rate::MAX_LEASE, RATE.limit));
    let mut report = Vec::new();
    for tenant in ["acme", "globex"] {
        let calls = answers.iter().filter(|(t, _)| *t == tenant).count() as u64;
        let admitted = answers
            .iter()
            .filter(|(t, s)| *t == tenant && *s == 200)
            .count() as u64;
        // The windows the run touched (one, or two when it crossed the hour).
        let (mut counted, mut windows) = (0, 0);
        let mut window = RATE.window_start(first);
        while window <= last {
            let key = window_key(tenant, "tenant", RATE, window);
            let count = store
                .get(&key, window)
                .await
                .unwrap()
                .map_or(0, |record| record.body["count"].as_u64().unwrap());
            assert!(
                count <= u64::from(RATE.limit),
                "{tenant}: window {window} counted {count}, over {}",
                RATE.limit
            );
            counted += count;
            windows += 1;
            window += RATE.window_secs;
        }
        let limit = u64::from(RATE.limit) * windows;
        assert!(
            admitted <= limit,
            "{tenant}: {admitted} admitted over {limit}"
        );
        if tenant == "globex" {
            assert_eq!(
                admitted, calls,
                "globex stays under its window: all admitted"
            );
        } else {
            assert!(
                admitted >= limit - INSTANCES as u64 * cap,
                "acme: {admitted} admitted"
            );
        }
        let stranded = counted - admitted;
        let bound = INSTANCES as u64 * cap * windows;
        assert!(
            stranded < bound,
            "{tenant}: {stranded} units stranded (counted {counted}, admitted {admitted}), \
             bound {bound}"
        );
        report.push(format!(
            "{tenant} {calls} calls, {admitted} admitted, {stranded} stranded (bound {bound})"
        ));
    }
    let admitted = answers.iter().filter(|(_, s)| *s == 200).count() as u64;
    let writes: u64 = stats
        .iter()
        .map(|s| s["takes"].as_u64().unwrap() + s["refusedTakes"].as_u64().unwrap())
        .sum();
    let by_leases: u64 = stats
        .iter()
        .map(|s| s["admittedUnits"].as_u64().unwrap())
        .sum();
    assert_eq!(
        by_leases, admitted,
        "each 200 is one admitted unit: {stats:?}"
    );
    assert!(
        writes * 8 <= answers.len() as u64,
        "{writes} store writes for {} calls: {stats:?}",
        answers.len()
    );
    eprintln!("{kind:?}: {}; {writes} store writes", report.join("; "));
    let _ = std::fs::remove_dir_all(&dir);
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_hold_across_processes_on_sqlite() {
    leases_hold_across_processes(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_hold_across_processes_on_dynamodb() {
    leases_hold_across_processes(Backend::Dynamo).await;
}
