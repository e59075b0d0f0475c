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

/// The metadata paths: the root form and the form with the MCP endpoint's path appended.
pub const METADATA_PATHS: &[&str] = &[
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
];

/// Answers a request to the metadata function: the document for GET on a metadata path, 404 for
/// any other path, 405 for any other method. CORS is open: the document is public by design.
pub fn metadata_response(
    settings: &AuthSettings,
    method: &http::Method,
    path: &str,
) -> http::Response<String> {
    let (status, body) = if !METADATA_PATHS.contains(&path.trim_end_matches('/')) {
        (http::StatusCode::NOT_FOUND, json!({ "error": "not_found" }))
    } else if method == http::Method::GET || method == http::Method::HEAD {
        (http::StatusCode::OK, protected_resource_metadata(settings))
    } else {
        (
            http::StatusCode::METHOD_NOT_ALLOWED,
            json!({ "error": "method_not_allowed" }),
        )
    };
    let mut response = http::Response::new(body.to_string());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
        http::HeaderValue::from_static("*"),
    );
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("public, max-age=3600"),
    );
    if status == http::StatusCode::METHOD_NOT_ALLOWED {
        headers.insert(
            http::header::ALLOW,
            http::HeaderValue::from_static("GET, HEAD"),
        );
    }
    response
}
