//! The HTTP client the AWS SDK sends through: HTTP/1.1 over rustls with ring, on hyper-util's
//! pooled client.
//!
//! Why not the SDK's own (`aws-smithy-http-client`): it always links HTTP/2 (h2, hyper's h2
//! client), about 0.5 MB of every function, for services that answer over HTTP/1.1 (DynamoDB,
//! SQS and Secrets Manager do). This one is an adapter of the SDK's `HttpClient` port over the
//! client of `relevo-https`, which the JWKS fetch (`relevo-auth`) uses too: one copy of that code
//! in a function, and one TLS configuration in the process, whose roots are read at the first
//! `https://` connection only (never with a loopback `AWS_ENDPOINT_URL`).
//!
//! Invariants:
//! - One pool per distinct connector settings, kept for the life of the client (the SDK asks for
//!   a connector per operation; connections are reused across them). A function builds one
//!   `SdkConfig`, so one client, for all its services (`crate::sdk_config`): one pool.
//! - The settings' connect timeout bounds connecting; their read timeout, when set, bounds the
//!   wait from sending the request to the whole answer. The SDK's attempt and operation timeouts
//!   bound the rest.
//! - Every failure is classified as the SDK's retry strategy expects: failing to connect, a
//!   connection closed or reset, and any I/O error are `io` (retried); a timeout is `timeout`; a
//!   request the client refused is `user`; an answer cut short is transient; no TLS
//!   configuration (the system has no root) and anything else are `other`, not retried.
//! - Bodies are in memory: requests are the SDK's serialized bytes (a streaming request body is
//!   refused as a user error; no operation Relevo calls has one), and an answer is read whole, at
//!   most [`MAX_RESPONSE_BYTES`] (a longer one is refused, never buffered past the bound).
//!
//! Threat model: the endpoint is AWS's (or `AWS_ENDPOINT_URL`, set by the operator); roots are the
//! system's. Nothing here reads a caller's input.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use relevo_https::{PooledClient, pooled_client};

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::retries::ErrorKind;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::Response;
use aws_smithy_types::body::SdkBody;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use relevo_https::TlsConfigError;

/// The longest answer read (DynamoDB's largest, `BatchGetItem`, is 16 MB).
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// The SDK's HTTP client (`SdkConfig::http_client`).
pub fn sdk_http_client() -> SharedHttpClient {
    SharedHttpClient::new(Http1Client::default())
}

/// What a connector is built for: its connect and read timeouts.
type Timeouts = (Option<Duration>, Option<Duration>);

/// The SDK's `HttpClient` port: a connector per distinct settings, each with its own pool.
#[derive(Debug, Default)]
struct Http1Client {
    connectors: Mutex<HashMap<Timeouts, SharedHttpConnector>>,
}

impl HttpClient for Http1Client {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let key = (settings.connect_timeout(), settings.read_timeout());
        let mut connectors = self
            .connectors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        connectors
            .entry(key)
            .or_insert_with(|| {
                SharedHttpConnector::new(Http1Connector {
                    client: pooled_client(key.0),
                    read_timeout: key.1,
                })
            })
            .clone()
    }
}

#[derive(Clone)]
struct Http1Connector {
    client: PooledClient,
    read_timeout: Option<Duration>,
}

impl std::fmt::Debug for Http1Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http1Connector")
            .field("read_timeout", &self.read_timeout)
            .finish_non_exhaustive()
    }
}

impl HttpConnector for Http1Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let this = self.clone();
        HttpConnectorFuture::new(async move {
            let request = in_memory(request)?;
            let exchange = async {
                let response = this.client.request(request).await.map_err(classify)?;
                let (parts, body) = response.into_parts();
                let body = Limited::new(body, MAX_RESPONSE_BYTES)
                    .collect()
                    .await
                    .map_err(classify_body)?
                    .to_bytes();
                Response::try_from(http::Response::from_parts(parts, SdkBody::from(body)))
                    .map_err(|e| ConnectorError::other(Box::new(e), None))
            };
            match this.read_timeout {
                Some(limit) => tokio::time::timeout(limit, exchange)
                    .await
                    .map_err(|elapsed| ConnectorError::timeout(Box::new(elapsed)))?,
                None => exchange.await,
            }
        })
    }
}

/// The SDK's request as a hyper request with its body in memory.
fn in_memory(request: HttpRequest) -> Result<http::Request<Full<Bytes>>, ConnectorError> {
    let request = request
        .try_into_http1x()
        .map_err(|e| ConnectorError::user(Box::new(e)))?;
    let (parts, body) = request.into_parts();
    let Some(bytes) = body.bytes() else {
        return Err(ConnectorError::user(
            "a streaming request body is not supported by relevo's HTTP/1 client".into(),
        ));
    };
    Ok(http::Request::from_parts(
        parts,
        Full::new(Bytes::copy_from_slice(bytes)),
    ))
}

/// The first error of type `E` in `error`'s chain.
fn find<'a, E: StdError + 'static>(error: &'a (dyn StdError + 'static)) -> Option<&'a E> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(found) = error.downcast_ref::<E>() {
            return Some(found);
        }
        next = error.source();
    }
    None
}

/// A failed exchange as the SDK's retry strategy reads it (module docs).
fn classify(error: hyper_util::client::legacy::Error) -> ConnectorError {
    if find::<Arc<TlsConfigError>>(&error).is_some() {
        return ConnectorError::other(Box::new(error), None);
    }
    if error.is_connect() {
        return ConnectorError::io(Box::new(error));
    }
    if let Some(hyper) = find::<hyper::Error>(&error) {
        if hyper.is_timeout() {
            return ConnectorError::timeout(Box::new(error));
        }
        if hyper.is_user() {
            return ConnectorError::user(Box::new(error));
        }
        if hyper.is_incomplete_message() {
            return ConnectorError::other(Box::new(error), Some(ErrorKind::TransientError));
        }
        if hyper.is_closed() || hyper.is_canceled() {
            return ConnectorError::io(Box::new(error));
        }
    }
    if find::<std::io::Error>(&error).is_some() {
        return ConnectorError::io(Box::new(error));
    }
    ConnectorError::other(Box::new(error), None)
}

/// A failure while reading the answer's body: too long, or the connection failed mid-body.
fn classify_body(error: Box<dyn StdError + Send + Sync>) -> ConnectorError {
    if error.is::<http_body_util::LengthLimitError>() {
        return ConnectorError::other(error, None);
    }
    match find::<hyper::Error>(error.as_ref()) {
        Some(hyper) if hyper.is_incomplete_message() => {
            ConnectorError::other(error, Some(ErrorKind::TransientError))
        }
        _ => ConnectorError::io(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_runtime_api::client::runtime_components::RuntimeComponentsBuilder;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn connector(read_timeout: Option<Duration>) -> SharedHttpConnector {
        let mut settings = HttpConnectorSettings::builder().connect_timeout(Duration::from_secs(1));
        settings.set_read_timeout(read_timeout);
        let settings = settings.build();
        let components = RuntimeComponentsBuilder::for_tests()
            .build()
            .expect("test components");
        sdk_http_client().http_connector(&settings, &components)
    }

    fn post(url: &str, body: &'static str) -> HttpRequest {
        let request = http::Request::builder()
            .method("POST")
            .uri(url)
            .body(SdkBody::from(body))
            .expect("request");
        HttpRequest::try_from(request).expect("smithy request")
    }

    /// A loopback server that answers each connection with `answer` (after reading a request).
    async fn serve(answer: &'static [u8]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/", listener.local_addr().expect("address"));
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buffer = vec![0; 4096];
                    let _ = socket.read(&mut buffer).await;
                    let _ = socket.write_all(answer).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        url
    }

    #[tokio::test]
    async fn an_answer_reaches_the_sdk_with_its_status_headers_and_body() {
        let url =
            serve(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-amzn-requestid: r1\r\n\r\n{}").await;
        let response = connector(None)
            .call(post(&url, "{\"a\":1}"))
            .await
            .expect("answer");
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.headers().get("x-amzn-requestid"), Some("r1"));
        assert_eq!(response.body().bytes(), Some(&b"{}"[..]));
    }

    #[tokio::test]
    async fn connections_are_pooled_across_connectors_of_the_same_settings() {
        let client = Http1Client::default();
        let settings = HttpConnectorSettings::builder().build();
        let components = RuntimeComponentsBuilder::for_tests()
            .build()
            .expect("components");
        let _ = client.http_connector(&settings, &components);
        let _ = client.http_connector(&settings, &components);
        assert_eq!(client.connectors.lock().expect("lock").len(), 1);
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_io_error_the_sdk_retries() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/", listener.local_addr().expect("address"));
        drop(listener);
        let error = connector(None)
            .call(post(&url, "{}"))
            .await
            .expect_err("refused");
        assert!(error.is_io(), "{error:?}");
    }

    #[tokio::test]
    async fn an_answer_cut_short_is_transient() {
        let url = serve(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{\"par").await;
        let error = connector(None)
            .call(post(&url, "{}"))
            .await
            .expect_err("cut short");
        assert!(
            error.is_io() || error.as_other() == Some(ErrorKind::TransientError),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn a_silent_server_is_a_timeout_after_the_read_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/", listener.local_addr().expect("address"));
        let held = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.expect("accept");
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(socket);
        });
        let error = connector(Some(Duration::from_millis(200)))
            .call(post(&url, "{}"))
            .await
            .expect_err("silent");
        assert!(error.is_timeout(), "{error:?}");
        held.abort();
    }

    #[tokio::test]
    async fn an_answer_over_the_bound_is_refused_not_buffered() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/", listener.local_addr().expect("address"));
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut buffer = vec![0; 4096];
            let _ = socket.read(&mut buffer).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n",
                MAX_RESPONSE_BYTES + 1
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..=MAX_RESPONSE_BYTES / chunk.len() {
                if socket.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        });
        let error = connector(None)
            .call(post(&url, "{}"))
            .await
            .expect_err("too long");
        assert!(!error.is_io() && !error.is_timeout(), "{error:?}");
        assert!(
            find::<http_body_util::LengthLimitError>(&error).is_some(),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn an_https_endpoint_is_spoken_to_in_tls_only() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("https://{}/", listener.local_addr().expect("address"));
        let first = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut record = [0; 3];
            socket
                .read_exact(&mut record)
                .await
                .expect("a first record");
            record
        });
        let error = connector(None)
            .call(post(&url, "{}"))
            .await
            .expect_err("no TLS server");
        // A TLS handshake record (0x16, protocol 3.x) came first: no plain request reached it.
        let record = first.await.expect("server");
        assert_eq!((record[0], record[1]), (0x16, 0x03), "{error:?}");
    }

    #[tokio::test]
    async fn a_streaming_request_body_is_a_user_error() {
        // A body without its bytes in memory (a stream; `taken` is one the SDK can make).
        let request = http::Request::builder()
            .method("POST")
            .uri("http://127.0.0.1:9/")
            .body(SdkBody::taken())
            .expect("request");
        let request = HttpRequest::try_from(request).expect("smithy request");
        let error = connector(None).call(request).await.expect_err("streaming");
        assert!(error.is_user(), "{error:?}");
    }
}
