//! The manifest: an opt-in resource (`relevo://manifest`) that describes every tool, resource,
//! template, prompt and task kind of the app — schemas, annotations, scopes, cache policy,
//! invalidation domains, destructive and read-only flags — for agents and operators.
//!
//! It is derived from the same declarations the server serves, never written by hand, and it is
//! filtered on every read by the caller's scopes and by the client's capabilities, as the lists
//! are: an entry is listed only to a principal that may reach it and to a client that may use
//! it, so two principals (or two clients) read the manifest that is theirs, and a surface's
//! existence does not leak to a caller who may not use it. The manifest itself needs no scope.
//!
//! Invariant: the manifest never says more than the lists would to the same caller. A client
//! without the MCP Apps extension ([`crate::registry::apps`]) is shown no app-only tool (which
//! `tools/list` hides and `tools/call` refuses with `-32021`), no view, and no `_meta.ui`; a
//! token without a surface's scopes is shown nothing of that surface. `tests/tests/listings.rs`
//! checks it against every listing method.

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::auth::Principal;
use crate::registry::{App, CachePolicy, Outcome, Resource, apps, handler};
use crate::wire::ResourceContents;

/// The URI the manifest resource is read at.
pub const MANIFEST_URI: &str = "relevo://manifest";

/// One described surface, the scopes that reach it, and whether only an MCP Apps host may use
/// it (an app-only tool, a view).
struct Entry {
    section: &'static str,
    scopes: Vec<String>,
    app_only: bool,
    description: Value,
}

/// `app` with its manifest resource added (the app as it stands: add it last). The description
/// is made on the first read, not at start: a cold start derives no schema it does not serve.
pub fn with_manifest(app: App) -> App {
    let described = Arc::new(app.clone());
    let entries: Arc<OnceLock<Vec<Entry>>> = Arc::new(OnceLock::new());
    let resource = Resource::new(
        MANIFEST_URI,
        "manifest",
        "application/json",
        handler(move |call| {
            let entries = entries.get_or_init(|| describe(&described));
            let apps = apps::client_supports(&call.client);
            let manifest = manifest_for(&call.principal, apps, &described.name, &described.version, entries);
            async move { Ok(Outcome::contents(vec![ResourceContents::text(manifest.to_string(), MANIFEST_URI)])) }
        }),
    )
    .description("Every tool, resource, template, prompt and task kind you may use, with schemas, scopes and policies")
    .private();
    app.resource(resource)
}

/// The manifest `principal` reads from a client with (`apps`) or without the MCP Apps extension.
fn manifest_for(
    principal: &Principal,
    apps: bool,
    name: &str,
    version: &str,
    entries: &[Entry],
) -> Value {
    let mut manifest = json!({
        "server": { "name": name, "version": version },
        "tools": [], "resources": [], "resourceTemplates": [], "prompts": [], "taskKinds": []
    });
    for entry in entries
        .iter()
        .filter(|entry| principal.holds(&entry.scopes))
        .filter(|entry| apps || !entry.app_only)
    {
        if let Some(section) = manifest[entry.section].as_array_mut() {
            let description = entry.description.clone();
            section.push(if apps {
                description
            } else {
                apps::text_only(description)
            });
        }
    }
    manifest
}

fn describe(app: &App) -> Vec<Entry> {
    let mut entries = Vec::new();
    for tool in app.tools() {
        let annotations = tool.annotations.as_ref();
        let flag =
            |read: fn(&crate::wire::ToolAnnotations) -> Option<bool>| annotations.and_then(read);
        let mut description = tool.to_wire();
        description["scopes"] = json!(tool.scopes);
        description["cache"] = json!(match tool.cache {
            CachePolicy::Unstated => "unstated",
            CachePolicy::Immutable => "immutable",
            CachePolicy::NoStore => "no-store",
        });
        description["invalidates"] = json!(tool.invalidates);
        description["readOnly"] = json!(flag(|a| a.read_only_hint));
        description["destructive"] = json!(flag(|a| a.destructive_hint));
        description["tasks"] = json!(format!("{:?}", tool.task_support).to_lowercase());
        entries.push(Entry {
            section: "tools",
            scopes: tool.scopes.clone(),
            app_only: apps::app_only(&tool.meta),
            description,
        });
    }
    for resource in app.resources() {
        let mut description = resource.to_wire();
        description["scopes"] = json!(resource.scopes);
        description["private"] = json!(resource.private);
        entries.push(Entry {
            section: "resources",
            scopes: resource.scopes.clone(),
            app_only: apps::app_only_resource(&resource.uri, resource.mime_type.as_deref()),
            description,
        });
    }
    for template in app.templates() {
        let mut description = template.to_wire();
        description["scopes"] = json!(template.scopes);
        description["private"] = json!(template.private);
        entries.push(Entry {
            section: "resourceTemplates",
            scopes: template.scopes.clone(),
            app_only: apps::app_only_resource(
                &template.uri_template,
                template.mime_type.as_deref(),
            ),
            description,
        });
    }
    for prompt in app.prompts() {
        let mut description = prompt.to_wire();
        description["scopes"] = json!(prompt.scopes);
        entries.push(Entry {
            section: "prompts",
            scopes: prompt.scopes.clone(),
            app_only: false,
            description,
        });
    }
    for (kind, access) in app.task_kinds() {
        let description =
            json!({ "kind": kind, "readScopes": access.read, "writeScopes": access.write });
        entries.push(Entry {
            section: "taskKinds",
            scopes: access.read.clone(),
            app_only: false,
            description,
        });
    }
    entries
}
