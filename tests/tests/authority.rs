//! The authority a request names (`Host`, or an absolute-form target's), read by one parser
//! (`relevo_protocol::authority`) on every route the local server answers: `/mcp` (403 with a
//! JSON-RPC error), the server card, the AI catalog, the protected-resource metadata (403 with
//! an OAuth-style body). Every hostile form is refused on every route, on the loopback
//! allow-list and on an any-host deployment alike, and a published URL never carries user info
//! nor a host other than the one admitted.
//!
//! On the old code (`strip_port` kept what precedes the first `:`) `Host:
//! 127.0.0.1:1@evil.example` was admitted and the card published
//! `http://127.0.0.1:1@evil.example/mcp` (host `evil.example`), cached `public, max-age=3600`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_protocol::authority;
use relevo_protocol::{McpServer, OriginPolicy, Ports, ServerConfig};
use relevo_tests::*;
use serde_json::{Value, json};

/// Hosts no route may answer, with why.
const HOSTILE: &[(&[u8], &str)] = &[
    (b"127.0.0.1:1@evil.example", "userinfo"),
    (b"localhost@evil.example", "userinfo without port"),
    (b"127.0.0.1:8080:evil.example", "a second colon"),
    (b"localhost:1:2", "a second colon"),
    (b"[::1", "an unbalanced bracket"),
    (b"::1]", "an unbalanced bracket"),
    (b"[::1]evil.example", "text after the bracket"),
    (b"[::1]:80@evil.example", "userinfo after brackets"),
    (b"localhost.", "a trailing dot"),
    (b"localhost.:8080", "a trailing dot with a port"),
    (b"local%68ost", "percent-encoding"),
    (
        b"127.0.0.1%2f@evil.example",
        "percent-encoding and userinfo",
    ),
    ("b\u{fc}cher.example".as_bytes(), "an IDNA U-label"),
    (b"localhost:", "an empty port"),
    (b"localhost:65536", "a port above 65535"),
    (b"127.1", "a number a browser reads as 127.0.0.1"),
    (b"", "an empty host"),
    (b"local host", "a space"),
];

const ROUTES: &[&str] = &[
    "/mcp",
    "/mcp/server-card",
    "/.well-known/ai-catalog.json",
    "/.well-known/mcp/catalog.json",
    "/.well-known/oauth-protected-resource",
];

/// The shop with authorization on (so the metadata is served), on `policy`.
fn deployment(policy: OriginPolicy) -> axum::Router {
    let (settings, _issuer, auth) = dev_auth();
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let app = relevo_app::features(&Ports::new(Some(store.clone())));
    let config = ServerConfig {
        origin_policy: policy,
        ..ServerConfig::default()
    };
    let server = McpServer::new(app, config, test_keys(), Arc::new(auth)).with_store(store);
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        ..gateway_options()
    };
    relevo_local::router(server, options)
}

fn any_host() -> OriginPolicy {
    OriginPolicy {
        hosts: vec![],
        origins: vec![],
    }
}

/// `route` (POST with a valid JSON-RPC body for `/mcp`, GET otherwise) at `target`, with these
/// `Host` values (each one header).
fn request(route: &str, target: &str, hosts: &[&[u8]]) -> http::Request<axum::body::Body> {
    let mut builder = if route == "/mcp" {
        http::Request::post(target)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", "server/discover")
    } else {
        http::Request::get(target)
    };
    for host in hosts {
        builder = builder.header("host", http::HeaderValue::from_bytes(host).unwrap());
    }
    let body = if route == "/mcp" {
        json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover",
                "params": { "_meta": envelope(json!({})) } })
        .to_string()
    } else {
        String::new()
    };
    builder.body(axum::body::Body::from(body)).unwrap()
}

/// The refusal each route gives a disallowed Host: `/mcp` in JSON-RPC, the others as OAuth.
fn assert_refused(reply: &Reply, route: &str, why: &str) {
    assert_eq!(reply.status, 403, "{route}, {why}: {}", reply.text);
    let body = reply.json();
    if route == "/mcp" {
        assert_eq!(body["error"]["code"], -32600, "{route}, {why}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Host or Origin not allowed: Host"),
            "{route}, {why}: {body}"
        );
    } else {
        assert_eq!(body["error"], "forbidden", "{route}, {why}");
    }
    assert!(!reply.text.contains("evil.example/"), "{route}, {why}");
}

#[tokio::test]
async fn every_hostile_host_is_refused_on_every_route_of_a_loopback_deployment() {
    let router = deployment(OriginPolicy::localhost());
    for (host, why) in HOSTILE {
        for route in ROUTES {
            let reply = send(&router, request(route, route, &[host])).await;
            assert_refused(&reply, route, why);
        }
    }
}

#[tokio::test]
async fn an_any_host_deployment_still_refuses_a_host_that_does_not_parse_clean() {
    let router = deployment(any_host());
    for (host, why) in HOSTILE {
        for route in ROUTES {
            let reply = send(&router, request(route, route, &[host])).await;
            assert_refused(&reply, route, why);
        }
    }
    let card = send(
        &router,
        request(
            "/mcp/server-card",
            "/mcp/server-card",
            &[b"MCP.Example.COM"],
        ),
    )
    .await;
    assert_eq!(card.status, 200, "{}", card.text);
    assert_eq!(
        card.json()["remotes"][0]["url"],
        "https://mcp.example.com/mcp",
        "a clean host is published lowercased"
    );
}

#[tokio::test]
async fn several_host_headers_are_refused_even_when_they_agree() {
    let router = deployment(OriginPolicy::localhost());
    for route in ROUTES {
        for hosts in [
            &[b"127.0.0.1:8080".as_slice(), b"127.0.0.1:8080"][..],
            &[b"127.0.0.1:8080", b"evil.example"],
        ] {
            let reply = send(&router, request(route, route, hosts)).await;
            assert_refused(&reply, route, "several Host headers");
        }
    }
}

#[tokio::test]
async fn an_absolute_form_target_must_name_the_host_it_is_sent_with() {
    let router = deployment(any_host());
    for route in ROUTES {
        for target in [
            format!("http://evil.example{route}"),
            format!("http://127.0.0.1:8081{route}"),
            format!("http://127.0.0.1:8080@evil.example{route}"),
        ] {
            let reply = send(&router, request(route, &target, &[b"127.0.0.1:8080"])).await;
            assert_refused(&reply, route, &target);
        }
        let agreeing = format!("http://127.0.0.1:8080{route}");
        let reply = send(&router, request(route, &agreeing, &[b"127.0.0.1:8080"])).await;
        assert_ne!(reply.status, 403, "{agreeing}: {}", reply.text);
    }
    let loopback = deployment(OriginPolicy::localhost());
    let target = "http://evil.example/mcp/server-card";
    let reply = send(
        &loopback,
        request("/mcp/server-card", target, &[b"127.0.0.1"]),
    )
    .await;
    assert_refused(&reply, "/mcp/server-card", "the target wins over Host");
}

#[tokio::test]
async fn uppercase_hosts_are_admitted_and_published_lowercased() {
    let router = deployment(OriginPolicy::localhost());
    let card = send(
        &router,
        request("/mcp/server-card", "/mcp/server-card", &[b"LOCALHOST:8080"]),
    )
    .await;
    assert_eq!(card.status, 200, "{}", card.text);
    let card = card.json();
    assert_eq!(card["remotes"][0]["url"], "http://localhost:8080/mcp");
    assert_eq!(card["name"], "localhost/relevo-shop");
    let discover = send(&router, request("/mcp", "/mcp", &[b"LocalHost"])).await;
    assert_ne!(discover.status, 403, "{}", discover.text);
}

/// Every URL a document publishes, wherever it sits in it.
fn urls(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::String(text) if text.contains("://") => found.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| urls(item, found)),
        Value::Object(fields) => fields.values().for_each(|field| urls(field, found)),
        _ => {}
    }
}

#[tokio::test]
async fn the_card_and_the_catalog_never_publish_a_url_with_user_info() {
    let mut hosts: Vec<&[u8]> = HOSTILE.iter().map(|(host, _)| *host).collect();
    hosts.extend([
        b"127.0.0.1:8080".as_slice(),
        b"localhost",
        b"[::1]:3000",
        b"mcp.example.com",
        b"xn--bcher-kva.example",
    ]);
    let mut published = 0;
    for policy in [OriginPolicy::localhost(), any_host()] {
        let router = deployment(policy);
        for host in &hosts {
            for route in &ROUTES[1..4] {
                let reply = send(&router, request(route, route, &[host])).await;
                if reply.status != 200 {
                    continue;
                }
                let document = reply.json();
                let mut found = Vec::new();
                urls(&document, &mut found);
                for url in &found {
                    assert!(!url.contains('@'), "{route} for {host:?}: {url}");
                }
                let endpoints = document["remotes"]
                    .as_array()
                    .or(document["entries"].as_array())
                    .unwrap();
                for url in endpoints.iter().map(|e| e["url"].as_str().unwrap()) {
                    let named = authority::of_url(url).unwrap();
                    let asked =
                        authority::Authority::parse(std::str::from_utf8(host).unwrap()).unwrap();
                    assert_eq!(named, asked, "{route} publishes the admitted authority");
                    published += 1;
                }
            }
        }
    }
    assert!(published >= 10, "documents were served: {published}");
}
