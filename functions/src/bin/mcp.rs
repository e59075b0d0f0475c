//! The `mcp` function: every MCP method in one function: the catch-all behind the routing rules, and the whole server behind an HTTP API.

#[global_allocator]
static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;

#[relevo::tokio::main(crate = "relevo::tokio", flavor = "current_thread")]
async fn main() -> Result<(), relevo::lambda::Error> {
    relevo::lambda::run(relevo::lambda::Route::All, app::app).await
}
