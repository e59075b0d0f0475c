//! The `well-known` function: the protected-resource metadata (RFC 9728), the server card and the catalog.

#[global_allocator]
static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;

#[relevo::tokio::main(crate = "relevo::tokio", flavor = "current_thread")]
async fn main() -> Result<(), relevo::lambda::Error> {
    relevo::lambda::run_well_known(app::app).await
}
