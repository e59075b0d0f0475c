//! Request-rate quotas hold across instances: four server instances (separate `McpServer`
//! values, as four Lambda environments are) over one store, sixteen concurrent clients, the
//! clock fixed inside one window, on the SQLite store and on DynamoDB (moto, started by
//! `make test`). Every store write is recorded (`relevo_tests::race`, seeded pauses before each
//! call) and the invariant is checked over that history: no window's count is ever written
//! twice or above its limit, so no more than the limit is admitted.
//!
//! A refusal is HTTP 429 with `Retry-After` (seconds to the next window) and JSON-RPC `-31002`
//! with `data {retryable, reason: "rate_limited", scope, limit, windowSecs, retryAfterSecs}`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use relevo_protocol::quota::Quotas;
use relevo_protocol::{ManualClock, McpServer};
use relevo_state::rate::KIND;
use relevo_tests::race::{Backend, Both, RaceStore, Seed, Written, backend};
use relevo_tests::*;
use serde_json::{Value, json};

/// Inside the window [1_800_000_000, 1_800_000_060) of a 60 s quota: 50 s to the next one.
const NOW: u64 = 1_800_000_010;
const CLIENTS: usize = 16;
const INSTANCES: usize = 4;

/// Four instances of the shop over one recorded store, with `quotas` and a clock fixed at [`NOW`].
struct Deployment {
    store: Arc<RaceStore<Both>>,
    instances: Vec<axum::Router>,
    issuer: relevo_auth::DevIssuer,
    clock: ManualClock,
}

async fn deployment(kind: Backend, seed: Seed, quotas: Quotas) -> Deployment {
    let store = Arc::new(RaceStore::new(
        Arc::new(Both(backend(kind).await)),
        seed,
        Duration::from_millis(1),
    ));
    let clock = ManualClock::at(NOW);
    let (settings, issuer, _) = dev_auth();
    let config = relevo_protocol::ServerConfig {
        quotas,
        ..test_config()
    };
    let instances = (0..INSTANCES)
        .map(|_| {
            let keys = Arc::new(relevo_auth::StaticKeySource(issuer.jwks()));
            let auth = Arc::new(relevo_auth::BearerAuthenticator::new(
                settings.clone(),
                keys,
            ));
            let ports = relevo_protocol::Ports::new(Some(store.clone()));
            let server = McpServer::new(
                relevo_app::features(&ports),
                config.clone(),
                test_keys(),
                auth,
            )
            .with_store(store.clone())
            .with_clock(Arc::new(clock.clone()));
            let options = relevo_local::GatewayOptions {
                auth: Some(settings.clone()),
                ..gateway_options()
            };
            relevo_local::router(server, options)
        })
        .collect();
    Deployment {
        store,
        instances,
        issuer,
        clock,
    }
}

fn quotas(per_tenant: &str, per_tool: &str) -> Quotas {
    Quotas::parse(Some(per_tenant), Some(per_tool)).expect("the test's quotas are valid")
}

/// One request of `method` (a tool's name for `tools/call`).
#[derive(Debug, Clone)]
struct Ask {
    token: String,
    method: &'static str,
    tool: Option<&'static str>,
}

fn greet(token: &str) -> Ask {
    Ask {
        token: token.into(),
        method: "tools/call",
        tool: Some("greet"),
    }
}

fn add(token: &str) -> Ask {
    Ask {
        token: token.into(),
        method: "tools/call",
        tool: Some("add"),
    }
}

/// What a request got: its instance, status, `Retry-After` and body.
#[derive(Debug)]
struct Answer {
    instance: usize,
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

impl Answer {
    fn admitted(&self) -> bool {
        self.status == 200 && self.body.get("result").is_some()
    }
}

impl Deployment {
    fn token(&self, tenant: &str, subject: &str) -> String {
        dev_token(&self.issuer, tenant, subject, &["shop"])
    }

    async fn send(&self, instance: usize, ask: &Ask) -> Answer {
        let params = match ask.tool {
            Some("greet") => json!({ "name": "greet", "arguments": { "name": "Ada" } }),
            Some("add") => json!({ "name": "add", "arguments": { "a": 1, "b": 2 } }),
            Some(other) => json!({ "name": other, "arguments": {} }),
            None => json!({}),
        };
        let reply = send(
            &self.instances[instance],
            rpc_as(Some(&ask.token), 1, ask.method, params),
        )
        .await;
        let retry_after = reply
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        Answer {
            instance,
            status: reply.status.as_u16(),
            retry_after,
            body: reply.json(),
        }
    }

    /// Every request of `asks`, sent by [`CLIENTS`] concurrent clients, request `n` to instance
    /// `n % 4`; the answers in the order of `asks`.
    async fn burst(self: &Arc<Self>, asks: Vec<Ask>) -> Vec<(Ask, Answer)> {
        self.burst_from(CLIENTS, asks).await
    }

    /// [`Deployment::burst`] with `clients` concurrent clients.
    async fn burst_from(
        self: &Arc<Self>,
        clients_at_once: usize,
        asks: Vec<Ask>,
    ) -> Vec<(Ask, Answer)> {
        let asks = Arc::new(asks);
        let next = Arc::new(AtomicUsize::new(0));
        let mut clients = tokio::task::JoinSet::new();
        for _ in 0..clients_at_once {
            let (deployment, asks, next) = (self.clone(), asks.clone(), next.clone());
            clients.spawn(async move {
                let mut answered = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    let Some(ask) = asks.get(n) else {
                        return answered;
                    };
                    answered.push((n, deployment.send(n % INSTANCES, ask).await));
                }
            });
        }
        let mut answers: Vec<(usize, Answer)> =
            clients.join_all().await.into_iter().flatten().collect();
        answers.sort_by_key(|(n, _)| *n);
        answers
            .into_iter()
            .map(|(n, answer)| (asks[n].clone(), answer))
            .collect()
    }

    /// Invariant over the recorded history: each window record's applied writes set the counts
    /// 1, 2, …, each once (no two admissions counted as one), never above `limit`. Returns the
    /// highest count per record.
    fn windows_within(&self, seed: Seed, limit: impl Fn(&str) -> u64) -> BTreeMap<String, u64> {
        let mut counts: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (key, body) in self.store.applied(KIND) {
            let count = body["count"]
                .as_u64()
                .expect("a window record holds a count");
            counts.entry(key.storage_key()).or_default().push(count);
        }
        counts
            .into_iter()
            .map(|(key, mut written)| {
                // The history is in the order calls returned, not the order the store applied them.
                written.sort_unstable();
                let max = limit(&key);
                let expected: Vec<u64> = (1..=written.len() as u64).collect();
                seed.check(
                    written == expected,
                    format!("{key}: counts written {written:?}, not 1, 2, … each once"),
                );
                seed.check(
                    written.len() as u64 <= max,
                    format!("{key}: {} admitted over a limit of {max}", written.len()),
                );
                (key, written.len() as u64)
            })
            .collect()
    }
}

/// The refusal's wire shape, in full: 429, `Retry-After`, `-31002` and its data.
fn assert_rate_limited(seed: Seed, answer: &Answer, scope: &str, tool: Option<&str>, limit: u64) {
    let what = format!("{answer:?}");
    seed.check(answer.status == 429, format!("refused with 429: {what}"));
    seed.check(
        answer.retry_after.as_deref() == Some("50"),
        format!("Retry-After is the 50 s to the next window: {what}"),
    );
    let error = &answer.body["error"];
    seed.check(error["code"] == -31002, format!("code -31002: {what}"));
    let mut data = json!({ "retryable": true, "reason": "rate_limited", "scope": scope, "limit": limit,
        "windowSecs": 60, "retryAfterSecs": 50 });
    if let Some(tool) = tool {
        data["tool"] = json!(tool);
    }
    seed.check(
        error["data"] == data,
        format!("data says which quota and when: {what}"),
    );
}

/// 100 `tools/call` of one tenant (two principals) at a tenant quota of 25 per 60 s: exactly 25
/// admitted, on more than one instance; the other 75 refused with the full 429; another tenant
/// is unaffected; the next window admits again.
async fn a_tenant_quota_admits_exactly_its_limit_across_instances(kind: Backend) {
    let seed = Seed::from_env(&format!("tenant quota on {kind:?}"));
    let deployment = Arc::new(deployment(kind, seed, quotas("25/60", "")).await);
    let (alice, bob) = (
        deployment.token("acme", "alice"),
        deployment.token("acme", "bob"),
    );
    let asks = (0..100)
        .map(|n| greet(if n % 2 == 0 { &alice } else { &bob }))
        .collect();
    let answers = deployment.burst(asks).await;

    let admitted: Vec<&Answer> = answers
        .iter()
        .map(|(_, a)| a)
        .filter(|a| a.admitted())
        .collect();
    seed.check(
        admitted.len() == 25,
        format!("{} admitted, not 25", admitted.len()),
    );
    let serving: std::collections::BTreeSet<usize> = admitted.iter().map(|a| a.instance).collect();
    seed.check(
        serving.len() > 1,
        format!("admissions came from one instance only: {serving:?}"),
    );
    for (_, answer) in answers.iter().filter(|(_, a)| !a.admitted()) {
        assert_rate_limited(seed, answer, "tenant", None, 25);
    }
    let windows = deployment.windows_within(seed, |_| 25);
    seed.check(
        windows.values().copied().eq([25]),
        format!("one window record counted 25: {windows:?}"),
    );

    let globex = deployment
        .send(3, &greet(&deployment.token("globex", "gina")))
        .await;
    seed.check(
        globex.admitted(),
        format!("another tenant has its own budget: {globex:?}"),
    );
    let still = deployment.send(1, &greet(&alice)).await;
    assert_rate_limited(seed, &still, "tenant", None, 25);
    deployment.clock.advance(50);
    let next = deployment.send(2, &greet(&bob)).await;
    seed.check(
        next.admitted(),
        format!("the next window admits again: {next:?}"),
    );
}

/// A tool's quota is its own: at `greet:5/60,*:15/60` and 25 per tenant, 20 `greet` and 20 `add`
/// at once admit 5 and 15 (refusals say `scope: tool` and the tool), and spend only 20 of the
/// tenant's 25; a made-up tool name spends no tool quota and writes no record; then
/// `tools/list` spends the tenant's last 4 and is refused with `scope: tenant`.
async fn a_tool_quota_is_counted_apart_from_the_tenant_quota(kind: Backend) {
    let seed = Seed::from_env(&format!("tool quota on {kind:?}"));
    let deployment = Arc::new(deployment(kind, seed, quotas("25/60", "greet:5/60,*:15/60")).await);
    let alice = deployment.token("acme", "alice");
    let asks = (0..40)
        .map(|n| {
            if n % 2 == 0 {
                greet(&alice)
            } else {
                add(&alice)
            }
        })
        .collect();
    let answers = deployment.burst(asks).await;
    for (tool, limit) in [("greet", 5), ("add", 15)] {
        let calls: Vec<&Answer> = answers
            .iter()
            .filter(|(ask, _)| ask.tool == Some(tool))
            .map(|(_, a)| a)
            .collect();
        let admitted = calls.iter().filter(|a| a.admitted()).count();
        seed.check(
            admitted == limit,
            format!("{tool}: {admitted} admitted, not {limit}"),
        );
        for answer in calls.iter().filter(|a| !a.admitted()) {
            assert_rate_limited(seed, answer, "tool", Some(tool), limit as u64);
        }
    }

    let unknown = deployment
        .send(
            0,
            &Ask {
                token: alice.clone(),
                method: "tools/call",
                tool: Some("no_such_tool"),
            },
        )
        .await;
    seed.check(
        unknown.status == 200 && unknown.body["error"]["code"] == -32602,
        format!("unknown tool: {unknown:?}"),
    );

    let lists = (0..8)
        .map(|_| Ask {
            token: alice.clone(),
            method: "tools/list",
            tool: None,
        })
        .collect();
    let answers = deployment.burst(lists).await;
    let admitted = answers.iter().filter(|(_, a)| a.admitted()).count();
    seed.check(
        admitted == 4,
        format!("tools/list: {admitted} admitted, not the tenant's last 4"),
    );
    for (_, answer) in answers.iter().filter(|(_, a)| !a.admitted()) {
        assert_rate_limited(seed, answer, "tenant", None, 25);
    }

    let windows = deployment.windows_within(seed, |key| {
        if key.contains("tool:greet") {
            5
        } else if key.contains("tool:") {
            15
        } else {
            25
        }
    });
    let scopes: Vec<(&str, u64)> = windows
        .iter()
        .map(|(key, count)| (key.rsplit_once("|i").map_or("", |(_, id)| id), *count))
        .map(|(id, count)| (id.split_once(':').map_or(id, |(_, rest)| rest), count))
        .collect();
    seed.check(
        scopes
            == [
                ("tenant/60@1800000000", 25),
                ("tool:add/60@1800000000", 15),
                ("tool:greet/60@1800000000", 5),
            ],
        format!("window records and their final counts: {scopes:?}"),
    );
}

/// Concurrent callers of the hot-burst test.
const CALLERS: usize = 64;

/// A burst of honest callers of one tenant on one hot window record: [`CALLERS`] concurrent
/// clients over four instances, 128 `tools/call` at a tenant quota of 40 per 60 s. Exactly 40
/// are admitted and every other answer is the full 429: the quota itself never answers
/// contention (503). A window of 40 is leased one unit at a time (`lease_cap`), so each
/// admission is one write (no read-then-write, no retry) and the counts written are 1..=40, each
/// once; a refused instance writes at most twice more, then refuses from memory.
async fn a_burst_of_callers_on_one_window_gets_only_admissions_and_429s(kind: Backend) {
    let seed = Seed::from_env(&format!("burst of {CALLERS} callers on {kind:?}"));
    let deployment = Arc::new(deployment(kind, seed, quotas("40/60", "")).await);
    let tokens: Vec<String> = (0..8)
        .map(|n| deployment.token("acme", &format!("caller{n}")))
        .collect();
    let asks: Vec<Ask> = (0..128).map(|n| greet(&tokens[n % tokens.len()])).collect();
    let requests = asks.len();
    let answers = deployment.burst_from(CALLERS, asks).await;

    let admitted = answers.iter().filter(|(_, a)| a.admitted()).count();
    let unavailable: Vec<&Answer> = answers
        .iter()
        .map(|(_, a)| a)
        .filter(|a| a.status == 503)
        .collect();
    seed.check(
        unavailable.is_empty(),
        format!(
            "{} answered 503 by the quota itself: {unavailable:?}",
            unavailable.len()
        ),
    );
    seed.check(admitted == 40, format!("{admitted} admitted, not 40"));
    for (_, answer) in answers.iter().filter(|(_, a)| !a.admitted()) {
        assert_rate_limited(seed, answer, "tenant", None, 40);
    }
    let windows = deployment.windows_within(seed, |_| 40);
    seed.check(
        windows.values().copied().eq([40]),
        format!("one window record counted 40: {windows:?}"),
    );

    let window_calls: Vec<Written> = deployment
        .store
        .history()
        .into_iter()
        .filter(|w| w.writes.iter().any(|(key, _)| key.kind == KIND))
        .collect();
    let applied = window_calls.iter().filter(|w| w.applied).count();
    let refused = window_calls.len() - applied;
    seed.check(
        applied == 40,
        format!("{applied} writes applied: a window of 40 takes leases of 1, one per admission"),
    );
    seed.check(
        refused <= INSTANCES * 2,
        format!(
            "{refused} refused writes for {requests} requests on {INSTANCES} instances: once an \
             instance is refused (at most its lease, then one unit) it refuses from memory"
        ),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quotas_hold_across_instances_on_sqlite() {
    a_tenant_quota_admits_exactly_its_limit_across_instances(Backend::Sqlite).await;
    a_tool_quota_is_counted_apart_from_the_tenant_quota(Backend::Sqlite).await;
    a_burst_of_callers_on_one_window_gets_only_admissions_and_429s(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quotas_hold_across_instances_on_dynamodb() {
    a_tenant_quota_admits_exactly_its_limit_across_instances(Backend::Dynamo).await;
    a_tool_quota_is_counted_apart_from_the_tenant_quota(Backend::Dynamo).await;
    a_burst_of_callers_on_one_window_gets_only_admissions_and_429s(Backend::Dynamo).await;
}

/// Without a quota configured, serving a request writes no window record (the bench pays
/// nothing for quotas it does not use).
#[tokio::test]
async fn no_quota_configured_writes_nothing() {
    let seed = Seed::from_env("no quota");
    let deployment = Arc::new(deployment(Backend::Sqlite, seed, Quotas::default()).await);
    let alice = deployment.token("acme", "alice");
    let answers = deployment
        .burst((0..20).map(|_| greet(&alice)).collect())
        .await;
    assert!(
        answers.iter().all(|(_, a)| a.admitted()),
        "every call is served"
    );
    assert!(
        deployment.store.history().is_empty(),
        "no store write: {:?}",
        deployment.store.history()
    );
}
