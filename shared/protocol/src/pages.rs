//! An HTTP surface an app serves beside `/mcp`, under a path prefix of its own (the example
//! shop's approval pages). Every runner serves it the same way, through [`serve`]: the local
//! gateway on its routes, the `approvals` function on its events. The runner checks Host and
//! Origin against the server's allow-list first; the pages authorize their own requests.
//!
//! Admission: a page request that acts as someone ([`Pages::caller`]: a bearer header, the
//! sign-in's cookie or session, the token pasted into the sign-in form) is counted against that
//! principal's tenant's request-rate quota ([`crate::server::admit_tenant`], as every `/mcp`
//! surface is) before the page runs, so a tenant over its quota reads and writes nothing
//! through the pages either. A request that acts as nobody (the sign-in form, a request without
//! credentials) is answered by the page without a store call. `caller` has no default: a page
//! set must say who a request acts as.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use relevo_state::{Clock, RecordStore};

use crate::auth::Principal;
use crate::error::McpError;
use crate::quota::Quotas;

pub type PageFuture<'a> = Pin<Box<dyn Future<Output = Response<String>> + Send + 'a>>;

/// Who a page request acts as, verified.
pub type CallerFuture<'a> = Pin<Box<dyn Future<Output = Option<Principal>> + Send + 'a>>;

pub trait Pages: Send + Sync {
    /// The path prefix the pages own, such as `/approvals`.
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
    pub quotas: Quotas,
    pub store: Option<Arc<dyn RecordStore>>,
    pub clock: Arc<dyn Clock>,
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
        && let Err(refused) =
            crate::server::admit_tenant(&gate.quotas, gate.store.as_deref(), &principal.tenant, gate.clock.now_unix())
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
        McpError::RateLimited { .. } => ("Too many requests", "Your organisation's request quota is spent for now."),
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
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(secs) = error.retry_after_secs() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}
