//! Every function of the stack serving the conformance fixtures, told which by `RELEVO_FUNCTION`
//! (local Lambda mode's `--one-binary`): the suite runs against the template's topology while
//! the real function binaries never link the fixtures.

#[global_allocator]
static ALLOCATOR: relevo_lambda::Allocator = relevo_lambda::Allocator;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let name = std::env::var("RELEVO_FUNCTION")
        .map_err(|_| "RELEVO_FUNCTION names the function to play")?;
    relevo_lambda::run_function(&name, relevo_conformance::build).await
}
