//! The `pages` function: the app's pages beside `/mcp` (`App::pages`).

#[global_allocator]
static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;

#[relevo::tokio::main(crate = "relevo::tokio", flavor = "current_thread")]
async fn main() -> Result<(), relevo::lambda::Error> {
    relevo::lambda::run_pages(app::app).await
}
