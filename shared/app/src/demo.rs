//! The example app's small pieces and its assembly: a few honest tools that show the shape an app
//! author copies (typed arguments and result, derived schemas, truthful annotations, a
//! progress-reporting tool), a resource and a prompt, then the shop, notes, inventory and export.

use std::time::Duration;

use relevo_protocol::author::{ToolContext, ToolError};
use relevo_protocol::wire::{
    GetPromptResult, PromptMessage, ResourceContents, Role, ToolAnnotations,
};
use relevo_protocol::{App, Prompt, Resource, Tool};
use schemars::JsonSchema;

use crate::export;
use crate::notes::{self, NotesPorts};
use crate::shop::{self, ShopPorts};
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

pub fn app(ports: &relevo_protocol::Ports) -> App {
    let app = App::new("relevo-shop", env!("CARGO_PKG_VERSION"))
        .instructions("A Relevo example shop: browse the catalog, fill a cart, check out (you confirm the total), export customer data, keep private notes.")
        .tool(Tool::typed("greet", "Greets a person by name.", greet).title("Greet").annotations(pure()))
        .tool(
            Tool::typed("add", "Adds two numbers.", |args: AddArgs, _| async move { Ok(Sum { sum: args.a + args.b }) })
                .title("Add")
                .annotations(pure()),
        )
        .tool(
            Tool::typed(
                "count",
                "Counts from 1 to `to` (at most 20), reporting progress on the response stream when the request carries a progressToken.",
                count,
            )
            .title("Count")
            .annotations(pure())
            .streaming(),
        )
        .resource(
            Resource::typed("relevo://about", "about", "text/plain", |_| async {
                let about = "Relevo: a stateless MCP server that runs one AWS Lambda per MCP method.";
                Ok(vec![ResourceContents::text(about, "relevo://about")])
            })
            .description("What this server is"),
        )
        .prompt(Prompt::typed("explain", "Asks the model to explain a topic simply.", explain));
    let mut app = app.tool(shop::catalog_list());
    if let Some(records) = &ports.records {
        let shop_ports = ShopPorts {
            records: records.clone(),
            ids: ports.ids.clone(),
            clock: ports.clock.clone(),
        };
        for tool in shop::tools(&shop_ports).into_iter().skip(1) {
            app = app.tool(tool);
        }
        app = app.template(shop::cart_resource(shop_ports));
    }
    if let Some(inventory) = crate::inventory(ports) {
        for tool in crate::inventory_tools::tools(&inventory) {
            app = app.tool(tool);
        }
    }
    let app = match &ports.records {
        Some(records) => {
            let notes = NotesPorts {
                records: records.clone(),
                ids: ports.ids.clone(),
                clock: ports.clock.clone(),
            };
            app.tool(notes::note_create(notes.clone()))
                .tool(notes::note_read(notes.clone()))
                .template(notes::note_resource(notes))
        }
        None => app,
    };
    match &ports.jobs {
        Some(engine) => app
            .tool(export::export_start(engine.clone()))
            .tool(export::export_status(engine.clone()))
            .tool(export::export_result(engine.clone()))
            .template(export::export_resource(engine.clone()))
            // export_start's jobs are tasks too: reading one is reading the export.
            .task_kind(export::KIND.name(), &["exports:read"], &["exports:write"]),
        None => app,
    }
}
