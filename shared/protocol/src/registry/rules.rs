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
//! - A resource template is one the matcher honours (RFC 6570 without prefix modifiers, an
//!   exploded variable only last in its expression, each variable once, no two adjacent
//!   expressions whose boundary is a guess): otherwise a read would bind the wrong values.
//! - A schema the app gives as JSON (input or output) declares no `$schema` but JSON Schema
//!   2020-12, the dialect the spec names and the one the validator is built for. A schema
//!   derived from a Rust type never declares one (it is derived without it).
//!
//! The refusal is a panic in the builder, as axum refuses conflicting routes: an app is code,
//! and a registration mistake is a bug of that code, not a run-time condition to recover from.
//!
//! [`App`]: super::App

use thiserror::Error;

use crate::wire::JsonObject;

/// The longest tool name the spec allows.
pub const MAX_TOOL_NAME: usize = 128;

/// The one JSON Schema dialect a tool schema may declare in `$schema` (2020-12, the default).
pub const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

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
    /// A resource template the URI matcher cannot honour.
    #[error(
        "resource template {template:?} cannot be matched: {reason} (RFC 6570; see \
         ResourceTemplate::match_uri)"
    )]
    UriTemplate {
        /// The URI template.
        template: String,
        /// Why the matcher cannot honour it.
        reason: String,
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

/// Checks that the matcher honours the URI template `template`.
pub fn uri_template(template: &str) -> Result<(), Refused> {
    super::uri_template::check(template).map_err(|reason| Refused::UriTemplate {
        template: template.into(),
        reason,
    })
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
