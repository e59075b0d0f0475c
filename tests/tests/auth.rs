//! Authorization over HTTP through the gateway: every refusal with its status, challenge and
//! body, the metadata documents, and tenant isolation at the MCP level (notes handles and URIs).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use relevo_auth::DevIssuer;
use relevo_embedded::SqliteStore;
use relevo_protocol::Ports;
use relevo_protocol::{McpServer, ServerConfig};
use relevo_tests::*;
use serde_json::{Value, json};

const ISSUER: &str = "http://127.0.0.1:8080";
const AUDIENCE: &str = "http://127.0.0.1:8080/mcp";
const METADATA: &str = "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp";

struct Fixture {
    router: axum::Router,
    issuer: DevIssuer,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn fixture() -> Fixture {
    let (settings, issuer, auth) = dev_auth();
    let ports = Ports::new(Some(Arc::new(SqliteStore::in_memory().unwrap())));
    let server = McpServer::new(
        relevo_app::features(&ports),
        ServerConfig::default(),
        test_keys(),
        Arc::new(auth),
    );
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        dev_issuer: Some(issuer.clone()),
        ..gateway_options()
    };
    Fixture {
        router: relevo_local::router(server, options),
        issuer,
    }
}

impl Fixture {
    fn token(&self, tenant: &str, subject: &str, scopes: &[&str]) -> String {
        dev_token(&self.issuer, tenant, subject, scopes)
    }

    fn claims(&self, overrides: Value) -> String {
        let t = now();
        let mut claims = json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "tenant": "acme", "iat": t, "exp": t + 300 });
        for (key, value) in overrides.as_object().unwrap() {
            claims[key] = value.clone();
        }
        self.issuer.sign(&claims).unwrap()
    }

    async fn call(&self, token: &str, name: &str, arguments: Value) -> Reply {
        send(
            &self.router,
            rpc_as(
                Some(token),
                1,
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            ),
        )
        .await
    }
}

fn challenge(reply: &Reply) -> String {
    reply
        .headers
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn no_token_is_401_with_the_metadata_url_before_any_mcp_processing() {
    let f = fixture();
    let reply = send(
        &f.router,
        raw(
            "POST",
            &[("host", "127.0.0.1:8080")],
            "this is not even JSON",
        ),
    )
    .await;
    assert_eq!(reply.status, 401);
    assert_eq!(
        challenge(&reply),
        format!("Bearer resource_metadata=\"{METADATA}\"")
    );
    assert_eq!(
        reply.json(),
        json!({ "error": "invalid_token", "error_description": "no bearer token" })
    );
}

#[tokio::test]
async fn every_bad_token_is_401_invalid_token_naming_the_reason() {
    let f = fixture();
    let t = now();
    let impostor = {
        let mut key = DevIssuer::generate(ISSUER, AUDIENCE);
        key.kid = f.issuer.kid.clone();
        key.mint("acme", "alice", &[], t, 300).unwrap()
    };
    let stranger = DevIssuer::generate(ISSUER, AUDIENCE)
        .mint("acme", "alice", &[], t, 300)
        .unwrap();
    let alg_none = {
        use base64::Engine;
        let b64 = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "{}.{}.",
            b64(json!({ "alg": "none", "kid": f.issuer.kid })),
            b64(
                json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": "a", "tenant": "t", "exp": t + 60 })
            )
        )
    };
    let cases = [
        (
            "malformed",
            "not.a.jwt".to_string(),
            "the token is not a well-formed JWT",
        ),
        (
            "wrong signature",
            impostor,
            "the token's signature does not verify",
        ),
        ("alg none", alg_none, "the token is not a well-formed JWT"),
        (
            "expired",
            f.claims(json!({ "exp": t - 120 })),
            "the token has expired",
        ),
        (
            "not yet valid",
            f.claims(json!({ "nbf": t + 600 })),
            "the token is not valid yet",
        ),
        (
            "another resource",
            f.claims(json!({ "aud": "https://other.example/mcp" })),
            "the token was issued for another resource",
        ),
        (
            "another issuer",
            f.claims(json!({ "iss": "https://evil.example" })),
            "the token was issued by another issuer",
        ),
        (
            "unknown kid",
            stranger,
            "the token's key id is not one of the issuer's keys",
        ),
    ];
    for (case, token, description) in cases {
        let reply = send(&f.router, rpc_as(Some(&token), 1, "tools/list", json!({}))).await;
        assert_eq!(reply.status, 401, "{case}");
        assert_eq!(
            reply.json(),
            json!({ "error": "invalid_token", "error_description": description }),
            "{case}"
        );
        let header = challenge(&reply);
        assert!(
            header.starts_with("Bearer error=\"invalid_token\""),
            "{case}: {header}"
        );
        assert!(
            header.contains(&format!("resource_metadata=\"{METADATA}\"")),
            "{case}: {header}"
        );
    }
}

#[tokio::test]
async fn missing_tool_scope_is_403_insufficient_scope_naming_it() {
    let f = fixture();
    let reader = f.token("acme", "alice", &["notes:read"]);
    let reply = f
        .call(&reader, "note_create", json!({ "text": "hi" }))
        .await;
    assert_eq!(reply.status, 403);
    assert_eq!(reply.json()["error"], "insufficient_scope");
    let header = challenge(&reply);
    assert!(
        header.starts_with("Bearer error=\"insufficient_scope\""),
        "{header}"
    );
    assert!(header.contains("scope=\"notes:write\""), "{header}");
}

#[tokio::test]
async fn tools_list_shows_only_tools_the_token_may_call_and_is_private() {
    let f = fixture();
    let names = |reply: Reply| -> Vec<String> {
        let result = reply.json()["result"].clone();
        assert_eq!(result["cacheScope"], "private");
        result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let plain = names(
        send(
            &f.router,
            rpc_as(
                Some(&f.token("acme", "alice", &[])),
                1,
                "tools/list",
                json!({}),
            ),
        )
        .await,
    );
    assert!(
        !plain.contains(&"note_create".to_string()) && plain.contains(&"greet".to_string()),
        "{plain:?}"
    );
    let writer = names(
        send(
            &f.router,
            rpc_as(
                Some(&f.token("acme", "alice", &["notes:write"])),
                1,
                "tools/list",
                json!({}),
            ),
        )
        .await,
    );
    assert!(
        writer.contains(&"note_create".to_string()) && !writer.contains(&"note_read".to_string()),
        "{writer:?}"
    );
}

#[tokio::test]
async fn protected_resource_metadata_is_served_at_both_paths() {
    let f = fixture();
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let request = http::Request::get(path)
            .header("host", "127.0.0.1:8080")
            .body(axum::body::Body::empty())
            .unwrap();
        let reply = send(&f.router, request).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.json()["resource"], AUDIENCE);
        assert_eq!(reply.json()["authorization_servers"], json!([ISSUER]));
        assert_eq!(
            reply.headers.get("access-control-allow-origin").unwrap(),
            "*"
        );
    }
    let jwks = send(
        &f.router,
        http::Request::get("/.well-known/jwks.json")
            .header("host", "localhost")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(jwks.json()["keys"][0]["kid"], f.issuer.kid.as_str());
    assert!(
        jwks.json()["keys"][0].get("d").is_none(),
        "only the public key is published"
    );
}

#[tokio::test]
async fn another_tenants_or_principals_note_answers_like_a_note_that_never_existed() {
    let f = fixture();
    let scopes = ["notes:read", "notes:write"];
    let alice = f.token("acme", "alice", &scopes);
    let created = f
        .call(&alice, "note_create", json!({ "text": "alice's secret" }))
        .await
        .json();
    let id = created["result"]["structuredContent"]["noteId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(id.len(), 22, "128-bit handle");

    let own = f
        .call(&alice, "note_read", json!({ "noteId": id }))
        .await
        .json();
    assert_eq!(own["result"]["structuredContent"]["text"], "alice's secret");

    let never = "AAAAAAAAAAAAAAAAAAAAAA";
    let expected_missing =
        |id: &str| json!({ "type": "text", "text": format!("No note with id {id}") });
    for (who, token) in [
        (
            "same tenant, other principal",
            f.token("acme", "bob", &scopes),
        ),
        (
            "other tenant, same subject",
            f.token("globex", "alice", &scopes),
        ),
    ] {
        let theirs = f
            .call(&token, "note_read", json!({ "noteId": id }))
            .await
            .json();
        assert_eq!(theirs["result"]["isError"], true, "{who}");
        assert_eq!(
            theirs["result"]["content"][0],
            expected_missing(&id),
            "{who}"
        );
        let nothing = f
            .call(&token, "note_read", json!({ "noteId": never }))
            .await
            .json();
        assert_eq!(
            nothing["result"]["content"][0],
            expected_missing(never),
            "{who}: same answer as a never-existing id"
        );

        let uri = format!("notes://{id}");
        let read = send(
            &f.router,
            rpc_as(Some(&token), 2, "resources/read", json!({ "uri": uri })),
        )
        .await
        .json();
        assert_eq!(
            read["error"],
            json!({ "code": -32602, "message": "Resource not found", "data": { "uri": uri } }),
            "{who}"
        );
    }

    let read = send(
        &f.router,
        rpc_as(
            Some(&alice),
            3,
            "resources/read",
            json!({ "uri": format!("notes://{id}") }),
        ),
    )
    .await
    .json();
    assert_eq!(read["result"]["contents"][0]["text"], "alice's secret");
    assert_eq!(
        read["result"]["cacheScope"], "private",
        "per-user content is never shared"
    );
}

#[tokio::test]
async fn another_authorization_scheme_is_401_with_the_bearer_challenge_like_no_token() {
    // RFC 6750 §3.1: a request that lacks the scheme's credentials (here: it used an unsupported
    // scheme) gets the challenge without an error code; 400 invalid_request is for a malformed
    // Bearer request.
    let f = fixture();
    for value in [
        "Basic YWxpY2U6c2VjcmV0",
        "Digest username=\"alice\"",
        "Negotiate",
        "basic",
        "Token abc def",
    ] {
        let reply = send(
            &f.router,
            raw(
                "POST",
                &[("host", "127.0.0.1:8080"), ("authorization", value)],
                "{}",
            ),
        )
        .await;
        assert_eq!(reply.status, 401, "{value}: {}", reply.text);
        assert_eq!(
            challenge(&reply),
            format!("Bearer resource_metadata=\"{METADATA}\""),
            "{value}"
        );
    }
    for malformed in ["Bearer", "Bearer    ", "Bearer a b"] {
        let reply = send(
            &f.router,
            raw(
                "POST",
                &[("host", "127.0.0.1:8080"), ("authorization", malformed)],
                "{}",
            ),
        )
        .await;
        assert!(
            reply.status == 400 || reply.status == 401,
            "{malformed}: {}",
            reply.status
        );
        assert!(challenge(&reply).starts_with("Bearer "), "{malformed}");
    }
    let bearer = f.token("acme", "alice", &[]);
    let twice = raw(
        "POST",
        &[
            ("host", "127.0.0.1:8080"),
            ("authorization", "Basic YWxpY2U6c2VjcmV0"),
            ("authorization", &format!("Bearer {bearer}")),
        ],
        "{}",
    );
    let reply = send(&f.router, twice).await;
    assert_eq!(
        (reply.status.as_u16(), reply.json()["error"].as_str()),
        (400, Some("invalid_request"))
    );
}
