//! `relevo-gateway [--port N] [--routing per-method|single]`: the local server of `make run`,
//! on 127.0.0.1 only.

use std::net::{Ipv4Addr, SocketAddr};

use relevo_gateway::Routing;
use relevo_protocol::{McpServer, Settings};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .json()
        .with_target(false)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let (port, routing) = parse_args()?;
    let settings = Settings::from_env(true)?;
    if settings.ephemeral_keys {
        tracing::warn!(
            "RELEVO_STATE_KEYS is not set: using a random key for this process; requestState and cursors will not survive a restart"
        );
    }
    let app = relevo_app::build(&settings.app)?;
    let max_body_bytes = settings.config.max_body_bytes;
    let server = McpServer::new(app, settings.config, settings.keys);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
    tracing::info!(url = %format!("http://{}/mcp", listener.local_addr()?), app = %settings.app, ?routing, "relevo gateway listening");
    axum::serve(listener, relevo_gateway::router(server, max_body_bytes, routing))
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    Ok(())
}

fn parse_args() -> Result<(u16, Routing), String> {
    let mut args = std::env::args().skip(1);
    let mut port = std::env::var("PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(8080);
    let mut routing = Routing::default();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().and_then(|p| p.parse().ok()).ok_or("--port needs a number")?,
            "--routing" => routing = args.next().ok_or("--routing needs a value")?.parse()?,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: relevo-gateway [--port N] [--routing per-method|single]"
                ));
            }
        }
    }
    Ok((port, routing))
}

async fn shutdown_signal() {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
