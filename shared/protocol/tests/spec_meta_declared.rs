//! MCP 2026-07-28, basic/index "General fields" → `_meta`: tools, resources and resource
//! templates (and prompts) carry an optional `_meta` object (schema `Tool._meta`,
//! `Resource._meta`, `ResourceTemplate._meta`, `Prompt._meta`, a `MetaObject`), whose keys have
//! "an optional **prefix**, and a **name**": the prefix "MUST be a series of labels separated by
//! dots (`.`), followed by a slash (`/`)", labels "MUST start with a letter and end with a letter
//! or digit", a name "Unless empty, MUST begin and end with an alphanumeric character"; "Any
//! prefix where the second label is `modelcontextprotocol` or `mcp` is **reserved** for MCP use",
//! and "Official extensions define additional `_meta` keys under the `io.modelcontextprotocol/`
//! prefix".
//!
//! An app declares `_meta` keys on its items and both revisions list them as declared (no
//! `_meta` key when none is declared). Registration refuses a malformed key and a key reserved
//! for MCP (the spec's own keys, `progressToken` and the trace-context keys, and every reserved
//! prefix), except the keys an official extension defines for servers to declare (none today:
//! MCP Apps names its capability `io.modelcontextprotocol/ui`, but its `_meta` key is the
//! unprefixed `ui`, an ordinary key whose contents `spec_apps_*` check).

mod support;

use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::registry::rules::{EXTENSION_META_KEYS, Refused, meta};
use relevo_protocol::wire::{GetPromptResult, ResourceContents};
use relevo_protocol::{App, Prompt, Resource, ResourceTemplate, Tool};
use serde_json::{Value, json};
use support::{listed_both_ways, refusal};

async fn nothing(_: NoArgs, _: ToolContext) -> Result<String, ToolError> {
    Ok(String::new())
}

async fn no_messages(_: NoArgs, _: ToolContext) -> Result<GetPromptResult, ToolError> {
    Ok(GetPromptResult::new(vec![]))
}

async fn no_contents(_: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![])
}

async fn no_note(_: Value, _: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![])
}

fn tool(name: &str) -> Tool {
    Tool::typed(name, "Does nothing.", nothing)
}

fn resource(uri: &str) -> Resource {
    Resource::typed(uri, "plain", "text/plain", no_contents)
}

fn template(uri_template: &str) -> ResourceTemplate {
    ResourceTemplate::typed(uri_template, "plain", "text/plain", no_note)
}

/// What each decorated item declares: vendor keys, one of them unprefixed.
fn declared() -> Value {
    json!({
        "com.example/owner": "billing",
        "com.example.views/layout": { "columns": 2 },
        "layout": "wide",
    })
}

fn decorate<T>(item: T, set: impl Fn(T, &str, Value) -> T) -> T {
    let Value::Object(declared) = declared() else {
        unreachable!("an object")
    };
    declared
        .into_iter()
        .fold(item, |item, (key, value)| set(item, &key, value))
}

#[tokio::test]
async fn declared_meta_is_listed_as_declared_on_both_revisions() {
    let app = App::new("meta", "1")
        .tool(decorate(tool("decorated"), Tool::meta))
        .tool(tool("plain"))
        .prompt(decorate(
            Prompt::typed("decorated", "Decorated.", no_messages),
            Prompt::meta,
        ))
        .prompt(Prompt::typed("plain", "Plain.", no_messages))
        .resource(decorate(
            Resource::typed("app://decorated", "decorated", "text/plain", no_contents),
            Resource::meta,
        ))
        .resource(resource("app://plain"))
        .template(decorate(
            ResourceTemplate::typed("app://decorated/{id}", "decorated", "text/plain", no_note),
            ResourceTemplate::meta,
        ))
        .template(template("app://plain/{id}"));
    for (revision, method, items) in listed_both_ways(app).await {
        let named = |name: &str| {
            items
                .iter()
                .find(|item| item["name"] == name)
                .cloned()
                .unwrap_or_else(|| panic!("{revision} {method}: no {name} in {items:?}"))
        };
        assert_eq!(
            named("decorated")["_meta"],
            declared(),
            "{revision} {method}"
        );
        assert_eq!(named("plain").get("_meta"), None, "{revision} {method}");
    }
}

#[test]
fn a_reserved_key_is_refused_on_every_kind_naming_the_item_and_the_rule() {
    for key in [
        "io.modelcontextprotocol/serverInfo",
        "io.modelcontextprotocol/related-task",
        "dev.mcp/anything",
        "org.modelcontextprotocol.api/x",
        "com.MCP.tools/x",
        "progressToken",
        "traceparent",
        "tracestate",
        "baggage",
    ] {
        let value = || json!("x");
        let cases: Vec<(String, Box<dyn FnOnce() -> App + std::panic::UnwindSafe>)> = vec![
            (
                "tool \"t\"".into(),
                Box::new(move || App::new("m", "1").tool(tool("t").meta(key, value()))),
            ),
            (
                "prompt \"p\"".into(),
                Box::new(move || {
                    App::new("m", "1")
                        .prompt(Prompt::typed("p", "P.", no_messages).meta(key, value()))
                }),
            ),
            (
                "resource \"app://r\"".into(),
                Box::new(move || {
                    App::new("m", "1").resource(resource("app://r").meta(key, value()))
                }),
            ),
            (
                "resource template \"app://t/{id}\"".into(),
                Box::new(move || {
                    App::new("m", "1").template(template("app://t/{id}").meta(key, value()))
                }),
            ),
        ];
        for (item, build) in cases {
            let message = refusal(build);
            assert!(
                message.contains(&item)
                    && message.contains(&format!("{key:?}"))
                    && message.contains("reserved for MCP"),
                "{message}"
            );
        }
    }
}

#[test]
fn a_malformed_key_is_refused() {
    for key in [
        "1com.example/x",
        "com-.example/x",
        "com..example/x",
        "/x",
        "com.example/x/y",
        "com.example/-x",
        "com.example/x_",
        "with space",
        "café",
    ] {
        let object = json!({ key: true });
        assert!(
            matches!(
                meta("tool", "t", object.as_object().expect("an object")),
                Err(Refused::MetaKey { .. })
            ),
            "{key}"
        );
        let message = refusal(move || App::new("m", "1").tool(tool("t").meta(key, json!(true))));
        assert!(
            message.contains(&format!("{key:?}")) && message.contains("not a valid key"),
            "{message}"
        );
    }
}

#[test]
fn keys_of_the_spec_format_outside_reserved_prefixes_register() {
    let app = App::new("m", "1").tool(
        [
            "com.example/ticket",
            "com.example.mcp/x",
            "a/b",
            "com.example/",
            "x.y-z9/a.b-c_d",
            "openai/outputTemplate",
        ]
        .into_iter()
        .fold(tool("t"), |tool, key| tool.meta(key, json!(1))),
    );
    assert_eq!(app.find_tool("t").map(|t| t.meta.len()), Some(6));
}

#[test]
fn the_mcp_apps_meta_key_is_the_unprefixed_ui_and_its_capability_name_is_refused() {
    assert!(EXTENSION_META_KEYS.is_empty());
    let app = App::new("m", "1").resource(resource("app://view").meta("ui", json!({})));
    assert_eq!(app.resources().count(), 1);
    let message = refusal(|| {
        App::new("m", "1").resource(
            resource("app://view").meta("io.modelcontextprotocol/ui", json!({ "csp": {} })),
        )
    });
    assert!(message.contains("io.modelcontextprotocol/ui"), "{message}");
}
