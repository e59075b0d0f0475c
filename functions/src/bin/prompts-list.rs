//! The `prompts-list` function: serves `prompts/list` only; a body naming another method is refused.

use relevo::lambda::{Method, Route};

#[global_allocator]
static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;

#[relevo::tokio::main(crate = "relevo::tokio", flavor = "current_thread")]
async fn main() -> Result<(), relevo::lambda::Error> {
    relevo::lambda::run(Route::Only(Method::PromptsList), app::app).await
}
