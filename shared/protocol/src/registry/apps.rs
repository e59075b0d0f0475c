//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865, stable 2026-01-26): interactive views a
//! host renders in a sandboxed iframe. A view is a `ui://` resource of type
//! `text/html;profile=mcp-app` whose `_meta.ui` declares its Content Security Policy, the
//! browser permissions it asks for, a dedicated origin and a border preference ([`UiMeta`]); a
//! tool points at it with `_meta.ui.resourceUri` and says who may call it with
//! `_meta.ui.visibility` ([`Visibility`]).
//!
//! The wire names are the extension's own (its `_meta` key is the unprefixed `ui`; the
//! extension identifier `io.modelcontextprotocol/ui` names only the capability):
//! `csp.connectDomains`, `csp.resourceDomains`, `csp.frameDomains`, `csp.baseUriDomains`,
//! `permissions.{camera,microphone,geolocation,clipboardWrite}` (each `{}` when requested),
//! `domain`, `prefersBorder`, `resourceUri`, `visibility: ["model" | "app"]`.
//!
//! Invariants:
//! - A view's HTML is served as declared, its `_meta.ui` both in `resources/list` and on the
//!   `resources/read` contents (where hosts read the CSP from); an empty CSP is left out, so the
//!   host applies the spec's restrictive default (no external origin at all).
//! - Registration refuses a `ui://` resource of another MIME type, and a tool whose
//!   `_meta.ui.resourceUri` is not a `ui://` URI or (when the server is built) names no
//!   registered resource ([`super::rules::apps_tool`], [`super::App::unresolved_views`]).
//! - A client that did not declare the extension with `text/html;profile=mcp-app` in its
//!   `mimeTypes` (per request, in the `_meta` envelope, or at a session's `initialize`) is
//!   served as the spec's "Server Behavior" asks of a server for a host without MCP Apps: the
//!   text-only variant of each tool. `tools/list` leaves out `_meta.ui` (and the deprecated flat
//!   `ui/resourceUri`) and every app-only tool, and `tools/call` of an app-only tool is answered
//!   as a missing capability. Since the list then depends on the client, a `tools/list` of an
//!   app with such tools is `cacheScope: private` even on an open deployment.
//! - The same holds for every other listing, by the same two predicates ([`app_only`] for a
//!   tool, [`app_only_resource`] for a view): `resources/list` and `resources/templates/list`
//!   leave views out and strip `_meta.ui`, the manifest (`relevo://manifest`) lists neither
//!   app-only tools nor views, and `completion/complete` does not know a view's template. A
//!   view stays readable by URI (static HTML, no data: reading it is not listing it).
//!   `tests/tests/listings.rs` enumerates every method that lists or describes surfaces.
//!
//! Threat model: an app-only tool is meant for a person acting in the view (a button), never for
//! the model. The host enforces that for a client with the extension (it "MUST NOT include" such
//! tools in the agent's list); for a client without it the server does, so a text-only agent can
//! neither see nor call, for instance, the decision of an approval. Authorization is unchanged:
//! a host-proxied call carries the person's own token and passes the same scope guard.

use serde::Serialize;
use serde_json::{Value, json};

use super::ClientContext;
use super::Outcome;
use super::Resource;
use super::handler;
use crate::wire::JsonObject;

/// The extension identifier, the key under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an HTML view ("MUST be `text/html;profile=mcp-app`").
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The URI scheme a view's URI starts with.
pub const SCHEME: &str = "ui://";

/// The `_meta` key the extension defines on tools, resources and resource contents.
pub const META_KEY: &str = "ui";

/// The deprecated flat `_meta` key a tool could name its view with.
pub const FLAT_META_KEY: &str = "ui/resourceUri";

/// The origins a view may reach, as the host turns them into its iframe's CSP. Each list left
/// empty is left out: no external origin of that kind (the secure default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Csp {
    /// Origins for fetch/XHR/WebSocket (`connect-src`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins for scripts, styles, images, fonts and media.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins for nested iframes (`frame-src`; none when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Allowed base URIs (`base-uri`; `'self'` when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

impl Csp {
    /// True when it declares no origin at all.
    pub fn is_empty(&self) -> bool {
        self == &Csp::default()
    }
}

fn requested(flag: &bool) -> bool {
    !*flag
}

fn as_object<S: serde::Serializer>(_: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    JsonObject::new().serialize(serializer)
}

/// Browser capabilities a view asks for (the host MAY grant them): each requested one is listed
/// as `{}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Permissions {
    /// Permission Policy `camera`.
    #[serde(skip_serializing_if = "requested", serialize_with = "as_object")]
    pub camera: bool,
    /// Permission Policy `microphone`.
    #[serde(skip_serializing_if = "requested", serialize_with = "as_object")]
    pub microphone: bool,
    /// Permission Policy `geolocation`.
    #[serde(skip_serializing_if = "requested", serialize_with = "as_object")]
    pub geolocation: bool,
    /// Permission Policy `clipboard-write`.
    #[serde(skip_serializing_if = "requested", serialize_with = "as_object")]
    pub clipboard_write: bool,
}

impl Permissions {
    /// True when it asks for nothing.
    pub fn is_empty(&self) -> bool {
        self == &Permissions::default()
    }
}

/// A view's `_meta.ui`: its CSP, permissions, dedicated origin and border preference.
///
/// ```
/// use relevo_protocol::registry::apps::{Csp, UiMeta};
/// use serde_json::json;
///
/// let meta = UiMeta::default()
///     .csp(Csp { connect_domains: vec!["https://api.example.com".into()], ..Csp::default() })
///     .prefers_border(true);
/// assert_eq!(
///     meta.to_wire(),
///     json!({ "csp": { "connectDomains": ["https://api.example.com"] }, "prefersBorder": true })
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiMeta {
    /// The origins it may reach (left out when empty).
    #[serde(skip_serializing_if = "Csp::is_empty")]
    pub csp: Csp,
    /// The browser capabilities it asks for (left out when none).
    #[serde(skip_serializing_if = "Permissions::is_empty")]
    pub permissions: Permissions,
    /// A dedicated sandbox origin, in the host's own format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the host draws a border and background around it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

impl UiMeta {
    /// Sets the CSP.
    pub fn csp(mut self, csp: Csp) -> Self {
        self.csp = csp;
        self
    }

    /// Sets the permissions asked for.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = permissions;
        self
    }

    /// Sets the dedicated origin.
    pub fn domain(mut self, domain: &str) -> Self {
        self.domain = Some(domain.into());
        self
    }

    /// Sets the border preference.
    pub fn prefers_border(mut self, prefers: bool) -> Self {
        self.prefers_border = Some(prefers);
        self
    }

    /// The `_meta.ui` object.
    pub fn to_wire(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({}))
    }
}

/// Who may call a tool: the model (the agent) or the app (a view of this server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// Listed to and callable by the agent.
    Model,
    /// Callable by a view of this server only.
    App,
}

impl Visibility {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Model => "model",
            Visibility::App => "app",
        }
    }
}

/// A view: a `ui://` resource serving `html` as `text/html;profile=mcp-app`, with `meta` as its
/// `_meta.ui` in the listing and on the read contents.
///
/// ```
/// use relevo_protocol::registry::apps::{self, UiMeta};
///
/// let view = apps::view("ui://shop/approval", "approval", "<!doctype html><p>hi</p>", UiMeta::default());
/// assert_eq!(view.to_wire()["mimeType"], "text/html;profile=mcp-app");
/// ```
pub fn view(uri: &str, name: &str, html: &str, meta: UiMeta) -> Resource {
    let ui = meta.to_wire();
    let mut contents = json!({ "uri": uri, "mimeType": MIME_TYPE, "text": html });
    if ui.as_object().is_some_and(|o| !o.is_empty()) {
        contents["_meta"] = json!({ META_KEY: ui.clone() });
    }
    let mut result = JsonObject::new();
    result.insert("contents".into(), json!([contents]));
    let run = handler(move |_| {
        let result = result.clone();
        async move { Ok(Outcome::Complete(result)) }
    });
    let resource = Resource::new(uri, name, MIME_TYPE, run);
    if ui.as_object().is_some_and(|o| !o.is_empty()) {
        resource.meta(META_KEY, ui)
    } else {
        resource
    }
}

/// True when the client declared the extension with the HTML profile among its `mimeTypes`.
pub fn client_supports(client: &ClientContext) -> bool {
    client
        .capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .and_then(|s| s.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t == MIME_TYPE))
}

/// The visibility a tool's `_meta` declares (the default, both, when it declares none).
pub fn visibility(meta: &JsonObject) -> Vec<String> {
    meta.get(META_KEY)
        .and_then(|ui| ui.get("visibility"))
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_else(|| vec!["model".into(), "app".into()])
}

/// True when only a view may call the tool (its visibility leaves out `model`).
pub fn app_only(meta: &JsonObject) -> bool {
    !visibility(meta).iter().any(|v| v == "model")
}

/// True for a resource or template only an MCP Apps host can use: a view, known by its `ui://`
/// scheme or its MIME type. A client without the extension is not shown it in any listing
/// (`resources/list`, `resources/templates/list`, the manifest, completion refs).
pub fn app_only_resource(uri: &str, mime_type: Option<&str>) -> bool {
    uri.get(..SCHEME.len())
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case(SCHEME))
        || mime_type.is_some_and(|mime| mime.eq_ignore_ascii_case(MIME_TYPE))
}

/// True when the tool is listed differently to clients with and without the extension (it
/// declares MCP Apps `_meta`), so a list holding it is never shared across clients
/// (`cacheScope: private`, even on an open deployment).
pub fn depends_on_client(meta: &JsonObject) -> bool {
    meta.contains_key(META_KEY) || meta.contains_key(FLAT_META_KEY)
}

/// The `_meta.ui.resourceUri` a tool declares (or the deprecated flat key), if any.
pub fn resource_uri(meta: &JsonObject) -> Option<&str> {
    meta.get(META_KEY)
        .and_then(|ui| ui.get("resourceUri"))
        .or_else(|| meta.get(FLAT_META_KEY))
        .and_then(Value::as_str)
}

/// A listed tool (or resource, or template) as a client without the extension sees it: no
/// `_meta.ui` nor flat key (and no `_meta` when nothing else is left).
pub fn text_only(mut tool: Value) -> Value {
    if let Some(object) = tool.as_object_mut() {
        let empty = match object.get_mut("_meta").and_then(Value::as_object_mut) {
            Some(meta) => {
                meta.remove(META_KEY);
                meta.remove(FLAT_META_KEY);
                meta.is_empty()
            }
            None => false,
        };
        if empty {
            object.remove("_meta");
        }
    }
    tool
}

/// The capability a client lacks when it calls an app-only tool without the extension.
pub fn required_capability() -> Value {
    json!({ "extensions": { EXTENSION: { "mimeTypes": [MIME_TYPE] } } })
}
