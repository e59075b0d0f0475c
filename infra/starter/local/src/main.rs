//! `make run`: the app on http://127.0.0.1:8080/mcp, every function in one process over SQLite.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo_local::run_local(app::app).await
}
