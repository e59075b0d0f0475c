//! MCP 2025-11-25, "Cancellation" (basic/utilities/cancellation.mdx) → Behavior Requirements:
//! "Receivers of cancellation notifications **SHOULD**: Stop processing the cancelled request;
//! Free associated resources; Not send a response for the cancelled request", and "Receivers
//! **MAY** ignore cancellation notifications if: The referenced request is unknown; Processing
//! has already completed" (Error Handling: "Invalid cancellation notifications **SHOULD** be
//! ignored").
//!
//! A 2025-11-25 session's `notifications/cancelled {requestId, reason?}` reaches the request of
//! that id in that session when it runs in this process (the local server): its handler is
//! dropped before it finishes and no JSON-RPC response is sent for it — a plain call's POST gets
//! an SSE body that ends at once, a streamed call's stream ends without one. The notification
//! is answered 202 whatever it names; an unknown id, a finished request, another session's id
//! and another principal naming this session cancel nothing.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use http::Request;
use relevo_embedded::SqliteStore;
use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::{App, McpServer, Tool};
use relevo_tests::*;
use serde_json::{Value, json};
use tokio::sync::Notify;

const LEGACY: &str = "2025-11-25";
const BOUND: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Probe {
    started: Notify,
    release: Notify,
    finished: AtomicBool,
    dropped: AtomicBool,
    helper_saw_cancel: AtomicBool,
}

struct DropFlag(Arc<Probe>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
    }
}

/// A server with one tool, `sit`, that waits silently until released, over a session store and
/// the dev issuer's tokens.
fn instance(probe: &Arc<Probe>) -> (axum::Router, relevo_auth::DevIssuer) {
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
            probe.release.notified().await;
            probe.finished.store(true, Ordering::SeqCst);
            Ok::<_, ToolError>("finished".to_string())
        }
    };
    let app = App::new("spec-legacy-cancelled", "0").tool(Tool::typed("sit", "", sit).streaming());
    let (_, issuer, auth) = dev_auth();
    let server = McpServer::new(app, test_config(), test_keys(), Arc::new(auth))
        .with_store(Arc::new(SqliteStore::in_memory().unwrap()));
    (router(server), issuer)
}

fn post(token: &str, session: Option<&str>, body: Value) -> Request<Body> {
    let mut builder = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"));
    if let Some(session) = session {
        builder = builder
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LEGACY);
    }
    builder.body(Body::from(body.to_string())).unwrap()
}

async fn initialize(router: &axum::Router, token: &str) -> String {
    let params = json!({ "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": { "name": "spec", "version": "0" } });
    let body = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params });
    let reply = send(router, post(token, None, body)).await;
    assert_eq!(reply.status, 200);
    reply.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string()
}

/// Starts `tools/call sit` as request `id` (streamed when `progress`) and waits until it runs.
async fn start_call(
    router: &axum::Router,
    probe: &Probe,
    token: &str,
    session: &str,
    id: u64,
    progress: bool,
) -> tokio::task::JoinHandle<Reply> {
    let mut params = json!({ "name": "sit", "arguments": {} });
    if progress {
        params["_meta"] = json!({ "progressToken": "p-1" });
    }
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    let request = post(token, Some(session), body);
    let router = router.clone();
    let call = tokio::spawn(async move { send(&router, request).await });
    tokio::time::timeout(BOUND, probe.started.notified())
        .await
        .expect("the tool started");
    call
}

async fn cancel(router: &axum::Router, token: &str, session: &str, request_id: Value) {
    let body = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": request_id, "reason": "the user gave up" } });
    let reply = send(router, post(token, Some(session), body)).await;
    assert_eq!(reply.status, 202, "{}", reply.text);
    assert!(reply.text.is_empty());
}

async fn within_bound(done: impl Fn() -> bool) -> bool {
    tokio::time::timeout(BOUND, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .is_ok()
}

/// The call was cancelled: its handler dropped unfinished, no response sent, the helper told.
async fn assert_cancelled(probe: &Probe, call: tokio::task::JoinHandle<Reply>) {
    let reply = tokio::time::timeout(BOUND, call)
        .await
        .expect("the cancelled call's POST is answered at once")
        .unwrap();
    assert!(
        probe.dropped.load(Ordering::SeqCst),
        "the handler was dropped"
    );
    assert!(
        !probe.finished.load(Ordering::SeqCst),
        "the handler never finished"
    );
    assert_eq!(reply.status, 200);
    assert!(reply.is_sse(), "{:?}", reply.headers);
    assert!(
        reply.sse_messages().iter().all(|m| m.get("id").is_none()),
        "no response for the cancelled request: {}",
        reply.text
    );
    assert!(within_bound(|| probe.helper_saw_cancel.load(Ordering::SeqCst)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_plain_call_is_dropped_and_gets_no_response() {
    let probe = Arc::new(Probe::default());
    let (router, issuer) = instance(&probe);
    let alice = dev_token(&issuer, "acme", "alice", &[]);
    let session = initialize(&router, &alice).await;
    let call = start_call(&router, &probe, &alice, &session, 7, false).await;
    cancel(&router, &alice, &session, json!(7)).await;
    assert_cancelled(&probe, call).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_streamed_call_ends_its_stream_without_a_response() {
    let probe = Arc::new(Probe::default());
    let (router, issuer) = instance(&probe);
    let alice = dev_token(&issuer, "acme", "alice", &[]);
    let session = initialize(&router, &alice).await;
    let call = start_call(&router, &probe, &alice, &session, 8, true).await;
    cancel(&router, &alice, &session, json!(8)).await;
    assert_cancelled(&probe, call).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_foreign_and_finished_ids_are_ignored() {
    let probe = Arc::new(Probe::default());
    let (router, issuer) = instance(&probe);
    let alice = dev_token(&issuer, "acme", "alice", &[]);
    let bob = dev_token(&issuer, "acme", "bob", &[]);
    let session = initialize(&router, &alice).await;
    let other = initialize(&router, &alice).await;
    let call = start_call(&router, &probe, &alice, &session, 9, false).await;

    cancel(&router, &alice, &session, json!(99)).await; // unknown id
    cancel(&router, &alice, &session, json!("9")).await; // "9" is not 9
    cancel(&router, &alice, &other, json!(9)).await; // another session of the caller
    cancel(&router, &bob, &session, json!(9)).await; // another principal naming the session
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !probe.dropped.load(Ordering::SeqCst),
        "nothing was cancelled"
    );

    probe.release.notify_one();
    let reply = tokio::time::timeout(BOUND, call).await.unwrap().unwrap();
    assert_eq!(reply.json()["result"]["content"][0]["text"], "finished");
    assert!(probe.finished.load(Ordering::SeqCst));
    cancel(&router, &alice, &session, json!(9)).await; // finished: ignored
    assert!(!probe.helper_saw_cancel.load(Ordering::SeqCst));
}
