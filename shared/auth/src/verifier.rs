//! Bearer-token verification: the [`Authenticator`] every function uses.
//!
//! A token that verified is remembered by its SHA-256 ([`VerifiedTokens`]) until its `exp` (plus
//! the leeway) or for [`REMEMBER_VERIFIED_SECS`], whichever comes first, so a client's later calls
//! with the same token skip the signature check (one ES256 verification is the dominant CPU cost
//! of a warm request). Only the exact same bytes hit: a token differing anywhere, its signature
//! included, is verified in full. Expiry is still enforced on every hit, against the injected
//! clock. A key removed from the issuer's JWKS stops admitting remembered tokens within
//! [`REMEMBER_VERIFIED_SECS`]; keys themselves are cached for the process (see [`crate::jwks`]).
//!
//! What a token must carry besides a good signature, `iss` and `exp` depends on the configured
//! [`IdentityProvider`] (its table says which claim means what). Invariant: with
//! [`IdentityProvider::Generic`] and the default settings, `aud` must name this server, `sub`
//! and the tenant claim must be present, and scopes come from `scope` and `scp` — the behaviour
//! before providers existed. Every other provider only adds checks, except Cognito, whose access
//! tokens carry no `aud` and are bound to this server by `token_use` and `client_id` instead.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use http::{HeaderMap, StatusCode};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header, errors::ErrorKind};
use relevo_protocol::auth::AuthFuture;
use relevo_protocol::{AuthChallenge, Authenticator, Clock, Principal, SystemClock};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::{AuthSettings, IdentityProvider};
use crate::jwks::{KeyCache, KeySource};

/// Why a token was refused. Each maps to a 401 `invalid_token` challenge, except a missing token
/// (401 without an error code, per RFC 6750), missing scopes (403) and unreachable keys (503).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No Authorization header, or one of another scheme (Basic…): no Bearer token at all.
    #[error("no bearer token")]
    MissingToken,
    #[error("the Authorization header is not a single Bearer token")]
    MalformedHeader,
    #[error("the token is not a well-formed JWT")]
    MalformedToken,
    #[error("the token's algorithm is not accepted")]
    AlgorithmNotAllowed,
    #[error("the token names no key id")]
    MissingKeyId,
    #[error("the token's key id is not one of the issuer's keys")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token was issued for another resource")]
    WrongAudience,
    #[error("the token was issued by another issuer")]
    WrongIssuer,
    #[error("the token lacks the {0} claim")]
    MissingClaim(String),
    #[error("the token is not an access token (its token_use is not access)")]
    NotAnAccessToken,
    #[error("the token was issued to a client that is not allowed here")]
    WrongClient,
    #[error("the token does not grant the required scope")]
    InsufficientScope(Vec<String>),
    #[error("the issuer's keys are unavailable")]
    KeysUnavailable,
}

/// How long a verified token is remembered at most, seconds.
pub const REMEMBER_VERIFIED_SECS: u64 = 300;

/// How many verified tokens one process remembers at most.
const REMEMBER_VERIFIED_MAX: usize = 4096;

#[derive(Clone)]
pub struct BearerAuthenticator {
    settings: Arc<AuthSettings>,
    keys: Arc<KeyCache>,
    source: Arc<dyn KeySource>,
    clock: Arc<dyn Clock>,
    verified: Arc<VerifiedTokens>,
}

impl BearerAuthenticator {
    pub fn new(settings: AuthSettings, source: Arc<dyn KeySource>) -> Self {
        crate::ring_crypto::install();
        BearerAuthenticator {
            settings: Arc::new(settings),
            keys: Arc::new(KeyCache::new(source.clone(), Arc::new(SystemClock))),
            source,
            clock: Arc::new(SystemClock),
            verified: Arc::new(VerifiedTokens::default()),
        }
    }

    /// The clock that `exp` and `nbf` are checked against, and that spaces JWKS refetches (the
    /// system clock by default). Starts a fresh key cache: call it before the first request.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.keys = Arc::new(KeyCache::new(self.source.clone(), clock.clone()));
        self.clock = clock;
        self
    }

    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// Verifies the `Authorization` header and returns the principal it names.
    pub async fn verify(&self, headers: &HeaderMap) -> Result<Principal, AuthError> {
        let token = bearer_token(headers)?;
        let now = self.clock.now_unix();
        let fingerprint: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(principal) = self.verified.recall(&fingerprint, now) {
            return Ok(principal);
        }
        let header = decode_header(token).map_err(|_| AuthError::MalformedToken)?;
        if !self.settings.algorithms.contains(&header.alg) {
            return Err(AuthError::AlgorithmNotAllowed);
        }
        let kid = header.kid.ok_or(AuthError::MissingKeyId)?;
        let keys = self.keys.keys_for(&kid).await.map_err(|error| {
            tracing::error!(%error, "cannot fetch the issuer's JWKS");
            AuthError::KeysUnavailable
        })?;
        let jwk = keys.find(&kid).ok_or(AuthError::UnknownKey)?;
        if jwk
            .common
            .key_algorithm
            .is_some_and(|alg| alg.to_string() != format!("{:?}", header.alg))
        {
            return Err(AuthError::AlgorithmNotAllowed);
        }
        let key = DecodingKey::from_jwk(jwk).map_err(|_| AuthError::UnknownKey)?;

        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&self.settings.accepted_audiences);
        if self.settings.provider == IdentityProvider::Cognito {
            // No `aud` in a Cognito access token; `aud` (if any) is checked after `token_use`.
            validation.validate_aud = false;
            validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        } else {
            validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        }
        // Time is checked below against our clock, not jsonwebtoken's.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        let claims = decode::<Value>(token, &key, &validation).map_err(|e| match e.kind() {
            ErrorKind::InvalidAudience => AuthError::WrongAudience,
            ErrorKind::InvalidIssuer => AuthError::WrongIssuer,
            ErrorKind::InvalidSignature => AuthError::BadSignature,
            ErrorKind::InvalidAlgorithm => AuthError::AlgorithmNotAllowed,
            ErrorKind::MissingRequiredClaim(claim) => AuthError::MissingClaim(claim.clone()),
            _ => AuthError::MalformedToken,
        })?;
        let valid_until = self.check_time(&claims.claims, now)?;
        self.check_provider_claims(&claims.claims)?;
        let principal = self.principal(&claims.claims)?;
        if !principal.holds(&self.settings.required_scopes) {
            return Err(AuthError::InsufficientScope(
                self.settings.required_scopes.clone(),
            ));
        }
        self.verified.remember(
            fingerprint,
            principal.clone(),
            valid_until.min(now + REMEMBER_VERIFIED_SECS),
            now,
        );
        Ok(principal)
    }

    /// `exp` (required) and `nbf` (optional) against `now`, within the leeway; returns the last
    /// second at which the token is still valid.
    fn check_time(&self, claims: &Value, now: u64) -> Result<u64, AuthError> {
        let leeway = self.settings.leeway_secs;
        let seconds = |name: &str| -> Result<Option<u64>, AuthError> {
            match claims.get(name) {
                None => Ok(None),
                Some(value) => value
                    .as_f64()
                    .filter(|s| *s >= 0.0)
                    .map(|s| Some(s as u64))
                    .ok_or(AuthError::MalformedToken),
            }
        };
        let expires = seconds("exp")?.ok_or_else(|| AuthError::MissingClaim("exp".into()))?;
        let valid_until = expires.saturating_add(leeway);
        if now > valid_until {
            return Err(AuthError::Expired);
        }
        if seconds("nbf")?.is_some_and(|not_before| not_before > now.saturating_add(leeway)) {
            return Err(AuthError::NotYetValid);
        }
        Ok(valid_until)
    }

    /// What the provider's tokens must carry beyond the registered claims jsonwebtoken checked.
    fn check_provider_claims(&self, claims: &Value) -> Result<(), AuthError> {
        let provider = self.settings.provider;
        if provider == IdentityProvider::Cognito {
            // https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-tokens-verifying-a-jwt.html
            match claims.get("token_use") {
                None => return Err(AuthError::MissingClaim("token_use".into())),
                Some(token_use) if token_use.as_str() == Some("access") => {}
                Some(_) => return Err(AuthError::NotAnAccessToken),
            }
        }
        if !self.settings.client_ids.is_empty() {
            let names = provider.client_claims();
            let client = names
                .iter()
                .find_map(|name| claims.get(*name))
                .ok_or_else(|| AuthError::MissingClaim(names[0].into()))?;
            if !client
                .as_str()
                .is_some_and(|id| self.settings.client_ids.iter().any(|allowed| allowed == id))
            {
                return Err(AuthError::WrongClient);
            }
        }
        if provider == IdentityProvider::Cognito
            && let Some(audience) = claims.get("aud")
            && !names_one_of(audience, &self.settings.accepted_audiences)
        {
            return Err(AuthError::WrongAudience);
        }
        if provider == IdentityProvider::Entra {
            // `iss` is `https://login.microsoftonline.com/<tid>/v2.0`: its tenant must be `tid`'s.
            // https://learn.microsoft.com/entra/identity-platform/access-token-claims-reference
            let tid = claims
                .get("tid")
                .and_then(Value::as_str)
                .ok_or_else(|| AuthError::MissingClaim("tid".into()))?;
            let issuer_tenant = self
                .settings
                .issuer
                .split_once("://")
                .and_then(|(_, rest)| rest.split('/').nth(1));
            if issuer_tenant != Some(tid) {
                return Err(AuthError::WrongIssuer);
            }
        }
        Ok(())
    }

    fn principal(&self, claims: &Value) -> Result<Principal, AuthError> {
        let text = |name: &str| {
            claims
                .get(name)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
        };
        let subject_claim = self.settings.provider.subject_claim();
        let subject =
            text(subject_claim).ok_or_else(|| AuthError::MissingClaim(subject_claim.into()))?;
        let tenant_claim = &self.settings.tenant_claim;
        let tenant =
            text(tenant_claim).ok_or_else(|| AuthError::MissingClaim(tenant_claim.clone()))?;
        Ok(Principal::new(
            tenant,
            subject,
            scopes(claims, self.settings.provider.scope_claims()),
        ))
    }

    /// The challenge for a refusal.
    pub fn challenge(&self, error: &AuthError) -> AuthChallenge {
        let metadata = &self.settings.resource_metadata_url;
        let (status, code) = match error {
            AuthError::MissingToken => (StatusCode::UNAUTHORIZED, None),
            AuthError::InsufficientScope(_) => (StatusCode::FORBIDDEN, Some("insufficient_scope")),
            AuthError::KeysUnavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                Some("temporarily_unavailable"),
            ),
            AuthError::MalformedHeader => (StatusCode::BAD_REQUEST, Some("invalid_request")),
            _ => (StatusCode::UNAUTHORIZED, Some("invalid_token")),
        };
        let scopes = match error {
            AuthError::InsufficientScope(needed) => needed.clone(),
            _ => self.settings.required_scopes.clone(),
        };
        let mut challenge = String::from("Bearer ");
        if let Some(code) = code {
            challenge.push_str(&format!(
                "error=\"{code}\", error_description=\"{error}\", "
            ));
        }
        if !scopes.is_empty() {
            challenge.push_str(&format!("scope=\"{}\", ", scopes.join(" ")));
        }
        challenge.push_str(&format!("resource_metadata=\"{metadata}\""));
        AuthChallenge {
            status,
            www_authenticate: challenge,
            error: code.unwrap_or("invalid_token").into(),
            description: error.to_string(),
        }
    }
}

impl Authenticator for BearerAuthenticator {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> AuthFuture<'a> {
        Box::pin(async move { self.verify(headers).await.map_err(|e| self.challenge(&e)) })
    }

    fn insufficient_scope(&self, needed: &[String]) -> AuthChallenge {
        let mut all: Vec<String> = self.settings.required_scopes.clone();
        all.extend(
            needed
                .iter()
                .filter(|s| !all.contains(s))
                .cloned()
                .collect::<Vec<_>>(),
        );
        self.challenge(&AuthError::InsufficientScope(all))
    }
}

/// Principals of tokens that verified, by the token's SHA-256, each with the last second it may
/// be recalled. Bounded: when full, forgotten entries go first, then all of them.
#[derive(Default)]
struct VerifiedTokens(Mutex<HashMap<[u8; 32], (Principal, u64)>>);

impl VerifiedTokens {
    fn recall(&self, fingerprint: &[u8; 32], now: u64) -> Option<Principal> {
        let remembered = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        remembered
            .get(fingerprint)
            .filter(|(_, until)| now <= *until)
            .map(|(principal, _)| principal.clone())
    }

    fn remember(&self, fingerprint: [u8; 32], principal: Principal, until: u64, now: u64) {
        let mut remembered = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if remembered.len() >= REMEMBER_VERIFIED_MAX {
            remembered.retain(|_, (_, until)| now <= *until);
            if remembered.len() >= REMEMBER_VERIFIED_MAX {
                remembered.clear();
            }
        }
        remembered.insert(fingerprint, (principal, until));
    }
}

fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(AuthError::MissingToken);
    };
    if values.next().is_some() {
        return Err(AuthError::MalformedHeader);
    }
    let value = value.to_str().map_err(|_| AuthError::MalformedHeader)?;
    let value = value.trim();
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        // Another scheme (Basic, Digest…) carries no Bearer token: RFC 6750 §3.1 answers a
        // request without authentication information for this scheme with the bare challenge
        // (401, no error code), not 400, which is for a malformed Bearer request.
        return Err(AuthError::MissingToken);
    }
    if token.trim().is_empty() {
        return Err(AuthError::MalformedHeader);
    }
    Ok(token.trim())
}

/// True if `audience` (a string or an array of strings) names one of `accepted`.
fn names_one_of(audience: &Value, accepted: &[String]) -> bool {
    let accepts = |value: &Value| {
        value
            .as_str()
            .is_some_and(|aud| accepted.iter().any(|a| a == aud))
    };
    match audience {
        Value::Array(items) => items.iter().any(accepts),
        other => accepts(other),
    }
}

/// Scopes from the provider's scope claims, each a space-separated string (`scope`, RFC 8693/9068)
/// or an array of strings (Okta's `scp`, Auth0's `permissions`, Entra's `roles`).
fn scopes(claims: &Value, names: &[&str]) -> BTreeSet<String> {
    let mut scopes = BTreeSet::new();
    for name in names {
        match claims.get(*name) {
            Some(Value::String(s)) => scopes.extend(s.split_whitespace().map(String::from)),
            Some(Value::Array(items)) => {
                scopes.extend(items.iter().filter_map(Value::as_str).map(String::from))
            }
            _ => {}
        }
    }
    scopes
}

/// The algorithms a dev issuer and the tests use.
pub const DEV_ALGORITHM: Algorithm = Algorithm::ES256;
