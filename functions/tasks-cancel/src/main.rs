//! The `tasks-cancel` function: serves `tasks/cancel` (Tasks extension) only; a body naming another method is refused.

use relevo_protocol::{Method, Route};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    relevo_lambda::run(Route::Only(Method::TasksCancel), app::app).await
}
