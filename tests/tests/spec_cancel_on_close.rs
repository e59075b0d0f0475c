//! MCP 2026-07-28, "Streamable HTTP" (basic/transports/streamable-http.mdx) → Cancellation:
//! "Closing the SSE response stream **MUST** be treated by the server as cancellation of that
//! request. [...] The server **SHOULD** stop work on the cancelled request as soon as practical
//! and **MUST NOT** send any further messages for it." (Also "Cancellation"
//! (basic/patterns/cancellation.mdx) → Transport-Specific Cancellation.)
//!
//! Over a real socket to the local server on 127.0.0.1: a client calls a streaming tool with a
//! progress token (so the answer is an SSE stream), the tool waits silently (it sends no
//! notification that could fail), and the client closes the connection. The handler's future is
//! dropped within a bounded time, never finishing, and a task the handler handed its notifier to
//! sees `Notifier::cancelled()` resolve. The control: a client that keeps its stream open gets
//! the answer once the tool is released, and nothing reads as cancelled.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::{App, ManualClock, Tool};
use relevo_tests::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

const T0: u64 = 1_800_000_000;
/// How long the server may take to notice the closed stream and drop the handler.
const BOUND: Duration = Duration::from_secs(5);

/// What the tool saw: started, released, finished, dropped, cancellation seen by its helper.
#[derive(Default)]
struct Probe {
    started: Notify,
    release: Notify,
    finished: AtomicBool,
    dropped: AtomicBool,
    helper_saw_cancel: AtomicBool,
}

/// Sets `dropped` when the handler's future is dropped (finished or not).
struct DropFlag(Arc<Probe>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
    }
}

fn app(probe: &Arc<Probe>) -> App {
    let probe = probe.clone();
    let sit = move |_: NoArgs, cx: ToolContext| {
        let probe = probe.clone();
        async move {
            let _flag = DropFlag(probe.clone());
            let notifier = cx.notifier().clone();
            let helper = probe.clone();
            tokio::spawn(async move {
                notifier.cancelled().await;
                helper.helper_saw_cancel.store(true, Ordering::SeqCst);
            });
            probe.started.notify_one();
            // Silent: no notification, so nothing fails when the client goes.
            probe.release.notified().await;
            probe.finished.store(true, Ordering::SeqCst);
            Ok::<_, ToolError>("finished".to_string())
        }
    };
    App::new("spec-cancel-on-close", "0").tool(Tool::typed("sit", "Waits.", sit).streaming())
}

/// Serves the app on a free loopback port until the test ends.
async fn serve(probe: &Arc<Probe>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = router(server(
        app(probe),
        test_config(),
        Arc::new(ManualClock::at(T0)),
    ));
    tokio::spawn(relevo_local::serve::serve(
        listener,
        router,
        relevo_local::serve::HEADER_READ_TIMEOUT,
        std::future::pending::<()>(),
    ));
    address
}

/// Opens a connection, sends `tools/call sit` with a progress token and reads the response head.
async fn open_call(address: std::net::SocketAddr) -> (TcpStream, String) {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "sit", "arguments": {}, "_meta": {
            "progressToken": "p-1",
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "spec", "version": "0" } } } })
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: {VERSION}\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: sit\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut read = Vec::new();
    let mut buffer = [0u8; 4096];
    while !read.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(BOUND, stream.read(&mut buffer))
            .await
            .expect("the response head arrives")
            .unwrap();
        assert!(n > 0, "the server closed before answering");
        read.extend_from_slice(&buffer[..n]);
    }
    (stream, String::from_utf8_lossy(&read).into_owned())
}

/// Waits up to [`BOUND`] for `done`.
async fn within_bound(done: impl Fn() -> bool) -> bool {
    tokio::time::timeout(BOUND, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_sse_stream_drops_a_silent_handler_and_cancels_its_notifier() {
    let probe = Arc::new(Probe::default());
    let address = serve(&probe).await;
    let (stream, head) = open_call(address).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "the answer is an SSE stream: {head}"
    );
    tokio::time::timeout(BOUND, probe.started.notified())
        .await
        .expect("the tool started");

    drop(stream); // the client closes the stream: the cancellation signal

    assert!(
        within_bound(|| probe.dropped.load(Ordering::SeqCst)).await,
        "the handler was not dropped within {BOUND:?} of the stream closing"
    );
    assert!(
        !probe.finished.load(Ordering::SeqCst),
        "the handler never finished"
    );
    assert!(
        within_bound(|| probe.helper_saw_cancel.load(Ordering::SeqCst)).await,
        "the notifier handed to another task reads as cancelled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_kept_open_gets_the_answer_and_nothing_reads_as_cancelled() {
    let probe = Arc::new(Probe::default());
    let address = serve(&probe).await;
    let (mut stream, head) = open_call(address).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tokio::time::timeout(BOUND, probe.started.notified())
        .await
        .expect("the tool started");
    probe.release.notify_one();
    let mut body = head.into_bytes();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&body).contains("\"result\"") {
        let n = tokio::time::timeout(BOUND, stream.read(&mut buffer))
            .await
            .expect("the answer arrives")
            .unwrap();
        assert!(n > 0, "the stream ended without the answer");
        body.extend_from_slice(&buffer[..n]);
    }
    assert!(String::from_utf8_lossy(&body).contains("finished"));
    assert!(probe.finished.load(Ordering::SeqCst));
    assert!(!probe.helper_saw_cancel.load(Ordering::SeqCst));
}
