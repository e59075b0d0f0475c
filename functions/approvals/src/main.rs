//! The `approvals` function: the page where a person approves or rejects a proposed inventory
//! change (`/approvals/login`, `/approvals/{operationId}`).

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    relevo_lambda::run_pages(app::app).await
}
