//! Resources: one at a fixed URI, and a family of them named by a URI template:
//!
//! ```text
//! cargo run -p relevo --example resources -- --port 8080
//! ```
//!
//! `resources/list` lists `docs://readme`; `resources/templates/list` lists
//! `greetings://{name}`. Reading `docs://readme` returns its text; reading `greetings://ada`
//! runs the template's handler with the URI's variables as a typed struct (`name: "ada"`). A URI
//! that matches neither is "resource not found".

use relevo::prelude::*;

const README: &str = "docs://readme";

/// The variables of `greetings://{name}`, bound from the URI being read.
#[derive(Deserialize)]
#[serde(crate = "relevo::serde")]
struct GreetingUri {
    name: String,
}

async fn readme(_: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
    let text = "This server shows a resource and a resource template.";
    Ok(vec![ResourceContents::text(text, README)])
}

async fn greeting(uri: GreetingUri, _: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
    let text = format!("Hello, {}!", uri.name);
    Ok(vec![ResourceContents::text(
        text,
        format!("greetings://{}", uri.name),
    )])
}

fn app(_: &Ports) -> App {
    App::new("resources", "1.0.0")
        .resource(
            Resource::typed(README, "readme", "text/plain", readme)
                .description("What this server is"),
        )
        .template(
            ResourceTemplate::typed("greetings://{name}", "greeting", "text/plain", greeting)
                .description("A greeting for anyone, by name"),
        )
}

#[relevo::tokio::main(crate = "relevo::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    relevo::local::run(app).await
}
