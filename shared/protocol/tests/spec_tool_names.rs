//! MCP 2026-07-28, "Tools" → tool names: a tool name is 1–128 characters of `[A-Za-z0-9_.-]`,
//! case-sensitive, and unique per server.
//!
//! Checked at registration: `App::tool` refuses (panics, as axum refuses a conflicting route)
//! a name outside the rule, and a second tool of a name already registered, with a message
//! naming the tool and the rule, rather than replacing the first tool silently. Prompts,
//! resources and resource templates are unique by their key the same way.

use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
use relevo_protocol::registry::rules::{MAX_TOOL_NAME, Refused, tool_name};
use relevo_protocol::wire::ResourceContents;
use relevo_protocol::{App, Handler, Prompt, Resource, Tool, handler};
use serde_json::json;

async fn nothing(_: NoArgs, _: ToolContext) -> Result<String, ToolError> {
    Ok(String::new())
}

fn tool(name: &str) -> Tool {
    Tool::typed(name, "Does nothing.", nothing)
}

fn never() -> Handler {
    handler(|_| async { unreachable!("never called") })
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
fn names_of_one_to_128_allowed_characters_register() {
    let longest = "x".repeat(MAX_TOOL_NAME);
    let app = App::new("names", "1")
        .tool(tool("a"))
        .tool(tool("get_user.v2-Beta9"))
        .tool(tool("A"))
        .tool(tool(&longest));
    assert_eq!(app.tools().count(), 4, "names are case-sensitive");
    assert!(app.find_tool(&longest).is_some());
}

#[test]
fn a_name_outside_the_rule_is_refused_with_the_name_and_the_rule() {
    let too_long = "x".repeat(MAX_TOOL_NAME + 1);
    for bad in [
        "",
        "get user",
        "a/b",
        "café",
        "tool:call",
        too_long.as_str(),
    ] {
        assert_eq!(tool_name(bad), Err(Refused::ToolName(bad.into())));
        let message = refusal(|| App::new("names", "1").tool(tool(bad)));
        assert!(
            message.contains(&format!("{bad:?}")) && message.contains("[A-Za-z0-9_.-]"),
            "{message}"
        );
    }
}

#[test]
fn a_second_tool_of_the_same_name_is_refused_not_a_replacement() {
    let message = refusal(|| {
        App::new("names", "1").tool(tool("ping")).tool(Tool::new(
            "ping",
            "Another.",
            json!({ "type": "object" }),
            never(),
        ))
    });
    assert!(
        message.contains("\"ping\"") && message.contains("unique"),
        "{message}"
    );
}

#[test]
fn prompts_and_resources_are_unique_by_their_key() {
    let prompt = || Prompt::new("greet", "Greets.", vec![], never());
    let message = refusal(move || App::new("p", "1").prompt(prompt()).prompt(prompt()));
    assert!(message.contains("prompt \"greet\""), "{message}");

    let resource = || {
        Resource::typed("app://about", "about", "text/plain", |_| async {
            Ok(vec![ResourceContents::text("About.", "app://about")])
        })
    };
    let message = refusal(move || App::new("r", "1").resource(resource()).resource(resource()));
    assert!(message.contains("resource \"app://about\""), "{message}");
}
