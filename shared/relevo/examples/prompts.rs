//! A prompt with arguments, and completion of one of them:
//!
//! ```text
//! cargo run -p relevo --example prompts -- --port 8080
//! ```
//!
//! `prompts/list` lists `explain` with its arguments, derived from `ExplainArgs` (`topic`
//! required, `level` optional, each described by its doc comment). `prompts/get` with
//! `{"topic": "lifetimes", "level": "beginner"}` returns the message to send to the model.
//! `completion/complete` on `level` offers the levels that start with what the user typed.

use relevo::prelude::*;

const LEVELS: [&str; 3] = ["beginner", "intermediate", "expert"];

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde", deny_unknown_fields)]
struct ExplainArgs {
    /// What to explain
    topic: String,
    /// Who it is for: beginner, intermediate or expert
    level: Option<String>,
}

async fn explain(args: ExplainArgs, _: ToolContext) -> Result<GetPromptResult, ToolError> {
    let level = args.level.unwrap_or_else(|| "beginner".into());
    if !LEVELS.contains(&level.as_str()) {
        return Err(ToolError::caller(format!("No level {level:?}")));
    }
    let text = format!(
        "Explain {} to a {level} in three short sentences.",
        args.topic
    );
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        text,
    )]))
}

fn app(_: &Ports) -> App {
    App::new("prompts", "1.0.0").prompt(
        Prompt::typed("explain", "Asks the model to explain a topic.", explain)
            .complete("level", &LEVELS),
    )
}

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo::local::run(app).await
}
