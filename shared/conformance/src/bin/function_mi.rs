//! The conformance fixtures' function binary (`function.rs`) built with the `managed-instances`
//! feature: every function of the stack, told which by `RELEVO_FUNCTION`, serving as many
//! invocations at once as `AWS_LAMBDA_MAX_CONCURRENCY` says (local Lambda mode's
//! `--max-concurrency`), on every core. The main is the same one line: the runner picks the
//! runtime (`relevo_lambda::serve`).

#[global_allocator]
static ALLOCATOR: relevo_lambda::Allocator = relevo_lambda::Allocator;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let name = std::env::var("RELEVO_FUNCTION")
        .map_err(|_| "RELEVO_FUNCTION names the function to play")?;
    relevo_lambda::run_function(&name, relevo_conformance::build).await
}
