//! The example app's small pieces: a few honest tools that show the shape an app author copies
//! (typed arguments and result, derived schemas, truthful annotations, a progress-reporting
//! tool), a resource and a prompt. The app is assembled in one place, [`crate::app_with`].

use std::time::Duration;

use relevo_protocol::author::{ToolContext, ToolError};
use relevo_protocol::wire::{
    GetPromptResult, PromptMessage, ResourceContents, Role, ToolAnnotations,
};
use relevo_protocol::{Prompt, Resource, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn pure() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GreetArgs {
    /// Who to greet
    #[schemars(length(min = 1))]
    name: String,
}

#[derive(Serialize, JsonSchema)]
struct Greeting {
    greeting: String,
}

async fn greet(args: GreetArgs, _: ToolContext) -> Result<Greeting, ToolError> {
    if args.name.trim().is_empty() {
        return Err(ToolError::caller("name must not be empty"));
    }
    Ok(Greeting {
        greeting: format!("Hello, {}!", args.name),
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: f64,
}

const MAX_COUNT: u32 = 20;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountArgs {
    #[schemars(range(min = 1, max = MAX_COUNT))]
    to: u32,
}

#[derive(Serialize, JsonSchema)]
struct Counted {
    counted: u32,
}

async fn count(args: CountArgs, cx: ToolContext) -> Result<Counted, ToolError> {
    for step in 1..=args.to {
        if cx.notifier().is_cancelled() {
            break;
        }
        cx.notifier()
            .progress(f64::from(step), Some(f64::from(args.to)), None);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(Counted { counted: args.to })
}

#[derive(Deserialize, JsonSchema)]
struct ExplainArgs {
    /// What to explain
    topic: String,
}

async fn explain(args: ExplainArgs, _: ToolContext) -> Result<GetPromptResult, ToolError> {
    let text = format!("Explain {} in three short sentences.", args.topic);
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        text,
    )]))
}

/// `greet`: a typed tool that refuses an empty name as the caller's error.
pub fn greet_tool() -> Tool {
    Tool::typed("greet", "Greets a person by name.", greet)
        .title("Greet")
        .annotations(pure())
}

/// The sum of `a` and `b`, or the caller's error when it is not a finite number: two finite
/// doubles can overflow to infinity, which JSON cannot carry. That is the input's doing (the
/// model can send smaller numbers), so it is a tool execution error, not a server fault.
fn sum(args: AddArgs) -> Result<Sum, ToolError> {
    let sum = args.a + args.b;
    if !sum.is_finite() {
        return Err(ToolError::caller(format!(
            "the sum of a ({}) and b ({}) is not a finite number: it is beyond the largest \
             64-bit float (about 1.8e308); send smaller numbers",
            args.a, args.b
        )));
    }
    Ok(Sum { sum })
}

/// `add`: the smallest typed tool, a closure. An overflowing sum is the caller's error.
pub fn add_tool() -> Tool {
    Tool::typed("add", "Adds two numbers.", |args: AddArgs, _| async move {
        sum(args)
    })
    .title("Add")
    .annotations(pure())
}

/// `count`: a tool that reports progress on the response stream.
pub fn count_tool() -> Tool {
    Tool::typed(
        "count",
        "Counts from 1 to `to` (at most 20), reporting progress on the response stream when the request carries a progressToken.",
        count,
    )
    .title("Count")
    .annotations(pure())
    .streaming()
}

/// `relevo://about`: a fixed text resource.
pub fn about_resource() -> Resource {
    Resource::typed("relevo://about", "about", "text/plain", |_| async {
        let about = "Relevo: a stateless MCP server that runs one AWS Lambda per MCP method.";
        Ok(vec![ResourceContents::text(about, "relevo://about")])
    })
    .description("What this server is")
}

/// `explain`: a prompt with one argument.
pub fn explain_prompt() -> Prompt {
    Prompt::typed(
        "explain",
        "Asks the model to explain a topic simply.",
        explain,
    )
}
