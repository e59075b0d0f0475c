//! An HTTP surface an app serves beside `/mcp`, under a path prefix of its own (the example
//! shop's approval pages). Every runner serves it the same way: the local gateway on its routes,
//! the `approvals` function on its events. The runner checks Host and Origin against the
//! server's allow-list first; the pages authorize their own requests.

use std::future::Future;
use std::pin::Pin;

use http::{HeaderMap, Method, Response};

pub type PageFuture<'a> = Pin<Box<dyn Future<Output = Response<String>> + Send + 'a>>;

pub trait Pages: Send + Sync {
    /// The path prefix the pages own, such as `/approvals`.
    fn prefix(&self) -> &str;

    /// One request; `path` starts with [`Pages::prefix`].
    fn handle<'a>(
        &'a self,
        method: &'a Method,
        path: &'a str,
        headers: &'a HeaderMap,
        body: &'a [u8],
    ) -> PageFuture<'a>;
}
