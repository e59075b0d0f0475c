//! Token verification against a JWKS served over real HTTP on 127.0.0.1, one refusal per test.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderValue, StatusCode};
use jsonwebtoken::jwk::JwkSet;
use relevo_auth::{AuthError, AuthSettings, BearerAuthenticator, DevIssuer, HttpKeySource};
use relevo_protocol::ManualClock;
use serde_json::{Value, json};
use tokio::sync::RwLock;

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "https://mcp.test/mcp";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

struct Issuer {
    key: DevIssuer,
    served: Arc<RwLock<JwkSet>>,
    fetches: Arc<AtomicUsize>,
    url: String,
}

/// Serves `key`'s JWKS on a loopback port; the served set can be changed (rotation).
async fn issuer() -> Issuer {
    let key = DevIssuer::generate(ISSUER, AUDIENCE);
    let served = Arc::new(RwLock::new(key.jwks()));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (set, count) = (served.clone(), fetches.clone());
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let (set, count) = (set.clone(), count.clone());
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                axum::Json(serde_json::to_value(&*set.read().await).unwrap())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Issuer {
        key,
        served,
        fetches,
        url,
    }
}

fn settings(jwks_url: &str, required_scopes: &[&str]) -> AuthSettings {
    let mut vars = vec![
        ("RELEVO_AUTH_ISSUER", ISSUER.to_string()),
        ("RELEVO_AUTH_AUDIENCE", AUDIENCE.to_string()),
        ("RELEVO_AUTH_JWKS_URL", jwks_url.to_string()),
        ("RELEVO_AUTH_ALGORITHMS", "ES256,RS256".to_string()),
        ("RELEVO_AUTH_LEEWAY_SECS", "5".to_string()),
    ];
    if !required_scopes.is_empty() {
        vars.push(("RELEVO_AUTH_REQUIRED_SCOPES", required_scopes.join(" ")));
    }
    AuthSettings::load(
        |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        },
        "",
    )
    .unwrap()
}

fn verifier(issuer: &Issuer, required_scopes: &[&str]) -> BearerAuthenticator {
    BearerAuthenticator::new(
        settings(&issuer.url, required_scopes),
        Arc::new(HttpKeySource::new(&issuer.url)),
    )
}

fn claims(overrides: Value) -> Value {
    let t = now();
    let mut claims = json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "tenant": "acme", "scope": "notes:read", "iat": t, "exp": t + 300 });
    for (key, value) in overrides.as_object().unwrap() {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(key);
        } else {
            claims[key] = value.clone();
        }
    }
    claims
}

fn bearer(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    headers
}

#[tokio::test]
async fn valid_token_yields_tenant_subject_and_scopes() {
    let issuer = issuer().await;
    let token = issuer
        .key
        .sign(&claims(json!({ "scope": "notes:read notes:write" })))
        .unwrap();
    let principal = verifier(&issuer, &[])
        .verify(&bearer(&token))
        .await
        .unwrap();
    assert_eq!(
        (principal.tenant.as_str(), principal.subject.as_str()),
        ("acme", "alice")
    );
    assert!(
        relevo_auth::ring_crypto::installed(),
        "ring verifies the signatures"
    );
    assert!(principal.holds(&["notes:read".into(), "notes:write".into()]));
}

#[tokio::test]
async fn no_token_is_401_without_an_error_code_but_with_the_metadata_url() {
    let issuer = issuer().await;
    let verifier = verifier(&issuer, &["mcp"]);
    let error = verifier.verify(&HeaderMap::new()).await.unwrap_err();
    assert_eq!(error, AuthError::MissingToken);
    let challenge = verifier.challenge(&error);
    assert_eq!(challenge.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge.www_authenticate,
        "Bearer scope=\"mcp\", resource_metadata=\"https://mcp.test/.well-known/oauth-protected-resource/mcp\""
    );
}

#[tokio::test]
async fn malformed_tokens_are_invalid_token() {
    let issuer = issuer().await;
    let verifier = verifier(&issuer, &[]);
    for token in ["not-a-jwt", "a.b.c", "eyJhbGciOiJFUzI1NiJ9.e30"] {
        let error = verifier.verify(&bearer(token)).await.unwrap_err();
        assert_eq!(error, AuthError::MalformedToken, "{token}");
        assert_eq!(verifier.challenge(&error).status, StatusCode::UNAUTHORIZED);
        assert!(
            verifier
                .challenge(&error)
                .www_authenticate
                .contains("error=\"invalid_token\"")
        );
    }
    let mut basic = HeaderMap::new();
    basic.insert(
        "authorization",
        HeaderValue::from_static("Basic YWxpY2U6cGFzcw=="),
    );
    // Another scheme carries no Bearer token: the bare 401 challenge (RFC 6750 §3.1).
    assert_eq!(
        verifier.verify(&basic).await.unwrap_err(),
        AuthError::MissingToken
    );
    let mut empty = HeaderMap::new();
    empty.insert("authorization", HeaderValue::from_static("Bearer "));
    assert_eq!(
        verifier.verify(&empty).await.unwrap_err(),
        AuthError::MalformedHeader
    );
}

#[tokio::test]
async fn wrong_signature_is_refused() {
    let issuer = issuer().await;
    let mut impostor = DevIssuer::generate(ISSUER, AUDIENCE);
    impostor.kid = issuer.key.kid.clone();
    let token = impostor.sign(&claims(json!({}))).unwrap();
    assert_eq!(
        verifier(&issuer, &[])
            .verify(&bearer(&token))
            .await
            .unwrap_err(),
        AuthError::BadSignature
    );
}

#[tokio::test]
async fn alg_none_is_refused() {
    use base64::Engine;
    let b64 = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let token = format!(
        "{}.{}.",
        b64(json!({ "alg": "none", "typ": "JWT", "kid": "x" })),
        b64(claims(json!({})))
    );
    let issuer = issuer().await;
    let error = verifier(&issuer, &[])
        .verify(&bearer(&token))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            AuthError::MalformedToken | AuthError::AlgorithmNotAllowed
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn hs256_signed_with_the_public_key_is_refused() {
    use jsonwebtoken::{EncodingKey, Header, encode};
    let issuer = issuer().await;
    let public = serde_json::to_vec(&issuer.key.jwks()).unwrap();
    let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(issuer.key.kid.clone());
    let token = encode(
        &header,
        &claims(json!({})),
        &EncodingKey::from_secret(&public).unwrap(),
    )
    .unwrap();
    assert_eq!(
        verifier(&issuer, &[])
            .verify(&bearer(&token))
            .await
            .unwrap_err(),
        AuthError::AlgorithmNotAllowed
    );
}

#[tokio::test]
async fn expired_and_not_yet_valid_tokens_are_refused() {
    let issuer = issuer().await;
    let verifier = verifier(&issuer, &[]);
    let t = now();
    let expired = issuer.key.sign(&claims(json!({ "exp": t - 60 }))).unwrap();
    assert_eq!(
        verifier.verify(&bearer(&expired)).await.unwrap_err(),
        AuthError::Expired
    );
    let early = issuer.key.sign(&claims(json!({ "nbf": t + 600 }))).unwrap();
    assert_eq!(
        verifier.verify(&bearer(&early)).await.unwrap_err(),
        AuthError::NotYetValid
    );
    let within_skew = issuer.key.sign(&claims(json!({ "exp": t - 2 }))).unwrap();
    assert!(
        verifier.verify(&bearer(&within_skew)).await.is_ok(),
        "2 s past exp is inside the 5 s leeway"
    );
    let no_exp = issuer.key.sign(&claims(json!({ "exp": null }))).unwrap();
    assert_eq!(
        verifier.verify(&bearer(&no_exp)).await.unwrap_err(),
        AuthError::MissingClaim("exp".into())
    );
}

/// An issuer and a verifier whose clock starts now and moves only when told.
async fn clocked() -> (Issuer, BearerAuthenticator, ManualClock, u64) {
    let issuer = issuer().await;
    let t = now();
    let clock = ManualClock::at(t);
    let verifier = verifier(&issuer, &[]).with_clock(Arc::new(clock.clone()));
    (issuer, verifier, clock, t)
}

#[tokio::test]
async fn a_remembered_token_still_expires_by_the_injected_clock() {
    let (issuer, verifier, clock, t) = clocked().await;
    let token = issuer.key.sign(&claims(json!({ "exp": t + 60 }))).unwrap();
    assert!(verifier.verify(&bearer(&token)).await.is_ok());
    clock.advance(65);
    assert!(
        verifier.verify(&bearer(&token)).await.is_ok(),
        "exp + 5 s leeway is the last valid second"
    );
    clock.advance(1);
    assert_eq!(
        verifier.verify(&bearer(&token)).await.unwrap_err(),
        AuthError::Expired
    );
}

#[tokio::test]
async fn not_before_is_checked_by_the_injected_clock() {
    let (issuer, verifier, clock, t) = clocked().await;
    let token = issuer.key.sign(&claims(json!({ "nbf": t + 100 }))).unwrap();
    assert_eq!(
        verifier.verify(&bearer(&token)).await.unwrap_err(),
        AuthError::NotYetValid
    );
    clock.advance(95);
    assert!(
        verifier.verify(&bearer(&token)).await.is_ok(),
        "nbf - 5 s leeway is the first valid second"
    );
}

#[tokio::test]
async fn only_the_exact_token_that_verified_is_remembered() {
    let issuer = issuer().await;
    let verifier = verifier(&issuer, &[]);
    let token = issuer.key.sign(&claims(json!({}))).unwrap();
    assert!(verifier.verify(&bearer(&token)).await.is_ok());
    let (signed, signature) = token.rsplit_once('.').unwrap();
    let mut forged: Vec<char> = signature.chars().collect();
    forged[10] = if forged[10] == 'A' { 'B' } else { 'A' };
    let forged = format!("{signed}.{}", forged.into_iter().collect::<String>());
    assert_eq!(
        verifier.verify(&bearer(&forged)).await.unwrap_err(),
        AuthError::BadSignature
    );
    let other_claims = issuer
        .key
        .sign(&claims(json!({ "sub": "mallory" })))
        .unwrap();
    let mallory = verifier
        .verify(&bearer(&format!(
            "{}.{signature}",
            other_claims.rsplit_once('.').unwrap().0
        )))
        .await;
    assert_eq!(
        mallory.unwrap_err(),
        AuthError::BadSignature,
        "claims swapped under a remembered signature"
    );
}

#[tokio::test]
async fn token_for_another_resource_or_issuer_is_refused() {
    let issuer = issuer().await;
    let verifier = verifier(&issuer, &[]);
    let other_resource = issuer
        .key
        .sign(&claims(json!({ "aud": "https://other.test/mcp" })))
        .unwrap();
    assert_eq!(
        verifier.verify(&bearer(&other_resource)).await.unwrap_err(),
        AuthError::WrongAudience
    );
    let other_issuer = issuer
        .key
        .sign(&claims(json!({ "iss": "https://evil.test" })))
        .unwrap();
    assert_eq!(
        verifier.verify(&bearer(&other_issuer)).await.unwrap_err(),
        AuthError::WrongIssuer
    );
}

#[tokio::test]
async fn token_without_tenant_is_refused() {
    let issuer = issuer().await;
    let token = issuer.key.sign(&claims(json!({ "tenant": null }))).unwrap();
    assert_eq!(
        verifier(&issuer, &[])
            .verify(&bearer(&token))
            .await
            .unwrap_err(),
        AuthError::MissingClaim("tenant".into())
    );
}

#[tokio::test]
async fn missing_required_scope_is_403_naming_it() {
    let issuer = issuer().await;
    let verifier = verifier(&issuer, &["mcp:use"]);
    let token = issuer
        .key
        .sign(&claims(json!({ "scope": "notes:read" })))
        .unwrap();
    let error = verifier.verify(&bearer(&token)).await.unwrap_err();
    let challenge = verifier.challenge(&error);
    assert_eq!(challenge.status, StatusCode::FORBIDDEN);
    assert!(
        challenge
            .www_authenticate
            .starts_with("Bearer error=\"insufficient_scope\"")
    );
    assert!(challenge.www_authenticate.contains("scope=\"mcp:use\""));
}

#[tokio::test]
async fn unknown_kid_refetches_once_then_refuses() {
    let issuer = issuer().await;
    let verifier = verifier(&issuer, &[]);
    let good = issuer.key.sign(&claims(json!({}))).unwrap();
    verifier.verify(&bearer(&good)).await.unwrap();
    verifier.verify(&bearer(&good)).await.unwrap();
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        1,
        "fetched once, then cached"
    );

    let stranger = DevIssuer::generate(ISSUER, AUDIENCE);
    let token = stranger.sign(&claims(json!({}))).unwrap();
    assert_eq!(
        verifier.verify(&bearer(&token)).await.unwrap_err(),
        AuthError::UnknownKey
    );
    assert_eq!(
        verifier.verify(&bearer(&token)).await.unwrap_err(),
        AuthError::UnknownKey
    );
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        1,
        "a refetch waits out the minimum interval"
    );
}

#[tokio::test]
async fn a_rotated_in_key_is_picked_up_on_first_sight() {
    let issuer = issuer().await;
    let rotated = DevIssuer::generate(ISSUER, AUDIENCE);
    *issuer.served.write().await = rotated.jwks();
    let verifier = verifier(&issuer, &[]);
    let token = rotated.sign(&claims(json!({}))).unwrap();
    assert!(verifier.verify(&bearer(&token)).await.is_ok());
}

#[tokio::test]
async fn unreachable_jwks_is_503_not_a_pass() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    drop(listener);
    let key = DevIssuer::generate(ISSUER, AUDIENCE);
    let verifier =
        BearerAuthenticator::new(settings(&url, &[]), Arc::new(HttpKeySource::new(&url)));
    let error = verifier
        .verify(&bearer(&key.sign(&claims(json!({}))).unwrap()))
        .await
        .unwrap_err();
    assert_eq!(error, AuthError::KeysUnavailable);
    assert_eq!(
        verifier.challenge(&error).status,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[tokio::test]
async fn a_request_says_whether_its_token_was_verified_or_recalled() {
    use relevo_protocol::Authenticator;
    let issuer = issuer().await;
    let verifier = verifier(&issuer, &[]);
    let token = issuer.key.sign(&claims(json!({}))).unwrap();
    let (first, verified) = verifier.authenticate_checked(&bearer(&token)).await;
    assert!(
        first.is_ok() && verified,
        "the first sight is a verification"
    );
    let (again, verified) = verifier.authenticate_checked(&bearer(&token)).await;
    assert!(
        again.is_ok() && !verified,
        "then it is recalled, not verified"
    );
    assert_eq!(first.unwrap(), again.unwrap());
    let (none, verified) = verifier.authenticate_checked(&HeaderMap::new()).await;
    assert_eq!(
        (none.unwrap_err().status, verified),
        (StatusCode::UNAUTHORIZED, false),
        "no credential: nothing verified"
    );
}
