//! The same tool as `shared/protocol/examples/greet.rs`, written as rmcp's own examples and
//! tests write one (`#[tool_router]`, `#[tool]`, `Parameters<T>`, `Json<T>`, `#[tool_handler]`),
//! for README's line count. Built with `--features compare` (rmcp's `macros` and `schemars`),
//! which the benchmark's peers never enable. Run it to print the tool as `tools/list` shows it.

// ---- the tool ----
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::{Json, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet
    name: String,
}

#[derive(Serialize, JsonSchema)]
struct Greeting {
    greeting: String,
}

#[derive(Clone)]
struct Greeter {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Greeter {
    fn new() -> Self {
        Self { tool_router: Self::tool_router() }
    }

    #[tool(description = "Greets a person by name.")]
    async fn greet(&self, Parameters(args): Parameters<GreetArgs>) -> Result<Json<Greeting>, String> {
        Ok(Json(Greeting { greeting: format!("Hello, {}!", args.name) }))
    }
}

#[tool_handler]
impl ServerHandler for Greeter {}
// ---- end ----

fn main() {
    for tool in Greeter::new().tool_router.list_all() {
        println!("{}", serde_json::to_string(&tool).unwrap_or_default());
    }
}
