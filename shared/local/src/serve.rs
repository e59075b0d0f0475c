//! The gateway's connection loop: HTTP/1 on loopback with bounds on what a connection can hold.
//!
//! - A request's headers must arrive within [`HEADER_READ_TIMEOUT`]; the same timer runs while a
//!   keep-alive connection waits for its next request, so an idle connection is closed after it.
//!   (API Gateway closes idle connections too; `axum::serve` alone waits for ever.)
//! - A request body must arrive within the body reader's own bound (`crate::body`).
//! - On SIGINT/SIGTERM the listener stops and open connections get [`DRAIN_ON_SHUTDOWN`] to finish.

use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;

/// How long a client may take to send a request's headers (or to start its next request).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections get to finish after a shutdown signal.
pub const DRAIN_ON_SHUTDOWN: Duration = Duration::from_secs(5);

/// Serves `router` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    header_read_timeout: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let watched = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = watched.await {
                tracing::debug!(%error, "connection ended");
            }
        });
    }
    if tokio::time::timeout(DRAIN_ON_SHUTDOWN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open at shutdown were dropped");
    }
    Ok(())
}
