//! Access tokens shaped exactly as each identity provider issues them (header, claims, JWKS entry),
//! signed by a fixed RS256 test key (`fixtures/`, a test key only), verified with and without the
//! provider's `RELEVO_AUTH_PROVIDER` setting. "Without" means the same environment minus that one
//! variable, so the difference a test shows is the provider's and nothing else.
//!
//! Shapes, from the providers' documentation:
//! - Cognito: https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-the-access-token.html
//!   (and `…-using-the-id-token.html`, `…-using-tokens-verifying-a-jwt.html`)
//! - Auth0: https://auth0.com/docs/secure/tokens/access-tokens/access-token-profiles and
//!   https://auth0.com/docs/get-started/apis/enable-role-based-access-control-for-apis
//! - Okta: https://developer.okta.com/docs/api/resources/oidc.html (custom authorization server)
//! - Entra ID: https://learn.microsoft.com/entra/identity-platform/access-token-claims-reference
//!
//! The verifier's clock is injected: every token is valid at [`NOW`] and at no other time needed.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD as B64};
use http::{HeaderMap, HeaderValue};
use relevo_auth::{AuthError, AuthSettings, BearerAuthenticator, StaticKeySource};
use relevo_protocol::{ManualClock, Principal};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair, RsaPublicKeyComponents};
use serde_json::{Value, json};

/// 2026-01-01T00:00:00Z.
const NOW: u64 = 1_767_225_600;

const TEST_KEY: &str = include_str!("fixtures/provider-test-key.pem");
const IMPOSTOR_KEY: &str = include_str!("fixtures/provider-impostor-key.pem");
const TEST_CERT: &str = include_str!("fixtures/provider-test-cert.pem");

const MCP_URL: &str = "https://mcp.example.com/mcp";

fn pem_body(pem: &str) -> Vec<u8> {
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    STANDARD.decode(body).unwrap()
}

fn key_pair(pem: &str) -> RsaKeyPair {
    RsaKeyPair::from_pkcs8(&pem_body(pem)).unwrap()
}

/// The test key's public half as a JWK's `n` and `e`.
fn modulus_and_exponent() -> (String, String) {
    let components = RsaPublicKeyComponents::<Vec<u8>>::from(key_pair(TEST_KEY).public());
    (B64.encode(&components.n), B64.encode(&components.e))
}

/// The certificate's SHA-1 thumbprint (`x5t`) and its DER in standard base64 (`x5c`).
fn thumbprint_and_chain() -> (String, String) {
    let der = pem_body(TEST_CERT);
    let thumbprint = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &der);
    (B64.encode(thumbprint.as_ref()), STANDARD.encode(&der))
}

/// A compact JWS of `header` and `claims`, RS256 with `pem`'s key.
fn sign(pem: &str, header: &Value, claims: &Value) -> String {
    let signing_input = format!(
        "{}.{}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    );
    let pair = key_pair(pem);
    let mut signature = vec![0; pair.public().modulus_len()];
    pair.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .unwrap();
    format!("{signing_input}.{}", B64.encode(signature))
}

fn bearer(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    headers
}

/// A verifier for `vars` (plus `RELEVO_AUTH_PROVIDER=provider` unless `None`) trusting `jwks`,
/// its clock at [`NOW`].
fn verifier(vars: &[(&str, &str)], provider: Option<&str>, jwks: &Value) -> BearerAuthenticator {
    let mut vars: Vec<(&str, &str)> = vars.to_vec();
    vars.extend(provider.map(|p| ("RELEVO_AUTH_PROVIDER", p)));
    let settings = AuthSettings::load(
        |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        },
        "",
    )
    .unwrap();
    let keys = Arc::new(StaticKeySource(
        serde_json::from_value(jwks.clone()).unwrap(),
    ));
    BearerAuthenticator::new(settings, keys).with_clock(Arc::new(ManualClock::at(NOW)))
}

async fn verify(verifier: &BearerAuthenticator, token: &str) -> Result<Principal, AuthError> {
    verifier.verify(&bearer(token)).await
}

/// `claims` with `overrides` applied: a null removes the claim.
fn with(claims: &Value, overrides: Value) -> Value {
    let mut claims = claims.clone();
    for (key, value) in overrides.as_object().unwrap() {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(key);
        } else {
            claims[key] = value.clone();
        }
    }
    claims
}

// ---------------------------------------------------------------------------------------------
// Amazon Cognito: access tokens carry `client_id` and `token_use`, no `aud`.

const COGNITO_ISSUER: &str = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbCdEf123";
const COGNITO_KID: &str = "abcdefghijklmnopqrsexample=";
const COGNITO_CLIENT: &str = "1example23456789";

fn cognito_vars() -> Vec<(&'static str, &'static str)> {
    vec![
        ("RELEVO_AUTH_ISSUER", COGNITO_ISSUER),
        ("RELEVO_AUTH_AUDIENCE", MCP_URL),
        ("RELEVO_AUTH_ALGORITHMS", "RS256"),
        ("RELEVO_AUTH_CLIENT_IDS", COGNITO_CLIENT),
        ("RELEVO_AUTH_REQUIRED_SCOPES", "relevo/notes.read"),
    ]
}

/// Cognito's JWKS entry: exactly `alg`, `e`, `kid`, `kty`, `n`, `use`.
fn cognito_jwks() -> Value {
    let (n, e) = modulus_and_exponent();
    json!({ "keys": [{ "alg": "RS256", "e": e, "kid": COGNITO_KID, "kty": "RSA", "n": n, "use": "sig" }] })
}

fn cognito_header() -> Value {
    json!({ "kid": COGNITO_KID, "alg": "RS256" })
}

/// An access token from the authorization code flow, `tenant` added by a pre token generation
/// trigger (V2 can add claims to access tokens).
fn cognito_access_claims() -> Value {
    json!({
        "sub": "aaaaaaaa-bbbb-cccc-dddd-example",
        "cognito:groups": ["admin"],
        "iss": COGNITO_ISSUER,
        "version": 2,
        "client_id": COGNITO_CLIENT,
        "origin_jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "event_id": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "token_use": "access",
        "scope": "openid relevo/notes.read relevo/notes.write",
        "auth_time": NOW - 60,
        "exp": NOW + 3600,
        "iat": NOW - 60,
        "jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "username": "alice",
        "tenant": "acme",
    })
}

#[tokio::test]
async fn cognito_access_token_is_accepted_with_provider_cognito_and_refused_as_generic_for_lacking_aud()
 {
    let token = sign(TEST_KEY, &cognito_header(), &cognito_access_claims());

    let cognito = verifier(&cognito_vars(), Some("cognito"), &cognito_jwks());
    let principal = verify(&cognito, &token).await.unwrap();
    assert_eq!(
        (principal.tenant.as_str(), principal.subject.as_str()),
        ("acme", "aaaaaaaa-bbbb-cccc-dddd-example")
    );
    assert!(principal.holds(&["relevo/notes.read".into(), "relevo/notes.write".into()]));

    let generic = verifier(&cognito_vars(), None, &cognito_jwks());
    assert_eq!(
        verify(&generic, &token).await.unwrap_err(),
        AuthError::MissingClaim("aud".into())
    );
}

#[tokio::test]
async fn cognito_id_token_is_refused_as_not_an_access_token() {
    let id_token = json!({
        "sub": "aaaaaaaa-bbbb-cccc-dddd-example",
        "cognito:groups": ["admin"],
        "email_verified": true,
        "iss": COGNITO_ISSUER,
        "cognito:username": "alice",
        "origin_jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "aud": COGNITO_CLIENT,
        "event_id": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "token_use": "id",
        "auth_time": NOW - 60,
        "exp": NOW + 3600,
        "iat": NOW - 60,
        "jti": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "email": "alice@example.com",
        "tenant": "acme",
    });
    let cognito = verifier(&cognito_vars(), Some("cognito"), &cognito_jwks());
    let token = sign(TEST_KEY, &cognito_header(), &id_token);
    assert_eq!(
        verify(&cognito, &token).await.unwrap_err(),
        AuthError::NotAnAccessToken
    );

    let no_token_use = sign(
        TEST_KEY,
        &cognito_header(),
        &with(&cognito_access_claims(), json!({ "token_use": null })),
    );
    assert_eq!(
        verify(&cognito, &no_token_use).await.unwrap_err(),
        AuthError::MissingClaim("token_use".into())
    );
}

#[tokio::test]
async fn cognito_token_of_another_app_client_is_refused() {
    let cognito = verifier(&cognito_vars(), Some("cognito"), &cognito_jwks());
    let other = with(
        &cognito_access_claims(),
        json!({ "client_id": "9otherclient0000" }),
    );
    assert_eq!(
        verify(&cognito, &sign(TEST_KEY, &cognito_header(), &other))
            .await
            .unwrap_err(),
        AuthError::WrongClient
    );
    let none = with(&cognito_access_claims(), json!({ "client_id": null }));
    assert_eq!(
        verify(&cognito, &sign(TEST_KEY, &cognito_header(), &none))
            .await
            .unwrap_err(),
        AuthError::MissingClaim("client_id".into())
    );
}

#[tokio::test]
async fn cognito_access_token_bound_to_a_resource_must_name_this_server() {
    let cognito = verifier(&cognito_vars(), Some("cognito"), &cognito_jwks());
    let ours = with(&cognito_access_claims(), json!({ "aud": MCP_URL }));
    assert!(
        verify(&cognito, &sign(TEST_KEY, &cognito_header(), &ours))
            .await
            .is_ok()
    );
    let theirs = with(
        &cognito_access_claims(),
        json!({ "aud": ["https://other.example.com/api"] }),
    );
    assert_eq!(
        verify(&cognito, &sign(TEST_KEY, &cognito_header(), &theirs))
            .await
            .unwrap_err(),
        AuthError::WrongAudience
    );
}

// ---------------------------------------------------------------------------------------------
// Auth0: `aud` an array (API identifier plus `/userinfo`), `iss` with a trailing slash, RBAC
// `permissions` next to `scope`.

const AUTH0_TENANT: &str = "https://relevo-test.us.auth0.com";
const AUTH0_KID: &str = "Qk1fTjZlX2V4YW1wbGVfa2lk";
const AUTH0_CLIENT: &str = "AbCdEfGhIjKlMnOpQrStUvWxYz012345";

fn auth0_vars() -> Vec<(&'static str, &'static str)> {
    vec![
        // Configured without the slash on purpose: the auth0 provider adds it.
        ("RELEVO_AUTH_ISSUER", AUTH0_TENANT),
        ("RELEVO_AUTH_AUDIENCE", MCP_URL),
        ("RELEVO_AUTH_TENANT_CLAIM", "org_id"),
        ("RELEVO_AUTH_REQUIRED_SCOPES", "notes:read"),
    ]
}

/// Auth0's JWKS entry: `kty`, `use`, `n`, `e`, `kid`, `x5t`, `x5c`, `alg`.
fn auth0_jwks() -> Value {
    let (n, e) = modulus_and_exponent();
    let (x5t, x5c) = thumbprint_and_chain();
    json!({ "keys": [{
        "kty": "RSA", "use": "sig", "n": n, "e": e, "kid": AUTH0_KID, "x5t": x5t, "x5c": [x5c], "alg": "RS256",
    }] })
}

fn auth0_header() -> Value {
    json!({ "alg": "RS256", "typ": "JWT", "kid": AUTH0_KID })
}

/// The Auth0 token profile with RBAC's `permissions` and an Organizations `org_id`; the client
/// asked for `openid profile` only, so `scope` holds no API permission.
fn auth0_claims() -> Value {
    json!({
        "iss": format!("{AUTH0_TENANT}/"),
        "sub": "auth0|123456",
        "aud": [MCP_URL, format!("{AUTH0_TENANT}/userinfo")],
        "azp": AUTH0_CLIENT,
        "exp": NOW + 86400,
        "iat": NOW - 60,
        "scope": "openid profile",
        "org_id": "org_acme123",
        "permissions": ["notes:read", "notes:write"],
    })
}

#[tokio::test]
async fn auth0_permissions_count_as_scopes_with_provider_auth0_and_not_as_generic() {
    let token = sign(TEST_KEY, &auth0_header(), &auth0_claims());

    let auth0 = verifier(&auth0_vars(), Some("auth0"), &auth0_jwks());
    let principal = verify(&auth0, &token).await.unwrap();
    assert_eq!(
        (principal.tenant.as_str(), principal.subject.as_str()),
        ("org_acme123", "auth0|123456")
    );
    assert!(principal.holds(&["notes:write".into(), "openid".into()]));

    // Generic (its issuer given with the slash, as it would have to be) reads the array `aud`
    // fine but not `permissions`: the required scope is missing.
    let mut generic_vars = auth0_vars();
    generic_vars[0] = ("RELEVO_AUTH_ISSUER", "https://relevo-test.us.auth0.com/");
    let generic = verifier(&generic_vars, None, &auth0_jwks());
    assert_eq!(
        verify(&generic, &token).await.unwrap_err(),
        AuthError::InsufficientScope(vec!["notes:read".into()])
    );
    let scoped = sign(
        TEST_KEY,
        &auth0_header(),
        &with(&auth0_claims(), json!({ "scope": "openid notes:read" })),
    );
    assert!(
        verify(&generic, &scoped).await.is_ok(),
        "an Auth0 token with the scope in `scope` passes as generic"
    );
}

#[tokio::test]
async fn auth0_issuer_is_compared_exactly_with_its_trailing_slash() {
    let auth0 = verifier(&auth0_vars(), Some("auth0"), &auth0_jwks());
    let no_slash = with(&auth0_claims(), json!({ "iss": AUTH0_TENANT }));
    assert_eq!(
        verify(&auth0, &sign(TEST_KEY, &auth0_header(), &no_slash))
            .await
            .unwrap_err(),
        AuthError::WrongIssuer
    );
    let generic = verifier(&auth0_vars(), None, &auth0_jwks());
    let token = sign(
        TEST_KEY,
        &auth0_header(),
        &with(&auth0_claims(), json!({ "scope": "notes:read" })),
    );
    assert_eq!(
        verify(&generic, &token).await.unwrap_err(),
        AuthError::WrongIssuer,
        "generic takes RELEVO_AUTH_ISSUER literally, so Auth0's slash must be written"
    );
}

#[tokio::test]
async fn auth0_token_for_another_client_is_refused_when_clients_are_listed() {
    let mut vars = auth0_vars();
    vars.push(("RELEVO_AUTH_CLIENT_IDS", AUTH0_CLIENT));
    let auth0 = verifier(&vars, Some("auth0"), &auth0_jwks());
    assert!(
        verify(&auth0, &sign(TEST_KEY, &auth0_header(), &auth0_claims()))
            .await
            .is_ok()
    );
    let other = with(&auth0_claims(), json!({ "azp": "ZzOtherClient" }));
    assert_eq!(
        verify(&auth0, &sign(TEST_KEY, &auth0_header(), &other))
            .await
            .unwrap_err(),
        AuthError::WrongClient
    );
    // The RFC 9068 profile names the client `client_id` instead of `azp`.
    let rfc9068 = with(
        &auth0_claims(),
        json!({ "azp": null, "client_id": AUTH0_CLIENT, "jti": "73WakrfVbNJBaAmhQtEeDv" }),
    );
    assert!(
        verify(&auth0, &sign(TEST_KEY, &auth0_header(), &rfc9068))
            .await
            .is_ok()
    );
}

// ---------------------------------------------------------------------------------------------
// Okta (custom authorization server): `ver: 1`, `cid`, `uid`, `scp` an array.

const OKTA_ISSUER: &str = "https://acme.okta.com/oauth2/default";
const OKTA_KID: &str = "ZkvelLN_seik7w4pc_prCcfUf-h2hFfiwkDeCrs0iUc";
const OKTA_CLIENT: &str = "0oa1exampleclient357";

fn okta_vars() -> Vec<(&'static str, &'static str)> {
    vec![
        ("RELEVO_AUTH_ISSUER", OKTA_ISSUER),
        ("RELEVO_AUTH_AUDIENCE", MCP_URL),
        ("RELEVO_AUTH_ACCEPTED_AUDIENCES", "api://default"),
        ("RELEVO_AUTH_CLIENT_IDS", OKTA_CLIENT),
        ("RELEVO_AUTH_REQUIRED_SCOPES", "notes:read"),
    ]
}

/// Okta's JWKS entry: `kty`, `alg`, `kid`, `use`, `e`, `n`.
fn okta_jwks() -> Value {
    let (n, e) = modulus_and_exponent();
    json!({ "keys": [{ "kty": "RSA", "alg": "RS256", "kid": OKTA_KID, "use": "sig", "e": e, "n": n }] })
}

fn okta_header() -> Value {
    json!({ "kid": OKTA_KID, "alg": "RS256" })
}

/// `tenant` is a custom claim of the authorization server.
fn okta_claims() -> Value {
    json!({
        "ver": 1,
        "jti": "AT.MNAoEQ_jbKqoinrQo1D0XKjMX28U5d7ZszBceot7-Ts",
        "iss": OKTA_ISSUER,
        "aud": "api://default",
        "iat": NOW - 60,
        "exp": NOW + 3600,
        "cid": OKTA_CLIENT,
        "uid": "00u1exampleuser357",
        "scp": ["openid", "notes:read"],
        "auth_time": NOW - 120,
        "sub": "alice@example.com",
        "tenant": "acme",
    })
}

/// Honest note: as generic, an Okta token verifies too (generic already reads `scp` arrays)
/// unless clients are listed: generic looks for RFC 9068's `client_id`, which Okta names `cid`.
#[tokio::test]
async fn okta_access_token_is_accepted_with_provider_okta_and_its_client_cannot_be_checked_as_generic()
 {
    let token = sign(TEST_KEY, &okta_header(), &okta_claims());

    let okta = verifier(&okta_vars(), Some("okta"), &okta_jwks());
    let principal = verify(&okta, &token).await.unwrap();
    assert_eq!(
        (principal.tenant.as_str(), principal.subject.as_str()),
        ("acme", "alice@example.com")
    );
    assert!(principal.holds(&["openid".into(), "notes:read".into()]));

    let generic = verifier(&okta_vars(), None, &okta_jwks());
    assert_eq!(
        verify(&generic, &token).await.unwrap_err(),
        AuthError::MissingClaim("client_id".into())
    );
    let unrestricted: Vec<_> = okta_vars()
        .into_iter()
        .filter(|(k, _)| *k != "RELEVO_AUTH_CLIENT_IDS")
        .collect();
    assert!(
        verify(&verifier(&unrestricted, None, &okta_jwks()), &token)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn okta_token_from_another_client_or_audience_is_refused() {
    let okta = verifier(&okta_vars(), Some("okta"), &okta_jwks());
    let other_client = with(&okta_claims(), json!({ "cid": "0oa2otherclient" }));
    assert_eq!(
        verify(&okta, &sign(TEST_KEY, &okta_header(), &other_client))
            .await
            .unwrap_err(),
        AuthError::WrongClient
    );
    // The org authorization server's access token: `aud` is the org URL.
    let org = with(&okta_claims(), json!({ "aud": "https://acme.okta.com" }));
    assert_eq!(
        verify(&okta, &sign(TEST_KEY, &okta_header(), &org))
            .await
            .unwrap_err(),
        AuthError::WrongAudience
    );
}

// ---------------------------------------------------------------------------------------------
// Microsoft Entra ID v2: header with `x5t`, `aud` the API's client id, `tid`, `oid`, `scp` a
// string (delegated) or `roles` an array (app-only).

const ENTRA_TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const ENTRA_ISSUER: &str =
    "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0";
const ENTRA_API: &str = "6e74172b-be56-4843-9ff4-e66a39bb12e3";
const ENTRA_CLIENT: &str = "2a1d0f3c-7e5b-4c8a-9f16-0b3e4d5c6a7b";

fn entra_vars() -> Vec<(&'static str, &'static str)> {
    vec![
        ("RELEVO_AUTH_ISSUER", ENTRA_ISSUER),
        ("RELEVO_AUTH_AUDIENCE", MCP_URL),
        (
            "RELEVO_AUTH_ACCEPTED_AUDIENCES",
            "6e74172b-be56-4843-9ff4-e66a39bb12e3 api://relevo-mcp",
        ),
        ("RELEVO_AUTH_REQUIRED_SCOPES", "Notes.Read"),
    ]
}

/// Entra's JWKS entry: `kty`, `use`, `kid` (= `x5t`), `x5t`, `n`, `e`, `x5c`, and the `issuer`
/// template and `cloud_instance_name` it adds; no `alg`.
fn entra_jwks() -> Value {
    let (n, e) = modulus_and_exponent();
    let (x5t, x5c) = thumbprint_and_chain();
    json!({ "keys": [{
        "kty": "RSA", "use": "sig", "kid": x5t, "x5t": x5t, "n": n, "e": e, "x5c": [x5c],
        "cloud_instance_name": "microsoftonline.com",
        "issuer": "https://login.microsoftonline.com/{tenantid}/v2.0",
    }] })
}

fn entra_header() -> Value {
    let (x5t, _) = thumbprint_and_chain();
    json!({ "typ": "JWT", "alg": "RS256", "x5t": x5t, "kid": x5t })
}

/// A delegated (user) token: `scp` a space-separated string; `sub` is pairwise, `oid` is not.
fn entra_delegated_claims() -> Value {
    json!({
        "aud": ENTRA_API,
        "iss": ENTRA_ISSUER,
        "iat": NOW - 60,
        "nbf": NOW - 60,
        "exp": NOW + 3600,
        "aio": "AXQAi/8TAAAA",
        "azp": ENTRA_CLIENT,
        "azpacr": "0",
        "name": "Alice Example",
        "oid": "00000000-0000-0000-66f3-3332eca7ea81",
        "preferred_username": "alice@contoso.com",
        "rh": "0.AAAA.",
        "scp": "Notes.Read Notes.Write",
        "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
        "tid": ENTRA_TENANT,
        "uti": "fqiBqXLPj0eQa82S-IYFAA",
        "ver": "2.0",
    })
}

/// An app-only (client credentials) token: `roles`, no `scp`; `sub` = `oid` = the client's
/// service principal.
fn entra_app_claims() -> Value {
    json!({
        "aud": ENTRA_API,
        "iss": ENTRA_ISSUER,
        "iat": NOW - 60,
        "nbf": NOW - 60,
        "exp": NOW + 3600,
        "aio": "E2ZgYJjv/8TAAA==",
        "azp": ENTRA_CLIENT,
        "azpacr": "1",
        "idtyp": "app",
        "oid": "8f7c2b1a-1111-2222-3333-444455556666",
        "rh": "0.AAAA.",
        "roles": ["Notes.Read", "Notes.Read.All"],
        "sub": "8f7c2b1a-1111-2222-3333-444455556666",
        "tid": ENTRA_TENANT,
        "uti": "Zb1gD2Jd8k6z0pKj3yLdAA",
        "ver": "2.0",
    })
}

#[tokio::test]
async fn entra_app_only_token_is_accepted_with_provider_entra_and_refused_as_generic() {
    let token = sign(TEST_KEY, &entra_header(), &entra_app_claims());

    let entra = verifier(&entra_vars(), Some("entra"), &entra_jwks());
    let principal = verify(&entra, &token).await.unwrap();
    assert_eq!(
        (principal.tenant.as_str(), principal.subject.as_str()),
        (ENTRA_TENANT, "8f7c2b1a-1111-2222-3333-444455556666")
    );
    assert!(
        principal.holds(&["Notes.Read.All".into()]),
        "app roles are the app-only token's scopes"
    );

    let generic = verifier(&entra_vars(), None, &entra_jwks());
    assert_eq!(
        verify(&generic, &token).await.unwrap_err(),
        AuthError::MissingClaim("tenant".into())
    );
    // Even told where the tenant is, generic does not read `roles`: no scope at all.
    let mut told = entra_vars();
    told.push(("RELEVO_AUTH_TENANT_CLAIM", "tid"));
    let generic = verifier(&told, None, &entra_jwks());
    assert_eq!(
        verify(&generic, &token).await.unwrap_err(),
        AuthError::InsufficientScope(vec!["Notes.Read".into()])
    );
}

#[tokio::test]
async fn entra_delegated_token_reads_scp_and_names_the_user_by_oid() {
    let token = sign(TEST_KEY, &entra_header(), &entra_delegated_claims());
    let entra = verifier(&entra_vars(), Some("entra"), &entra_jwks());
    let principal = verify(&entra, &token).await.unwrap();
    assert_eq!(principal.subject, "00000000-0000-0000-66f3-3332eca7ea81");
    assert_eq!(principal.tenant, ENTRA_TENANT);
    assert!(principal.holds(&["Notes.Read".into(), "Notes.Write".into()]));

    let no_oid = sign(
        TEST_KEY,
        &entra_header(),
        &with(&entra_delegated_claims(), json!({ "oid": null })),
    );
    assert_eq!(
        verify(&entra, &no_oid).await.unwrap_err(),
        AuthError::MissingClaim("oid".into())
    );
    let app_id_uri = sign(
        TEST_KEY,
        &entra_header(),
        &with(
            &entra_delegated_claims(),
            json!({ "aud": "api://relevo-mcp" }),
        ),
    );
    assert!(
        verify(&entra, &app_id_uri).await.is_ok(),
        "either accepted audience will do"
    );
}

#[tokio::test]
async fn entra_token_from_another_tenant_is_refused() {
    let entra = verifier(&entra_vars(), Some("entra"), &entra_jwks());
    let other = "0a0b0c0d-1111-2222-3333-444455556666";
    let foreign = with(
        &entra_delegated_claims(),
        json!({ "iss": format!("https://login.microsoftonline.com/{other}/v2.0"), "tid": other }),
    );
    assert_eq!(
        verify(&entra, &sign(TEST_KEY, &entra_header(), &foreign))
            .await
            .unwrap_err(),
        AuthError::WrongIssuer
    );
    let mismatched = with(&entra_delegated_claims(), json!({ "tid": other }));
    assert_eq!(
        verify(&entra, &sign(TEST_KEY, &entra_header(), &mismatched))
            .await
            .unwrap_err(),
        AuthError::WrongIssuer
    );
    let for_graph = with(
        &entra_delegated_claims(),
        json!({ "aud": "00000003-0000-0000-c000-000000000000" }),
    );
    assert_eq!(
        verify(&entra, &sign(TEST_KEY, &entra_header(), &for_graph))
            .await
            .unwrap_err(),
        AuthError::WrongAudience
    );
}

#[tokio::test]
async fn entra_token_from_an_unlisted_client_is_refused_when_clients_are_listed() {
    let mut vars = entra_vars();
    vars.push(("RELEVO_AUTH_CLIENT_IDS", ENTRA_CLIENT));
    let entra = verifier(&vars, Some("entra"), &entra_jwks());
    assert!(
        verify(
            &entra,
            &sign(TEST_KEY, &entra_header(), &entra_app_claims())
        )
        .await
        .is_ok()
    );
    let other = with(
        &entra_app_claims(),
        json!({ "azp": "99999999-0000-0000-0000-000000000000" }),
    );
    assert_eq!(
        verify(&entra, &sign(TEST_KEY, &entra_header(), &other))
            .await
            .unwrap_err(),
        AuthError::WrongClient
    );
}

// ---------------------------------------------------------------------------------------------
// Every provider: a token signed by another key under the provider's `kid` is refused.

#[tokio::test]
async fn provider_shaped_token_signed_by_another_key_is_refused() {
    let cases = [
        (
            verifier(&cognito_vars(), Some("cognito"), &cognito_jwks()),
            cognito_header(),
            cognito_access_claims(),
        ),
        (
            verifier(&auth0_vars(), Some("auth0"), &auth0_jwks()),
            auth0_header(),
            auth0_claims(),
        ),
        (
            verifier(&okta_vars(), Some("okta"), &okta_jwks()),
            okta_header(),
            okta_claims(),
        ),
        (
            verifier(&entra_vars(), Some("entra"), &entra_jwks()),
            entra_header(),
            entra_app_claims(),
        ),
    ];
    for (verifier, header, claims) in cases {
        assert!(
            verify(&verifier, &sign(TEST_KEY, &header, &claims))
                .await
                .is_ok(),
            "{header}"
        );
        let forged = sign(IMPOSTOR_KEY, &header, &claims);
        assert_eq!(
            verify(&verifier, &forged).await.unwrap_err(),
            AuthError::BadSignature,
            "{header}"
        );
    }
}
