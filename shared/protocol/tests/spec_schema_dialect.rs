//! MCP 2026-07-28, "Tools" → `inputSchema` / `outputSchema`: a tool schema is JSON Schema
//! 2020-12, the default when `$schema` is absent.
//!
//! Checked at registration: `App::tool` refuses (panics, naming the tool and the dialect) a tool
//! whose schema declares another dialect, instead of answering every call of it `-32603`.
//! A schema that declares 2020-12, or none, registers; a schema derived from a Rust type
//! declares none.

use relevo_protocol::registry::rules::{Refused, SCHEMA_DIALECT, dialect};
use relevo_protocol::{App, Handler, Tool, handler};
use serde_json::json;

fn never() -> Handler {
    handler(|_| async { unreachable!("never called") })
}

fn with_input(schema: serde_json::Value) -> Tool {
    Tool::new("t", "A tool.", schema, never())
}

/// The panic message of `build`, which must panic.
fn refusal(build: impl FnOnce() -> App + std::panic::UnwindSafe) -> String {
    let Err(panic) = std::panic::catch_unwind(build) else {
        panic!("the registration was accepted");
    };
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_schema_of_2020_12_or_of_no_stated_dialect_registers() {
    let app = App::new("d", "1")
        .tool(with_input(json!({ "type": "object" })))
        .tool(
            Tool::new(
                "u",
                "Another.",
                json!({ "$schema": SCHEMA_DIALECT, "type": "object" }),
                never(),
            )
            .with_output_schema(json!({ "$schema": format!("{SCHEMA_DIALECT}#") })),
        );
    assert_eq!(app.tools().count(), 2);
}

#[test]
fn an_input_schema_of_another_dialect_is_refused_naming_it() {
    let draft7 = "http://json-schema.org/draft-07/schema#";
    let message = refusal(|| {
        App::new("d", "1").tool(with_input(json!({ "$schema": draft7, "type": "object" })))
    });
    assert!(
        message.contains(draft7) && message.contains("\"t\"") && message.contains("inputSchema"),
        "{message}"
    );
}

#[test]
fn an_output_schema_of_another_dialect_is_refused_naming_it() {
    let draft4 = "http://json-schema.org/draft-04/schema#";
    let message = refusal(|| {
        App::new("d", "1").tool(
            with_input(json!({ "type": "object" }))
                .with_output_schema(json!({ "$schema": draft4, "type": "object" })),
        )
    });
    assert!(
        message.contains(draft4) && message.contains("outputSchema"),
        "{message}"
    );
}

#[test]
fn a_dialect_that_is_not_a_string_is_refused() {
    let schema = json!({ "$schema": 7 });
    assert!(matches!(
        dialect("t", "inputSchema", schema.as_object().expect("an object")),
        Err(Refused::Dialect { dialect, .. }) if dialect == "7"
    ));
}
