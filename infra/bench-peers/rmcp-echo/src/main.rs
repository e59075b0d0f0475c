//! `peer-rmcp-echo --port N`: the leanest rmcp server the bench knows how to build, the HTTP peer
//! of the goal rows. rmcp 3.11 written as its own examples write a server (`#[tool_router]`,
//! `#[tool]`, `Parameters<T>`, `#[tool_handler]`), one tool `echo` answering its text, served on
//! hyper-util's `auto` connection builder (as `axum::serve` serves) with `TCP_NODELAY`, stateless
//! with JSON answers, on one Tokio worker; built with this project's release profile (thin LTO,
//! four codegen units). The same comparison as the independent reference harness the project's
//! figures are checked with (an rmcp echo server so built, against relevo's `greet`).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to answer.
    text: String,
}

#[derive(Clone)]
struct Echo {
    tool_router: ToolRouter<Self>,
}

#[tool_router(router = tool_router)]
impl Echo {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Answers the given text")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.text
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = port_from_args()?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?
        .block_on(serve(port))
}

async fn serve(port: u16) -> Result<(), Box<dyn std::error::Error>> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let service = TowerToHyperService::new(StreamableHttpService::new(
        || Ok(Echo::new()),
        Arc::new(LocalSessionManager::default()),
        config,
    ));
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let service = service.clone();
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The loopback port from `--port N`.
fn port_from_args() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--port" {
            return args
                .next()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| "--port needs a number".into());
        }
    }
    Err("usage: --port N".into())
}
