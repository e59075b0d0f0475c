//! What registration refuses: the rules a name or a schema must meet before an [`App`] holds
//! it, so that a mistake in an app shows when the app is built (at the first cold start, in
//! the app's tests) rather than as an error a client sees at call time.
//!
//! Invariants, each checked once per registration:
//! - A tool name is 1–128 characters of `[A-Za-z0-9_.-]` (MCP 2026-07-28, "Tools", tool
//!   names), so every client can name it in `tools/call` and every log line can print it.
//! - Tool names, prompt names, resource URIs and resource-template URI templates are unique
//!   per app: a second registration under a key already held is refused, not a silent
//!   replacement of the first.
//! - A schema the app gives as JSON (input or output) declares no `$schema` but JSON Schema
//!   2020-12, the dialect the spec names and the one the validator is built for. A schema
//!   derived from a Rust type never declares one (it is derived without it).
//! - Every icon (of the server, a tool, a prompt, a resource or a template) has an `https:` URL
//!   with a host and no credentials, or a `data:` URI, and nothing outside printable ASCII
//!   (MCP 2026-07-28, basic/index "General fields" → `icons`: consumers ensure "that the icon
//!   URI is either a HTTPS or `data:` URI" and MUST reject other schemes; an icon of another
//!   scheme would never show, and an `http:` one would travel in clear).
//! - Every `_meta` key an item declares follows the spec's key format (an optional prefix of
//!   dot-separated labels and a `/`, then a name) and is neither a key the spec reserves
//!   (`progressToken`, `traceparent`, `tracestate`, `baggage`) nor under a prefix reserved for
//!   MCP (second label `modelcontextprotocol` or `mcp`; basic/index "General fields" → `_meta`),
//!   save the keys an official extension defines for servers to declare
//!   ([`EXTENSION_META_KEYS`]). MCP Apps' own `ui` and `ui/resourceUri` keys are ordinary keys.
//!
//! The refusal is a panic in the builder, as axum refuses conflicting routes: an app is code,
//! and a registration mistake is a bug of that code, not a run-time condition to recover from.
//!
//! [`App`]: super::App

use thiserror::Error;

use crate::wire::{Icon, JsonObject};

/// The longest tool name the spec allows.
pub const MAX_TOOL_NAME: usize = 128;

/// The one JSON Schema dialect a tool schema may declare in `$schema` (2020-12, the default).
pub const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The `_meta` keys under a reserved prefix that an app may declare: those an official
/// extension defines for servers (MCP Apps, `io.modelcontextprotocol/ui`).
pub const EXTENSION_META_KEYS: &[&str] = &["io.modelcontextprotocol/ui"];

/// The `_meta` keys without a prefix that the spec reserves for its own use (progress and
/// OpenTelemetry trace context): an app may not declare them.
pub const RESERVED_META_KEYS: &[&str] = &["progressToken", "traceparent", "tracestate", "baggage"];

/// Why a registration is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Refused {
    /// The tool name is empty, too long, or has a character outside `[A-Za-z0-9_.-]`.
    #[error(
        "tool name {0:?} is invalid: a tool name is 1 to {MAX_TOOL_NAME} characters of \
         [A-Za-z0-9_.-] (MCP \"Tools\", tool names)"
    )]
    ToolName(String),
    /// Something of this kind is already registered under this key.
    #[error("{kind} {key:?} is registered twice: {kind}s are unique per server")]
    Duplicate {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The name, URI or URI template registered twice.
        key: String,
    },
    /// A tool schema declares a JSON Schema dialect other than 2020-12.
    #[error(
        "the {which} of tool {tool:?} declares the JSON Schema dialect {dialect}: only \
         {SCHEMA_DIALECT} (the default when $schema is absent) is supported"
    )]
    Dialect {
        /// The tool's name.
        tool: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// The `$schema` it declares, as JSON.
        dialect: String,
    },
    /// An icon's `src` is not an `https:` URL (with a host, without credentials) or a `data:`
    /// URI.
    #[error(
        "{kind} {key:?} declares an icon at {src:?}: an icon src is an https: URL (with a host \
         and no credentials) or a data: URI, the only schemes clients accept (MCP \"General \
         fields\", icons)"
    )]
    IconSource {
        /// `server`, `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The server's, tool's or prompt's name, the resource's URI or the URI template.
        key: String,
        /// The refused `src`.
        src: String,
    },
    /// A `_meta` key does not follow the spec's key format.
    #[error(
        "{kind} {key:?} declares the _meta key {meta_key:?}, which is not a valid key: an \
         optional prefix of dot-separated labels (each a letter, then letters, digits or \
         hyphens, ending in a letter or digit) and a `/`, then a name that starts and ends \
         alphanumeric with only alphanumerics, `-`, `_` or `.` between (MCP \"General \
         fields\", _meta)"
    )]
    MetaKey {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The tool's or prompt's name, the resource's URI or the URI template.
        key: String,
        /// The refused `_meta` key.
        meta_key: String,
    },
    /// A `_meta` key is reserved for MCP: a key the spec defines, or under a prefix whose second
    /// label is `modelcontextprotocol` or `mcp` and not a key an extension defines.
    #[error(
        "{kind} {key:?} declares the _meta key {meta_key:?}, which is reserved for MCP: \
         progressToken, traceparent, tracestate, baggage and every prefix whose second label is \
         modelcontextprotocol or mcp are the protocol's; of those an app may declare only the \
         keys an extension defines ({}) (MCP \"General fields\", _meta)",
        EXTENSION_META_KEYS.join(", ")
    )]
    ReservedMetaKey {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The tool's or prompt's name, the resource's URI or the URI template.
        key: String,
        /// The refused `_meta` key.
        meta_key: String,
    },
}

/// Whether `name` is a valid tool name.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Checks the name of tool `name`.
pub fn tool_name(name: &str) -> Result<(), Refused> {
    if valid_tool_name(name) {
        Ok(())
    } else {
        Err(Refused::ToolName(name.into()))
    }
}

/// Checks the `$schema` of the `which` schema (`inputSchema`, `outputSchema`) of tool `tool`:
/// absent, or 2020-12 (with or without an empty fragment).
pub fn dialect(tool: &str, which: &'static str, schema: &JsonObject) -> Result<(), Refused> {
    match schema.get("$schema") {
        None => Ok(()),
        Some(serde_json::Value::String(uri))
            if uri.strip_suffix('#').unwrap_or(uri) == SCHEMA_DIALECT =>
        {
            Ok(())
        }
        Some(other) => Err(Refused::Dialect {
            tool: tool.into(),
            which,
            dialect: other.to_string(),
        }),
    }
}

/// Whether `src` may be an icon's source: an `https:` URL with a host and no user information,
/// or a `data:` URI (`data:[<mediatype>][;base64],<data>`), in printable ASCII without spaces.
/// Schemes compare case-insensitively.
///
/// ```
/// use relevo_protocol::registry::rules::valid_icon_source;
///
/// assert!(valid_icon_source("https://example.com/icon.png"));
/// assert!(valid_icon_source("data:image/png;base64,iVBORw0KGgo="));
/// assert!(!valid_icon_source("http://example.com/icon.png"), "clear text");
/// assert!(!valid_icon_source("javascript:alert(1)"));
/// assert!(!valid_icon_source("https://user:secret@example.com/icon.png"), "credentials");
/// ```
pub fn valid_icon_source(src: &str) -> bool {
    if !src.bytes().all(|b| b.is_ascii_graphic()) {
        return false;
    }
    let Some((scheme, rest)) = src.split_once(':') else {
        return false;
    };
    if scheme.eq_ignore_ascii_case("data") {
        return rest.contains(',');
    }
    if !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let Some(rest) = rest.strip_prefix("//") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(authority, |(host, _)| host);
    !host.is_empty() && !authority.contains('@')
}

/// Checks the icons of the `kind` (`server`, `tool`, …) keyed `key`: each `src` is
/// [`valid_icon_source`].
///
/// ```
/// use relevo_protocol::registry::rules::{Refused, icons};
/// use relevo_protocol::wire::Icon;
///
/// assert_eq!(icons("tool", "t", &[Icon::new("https://example.com/t.png")]), Ok(()));
/// assert!(matches!(
///     icons("tool", "t", &[Icon::new("file:///etc/icon.png")]),
///     Err(Refused::IconSource { .. })
/// ));
/// ```
pub fn icons(kind: &'static str, key: &str, icons: &[Icon]) -> Result<(), Refused> {
    match icons.iter().find(|icon| !valid_icon_source(&icon.src)) {
        None => Ok(()),
        Some(icon) => Err(Refused::IconSource {
            kind,
            key: key.into(),
            src: icon.src.clone(),
        }),
    }
}

/// Whether `label` is a `_meta` prefix label: a letter, then letters, digits or hyphens,
/// ending in a letter or digit.
fn valid_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        }
        _ => false,
    }
}

/// Whether `name` is a `_meta` key name: empty, or starting and ending alphanumeric with only
/// alphanumerics, `-`, `_` or `.` between.
fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => true,
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
    }
}

/// Whether `key` follows the spec's `_meta` key format: an optional prefix (dot-separated
/// labels followed by `/`) and a name.
///
/// ```
/// use relevo_protocol::registry::rules::valid_meta_key;
///
/// assert!(valid_meta_key("com.example/ticket-id"));
/// assert!(valid_meta_key("ui"));
/// assert!(valid_meta_key("ui/resourceUri"));
/// assert!(!valid_meta_key("com..example/x"), "an empty label");
/// assert!(!valid_meta_key("1com.example/x"), "a label starts with a letter");
/// assert!(!valid_meta_key("a/b/c"), "one prefix, then a name without `/`");
/// assert!(!valid_meta_key("-name"));
/// ```
pub fn valid_meta_key(key: &str) -> bool {
    match key.split_once('/') {
        None => valid_name(key),
        Some((prefix, name)) => prefix.split('.').all(valid_label) && valid_name(name),
    }
}

/// Whether `key` is reserved for MCP: a key the spec reserves ([`RESERVED_META_KEYS`]), or a
/// key whose prefix's second label is `modelcontextprotocol` or `mcp` (compared without case).
/// The keys extensions define ([`EXTENSION_META_KEYS`]) are reserved too; [`meta`] lets an app
/// declare those.
///
/// ```
/// use relevo_protocol::registry::rules::reserved_meta_key;
///
/// assert!(reserved_meta_key("io.modelcontextprotocol/serverInfo"));
/// assert!(reserved_meta_key("dev.mcp/anything"));
/// assert!(reserved_meta_key("progressToken"));
/// assert!(!reserved_meta_key("com.example.mcp/x"), "the second label is `example`");
/// ```
pub fn reserved_meta_key(key: &str) -> bool {
    if RESERVED_META_KEYS.contains(&key) {
        return true;
    }
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    prefix.split('.').nth(1).is_some_and(|second| {
        second.eq_ignore_ascii_case("modelcontextprotocol") || second.eq_ignore_ascii_case("mcp")
    })
}

/// Checks the `_meta` keys of the `kind` (`tool`, …) keyed `key`: each is
/// [`valid_meta_key`], and not [`reserved_meta_key`] unless an extension defines it
/// ([`EXTENSION_META_KEYS`]).
///
/// ```
/// use relevo_protocol::registry::rules::{Refused, meta};
/// use serde_json::json;
///
/// let declared = json!({ "com.example/owner": "billing", "io.modelcontextprotocol/ui": {} });
/// assert_eq!(meta("tool", "t", declared.as_object().unwrap()), Ok(()));
///
/// let reserved = json!({ "io.modelcontextprotocol/serverInfo": {} });
/// assert!(matches!(
///     meta("tool", "t", reserved.as_object().unwrap()),
///     Err(Refused::ReservedMetaKey { .. })
/// ));
/// ```
pub fn meta(kind: &'static str, key: &str, meta: &JsonObject) -> Result<(), Refused> {
    for meta_key in meta.keys() {
        if !valid_meta_key(meta_key) {
            return Err(Refused::MetaKey {
                kind,
                key: key.into(),
                meta_key: meta_key.clone(),
            });
        }
        if reserved_meta_key(meta_key) && !EXTENSION_META_KEYS.contains(&meta_key.as_str()) {
            return Err(Refused::ReservedMetaKey {
                kind,
                key: key.into(),
                meta_key: meta_key.clone(),
            });
        }
    }
    Ok(())
}

/// Panics with `refused`: the one way the builder refuses a registration.
#[track_caller]
pub(super) fn refuse(refused: Result<(), Refused>) {
    if let Err(refused) = refused {
        panic!("App refuses a registration: {refused}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_one_to_128_of_the_allowed_characters() {
        assert!(valid_tool_name("get_user.v2-beta"));
        assert!(valid_tool_name(&"a".repeat(MAX_TOOL_NAME)));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name(&"a".repeat(MAX_TOOL_NAME + 1)));
        assert!(!valid_tool_name("get user"));
        assert!(!valid_tool_name("café"));
        assert!(!valid_tool_name("a/b"));
    }
}
