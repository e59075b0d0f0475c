//! Relevo as an OAuth 2.1 resource server (MCP authorization, RFC 9728, RFC 8707).
//!
//! Threat model: a bearer token is the only proof of identity, and any request may carry a forged,
//! expired, replayed-elsewhere or algorithm-confused one. A token is accepted only if:
//! - its header names an algorithm on the allow-list (asymmetric only: no `none`, no HS*), and a
//!   `kid` that the issuer's JWKS holds for that same algorithm family;
//! - its signature verifies with that key (jsonwebtoken, verified by ring: [`ring_crypto`] — no
//!   cryptography here);
//! - `iss` is the configured issuer and `aud` contains this server's canonical resource URI (or
//!   another configured accepted audience), so a token minted for another resource is refused (no
//!   token passthrough); Cognito access tokens, which carry no `aud`, must instead be access tokens
//!   (`token_use`) of a listed app client (`client_id`) — see [`IdentityProvider`];
//! - `exp` is present and in the future and `nbf` (if present) is past, within a small skew;
//! - it names a subject and a tenant (the tenant claim's name is configuration).
//!
//! The JWKS is fetched once per process with a bounded timeout, cached, and refetched when a token
//! names an unknown `kid`: at most one fetch in flight, at most one started per
//! [`jwks::MIN_REFRESH_INTERVAL`] whether it succeeds or fails, so a flood of random kids cannot
//! turn the server into an amplifier against the issuer; and tokens with a known `kid` never wait
//! for a fetch, so a slow or failing issuer delays nobody already known.

pub mod config;
pub mod dev;
pub mod dev_token;
pub mod jwks;
pub mod metadata;
pub mod ring_crypto;
pub mod verifier;

pub use config::{AuthMode, AuthSettings, ConfigError, IdentityProvider};
pub use dev::{DevIssuer, tighten_data_dir};
pub use jwks::{HttpKeySource, KeySource, StaticKeySource};
pub use metadata::{METADATA_PATHS, metadata_response, protected_resource_metadata};
pub use verifier::{AuthError, BearerAuthenticator};

use std::sync::Arc;

use relevo_protocol::{Authenticator, NoAuth};

/// The authenticator for a deployed function: bearer tokens against the issuer's JWKS, or the
/// explicit no-auth mode. `dev` belongs to the local gateway, which owns the dev issuer.
pub fn lambda_authenticator(
    settings: &AuthSettings,
) -> Result<Arc<dyn Authenticator>, ConfigError> {
    match settings.mode {
        AuthMode::Required => Ok(Arc::new(BearerAuthenticator::new(
            settings.clone(),
            Arc::new(HttpKeySource::new(&settings.jwks_url)?),
        ))),
        AuthMode::Off => {
            tracing::warn!(
                "RELEVO_AUTH=off: every request is served as one unauthenticated principal"
            );
            Ok(Arc::new(NoAuth))
        }
        AuthMode::Dev => Err(ConfigError::BadMode(
            "dev (the dev issuer runs in the local gateway only)".into(),
        )),
    }
}
