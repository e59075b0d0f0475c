//! The server's public descriptions for discovery before a connection: the server card (the
//! Server Card extension of SEP-2127, draft), the AI Catalog that points at it, and the MCP
//! Registry's `server.json`, all derived from the app and the deployment's settings, never
//! written by hand.
//!
//! Where each is served: the card at `GET <mcp-url>/server-card` ([`CARD_SUFFIX`], media type
//! [`CARD_MEDIA_TYPE`]); the catalog at [`CATALOG_PATHS`] (`/.well-known/ai-catalog.json`, the
//! draft's current location, and `/.well-known/mcp/catalog.json`, its earlier MCP Catalog
//! location); `server.json` is written by `cargo relevo server-json` for the MCP Registry.
//! [`respond`] answers the HTTP requests, the same for the local server and the Lambda.
//!
//! Invariants:
//! - The card never contradicts `server/discover` (the draft's "Consistency with Runtime
//!   Behavior"): its identity is [`App::server_info`], the same value every result's
//!   `_meta["io.modelcontextprotocol/serverInfo"]` carries (the card's `name` is that name,
//!   qualified by a reverse-DNS namespace when it has none), and its remote's
//!   `supportedProtocolVersions` is [`McpServer::supported_versions`], the list discover sends.
//! - Caller-independent content only. Following the draft ("Why Exclude Primitives?" and the
//!   Security Implications), neither the card nor `server.json` lists tools, resources,
//!   prompts, capabilities or extensions: those depend on the caller's scopes and are learned
//!   from discover and the lists with the caller's token. So nothing a token would hide can
//!   leak to an unauthenticated reader, and one response suits every caller (`public` cache).
//! - No credential, internal endpoint or per-caller data: the only URL published is the public
//!   MCP endpoint: [`Listing::url`], or where none is configured one built from the request's
//!   authority after it parsed clean ([`crate::authority`]: no user info, one `Host`, agreeing
//!   with an absolute-form target), so a published URL never names another host than the
//!   allow-list admitted. A configured URL with user info makes no card.
//!
//! Threat model: the documents are public by design (open CORS, like the protected-resource
//! metadata), but they are answered only to Hosts and Origins on the server's allow-list, as
//! `/mcp` is, so a rebound DNS name gets nothing. A forged or stale card is advisory: the draft
//! has clients prefer the live discover values.

use serde_json::{Value, json};

use crate::authority;
use crate::registry::App;
use crate::server::McpServer;

/// The media type of a server card.
pub const CARD_MEDIA_TYPE: &str = "application/mcp-server-card+json";
/// The `$schema` every server card names (the draft's only allowed value).
pub const CARD_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/// The `server.json` schema version `cargo relevo server-json` writes.
pub const SERVER_JSON_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
/// The media type of an AI Catalog.
pub const CATALOG_MEDIA_TYPE: &str = "application/ai-catalog+json";
/// The AI Catalog format version the catalog declares.
pub const CATALOG_SPEC_VERSION: &str = "1.0";
/// The card's path, appended to the MCP endpoint's (`/mcp` → `/mcp/server-card`).
pub const CARD_SUFFIX: &str = "/server-card";
/// Where the catalog is served: the draft's AI Catalog location, and its earlier MCP Catalog one.
pub const CATALOG_PATHS: &[&str] = &[
    "/.well-known/ai-catalog.json",
    "/.well-known/mcp/catalog.json",
];
/// The MCP endpoint's path when no public URL is configured.
pub const DEFAULT_MCP_PATH: &str = "/mcp";
/// How long a client or cache may reuse a document (the draft's `max-age=3600`).
pub const MAX_AGE_SECS: u64 = 3600;

/// The longest description the card and `server.json` accept.
pub const MAX_DESCRIPTION: usize = 100;

/// Why the app and settings make no card.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    /// The app declares no description, which the card and `server.json` require.
    #[error(
        "app {0:?} has no description: call App::description (the server card and server.json \
         require one of 1 to {MAX_DESCRIPTION} characters)"
    )]
    NoDescription(String),
    /// The description is longer than the card and `server.json` accept.
    #[error(
        "the description of app {app:?} has {chars} characters: the server card and \
         server.json accept at most {MAX_DESCRIPTION}"
    )]
    LongDescription {
        /// The app's name.
        app: String,
        /// Its description's length, in characters.
        chars: usize,
    },
    /// The qualified name breaks the card's and the registry's name rule.
    #[error(
        "server name {0:?} is invalid: a server card and server.json name is a reverse-DNS \
         namespace and a name, [a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+, 3 to 200 characters (set \
         RELEVO_SERVER_NAMESPACE, or name the app namespace/name)"
    )]
    Name(String),
    /// The public URL is not an absolute `http(s)` URL.
    #[error("the public MCP URL {0:?} is not an absolute http:// or https:// URL")]
    Url(String),
}

/// What the app does not know and the deployment does: where the server is reached and under
/// which namespace it is published.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `RELEVO_PUBLIC_URL` | the MCP endpoint's public URL (`https://mcp.example.com/mcp`) | `RELEVO_AUTH_AUDIENCE`; when serving without either, the request's Host and `/mcp` |
/// | `RELEVO_SERVER_NAMESPACE` | the reverse-DNS namespace of the card's and `server.json`'s name (`com.example`, `io.github.user`) | the public URL's host, reversed |
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The MCP endpoint's public URL.
    pub url: Option<String>,
    /// The reverse-DNS namespace of the published name.
    pub namespace: Option<String>,
}

impl Listing {
    /// Reads the listing through `lookup` (`std::env::var` in production, a map in tests).
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        Listing {
            url: set("RELEVO_PUBLIC_URL").or_else(|| set("RELEVO_AUTH_AUDIENCE")),
            namespace: set("RELEVO_SERVER_NAMESPACE"),
        }
    }

    /// This listing with `url` as the MCP endpoint's public URL.
    pub fn at(mut self, url: &str) -> Self {
        self.url = Some(url.into());
        self
    }
}

/// The identity every document publishes, taken from the server in one place.
struct Published {
    info: Value,
    name: String,
    description: String,
    url: String,
}

fn published(app: &App, listing: &Listing, url: &str) -> Result<Published, CardError> {
    let url = url.trim_end_matches('/').to_string();
    let host = host_of(&url).ok_or_else(|| CardError::Url(url.clone()))?;
    let description = app
        .description
        .clone()
        .ok_or_else(|| CardError::NoDescription(app.name.clone()))?;
    let chars = description.chars().count();
    if chars == 0 {
        return Err(CardError::NoDescription(app.name.clone()));
    }
    if chars > MAX_DESCRIPTION {
        return Err(CardError::LongDescription {
            app: app.name.clone(),
            chars,
        });
    }
    let name = if app.name.contains('/') {
        app.name.clone()
    } else {
        let namespace = match &listing.namespace {
            Some(namespace) => namespace.clone(),
            None => host.split('.').rev().collect::<Vec<_>>().join("."),
        };
        format!("{namespace}/{}", app.name)
    };
    if !valid_name(&name) {
        return Err(CardError::Name(name));
    }
    Ok(Published {
        info: app.server_info(),
        name,
        description,
        url,
    })
}

/// The host of an absolute `http(s)` URL, without port, read by [`crate::authority`]: a URL
/// with user info, or any authority that does not parse clean, has none (and makes no card).
fn host_of(url: &str) -> Option<String> {
    authority::of_url(url)
        .ok()
        .map(|authority| match authority.host() {
            authority::Host::V6(address) => address.to_string(),
            host => host.to_string(),
        })
}

/// The card's and the registry's name rule: `^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`, 3–200 chars.
fn valid_name(name: &str) -> bool {
    let Some((namespace, server)) = name.split_once('/') else {
        return false;
    };
    (3..=200).contains(&name.len())
        && !namespace.is_empty()
        && !server.is_empty()
        && namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        && server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
}

/// Copies the descriptive fields of the implementation the card and `server.json` share.
fn describe(document: &mut Value, published: &Published) {
    for key in ["title", "websiteUrl", "icons"] {
        if let Some(value) = published.info.get(key) {
            document[key] = value.clone();
        }
    }
}

/// The registry takes `https:` icons of at most 255 characters only (a `data:` icon, which
/// `serverInfo` and the card may carry, is left out of `server.json`).
fn registry_icons(document: &mut Value) {
    let Some(icons) = document.get_mut("icons").and_then(Value::as_array_mut) else {
        return;
    };
    icons.retain(|icon| {
        icon["src"]
            .as_str()
            .is_some_and(|src| src.starts_with("https://") && src.len() <= 255)
    });
    if icons.is_empty()
        && let Some(document) = document.as_object_mut()
    {
        document.remove("icons");
    }
}

/// The server card of `server` reached at `url` (the MCP endpoint's public URL).
pub fn server_card(server: &McpServer, listing: &Listing, url: &str) -> Result<Value, CardError> {
    let published = published(server.app(), listing, url)?;
    let mut card = json!({
        "$schema": CARD_SCHEMA,
        "name": published.name,
        "version": published.info["version"],
        "description": published.description,
        "remotes": [{
            "type": "streamable-http",
            "url": published.url,
            "supportedProtocolVersions": server.supported_versions(),
        }],
    });
    describe(&mut card, &published);
    Ok(card)
}

/// The MCP Registry's `server.json` of `server` reached at `url`: the same identity and remote
/// as the card, in the registry's format (which has no protocol versions).
pub fn server_json(server: &McpServer, listing: &Listing, url: &str) -> Result<Value, CardError> {
    let published = published(server.app(), listing, url)?;
    let mut document = json!({
        "$schema": SERVER_JSON_SCHEMA,
        "name": published.name,
        "version": published.info["version"],
        "description": published.description,
        "remotes": [{ "type": "streamable-http", "url": published.url }],
    });
    describe(&mut document, &published);
    registry_icons(&mut document);
    Ok(document)
}

/// The AI Catalog of this deployment: one entry, pointing at the card beside `url`.
/// Its identifier is the draft's `urn:air:{publisher}:mcp:{name}`, the publisher being the
/// card name's namespace read forward (`com.example/shop` → `urn:air:example.com:mcp:shop`).
pub fn catalog(server: &McpServer, listing: &Listing, url: &str) -> Result<Value, CardError> {
    let published = published(server.app(), listing, url)?;
    let (namespace, name) = published
        .name
        .split_once('/')
        .ok_or_else(|| CardError::Name(published.name.clone()))?;
    let publisher = namespace.split('.').rev().collect::<Vec<_>>().join(".");
    Ok(json!({
        "specVersion": CATALOG_SPEC_VERSION,
        "entries": [{
            "identifier": format!("urn:air:{publisher}:mcp:{name}"),
            "type": CARD_MEDIA_TYPE,
            "url": format!("{}{CARD_SUFFIX}", published.url),
        }],
    }))
}

/// Which document a path names, if any: the card beside the MCP endpoint, or the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    /// `<mcp-path>/server-card`.
    Card,
    /// One of [`CATALOG_PATHS`].
    Catalog,
}

/// The document `path` names: the card at any path ending in [`CARD_SUFFIX`] (the front door
/// routes only `<mcp-path>/server-card` here; a stage or base path may precede it), the catalog
/// at a path ending in one of [`CATALOG_PATHS`].
pub fn document_at(path: &str) -> Option<Document> {
    let path = path.trim_end_matches('/');
    if CATALOG_PATHS.iter().any(|catalog| path.ends_with(catalog)) {
        Some(Document::Catalog)
    } else if path.ends_with(CARD_SUFFIX) && path.len() > CARD_SUFFIX.len() {
        Some(Document::Card)
    } else {
        None
    }
}

/// The MCP endpoint's public URL for one request: the configured one, else the request's own
/// (plain `http` on a loopback host, `https` elsewhere) with the default MCP path. The
/// request's own is built only from an authority that parsed clean
/// ([`authority::of_request`]: one `Host`, agreeing with an absolute-form target), so it never
/// carries user info nor names another host than the allow-list admitted; `None` otherwise.
pub fn public_url(
    listing: &Listing,
    target: &http::Uri,
    headers: &http::HeaderMap,
) -> Option<String> {
    if let Some(url) = &listing.url {
        return Some(url.trim_end_matches('/').to_string());
    }
    let named = authority::of_request(target, headers).ok()??;
    let scheme = if named.host().is_loopback() {
        "http"
    } else {
        "https"
    };
    Some(format!("{scheme}://{named}{DEFAULT_MCP_PATH}"))
}

/// Answers one request for the card or the catalog: the document on `GET`/`HEAD` with open
/// CORS, `Cache-Control: public, max-age=3600` and an `ETag` (`304` when `If-None-Match`
/// names it); `405` for another method, `404` for another path or when the app makes no card
/// (the reason is logged). The caller has checked the Host/Origin allow-list
/// ([`crate::ladder::OriginPolicy::admit`]); a request whose authority does not parse clean
/// gets `404` here too, never a document naming it.
pub fn respond(
    server: &McpServer,
    listing: &Listing,
    method: &http::Method,
    target: &http::Uri,
    headers: &http::HeaderMap,
) -> http::Response<String> {
    let path = target.path();
    let document = document_at(path);
    let built = match document {
        None => Err(http::StatusCode::NOT_FOUND),
        Some(_) if method != http::Method::GET && method != http::Method::HEAD => {
            Err(http::StatusCode::METHOD_NOT_ALLOWED)
        }
        Some(document) => {
            let url = public_url(listing, target, headers).unwrap_or_default();
            let made = match document {
                Document::Card => server_card(server, listing, &url),
                Document::Catalog => catalog(server, listing, &url),
            };
            made.map(|body| (document, body)).map_err(|error| {
                tracing::warn!(%error, "no server card");
                http::StatusCode::NOT_FOUND
            })
        }
    };
    let (status, body, media_type) = match built {
        Ok((document, body)) => {
            let media_type = match document {
                Document::Card => CARD_MEDIA_TYPE,
                Document::Catalog if path.trim_end_matches('/').ends_with(CATALOG_PATHS[0]) => {
                    CATALOG_MEDIA_TYPE
                }
                Document::Catalog => "application/json",
            };
            (http::StatusCode::OK, body.to_string(), media_type)
        }
        Err(status) => {
            let error = if status == http::StatusCode::NOT_FOUND {
                "not_found"
            } else {
                "method_not_allowed"
            };
            (
                status,
                json!({ "error": error }).to_string(),
                "application/json",
            )
        }
    };
    let mut response = http::Response::new(String::new());
    let out = response.headers_mut();
    let header = |value: &'static str| http::HeaderValue::from_static(value);
    out.insert(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, header("*"));
    out.insert(http::header::ACCESS_CONTROL_ALLOW_METHODS, header("GET"));
    out.insert(
        http::header::ACCESS_CONTROL_ALLOW_HEADERS,
        header("Content-Type, If-None-Match"),
    );
    out.insert(http::header::ACCESS_CONTROL_EXPOSE_HEADERS, header("ETag"));
    out.insert(http::header::CONTENT_TYPE, header(media_type));
    if status == http::StatusCode::METHOD_NOT_ALLOWED {
        out.insert(http::header::ALLOW, header("GET, HEAD"));
    }
    if status != http::StatusCode::OK {
        out.insert(http::header::CACHE_CONTROL, header("no-store"));
        *response.status_mut() = status;
        *response.body_mut() = body;
        return response;
    }
    out.insert(http::header::CACHE_CONTROL, header("public, max-age=3600"));
    out.insert(http::header::VARY, header("Host"));
    let etag = format!("\"{:016x}\"", fnv1a(body.as_bytes()));
    let matches = headers
        .get_all(http::header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == etag
        });
    if let Ok(value) = http::HeaderValue::from_str(&etag) {
        out.insert(http::header::ETAG, value);
    }
    if matches {
        *response.status_mut() = http::StatusCode::NOT_MODIFIED;
    } else if method == http::Method::GET {
        *response.body_mut() = body;
    }
    response
}

impl McpServer {
    /// Where this server is published ([`Listing`], `ServerConfig::listing`).
    pub fn listing(&self) -> &Listing {
        &self.config.listing
    }

    /// [`respond`] with this server's configured [`Listing`] (`ServerConfig::listing`).
    pub fn serve_discovery(
        &self,
        method: &http::Method,
        target: &http::Uri,
        headers: &http::HeaderMap,
    ) -> http::Response<String> {
        respond(self, &self.config.listing, method, target, headers)
    }
}

/// FNV-1a, 64 bits: an entity tag that changes with the body (the draft leaves its form open).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_without_port_and_a_url_with_user_info_has_none() {
        assert_eq!(
            host_of("https://mcp.example.com/mcp").as_deref(),
            Some("mcp.example.com")
        );
        assert_eq!(
            host_of("http://127.0.0.1:8080/mcp").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(host_of("http://[::1]:8080/mcp").as_deref(), Some("::1"));
        assert_eq!(
            host_of("https://u@h.example:1/x"),
            None,
            "user info makes no card"
        );
        assert_eq!(host_of("ftp://h/x"), None);
        assert_eq!(host_of("https:///mcp"), None);
    }

    #[test]
    fn documents_are_named_by_their_path_suffix() {
        assert_eq!(document_at("/mcp/server-card"), Some(Document::Card));
        assert_eq!(
            document_at("/prod/v1/mcp/server-card/"),
            Some(Document::Card)
        );
        assert_eq!(document_at("/server-card"), None);
        assert_eq!(document_at("/mcp/server-cards"), None);
        assert_eq!(
            document_at("/.well-known/mcp/catalog.json"),
            Some(Document::Catalog)
        );
        assert_eq!(
            document_at("/.well-known/ai-catalog.json"),
            Some(Document::Catalog)
        );
        assert_eq!(document_at("/.well-known/mcp.json"), None);
    }
}
