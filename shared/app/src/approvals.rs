//! The approval page: where a person sees the exact change an agent proposed (item, from → to,
//! version, proposer, digest) and approves or rejects it. Server-rendered HTML, no script. One
//! handler serves the `approvals` Lambda and the local gateway (`/approvals/...`).
//!
//! Authentication: the person's bearer token (the same issuer and audience as the MCP server)
//! in an `Authorization` header, or, for a browser, a page session. `POST /approvals/login`
//! verifies a pasted token and exchanges it for a session ([`relevo_protocol::PageSessions`]:
//! sealed with the state key ring for its own purpose, bound to tenant, subject and the token's
//! scopes, expiring at the token's `exp` or within the hour, whichever is first), carried in the
//! `relevo_approver` cookie: `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's
//! page sends it), `Path=/approvals`, and `Secure` unless served from loopback. The cookie never
//! holds the token: it is worthless as a Bearer on `/mcp` (401). `POST /approvals/logout` (with a
//! CSRF token bound to the session) ends the session: the cookie is cleared and the session id
//! recorded as ended in the store, so the same cookie replayed afterwards is refused.
//!
//! Threat model and defences:
//! - Cross-site request forgery: a decision needs a CSRF token sealed (HMAC, domain
//!   `approval-csrf`, 10 minutes) over the viewer's tenant and subject, the operation id and the
//!   digest shown; a token for another person, operation or digest fails. A sign-out needs one
//!   over the session's id. A foreign `Origin` is
//!   refused outright, and the cookie is `SameSite=Strict` besides.
//! - Clickjacking: `Content-Security-Policy: frame-ancestors 'none'` and `X-Frame-Options: DENY`.
//! - A decision on another version of the proposal: the decision carries the digest the person
//!   saw, and the ledger accepts it only if it equals the operation's digest.
//! - Replay: a decision moves the operation out of `proposed` by a conditional write; the same
//!   form submitted again finds it decided and is refused (409), never decided twice.
//! - Injection: every value rendered is HTML-escaped; the CSP allows no script at all.
//! - Open redirects: the login only redirects to paths under `/approvals/`.
//! - Who sees what: an operation is shown to its proposer and to the people who may decide it
//!   (`inventory:approve`), nobody else in the tenant (to them it does not exist: 404, as to
//!   another tenant); the login takes only tokens that could see some operation
//!   (`inventory:approve` or `inventory:write`).
//! - DNS rebinding and foreign hosts: the same Host/Origin allow-list as `/mcp`, on every page.

use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use relevo_protocol::authority;
use relevo_protocol::{
    Authenticator, Clock, KeyRing, OriginPolicy, PageSession, PageSessionError, PageSessions,
    Principal,
};
use relevo_state::constant_time_eq;
use relevo_state::ledger::{LedgerError, OpStatus, Operation};
use serde_json::{Value, json};

use crate::inventory::{Inventory, InventoryError, policy};

pub const PREFIX: &str = "/approvals";
pub const COOKIE: &str = "relevo_approver";
const CSRF_DOMAIN: &str = "approval-csrf";
const CSRF_LIFETIME_SECS: u64 = 600;
/// What a sign-out's CSRF token is bound to in place of an operation id.
const SIGN_OUT: &str = "sign-out";
const MAX_FORM_BYTES: usize = 16 * 1024;

#[derive(Clone)]
pub struct ApprovalPages {
    pub inventory: Inventory,
    pub auth: Arc<dyn Authenticator>,
    pub keys: KeyRing,
    pub clock: Arc<dyn Clock>,
    /// The Host/Origin allow-list of the server these pages stand beside.
    pub origins: OriginPolicy,
}

/// Whether `person` may see `operation`: its proposer, or someone who may decide proposals.
fn may_see(person: &Principal, operation: &Operation) -> bool {
    person.subject == operation.proposal.proposer || may_decide_any(person)
}

fn may_decide_any(person: &Principal) -> bool {
    person.unrestricted || person.scopes.contains(policy::APPROVE)
}

/// `&`, `<`, `>`, `"` and `'` as entities.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

fn page(status: StatusCode, title: &str, body: &str) -> Response<String> {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:sans-serif;max-width:44rem;margin:2rem auto}}td,th{{text-align:left;padding:.2rem .6rem}}\
         code{{word-break:break-all}}</style></head><body><h1>{title}</h1>{body}</body></html>",
        title = escape(title)
    );
    let mut response = Response::new(html);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Not `no-referrer`: under it a browser sends `Origin: null` on the page's own form posts.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

fn message(status: StatusCode, title: &str, text: &str) -> Response<String> {
    page(
        status,
        title,
        &format!("<p id=\"message\">{}</p>", escape(text)),
    )
}

fn redirect(to: &str, cookie: Option<String>) -> Response<String> {
    let mut response = message(StatusCode::SEE_OTHER, "Redirecting", to);
    if let Ok(location) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    if let Some(cookie) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// The session cookie with `value`, for `max_age` seconds (0: cleared).
fn cookie(headers: &HeaderMap, value: &str, max_age: u64) -> String {
    let secure = if loopback(headers) { "" } else { "; Secure" };
    format!("{COOKIE}={value}; Path={PREFIX}; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}")
}

fn set_cookie(response: &mut Response<String>, cookie: String) {
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
}

fn form(body: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(body).into_owned().collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let mut values = fields.iter().filter(|(k, _)| k == name);
    match (values.next(), values.next()) {
        (Some((_, value)), None) => Some(value.as_str()),
        _ => None,
    }
}

fn cookie_value(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
}

/// A path under `/approvals/` made of safe characters (no scheme, no `//`, no traversal).
fn safe_next(next: &str) -> Option<&str> {
    let rest = next.strip_prefix("/approvals/")?;
    let ok = !rest.is_empty()
        && rest.len() <= 80
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then_some(next)
}

/// The authority the request names, read as the allow-list reads it (`None` when it names
/// none or one outside the grammar).
fn request_authority(headers: &HeaderMap) -> Option<authority::Authority> {
    authority::of_request(&http::Uri::from_static("/"), headers)
        .ok()
        .flatten()
}

fn loopback(headers: &HeaderMap) -> bool {
    request_authority(headers).is_some_and(|named| named.host().is_loopback())
}

/// A present `Origin` must be this host's (any scheme the browser used for it).
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Some(named) = request_authority(headers) else {
        return false;
    };
    origin
        .to_str()
        .ok()
        .and_then(|origin| authority::of_origin(origin).ok())
        .is_some_and(|(scheme, origin)| origin.same_as(&named, authority::default_port(scheme)))
}

impl relevo_protocol::Pages for ApprovalPages {
    fn prefix(&self) -> &str {
        PREFIX
    }

    fn handle<'a>(
        &'a self,
        method: &'a Method,
        path: &'a str,
        headers: &'a HeaderMap,
        body: &'a [u8],
    ) -> relevo_protocol::PageFuture<'a> {
        Box::pin(ApprovalPages::handle(self, method, path, headers, body))
    }

    /// For admission: the sign-in acts as the pasted token's principal, every other page as
    /// the person behind the request.
    fn caller<'a>(
        &'a self,
        method: &'a Method,
        path: &'a str,
        headers: &'a HeaderMap,
        body: &'a [u8],
    ) -> relevo_protocol::CallerFuture<'a> {
        Box::pin(async move {
            let rest = path.strip_prefix(PREFIX)?.trim_start_matches('/');
            match (method, rest) {
                (&Method::POST, "login") => self.authenticate(field(&form(body), "token")).await,
                (_, "login" | "") => None,
                _ => self
                    .person(headers)
                    .await
                    .ok()
                    .flatten()
                    .map(|(person, _)| person),
            }
        })
    }
}

impl ApprovalPages {
    /// Serves one request to a path under [`PREFIX`].
    pub async fn handle(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Response<String> {
        let Some(rest) = path.strip_prefix(PREFIX) else {
            return message(StatusCode::NOT_FOUND, "Not found", "No such page.");
        };
        let rest = rest.trim_start_matches('/');
        if self.origins.check(headers).is_err() {
            return message(
                StatusCode::FORBIDDEN,
                "Forbidden",
                "This host or origin is not allowed.",
            );
        }
        if body.len() > MAX_FORM_BYTES {
            return message(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Too large",
                "The form is too large.",
            );
        }
        if *method == Method::POST && !same_origin(headers) {
            return message(
                StatusCode::FORBIDDEN,
                "Forbidden",
                "This form must be sent from this site.",
            );
        }
        match (method, rest) {
            (&Method::GET, "login") => self.login_form(),
            (&Method::POST, "login") => self.login(headers, body).await,
            (&Method::POST, "logout") => self.logout(headers, body).await,
            (&Method::GET, "") => redirect("/approvals/login", None),
            (_, "logout") => message(StatusCode::METHOD_NOT_ALLOWED, "Not allowed", "Use POST."),
            (_, "login") | (_, "") => message(
                StatusCode::METHOD_NOT_ALLOWED,
                "Not allowed",
                "Use GET or POST.",
            ),
            (&Method::GET, id) => self.show(headers, id).await,
            (&Method::POST, id) => self.decide(headers, id, body).await,
            _ => message(
                StatusCode::METHOD_NOT_ALLOWED,
                "Not allowed",
                "Use GET or POST.",
            ),
        }
    }

    fn login_form(&self) -> Response<String> {
        page(
            StatusCode::OK,
            "Sign in to approve",
            "<p>Paste a bearer token for this server (locally: <code>make token SUB=manager SCOPES=inventory:approve</code>).</p>\
             <form method=\"post\" action=\"/approvals/login\">\
             <label>Token <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"off\" required></label> \
             <label>Operation <input type=\"text\" name=\"next\" id=\"next\" placeholder=\"/approvals/…\"></label> \
             <button type=\"submit\" id=\"signin\">Sign in</button></form>",
        )
    }

    async fn login(&self, headers: &HeaderMap, body: &[u8]) -> Response<String> {
        let fields = form(body);
        let Some(token) = field(&fields, "token").filter(|t| !t.is_empty() && t.len() < 8192)
        else {
            return message(
                StatusCode::BAD_REQUEST,
                "Sign-in failed",
                "A token is required.",
            );
        };
        if token
            .bytes()
            .any(|b| !(b.is_ascii_alphanumeric() || b"-_.".contains(&b)))
        {
            return message(
                StatusCode::UNAUTHORIZED,
                "Sign-in failed",
                "That is not a bearer token.",
            );
        }
        let Some(person) = self.authenticate(Some(token)).await else {
            return message(
                StatusCode::UNAUTHORIZED,
                "Sign-in failed",
                "The token was not accepted.",
            );
        };
        if !(may_decide_any(&person) || person.scopes.contains(policy::WRITE)) {
            return message(
                StatusCode::FORBIDDEN,
                "Sign-in refused",
                "This token can see no approvals (it needs inventory:approve, or inventory:write for your own proposals).",
            );
        }
        let (session, sealed) = self.sessions().begin(&person, token);
        let max_age = session.expires_at.saturating_sub(self.clock.now_unix());
        let next = field(&fields, "next")
            .and_then(safe_next)
            .unwrap_or("/approvals/login");
        redirect(next, Some(cookie(headers, &sealed, max_age)))
    }

    /// Ends the session the cookie carries, if the form was issued to it.
    async fn logout(&self, headers: &HeaderMap, body: &[u8]) -> Response<String> {
        let cleared = cookie(headers, "", 0);
        let session = match self.session(headers).await {
            Ok(Some(session)) => session,
            Ok(None) => {
                let mut response = message(
                    StatusCode::UNAUTHORIZED,
                    "Not signed in",
                    "There is no session to end.",
                );
                set_cookie(&mut response, cleared);
                return response;
            }
            Err(unavailable) => return unavailable,
        };
        let fields = form(body);
        let csrf = field(&fields, "csrf").unwrap_or_default();
        if !self.csrf_holds(csrf, &session.principal, SIGN_OUT, &session.id) {
            return message(
                StatusCode::FORBIDDEN,
                "Forbidden",
                "This form was not issued to you for this session.",
            );
        }
        if let Err(error) = self.sessions().end(&session).await {
            tracing::warn!(%error, "cannot record the end of a page session");
            return message(
                StatusCode::SERVICE_UNAVAILABLE,
                "Unavailable",
                "Try again shortly.",
            );
        }
        let mut response = message(StatusCode::OK, "Signed out", "You are signed out.");
        set_cookie(&mut response, cleared);
        response
    }

    fn sessions(&self) -> PageSessions {
        let records = self.inventory.records.clone();
        PageSessions::new(
            self.keys.clone(),
            records,
            self.clock.clone(),
            self.inventory.ids.clone(),
        )
    }

    /// The page session the cookie carries: `None` without one or for one that is refused
    /// (tampered, expired, ended, another deployment's); a 503 page when the store cannot tell.
    async fn session(&self, headers: &HeaderMap) -> Result<Option<PageSession>, Response<String>> {
        let Some(sealed) = cookie_value(headers).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        match self.sessions().open(&sealed).await {
            Ok(session) => Ok(Some(session)),
            Err(PageSessionError::Store(error)) => {
                tracing::warn!(%error, "cannot check a page session");
                Err(message(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Unavailable",
                    "Try again shortly.",
                ))
            }
            Err(_) => Ok(None),
        }
    }

    async fn authenticate(&self, token: Option<&str>) -> Option<Principal> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {}", token?)).ok()?,
        );
        self.auth.authenticate(&headers).await.ok()
    }

    /// The person behind the request: a bearer header, else the cookie's session (with it).
    async fn person(
        &self,
        headers: &HeaderMap,
    ) -> Result<Option<(Principal, Option<PageSession>)>, Response<String>> {
        if headers.contains_key(header::AUTHORIZATION) {
            return Ok(self
                .auth
                .authenticate(headers)
                .await
                .ok()
                .map(|person| (person, None)));
        }
        Ok(self
            .session(headers)
            .await?
            .map(|session| (session.principal.clone(), Some(session))))
    }

    fn csrf(&self, person: &Principal, id: &str, digest: &str) -> String {
        let payload = json!({ "t": person.tenant, "s": person.subject, "op": id, "d": digest });
        self.keys.seal(
            CSRF_DOMAIN,
            &payload,
            self.clock.now_unix() + CSRF_LIFETIME_SECS,
        )
    }

    fn csrf_holds(&self, token: &str, person: &Principal, id: &str, digest: &str) -> bool {
        let Ok(payload) = self.keys.open(CSRF_DOMAIN, token, self.clock.now_unix()) else {
            return false;
        };
        let matches = |name: &str, expected: &str| {
            constant_time_eq(payload[name].as_str().unwrap_or_default(), expected)
        };
        matches("t", &person.tenant)
            & matches("s", &person.subject)
            & matches("op", id)
            & matches("d", digest)
    }

    async fn show(&self, headers: &HeaderMap, id: &str) -> Response<String> {
        let person = match self.person(headers).await {
            Ok(person) => person,
            Err(unavailable) => return unavailable,
        };
        let Some((person, session)) = person else {
            let next = safe_next(&format!("{PREFIX}/{id}"))
                .map(str::to_string)
                .unwrap_or_default();
            return page(
                StatusCode::UNAUTHORIZED,
                "Sign in to approve",
                &format!(
                    "<p>You are not signed in.</p><form method=\"post\" action=\"/approvals/login\">\
                     <label>Token <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"off\" required></label>\
                     <input type=\"hidden\" name=\"next\" value=\"{}\"> <button type=\"submit\" id=\"signin\">Sign in</button></form>",
                    escape(&next)
                ),
            );
        };
        let found = match self.inventory.operation(&person.tenant, id).await {
            Ok(found) => found,
            Err(error) => return self.failure(error),
        };
        let Some((operation, _)) = found.filter(|(operation, _)| may_see(&person, operation))
        else {
            return message(StatusCode::NOT_FOUND, "Not found", "No such operation.");
        };
        let mut html = self.render(&person, &operation);
        if let Some(session) = session {
            html.push_str(&format!(
                "<form method=\"post\" action=\"{PREFIX}/logout\">\
                 <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                 <button type=\"submit\" id=\"signout\">Sign out</button></form>",
                csrf = escape(&self.csrf(&person, SIGN_OUT, &session.id)),
            ));
        }
        page(StatusCode::OK, "Approve an inventory change", &html)
    }

    fn render(&self, person: &Principal, operation: &Operation) -> String {
        let p = &operation.proposal;
        let text = |v: &Value| {
            escape(
                &v.as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string()),
            )
        };
        let history: String = operation
            .history
            .iter()
            .map(|t| {
                format!(
                    "<li>{} by {} at {}</li>",
                    t.status.as_str(),
                    escape(&t.by),
                    t.at
                )
            })
            .collect();
        let reasons: String = operation
            .needs_person
            .iter()
            .map(|r| format!("<li>{}</li>", escape(r)))
            .collect();
        let mut html = format!(
            "<table>\
             <tr><th>Item</th><td id=\"item\">{sku} in warehouse {warehouse}</td></tr>\
             <tr><th>Change</th><td id=\"change\">{from} → {to}</td></tr>\
             <tr><th>Version</th><td id=\"version\">{version}</td></tr>\
             <tr><th>Proposed by</th><td id=\"proposer\">{proposer}</td></tr>\
             <tr><th>Digest</th><td><code id=\"digest\">{digest}</code></td></tr>\
             <tr><th>Status</th><td id=\"status\">{status}</td></tr>\
             <tr><th>Policy</th><td>{policy}</td></tr>\
             </table><p>Why a person decides:</p><ul>{reasons}</ul><p>History:</p><ol>{history}</ol>",
            sku = text(&p.arguments["sku"]),
            warehouse = text(&p.arguments["warehouse"]),
            from = text(&p.arguments["from"]),
            to = text(&p.arguments["to"]),
            version = p.expected_version,
            proposer = escape(&p.proposer),
            digest = escape(&operation.digest),
            status = operation.status.as_str(),
            policy = escape(&p.policy_version),
        );
        let may_decide = may_decide_any(person) && person.subject != p.proposer;
        if operation.status == OpStatus::Proposed && may_decide {
            html.push_str(&format!(
                "<form method=\"post\" action=\"{PREFIX}/{id}\">\
                 <input type=\"hidden\" name=\"digest\" value=\"{digest}\">\
                 <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                 <button type=\"submit\" name=\"decision\" value=\"approve\" id=\"approve\">Approve</button> \
                 <button type=\"submit\" name=\"decision\" value=\"reject\" id=\"reject\">Reject</button></form>",
                id = escape(&p.operation_id),
                digest = escape(&operation.digest),
                csrf = escape(&self.csrf(person, &p.operation_id, &operation.digest)),
            ));
        } else if operation.status == OpStatus::Proposed {
            html.push_str(
                "<p id=\"cannot\">You cannot decide this proposal (approver scope needed, and not your own).</p>",
            );
        }
        html
    }

    async fn decide(&self, headers: &HeaderMap, id: &str, body: &[u8]) -> Response<String> {
        let person = match self.person(headers).await {
            Ok(person) => person,
            Err(unavailable) => return unavailable,
        };
        let Some((person, _)) = person else {
            return message(
                StatusCode::UNAUTHORIZED,
                "Not signed in",
                "Sign in to decide.",
            );
        };
        let fields = form(body);
        let (Some(decision), Some(digest), Some(csrf)) = (
            field(&fields, "decision"),
            field(&fields, "digest"),
            field(&fields, "csrf"),
        ) else {
            return message(
                StatusCode::BAD_REQUEST,
                "Bad request",
                "The form is incomplete.",
            );
        };
        let approve = match decision {
            "approve" => true,
            "reject" => false,
            _ => return message(StatusCode::BAD_REQUEST, "Bad request", "Unknown decision."),
        };
        if !self.csrf_holds(csrf, &person, id, digest) {
            return message(
                StatusCode::FORBIDDEN,
                "Forbidden",
                "This form was not issued to you for this change.",
            );
        }
        match self.inventory.decide(&person, id, digest, approve).await {
            Ok(operation) => {
                let outcome = if approve { "Approved" } else { "Rejected" };
                message(
                    StatusCode::OK,
                    outcome,
                    &format!(
                        "{outcome}: operation {} is now {}.",
                        id,
                        operation.status.as_str()
                    ),
                )
            }
            Err(error) => self.failure(error),
        }
    }

    fn failure(&self, error: InventoryError) -> Response<String> {
        let status = match &error {
            InventoryError::NotFound => StatusCode::NOT_FOUND,
            InventoryError::NotPermitted(_) => StatusCode::FORBIDDEN,
            InventoryError::Ledger(LedgerError::IllegalTransition { .. }) => StatusCode::CONFLICT,
            InventoryError::Ledger(LedgerError::DigestMismatch | LedgerError::Raced) => {
                StatusCode::CONFLICT
            }
            InventoryError::Ledger(LedgerError::Expired | LedgerError::PolicyChanged { .. }) => {
                StatusCode::GONE
            }
            InventoryError::Invalid(_) => StatusCode::BAD_REQUEST,
            InventoryError::Store(_)
            | InventoryError::Contention(_)
            | InventoryError::Internal(_) => {
                tracing::warn!(%error, "approval could not be decided now");
                return message(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Unavailable",
                    "Try again shortly.",
                );
            }
            _ => StatusCode::CONFLICT,
        };
        message(status, "Not decided", &error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_values_cannot_break_out_of_html() {
        assert_eq!(
            escape(r#"<script>"x"&'y'</script>"#),
            "&lt;script&gt;&quot;x&quot;&amp;&#x27;y&#x27;&lt;/script&gt;"
        );
    }

    #[test]
    fn the_login_redirects_only_under_approvals() {
        assert_eq!(safe_next("/approvals/abc-_9"), Some("/approvals/abc-_9"));
        for bad in [
            "//evil.example/x",
            "https://evil.example/approvals/x",
            "/approvals/../mcp",
            "/approvals/",
            "/mcp",
        ] {
            assert_eq!(safe_next(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_post_from_another_origin_is_not_same_origin() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(same_origin(&headers), "no Origin: not a browser form");
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8080"),
        );
        assert!(same_origin(&headers));
        for foreign in ["null", "https://evil.example", "http://127.0.0.1:8081"] {
            headers.insert(header::ORIGIN, HeaderValue::from_static(foreign));
            assert!(!same_origin(&headers), "{foreign}");
        }
    }

    #[test]
    fn a_host_with_user_info_is_neither_loopback_nor_anyones_origin() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::HOST,
            HeaderValue::from_static("127.0.0.1:1@evil.example"),
        );
        assert!(!loopback(&headers), "the cookie stays Secure");
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:1@evil.example"),
        );
        assert!(!same_origin(&headers));
    }
}
