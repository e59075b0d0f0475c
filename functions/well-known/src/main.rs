//! The `well-known` function: Protected Resource Metadata (RFC 9728) at
//! `/.well-known/oauth-protected-resource` and `/.well-known/oauth-protected-resource/mcp`.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    relevo_lambda::run_well_known().await
}
