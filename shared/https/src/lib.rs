//! The one HTTP/1.1 client stack of a relevo process: hyper-util's pooled client over rustls with
//! ring, trusting the system's root certificates. The AWS SDK's HTTP client (`relevo-aws`) and
//! the JWKS fetch (`relevo-auth`) both build their clients here, so a function links one copy of
//! this code and holds one TLS configuration.
//!
//! Invariants:
//! - One TLS configuration per process ([`tls_config`]): the system's roots are read and parsed
//!   at most once, at the first `https://` connection of any client, never before. A process
//!   that only speaks plain `http://` (a loopback `AWS_ENDPOINT_URL` or issuer in tests, the
//!   bench and local Lambda mode) never reads them. Reading them costs a cold start a millisecond
//!   or more per load (the distribution's bundle, plus `SSL_CERT_DIR`'s files when it is set:
//!   some 150 to 300 certificates parsed at opt-level "z"), which is why it is neither eager nor
//!   repeated.
//! - `https://` is always TLS, verified against those roots with rustls's WebPKI verifier: there
//!   is no switch that turns verification off. If the system has no usable root, every
//!   `https://` connection fails with [`TlsConfigError`] (kept for the life of the process: the
//!   roots of a running system do not appear later); plain `http://` still works.
//! - HTTP/1.1 only (no ALPN offered), `TCP_NODELAY` on every connection.
//!
//! Threat model: the URLs are the operator's (AWS endpoints, `AWS_ENDPOINT_URL`, the issuer's
//! JWKS URL), never a caller's; the trust anchors are the system's, read from the places
//! `rustls-native-certs` reads (`SSL_CERT_FILE`, `SSL_CERT_DIR`, the distribution's bundle).
//! Whoever can change those files or variables chooses what this process trusts.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use http::uri::Scheme;
use http_body_util::Full;
use hyper_rustls::{ConfigBuilderExt, MaybeHttpsStream};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::ClientConfig;

/// An error any connection can end with (hyper-util's connector contract).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The pooled HTTP/1.1 client: `https://` over rustls (roots as [`tls_config`]), `http://` in
/// the clear (local emulators and issuers).
pub type PooledClient = Client<HttpsConnector, Full<Bytes>>;

/// Why no TLS configuration could be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    #[error("no root certificate could be loaded from the system: {0}")]
    NoRootCertificates(#[source] std::io::Error),
    #[error("ring offers none of rustls's safe protocol versions: {0}")]
    Protocols(#[source] rustls::Error),
}

static TLS: OnceLock<Result<Arc<ClientConfig>, Arc<TlsConfigError>>> = OnceLock::new();

/// The process's TLS client configuration: ring, rustls's safe protocol versions, the system's
/// roots, no client certificate, no ALPN (HTTP/1.1). Built at the first call, which reads the
/// roots; every later call (and every client) shares it, or shares the reason it failed.
pub fn tls_config() -> Result<Arc<ClientConfig>, Arc<TlsConfigError>> {
    TLS.get_or_init(|| build_tls_config().map(Arc::new).map_err(Arc::new))
        .clone()
}

/// Whether [`tls_config`] has been built (or failed) in this process: whether the system's
/// roots were read.
pub fn roots_loaded() -> bool {
    TLS.get().is_some()
}

fn build_tls_config() -> Result<ClientConfig, TlsConfigError> {
    Ok(
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(TlsConfigError::Protocols)?
            .with_native_roots()
            .map_err(TlsConfigError::NoRootCertificates)?
            .with_no_client_auth(),
    )
}

/// A pooled client whose connections time out after `connect_timeout`. Building it reads no
/// certificate (module invariants).
pub fn pooled_client(connect_timeout: Option<Duration>) -> PooledClient {
    Client::builder(TokioExecutor::new()).build(HttpsConnector::new(connect_timeout))
}

/// hyper-util's TCP connector, with TLS for `https://` on [`tls_config`] (built at the first such
/// connection).
#[derive(Clone, Debug)]
pub struct HttpsConnector {
    tcp: HttpConnector,
}

impl HttpsConnector {
    /// A connector whose TCP connects time out after `connect_timeout`, with `TCP_NODELAY`.
    pub fn new(connect_timeout: Option<Duration>) -> Self {
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_connect_timeout(connect_timeout);
        tcp.set_nodelay(true);
        HttpsConnector { tcp }
    }
}

/// A connection: plain TCP, or TLS over it.
pub type Connection = MaybeHttpsStream<TokioIo<tokio::net::TcpStream>>;

type Connecting = Pin<Box<dyn Future<Output = Result<Connection, BoxError>> + Send>>;

impl tower_service::Service<Uri> for HttpsConnector {
    type Response = Connection;
    type Error = BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // hyper-util's TCP connector is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Connecting {
        match uri.scheme() {
            Some(scheme) if *scheme == Scheme::HTTPS => match tls_config() {
                Ok(config) => {
                    hyper_rustls::HttpsConnector::from((self.tcp.clone(), config)).call(uri)
                }
                Err(error) => Box::pin(std::future::ready(Err(Box::new(error) as BoxError))),
            },
            Some(scheme) if *scheme == Scheme::HTTP => {
                let connecting = self.tcp.call(uri);
                Box::pin(async move {
                    Ok(MaybeHttpsStream::Http(
                        connecting.await.map_err(|e| Box::new(e) as BoxError)?,
                    ))
                })
            }
            _ => {
                let error = std::io::Error::other(format!("not an http(s) URL: {uri}"));
                Box::pin(std::future::ready(Err(Box::new(error) as BoxError)))
            }
        }
    }
}
