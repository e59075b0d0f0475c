//! The fixture app of the official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! 2026-07-28 and 2025-11-25 requirement sets): the tools, resources and prompts its scenarios
//! call by name.
//!
//! Multi-round tools keep nothing in memory: whatever the next round needs travels in the
//! sealed `requestState` the server hands back, so any instance can serve any round.

use std::time::Duration;

use relevo_protocol::wire::{
    CallToolResult, ContentBlock, GetPromptResult, PromptMessage, ResourceContents, Role,
};
use relevo_protocol::{
    App, Call, ElicitAction, InputRequest, McpError, Outcome, Prompt, PromptArgument, Resource,
    ResourceTemplate, TaskSupport, Tool, handler,
};
use serde_json::{Value, json};

/// A 1×1 red PNG.
pub const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A 44-byte WAV header with one silent sample.
pub const SILENT_WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==";

fn empty_schema() -> Value {
    json!({ "type": "object", "additionalProperties": false })
}

fn text(message: impl Into<String>) -> Outcome {
    Outcome::tool(CallToolResult::success(vec![ContentBlock::text(
        message.into(),
    )]))
}

fn name_form(message: &str, field: &str) -> InputRequest {
    InputRequest::form(
        message,
        json!({ "type": "object", "properties": { field: { "type": "string" } }, "required": [field] }),
    )
}

fn confirm_form() -> InputRequest {
    InputRequest::form(
        "Please confirm",
        json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] }),
    )
}

/// The string field `field` of an accepted elicitation under `key`.
fn accepted_field(call: &Call, key: &str, field: &str) -> Option<String> {
    let answer = call.elicitation(key)?;
    if answer.action != ElicitAction::Accept {
        return None;
    }
    answer.content?.get(field)?.as_str().map(String::from)
}

/// The text of a sampling answer (`CreateMessageResult`) under `key`.
fn sampled_text(call: &Call, key: &str) -> Option<String> {
    let content = call.input(key)?.get("content")?;
    let block = if let Some(blocks) = content.as_array() {
        blocks.first()?
    } else {
        content
    };
    block.get("text")?.as_str().map(String::from)
}

fn roots_count(call: &Call, key: &str) -> Option<usize> {
    call.input(key)?.get("roots")?.as_array().map(Vec::len)
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "test_simple_text",
            "Returns a simple text response",
            empty_schema(),
            handler(|_| async { Ok(text("This is a simple text response for testing.")) }),
        ),
        Tool::new(
            "test_image_content",
            "Returns a PNG image",
            empty_schema(),
            handler(|_| async {
                Ok(Outcome::tool(CallToolResult::success(vec![
                    ContentBlock::image(RED_PIXEL_PNG, "image/png"),
                ])))
            }),
        ),
        Tool::new(
            "test_audio_content",
            "Returns WAV audio",
            empty_schema(),
            handler(|_| async {
                Ok(Outcome::tool(CallToolResult::success(vec![
                    ContentBlock::audio(SILENT_WAV, "audio/wav"),
                ])))
            }),
        ),
        Tool::new(
            "test_embedded_resource",
            "Returns an embedded resource",
            empty_schema(),
            handler(|_| async {
                Ok(Outcome::tool(CallToolResult::success(vec![
                    ContentBlock::resource(ResourceContents::text(
                        "This is an embedded resource content.",
                        "test://embedded-resource",
                    )),
                ])))
            }),
        ),
        Tool::new(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            empty_schema(),
            handler(|_| async {
                Ok(Outcome::tool(CallToolResult::success(vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(RED_PIXEL_PNG, "image/png"),
                    ContentBlock::resource(ResourceContents::TextResourceContents {
                        uri: "test://mixed-content-resource".into(),
                        mime_type: Some("application/json".into()),
                        text: json!({"test": "data", "value": 123}).to_string(),
                        meta: None,
                    }),
                ])))
            }),
        ),
        Tool::new(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100 of 100",
            empty_schema(),
            handler(|call: Call| async move {
                for step in [0.0, 50.0, 100.0] {
                    call.notifier.progress(
                        step,
                        Some(100.0),
                        Some(&format!("Completed step {step} of 100")),
                    );
                    if step < 100.0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
                Ok(text("Progress test completed"))
            }),
        )
        .streaming(),
        Tool::new(
            "test_logging_tool",
            "Logs three messages when the client asks for logs",
            empty_schema(),
            handler(|call: Call| async move {
                for message in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ] {
                    call.notifier
                        .log("info", Some("conformance"), json!(message));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(text("Logging test completed"))
            }),
        )
        .streaming(),
        Tool::new(
            "test_error_handling",
            "Always fails as a tool execution error",
            empty_schema(),
            handler(|_| async {
                Ok(Outcome::tool_error(
                    "This tool intentionally returns an error for testing",
                ))
            }),
        ),
        Tool::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json_schema_fixture(),
            handler(|_| async { Ok(text("ok")) }),
        ),
        Tool::new(
            "test_header_params",
            "Mirrors region and priority into Mcp-Param headers",
            json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region" },
                    "priority": { "type": "integer", "x-mcp-header": "Priority" },
                    "query": { "type": "string" }
                },
                "required": ["region"]
            }),
            handler(|call: Call| async move {
                let region = call
                    .arguments
                    .get("region")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                Ok(text(format!("region={region}")))
            }),
        ),
        Tool::new(
            "test_missing_capability",
            "Needs the sampling capability",
            empty_schema(),
            handler(|_| async { Ok(text("sampling capability present")) }),
        )
        .requires(json!({ "sampling": {} })),
        Tool::new(
            "test_input_required_result_elicitation",
            "Asks for a name, then greets",
            empty_schema(),
            handler(|call: Call| async move {
                Ok(match accepted_field(&call, "user_name", "name") {
                    Some(name) => text(format!("Hello, {name}!")),
                    None if call
                        .elicitation("user_name")
                        .is_some_and(|a| a.action != ElicitAction::Accept) =>
                    {
                        text("No name given")
                    }
                    None => {
                        Outcome::ask("user_name", name_form("What is your name?", "name"), None)
                    }
                })
            }),
        ),
        Tool::new(
            "test_streaming_elicitation",
            "Asks for a name through input_required",
            empty_schema(),
            handler(|call: Call| async move {
                Ok(match accepted_field(&call, "user_name", "name") {
                    Some(name) => text(format!("Hello, {name}!")),
                    None => {
                        Outcome::ask("user_name", name_form("What is your name?", "name"), None)
                    }
                })
            }),
        ),
        Tool::new(
            "test_input_required_result_sampling",
            "Asks the client's model a question",
            empty_schema(),
            handler(|call: Call| async move {
                Ok(match sampled_text(&call, "capital_question") {
                    Some(answer) => text(format!("The model answered: {answer}")),
                    None => Outcome::ask(
                        "capital_question",
                        InputRequest::sample_text("What is the capital of France?", 100),
                        None,
                    ),
                })
            }),
        ),
        Tool::new(
            "test_input_required_result_list_roots",
            "Asks for the client's roots",
            empty_schema(),
            handler(|call: Call| async move {
                Ok(match roots_count(&call, "client_roots") {
                    Some(count) => text(format!("The client has {count} root(s)")),
                    None => Outcome::ask("client_roots", InputRequest::ListRoots, None),
                })
            }),
        ),
        Tool::new(
            "test_input_required_result_request_state",
            "Round-trips a sealed requestState",
            empty_schema(),
            handler(|call: Call| async move {
                let confirmed = call.elicitation("confirm").is_some();
                let state_ok = call
                    .state
                    .as_ref()
                    .and_then(|s| s.get("step"))
                    .and_then(Value::as_str)
                    == Some("confirm");
                Ok(if confirmed && state_ok {
                    text("state-ok: the requestState verified and round-tripped")
                } else {
                    Outcome::ask(
                        "confirm",
                        confirm_form(),
                        Some(json!({ "step": "confirm" })),
                    )
                })
            }),
        ),
        Tool::new(
            "test_input_required_result_tampered_state",
            "Rejects a tampered requestState",
            empty_schema(),
            handler(|call: Call| async move {
                Ok(match (&call.state, call.elicitation("confirm")) {
                    (Some(_), Some(_)) => text("state-ok"),
                    _ => Outcome::ask(
                        "confirm",
                        confirm_form(),
                        Some(json!({ "step": "confirm" })),
                    ),
                })
            }),
        ),
        Tool::new(
            "test_input_required_result_multiple_inputs",
            "Asks for three inputs at once",
            empty_schema(),
            handler(|call: Call| async move {
                let name = accepted_field(&call, "user_name", "name");
                let greeting = sampled_text(&call, "greeting");
                let roots = roots_count(&call, "client_roots");
                Ok(match (name, greeting, roots) {
                    (Some(name), Some(greeting), Some(roots)) => {
                        text(format!("{greeting}, {name}! ({roots} root(s))"))
                    }
                    _ => Outcome::InputRequired {
                        requests: [
                            (
                                "user_name".to_string(),
                                name_form("What is your name?", "name"),
                            ),
                            (
                                "greeting".to_string(),
                                InputRequest::sample_text("Generate a greeting", 50),
                            ),
                            ("client_roots".to_string(), InputRequest::ListRoots),
                        ]
                        .into(),
                        state: Some(json!({ "step": "all" })),
                    },
                })
            }),
        ),
        Tool::new(
            "test_input_required_result_multi_round",
            "Asks in two rounds",
            empty_schema(),
            handler(|call: Call| async move {
                let round = call
                    .state
                    .as_ref()
                    .and_then(|s| s.get("round"))
                    .and_then(Value::as_u64);
                Ok(match round {
                    Some(1) => match accepted_field(&call, "step1", "name") {
                        Some(name) => Outcome::ask(
                            "step2",
                            name_form("Step 2: What is your favorite color?", "color"),
                            Some(json!({ "round": 2, "name": name })),
                        ),
                        None => Outcome::ask(
                            "step1",
                            name_form("Step 1: What is your name?", "name"),
                            Some(json!({ "round": 1 })),
                        ),
                    },
                    Some(2) => {
                        let name = call
                            .state
                            .as_ref()
                            .and_then(|s| s.get("name"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                        match accepted_field(&call, "step2", "color") {
                            Some(color) => text(format!("{name} likes {color}")),
                            None => Outcome::ask(
                                "step2",
                                name_form("Step 2: What is your favorite color?", "color"),
                                Some(json!({ "round": 2, "name": name })),
                            ),
                        }
                    }
                    _ => Outcome::ask(
                        "step1",
                        name_form("Step 1: What is your name?", "name"),
                        Some(json!({ "round": 1 })),
                    ),
                })
            }),
        ),
        Tool::new(
            "test_input_required_result_capabilities",
            "Asks only for what the client declared",
            empty_schema(),
            handler(|call: Call| async move {
                if !call.input_responses.is_empty() {
                    return Ok(text("Received the declared inputs"));
                }
                let candidates = [
                    ("user_name", name_form("What is your name?", "name")),
                    (
                        "greeting",
                        InputRequest::sample_text("Generate a greeting", 50),
                    ),
                    ("client_roots", InputRequest::ListRoots),
                ];
                let requests: std::collections::BTreeMap<String, InputRequest> = candidates
                    .into_iter()
                    .filter(|(_, request)| call.client.can_answer(request))
                    .map(|(key, request)| (key.to_string(), request))
                    .collect();
                Ok(if requests.is_empty() {
                    text("The client declared no capability this tool can use")
                } else {
                    Outcome::InputRequired {
                        requests,
                        state: None,
                    }
                })
            }),
        ),
    ]
}

/// An elicitation answer as the 2025-11-25 fixtures report it.
fn elicitation_report(call: &Call, key: &str) -> Option<Outcome> {
    let answer = call.input(key)?;
    let action = answer
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or(json!({}));
    Some(text(format!(
        "Elicitation completed: action={action}, content={content}"
    )))
}

/// The 2025-11-25 (handshake-era) fixtures. Written like every other tool (they ask through
/// `input_required`); a 2025-11-25 client receives the same asks as server-to-client requests.
fn handshake_era_tools() -> Vec<Tool> {
    let ask_form = |key: &'static str, message: &'static str, schema: Value| {
        handler(move |call: Call| {
            let schema = schema.clone();
            async move {
                Ok(elicitation_report(&call, key).unwrap_or_else(|| {
                    Outcome::ask(key, InputRequest::form(message, schema), None)
                }))
            }
        })
    };
    vec![
        Tool::new(
            "test_tool_with_logging",
            "Logs three info messages while it runs",
            empty_schema(),
            handler(|call: Call| async move {
                for (n, message) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if n > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    call.notifier
                        .log("info", Some("conformance"), json!(message));
                }
                Ok(text("Logging test completed"))
            }),
        )
        .streaming(),
        Tool::new(
            "test_sampling",
            "Asks the client's model to answer a prompt",
            json!({ "type": "object", "properties": { "prompt": { "type": "string" } }, "required": ["prompt"] }),
            handler(|call: Call| async move {
                Ok(match sampled_text(&call, "sample") {
                    Some(answer) => text(format!("LLM response: {answer}")),
                    None => {
                        let prompt = call
                            .arguments
                            .get("prompt")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        Outcome::ask("sample", InputRequest::sample_text(prompt, 100), None)
                    }
                })
            }),
        ),
        Tool::new(
            "test_elicitation",
            "Asks the user for a username and an email",
            json!({ "type": "object", "properties": { "message": { "type": "string" } }, "required": ["message"] }),
            handler(|call: Call| async move {
                if let Some(report) = elicitation_report(&call, "user_info") {
                    return Ok(report);
                }
                let message = call
                    .arguments
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("Your details?");
                Ok(Outcome::ask(
                    "user_info",
                    InputRequest::form(
                        message,
                        json!({ "type": "object", "properties": {
                            "username": { "type": "string", "description": "User's response" },
                            "email": { "type": "string", "description": "User's email address" }
                        }, "required": ["username", "email"] }),
                    ),
                    None,
                ))
            }),
        ),
        Tool::new(
            "test_elicitation_sep1034_defaults",
            "Elicits one field of each primitive type, each with a default",
            empty_schema(),
            ask_form(
                "defaults",
                "Please review the defaults",
                json!({ "type": "object", "properties": {
                    "name": { "type": "string", "default": "John Doe" },
                    "age": { "type": "integer", "default": 30 },
                    "score": { "type": "number", "default": 95.5 },
                    "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
                    "verified": { "type": "boolean", "default": true }
                } }),
            ),
        ),
        Tool::new(
            "test_elicitation_sep1330_enums",
            "Elicits the five enum shapes",
            empty_schema(),
            ask_form(
                "enums",
                "Please choose",
                json!({ "type": "object", "properties": {
                    "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
                    "titledSingle": { "type": "string", "oneOf": [
                        { "const": "value1", "title": "First Option" },
                        { "const": "value2", "title": "Second Option" },
                        { "const": "value3", "title": "Third Option" }
                    ] },
                    "legacyEnum": { "type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"] },
                    "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                    "titledMulti": { "type": "array", "items": { "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" }
                    ] } }
                } }),
            ),
        ),
    ]
}

/// The Tasks-extension fixtures (SEP-2663 scenarios).
fn task_tools() -> Vec<Tool> {
    let confirm = || {
        InputRequest::form(
            "Confirm the deletion?",
            json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } }, "required": ["confirm"] }),
        )
    };
    vec![
        Tool::new(
            "greet",
            "Greets by name (never a task)",
            json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
            handler(|call: Call| async move {
                let name = call.arguments.get("name").and_then(Value::as_str).unwrap_or("stranger").to_string();
                Ok(text(format!("Hello, {name}!")))
            }),
        ),
        Tool::new(
            "slow_compute",
            "Sleeps `seconds` then answers; a task when the client declares the Tasks extension",
            json!({ "type": "object", "properties": { "seconds": { "type": "number", "minimum": 0, "maximum": 60 } } }),
            handler(|call: Call| async move {
                let seconds = call.arguments.get("seconds").and_then(Value::as_f64).unwrap_or(1.0).clamp(0.0, 60.0);
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                Ok(text(format!("Computed after {seconds} s")))
            }),
        )
        .tasks(TaskSupport::Optional),
        Tool::new(
            "confirm_delete",
            "Asks for confirmation, then deletes",
            json!({ "type": "object", "properties": { "filename": { "type": "string" } } }),
            handler(move |call: Call| async move {
                Ok(match call.elicitation("confirm") {
                    Some(answer) if answer.action == ElicitAction::Accept => text("Deleted"),
                    Some(_) => text("Deletion cancelled"),
                    None => Outcome::ask("confirm", confirm(), None),
                })
            }),
        )
        .tasks(TaskSupport::Optional),
        Tool::new(
            "failing_job",
            "Fails as a tool error after about a second",
            empty_schema(),
            handler(|_| async {
                tokio::time::sleep(Duration::from_millis(800)).await;
                Ok(Outcome::tool_error("The job failed: the input was rejected"))
            }),
        )
        .tasks(TaskSupport::Required),
        Tool::new(
            "protocol_error_job",
            "Fails with a protocol error",
            empty_schema(),
            // A protocol error, not a panic: a conformance run's logs hold no panic (the
            // runner refuses one), and a failed task is `failed` with its `error` either way.
            handler(|_| async { Err(McpError::Internal) }),
        )
        .tasks(TaskSupport::Optional),
        Tool::new(
            "test_tool_with_task",
            "Asks for a name (MRTR), then greets from a task",
            empty_schema(),
            handler(|call: Call| async move {
                let name = accepted_field(&call, "user_name", "name").unwrap_or_else(|| "stranger".into());
                tokio::time::sleep(Duration::from_millis(200)).await;
                Ok(text(format!("Hello, {name}, from a task!")))
            }),
        )
        .tasks(TaskSupport::Required)
        .gather_before_task(handler(|call: Call| async move {
            Ok(match accepted_field(&call, "user_name", "name") {
                Some(_) => Outcome::Complete(Default::default()),
                None => Outcome::ask("user_name", name_form("What is your name?", "name"), None),
            })
        })),
        Tool::new(
            "multi_input",
            "Asks two questions at once",
            empty_schema(),
            handler(|call: Call| async move {
                let first = accepted_field(&call, "first", "name");
                let second = accepted_field(&call, "second", "name");
                Ok(match (first, second) {
                    (Some(first), Some(second)) => text(format!("Answers: {first}, {second}")),
                    _ => Outcome::InputRequired {
                        requests: [
                            ("first".to_string(), name_form("First: what is your name?", "name")),
                            ("second".to_string(), name_form("Second: what is your name?", "name")),
                        ]
                        .into(),
                        state: None,
                    },
                })
            }),
        )
        .tasks(TaskSupport::Optional),
    ]
}

fn json_schema_fixture() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}

fn static_text(uri: &'static str, body: &'static str) -> Resource {
    Resource::new(
        uri,
        uri.trim_start_matches("test://"),
        "text/plain",
        handler(
            move |_| async move { Ok(Outcome::contents(vec![ResourceContents::text(body, uri)])) },
        ),
    )
}

fn resources() -> Vec<Resource> {
    vec![
        static_text(
            "test://static-text",
            "This is the content of the static text resource.",
        )
        .description("A static text resource"),
        static_text(
            "test://stateless-static-text",
            "Static text served statelessly.",
        ),
        static_text(
            "test://watched-resource",
            "The watched resource's current content.",
        ),
        Resource::new(
            "test://static-binary",
            "static-binary",
            "image/png",
            handler(|_| async {
                Ok(Outcome::contents(vec![
                    ResourceContents::BlobResourceContents {
                        uri: "test://static-binary".into(),
                        mime_type: Some("image/png".into()),
                        blob: RED_PIXEL_PNG.into(),
                        meta: None,
                    },
                ]))
            }),
        )
        .description("A static PNG image"),
    ]
}

fn template() -> ResourceTemplate {
    let mut template = ResourceTemplate::new(
        "test://template/{id}/data",
        "template-data",
        "application/json",
        handler(|call: Call| async move {
            let id = call.arguments.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            let uri = call.uri.unwrap_or_default();
            Ok(Outcome::contents(vec![ResourceContents::TextResourceContents {
                uri,
                mime_type: Some("application/json".into()),
                text: json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string(),
                meta: None,
            }]))
        }),
    )
    .description("Data by id");
    template
        .completions
        .insert("id".into(), vec!["1".into(), "2".into(), "42".into()]);
    template
}

fn user_text(message: impl Into<String>) -> Outcome {
    Outcome::prompt(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        message.into(),
    )]))
}

fn arg(call: &Call, name: &str) -> String {
    call.arguments
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "test_simple_prompt",
            "A prompt without arguments",
            vec![],
            handler(|_| async { Ok(user_text("This is a simple prompt for testing.")) }),
        ),
        Prompt::new(
            "test_prompt_with_arguments",
            "A prompt with two arguments",
            vec![
                PromptArgument::required("arg1", "First argument")
                    .completions(&["paris", "park", "party"]),
                PromptArgument::required("arg2", "Second argument"),
            ],
            handler(|call: Call| async move {
                Ok(user_text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg(&call, "arg1"),
                    arg(&call, "arg2")
                )))
            }),
        ),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt that embeds a resource",
            vec![PromptArgument::required(
                "resourceUri",
                "URI of the resource to embed",
            )],
            handler(|call: Call| async move {
                let uri = arg(&call, "resourceUri");
                Ok(Outcome::prompt(GetPromptResult::new(vec![
                    PromptMessage::new(
                        Role::User,
                        ContentBlock::resource(ResourceContents::text(
                            "Embedded resource content for testing.",
                            uri,
                        )),
                    ),
                    PromptMessage::new_text(
                        Role::User,
                        "Please process the embedded resource above.",
                    ),
                ])))
            }),
        ),
        Prompt::new(
            "test_prompt_with_image",
            "A prompt with an image",
            vec![],
            handler(|_| async {
                Ok(Outcome::prompt(GetPromptResult::new(vec![
                    PromptMessage::new(Role::User, ContentBlock::image(RED_PIXEL_PNG, "image/png")),
                    PromptMessage::new_text(Role::User, "Please analyze the image above."),
                ])))
            }),
        ),
        Prompt::new(
            "test_input_required_result_prompt",
            "A prompt that first asks for context",
            vec![],
            handler(|call: Call| async move {
                Ok(match accepted_field(&call, "user_context", "context") {
                    Some(context) => user_text(format!("Use this context: {context}")),
                    None => Outcome::ask(
                        "user_context",
                        name_form("What context should the prompt use?", "context"),
                        None,
                    ),
                })
            }),
        ),
    ]
}

/// The fixtures as an app builder: they use no port.
pub fn build(_: &relevo_protocol::Ports) -> App {
    app()
}

pub fn app() -> App {
    let mut app = App::new("relevo-conformance", env!("CARGO_PKG_VERSION"))
        .instructions("Fixture app for the MCP conformance suite.")
        .template(template());
    for tool in tools()
        .into_iter()
        .chain(handshake_era_tools())
        .chain(task_tools())
    {
        app = app.tool(tool);
    }
    for resource in resources() {
        app = app.resource(resource);
    }
    for prompt in prompts() {
        app = app.prompt(prompt);
    }
    for skill in skills() {
        app = app.skill(skill);
    }
    app
}

/// The skills of the Skills extension's scenarios (`sep-2640-skills-*`), embedded from
/// `skills/` at build time: each skill root holds a subdirectory, for `resources/directory/read`.
fn skills() -> Vec<relevo_protocol::Skill> {
    vec![
        relevo_protocol::skill!(
            "skills",
            "conformance-guide",
            ["SKILL.md", "references/GUIDE.md", "templates/report.md"]
        ),
        relevo_protocol::skill!(
            "skills",
            "acme/billing/refunds",
            ["SKILL.md", "examples/email.md"]
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_names_the_suite_calls_are_all_registered() {
        let app = app();
        for tool in [
            "test_simple_text",
            "test_image_content",
            "test_audio_content",
            "test_embedded_resource",
            "test_multiple_content_types",
            "test_tool_with_progress",
            "test_error_handling",
            "json_schema_2020_12_tool",
            "test_missing_capability",
            "test_input_required_result_elicitation",
            "test_input_required_result_request_state",
            "test_input_required_result_tampered_state",
            "test_input_required_result_capabilities",
            "test_tool_with_logging",
            "test_sampling",
            "test_elicitation",
            "test_elicitation_sep1034_defaults",
            "test_elicitation_sep1330_enums",
        ] {
            assert!(app.find_tool(tool).is_some(), "{tool}");
        }
        assert!(app.find_resource("test://static-text").is_some());
        assert!(
            app.find_prompt("test_input_required_result_prompt")
                .is_some()
        );
    }

    #[test]
    fn json_schema_fixture_is_listed_verbatim() {
        let tool = app()
            .find_tool("json_schema_2020_12_tool")
            .unwrap()
            .to_wire();
        assert_eq!(tool["inputSchema"], json_schema_fixture());
    }
}
