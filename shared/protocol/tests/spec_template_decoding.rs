//! MCP 2026-07-28, "Resources" → "Security Considerations": "Servers **MUST** validate all
//! resource URIs" and "Servers **MUST** sanitize file paths to prevent directory traversal
//! attacks"; "Error Handling": "If the requested resource does not exist, servers **MUST**
//! return a JSON-RPC error with code `-32602` (Invalid Params)".
//!
//! A URI template's variables reach the handler percent-decoded (RFC 6570 expansion encodes
//! them, so matching decodes them). A value that is not UTF-8 once decoded, holds a malformed
//! escape or a NUL, or is or holds a `.`/`..` path segment — raw, encoded (`%2e%2e`) or behind
//! an encoded slash (`%2F`) — names no resource: the read answers `-32602` "Resource not found"
//! with the URI, and the template's handler never runs.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use relevo_protocol::wire::ResourceContents;
use relevo_protocol::{App, Call, McpServer, Outcome, ResourceTemplate, handler};
use serde_json::{Value, json};
use support::{modern_as, serve};

/// A server whose templates echo their variables, and how many times a handler ran.
fn counted() -> (McpServer, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let template = |uri_template: &str| {
        let runs = runs.clone();
        ResourceTemplate::new(
            uri_template,
            "t",
            "application/json",
            handler(move |call: Call| {
                runs.fetch_add(1, Ordering::SeqCst);
                async move {
                    let text = Value::Object(call.arguments.clone()).to_string();
                    Ok(Outcome::contents(vec![ResourceContents::text(
                        text,
                        call.uri.unwrap_or_default(),
                    )]))
                }
            }),
        )
    };
    let app = App::new("decoding", "1")
        .template(template("notes://{id}"))
        .template(template("files:///{+path}"));
    (serve(app), runs)
}

async fn read(server: &McpServer, uri: &str) -> Value {
    modern_as(server, json!({}), "resources/read", json!({ "uri": uri })).await
}

#[tokio::test]
async fn variables_reach_the_handler_percent_decoded() {
    let (server, runs) = counted();
    for (uri, bound) in [
        ("notes://caf%C3%A9%20menu", json!({ "id": "café menu" })),
        ("notes://50%25", json!({ "id": "50%" })),
        ("notes://a%2Fb", json!({ "id": "a/b" })),
        ("files:///docs/a%20b.txt", json!({ "path": "docs/a b.txt" })),
        ("files:///docs/..hidden", json!({ "path": "docs/..hidden" })),
    ] {
        let reply = read(&server, uri).await;
        let text = reply["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{uri}: {reply}"));
        assert_eq!(
            serde_json::from_str::<Value>(text).ok(),
            Some(bound),
            "{uri}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn traversal_and_undecodable_values_are_not_found_and_never_reach_the_handler() {
    let (server, runs) = counted();
    for uri in [
        "notes://..",
        "notes://.",
        "notes://%2e%2e",
        "notes://%2E.",
        "notes://..%2Fetc%2Fpasswd",
        "notes://a%2F..%2F..%2Fsecret",
        "notes://%FF%FE",
        "notes://%C3",
        "notes://a%zz",
        "notes://a%00b",
        "files:///docs/../secrets.txt",
        "files:///docs/%2e%2e/secrets.txt",
        "files:///./a.txt",
        "files:///docs/..\\..\\secret",
        "files:///..",
    ] {
        let reply = read(&server, uri).await;
        assert_eq!(reply["error"]["code"], -32602, "{uri}: {reply}");
        assert_eq!(reply["error"]["message"], "Resource not found", "{uri}");
        assert_eq!(reply["error"]["data"]["uri"], uri, "{uri}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no handler ran");
}
