//! The `pages` function: the app's pages beside `/mcp` (`App::pages`).

#[relevo::tokio::main(crate = "relevo::tokio", flavor = "current_thread")]
async fn main() -> Result<(), relevo::lambda::Error> {
    relevo::lambda::run_pages(app::app).await
}
