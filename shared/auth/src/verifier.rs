//! Bearer-token verification: the [`Authenticator`] every function uses.
//!
//! A token that verified is remembered by its SHA-256 (`VerifiedTokens`) until its `exp` (plus
//! the leeway) or for [`REMEMBER_VERIFIED_SECS`], whichever comes first, so a client's later calls
//! with the same token skip the signature check (one ES256 verification is the dominant CPU cost
//! of a warm request). Only the exact same bytes hit: a token differing anywhere, its signature
//! included, is verified in full. Expiry is still enforced on every hit, against the injected
//! clock. At most [`REMEMBER_VERIFIED_MAX`] tokens are remembered per process (when full, the
//! expired go first, then all of them).
//!
//! Invariants of a remembered token: it verified in full under the current key generation
//! ([`crate::jwks`]: a JWKS fetch that drops or changes a held key starts a new one, and every
//! principal remembered before it is forgotten), it is recalled at most until
//! min(`exp` + leeway, verification + [`REMEMBER_VERIFIED_SECS`]), and a token verified with
//! keys of an earlier generation is never remembered (a fetch may land while it is checked).
//!
//! Threat model and revocation: tokens are bearer credentials; this process never learns that
//! the issuer revoked one token (no introspection), so a revoked token is admitted until its
//! `exp`, as by any JWT resource server. A signing key the issuer removes from its JWKS:
//! - takes effect in an environment at its next JWKS fetch, for the token it is verifying and
//!   for every remembered one (they are forgotten at that fetch, not up to
//!   [`REMEMBER_VERIFIED_SECS`] later);
//! - that fetch happens when a token names a `kid` the environment does not hold, at most once
//!   per [`crate::jwks::MIN_REFRESH_INTERVAL`] (an issuer that rotates adds the new key and
//!   signs with it, so fresh tokens bring the fetch); until one does, a warm environment keeps
//!   the keys it fetched, the removed one included, so the worst case is the environment's
//!   lifetime. A compromised key must therefore be handled by the issuer (stop signing with
//!   it, revoke its tokens' sessions) and, where it cannot wait, by a new deployment (every
//!   environment starts cold, fetching the JWKS anew).
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
use relevo_protocol::auth::{AuthFuture, CheckedFuture};
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
pub const REMEMBER_VERIFIED_MAX: usize = 4096;

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
        self.verify_checked(headers).await.0
    }

    /// [`BearerAuthenticator::verify`], and whether the token was verified (its signature
    /// checked: true) rather than recalled as one verified before, or absent (false).
    async fn verify_checked(&self, headers: &HeaderMap) -> (Result<Principal, AuthError>, bool) {
        let token = match bearer_token(headers) {
            Ok(token) => token,
            Err(error) => return (Err(error), false),
        };
        let now = self.clock.now_unix();
        let fingerprint: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(principal) = self
            .verified
            .recall(&fingerprint, now, self.keys.generation())
        {
            return (Ok(principal), false);
        }
        (self.verify_signature(token, now, fingerprint).await, true)
    }

    /// Checks `token`'s signature, claims and scopes at `now`, and remembers its principal
    /// under `fingerprint` (its SHA-256) when it verifies.
    async fn verify_signature(
        &self,
        token: &str,
        now: u64,
        fingerprint: [u8; 32],
    ) -> Result<Principal, AuthError> {
        let header = decode_header(token).map_err(|_| AuthError::MalformedToken)?;
        if !self.settings.algorithms.contains(&header.alg) {
            return Err(AuthError::AlgorithmNotAllowed);
        }
        let kid = header.kid.ok_or(AuthError::MissingKeyId)?;
        let keys = self.keys.keys_for(&kid).await.map_err(|error| {
            tracing::error!(%error, "cannot fetch the issuer's JWKS");
            AuthError::KeysUnavailable
        })?;
        let jwk = keys.set.find(&kid).ok_or(AuthError::UnknownKey)?;
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
            keys.generation,
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

    fn authenticate_checked<'a>(&'a self, headers: &'a HeaderMap) -> CheckedFuture<'a> {
        Box::pin(async move {
            let (outcome, verified) = self.verify_checked(headers).await;
            (outcome.map_err(|e| self.challenge(&e)), verified)
        })
    }

    fn prefetch(&self) -> relevo_protocol::auth::PrefetchFuture<'_> {
        Box::pin(self.keys.prefetch())
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
/// be recalled, all of one key generation. Bounded: when full, expired entries go first, then all
/// of them.
#[derive(Default)]
struct VerifiedTokens(Mutex<Remembered>);

#[derive(Default)]
struct Remembered {
    /// The key generation every entry was verified under.
    generation: u64,
    entries: HashMap<[u8; 32], (Principal, u64)>,
}

impl Remembered {
    /// Forgets every entry if `generation` is newer than theirs; false if it is older (nothing
    /// verified under it may be remembered any more).
    fn at(&mut self, generation: u64) -> bool {
        if generation > self.generation {
            self.entries.clear();
            self.generation = generation;
        }
        generation == self.generation
    }
}

impl VerifiedTokens {
    fn lock(&self) -> std::sync::MutexGuard<'_, Remembered> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The principal of the token with `fingerprint`, if it verified under key generation
    /// `generation` (the current one) and may still be recalled at `now`.
    fn recall(&self, fingerprint: &[u8; 32], now: u64, generation: u64) -> Option<Principal> {
        let mut remembered = self.lock();
        if !remembered.at(generation) {
            return None;
        }
        remembered
            .entries
            .get(fingerprint)
            .filter(|(_, until)| now <= *until)
            .map(|(principal, _)| principal.clone())
    }

    /// Remembers a token verified with the keys of `generation` until `until`; nothing if a
    /// newer generation has been seen since.
    fn remember(
        &self,
        fingerprint: [u8; 32],
        principal: Principal,
        until: u64,
        now: u64,
        generation: u64,
    ) {
        let mut remembered = self.lock();
        if !remembered.at(generation) {
            return;
        }
        let entries = &mut remembered.entries;
        if entries.len() >= REMEMBER_VERIFIED_MAX {
            entries.retain(|_, (_, until)| now <= *until);
            if entries.len() >= REMEMBER_VERIFIED_MAX {
                entries.clear();
            }
        }
        entries.insert(fingerprint, (principal, until));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().entries.len()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(n: usize) -> Principal {
        Principal::new("acme", &format!("user-{n}"), Vec::<String>::new())
    }

    fn fingerprint(n: usize) -> [u8; 32] {
        Sha256::digest(n.to_be_bytes()).into()
    }

    #[test]
    fn the_remembered_tokens_stay_bounded_however_many_verify() {
        let verified = VerifiedTokens::default();
        for n in 0..REMEMBER_VERIFIED_MAX * 2 + 7 {
            verified.remember(fingerprint(n), principal(n), 1_000, 0, 0);
            assert!(verified.len() <= REMEMBER_VERIFIED_MAX, "at {n}");
        }
        let last = REMEMBER_VERIFIED_MAX * 2 + 6;
        assert!(verified.recall(&fingerprint(last), 0, 0).is_some());
    }

    #[test]
    fn a_full_cache_drops_the_expired_before_the_live() {
        let verified = VerifiedTokens::default();
        for n in 0..REMEMBER_VERIFIED_MAX {
            // Every other entry expires at second 10.
            let until = if n % 2 == 0 { 10 } else { 1_000 };
            verified.remember(fingerprint(n), principal(n), until, 0, 0);
        }
        verified.remember(fingerprint(usize::MAX), principal(0), 1_000, 20, 0);
        assert_eq!(verified.len(), REMEMBER_VERIFIED_MAX / 2 + 1);
        assert!(verified.recall(&fingerprint(1), 20, 0).is_some());
    }

    #[test]
    fn a_fingerprint_one_byte_away_is_not_recalled() {
        let verified = VerifiedTokens::default();
        let token = b"header.claims.signature".to_vec();
        let print: [u8; 32] = Sha256::digest(&token).into();
        verified.remember(print, principal(1), 1_000, 0, 0);
        let mut other = token.clone();
        let last = other.len() - 1;
        other[last] ^= 1;
        let other: [u8; 32] = Sha256::digest(&other).into();
        assert!(verified.recall(&print, 0, 0).is_some());
        assert!(verified.recall(&other, 0, 0).is_none());
    }

    #[test]
    fn a_new_key_generation_forgets_every_remembered_token() {
        let verified = VerifiedTokens::default();
        verified.remember(fingerprint(1), principal(1), 1_000, 0, 0);
        assert!(verified.recall(&fingerprint(1), 0, 1).is_none());
        assert_eq!(verified.len(), 0, "forgotten, not only hidden");
        assert!(
            verified.recall(&fingerprint(1), 0, 0).is_none(),
            "generations never go back"
        );
    }

    #[test]
    fn a_token_verified_with_keys_since_revoked_is_not_remembered() {
        let verified = VerifiedTokens::default();
        assert!(verified.recall(&fingerprint(2), 0, 3).is_none());
        // Verified with the keys of generation 2 while generation 3 was fetched.
        verified.remember(fingerprint(1), principal(1), 1_000, 0, 2);
        assert!(verified.recall(&fingerprint(1), 0, 3).is_none());
        assert_eq!(verified.len(), 0);
    }
}
