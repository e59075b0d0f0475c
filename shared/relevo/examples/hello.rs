//! A two-tool MCP server written against `relevo` alone:
//!
//! ```text
//! cargo run -p relevo --example hello -- --port 8080
//! ```
//!
//! serves `greet` and `add` on http://127.0.0.1:8080/mcp, with the embedded store in
//! `.relevo/store.db` and tokens from the dev issuer of `.relevo/dev-issuer.json`.

use relevo::prelude::*;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde", deny_unknown_fields)]
struct GreetArgs {
    /// Who to greet
    #[schemars(length(min = 1, max = 100))]
    name: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(crate = "relevo::serde")]
struct Greeting {
    greeting: String,
}

async fn greet(args: GreetArgs, _: ToolContext) -> Result<Greeting, ToolError> {
    Ok(Greeting {
        greeting: format!("Hello, {}!", args.name),
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde", deny_unknown_fields)]
struct AddArgs {
    /// The first term
    a: i64,
    /// The second term
    b: i64,
}

#[derive(Serialize, JsonSchema)]
#[serde(crate = "relevo::serde")]
struct Sum {
    sum: i64,
}

async fn add(args: AddArgs, _: ToolContext) -> Result<Sum, ToolError> {
    let sum = args
        .a
        .checked_add(args.b)
        .ok_or_else(|| ToolError::caller("the sum does not fit in 64 bits"))?;
    Ok(Sum { sum })
}

fn app(_: &Ports) -> App {
    let pure = ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true);
    App::new("hello", "1.0.0")
        .tool(Tool::typed("greet", "Greets a person by name.", greet).annotations(pure.clone()))
        .tool(Tool::typed("add", "Adds two integers.", add).annotations(pure))
}

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo::local::run(app).await
}
