//! One typed tool, for README's line count against the same tool in rmcp
//! (`infra/bench-peers/examples/greet_rmcp.rs`; `infra/scripts/tool-lines.sh` counts both).
//! Run: `cargo run -p relevo-protocol --example greet` prints the tool as `tools/list` shows it.

// ---- the tool ----
use relevo_protocol::author::{ToolContext, ToolError};
use relevo_protocol::{App, Ports, Tool};
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

async fn greet(args: GreetArgs, _: ToolContext) -> Result<Greeting, ToolError> {
    Ok(Greeting {
        greeting: format!("Hello, {}!", args.name),
    })
}

pub fn app(_: &Ports) -> App {
    App::new("greeter", "1.0.0").tool(Tool::typed("greet", "Greets a person by name.", greet))
}
// ---- end ----

fn main() {
    let app = app(&Ports::new(None));
    for tool in app.tools() {
        println!("{}", tool.to_wire());
    }
}
