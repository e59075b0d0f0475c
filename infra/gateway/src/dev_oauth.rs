//! A minimal OAuth 2.1 authorization server for the dev issuer, for local tests only: what a real
//! issuer (Cognito, Auth0, Okta) does in production, so that an MCP client can run its whole
//! authorization flow against a local server (RFC 9728 discovery → RFC 8414 metadata → RFC 7591
//! registration → authorization code with PKCE → token).
//!
//! Served at the issuer's origin root ([`router`]):
//! - `GET /.well-known/oauth-authorization-server` (RFC 8414), the same document at
//!   `/.well-known/openid-configuration`, and `GET /.well-known/jwks.json` (the issuer's key);
//! - `POST /register`: dynamic client registration (RFC 7591), public clients only
//!   (`token_endpoint_auth_method` `none`), loopback redirect URIs only;
//! - `GET /authorize`: auto-approves, with no login page, for the one configured tenant and
//!   subject; `response_type=code` with a PKCE `S256` challenge is required, and the response
//!   carries `iss` (RFC 9207);
//! - `POST /token`: `grant_type=authorization_code` only (no refresh tokens). A code is single-use,
//!   lives [`CODE_TTL`], and is bound to its client, redirect URI, challenge, scope and `resource`
//!   (RFC 8707). The access token is the dev issuer's, for its audience, valid [`TOKEN_TTL_SECS`].
//!   Every scope a client asks for is granted.
//!
//! Threat model: this is a dev tool, never deployed. It hands a token for the configured principal
//! to anything that can complete the flow, so it must only be reachable from this machine: serve
//! it on 127.0.0.1. A request whose `Host` is not a loopback name is refused (403), so a web page
//! cannot reach it through DNS rebinding; it answers no CORS preflight, so a page cannot register
//! a client (JSON body) or read a response cross-origin; and codes are only ever sent to loopback
//! redirect URIs, so an auto-approved authorization cannot deliver a code off the machine. PKCE
//! (`S256` only, compared in constant time) ties a code to the client that asked for it. Clients,
//! outstanding codes and request bodies are bounded ([`MAX_CLIENTS`], [`MAX_CODES`],
//! [`MAX_BODY_BYTES`]), so a looping client cannot exhaust memory; state lives in the router only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use http::{HeaderValue, StatusCode, header};
use relevo_auth::DevIssuer;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How long an authorization code may wait for its token request.
pub const CODE_TTL: Duration = Duration::from_secs(60);
/// How long an access token is valid.
pub const TOKEN_TTL_SECS: u64 = 600;
/// Registered clients at most; a registration past it is refused until restart.
pub const MAX_CLIENTS: usize = 1000;
/// Outstanding (unredeemed, unexpired) authorization codes at most.
pub const MAX_CODES: usize = 1000;
/// The largest registration or token request body accepted.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// Redirect URIs one client may register, and the longest one.
const MAX_REDIRECT_URIS: usize = 10;
const MAX_URI_LEN: usize = 2048;

/// The dev authorization server's router, for `issuer`'s origin root: every authorization is
/// granted to `tenant`/`subject`. The issuer must be an origin (`http://127.0.0.1:PORT`), as the
/// metadata is served at the root well-known paths.
pub fn router(issuer: DevIssuer, tenant: String, subject: String) -> Router {
    build(issuer, tenant, subject, CODE_TTL)
}

fn build(issuer: DevIssuer, tenant: String, subject: String, code_ttl: Duration) -> Router {
    let server = Arc::new(Server {
        issuer,
        tenant,
        subject,
        code_ttl,
        registry: Mutex::default(),
    });
    Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(metadata),
        )
        .route(
            "/.well-known/openid-configuration",
            axum::routing::get(metadata),
        )
        .route("/.well-known/jwks.json", axum::routing::get(jwks))
        .route("/register", axum::routing::post(register))
        .route("/authorize", axum::routing::get(authorize))
        .route("/token", axum::routing::post(token))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "not_found", "no such endpoint") })
        .layer(axum::middleware::from_fn(loopback_only))
        .with_state(server)
}

struct Server {
    issuer: DevIssuer,
    tenant: String,
    subject: String,
    code_ttl: Duration,
    registry: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    /// client_id → its registered redirect URIs.
    clients: HashMap<String, Vec<String>>,
    /// code → what it was issued for.
    codes: HashMap<String, Grant>,
}

struct Grant {
    client_id: String,
    redirect_uri: String,
    code_challenge: String,
    scopes: Vec<String>,
    resource: Option<String>,
    expires: Instant,
}

impl Server {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        // Nothing holding the lock can leave the maps half-updated, so a poisoned lock is usable.
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn base(&self) -> &str {
        self.issuer.issuer.trim_end_matches('/')
    }
}

type Shared = State<Arc<Server>>;

/// An OAuth error body (RFC 6749 §5.2), never cached.
fn error(status: StatusCode, code: &str, description: &str) -> Response {
    let mut response = (
        status,
        axum::Json(json!({ "error": code, "error_description": description })),
    )
        .into_response();
    no_store(&mut response);
    response
}

fn no_store(response: &mut Response) {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
        .headers_mut()
        .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

/// Refuses any request whose authority is not a loopback name (DNS rebinding), read as every
/// other route reads it ([`relevo_protocol::authority::of_request`]: one `Host`, agreeing with an
/// absolute-form target, no userinfo).
async fn loopback_only(request: Request, next: Next) -> Response {
    let named = relevo_protocol::authority::of_request(request.uri(), request.headers());
    if named.is_ok_and(|named| named.is_some_and(|named| named.host().is_loopback())) {
        next.run(request).await
    } else {
        error(
            StatusCode::FORBIDDEN,
            "access_denied",
            "the dev authorization server answers loopback hosts only",
        )
    }
}

/// `127.0.0.1`, `localhost`, `[::1]` (any loopback address), with an optional port; no userinfo.
fn is_loopback_authority(authority: &str) -> bool {
    relevo_protocol::authority::Authority::parse(authority)
        .is_ok_and(|authority| authority.host().is_loopback())
}

/// An absolute `http`/`https` URI on a loopback host, without userinfo or fragment.
fn is_loopback_redirect_uri(value: &str) -> bool {
    if value.len() > MAX_URI_LEN || value.contains('#') {
        return false;
    }
    let Ok(uri) = value.parse::<http::Uri>() else {
        return false;
    };
    matches!(uri.scheme_str(), Some("http" | "https"))
        && uri
            .authority()
            .is_some_and(|authority| is_loopback_authority(authority.as_str()))
}

/// RFC 8414 authorization server metadata.
async fn metadata(State(server): Shared) -> Response {
    let base = server.base();
    let mut response = axum::Json(json!({
        "issuer": server.issuer.issuer,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "jwks_uri": format!("{base}/.well-known/jwks.json"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        // Any scope asked for is granted; none is advertised, so a client takes its scopes from
        // the resource's metadata (RFC 9728 `scopes_supported`) or its challenge.
        "scopes_supported": [],
        "authorization_response_iss_parameter_supported": true,
    }))
    .into_response();
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

async fn jwks(State(server): Shared) -> Response {
    axum::Json(server.issuer.jwks()).into_response()
}

fn random_id(bytes: usize) -> Option<String> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).ok()?;
    Some(B64.encode(buffer))
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// True when the request's media type (parameters aside) is `expected`.
fn has_content_type(request: &Request, expected: &str) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media_type| media_type.trim().eq_ignore_ascii_case(expected))
}

async fn read_body(request: Request) -> Result<axum::body::Bytes, Response> {
    relevo_local::body::read_limited(request.into_body(), MAX_BODY_BYTES)
        .await
        .map_err(|refusal| {
            let mut refused = error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request",
                "the request body is too large",
            );
            relevo_local::body::close_unless_drained(&mut refused, refusal);
            refused
        })
}

/// RFC 7591 dynamic client registration: a public client with loopback redirect URIs.
async fn register(State(server): Shared, request: Request) -> Response {
    let invalid = |code: &str, description: &str| error(StatusCode::BAD_REQUEST, code, description);
    if !has_content_type(&request, "application/json") {
        return invalid(
            "invalid_client_metadata",
            "the registration request must be application/json",
        );
    }
    let body = match read_body(request).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Ok(Value::Object(mut metadata)) = serde_json::from_slice::<Value>(&body) else {
        return invalid(
            "invalid_client_metadata",
            "the registration request must be a JSON object",
        );
    };
    let redirect_uris: Vec<String> = match metadata.get("redirect_uris") {
        Some(Value::Array(uris)) => uris
            .iter()
            .filter_map(|uri| uri.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    let listed = metadata
        .get("redirect_uris")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if redirect_uris.is_empty()
        || redirect_uris.len() != listed
        || redirect_uris.len() > MAX_REDIRECT_URIS
    {
        return invalid(
            "invalid_redirect_uri",
            "redirect_uris must list 1 to 10 URIs",
        );
    }
    if let Some(bad) = redirect_uris
        .iter()
        .find(|uri| !is_loopback_redirect_uri(uri))
    {
        return invalid(
            "invalid_redirect_uri",
            &format!(
                "{bad:?} is not a loopback http(s) URI without a fragment (this is a dev issuer)"
            ),
        );
    }
    let Some(client_id) = random_id(16) else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "no random source",
        );
    };
    {
        let mut registry = server.registry();
        if registry.clients.len() >= MAX_CLIENTS {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "too many registered clients; restart the dev authorization server",
            );
        }
        registry
            .clients
            .insert(client_id.clone(), redirect_uris.clone());
    }
    tracing::info!(%client_id, "dev OAuth: client registered");
    // Echo the metadata, with the values this server substitutes (RFC 7591 §3.2.1).
    metadata.insert("client_id".into(), json!(client_id));
    metadata.insert("client_id_issued_at".into(), json!(now_unix()));
    metadata.insert("redirect_uris".into(), json!(redirect_uris));
    metadata.insert("token_endpoint_auth_method".into(), json!("none"));
    metadata.insert("grant_types".into(), json!(["authorization_code"]));
    metadata.insert("response_types".into(), json!(["code"]));
    metadata.remove("client_secret");
    metadata.remove("client_secret_expires_at");
    let mut response = (StatusCode::CREATED, axum::Json(Value::Object(metadata))).into_response();
    no_store(&mut response);
    response
}

/// Request parameters, keeping repeats so that a repeated parameter can be refused (RFC 6749 §3.1).
struct Params(HashMap<String, Vec<String>>);

impl Params {
    fn parse(input: &[u8]) -> Self {
        let mut params: HashMap<String, Vec<String>> = HashMap::new();
        for (name, value) in form_urlencoded::parse(input) {
            params
                .entry(name.into_owned())
                .or_default()
                .push(value.into_owned());
        }
        Params(params)
    }

    /// The parameter's one value; `Err` names it when it is repeated. An empty value is absent.
    fn one<'a>(&'a self, name: &'a str) -> Result<Option<&'a str>, String> {
        match self.0.get(name).map(Vec::as_slice) {
            None | Some([]) => Ok(None),
            Some([value]) => Ok(Some(value.as_str()).filter(|value| !value.is_empty())),
            Some(_) => Err(format!("{name} must not be repeated")),
        }
    }
}

/// `S256` challenge: base64url (no padding) of a SHA-256 digest, 43 characters.
fn is_s256_challenge(value: &str) -> bool {
    value.len() == 43
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// RFC 7636 §4.1: 43 to 128 unreserved characters.
fn is_code_verifier(value: &str) -> bool {
    (43..=128).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// RFC 6749 §3.3: scope tokens are NQCHAR (%x21 / %x23-5B / %x5D-7E).
fn parse_scope(value: Option<&str>) -> Option<Vec<String>> {
    let scopes: Vec<String> = value
        .unwrap_or("")
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let valid = scopes.iter().all(|scope| {
        scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
    });
    valid.then_some(scopes)
}

/// `redirect_uri` with `params` added to its query.
fn redirect_to(redirect_uri: &str, params: &[(&str, &str)]) -> Response {
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    let separator = if redirect_uri.contains('?') { '&' } else { '?' };
    match HeaderValue::from_str(&format!("{redirect_uri}{separator}{query}")) {
        Ok(location) => {
            let mut response = StatusCode::FOUND.into_response();
            response.headers_mut().insert(header::LOCATION, location);
            no_store(&mut response);
            response
        }
        Err(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "cannot build the redirect",
        ),
    }
}

/// The authorization endpoint: auto-approves for the configured principal.
async fn authorize(State(server): Shared, uri: http::Uri) -> Response {
    let params = Params::parse(uri.query().unwrap_or("").as_bytes());
    let bad_request =
        |description: &str| error(StatusCode::BAD_REQUEST, "invalid_request", description);
    // Until the client and its redirect URI are known good, errors are shown here, never redirected.
    let client_id = match params.one("client_id") {
        Ok(Some(client_id)) => client_id,
        Ok(None) => return bad_request("client_id is required"),
        Err(repeated) => return bad_request(&repeated),
    };
    let redirect_uri = match params.one("redirect_uri") {
        Ok(Some(redirect_uri)) => redirect_uri,
        Ok(None) => return bad_request("redirect_uri is required"),
        Err(repeated) => return bad_request(&repeated),
    };
    match server.registry().clients.get(client_id) {
        None => return bad_request("unknown client_id"),
        Some(uris) if !uris.iter().any(|uri| uri == redirect_uri) => {
            return bad_request("redirect_uri is not registered for this client");
        }
        Some(_) => {}
    }

    let state = params.one("state").ok().flatten();
    let iss = server.issuer.issuer.as_str();
    let fail = |code: &str, description: &str| {
        let mut pairs = vec![("error", code), ("error_description", description)];
        pairs.extend(state.map(|state| ("state", state)));
        pairs.push(("iss", iss));
        redirect_to(redirect_uri, &pairs)
    };
    let mut values = HashMap::new();
    for name in [
        "state",
        "response_type",
        "code_challenge",
        "code_challenge_method",
        "scope",
        "resource",
    ] {
        match params.one(name) {
            Ok(value) => values.insert(name, value),
            Err(repeated) => return fail("invalid_request", &repeated),
        };
    }
    let value = |name: &str| values.get(name).copied().flatten();
    match value("response_type") {
        Some("code") => {}
        Some(_) => {
            return fail(
                "unsupported_response_type",
                "only response_type=code is supported",
            );
        }
        None => return fail("invalid_request", "response_type is required"),
    }
    let Some(code_challenge) = value("code_challenge") else {
        return fail("invalid_request", "code_challenge is required (PKCE, S256)");
    };
    if value("code_challenge_method") != Some("S256") {
        return fail("invalid_request", "code_challenge_method must be S256");
    }
    if !is_s256_challenge(code_challenge) {
        return fail("invalid_request", "code_challenge is not an S256 challenge");
    }
    let Some(scopes) = parse_scope(value("scope")) else {
        return fail(
            "invalid_scope",
            "scope holds characters a scope token cannot",
        );
    };
    let resource = value("resource");
    if resource.is_some_and(|resource| resource != server.issuer.audience) {
        return fail(
            "invalid_target",
            "this issuer only mints tokens for its audience",
        );
    }
    let Some(code) = random_id(32) else {
        return fail("server_error", "no random source");
    };
    {
        let mut registry = server.registry();
        let now = Instant::now();
        registry.codes.retain(|_, grant| grant.expires > now);
        if registry.codes.len() >= MAX_CODES {
            drop(registry);
            return fail(
                "temporarily_unavailable",
                "too many outstanding authorization codes",
            );
        }
        registry.codes.insert(
            code.clone(),
            Grant {
                client_id: client_id.into(),
                redirect_uri: redirect_uri.into(),
                code_challenge: code_challenge.into(),
                scopes,
                resource: resource.map(String::from),
                expires: now + server.code_ttl,
            },
        );
    }
    let mut pairs = vec![("code", code.as_str())];
    pairs.extend(state.map(|state| ("state", state)));
    pairs.push(("iss", iss));
    redirect_to(redirect_uri, &pairs)
}

/// The token endpoint: redeems an authorization code, once.
async fn token(State(server): Shared, request: Request) -> Response {
    let refuse = |code: &str, description: &str| error(StatusCode::BAD_REQUEST, code, description);
    if !has_content_type(&request, "application/x-www-form-urlencoded") {
        return refuse(
            "invalid_request",
            "the token request must be application/x-www-form-urlencoded",
        );
    }
    let body = match read_body(request).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let params = Params::parse(&body);
    let mut values = HashMap::new();
    for name in [
        "grant_type",
        "code",
        "code_verifier",
        "redirect_uri",
        "client_id",
        "resource",
    ] {
        match params.one(name) {
            Ok(value) => values.insert(name, value),
            Err(repeated) => return refuse("invalid_request", &repeated),
        };
    }
    let value = |name: &str| values.get(name).copied().flatten();
    match value("grant_type") {
        Some("authorization_code") => {}
        Some(_) => {
            return refuse(
                "unsupported_grant_type",
                "only grant_type=authorization_code is supported",
            );
        }
        None => return refuse("invalid_request", "grant_type is required"),
    }
    let (Some(code), Some(client_id)) = (value("code"), value("client_id")) else {
        return refuse("invalid_request", "code and client_id are required");
    };
    // The code is spent by this request whatever its outcome: one presentation per code.
    let grant = {
        let mut registry = server.registry();
        if !registry.clients.contains_key(client_id) {
            return error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "unknown client_id",
            );
        }
        registry.codes.remove(code)
    };
    let Some(grant) = grant else {
        return refuse(
            "invalid_grant",
            "unknown or already used authorization code",
        );
    };
    if grant.expires <= Instant::now() {
        return refuse("invalid_grant", "the authorization code has expired");
    }
    if grant.client_id != client_id {
        return refuse(
            "invalid_grant",
            "the authorization code was issued to another client",
        );
    }
    if value("redirect_uri") != Some(grant.redirect_uri.as_str()) {
        return refuse(
            "invalid_grant",
            "redirect_uri does not match the authorization request",
        );
    }
    let Some(verifier) = value("code_verifier").filter(|verifier| is_code_verifier(verifier))
    else {
        return refuse("invalid_grant", "code_verifier is missing or malformed");
    };
    let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
    if !relevo_state::constant_time_eq(&challenge, &grant.code_challenge) {
        return refuse(
            "invalid_grant",
            "code_verifier does not match the code_challenge",
        );
    }
    let audience = server.issuer.audience.as_str();
    if value("resource").is_some_and(|resource| resource != audience)
        || grant
            .resource
            .as_deref()
            .is_some_and(|resource| resource != audience)
    {
        return refuse(
            "invalid_target",
            "this issuer only mints tokens for its audience",
        );
    }
    let scopes: Vec<&str> = grant.scopes.iter().map(String::as_str).collect();
    let access_token = match server.issuer.mint(
        &server.tenant,
        &server.subject,
        &scopes,
        now_unix(),
        TOKEN_TTL_SECS,
    ) {
        Ok(token) => token,
        Err(failure) => {
            tracing::error!(%failure, "dev OAuth: cannot mint a token");
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "cannot sign the token",
            );
        }
    };
    tracing::info!(client_id, tenant = %server.tenant, subject = %server.subject, "dev OAuth: token issued");
    let mut response = axum::Json(json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": TOKEN_TTL_SECS,
        "scope": scopes.join(" "),
    }))
    .into_response();
    no_store(&mut response);
    response
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use axum::body::Body;
    use relevo_auth::{AuthSettings, BearerAuthenticator, StaticKeySource};
    use tower::ServiceExt;

    use super::*;

    const ISSUER: &str = "http://127.0.0.1:9100";
    const AUDIENCE: &str = "http://127.0.0.1:9200/mcp";
    const REDIRECT: &str = "http://127.0.0.1:33418/callback";
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk-and-some-more-entropy";

    fn dev_router(code_ttl: Duration) -> Router {
        let issuer = DevIssuer::generate(ISSUER, AUDIENCE);
        build(issuer, "acme".into(), "alice".into(), code_ttl)
    }

    fn challenge(verifier: &str) -> String {
        B64.encode(Sha256::digest(verifier.as_bytes()))
    }

    struct Reply {
        status: StatusCode,
        headers: http::HeaderMap,
        body: Value,
    }

    async fn send(router: &Router, request: http::Request<Body>) -> Reply {
        let response = router.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }

    async fn get(router: &Router, path_and_query: &str) -> Reply {
        let request = http::Request::get(path_and_query)
            .header(header::HOST, "127.0.0.1:9100")
            .body(Body::empty())
            .unwrap();
        send(router, request).await
    }

    async fn post(router: &Router, path: &str, content_type: &str, body: String) -> Reply {
        let request = http::Request::post(path)
            .header(header::HOST, "127.0.0.1:9100")
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(body))
            .unwrap();
        send(router, request).await
    }

    fn form(pairs: &[(&str, &str)]) -> String {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
    }

    async fn register_client(router: &Router) -> String {
        let body = json!({ "redirect_uris": [REDIRECT], "client_name": "test", "token_endpoint_auth_method": "none" });
        let reply = post(router, "/register", "application/json", body.to_string()).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        assert_eq!(reply.body["redirect_uris"], json!([REDIRECT]));
        assert_eq!(reply.body["client_name"], "test");
        assert_eq!(reply.body["token_endpoint_auth_method"], "none");
        reply.body["client_id"].as_str().unwrap().to_string()
    }

    /// The query parameters of a redirect's `Location`, after checking it goes to `REDIRECT`.
    fn redirect_params(reply: &Reply) -> BTreeMap<String, String> {
        assert_eq!(reply.status, StatusCode::FOUND, "{}", reply.body);
        let location = reply.headers[header::LOCATION].to_str().unwrap();
        let query = location
            .strip_prefix(&format!("{REDIRECT}?"))
            .unwrap_or_else(|| panic!("{location}"));
        form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect()
    }

    fn authorize_query(client_id: &str, extra: &[(&str, &str)]) -> String {
        let challenge = challenge(VERIFIER);
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("state", "xyz"),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("scope", "notes:read notes:write"),
            ("resource", AUDIENCE),
        ];
        for (name, value) in extra {
            pairs.retain(|(existing, _)| existing != name);
            if !value.is_empty() {
                pairs.push((name, value));
            }
        }
        format!("/authorize?{}", form(&pairs))
    }

    async fn code_for(router: &Router, client_id: &str) -> String {
        let params = redirect_params(&get(router, &authorize_query(client_id, &[])).await);
        assert_eq!(params["state"], "xyz");
        assert_eq!(params["iss"], ISSUER);
        params["code"].clone()
    }

    async fn redeem(router: &Router, client_id: &str, code: &str, extra: &[(&str, &str)]) -> Reply {
        let mut pairs = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("code_verifier", VERIFIER),
            ("redirect_uri", REDIRECT),
            ("client_id", client_id),
            ("resource", AUDIENCE),
        ];
        for (name, value) in extra {
            pairs.retain(|(existing, _)| existing != name);
            pairs.push((name, value));
        }
        post(
            router,
            "/token",
            "application/x-www-form-urlencoded",
            form(&pairs),
        )
        .await
    }

    fn payload(token: &str) -> Value {
        let middle = token.split('.').nth(1).unwrap();
        serde_json::from_slice(&B64.decode(middle).unwrap()).unwrap()
    }

    #[tokio::test]
    async fn metadata_names_the_endpoints_at_both_well_known_paths() {
        let router = dev_router(CODE_TTL);
        for path in [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ] {
            let reply = get(&router, path).await;
            assert_eq!(reply.status, StatusCode::OK);
            let doc = reply.body;
            assert_eq!(doc["issuer"], ISSUER);
            assert_eq!(doc["authorization_endpoint"], format!("{ISSUER}/authorize"));
            assert_eq!(doc["token_endpoint"], format!("{ISSUER}/token"));
            assert_eq!(doc["registration_endpoint"], format!("{ISSUER}/register"));
            assert_eq!(doc["jwks_uri"], format!("{ISSUER}/.well-known/jwks.json"));
            assert_eq!(doc["response_types_supported"], json!(["code"]));
            assert_eq!(doc["grant_types_supported"], json!(["authorization_code"]));
            assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
            assert_eq!(
                doc["token_endpoint_auth_methods_supported"],
                json!(["none"])
            );
            assert!(doc["scopes_supported"].is_array());
        }
        let jwks = get(&router, "/.well-known/jwks.json").await;
        assert_eq!(jwks.body["keys"][0]["alg"], "ES256");
    }

    #[tokio::test]
    async fn the_code_flow_with_s256_yields_a_token_that_verifies_against_the_jwks() {
        let router = dev_router(CODE_TTL);
        let client_id = register_client(&router).await;
        let code = code_for(&router, &client_id).await;
        let reply = redeem(&router, &client_id, &code, &[]).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.headers[header::CACHE_CONTROL], "no-store");
        assert_eq!(reply.body["token_type"], "Bearer");
        assert_eq!(reply.body["expires_in"], 600);
        assert_eq!(reply.body["scope"], "notes:read notes:write");
        let token = reply.body["access_token"].as_str().unwrap();

        let claims = payload(token);
        assert_eq!(
            (&claims["iss"], &claims["aud"], &claims["sub"]),
            (&json!(ISSUER), &json!(AUDIENCE), &json!("alice"))
        );
        assert_eq!(claims["tenant"], "acme");
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            600
        );

        // The signature, with the resource server's own verifier, against the published JWKS.
        let jwks = get(&router, "/.well-known/jwks.json").await.body;
        let env = [
            ("RELEVO_AUTH", "dev"),
            ("RELEVO_AUTH_ISSUER", ISSUER),
            ("RELEVO_AUTH_AUDIENCE", AUDIENCE),
        ];
        let settings = AuthSettings::load(
            |name| {
                env.iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.to_string())
            },
            ISSUER,
        )
        .unwrap();
        let verifier = BearerAuthenticator::new(
            settings,
            Arc::new(StaticKeySource(serde_json::from_value(jwks).unwrap())),
        );
        let mut headers = http::HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        let principal = verifier.verify(&headers).await.unwrap();
        assert_eq!(
            (principal.tenant.as_str(), principal.subject.as_str()),
            ("acme", "alice")
        );
        assert!(principal.scopes.contains("notes:write"));
    }

    #[tokio::test]
    async fn a_wrong_verifier_is_refused_and_spends_the_code() {
        let router = dev_router(CODE_TTL);
        let client_id = register_client(&router).await;
        let code = code_for(&router, &client_id).await;
        let wrong = "0000000000000000000000000000000000000000000000000000000000000000";
        let reply = redeem(&router, &client_id, &code, &[("code_verifier", wrong)]).await;
        assert_eq!(
            (reply.status, &reply.body["error"]),
            (StatusCode::BAD_REQUEST, &json!("invalid_grant"))
        );
        let retry = redeem(&router, &client_id, &code, &[]).await;
        assert_eq!(
            retry.body["error"], "invalid_grant",
            "a code is presented once"
        );
        let missing = redeem(
            &router,
            &client_id,
            &code_for(&router, &client_id).await,
            &[("code_verifier", "")],
        )
        .await;
        assert_eq!(missing.body["error"], "invalid_grant");
    }

    #[tokio::test]
    async fn a_reused_code_is_invalid_grant() {
        let router = dev_router(CODE_TTL);
        let client_id = register_client(&router).await;
        let code = code_for(&router, &client_id).await;
        assert_eq!(
            redeem(&router, &client_id, &code, &[]).await.status,
            StatusCode::OK
        );
        let again = redeem(&router, &client_id, &code, &[]).await;
        assert_eq!(
            (again.status, &again.body["error"]),
            (StatusCode::BAD_REQUEST, &json!("invalid_grant"))
        );
    }

    #[tokio::test]
    async fn an_expired_code_is_invalid_grant() {
        let router = dev_router(Duration::ZERO);
        let client_id = register_client(&router).await;
        let code = code_for(&router, &client_id).await;
        let reply = redeem(&router, &client_id, &code, &[]).await;
        assert_eq!(reply.body["error"], "invalid_grant");
        assert_eq!(
            reply.body["error_description"],
            "the authorization code has expired"
        );
    }

    #[tokio::test]
    async fn an_unregistered_redirect_uri_is_shown_not_redirected() {
        let router = dev_router(CODE_TTL);
        let client_id = register_client(&router).await;
        for redirect in [
            "http://127.0.0.1:33418/other",
            "https://attacker.example/callback",
            "",
        ] {
            let reply = get(
                &router,
                &authorize_query(&client_id, &[("redirect_uri", redirect)]),
            )
            .await;
            assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{redirect}");
            assert!(!reply.headers.contains_key(header::LOCATION));
            assert_eq!(reply.body["error"], "invalid_request");
        }
        let unknown = get(&router, &authorize_query("no-such-client", &[])).await;
        assert_eq!(
            (unknown.status, &unknown.body["error_description"]),
            (StatusCode::BAD_REQUEST, &json!("unknown client_id"))
        );
    }

    #[tokio::test]
    async fn a_plain_or_missing_challenge_is_refused() {
        let router = dev_router(CODE_TTL);
        let client_id = register_client(&router).await;
        let plain = [
            ("code_challenge", VERIFIER),
            ("code_challenge_method", "plain"),
        ];
        for extra in [
            &plain[..],
            &[("code_challenge_method", "")],
            &[("code_challenge", "")],
        ] {
            let params = redirect_params(&get(&router, &authorize_query(&client_id, extra)).await);
            assert_eq!(params["error"], "invalid_request", "{extra:?}");
            assert_eq!(params["state"], "xyz");
            assert!(!params.contains_key("code"));
        }
        let params = redirect_params(
            &get(
                &router,
                &authorize_query(&client_id, &[("response_type", "token")]),
            )
            .await,
        );
        assert_eq!(params["error"], "unsupported_response_type");
    }

    #[tokio::test]
    async fn the_code_is_bound_to_its_client_redirect_and_resource() {
        let router = dev_router(CODE_TTL);
        let client_id = register_client(&router).await;
        let other_client = register_client(&router).await;
        let code = code_for(&router, &client_id).await;
        assert_eq!(
            redeem(&router, &other_client, &code, &[]).await.body["error"],
            "invalid_grant"
        );
        let code = code_for(&router, &client_id).await;
        let reply = redeem(
            &router,
            &client_id,
            &code,
            &[("redirect_uri", "http://127.0.0.1:1/x")],
        )
        .await;
        assert_eq!(reply.body["error"], "invalid_grant");
        let code = code_for(&router, &client_id).await;
        let reply = redeem(
            &router,
            &client_id,
            &code,
            &[("resource", "http://127.0.0.1:1/mcp")],
        )
        .await;
        assert_eq!(reply.body["error"], "invalid_target");
        let params = redirect_params(
            &get(
                &router,
                &authorize_query(&client_id, &[("resource", "https://other/mcp")]),
            )
            .await,
        );
        assert_eq!(params["error"], "invalid_target");
        let unknown = redeem(
            &router,
            "no-such-client",
            &code_for(&router, &client_id).await,
            &[],
        )
        .await;
        assert_eq!(
            (unknown.status, &unknown.body["error"]),
            (StatusCode::UNAUTHORIZED, &json!("invalid_client"))
        );
        let refresh = redeem(&router, &client_id, "x", &[("grant_type", "refresh_token")]).await;
        assert_eq!(refresh.body["error"], "unsupported_grant_type");
        // Without `resource` the token is still for the issuer's audience.
        let code = code_for(&router, &client_id).await;
        let mut pairs = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("code_verifier", VERIFIER),
        ];
        pairs.extend([
            ("redirect_uri", REDIRECT),
            ("client_id", client_id.as_str()),
        ]);
        let reply = post(
            &router,
            "/token",
            "application/x-www-form-urlencoded",
            form(&pairs),
        )
        .await;
        assert_eq!(
            payload(reply.body["access_token"].as_str().unwrap())["aud"],
            AUDIENCE
        );
    }

    #[tokio::test]
    async fn registration_takes_loopback_redirects_only_and_is_bounded() {
        let router = dev_router(CODE_TTL);
        for uris in [
            json!([]),
            json!(["https://attacker.example/cb"]),
            json!(["http://127.0.0.1:1/cb#x"]),
            json!([7]),
        ] {
            let reply = post(
                &router,
                "/register",
                "application/json",
                json!({ "redirect_uris": uris }).to_string(),
            )
            .await;
            assert_eq!(
                (reply.status, &reply.body["error"]),
                (StatusCode::BAD_REQUEST, &json!("invalid_redirect_uri"))
            );
        }
        let reply = post(
            &router,
            "/register",
            "text/plain",
            json!({ "redirect_uris": [REDIRECT] }).to_string(),
        )
        .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST);
        let big = json!({ "redirect_uris": [REDIRECT], "client_name": "x".repeat(MAX_BODY_BYTES) })
            .to_string();
        assert_eq!(
            post(&router, "/register", "application/json", big)
                .await
                .status,
            StatusCode::PAYLOAD_TOO_LARGE
        );
        for _ in 0..MAX_CLIENTS {
            register_client(&router).await;
        }
        let body = json!({ "redirect_uris": [REDIRECT] }).to_string();
        assert_eq!(
            post(&router, "/register", "application/json", body)
                .await
                .status,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[tokio::test]
    async fn a_foreign_host_is_refused() {
        let router = dev_router(CODE_TTL);
        let request = http::Request::get("/.well-known/oauth-authorization-server")
            .header(header::HOST, "attacker.example:9100")
            .body(Body::empty())
            .unwrap();
        assert_eq!(send(&router, request).await.status, StatusCode::FORBIDDEN);
        for host in ["127.0.0.1:9100", "localhost", "[::1]:9100", "127.0.0.2"] {
            assert!(is_loopback_authority(host), "{host}");
        }
        for host in [
            "evil.com",
            "127.0.0.1.evil.com",
            "user@127.0.0.1",
            "[::1]x",
            "127.0.0.1:",
            "localhost:80a",
        ] {
            assert!(!is_loopback_authority(host), "{host}");
        }
    }
}
