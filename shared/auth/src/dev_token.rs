//! A dev token on the command line: what `relevo-token` and `cargo relevo token` print. Both parse
//! the same arguments and sign with the dev issuer a running local server wrote
//! (`.relevo/dev-issuer.json`, or the file `RELEVO_DEV_ISSUER_FILE` names).
//!
//! Threat model: the token is for the local server only (its issuer and audience are the local
//! server's); the private key is read from the owner-only file and never printed.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::dev::{DevIssuer, DevIssuerError};

/// The arguments, as the usage line shows them.
pub const USAGE: &str = "[--tenant T] [--sub S] [--scopes \"a b\"] [--ttl SECS]";

/// Who the token is for and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    pub tenant: String,
    pub subject: String,
    /// Separated by spaces or commas.
    pub scopes: String,
    pub ttl_secs: u64,
}

impl Default for TokenRequest {
    fn default() -> Self {
        TokenRequest {
            tenant: "dev".into(),
            subject: "developer".into(),
            scopes: String::new(),
            ttl_secs: 3600,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{0}; usage: {USAGE}")]
    Usage(String),
    #[error("{source} (start the local server first, e.g. `make run`)")]
    Issuer { source: DevIssuerError },
    #[error(transparent)]
    Sign(DevIssuerError),
}

impl TokenRequest {
    /// Parses `--tenant`, `--sub`, `--scopes` and `--ttl`; anything else is refused.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, TokenError> {
        let mut request = TokenRequest::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = || {
                args.next()
                    .ok_or_else(|| TokenError::Usage(format!("{arg} needs a value")))
            };
            match arg.as_str() {
                "--tenant" => request.tenant = value()?,
                "--sub" => request.subject = value()?,
                "--scopes" => request.scopes = value()?,
                "--ttl" => {
                    let ttl = value()?;
                    request.ttl_secs = ttl.parse().map_err(|_| {
                        TokenError::Usage(format!("--ttl {ttl:?} is not a number of seconds"))
                    })?;
                }
                other => return Err(TokenError::Usage(format!("unknown argument {other:?}"))),
            }
        }
        Ok(request)
    }

    /// The dev issuer's file: `RELEVO_DEV_ISSUER_FILE`, else `.relevo/dev-issuer.json`.
    pub fn issuer_file() -> PathBuf {
        std::env::var_os("RELEVO_DEV_ISSUER_FILE")
            .map(PathBuf::from)
            .unwrap_or_else(|| ".relevo/dev-issuer.json".into())
    }

    /// A token signed by the dev issuer of [`TokenRequest::issuer_file`], valid from now.
    pub fn mint(&self) -> Result<String, TokenError> {
        let issuer = DevIssuer::load(&Self::issuer_file())
            .map_err(|source| TokenError::Issuer { source })?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let scopes: Vec<&str> = self
            .scopes
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .collect();
        issuer
            .mint(&self.tenant, &self.subject, &scopes, now, self.ttl_secs)
            .map_err(TokenError::Sign)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_arguments_set_who_the_token_is_for() {
        let request = TokenRequest::parse(args(&[
            "--tenant", "acme", "--sub", "alice", "--scopes", "a b", "--ttl", "60",
        ]));
        let request = request.expect("parses");
        assert_eq!(
            request,
            TokenRequest {
                tenant: "acme".into(),
                subject: "alice".into(),
                scopes: "a b".into(),
                ttl_secs: 60
            }
        );
    }

    #[test]
    fn an_unknown_argument_or_a_missing_value_is_refused_with_the_usage() {
        for bad in [&["--tenant"][..], &["--who", "x"], &["--ttl", "soon"]] {
            let error = TokenRequest::parse(args(bad))
                .expect_err("refused")
                .to_string();
            assert!(error.contains("usage:"), "{error}");
        }
    }
}
