//! What a client may learn from every listing and document the server answers, for a client
//! without the MCP Apps extension and for a token without a scope: nothing app-only (an
//! app-only tool, a view, a `_meta.ui`) and nothing out of scope appears anywhere.
//!
//! The enumeration is complete by construction: [`probe`] classifies every [`Method`] in an
//! exhaustive `match` (a method added to the method table does not compile here until it is
//! classified), and the test walks [`Method::ALL`], probing each method that lists or describes
//! surfaces and asserting that each other one is named with the reason it lists nothing. The
//! documents served beside `/mcp` (server card, catalogs, protected-resource metadata) are
//! probed too. Refusals of the surfaces themselves (a call, a read, a get) are
//! `tests/surfaces.rs`'s.
//!
//! On the old code the manifest (`relevo://manifest`) listed `inventory_decide`, an app-only
//! tool, with its schema and `_meta.ui`, to a text-only client that `tools/list` hid it from;
//! and `resources/list` listed the approval view to it.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::sync::Arc;

use relevo_embedded::{SqliteQueue, SqliteStore};
use relevo_protocol::registry::apps;
use relevo_protocol::{App, McpServer, Method, ServerConfig};
use relevo_tests::*;
use serde_json::{Value, json};

/// How a method is probed for what it tells its caller about the app's surfaces.
enum Probe {
    /// A list: the result key of its items, the field naming each, and its params.
    List(&'static str, &'static str, fn(&App) -> Vec<Value>),
    /// A description of the server that must name no surface at all.
    Describes,
    /// A document read by URI that describes surfaces: `relevo://manifest`.
    Manifest,
    /// Completion of a prompt's or a template's argument: it must not know a surface the
    /// caller may not see.
    Completion,
    /// Not a listing: it answers about the one surface it names (refused by `surfaces.rs`), or
    /// streams notifications about what the caller already named.
    NotAListing(&'static str),
}

/// Every method, classified. Exhaustive on purpose: no `_` arm.
fn probe(method: Method) -> Probe {
    match method {
        Method::ToolsList => Probe::List("tools", "name", |_| vec![json!({})]),
        Method::ResourcesList => Probe::List("resources", "uri", |_| vec![json!({})]),
        Method::ResourcesTemplatesList => {
            Probe::List("resourceTemplates", "uriTemplate", |_| vec![json!({})])
        }
        Method::PromptsList => Probe::List("prompts", "name", |_| vec![json!({})]),
        Method::SkillsList => Probe::List("skills", "uri", |_| vec![json!({})]),
        Method::ResourcesDirectoryRead => Probe::List("resources", "uri", |app| {
            app.skills()
                .map(|s| json!({ "uri": s.uri.trim_end_matches("/SKILL.md") }))
                .collect()
        }),
        Method::Discover => Probe::Describes,
        Method::ResourcesRead => Probe::Manifest,
        Method::Complete => Probe::Completion,
        Method::ToolsCall => Probe::NotAListing("runs the one tool it names"),
        Method::PromptsGet => Probe::NotAListing("renders the one prompt it names"),
        Method::SkillsGet => Probe::NotAListing("answers the one skill it names"),
        Method::SubscriptionsListen => {
            Probe::NotAListing("streams changes of what the caller names and may read")
        }
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => {
            Probe::NotAListing("answers the caller's own task it names")
        }
    }
}

/// The documents served beside `/mcp` without a token.
const DOCUMENTS: &[&str] = &[
    "/mcp/server-card",
    "/.well-known/ai-catalog.json",
    "/.well-known/mcp/catalog.json",
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
];

struct Shop {
    app: App,
    router: axum::Router,
    issuer: relevo_auth::DevIssuer,
}

fn shop() -> Shop {
    let (settings, issuer, auth) = dev_auth();
    let sqlite = SqliteStore::in_memory().unwrap();
    let queue = SqliteQueue::new(sqlite.clone(), 5);
    let jobs = relevo_tests::shop_jobs(Arc::new(sqlite.clone()), Arc::new(queue), None);
    let app = (*jobs.app).clone().skill(
        relevo_protocol::Skill::new("shop/restock")
            .file(
                "SKILL.md",
                b"---\nname: restock\ndescription: Restock the shop\n---\n# Restock\n",
            )
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
    }
}

/// Every surface: what names it in a listing, and the scopes it declares.
fn surfaces(app: &App) -> Vec<(String, Vec<String>)> {
    let mut all: Vec<(String, Vec<String>)> = Vec::new();
    all.extend(app.tools().map(|t| (t.name.clone(), t.scopes.clone())));
    all.extend(app.resources().map(|r| (r.uri.clone(), r.scopes.clone())));
    all.extend(
        app.templates()
            .map(|t| (t.uri_template.clone(), t.scopes.clone())),
    );
    all.extend(app.prompts().map(|p| (p.name.clone(), p.scopes.clone())));
    all.extend(app.skills().map(|s| (s.uri.clone(), s.scopes.clone())));
    all.extend(
        app.task_kinds()
            .map(|(kind, access)| (kind.to_string(), access.read.clone())),
    );
    all
}

/// What only an MCP Apps host may see: app-only tools and views.
fn app_only(app: &App) -> BTreeSet<String> {
    let tools = app
        .tools()
        .filter(|t| apps::app_only(&t.meta))
        .map(|t| t.name.clone());
    let views = app
        .resources()
        .filter(|r| apps::app_only_resource(&r.uri, r.mime_type.as_deref()))
        .map(|r| r.uri.clone());
    let templates = app
        .templates()
        .filter(|t| apps::app_only_resource(&t.uri_template, t.mime_type.as_deref()))
        .map(|t| t.uri_template.clone());
    tools.chain(views).chain(templates).collect()
}

fn every_scope(app: &App) -> BTreeSet<String> {
    surfaces(app).into_iter().flat_map(|(_, s)| s).collect()
}

/// One reader: a client with or without the Apps extension, and a token without `missing`.
struct Reader {
    apps: bool,
    missing: Option<String>,
    token: String,
}

impl Reader {
    fn meta(&self) -> Value {
        let mut extensions = json!({ "io.modelcontextprotocol/tasks": {} });
        if self.apps {
            extensions[apps::EXTENSION] = json!({ "mimeTypes": [apps::MIME_TYPE] });
        }
        envelope(json!({ "extensions": extensions, "elicitation": {} }))
    }

    /// What this reader must not learn of `app`.
    fn hidden(&self, app: &App) -> BTreeSet<String> {
        let mut hidden = if self.apps {
            BTreeSet::new()
        } else {
            app_only(app)
        };
        if let Some(missing) = &self.missing {
            hidden.extend(
                surfaces(app)
                    .into_iter()
                    .filter(|(_, scopes)| scopes.contains(missing))
                    .map(|(name, _)| name),
            );
        }
        hidden
    }

    fn describe(&self) -> String {
        format!(
            "{} client, token without {:?}",
            if self.apps { "an Apps" } else { "a text-only" },
            self.missing
        )
    }
}

impl Shop {
    fn readers(&self) -> Vec<Reader> {
        let scopes = every_scope(&self.app);
        let token = |missing: Option<&String>| {
            let held: Vec<&str> = scopes
                .iter()
                .filter(|s| Some(*s) != missing)
                .map(String::as_str)
                .collect();
            dev_token(&self.issuer, "acme", "alice", &held)
        };
        let mut readers = Vec::new();
        for apps in [false, true] {
            readers.push(Reader {
                apps,
                missing: None,
                token: token(None),
            });
            for scope in &scopes {
                readers.push(Reader {
                    apps,
                    missing: Some(scope.clone()),
                    token: token(Some(scope)),
                });
            }
        }
        readers
    }

    async fn rpc(&self, reader: &Reader, method: &str, mut params: Value) -> Reply {
        params["_meta"] = reader.meta();
        send(&self.router, rpc_as(Some(&reader.token), 1, method, params)).await
    }

    /// Every item of a list, following its cursor.
    async fn list_all(
        &self,
        reader: &Reader,
        method: &str,
        key: &str,
        params: &Value,
    ) -> Vec<Value> {
        let mut items = Vec::new();
        let mut params = params.clone();
        loop {
            let reply = self.rpc(reader, method, params.clone()).await.json();
            let Some(result) = reply.get("result") else {
                return items; // refused outright: it lists nothing
            };
            items.extend(result[key].as_array().cloned().unwrap_or_default());
            match result["nextCursor"].as_str() {
                Some(cursor) => params["cursor"] = json!(cursor),
                None => return items,
            }
        }
    }
}

/// True when `value` holds MCP Apps' `_meta.ui` (or its flat key) anywhere.
fn carries_ui_meta(value: &Value) -> bool {
    match value {
        Value::Object(fields) => {
            fields.get("_meta").is_some_and(|meta| {
                meta.get(apps::META_KEY).is_some() || meta.get(apps::FLAT_META_KEY).is_some()
            }) || fields.values().any(carries_ui_meta)
        }
        Value::Array(items) => items.iter().any(carries_ui_meta),
        _ => false,
    }
}

/// Every string in `value` (names, URIs, kinds), to compare whole against hidden names.
fn strings(value: &Value, found: &mut BTreeSet<String>) {
    match value {
        Value::String(text) => {
            found.insert(text.clone());
        }
        Value::Array(items) => items.iter().for_each(|item| strings(item, found)),
        Value::Object(fields) => fields.values().for_each(|field| strings(field, found)),
        _ => {}
    }
}

/// Nothing hidden is named in `value`, and (for a text-only client) nothing carries `_meta.ui`.
fn assert_learns_nothing_hidden(
    reader: &Reader,
    hidden: &BTreeSet<String>,
    value: &Value,
    what: &str,
) {
    let mut found = BTreeSet::new();
    strings(value, &mut found);
    let leaked: Vec<&String> = found.intersection(hidden).collect();
    assert!(
        leaked.is_empty(),
        "{what} tells {} about {leaked:?}",
        reader.describe()
    );
    if !reader.apps {
        assert!(
            !carries_ui_meta(value),
            "{what} shows _meta.ui to {}: {value}",
            reader.describe()
        );
    }
}

#[tokio::test]
async fn no_listing_or_document_shows_a_client_what_its_capabilities_or_scopes_keep_from_it() {
    let shop = shop();
    assert!(
        !app_only(&shop.app).is_empty(),
        "the shop has app-only surfaces to hide (the approval view and its decision)"
    );
    let mut probed = BTreeSet::new();
    let mut seen_by_apps_client = BTreeSet::new();
    for reader in shop.readers() {
        let hidden = reader.hidden(&shop.app);
        for method in Method::ALL {
            let name = method.as_str();
            match probe(method) {
                Probe::List(key, field, params) => {
                    for params in params(&shop.app) {
                        let items = shop.list_all(&reader, name, key, &params).await;
                        let listed: Vec<Value> = items.clone();
                        assert_learns_nothing_hidden(
                            &reader,
                            &hidden,
                            &Value::Array(listed),
                            &format!("{name} {params}"),
                        );
                        if reader.apps && reader.missing.is_none() {
                            seen_by_apps_client.extend(
                                items
                                    .iter()
                                    .filter_map(|i| i[field].as_str().map(String::from)),
                            );
                        }
                    }
                }
                Probe::Describes => {
                    let reply = shop.rpc(&reader, name, json!({})).await.json();
                    assert_learns_nothing_hidden(&reader, &hidden, &reply, name);
                }
                Probe::Manifest => {
                    let reply = shop
                        .rpc(&reader, name, json!({ "uri": "relevo://manifest" }))
                        .await
                        .json();
                    let text = reply["result"]["contents"][0]["text"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{reply}"));
                    let manifest: Value = serde_json::from_str(text).unwrap();
                    assert_learns_nothing_hidden(&reader, &hidden, &manifest, "the manifest");
                    if reader.apps && reader.missing.is_none() {
                        for section in ["tools", "resources", "resourceTemplates", "prompts"] {
                            for entry in manifest[section].as_array().unwrap() {
                                for key in ["name", "uri", "uriTemplate"] {
                                    if let Some(named) = entry[key].as_str() {
                                        seen_by_apps_client.insert(named.to_string());
                                    }
                                }
                            }
                        }
                    }
                }
                Probe::Completion => {
                    let refs = shop
                        .app
                        .prompts()
                        .map(|p| {
                            (
                                p.name.clone(),
                                json!({ "type": "ref/prompt", "name": p.name }),
                            )
                        })
                        .chain(shop.app.templates().map(|t| {
                            (
                                t.uri_template.clone(),
                                json!({ "type": "ref/resource", "uri": t.uri_template }),
                            )
                        }));
                    for (surface, reference) in refs.collect::<Vec<_>>() {
                        let params =
                            json!({ "ref": reference, "argument": { "name": "x", "value": "" } });
                        let reply = shop.rpc(&reader, name, params).await.json();
                        if hidden.contains(&surface) {
                            assert!(
                                reply.get("result").is_none(),
                                "{name} completes {surface} for {}: {reply}",
                                reader.describe()
                            );
                        }
                        assert_learns_nothing_hidden(&reader, &hidden, &reply, name);
                    }
                }
                Probe::NotAListing(why) => {
                    assert!(!why.is_empty());
                    continue;
                }
            }
            probed.insert(name);
        }
        for path in DOCUMENTS {
            let request = http::Request::get(*path)
                .header("host", "127.0.0.1:8080")
                .header("authorization", format!("Bearer {}", reader.token))
                .body(axum::body::Body::empty())
                .unwrap();
            let reply = send(&shop.router, request).await;
            assert_eq!(reply.status, 200, "{path}: {}", reply.text);
            // The documents name no surface at all, hidden or not.
            let every: BTreeSet<String> = surfaces(&shop.app).into_iter().map(|(n, _)| n).collect();
            assert_learns_nothing_hidden(&reader, &every, &reply.json(), path);
        }
    }
    let listing_methods: BTreeSet<&str> = Method::ALL
        .into_iter()
        .filter(|m| !matches!(probe(*m), Probe::NotAListing(_)))
        .map(Method::as_str)
        .collect();
    assert_eq!(probed, listing_methods, "every listing method was probed");
    for app_only in app_only(&shop.app) {
        assert!(
            seen_by_apps_client.contains(&app_only),
            "{app_only} is listed to an Apps client with every scope: the test is not vacuous"
        );
    }
}
