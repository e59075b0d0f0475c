//! The system's roots are read at the first `https://` connection and never before (module docs
//! of `relevo-https`). One test in its own process: the roots are process-wide.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[tokio::test]
async fn roots_are_read_at_the_first_https_connection_and_never_for_plain_http() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        // A plain HTTP answer, then a connection that receives a TLS ClientHello.
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buffer = vec![0; 4096];
        let _ = socket.read(&mut buffer).await.unwrap();
        socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            .await
            .unwrap();
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut record = [0; 3];
        socket.read_exact(&mut record).await.unwrap();
        record
    });

    let client = relevo_https::pooled_client(None);
    assert!(
        !relevo_https::roots_loaded(),
        "building a client reads no root"
    );
    let request = http::Request::get(format!("http://{address}/"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let answer = client.request(request).await.unwrap();
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"ok");
    assert!(!relevo_https::roots_loaded(), "plain http reads no root");

    let request = http::Request::get(format!("https://{address}/"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let refused = client.request(request).await;
    assert!(refused.is_err(), "no TLS server: the exchange fails");
    assert!(
        relevo_https::roots_loaded(),
        "the https connection read the roots"
    );
    let record = server.await.unwrap();
    assert_eq!(
        (record[0], record[1]),
        (0x16, 0x03),
        "a TLS handshake record came first"
    );
    let (first, second) = (relevo_https::tls_config(), relevo_https::tls_config());
    let (first, second) = (first.unwrap(), second.unwrap());
    assert!(std::sync::Arc::ptr_eq(&first, &second), "one configuration");
    assert!(first.alpn_protocols.is_empty(), "HTTP/1.1 only: no ALPN");
}
