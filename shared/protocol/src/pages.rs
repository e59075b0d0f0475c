//! An HTTP surface an app serves beside `/mcp`, under a path prefix of its own
//! ([`Pages::prefix`]; [`DEFAULT_PREFIX`] unless the app has a reason for another, as the example
//! shop's approval pages have). Every runner serves it the same way, through [`serve`]: the local
//! gateway on its routes, the `pages` function on its events. The runner checks Host and Origin
//! against the server's allow-list first; the pages authorize their own requests. Where a page
//! is reached from outside is [`crate::Ports::page_url`] of its prefix.
//!
//! Admission: a page request that acts as someone ([`Pages::caller`]: a bearer header, the
//! sign-in's cookie or session, the token pasted into the sign-in form) is counted against that
//! principal's tenant's request-rate quota ([`crate::server::admit_tenant`], as every `/mcp`
//! surface is) before the page runs, so a tenant over its quota reads and writes nothing
//! through the pages either. A request that acts as nobody (the sign-in form, a request without
//! credentials) is answered by the page without a store call. `caller` has no default: a page
//! set must say who a request acts as.
//!
//! A page that signs people in keeps them signed in with a [`PageSessions`] session (a sealed,
//! bounded, revocable value in a cookie), never with the bearer token they signed in with.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use relevo_state::ids::Ids;
use relevo_state::records::{Owner, RecordKey, RecordStore, StoreError};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::clock::Clock;
use crate::error::McpError;
use crate::quota::Quotas;
use crate::seal::{KeyRing, SealError};

/// The future of a page's response, as [`Pages::handle`] returns it.
pub type PageFuture<'a> = Pin<Box<dyn Future<Output = Response<String>> + Send + 'a>>;

/// Who a page request acts as, verified.
pub type CallerFuture<'a> = Pin<Box<dyn Future<Output = Option<Principal>> + Send + 'a>>;

/// The path prefix of an app's pages when it has no reason to choose another (and the one a
/// generated project's template routes unless its table names another).
pub const DEFAULT_PREFIX: &str = "/pages";

/// An HTTP surface served beside `/mcp` under its own path prefix (approval pages, a sign-in):
/// it says who each request acts as and answers it. Runners reach it through [`serve`].
pub trait Pages: Send + Sync {
    /// The path prefix the pages own, such as [`DEFAULT_PREFIX`].
    fn prefix(&self) -> &str;

    /// The verified principal `handle` would act as for this request (its credentials, or
    /// those its sign-in takes), for admission; `None` when it acts as nobody.
    fn caller<'a>(
        &'a self,
        method: &'a Method,
        path: &'a str,
        headers: &'a HeaderMap,
        body: &'a [u8],
    ) -> CallerFuture<'a>;

    /// One request; `path` starts with [`Pages::prefix`].
    fn handle<'a>(
        &'a self,
        method: &'a Method,
        path: &'a str,
        headers: &'a HeaderMap,
        body: &'a [u8],
    ) -> PageFuture<'a>;
}

/// What page admission counts against: the deployment's quotas in its store.
#[derive(Clone)]
pub struct PageGate {
    /// The request-rate quotas a page request is counted against.
    pub quotas: Quotas,
    /// The store quota counters are kept in; `None` for a deployment without one.
    pub store: Option<Arc<dyn RecordStore>>,
    /// The time source for quota windows.
    pub clock: Arc<dyn Clock>,
    /// The leases quota units are spent from ([`relevo_state::rate::Leases`]): the server's,
    /// when the pages are served beside it ([`crate::McpServer::page_gate`]).
    pub leases: Arc<relevo_state::rate::Leases>,
}

/// One page request, admitted: the caller's tenant's quota first, then the page.
pub async fn serve(
    pages: &dyn Pages,
    gate: &PageGate,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response<String> {
    if !gate.quotas.is_off()
        && let Some(principal) = pages.caller(method, path, headers, body).await
        && let Err(refused) = crate::server::admit_tenant(
            &gate.quotas,
            gate.store.as_deref(),
            &gate.leases,
            &principal.tenant,
            gate.clock.now_millis(),
        )
        .await
    {
        return refusal(&refused);
    }
    pages.handle(method, path, headers, body).await
}

/// The page a refused request gets: its status (429 for a spent quota, 503 for a store that
/// could not count it) and `Retry-After`.
fn refusal(error: &McpError) -> Response<String> {
    let (title, text) = match error {
        McpError::RateLimited { .. } => (
            "Too many requests",
            "Your organisation's request quota is spent for now.",
        ),
        _ => ("Try again", "The request could not be admitted just now."),
    };
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body><h1>{title}</h1><p>{text} Try again shortly.</p></body></html>"
    );
    let mut response = Response::new(html);
    *response.status_mut() = match error {
        McpError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(secs) = error.retry_after_secs() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

/// A page's signed-in person: a sealed session, never the bearer token itself. See
/// [`PageSessions`].
#[derive(Debug, Clone, PartialEq)]
pub struct PageSession {
    /// 128 random bits: what sign-out records as ended.
    pub id: String,
    /// Tenant, subject and the scopes the token had when it was exchanged.
    pub principal: Principal,
    /// Unix seconds: the token's `exp` or [`MAX_PAGE_SESSION_SECS`] after sign-in, whichever
    /// is first.
    pub expires_at: u64,
}

/// Why a session cookie was not accepted. Only [`PageSessionError::Store`] is not the client's
/// doing (a page answers it 503, not 401).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PageSessionError {
    #[error("the session does not verify: {0}")]
    /// The cookie's seal does not open: forged, altered, expired, or sealed for another purpose.
    Seal(#[from] SealError),
    #[error("the session is not in the session format")]
    /// The sealed value is not a session.
    Malformed,
    #[error("the session was ended by signing out")]
    /// The session was ended by signing out.
    Ended,
    #[error("the session store cannot be read or written now: {0}")]
    /// The ended-check could not read the store (fail closed: the session is not accepted).
    Store(#[source] StoreError),
}

/// A session lasts at most this long, seconds, whatever the token's own lifetime.
pub const MAX_PAGE_SESSION_SECS: u64 = 3600;
/// The sealing purpose of a session: no other sealed value (a `requestState`, a cursor, a CSRF
/// token) verifies as one, and a session verifies as none of them.
pub const PAGE_SESSION_DOMAIN: &str = "page-session";
/// The record kind that marks a session as ended (one per session, tenant-owned, expiring with it).
pub const ENDED_SESSION_KIND: &str = "page-session-ended";

/// Page sessions: what a page's sign-in exchanges a verified bearer token for.
///
/// Threat model: the cookie that carries a session is sent back by the browser on every page
/// request, lives in a browser profile, and may leak (a shared machine, a proxy log). So it is
/// not the bearer token: it is no good on `/mcp` (it is not a JWT; the bearer verifier refuses
/// it 401), its lifetime is bounded by the token's and by [`MAX_PAGE_SESSION_SECS`], and
/// signing out ends it for good. Invariants:
/// - a session is sealed (HMAC-SHA256 with the state key ring, purpose
///   [`PAGE_SESSION_DOMAIN`]) over its id, tenant, subject, scopes and expiry: none of them can
///   be changed, and it opens only before its expiry;
/// - signing out creates a record `ENDED_SESSION_KIND/<id>` under the session's tenant, by a
///   conditional create expiring with the session, and a session whose record exists is
///   refused: the same cookie replayed after sign-out is refused, on any instance;
/// - the ended-check fails closed: when the store cannot be read, the session is not accepted.
#[derive(Clone)]
pub struct PageSessions {
    keys: KeyRing,
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn Ids>,
}

impl PageSessions {
    /// Sessions sealed with `keys`, whose sign-outs are recorded in `records`, timed by `clock`,
    /// with ids from `ids`.
    pub fn new(
        keys: KeyRing,
        records: Arc<dyn RecordStore>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn Ids>,
    ) -> Self {
        PageSessions {
            keys,
            records,
            clock,
            ids,
        }
    }

    /// A new session for `principal`, exchanged for the bearer `token` it was just verified from
    /// (its `exp` bounds the session; the caller has verified it, so its payload is the
    /// issuer's): the session and its sealed form, the cookie value.
    pub fn begin(&self, principal: &Principal, token: &str) -> (PageSession, String) {
        let token_expires_at = jwt_expiry(token);
        let now = self.clock.now_unix();
        let longest = now + MAX_PAGE_SESSION_SECS;
        let expires_at = token_expires_at.map_or(longest, |exp| exp.min(longest));
        let session = PageSession {
            id: self.ids.new_id(),
            principal: principal.clone(),
            expires_at,
        };
        let payload = json!({
            "id": session.id,
            "t": principal.tenant,
            "s": principal.subject,
            "sc": principal.scopes,
            "u": principal.unrestricted,
            "x": expires_at,
        });
        let sealed = self.keys.seal(PAGE_SESSION_DOMAIN, &payload, expires_at);
        (session, sealed)
    }

    /// The session `sealed` names, if it verifies, has not expired and was not ended.
    pub async fn open(&self, sealed: &str) -> Result<PageSession, PageSessionError> {
        let now = self.clock.now_unix();
        let payload = self.keys.open(PAGE_SESSION_DOMAIN, sealed, now)?;
        let expires_at = payload["x"].as_u64().ok_or(PageSessionError::Malformed)?;
        let text = |name: &str| {
            payload[name]
                .as_str()
                .filter(|v| !v.is_empty())
                .ok_or(PageSessionError::Malformed)
        };
        let scopes = payload["sc"]
            .as_array()
            .ok_or(PageSessionError::Malformed)?;
        let mut principal = Principal::new(
            text("t")?,
            text("s")?,
            scopes.iter().filter_map(Value::as_str),
        );
        principal.unrestricted = payload["u"].as_bool().unwrap_or(false);
        let session = PageSession {
            id: text("id")?.to_string(),
            principal,
            expires_at,
        };
        let ended = self
            .records
            .get(&ended_key(&session), now)
            .await
            .map_err(PageSessionError::Store)?;
        if ended.is_some() {
            return Err(PageSessionError::Ended);
        }
        Ok(session)
    }

    /// Ends `session`: from now on it is refused everywhere. Ending it twice is not an error.
    pub async fn end(&self, session: &PageSession) -> Result<(), PageSessionError> {
        let body = json!({ "subject": session.principal.subject });
        let now = self.clock.now_unix();
        match self
            .records
            .create(&ended_key(session), &body, Some(session.expires_at), now)
            .await
        {
            Ok(_) | Err(StoreError::AlreadyExists(_)) => Ok(()),
            Err(error) => Err(PageSessionError::Store(error)),
        }
    }
}

fn ended_key(session: &PageSession) -> RecordKey {
    RecordKey::new(
        Owner::tenant(&session.principal.tenant),
        ENDED_SESSION_KIND,
        &session.id,
    )
}

/// The `exp` claim of a JWT (unix seconds), read without verifying: only for a token that has
/// just been verified. `None` when it has none (the no-auth mode accepts any token).
fn jwt_expiry(token: &str) -> Option<u64> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let exp = serde_json::from_slice::<Value>(&bytes)
        .ok()?
        .get("exp")?
        .as_f64()?;
    (exp >= 0.0).then_some(exp as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use relevo_state::records::{Record, StoreFuture, TransactFuture, Write};

    /// A store with no ended sessions.
    struct Empty;

    impl RecordStore for Empty {
        fn create<'a>(
            &'a self,
            _: &'a RecordKey,
            _: &'a Value,
            _: Option<u64>,
            _: u64,
        ) -> StoreFuture<'a, Record> {
            Box::pin(async { Err(StoreError::NotFound) })
        }
        fn get<'a>(&'a self, _: &'a RecordKey, _: u64) -> StoreFuture<'a, Option<Record>> {
            Box::pin(async { Ok(None) })
        }
        fn update<'a>(
            &'a self,
            _: &'a RecordKey,
            _: u64,
            _: &'a Value,
            _: u64,
        ) -> StoreFuture<'a, Record> {
            Box::pin(async { Err(StoreError::NotFound) })
        }
        fn transact<'a>(&'a self, _: &'a [Write], _: u64) -> TransactFuture<'a> {
            Box::pin(async {
                Err(relevo_state::records::TransactError::Invalid(
                    "unused".into(),
                ))
            })
        }
        fn count_up_by<'a>(
            &'a self,
            _: &'a RecordKey,
            _: u32,
            _: u32,
            _: Option<u64>,
            _: u64,
        ) -> StoreFuture<'a, Option<u32>> {
            Box::pin(async { Ok(None) })
        }
    }

    #[derive(Debug)]
    struct Counter(std::sync::atomic::AtomicU64);

    impl Ids for Counter {
        fn new_id(&self) -> String {
            format!(
                "session-{}",
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            )
        }
    }

    fn sessions(keys: &KeyRing, clock: &ManualClock) -> PageSessions {
        PageSessions::new(
            keys.clone(),
            Arc::new(Empty),
            Arc::new(clock.clone()),
            Arc::new(Counter(0.into())),
        )
    }

    #[tokio::test]
    async fn a_session_and_a_request_state_never_pass_for_each_other() {
        let keys = KeyRing::new(vec![("k1".into(), vec![7; 32])]).unwrap();
        let clock = ManualClock::at(1_000);
        let sessions = sessions(&keys, &clock);
        let (session, sealed) =
            sessions.begin(&Principal::new("acme", "alice", ["a:b"]), "not-a-jwt");
        assert_eq!(sessions.open(&sealed).await.unwrap(), session);
        let state_domain = "request-state"; // server/call.rs REQUEST_STATE_DOMAIN
        assert_eq!(
            keys.open(state_domain, &sealed, 1_000),
            Err(SealError::BadSignature),
            "a session as a requestState"
        );
        let payload =
            json!({ "id": "x", "t": "acme", "s": "alice", "sc": [], "u": false, "x": 2_000 });
        let state = keys.seal(state_domain, &payload, 2_000);
        assert_eq!(
            sessions.open(&state).await,
            Err(PageSessionError::Seal(SealError::BadSignature))
        );
    }

    #[tokio::test]
    async fn a_session_expires_at_the_token_exp_or_within_the_hour() {
        use base64::Engine as _;
        let keys = KeyRing::new(vec![("k1".into(), vec![7; 32])]).unwrap();
        let clock = ManualClock::at(1_000);
        let sessions = sessions(&keys, &clock);
        let jwt = |exp: u64| {
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            format!(
                "{}.{}.sig",
                b64.encode("{}"),
                b64.encode(json!({ "exp": exp }).to_string())
            )
        };
        let person = Principal::new("acme", "alice", ["a:b"]);
        assert_eq!(sessions.begin(&person, &jwt(1_600)).0.expires_at, 1_600);
        assert_eq!(
            sessions.begin(&person, &jwt(99_000)).0.expires_at,
            1_000 + MAX_PAGE_SESSION_SECS
        );
        assert_eq!(
            sessions.begin(&person, "no-exp").0.expires_at,
            1_000 + MAX_PAGE_SESSION_SECS
        );
        let (_, sealed) = sessions.begin(&person, &jwt(1_600));
        clock.advance(599);
        assert!(sessions.open(&sealed).await.is_ok());
        clock.advance(1);
        assert_eq!(
            sessions.open(&sealed).await,
            Err(PageSessionError::Seal(SealError::Expired))
        );
    }
}
