//! `peer-rmcp --port N`: the rmcp peer of `make bench`. rmcp's own streamable-HTTP server
//! (`StreamableHttpService` under axum, as rmcp documents it) on 127.0.0.1 at `/mcp`, stateless:
//! no session manager, `legacy_session_mode` off, JSON answers (`json_response`). A 2026-07-28
//! request (per-request `_meta` protocol version, `Mcp-Method`/`Mcp-Name` headers) is validated
//! and served directly without a session. One tool, `greet`, answering like relevo's `greet`.

use std::net::{Ipv4Addr, SocketAddr};
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

#[derive(Clone, Default)]
struct Echo;

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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = relevo_bench_peers::port_from_args()?;
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let service: StreamableHttpService<Echo, NeverSessionManager> =
        StreamableHttpService::new(|| Ok(Echo), Arc::new(NeverSessionManager::default()), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
    axum::serve(listener, router).await?;
    Ok(())
}
