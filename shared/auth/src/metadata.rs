//! Protected Resource Metadata (RFC 9728), served at `/.well-known/oauth-protected-resource`
//! and `/.well-known/oauth-protected-resource/mcp`.

use serde_json::{Value, json};

use crate::config::AuthSettings;

pub fn protected_resource_metadata(settings: &AuthSettings) -> Value {
    json!({
        "resource": settings.audience,
        "authorization_servers": settings.authorization_servers,
        "scopes_supported": settings.scopes_supported,
        "bearer_methods_supported": ["header"],
        "resource_name": "Relevo MCP server",
    })
}
