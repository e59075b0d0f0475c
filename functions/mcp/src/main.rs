//! Every MCP method in one function: the catch-all behind the routing rules, and the whole server behind an HTTP API without a custom domain.

use relevo_protocol::Route;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    relevo_lambda::run(Route::All, app::app).await
}
