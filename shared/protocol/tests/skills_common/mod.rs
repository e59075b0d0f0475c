//! What the `spec_skills_*` tests share: an app serving two skills (one public, with a nested
//! folder; one gated by a scope), a server over it, and a client that calls one method as a
//! caller holding given scopes. Each test file includes this module (`mod skills_common;`).

#![allow(dead_code)]

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use relevo_protocol::auth::AuthFuture;
use relevo_protocol::{
    App, AuthChallenge, Authenticator, KeyRing, McpServer, NoAuth, Principal, Route, ServerConfig,
    Skill,
};
use serde_json::{Value, json};

pub const VERSION: &str = "2026-07-28";

pub const PDF_SKILL_MD: &[u8] = b"---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1.0\"\n  pages: 3\n---\n\n# PDF processing\n\nPick a template from `templates/`.\n";
pub const FORMS_MD: &[u8] = b"# Forms\n\nFill every field.\n";
pub const INVOICE_MD: &[u8] = b"# Invoice\n";
pub const EU_INVOICE_MD: &[u8] = b"# EU invoice\n";
pub const REFUNDS_SKILL_MD: &[u8] =
    b"---\nname: refunds\ndescription: Process refunds per policy\n---\n# Refunds\n";

/// The public skill: `SKILL.md`, `references/FORMS.md`, `templates/invoice.md`,
/// `templates/regional/eu-invoice.md`.
pub fn pdf_skill() -> Skill {
    Skill::new("pdf-processing")
        .file("SKILL.md", PDF_SKILL_MD)
        .file("references/FORMS.md", FORMS_MD)
        .file("templates/invoice.md", INVOICE_MD)
        .file("templates/regional/eu-invoice.md", EU_INVOICE_MD)
}

/// The skill gated by `billing`, nested under a prefix.
pub fn refunds_skill() -> Skill {
    Skill::new("acme/billing/refunds")
        .file("SKILL.md", REFUNDS_SKILL_MD)
        .scopes(&["billing"])
}

pub fn app() -> App {
    App::new("skills", "1")
        .skill(pdf_skill())
        .skill(refunds_skill())
}

/// Every caller holds the scopes named in its `x-scopes` header (space-separated).
pub struct HeaderScopes;

impl Authenticator for HeaderScopes {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> AuthFuture<'a> {
        let scopes: Vec<String> = headers
            .get("x-scopes")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from)
            .collect();
        Box::pin(async move { Ok(Principal::new("acme", "ada", scopes)) })
    }

    fn insufficient_scope(&self, needed: &[String]) -> AuthChallenge {
        NoAuth.insufficient_scope(needed)
    }
}

pub fn server(app: App, page_size: usize, open: bool) -> McpServer {
    let config = ServerConfig {
        page_size,
        ..ServerConfig::default()
    };
    let keys = KeyRing::new(vec![("test".into(), vec![42; 32])]).expect("a 32-byte key");
    let auth: Arc<dyn Authenticator> = if open {
        Arc::new(NoAuth)
    } else {
        Arc::new(HeaderScopes)
    };
    McpServer::new(app, config, keys, auth)
}

/// Calls `method` with `params` as a caller holding `scopes`: the HTTP status and the JSON body.
pub async fn call(
    server: &McpServer,
    scopes: &str,
    method: &str,
    params: Value,
) -> (StatusCode, Value) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "spec", "version": "0" } });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let mut request = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", method)
        .header("x-scopes", scopes);
    if let Some(name) = params.get("uri").and_then(Value::as_str)
        && method == "resources/read"
    {
        request = request.header("mcp-name", name);
    }
    let request = request
        .body(Bytes::from(body.to_string()))
        .expect("a request");
    let reply = server.handle(Route::All, request).await;
    let status = reply.status();
    let bytes = reply.into_body().collect().await;
    let body: Value = serde_json::from_slice(&bytes).expect("a JSON reply");
    (status, body)
}

/// `sha256:` and the lowercase hex digest of `bytes`, computed here independently.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(bytes);
    format!(
        "sha256:{}",
        hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}
