//! Every surface of the shop, enumerated from its registry, refuses a token without the scopes
//! the surface declares — whichever method reaches it: tools (`tools/call`, `tools/list`),
//! resources and templates (`resources/read`, the lists, `completion/complete`,
//! `subscriptions/listen`, legacy `resources/subscribe`), prompts (`prompts/get`, the list,
//! completion), task kinds (`tasks/get`, `tasks/update`, `tasks/cancel`), skills (`skills/list`,
//! `skills/get`, `resources/directory/read`; their files are resources and probed as such). The
//! shop declares no skill, so the probed app is the shop plus one skill gated by `shop`.
//!
//! The token of each probe holds every scope the app knows except the surface's own, so the
//! refusal is that scope's doing. A surface declaring no scopes must be in [`PUBLIC`]: adding
//! a surface without deciding who may reach it fails here, not at a customer.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::sync::Arc;

use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_protocol::{App, McpServer, ServerConfig};
use relevo_tests::*;
use serde_json::{Value, json};

/// The surfaces anyone authenticated may reach, and why.
const PUBLIC: &[(&str, &str)] = &[
    ("tool greet", "a demo without data"),
    ("tool add", "a demo without data"),
    ("tool count", "a demo without data"),
    ("tool catalog_list", "the public catalog"),
    (
        "resource relevo://about",
        "a fixed description of the server",
    ),
    (
        "resource relevo://manifest",
        "lists only what its reader may reach (tests/manifest.rs)",
    ),
    ("prompt explain", "a fixed prompt text"),
    (
        "resource ui://relevo-shop/inventory-approval",
        "a static MCP Apps view without data: the proposal comes from the tool result its host \
         holds, the decision from inventory_decide (inventory:approve)",
    ),
];

struct Shop {
    app: App,
    router: axum::Router,
    issuer: relevo_auth::DevIssuer,
    jobs: relevo_tests::ShopJobs,
    queue: SqliteQueue,
}

fn shop() -> Shop {
    let (settings, issuer, auth) = dev_auth();
    let sqlite = SqliteStore::in_memory().unwrap();
    let queue = SqliteQueue::new(sqlite.clone(), 5);
    let jobs = relevo_tests::shop_jobs(Arc::new(sqlite.clone()), Arc::new(queue.clone()), None);
    let app = (*jobs.app).clone().skill(
        relevo_protocol::Skill::new("shop/restock")
            .file(
                "SKILL.md",
                b"---\nname: restock\ndescription: Restock the shop\n---\n# Restock\n",
            )
            .file("steps/one.md", b"# One\n")
            .scopes(&["shop"]),
    );
    let config = ServerConfig {
        listen_max_secs: 0,
        ..ServerConfig::default()
    };
    let server = McpServer::new(app.clone(), config, test_keys(), Arc::new(auth))
        .with_tasks(jobs.engine.clone())
        .with_store(Arc::new(sqlite));
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    Shop {
        app,
        router: relevo_local::router(server, options),
        issuer,
        jobs,
        queue,
    }
}

/// One surface: its name (as in [`PUBLIC`]) and the scopes it declares.
fn surfaces(app: &App) -> Vec<(String, Vec<String>)> {
    let mut all = Vec::new();
    all.extend(
        app.tools()
            .map(|t| (format!("tool {}", t.name), t.scopes.clone())),
    );
    all.extend(
        app.resources()
            .map(|r| (format!("resource {}", r.uri), r.scopes.clone())),
    );
    all.extend(
        app.templates()
            .map(|t| (format!("template {}", t.uri_template), t.scopes.clone())),
    );
    all.extend(
        app.prompts()
            .map(|p| (format!("prompt {}", p.name), p.scopes.clone())),
    );
    all.extend(
        app.skills()
            .map(|s| (format!("skill {}", s.uri), s.scopes.clone())),
    );
    for (kind, access) in app.task_kinds() {
        all.push((format!("task-read {kind}"), access.read.clone()));
        all.push((format!("task-write {kind}"), access.write.clone()));
    }
    all
}

fn every_scope(app: &App) -> BTreeSet<String> {
    surfaces(app)
        .into_iter()
        .flat_map(|(_, scopes)| scopes)
        .collect()
}

fn tasks_meta() -> Value {
    envelope(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} }, "elicitation": {} }))
}

impl Shop {
    /// A token of alice holding every scope the app knows except `without`.
    fn token_without(&self, without: &[String]) -> String {
        let scopes: Vec<String> = every_scope(&self.app)
            .into_iter()
            .filter(|s| !without.contains(s))
            .collect();
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        dev_token(&self.issuer, "acme", "alice", &scopes)
    }

    fn full_token(&self) -> String {
        self.token_without(&[])
    }

    async fn rpc(&self, token: &str, method: &str, mut params: Value) -> Reply {
        params["_meta"] = tasks_meta();
        send(&self.router, rpc_as(Some(token), 1, method, params)).await
    }

    async fn tool(&self, token: &str, name: &str, arguments: Value) -> Value {
        self.rpc(
            token,
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
        .await
        .json()
    }

    async fn drain(&self) {
        use relevo_state::Queue;
        loop {
            let now = relevo_state::Clock::now_unix(&relevo_state::SystemClock);
            let messages = self.queue.receive(10, 60, now).await.unwrap();
            if messages.is_empty() {
                return;
            }
            for message in messages {
                self.jobs
                    .worker
                    .process_message(&message.body)
                    .await
                    .unwrap();
                self.queue.delete(&message.receipt).await.unwrap();
            }
        }
    }

    /// Real data behind every template, made with a full token: (template, a URI of it).
    async fn data(&self) -> Vec<(String, String)> {
        let full = self.full_token();
        let note = self
            .tool(&full, "note_create", json!({ "text": "alice's secret" }))
            .await;
        let cart = self.tool(&full, "cart_create", json!({})).await;
        // Without the Tasks extension in this call the export answers synchronously with its id.
        let params = json!({ "name": "export_start", "arguments": { "dataset": "customers", "purpose": "probe" },
            "_meta": envelope(json!({})) });
        let export = send(&self.router, rpc_as(Some(&full), 1, "tools/call", params))
            .await
            .json();
        self.drain().await;
        let id = |v: &Value, field: &str| {
            v["result"]["structuredContent"][field]
                .as_str()
                .unwrap()
                .to_string()
        };
        vec![
            (
                "notes://{noteId}".into(),
                format!("notes://{}", id(&note, "noteId")),
            ),
            (
                "carts://{cartId}".into(),
                format!("carts://{}", id(&cart, "cartId")),
            ),
            (
                "exports://{jobId}".into(),
                format!("exports://{}", id(&export, "jobId")),
            ),
        ]
    }
}

/// A refusal for want of `scopes`: 403, `insufficient_scope` naming them.
fn assert_refused(reply: &Reply, scopes: &[String], what: &str) {
    assert_eq!(reply.status, 403, "{what}: {}", reply.text);
    let challenge = reply
        .headers
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    assert!(
        challenge.contains("insufficient_scope"),
        "{what}: {challenge}"
    );
    for scope in scopes {
        assert!(
            challenge.contains(scope.as_str()),
            "{what}: the challenge names {scope}: {challenge}"
        );
    }
    assert!(
        !reply.text.contains("secret") && !reply.text.contains("@"),
        "{what} leaked data: {}",
        reply.text
    );
}

fn listed(reply: &Reply, key: &str, field: &str) -> Vec<String> {
    let items = reply.json()["result"][key]
        .as_array()
        .cloned()
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|i| i[field].as_str().map(String::from))
        .collect()
}

#[tokio::test]
async fn every_surface_declares_who_may_reach_it_and_refuses_a_token_without_those_scopes() {
    let shop = shop();
    let data = shop.data().await;
    let full = shop.full_token();
    let mut probed = BTreeSet::new();
    for (surface, scopes) in surfaces(&shop.app) {
        if scopes.is_empty() {
            assert!(
                PUBLIC.iter().any(|(name, _)| *name == surface),
                "{surface} declares no scopes: declare them next to its definition, or list it in PUBLIC with a reason"
            );
            continue;
        }
        let token = shop.token_without(&scopes);
        let (kind, name) = surface.split_once(' ').unwrap();
        match kind {
            "tool" => {
                let reply = shop
                    .rpc(
                        &token,
                        "tools/call",
                        json!({ "name": name, "arguments": {} }),
                    )
                    .await;
                assert_refused(&reply, &scopes, &surface);
                let list = shop.rpc(&token, "tools/list", json!({})).await;
                assert!(
                    !listed(&list, "tools", "name").contains(&name.to_string()),
                    "{surface} is listed"
                );
            }
            "resource" | "template" => {
                let uri = data
                    .iter()
                    .find(|(t, _)| t == name)
                    .map(|(_, u)| u.clone())
                    .unwrap_or_else(|| {
                        // A template this test makes no data for: any match is refused before its handler.
                        filled(name)
                    });
                let reply = shop
                    .rpc(&token, "resources/read", json!({ "uri": uri }))
                    .await;
                assert_refused(&reply, &scopes, &format!("{surface} read as {uri}"));
                assert_eq!(
                    shop.rpc(&full, "resources/read", json!({ "uri": uri }))
                        .await
                        .status,
                    200,
                    "{surface}: the full token reads {uri}"
                );
                let (list, key, field) = if kind == "resource" {
                    ("resources/list", "resources", "uri")
                } else {
                    (
                        "resources/templates/list",
                        "resourceTemplates",
                        "uriTemplate",
                    )
                };
                let reply = shop.rpc(&token, list, json!({})).await;
                assert!(
                    !listed(&reply, key, field).contains(&name.to_string()),
                    "{surface} is listed"
                );
                if kind == "template" {
                    let completion = json!({ "ref": { "type": "ref/resource", "uri": name },
                        "argument": { "name": "x", "value": "" } });
                    let reply = shop.rpc(&token, "completion/complete", completion).await;
                    assert_refused(&reply, &scopes, &format!("{surface} completion"));
                }
                let filter = json!({ "notifications": { "resourceSubscriptions": [uri] } });
                let ack = shop
                    .rpc(&token, "subscriptions/listen", filter)
                    .await
                    .sse_messages();
                assert_eq!(
                    ack[0]["params"]["notifications"],
                    json!({}),
                    "{surface}: a listen stream may not watch it"
                );
            }
            "prompt" => {
                let reply = shop
                    .rpc(&token, "prompts/get", json!({ "name": name }))
                    .await;
                assert_refused(&reply, &scopes, &surface);
                let completion = json!({ "ref": { "type": "ref/prompt", "name": name },
                    "argument": { "name": "x", "value": "" } });
                assert_refused(
                    &shop.rpc(&token, "completion/complete", completion).await,
                    &scopes,
                    &surface,
                );
                let list = shop.rpc(&token, "prompts/list", json!({})).await;
                assert!(
                    !listed(&list, "prompts", "name").contains(&name.to_string()),
                    "{surface} is listed"
                );
            }
            "task-read" | "task-write" => {
                let task = task_of_kind(&shop, &full, name).await;
                let (method, params) = if kind == "task-read" {
                    ("tasks/get", json!({ "taskId": task }))
                } else {
                    ("tasks/cancel", json!({ "taskId": task }))
                };
                assert_refused(
                    &shop.rpc(&token, method, params.clone()).await,
                    &scopes,
                    &surface,
                );
                assert_eq!(
                    shop.rpc(&full, "tasks/get", json!({ "taskId": task }))
                        .await
                        .status,
                    200,
                    "{surface}"
                );
            }
            "skill" => {
                let reply = shop.rpc(&token, "skills/get", json!({ "uri": name })).await;
                assert_refused(&reply, &scopes, &surface);
                let root = name.trim_end_matches("/SKILL.md");
                let reply = shop
                    .rpc(&token, "resources/directory/read", json!({ "uri": root }))
                    .await;
                assert_refused(&reply, &scopes, &format!("{surface} directory {root}"));
                let list = shop.rpc(&token, "skills/list", json!({})).await;
                assert!(
                    !listed(&list, "skills", "uri").contains(&name.to_string()),
                    "{surface} is listed"
                );
                let list = shop.rpc(&full, "skills/list", json!({})).await;
                assert!(
                    listed(&list, "skills", "uri").contains(&name.to_string()),
                    "{surface}: the full token lists it"
                );
            }
            other => panic!("a surface kind this test does not know: {other}"),
        }
        probed.insert(surface);
    }
    assert!(
        probed.len() >= 20,
        "the shop's scoped surfaces were all probed: {probed:?}"
    );
}

/// A URI of `template` with every variable filled.
fn filled(template: &str) -> String {
    let mut uri = String::new();
    let mut in_variable = false;
    for c in template.chars() {
        match c {
            '{' => in_variable = true,
            '}' => {
                in_variable = false;
                uri.push_str("probe");
            }
            _ if !in_variable => uri.push(c),
            _ => {}
        }
    }
    uri
}

/// A task of `kind`, started with the full token.
async fn task_of_kind(shop: &Shop, full: &str, kind: &str) -> String {
    assert_eq!(
        kind,
        relevo_app::export::KIND.name(),
        "a task kind this test cannot start: {kind}"
    );
    let started = shop
        .tool(
            full,
            "export_start",
            json!({ "dataset": "customers", "purpose": "probe" }),
        )
        .await;
    started["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {started}"))
        .to_string()
}

#[tokio::test]
async fn a_token_without_scopes_reads_nothing_through_resources_tasks_or_a_legacy_subscription() {
    let shop = shop();
    let data = shop.data().await;
    let bare = dev_token(&shop.issuer, "acme", "alice", &[]);
    for (_, uri) in &data {
        let reply = shop
            .rpc(&bare, "resources/read", json!({ "uri": uri }))
            .await;
        assert_eq!(reply.status, 403, "{uri}: {}", reply.text);
    }
    let full = shop.full_token();
    let task = task_of_kind(&shop, &full, relevo_app::export::KIND.name()).await;
    shop.drain().await;
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let reply = shop
            .rpc(
                &bare,
                method,
                json!({ "taskId": task, "inputResponses": {} }),
            )
            .await;
        assert_eq!(reply.status, 403, "{method}: {}", reply.text);
    }
    let reader = dev_token(&shop.issuer, "acme", "alice", &["exports:read"]);
    let cancel = shop
        .rpc(&reader, "tasks/cancel", json!({ "taskId": task }))
        .await;
    assert_eq!(
        cancel.status, 403,
        "reading an export does not let one cancel it: {}",
        cancel.text
    );

    // A 2025-11-25 session of the same bare token cannot subscribe to what it cannot read.
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": { "name": "probe", "version": "0" } } });
    let opened = send(&shop.router, legacy_post(&bare, None, &init)).await;
    let session = opened.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let subscribe = json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": { "uri": data[0].1 } });
    let refused = send(&shop.router, legacy_post(&bare, Some(&session), &subscribe)).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
}

/// The manifest lists exactly the surfaces its reader may reach, each with its declared schema,
/// scopes and policies: derived from the app, filtered per read.
/// The documents served beside `/mcp` for discovery before a connection — the server card and
/// its catalogs — are public, like the protected-resource metadata: no token is needed, and
/// nothing in them depends on who asks (no tool, resource, prompt or capability), so one
/// `public` cached copy suits every caller. They read no store and are not admitted against a
/// tenant's quota (no tenant is known); the front door's throttling and their `Cache-Control`
/// bound them.
#[tokio::test]
async fn the_server_card_and_catalogs_are_public_and_the_same_for_every_caller() {
    let shop = shop();
    let everything: Vec<String> = every_scope(&shop.app).into_iter().collect();
    let everything: Vec<&str> = everything.iter().map(String::as_str).collect();
    let full = dev_token(&shop.issuer, "acme", "alice", &everything);
    let none = dev_token(&shop.issuer, "globex", "gina", &[]);
    for path in [
        "/mcp/server-card",
        "/.well-known/ai-catalog.json",
        "/.well-known/mcp/catalog.json",
    ] {
        let mut bodies = Vec::new();
        for token in [None, Some(&full), Some(&none)] {
            let mut request = http::Request::get(path).header("host", "127.0.0.1:8080");
            if let Some(token) = token {
                request = request.header("authorization", format!("Bearer {token}"));
            }
            let reply = send(
                &shop.router,
                request.body(axum::body::Body::empty()).unwrap(),
            )
            .await;
            assert_eq!(reply.status, 200, "{path}: {}", reply.text);
            assert_eq!(
                reply.headers["cache-control"], "public, max-age=3600",
                "{path}"
            );
            bodies.push(reply.text);
        }
        assert!(
            bodies.windows(2).all(|w| w[0] == w[1]),
            "{path}: {bodies:?}"
        );
        for (surface, _) in surfaces(&shop.app) {
            let name = surface.split_once(' ').map_or("", |(_, name)| name);
            assert!(
                !bodies[0].contains(&format!("\"{name}\"")),
                "{path} names {surface}"
            );
        }
    }
}

#[tokio::test]
async fn the_manifest_describes_only_what_its_reader_may_reach() {
    let shop = shop();
    let read = |token: String| {
        let shop = &shop;
        async move {
            let reply = shop
                .rpc(
                    &token,
                    "resources/read",
                    json!({ "uri": "relevo://manifest" }),
                )
                .await
                .json();
            let text = reply["result"]["contents"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("{reply}"))
                .to_string();
            serde_json::from_str::<Value>(&text).unwrap()
        }
    };
    let names = |manifest: &Value, section: &str, key: &str| -> BTreeSet<String> {
        manifest[section]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e[key].as_str().unwrap().to_string())
            .collect()
    };
    let full = read(shop.full_token()).await;
    let text_only: Vec<_> = shop
        .app
        .tools()
        .filter(|t| !relevo_protocol::registry::apps::app_only(&t.meta))
        .collect();
    assert_eq!(
        names(&full, "tools", "name"),
        text_only.iter().map(|t| t.name.clone()).collect(),
        "this reader's client has no MCP Apps: it is shown no app-only tool (tests/listings.rs)"
    );
    for tool in text_only {
        let entry = full["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == tool.name.as_str())
            .unwrap();
        assert_eq!(
            entry["inputSchema"],
            Value::Object(tool.input_schema().clone()),
            "{}",
            tool.name
        );
        assert_eq!(entry["scopes"], json!(tool.scopes), "{}", tool.name);
        assert_eq!(
            entry["invalidates"],
            json!(tool.invalidates),
            "{}",
            tool.name
        );
    }
    let checkout = full["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "cart_checkout")
        .unwrap();
    assert_eq!(
        (
            checkout["cache"].as_str(),
            checkout["destructive"].as_bool()
        ),
        (Some("no-store"), Some(false))
    );
    assert_eq!(
        names(&full, "taskKinds", "kind"),
        BTreeSet::from(["export".to_string()])
    );

    let shopper = read(dev_token(&shop.issuer, "acme", "sam", &["shop"])).await;
    let expected: BTreeSet<String> = shop
        .app
        .tools()
        .filter(|t| t.scopes.iter().all(|s| s == "shop"))
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names(&shopper, "tools", "name"), expected);
    assert!(names(&shopper, "tools", "name").contains("cart_checkout"));
    assert!(
        !names(&shopper, "tools", "name").contains("note_read"),
        "notes need notes:read"
    );
    assert!(
        names(&shopper, "taskKinds", "kind").is_empty(),
        "exports need exports:read"
    );
    assert!(!names(&shopper, "resourceTemplates", "uriTemplate").contains("notes://{noteId}"));

    let writer = read(dev_token(
        &shop.issuer,
        "acme",
        "wes",
        &["notes:read", "notes:write"],
    ))
    .await;
    assert!(names(&writer, "tools", "name").contains("note_read"));
    assert!(
        !names(&writer, "tools", "name").contains("cart_checkout"),
        "carts need shop"
    );
    assert_ne!(
        shopper, writer,
        "two principals read the manifest that is theirs"
    );
}

/// Admission, enumerated: every [`Surface`] the server knows — each method, each 2025-11-25
/// session verb, its GET stream and DELETE, a listen stream's poll, the pages and their sign-in
/// — is either counted against the tenant's request-rate quota or exempt for a stated reason.
/// A tenant over its quota is refused on each counted surface (429 with `Retry-After`, or the
/// stream ends), and nothing of its session is written. A surface added without a probe here
/// fails this test; one added without a decision does not compile (`Surface::admission`).
mod admission {
    use super::*;
    use relevo_protocol::server::{Decision, Surface};
    use relevo_protocol::{ManualClock, quota::Quotas};
    use relevo_state::{Owner, RecordKey, RecordStore};
    use relevo_tests::race::{Backend, Both, backend};
    use std::time::{Duration, Instant};

    /// Inside one 60 s window of the quota.
    const NOW: u64 = 1_800_000_010;
    /// The tenant's budget: enough for the setup (initialize, a subscription, a cart, a listen).
    const LIMIT: u32 = 8;

    struct Deployment {
        router: axum::Router,
        store: Arc<Both>,
        token: String,
        other: String,
    }

    async fn deployment(kind: Backend) -> Deployment {
        let store = Arc::new(Both(backend(kind).await));
        let (settings, issuer, auth) = dev_auth();
        let auth = Arc::new(auth);
        let clock = ManualClock::at(NOW);
        let mut ports = relevo_protocol::Ports::new(Some(store.clone())).with_security(
            auth.clone(),
            test_keys(),
            ServerConfig::default().origin_policy,
        );
        ports.clock = Arc::new(clock.clone());
        let app = relevo_app::app_with(
            &ports,
            &relevo_app::ShopConfig {
                export_window: Duration::ZERO,
            },
        );
        let pages = app.find_pages().cloned();
        let quotas = Quotas::parse(Some(&format!("{LIMIT}/60")), None).unwrap();
        let config = ServerConfig {
            quotas,
            listen_max_secs: 20,
            listen_poll_ms: 100,
            ..ServerConfig::default()
        };
        let server = McpServer::new(app, config, test_keys(), auth)
            .with_store(store.clone())
            .with_clock(Arc::new(clock));
        let options = relevo_local::GatewayOptions {
            auth: Some(settings),
            pages,
            ..gateway_options()
        };
        let token = dev_token(
            &issuer,
            "acme",
            "alice",
            &["shop", "inventory:approve", "inventory:write"],
        );
        let other = dev_token(&issuer, "globex", "gina", &["shop"]);
        Deployment {
            router: relevo_local::router(server, options),
            store,
            token,
            other,
        }
    }

    fn legacy(id: u64, method: &str, params: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    }

    fn session_request(
        token: &str,
        verb: http::Method,
        session: &str,
    ) -> http::Request<axum::body::Body> {
        http::Request::builder()
            .method(verb)
            .uri("/mcp")
            .header("host", "127.0.0.1:8080")
            .header("accept", "text/event-stream")
            .header("authorization", format!("Bearer {token}"))
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(axum::body::Body::empty())
            .unwrap()
    }

    fn page(
        token: &str,
        verb: http::Method,
        path: &str,
        body: &str,
        bearer: bool,
    ) -> http::Request<axum::body::Body> {
        let mut request = http::Request::builder()
            .method(verb)
            .uri(path)
            .header("host", "127.0.0.1:8080")
            .header("origin", "http://127.0.0.1:8080")
            .header("content-type", "application/x-www-form-urlencoded");
        if bearer {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        request
            .body(axum::body::Body::from(body.to_string()))
            .unwrap()
    }

    fn initialize() -> Value {
        legacy(
            0,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t" } }),
        )
    }

    fn assert_spent(reply: &Reply, what: &str) {
        assert_eq!(
            reply.status, 429,
            "{what} must be refused over quota: {} {}",
            reply.status, reply.text
        );
        assert!(
            reply.headers.contains_key("retry-after"),
            "{what}: Retry-After"
        );
    }

    /// What the over-quota probes must leave as it was: the session record and the slot records.
    async fn written(store: &Both, session: &str) -> Vec<Option<(u64, Value)>> {
        let owner = Owner::personal("acme", "alice");
        let keys = [
            RecordKey::new(owner.clone(), "mcp-session", session),
            RecordKey::new(owner.clone(), "mcp-sessions", "open"),
            RecordKey::new(owner.clone(), "session-streams", "open"),
        ];
        let mut found = Vec::new();
        for key in &keys {
            found.push(
                store
                    .get(key, NOW)
                    .await
                    .unwrap()
                    .map(|r| (r.revision, r.body)),
            );
        }
        found
    }

    async fn every_surface_is_admitted_against_the_tenant_quota(kind: Backend) {
        let d = deployment(kind).await;
        let (router, token) = (&d.router, d.token.as_str());
        // The setup, within the budget: a session with a subscription, a cart, a listen stream.
        let opened = send(router, legacy_post(token, None, &initialize())).await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        let session = opened.headers["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_string();
        let subscribe = legacy(1, "resources/subscribe", json!({ "uri": "carts://c1" }));
        assert_eq!(
            send(router, legacy_post(token, Some(&session), &subscribe))
                .await
                .status,
            200
        );
        let cart = send(
            router,
            rpc_as(
                Some(token),
                2,
                "tools/call",
                json!({ "name": "cart_create", "arguments": {} }),
            ),
        )
        .await
        .json()["result"]["structuredContent"]["cartId"]
            .as_str()
            .unwrap()
            .to_string();
        let listen = rpc_as(
            Some(token),
            3,
            "subscriptions/listen",
            json!({ "notifications": { "resourceSubscriptions": [format!("carts://{cart}")] } }),
        );
        let mut stream = Some({
            let router = router.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let reply = send(&router, listen).await;
                (reply, started.elapsed())
            })
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Spend what is left.
        let mut spent = 0;
        while send(
            router,
            legacy_post(token, Some(&session), &legacy(4, "ping", json!({}))),
        )
        .await
        .status
            == 200
        {
            spent += 1;
            assert!(spent <= LIMIT, "the quota never ran out");
        }
        let before = written(&d.store, &session).await;

        let mut probed = BTreeSet::new();
        for surface in Surface::all() {
            let name = surface.name();
            let reason = match surface.admission() {
                Decision::Counted => None,
                Decision::Exempt(reason) => Some(reason),
            };
            assert!(
                reason.is_none_or(|r| !r.is_empty()),
                "{name}: an exemption says why"
            );
            let reply = match surface {
                Surface::Method(method) => {
                    let params = match method.as_str() {
                        "tools/call" => json!({ "name": "greet", "arguments": { "name": "x" } }),
                        "resources/read" => json!({ "uri": "relevo://about" }),
                        "prompts/get" => json!({ "name": "explain", "arguments": {} }),
                        "completion/complete" => {
                            json!({ "ref": { "type": "ref/prompt", "name": "explain" },
                            "argument": { "name": "topic", "value": "" } })
                        }
                        "tasks/get" | "tasks/cancel" => {
                            json!({ "taskId": "t1", "_meta": tasks_meta() })
                        }
                        "tasks/update" => {
                            json!({ "taskId": "t1", "inputResponses": {}, "_meta": tasks_meta() })
                        }
                        "subscriptions/listen" => json!({ "notifications": {} }),
                        _ => json!({}),
                    };
                    send(router, rpc_as(Some(token), 5, method.as_str(), params)).await
                }
                Surface::LegacyInitialize => {
                    send(router, legacy_post(token, None, &initialize())).await
                }
                Surface::LegacyPing => {
                    send(
                        router,
                        legacy_post(token, Some(&session), &legacy(6, "ping", json!({}))),
                    )
                    .await
                }
                Surface::LegacySetLevel => {
                    let body = legacy(7, "logging/setLevel", json!({ "level": "debug" }));
                    send(router, legacy_post(token, Some(&session), &body)).await
                }
                Surface::LegacySubscribe => {
                    let body = legacy(8, "resources/subscribe", json!({ "uri": "carts://c2" }));
                    send(router, legacy_post(token, Some(&session), &body)).await
                }
                Surface::LegacyUnsubscribe => {
                    let body = legacy(9, "resources/unsubscribe", json!({ "uri": "carts://c1" }));
                    send(router, legacy_post(token, Some(&session), &body)).await
                }
                Surface::LegacyAnswer => {
                    let body = json!({ "jsonrpc": "2.0", "id": "r1", "result": {} });
                    send(router, legacy_post(token, Some(&session), &body)).await
                }
                Surface::LegacyUnknown => {
                    send(
                        router,
                        legacy_post(token, Some(&session), &legacy(10, "made/up", json!({}))),
                    )
                    .await
                }
                Surface::SessionStream => {
                    send(router, session_request(token, http::Method::GET, &session)).await
                }
                Surface::SessionDelete => {
                    send(
                        router,
                        session_request(token, http::Method::DELETE, &session),
                    )
                    .await
                }
                Surface::ListenPoll => {
                    // The stream opened before the quota ran out ends at its next poll.
                    let (reply, lasted) =
                        tokio::time::timeout(Duration::from_secs(10), stream.take().unwrap())
                            .await
                            .unwrap()
                            .unwrap();
                    assert!(
                        lasted < Duration::from_secs(10),
                        "a spent quota ends the listen stream: {lasted:?}"
                    );
                    assert!(
                        reply.json().get("result").is_some(),
                        "it ends with the listen result: {}",
                        reply.text
                    );
                    probed.insert(name);
                    continue;
                }
                Surface::Page => {
                    let signin = send(
                        router,
                        page(
                            token,
                            http::Method::POST,
                            "/approvals/login",
                            &format!("token={token}"),
                            false,
                        ),
                    )
                    .await;
                    assert_spent(&signin, "the pages' sign-in");
                    send(
                        router,
                        page(token, http::Method::GET, "/approvals/op-1", "", true),
                    )
                    .await
                }
            };
            if reason.is_none() {
                assert_spent(&reply, &name);
            }
            probed.insert(name);
        }
        let expected: BTreeSet<String> = Surface::all().into_iter().map(Surface::name).collect();
        assert_eq!(probed, expected, "every surface is probed");
        assert_eq!(
            written(&d.store, &session).await,
            before,
            "nothing of the session was written over quota"
        );

        // Another tenant is not affected.
        let theirs = send(router, legacy_post(&d.other, None, &initialize())).await;
        assert_eq!(theirs.status, 200, "{}", theirs.text);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn every_surface_is_admitted_against_the_tenant_quota_on_sqlite() {
        every_surface_is_admitted_against_the_tenant_quota(Backend::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn every_surface_is_admitted_against_the_tenant_quota_on_dynamodb() {
        every_surface_is_admitted_against_the_tenant_quota(Backend::Dynamo).await;
    }
}
