//! Shared by the peer servers: rmcp's echo handler (one tool, `greet`, answering like relevo's
//! `greet`), its stateless streamable-HTTP service, and the loopback port from `--port N`.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// rmcp's server handler with one tool.
#[derive(Clone, Default)]
pub struct Echo;

fn greet() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": { "name": { "type": "string", "minLength": 1 } },
        "required": ["name"]
    });
    let Value::Object(schema) = schema else { unreachable!("an object literal") };
    Tool::new("greet", "Greets someone by name", Arc::new(schema))
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![greet()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == "greet").then(greet)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "greet" {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let arguments = request.arguments.unwrap_or_default();
        let Some(name) = arguments.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) else {
            return Err(ErrorData::invalid_params("name must be a non-empty string", None));
        };
        Ok(CallToolResult::structured(json!({ "greeting": format!("Hello, {name}!") })).into())
    }
}

/// rmcp's streamable-HTTP server as rmcp documents a stateless one: no session manager,
/// `legacy_session_mode` off, JSON answers (`json_response`), no SSE keep-alive. A 2026-07-28
/// request (per-request `_meta` protocol version, `Mcp-Method`/`Mcp-Name` headers) is validated
/// and served directly without a session.
pub fn service() -> StreamableHttpService<Echo, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    StreamableHttpService::new(|| Ok(Echo), Arc::new(NeverSessionManager::default()), config)
}

/// `--port N` from the command line (required: the harness picks a free port).
pub fn port_from_args() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--port" {
            return args.next().and_then(|p| p.parse().ok()).ok_or_else(|| "--port needs a number".into());
        }
    }
    Err("usage: --port N".into())
}
