//! Bearer-token verification: the [`Authenticator`] every function uses.

use std::collections::BTreeSet;
use std::sync::Arc;

use http::{HeaderMap, StatusCode};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header, errors::ErrorKind};
use relevo_protocol::auth::AuthFuture;
use relevo_protocol::{AuthChallenge, Authenticator, Principal};
use serde_json::Value;

use crate::config::AuthSettings;
use crate::jwks::{KeyCache, KeySource};

/// Why a token was refused. Each maps to a 401 `invalid_token` challenge, except a missing token
/// (401 without an error code, per RFC 6750), missing scopes (403) and unreachable keys (503).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
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
    #[error("the token does not grant the required scope")]
    InsufficientScope(Vec<String>),
    #[error("the issuer's keys are unavailable")]
    KeysUnavailable,
}

#[derive(Clone)]
pub struct BearerAuthenticator {
    settings: Arc<AuthSettings>,
    keys: Arc<KeyCache>,
}

impl BearerAuthenticator {
    pub fn new(settings: AuthSettings, source: Arc<dyn KeySource>) -> Self {
        BearerAuthenticator { settings: Arc::new(settings), keys: Arc::new(KeyCache::new(source)) }
    }

    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// Verifies the `Authorization` header and returns the principal it names.
    pub async fn verify(&self, headers: &HeaderMap) -> Result<Principal, AuthError> {
        let token = bearer_token(headers)?;
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
        if jwk.common.key_algorithm.is_some_and(|alg| alg.to_string() != format!("{:?}", header.alg)) {
            return Err(AuthError::AlgorithmNotAllowed);
        }
        let key = DecodingKey::from_jwk(jwk).map_err(|_| AuthError::UnknownKey)?;

        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.settings.leeway_secs;
        let claims = decode::<Value>(token, &key, &validation).map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => AuthError::Expired,
            ErrorKind::ImmatureSignature => AuthError::NotYetValid,
            ErrorKind::InvalidAudience => AuthError::WrongAudience,
            ErrorKind::InvalidIssuer => AuthError::WrongIssuer,
            ErrorKind::InvalidSignature => AuthError::BadSignature,
            ErrorKind::InvalidAlgorithm => AuthError::AlgorithmNotAllowed,
            ErrorKind::MissingRequiredClaim(claim) => AuthError::MissingClaim(claim.clone()),
            _ => AuthError::MalformedToken,
        })?;
        let principal = self.principal(&claims.claims)?;
        if !principal.holds(&self.settings.required_scopes) {
            return Err(AuthError::InsufficientScope(self.settings.required_scopes.clone()));
        }
        Ok(principal)
    }

    fn principal(&self, claims: &Value) -> Result<Principal, AuthError> {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).filter(|v| !v.is_empty());
        let subject = text("sub").ok_or_else(|| AuthError::MissingClaim("sub".into()))?;
        let tenant_claim = &self.settings.tenant_claim;
        let tenant = text(tenant_claim).ok_or_else(|| AuthError::MissingClaim(tenant_claim.clone()))?;
        Ok(Principal::new(tenant, subject, scopes(claims)))
    }

    /// The challenge for a refusal.
    pub fn challenge(&self, error: &AuthError) -> AuthChallenge {
        let metadata = &self.settings.resource_metadata_url;
        let (status, code) = match error {
            AuthError::MissingToken => (StatusCode::UNAUTHORIZED, None),
            AuthError::InsufficientScope(_) => (StatusCode::FORBIDDEN, Some("insufficient_scope")),
            AuthError::KeysUnavailable => (StatusCode::SERVICE_UNAVAILABLE, Some("temporarily_unavailable")),
            AuthError::MalformedHeader => (StatusCode::BAD_REQUEST, Some("invalid_request")),
            _ => (StatusCode::UNAUTHORIZED, Some("invalid_token")),
        };
        let scopes = match error {
            AuthError::InsufficientScope(needed) => needed.clone(),
            _ => self.settings.required_scopes.clone(),
        };
        let mut challenge = String::from("Bearer ");
        if let Some(code) = code {
            challenge.push_str(&format!("error=\"{code}\", error_description=\"{error}\", "));
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
        all.extend(needed.iter().filter(|s| !all.contains(s)).cloned().collect::<Vec<_>>());
        self.challenge(&AuthError::InsufficientScope(all))
    }
}

fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else { return Err(AuthError::MissingToken) };
    if values.next().is_some() {
        return Err(AuthError::MalformedHeader);
    }
    let value = value.to_str().map_err(|_| AuthError::MalformedHeader)?;
    let (scheme, token) = value.trim().split_once(' ').ok_or(AuthError::MalformedHeader)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(AuthError::MalformedHeader);
    }
    Ok(token.trim())
}

/// Scopes from `scope` (space-separated string, RFC 8693/9068) or `scp` (array or string).
fn scopes(claims: &Value) -> BTreeSet<String> {
    let mut scopes = BTreeSet::new();
    for name in ["scope", "scp"] {
        match claims.get(name) {
            Some(Value::String(s)) => scopes.extend(s.split_whitespace().map(String::from)),
            Some(Value::Array(items)) => scopes.extend(items.iter().filter_map(Value::as_str).map(String::from)),
            _ => {}
        }
    }
    scopes
}

/// The algorithms a dev issuer and the tests use.
pub const DEV_ALGORITHM: Algorithm = Algorithm::ES256;
