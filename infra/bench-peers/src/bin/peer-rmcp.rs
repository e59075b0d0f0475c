//! `peer-rmcp --port N`: the rmcp peer of `make bench` over HTTP. rmcp's stateless
//! streamable-HTTP service ([`relevo_bench_peers::service`]) under axum at `/mcp` on 127.0.0.1,
//! as rmcp documents it.

use std::net::{Ipv4Addr, SocketAddr};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = relevo_bench_peers::port_from_args()?;
    let router = axum::Router::new().nest_service("/mcp", relevo_bench_peers::service());
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
    axum::serve(listener, router).await?;
    Ok(())
}
