//! `make run` (or `cargo relevo dev`): the app on http://127.0.0.1:8080/mcp, every function in
//! one process, the embedded store in `.relevo/store.db`, tokens from the dev issuer
//! (`cargo relevo token`).

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo::local::run(app::app).await
}
