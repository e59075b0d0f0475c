//! The local gateway serving the conformance fixtures (`make conformance`, `APP=conformance make run`).

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo_local::run_local(relevo_conformance::build).await
}
