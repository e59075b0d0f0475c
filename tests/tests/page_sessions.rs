//! The approval page's sign-in: a bearer token is exchanged for a page session, and the cookie
//! carries the session, never the token. Through the gateway router in-process with real bearer
//! tokens, the verifier and the pages on one injected clock, on SQLite and on DynamoDB (moto,
//! `infra/scripts/with-moto.sh`): the cookie is refused as a Bearer on `/mcp`; a session ends at
//! the token's expiry or within the hour; it is bound to its tenant; sign-out ends it for good;
//! a tampered one is refused.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_protocol::{Authenticator, KeyRing, ManualClock, McpServer, Ports, ServerConfig};
use relevo_state::records::RecordStore;
use relevo_tests::*;
use serde_json::{Value, json};

const HOST: &str = "127.0.0.1:8080";

struct Site {
    router: axum::Router,
    issuer: relevo_auth::DevIssuer,
    clock: ManualClock,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn site(store: Arc<dyn RecordStore>) -> Site {
    let (settings, issuer, auth) = dev_auth();
    let clock = ManualClock::at(now());
    let auth: Arc<dyn Authenticator> = Arc::new(auth.with_clock(Arc::new(clock.clone())));
    let mut ports = Ports::new(Some(store))
        .with_pages_base("http://127.0.0.1:8080")
        .with_security(
            auth.clone(),
            test_keys(),
            relevo_protocol::OriginPolicy::localhost(),
        );
    ports.clock = Arc::new(clock.clone());
    let config = ServerConfig {
        listen_max_secs: 1,
        ..ServerConfig::default()
    };
    let app = relevo_app::app(&ports);
    let pages = app.find_pages().cloned();
    let server = McpServer::new(app, config, test_keys(), auth).with_clock(Arc::new(clock.clone()));
    let options = relevo_local::GatewayOptions {
        auth: Some(settings),
        pages,
        ..gateway_options()
    };
    Site {
        router: relevo_local::router(server, options),
        issuer,
        clock,
    }
}

async fn dynamo() -> Arc<dyn RecordStore> {
    let endpoint = std::env::var("RELEVO_TEST_AWS_ENDPOINT")
        .expect("RELEVO_TEST_AWS_ENDPOINT is not set: run through infra/scripts/with-moto.sh (it starts moto)");
    let client = aws_sdk_dynamodb::Client::new(&relevo_aws::emulator_config(&endpoint).await);
    let table = format!(
        "sessions-{}",
        relevo_state::Ids::new_id(&relevo_state::ids::RandomIds).replace(['_', '-'], "x")
    );
    relevo_aws::create_table(&client, &table).await.unwrap();
    Arc::new(relevo_aws::DynamoStore::new(client, &table))
}

fn sqlite() -> Arc<dyn RecordStore> {
    Arc::new(SqliteStore::in_memory().unwrap())
}

fn form(fields: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
}

/// The value of `<input ... name="NAME" value="...">` on a page.
fn hidden(html: &str, name: &str) -> String {
    let start = html.find(&format!("name=\"{name}\" value=\"")).unwrap() + name.len() + 15;
    html[start..].split('"').next().unwrap().to_string()
}

impl Site {
    /// A token valid for `ttl` seconds from the site's clock.
    fn token(&self, tenant: &str, subject: &str, scopes: &[&str], ttl: u64) -> String {
        self.issuer
            .mint(tenant, subject, scopes, self.clock.now(), ttl)
            .unwrap()
    }

    fn manager(&self, tenant: &str, ttl: u64) -> String {
        self.token(
            tenant,
            "manager",
            &["inventory:read", "inventory:approve"],
            ttl,
        )
    }

    async fn page(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", HOST);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        send(
            &self.router,
            request
                .body(axum::body::Body::from(body.to_string()))
                .unwrap(),
        )
        .await
    }

    /// Signs in with `token`; returns the `Set-Cookie` header and the cookie (`name=value`).
    async fn sign_in(&self, token: &str) -> (String, String) {
        let form_type = ("content-type", "application/x-www-form-urlencoded");
        let login = self
            .page(
                "POST",
                "/approvals/login",
                &[form_type],
                &form(&[("token", token)]),
            )
            .await;
        assert_eq!(login.status, 303, "{}", login.text);
        let set_cookie = login.headers["set-cookie"].to_str().unwrap().to_string();
        let cookie = set_cookie.split(';').next().unwrap().to_string();
        (set_cookie, cookie)
    }

    /// An operation in `tenant` waiting for a person; returns its page path.
    async fn waiting_operation(&self, tenant: &str) -> String {
        let agent = self.token(
            tenant,
            "agent",
            &["inventory:read", "inventory:write"],
            3600,
        );
        let args = json!({ "warehouse": "main", "sku": "MUG-1", "to": 500, "expectedVersion": 0 });
        let request = rpc_as(
            Some(&agent),
            1,
            "tools/call",
            json!({ "name": "inventory_propose", "arguments": args }),
        );
        let reply = send(&self.router, request).await.json();
        let proposed = &reply["result"]["structuredContent"];
        assert_eq!(proposed["status"], "waiting_for_person", "{reply}");
        format!("/approvals/{}", proposed["operationId"].as_str().unwrap())
    }

    async fn mcp_with_bearer(&self, bearer: &str) -> Reply {
        send(
            &self.router,
            rpc_as(Some(bearer), 1, "tools/list", json!({})),
        )
        .await
    }
}

trait Now {
    fn now(&self) -> u64;
}

impl Now for ManualClock {
    fn now(&self) -> u64 {
        relevo_protocol::Clock::now_unix(self)
    }
}

fn value_of(cookie: &str) -> &str {
    cookie.split_once('=').unwrap().1
}

async fn the_cookie_is_not_the_token_and_is_refused_on_mcp(store: Arc<dyn RecordStore>) {
    let site = site(store);
    let token = site.manager("acme", 600);
    assert_eq!(
        site.mcp_with_bearer(&token).await.status,
        200,
        "the token itself works on /mcp"
    );
    let (set_cookie, cookie) = site.sign_in(&token).await;
    assert!(
        set_cookie.contains("HttpOnly")
            && set_cookie.contains("SameSite=Strict")
            && set_cookie.contains("Path=/approvals"),
        "{set_cookie}"
    );
    let session = value_of(&cookie);
    assert!(
        !session.contains(&token) && !token.contains(session),
        "the cookie carries the token: {cookie}"
    );
    for part in token.split('.') {
        assert!(
            !session.contains(part),
            "the cookie carries a part of the token: {cookie}"
        );
    }
    let refused = site.mcp_with_bearer(session).await;
    assert_eq!(
        refused.status, 401,
        "the session is no bearer token: {}",
        refused.text
    );
    let path = site.waiting_operation("acme").await;
    let shown = site.page("GET", &path, &[("cookie", &cookie)], "").await;
    assert_eq!(
        shown.status, 200,
        "the session signs in on the page: {}",
        shown.text
    );
}

async fn a_session_ends_at_the_token_expiry_or_within_the_hour(store: Arc<dyn RecordStore>) {
    let site = site(store);
    let path = site.waiting_operation("acme").await;
    let (short_lived, short) = site.sign_in(&site.manager("acme", 600)).await;
    assert!(short_lived.contains("Max-Age=600"), "{short_lived}");
    let (long_lived, long) = site.sign_in(&site.manager("acme", 8 * 3600)).await;
    assert!(
        long_lived.contains("Max-Age=3600"),
        "at most an hour: {long_lived}"
    );

    site.clock.advance(599);
    assert_eq!(
        site.page("GET", &path, &[("cookie", &short)], "")
            .await
            .status,
        200,
        "before the token's exp"
    );
    site.clock.advance(1);
    assert_eq!(
        site.page("GET", &path, &[("cookie", &short)], "")
            .await
            .status,
        401,
        "past the token's exp"
    );
    assert_eq!(
        site.page("GET", &path, &[("cookie", &long)], "")
            .await
            .status,
        200
    );
    site.clock.advance(3000); // an hour after sign-in
    let expired = site.page("GET", &path, &[("cookie", &long)], "").await;
    assert_eq!(
        expired.status, 401,
        "an hour after sign-in, though the token lives on: {}",
        expired.text
    );
}

async fn a_session_is_bound_to_its_tenant(store: Arc<dyn RecordStore>) {
    let site = site(store);
    let path = site.waiting_operation("acme").await;
    let (_, ours) = site.sign_in(&site.manager("acme", 600)).await;
    let shown = site.page("GET", &path, &[("cookie", &ours)], "").await;
    assert_eq!(shown.status, 200);
    let (digest, csrf) = (hidden(&shown.text, "digest"), hidden(&shown.text, "csrf"));
    let (_, theirs) = site.sign_in(&site.manager("globex", 600)).await;
    assert_eq!(
        site.page("GET", &path, &[("cookie", &theirs)], "")
            .await
            .status,
        404,
        "another tenant sees nothing"
    );
    let decision = form(&[
        ("decision", "approve"),
        ("digest", &digest),
        ("csrf", &csrf),
    ]);
    let form_type = ("content-type", "application/x-www-form-urlencoded");
    let refused = site
        .page("POST", &path, &[("cookie", &theirs), form_type], &decision)
        .await;
    assert!(
        [403, 404].contains(&refused.status.as_u16()),
        "another tenant decides nothing: {}",
        refused.text
    );
    let shown = site.page("GET", &path, &[("cookie", &ours)], "").await;
    assert!(
        shown.text.contains("<td id=\"status\">proposed</td>"),
        "{}",
        shown.text
    );
}

async fn after_sign_out_the_same_cookie_is_refused(store: Arc<dyn RecordStore>) {
    let site = site(store);
    let path = site.waiting_operation("acme").await;
    let (_, cookie) = site.sign_in(&site.manager("acme", 600)).await;
    let (_, other) = site.sign_in(&site.manager("acme", 600)).await;
    let shown = site.page("GET", &path, &[("cookie", &cookie)], "").await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    let csrf = hidden(&shown.text, "csrf");
    let (digest, sign_out_csrf) = (hidden(&shown.text, "digest"), signout_csrf(&shown.text));
    let form_type = ("content-type", "application/x-www-form-urlencoded");

    let no_csrf = site
        .page(
            "POST",
            "/approvals/logout",
            &[("cookie", &cookie), form_type],
            "",
        )
        .await;
    assert_eq!(
        no_csrf.status, 403,
        "a sign-out needs the form's CSRF token"
    );
    let with_others = site
        .page(
            "POST",
            "/approvals/logout",
            &[("cookie", &other), form_type],
            &form(&[("csrf", &sign_out_csrf)]),
        )
        .await;
    assert_eq!(
        with_others.status, 403,
        "the CSRF token is bound to its session"
    );
    let foreign = [
        ("cookie", cookie.as_str()),
        form_type,
        ("origin", "https://evil.example"),
    ];
    let cross_site = site
        .page(
            "POST",
            "/approvals/logout",
            &foreign,
            &form(&[("csrf", &sign_out_csrf)]),
        )
        .await;
    assert_eq!(cross_site.status, 403, "a foreign Origin is refused");
    assert_eq!(
        site.page("GET", &path, &[("cookie", &cookie)], "")
            .await
            .status,
        200,
        "still signed in"
    );

    let signed_out = site
        .page(
            "POST",
            "/approvals/logout",
            &[("cookie", &cookie), form_type],
            &form(&[("csrf", &sign_out_csrf)]),
        )
        .await;
    assert_eq!(signed_out.status, 200, "{}", signed_out.text);
    let cleared = signed_out.headers["set-cookie"].to_str().unwrap();
    assert!(
        cleared.starts_with("relevo_approver=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );

    let replayed = site.page("GET", &path, &[("cookie", &cookie)], "").await;
    assert_eq!(
        replayed.status, 401,
        "the cookie replayed after sign-out: {}",
        replayed.text
    );
    let decision = form(&[
        ("decision", "approve"),
        ("digest", &digest),
        ("csrf", &csrf),
    ]);
    let decided = site
        .page("POST", &path, &[("cookie", &cookie), form_type], &decision)
        .await;
    assert_eq!(decided.status, 401, "nor can it decide: {}", decided.text);
    assert_eq!(
        site.page("GET", &path, &[("cookie", &other)], "")
            .await
            .status,
        200,
        "other sessions live on"
    );
    let again = site
        .page(
            "POST",
            "/approvals/logout",
            &[("cookie", &cookie), form_type],
            &form(&[("csrf", &sign_out_csrf)]),
        )
        .await;
    assert_eq!(again.status, 401, "an ended session cannot sign out again");
}

/// The CSRF token of the sign-out form (the page's last form).
fn signout_csrf(html: &str) -> String {
    let form = &html[html
        .find("action=\"/approvals/logout\"")
        .expect("a sign-out form")..];
    hidden(form, "csrf")
}

async fn a_tampered_session_is_refused(store: Arc<dyn RecordStore>) {
    let site = site(store);
    let path = site.waiting_operation("acme").await;
    let (_, cookie) = site.sign_in(&site.manager("acme", 600)).await;
    assert_eq!(
        site.page("GET", &path, &[("cookie", &cookie)], "")
            .await
            .status,
        200
    );
    let session = value_of(&cookie).to_string();
    let parts: Vec<&str> = session.split('.').collect();
    assert_eq!(parts.len(), 4, "v1.kid.payload.mac: {session}");

    // The payload rewritten to another tenant and subject, and every single-character change.
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut payload: Value = serde_json::from_slice(&b64.decode(parts[2]).unwrap()).unwrap();
    payload["p"]["t"] = json!("globex");
    payload["p"]["s"] = json!("root");
    let rewritten = format!(
        "v1.{}.{}.{}",
        parts[1],
        b64.encode(payload.to_string()),
        parts[3]
    );
    let mut forged = vec![rewritten];
    for index in [3, session.len() / 2, session.len() - 2] {
        let mut bytes = session.clone().into_bytes();
        bytes[index] = if bytes[index] == b'A' { b'B' } else { b'A' };
        forged.push(String::from_utf8(bytes).unwrap());
    }
    // Sealed with another deployment's key, under the same key id.
    let foreign = KeyRing::new(vec![("test".into(), vec![7; 32])]).unwrap();
    forged.push(foreign.seal(
        relevo_protocol::pages::PAGE_SESSION_DOMAIN,
        &payload["p"],
        site.clock.now() + 600,
    ));
    // A value this deployment sealed for another purpose (a CSRF token, a requestState).
    forged.push(test_keys().seal("approval-csrf", &payload["p"], site.clock.now() + 600));
    forged.push(test_keys().seal("request-state", &payload["p"], site.clock.now() + 600));
    for value in forged {
        let shown = site
            .page(
                "GET",
                &path,
                &[("cookie", &format!("relevo_approver={value}"))],
                "",
            )
            .await;
        assert_eq!(shown.status, 401, "{value} was accepted: {}", shown.text);
    }
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $name() {
                super::$name(super::sqlite()).await;
            })*
        }
        mod dynamodb {
            $(#[tokio::test]
            async fn $name() {
                super::$name(super::dynamo().await).await;
            })*
        }
    };
}

on_both_backends!(
    the_cookie_is_not_the_token_and_is_refused_on_mcp,
    a_session_ends_at_the_token_expiry_or_within_the_hour,
    a_session_is_bound_to_its_tenant,
    after_sign_out_the_same_cookie_is_refused,
    a_tampered_session_is_refused,
);
