//! MCP 2026-07-28, "Completion" → "Requesting Completions": "For prompts or URI templates with
//! multiple arguments, clients should include previous completions in the `context.arguments`
//! object to provide context for subsequent requests"; "Completion Results": "Maximum 100
//! items per response", an optional `total` and `hasMore`; "Security": implementations
//! **MUST** "Validate all completion inputs".
//!
//! A completion function declared on a prompt argument or a template variable receives the
//! typed value and `context.arguments`; whatever it answers, at most 100 values leave, with
//! `total` and `hasMore: true` when more were found. A static list still answers by prefix,
//! under the same cap, and `context.arguments` holding a non-string is `-32602`.

mod support;

use std::sync::{Arc, Mutex};

use relevo_protocol::author::{ToolContext, ToolError};
use relevo_protocol::registry::CompletionRequest;
use relevo_protocol::wire::{GetPromptResult, PromptMessage, Role};
use relevo_protocol::{App, McpServer, Prompt, ResourceTemplate, handler};
use serde_json::{Value, json};
use support::{modern_as, serve};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ReviewArgs {
    /// The language
    language: String,
    /// The framework
    framework: String,
}

async fn review(args: ReviewArgs, _: ToolContext) -> Result<GetPromptResult, ToolError> {
    let text = format!("Review {} code using {}.", args.language, args.framework);
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        text,
    )]))
}

/// Frameworks of the language already resolved, by prefix.
async fn frameworks(request: CompletionRequest) -> Result<Vec<String>, ToolError> {
    let known: &[&str] = match request.context.get("language").map(String::as_str) {
        Some("python") => &["flask", "fastapi", "django"],
        Some("rust") => &["axum", "actix-web"],
        _ => &[],
    };
    Ok(known
        .iter()
        .filter(|f| f.starts_with(&request.value))
        .map(|f| f.to_string())
        .collect())
}

async fn complete(server: &McpServer, reference: Value, argument: Value, context: Value) -> Value {
    let mut params = json!({ "ref": reference, "argument": argument });
    if !context.is_null() {
        params["context"] = context;
    }
    modern_as(server, json!({}), "completion/complete", params).await
}

fn many(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("item-{i:03}")).collect()
}

#[tokio::test]
async fn a_prompt_completion_function_receives_the_resolved_arguments() {
    let server = serve(
        App::new("complete", "1").prompt(
            Prompt::typed("code_review", "Asks for a review.", review)
                .complete("language", &["python", "rust"])
                .complete_with("framework", frameworks),
        ),
    );
    let prompt = json!({ "type": "ref/prompt", "name": "code_review" });
    let reply = complete(
        &server,
        prompt.clone(),
        json!({ "name": "framework", "value": "fla" }),
        json!({ "arguments": { "language": "python" } }),
    )
    .await;
    assert_eq!(
        reply["result"]["completion"],
        json!({ "values": ["flask"], "total": 1, "hasMore": false })
    );
    let reply = complete(
        &server,
        prompt.clone(),
        json!({ "name": "framework", "value": "a" }),
        json!({ "arguments": { "language": "rust" } }),
    )
    .await;
    assert_eq!(
        reply["result"]["completion"]["values"],
        json!(["axum", "actix-web"])
    );
    let reply = complete(
        &server,
        prompt.clone(),
        json!({ "name": "language", "value": "r" }),
        Value::Null,
    )
    .await;
    assert_eq!(
        reply["result"]["completion"]["values"],
        json!(["rust"]),
        "a static list still answers by prefix"
    );
    let reply = complete(
        &server,
        prompt,
        json!({ "name": "framework", "value": "" }),
        json!({ "arguments": { "language": 3 } }),
    )
    .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

#[tokio::test]
async fn a_template_completion_function_receives_the_resolved_variables() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    let template = ResourceTemplate::new(
        "repos://{owner}/{repo}",
        "repo",
        "text/plain",
        handler(|_| async { unreachable!("completion reads nothing") }),
    )
    .complete_with("repo", move |request: CompletionRequest| {
        recorded.lock().expect("not poisoned").push((
            request.argument.clone(),
            request.value.clone(),
            request.context.clone(),
        ));
        async move {
            let owner = request.context.get("owner").cloned().unwrap_or_default();
            Ok::<_, ToolError>(vec![format!("{owner}-notes"), format!("{owner}-site")])
        }
    });
    let server = serve(App::new("complete", "1").template(template));
    let reply = complete(
        &server,
        json!({ "type": "ref/resource", "uri": "repos://{owner}/{repo}" }),
        json!({ "name": "repo", "value": "ad" }),
        json!({ "arguments": { "owner": "ada" } }),
    )
    .await;
    assert_eq!(
        reply["result"]["completion"]["values"],
        json!(["ada-notes", "ada-site"])
    );
    let seen = seen.lock().expect("not poisoned").clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "repo");
    assert_eq!(seen[0].1, "ad");
    assert_eq!(seen[0].2.get("owner").map(String::as_str), Some("ada"));
}

#[tokio::test]
async fn no_more_than_a_hundred_values_leave_and_the_rest_is_counted() {
    let listed: Vec<String> = many(150);
    let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
    let server = serve(
        App::new("complete", "1").prompt(
            Prompt::typed("code_review", "Asks for a review.", review)
                .complete("language", &listed)
                .complete_with("framework", |_| async { Ok::<_, ToolError>(many(250)) }),
        ),
    );
    let prompt = json!({ "type": "ref/prompt", "name": "code_review" });
    for (name, total) in [("framework", 250), ("language", 150)] {
        let reply = complete(
            &server,
            prompt.clone(),
            json!({ "name": name, "value": "item-" }),
            Value::Null,
        )
        .await;
        let completion = &reply["result"]["completion"];
        assert_eq!(
            completion["values"].as_array().map(Vec::len),
            Some(100),
            "{name}"
        );
        assert_eq!(completion["values"][0], "item-000", "{name}: best first");
        assert_eq!(completion["total"], total, "{name}");
        assert_eq!(completion["hasMore"], true, "{name}");
    }
}
