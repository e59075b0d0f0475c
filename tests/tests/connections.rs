//! The gateway's connections over a real socket (its own connection loop, on 127.0.0.1, stopped
//! with the test; every socket read and write has a timeout):
//! - a client that writes its whole oversized body before it reads (as Python's `http.client`
//!   and most SDK transports do) gets the 413 and its JSON-RPC error, not a broken pipe, and its
//!   connection stays usable;
//! - a client that never finishes its headers, or leaves a keep-alive connection idle, is cut
//!   after the header-read timeout instead of holding the connection for ever.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use relevo_tests::*;
use serde_json::{Value, json};

/// Serves the conformance app on a free loopback port until the test ends, with a header-read
/// timeout of `header_timeout`.
async fn serve_with(header_timeout: Duration) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let forever = std::future::pending::<()>();
    tokio::spawn(relevo_local::serve::serve(
        listener,
        conformance_router(),
        header_timeout,
        forever,
    ));
    address
}

async fn serve() -> std::net::SocketAddr {
    serve_with(relevo_local::serve::HEADER_READ_TIMEOUT).await
}

/// Writes one POST with `body` whole, then reads the answer: (status, headers, body).
fn post(stream: &mut TcpStream, body: &[u8]) -> (u16, String, Value) {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/list\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream
        .write_all(body)
        .expect("the whole body is written: the server reads what it refuses");
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let (mut headers, mut length) = (String::new(), 0);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        headers.push_str(&line);
    }
    let mut answer = vec![0; length];
    reader.read_exact(&mut answer).unwrap();
    (
        status,
        headers,
        serde_json::from_slice(&answer).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_writes_its_whole_oversized_body_reads_the_413_and_keeps_its_connection() {
    let address = serve().await;
    tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
        let oversized = vec![b' '; 4 * 1024 * 1024];
        let (status, headers, answer) = post(&mut stream, &oversized);
        assert_eq!(status, 413, "{headers}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("exceeds"), "{answer}");
        assert!(!headers.to_ascii_lowercase().contains("connection: close"), "drained: kept alive: {headers}");

        let envelope = envelope(json!({}));
        let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": { "_meta": envelope } });
        let (status, _, answer) = post(&mut stream, list.to_string().as_bytes());
        assert_eq!((status, answer["id"].clone()), (200, json!(2)), "the same connection serves on: {answer}");
    })
    .await
    .unwrap();
}

/// Reads until the server closes the connection; how long that took.
fn closed_after(stream: &mut TcpStream) -> Duration {
    let started = std::time::Instant::now();
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return started.elapsed(),
            Ok(_) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_headers_and_idle_keep_alive_connections_are_cut_after_the_header_timeout() {
    let address = serve_with(Duration::from_secs(1)).await;
    tokio::task::spawn_blocking(move || {
        let mut slow = TcpStream::connect(address).unwrap();
        slow.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n").unwrap();
        let waited = closed_after(&mut slow);
        assert!(waited < Duration::from_secs(5), "a half-sent request head held the connection {waited:?}");

        let mut idle = TcpStream::connect(address).unwrap();
        idle.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let list =
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": envelope(json!({})) } });
        let (status, _, _) = post(&mut idle, list.to_string().as_bytes());
        assert_eq!(status, 200);
        let waited = closed_after(&mut idle);
        assert!(waited < Duration::from_secs(5), "an idle keep-alive connection stayed open {waited:?}");
    })
    .await
    .unwrap();
}
