//! One `tools/call` spends exactly one unit of its tenant's quota and one of its tool's, on every
//! path a call can take: the all-methods function (front door B), the per-method function (front
//! door A), a task-augmented call (and the worker that runs its task afterwards spends nothing),
//! and a call inside a 2025-11-25 session. A unit counted twice would halve what a tenant may
//! do; one not counted would let a path run unbounded. Counted from the store's history of
//! quota writes (`relevo_tests::race`), on SQLite: the count per path does not depend on the
//! store (the quota race tests cover both backends).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_local::Routing;
use relevo_protocol::McpServer;
use relevo_protocol::quota::Quotas;
use relevo_state::rate::KIND;
use relevo_tests::race::{RaceStore, Seed};
use relevo_tests::*;
use serde_json::{Value, json};

const SCOPES: &[&str] = &["shop", "exports:read", "exports:write"];

/// The shop with its jobs behind one front door, quotas on every tenant and every tool, over a
/// store that keeps the history of its writes.
struct Door {
    router: axum::Router,
    store: Arc<RaceStore<SqliteStore>>,
    queue: SqliteQueue,
    jobs: ShopJobs,
    token: String,
}

fn door(routing: Routing) -> Door {
    let sqlite = SqliteStore::in_memory().unwrap();
    let queue = SqliteQueue::new(sqlite.clone(), 5);
    let store = Arc::new(RaceStore::new(Arc::new(sqlite), Seed(1), Duration::ZERO));
    let jobs = shop_jobs(store.clone(), Arc::new(queue.clone()), None);
    let (settings, issuer, auth) = dev_auth();
    // Leases of one unit: the store's counts are each request's own units (what is asserted).
    let quotas = Quotas {
        max_lease: Some(1),
        ..Quotas::parse(Some("1000/60"), Some("*:1000/60")).unwrap()
    };
    let config = relevo_protocol::ServerConfig {
        quotas,
        ..test_config()
    };
    let server = McpServer::new(jobs.app.clone(), config, test_keys(), Arc::new(auth))
        .with_store(store.clone())
        .with_tasks(jobs.engine.clone());
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        routing,
        ..gateway_options()
    };
    let token = dev_token(&issuer, "acme", "alice", SCOPES);
    Door {
        router: relevo_local::router(server, options),
        store,
        queue,
        jobs,
        token,
    }
}

impl Door {
    /// Quota writes so far, by quota (`tenant`, `tool:NAME`), refused attempts included; every
    /// write on these paths counts one unit.
    fn units(&self) -> BTreeMap<String, usize> {
        let mut units = BTreeMap::new();
        for written in self
            .store
            .history()
            .into_iter()
            .filter(|w| w.call == "count_up_by")
        {
            for (key, _) in written
                .writes
                .into_iter()
                .filter(|(key, _)| key.kind == KIND)
            {
                let quota = key.id.split('/').next().unwrap_or_default().to_string();
                *units.entry(quota).or_insert(0) += 1;
            }
        }
        units
    }

    /// What `request` spent, and its answer.
    async fn spent(
        &self,
        request: http::Request<axum::body::Body>,
    ) -> (BTreeMap<String, usize>, Value) {
        let before = self.units();
        let reply = send(&self.router, request).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        (difference(&before, &self.units()), reply.json())
    }
}

fn difference(
    before: &BTreeMap<String, usize>,
    after: &BTreeMap<String, usize>,
) -> BTreeMap<String, usize> {
    after
        .iter()
        .map(|(quota, n)| (quota.clone(), n - before.get(quota).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

fn one_each(tool: &str) -> BTreeMap<String, usize> {
    BTreeMap::from([("tenant".to_string(), 1), (format!("tool:{tool}"), 1)])
}

fn greet() -> Value {
    json!({ "name": "greet", "arguments": { "name": "Ada" } })
}

#[tokio::test]
async fn a_call_on_the_all_methods_or_its_per_method_function_spends_one_tenant_and_one_tool_unit()
{
    for routing in [Routing::Single, Routing::PerMethod] {
        let d = door(routing);
        let (spent, answer) = d
            .spent(rpc_as(Some(&d.token), 1, "tools/call", greet()))
            .await;
        assert!(answer.get("result").is_some(), "{routing:?}: {answer}");
        assert_eq!(spent, one_each("greet"), "{routing:?}");
    }
}

#[tokio::test]
async fn a_task_augmented_call_spends_one_tenant_and_one_tool_unit_and_its_task_none() {
    for routing in [Routing::Single, Routing::PerMethod] {
        let d = door(routing);
        let mut params = json!({ "name": "export_start", "arguments": { "dataset": "orders", "purpose": "audit" } });
        params["_meta"] =
            envelope(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }));
        let (spent, answer) = d
            .spent(rpc_as(Some(&d.token), 1, "tools/call", params))
            .await;
        assert_eq!(
            answer["result"]["resultType"], "task",
            "{routing:?}: {answer}"
        );
        assert_eq!(spent, one_each("export_start"), "{routing:?}");
        let before = d.units();
        drain(&d.queue, &d.jobs.worker).await;
        assert_eq!(
            difference(&before, &d.units()),
            BTreeMap::new(),
            "{routing:?}: running the task spends nothing"
        );
    }
}

#[tokio::test]
async fn a_call_in_a_2025_11_25_session_spends_one_tenant_and_one_tool_unit() {
    let d = door(Routing::PerMethod);
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "quota-units", "version": "0" } } });
    let reply = send(&d.router, legacy_post(&d.token, None, &initialize)).await;
    let session = reply
        .headers
        .get("mcp-session-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": greet() });
    let (spent, answer) = d.spent(legacy_post(&d.token, Some(&session), &call)).await;
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(spent, one_each("greet"));
}
