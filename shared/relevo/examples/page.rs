//! An HTTP page beside `/mcp`, through the app's pages (`App::pages`):
//!
//! ```text
//! cargo run -p relevo --example page -- --port 8080
//! ```
//!
//! `GET http://127.0.0.1:8080/status` answers a small HTML page; any other method there is
//! 405, and any other path under `/status` is 404. The runner checks Host and Origin before a page
//! runs (as it does for `/mcp`), and counts a request that acts as someone against their tenant's
//! quota; this page acts as nobody (`caller` is `None`), reads no store and takes no input, so
//! it needs no sign-in. A page that does act for someone authorizes its own requests.

use std::sync::Arc;

use relevo::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use relevo::prelude::*;

struct StatusPage;

impl Pages for StatusPage {
    fn prefix(&self) -> &str {
        "/status"
    }

    fn caller<'a>(
        &'a self,
        _: &'a Method,
        _: &'a str,
        _: &'a HeaderMap,
        _: &'a [u8],
    ) -> CallerFuture<'a> {
        Box::pin(async { None })
    }

    fn handle<'a>(
        &'a self,
        method: &'a Method,
        path: &'a str,
        _: &'a HeaderMap,
        _: &'a [u8],
    ) -> PageFuture<'a> {
        let (status, body) = match (method, path) {
            (&Method::GET, "/status") => (StatusCode::OK, "<h1>All systems go</h1>"),
            (_, "/status") => (StatusCode::METHOD_NOT_ALLOWED, "<h1>Only GET</h1>"),
            _ => (StatusCode::NOT_FOUND, "<h1>No such page</h1>"),
        };
        let html = format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Status</title></head><body>{body}</body></html>"
        );
        let mut response = Response::new(html);
        *response.status_mut() = status;
        let html_type = HeaderValue::from_static("text/html; charset=utf-8");
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, html_type);
        Box::pin(async move { response })
    }
}

fn app(_: &Ports) -> App {
    App::new("page", "1.0.0").pages(Arc::new(StatusPage))
}

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo::local::run(app).await
}
