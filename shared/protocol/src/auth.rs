//! Who is calling: the authentication port and the principal it yields.
//!
//! Every request is authenticated on its own (there are no sessions). The server asks its
//! [`Authenticator`] right after the Host/Origin and HTTP-method checks, before it reads the
//! body, so an unauthenticated caller learns nothing about the MCP surface. The principal's
//! tenant and subject come only from a verified credential, never from arguments, and every
//! business record is keyed by them.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;

use http::{HeaderMap, StatusCode};

/// The caller, as a verified credential names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The tenant every record of this caller is keyed by (an isolation boundary).
    pub tenant: String,
    /// The caller within its tenant (user or client id).
    pub subject: String,
    /// The OAuth scopes the credential grants.
    pub scopes: BTreeSet<String>,
    /// True only for the explicit no-auth mode: every scope is granted.
    pub unrestricted: bool,
}

impl Principal {
    /// A principal with exactly these scopes (not unrestricted).
    pub fn new(
        tenant: &str,
        subject: &str,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Principal {
            tenant: tenant.into(),
            subject: subject.into(),
            scopes: scopes.into_iter().map(Into::into).collect(),
            unrestricted: false,
        }
    }

    /// The single local principal of `RELEVO_AUTH=off`.
    pub fn local_unauthenticated() -> Self {
        Principal {
            unrestricted: true,
            ..Principal::new("local", "anonymous", Vec::<String>::new())
        }
    }

    /// True if the principal holds every scope in `needed`.
    pub fn holds(&self, needed: &[String]) -> bool {
        self.unrestricted || needed.iter().all(|s| self.scopes.contains(s))
    }
}

/// A refusal the HTTP layer renders as-is: 401 or 403 with a `WWW-Authenticate` challenge and an
/// OAuth-style JSON body (`{"error": ..., "error_description": ...}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// 401 (no or invalid credential) or 403 (valid but insufficient).
    pub status: StatusCode,
    /// The `WWW-Authenticate` header value (e.g. `Bearer error="invalid_token"`).
    pub www_authenticate: String,
    /// The OAuth error code of the body's `error` (`invalid_token`, `insufficient_scope`).
    pub error: String,
    /// Human-readable text of the body's `error_description`.
    pub description: String,
}

/// What [`Authenticator::authenticate`] returns: the principal, or the challenge to answer.
pub type AuthFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Principal, AuthChallenge>> + Send + 'a>>;

/// What [`Authenticator::authenticate_checked`] returns: [`AuthFuture`]'s outcome, and whether
/// a credential was verified for it.
pub type CheckedFuture<'a> =
    Pin<Box<dyn Future<Output = (Result<Principal, AuthChallenge>, bool)> + Send + 'a>>;

/// Verifies the credential on a request.
pub trait Authenticator: Send + Sync {
    /// Verifies the request's credential (usually `Authorization`) and names the caller, or
    /// refuses.
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> AuthFuture<'a>;

    /// [`Authenticator::authenticate`], and whether it verified a credential (checked a
    /// signature: true) rather than recalling one verified before or needing none (false). The
    /// server times the former as the request's `TokenVerification` metric. By default every
    /// call verifies.
    fn authenticate_checked<'a>(&'a self, headers: &'a HeaderMap) -> CheckedFuture<'a> {
        Box::pin(async move { (self.authenticate(headers).await, true) })
    }

    /// The 403 challenge naming every scope an operation needs.
    fn insufficient_scope(&self, needed: &[String]) -> AuthChallenge;

    /// True when every caller is the same unauthenticated principal (results may be public).
    fn is_open(&self) -> bool {
        false
    }

    /// Readies what the first request would otherwise wait for (a bearer authenticator: the
    /// issuer's keys), so that a function's init can do it beside its own waits. Nothing by
    /// default. Never required: a request that comes first does the same work itself.
    fn prefetch(&self) -> PrefetchFuture<'_> {
        Box::pin(std::future::ready(()))
    }
}

/// What [`Authenticator::prefetch`] returns.
pub type PrefetchFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// `RELEVO_AUTH=off`: every request is [`Principal::local_unauthenticated`]. An explicit opt-in
/// for local experiments only; the server logs a warning at start when it is used.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoAuth;

impl Authenticator for NoAuth {
    fn authenticate<'a>(&'a self, _headers: &'a HeaderMap) -> AuthFuture<'a> {
        Box::pin(async { Ok(Principal::local_unauthenticated()) })
    }

    fn authenticate_checked<'a>(&'a self, _headers: &'a HeaderMap) -> CheckedFuture<'a> {
        Box::pin(async { (Ok(Principal::local_unauthenticated()), false) })
    }

    fn insufficient_scope(&self, needed: &[String]) -> AuthChallenge {
        AuthChallenge {
            status: StatusCode::FORBIDDEN,
            www_authenticate: format!(
                "Bearer error=\"insufficient_scope\", scope=\"{}\"",
                needed.join(" ")
            ),
            error: "insufficient_scope".into(),
            description: format!("requires scope {}", needed.join(" ")),
        }
    }

    fn is_open(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_needs_every_scope_unless_unrestricted() {
        let principal = Principal::new("t", "s", ["a", "b"]);
        assert!(principal.holds(&["a".into()]));
        assert!(!principal.holds(&["a".into(), "c".into()]));
        assert!(Principal::local_unauthenticated().holds(&["anything".into()]));
    }
}
