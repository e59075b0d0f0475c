//! The default app of `make run` until the shop lands: a few honest tools that show the shape
//! an app author copies — typed arguments, an output schema with `structuredContent`, truthful
//! annotations, a progress-reporting tool, a resource and a prompt.

use std::time::Duration;

use relevo_protocol::wire::{CallToolResult, GetPromptResult, PromptMessage, ResourceContents, Role, ToolAnnotations};
use relevo_protocol::{App, Call, Outcome, Prompt, PromptArgument, Resource, Tool, handler};

use crate::export;
use crate::notes::{self, NotesPorts};
use crate::shop::{self, ShopPorts};
use serde::Deserialize;
use serde_json::json;

fn pure() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false)
}

#[derive(Deserialize)]
struct GreetArgs {
    name: String,
}

#[derive(Deserialize)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Deserialize)]
struct CountArgs {
    to: u32,
}

const MAX_COUNT: u32 = 20;

fn greet() -> Tool {
    Tool::new(
        "greet",
        "Greets a person by name.",
        json!({
            "type": "object",
            "properties": { "name": { "type": "string", "minLength": 1, "description": "Who to greet" } },
            "required": ["name"],
            "additionalProperties": false
        }),
        handler(|call: Call| async move {
            let args: GreetArgs = match call.args() {
                Ok(args) => args,
                Err(error) => return Ok(error),
            };
            if args.name.trim().is_empty() {
                return Ok(Outcome::tool_error("name must not be empty"));
            }
            Ok(Outcome::tool(CallToolResult::structured(json!({ "greeting": format!("Hello, {}!", args.name) }))))
        }),
    )
    .title("Greet")
    .output_schema(json!({
        "type": "object",
        "properties": { "greeting": { "type": "string" } },
        "required": ["greeting"]
    }))
    .annotations(pure())
}

fn add() -> Tool {
    Tool::new(
        "add",
        "Adds two numbers.",
        json!({
            "type": "object",
            "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
            "required": ["a", "b"],
            "additionalProperties": false
        }),
        handler(|call: Call| async move {
            let args: AddArgs = match call.args() {
                Ok(args) => args,
                Err(error) => return Ok(error),
            };
            Ok(Outcome::tool(CallToolResult::structured(json!({ "sum": args.a + args.b }))))
        }),
    )
    .title("Add")
    .output_schema(json!({ "type": "object", "properties": { "sum": { "type": "number" } }, "required": ["sum"] }))
    .annotations(pure())
}

fn count() -> Tool {
    Tool::new(
        "count",
        "Counts from 1 to `to` (at most 20), reporting progress on the response stream when the request carries a progressToken.",
        json!({
            "type": "object",
            "properties": { "to": { "type": "integer", "minimum": 1, "maximum": MAX_COUNT } },
            "required": ["to"],
            "additionalProperties": false
        }),
        handler(|call: Call| async move {
            let args: CountArgs = match call.args() {
                Ok(args) => args,
                Err(error) => return Ok(error),
            };
            if !(1..=MAX_COUNT).contains(&args.to) {
                return Ok(Outcome::tool_error(format!("to must be between 1 and {MAX_COUNT}")));
            }
            for step in 1..=args.to {
                if call.notifier.is_cancelled() {
                    break;
                }
                call.notifier.progress(f64::from(step), Some(f64::from(args.to)), None);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok(Outcome::tool(CallToolResult::structured(json!({ "counted": args.to }))))
        }),
    )
    .title("Count")
    .output_schema(json!({ "type": "object", "properties": { "counted": { "type": "integer" } }, "required": ["counted"] }))
    .annotations(pure())
    .streaming()
}

pub fn app(ports: &crate::Ports) -> App {
    let app = App::new("relevo-shop", env!("CARGO_PKG_VERSION"))
        .instructions("A Relevo example shop: browse the catalog, fill a cart, check out (you confirm the total), export customer data, keep private notes.")
        .tool(greet())
        .tool(add())
        .tool(count())
        .resource(
            Resource::new(
                "relevo://about",
                "about",
                "text/plain",
                handler(|_| async {
                    Ok(Outcome::contents(vec![ResourceContents::text(
                        "Relevo: a stateless MCP server that runs one AWS Lambda per MCP method.",
                        "relevo://about",
                    )]))
                }),
            )
            .description("What this server is"),
        )
        .prompt(Prompt::new(
            "explain",
            "Asks the model to explain a topic simply.",
            vec![PromptArgument::required("topic", "What to explain")],
            handler(|call: Call| async move {
                let topic = call.arguments.get("topic").and_then(|t| t.as_str()).unwrap_or_default().to_string();
                Ok(Outcome::prompt(GetPromptResult::new(vec![PromptMessage::new_text(
                    Role::User,
                    format!("Explain {topic} in three short sentences."),
                )])))
            }),
        ));
    let mut app = app.tool(shop::catalog_list());
    if let Some(records) = &ports.records {
        let shop_ports = ShopPorts { records: records.clone(), ids: ports.ids.clone(), clock: ports.clock.clone() };
        for tool in shop::tools(&shop_ports).into_iter().skip(1) {
            app = app.tool(tool);
        }
        app = app.template(shop::cart_resource(shop_ports));
    }
    if let Some(inventory) = ports.inventory() {
        for tool in crate::inventory_tools::tools(&inventory) {
            app = app.tool(tool);
        }
    }
    let app = match &ports.records {
        Some(records) => {
            let notes = NotesPorts { records: records.clone(), ids: ports.ids.clone(), clock: ports.clock.clone() };
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
            .task_kind(export::KIND, &["exports:read"], &["exports:write"]),
        None => app,
    }
}
