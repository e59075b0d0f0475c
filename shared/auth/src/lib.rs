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
//! The JWKS is fetched once per process with a bounded timeout (by a function's init, beside its
//! other waits, through [`Authenticator::prefetch`]; else by the first token), cached, and
//! refetched when a token names an unknown `kid`: at most one fetch in flight, at most one
//! started per [`jwks::MIN_REFRESH_INTERVAL`] whether it succeeds or fails, so a flood of random
//! kids cannot turn the server into an amplifier against the issuer; and tokens with a known
//! `kid` never wait for a fetch, so a slow or failing issuer delays nobody already known.

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

/// The authenticator `settings.mode` (`RELEVO_AUTH`) chooses: the one place the choice is made,
/// for every runner.
/// - `required`: bearer tokens verified against the issuer's JWKS (fetched from `jwks_url`).
/// - `dev`: the same verification, against the keys of `dev`, the local server's issuer. Without
///   one the mode is refused: a deployed function has no dev issuer.
/// - `off`: [`NoAuth`], every request one anonymous principal with every scope; said loudly.
pub fn authenticator(
    settings: &AuthSettings,
    dev: Option<&DevIssuer>,
) -> Result<Arc<dyn Authenticator>, ConfigError> {
    match (settings.mode, dev) {
        (AuthMode::Required, _) => Ok(Arc::new(BearerAuthenticator::new(
            settings.clone(),
            Arc::new(HttpKeySource::new(&settings.jwks_url)),
        ))),
        (AuthMode::Dev, Some(issuer)) => Ok(Arc::new(BearerAuthenticator::new(
            settings.clone(),
            Arc::new(StaticKeySource(issuer.jwks())),
        ))),
        (AuthMode::Dev, None) => Err(ConfigError::BadMode(
            "dev (the dev issuer runs in the local server only)".into(),
        )),
        (AuthMode::Off, _) => {
            tracing::warn!(
                "RELEVO_AUTH=off: AUTHENTICATION IS DISABLED; every request is one anonymous principal with every scope"
            );
            Ok(Arc::new(NoAuth))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(mode: &str) -> AuthSettings {
        let vars = [
            ("RELEVO_AUTH", mode),
            ("RELEVO_AUTH_ISSUER", "https://issuer.example.com"),
            ("RELEVO_AUTH_AUDIENCE", "https://mcp.example.com/mcp"),
        ];
        AuthSettings::load(
            |name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            },
            "http://127.0.0.1:8080",
        )
        .expect("the settings load")
    }

    #[test]
    fn dev_mode_needs_the_local_server_s_issuer() {
        assert!(matches!(
            authenticator(&settings("dev"), None),
            Err(ConfigError::BadMode(_))
        ));
        let issuer = DevIssuer::generate("http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp");
        assert!(authenticator(&settings("dev"), Some(&issuer)).is_ok());
    }

    #[test]
    fn required_and_off_modes_need_no_dev_issuer() {
        assert!(authenticator(&settings("required"), None).is_ok());
        assert!(authenticator(&settings("off"), None).is_ok());
    }
}
