//! The `resources-templates-list` function: serves `resources/templates/list` only; a body naming another method is refused.

use relevo_protocol::{Method, Route};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    relevo_lambda::run(Route::Only(Method::ResourcesTemplatesList), app::app).await
}
