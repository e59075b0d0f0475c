//! `relevo-gateway`: the example app on one machine (`make run`). A team's own local gateway is
//! this file with its own app.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo_local::run_local(relevo_app::app).await
}
