//! Each example of `examples/` as a user runs it: built by cargo, started as its own process on
//! a free 127.0.0.1 port with the local runner, and called over HTTP for the point it shows.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const EXAMPLES: &[&str] = &["elicitation", "resources", "prompts", "job", "page"];

/// Starts the example `name`; all of them are built once, by the first test that needs one.
fn start(name: &str) -> common::Server {
    static BUILT: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    common::start(&BUILT.get_or_init(|| common::build_examples(EXAMPLES))[name])
}

/// A client that can answer form elicitation.
fn elicitation() -> Value {
    json!({ "elicitation": { "form": {} } })
}

#[tokio::test]
async fn the_elicitation_example_acts_only_on_the_confirmed_retry_of_its_own_round() {
    let server = start("elicitation");
    let call = json!({ "name": "archive", "arguments": { "project": "apollo" } });
    let asked = server
        .rpc_with("tools/call", call.clone(), elicitation())
        .await["result"]
        .clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let form = &asked["inputRequests"]["confirm"];
    assert_eq!(form["method"], "elicitation/create", "{asked}");
    assert_eq!(
        form["params"]["requestedSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    let state = asked["requestState"]
        .as_str()
        .expect("a sealed requestState")
        .to_string();

    let answer = |content: Value, state: &str| {
        let mut retry = call.clone();
        retry["inputResponses"] = json!({ "confirm": { "action": "accept", "content": content } });
        retry["requestState"] = json!(state);
        retry
    };
    let done = server
        .rpc_with(
            "tools/call",
            answer(json!({ "confirm": true }), &state),
            elicitation(),
        )
        .await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({ "archived": "apollo" }),
        "{done}"
    );

    // A requestState changed on the way is refused: the server sealed it (a MAC at its end).
    let tag = state.rfind('.').expect("a sealed value ends with its tag") + 1;
    let flipped = if state[tag..].starts_with('A') {
        "B"
    } else {
        "A"
    };
    let tampered = format!("{}{flipped}{}", &state[..tag], &state[tag + 1..]);
    let refused = server
        .rpc_with(
            "tools/call",
            answer(json!({ "confirm": true }), &tampered),
            elicitation(),
        )
        .await;
    assert!(refused["error"]["code"].is_i64(), "{refused}");

    // A "no" on a fresh round archives nothing.
    let again = server
        .rpc_with("tools/call", call.clone(), elicitation())
        .await;
    let fresh = again["result"]["requestState"]
        .as_str()
        .expect("another round")
        .to_string();
    let no = server
        .rpc_with(
            "tools/call",
            answer(json!({ "confirm": false }), &fresh),
            elicitation(),
        )
        .await;
    assert_eq!(no["result"]["isError"], true, "{no}");
    assert!(no["result"].get("structuredContent").is_none(), "{no}");

    // An answer without the state of the round that asked is no answer: the question again.
    let mut forged = answer(json!({ "confirm": true }), "");
    forged
        .as_object_mut()
        .expect("an object")
        .remove("requestState");
    let skipped = server.rpc_with("tools/call", forged, elicitation()).await;
    assert_eq!(
        skipped["result"]["resultType"], "input_required",
        "{skipped}"
    );
}

#[tokio::test]
async fn the_resources_example_lists_and_reads_its_resource_and_its_template() {
    let server = start("resources");
    let listed = server.rpc("resources/list", json!({})).await;
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"docs://readme"), "{listed}");
    let templates = server.rpc("resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"], "greetings://{name}",
        "{templates}"
    );

    let readme = server
        .rpc("resources/read", json!({ "uri": "docs://readme" }))
        .await;
    let contents = &readme["result"]["contents"][0];
    assert_eq!(contents["uri"], "docs://readme", "{readme}");
    assert!(
        contents["text"]
            .as_str()
            .is_some_and(|t| t.contains("resource template")),
        "{readme}"
    );

    let greeting = server
        .rpc("resources/read", json!({ "uri": "greetings://ada" }))
        .await;
    assert_eq!(
        greeting["result"]["contents"][0]["text"], "Hello, ada!",
        "{greeting}"
    );
    assert_eq!(
        greeting["result"]["contents"][0]["uri"], "greetings://ada",
        "{greeting}"
    );

    let unknown = server
        .rpc("resources/read", json!({ "uri": "greetings://a/b" }))
        .await;
    assert!(
        unknown["error"]["code"].is_i64(),
        "a URI neither names is an error: {unknown}"
    );
}

#[tokio::test]
async fn the_prompts_example_fills_its_prompt_from_the_arguments_and_completes_the_level() {
    let server = start("prompts");
    let listed = server.rpc("prompts/list", json!({})).await;
    let explain = &listed["result"]["prompts"][0];
    assert_eq!(explain["name"], "explain", "{listed}");
    let required: Vec<(&str, bool)> = explain["arguments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| Some((a["name"].as_str()?, a["required"].as_bool()?)))
        .collect();
    assert_eq!(required, [("level", false), ("topic", true)], "{listed}");

    let arguments = json!({ "topic": "lifetimes", "level": "expert" });
    let got = server
        .rpc(
            "prompts/get",
            json!({ "name": "explain", "arguments": arguments }),
        )
        .await;
    let message = &got["result"]["messages"][0];
    assert_eq!(message["role"], "user", "{got}");
    assert_eq!(
        message["content"]["text"], "Explain lifetimes to a expert in three short sentences.",
        "{got}"
    );
    let missing = server
        .rpc("prompts/get", json!({ "name": "explain", "arguments": {} }))
        .await;
    assert!(
        missing
            .get("result")
            .is_none_or(|r| r.get("messages").is_none()),
        "{missing}"
    );

    let complete = |value: &str| {
        json!({
            "ref": { "type": "ref/prompt", "name": "explain" },
            "argument": { "name": "level", "value": value }
        })
    };
    let offered = server.rpc("completion/complete", complete("in")).await;
    assert_eq!(
        offered["result"]["completion"]["values"],
        json!(["intermediate"]),
        "{offered}"
    );
    let all = server.rpc("completion/complete", complete("")).await;
    assert_eq!(all["result"]["completion"]["total"], 3, "{all}");
}

#[tokio::test]
async fn the_job_example_runs_its_job_as_a_task_whose_result_tasks_get_reads() {
    let server = start("job");
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let call = json!({ "name": "tally", "arguments": { "upto": 10 } });
    let created = server.rpc_with("tools/call", call, tasks.clone()).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_string();

    let deadline = Instant::now() + Duration::from_secs(60);
    let mut progress = Vec::new();
    let done = loop {
        let got = server
            .rpc_with("tasks/get", json!({ "taskId": id }), tasks.clone())
            .await;
        let task = got["result"].clone();
        match task["status"].as_str() {
            Some("completed") => break task,
            Some("working") => progress.extend(task["statusMessage"].as_str().map(String::from)),
            _ => panic!("a task that works, then completes: {got}"),
        }
        assert!(
            Instant::now() < deadline,
            "the task did not complete in a minute: {got}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        done["result"]["structuredContent"],
        json!({ "sum": 55 }),
        "{done}"
    );
    assert_eq!(done["result"]["isError"], false, "{done}");
    // The job reports each step (a second in all): polled every 20 ms, some are seen.
    assert!(!progress.is_empty(), "no progress was seen while it worked");
    for message in &progress {
        assert!(
            message.starts_with("added ") && message.ends_with(" of 10"),
            "{message}"
        );
    }

    // A client without the extension gets the job's id instead, and no task methods.
    let plain = server.call("tally", json!({ "upto": 1 })).await;
    let job_id = plain["result"]["content"][0]["text"].as_str();
    assert!(
        job_id.is_some_and(|j| j.len() == id.len() && j != id),
        "{plain}"
    );
    let refused = server.rpc("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

#[tokio::test]
async fn the_page_example_serves_its_page_beside_mcp() {
    let server = start("page");
    let page = server
        .http()
        .get(server.url("/status"))
        .send()
        .await
        .expect("the page answers");
    assert_eq!(page.status(), 200);
    let content_type = page.headers()["content-type"]
        .to_str()
        .unwrap_or_default()
        .to_string();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let body = page.text().await.expect("the body reads");
    assert!(body.contains("<h1>All systems go</h1>"), "{body}");

    let post = server
        .http()
        .post(server.url("/status"))
        .send()
        .await
        .expect("it answers");
    assert_eq!(post.status(), 405);
    let elsewhere = server
        .http()
        .get(server.url("/status/x"))
        .send()
        .await
        .expect("it answers");
    assert_eq!(elsewhere.status(), 404);
    // The runner checks Host before the page runs, as it does for `/mcp`.
    let rebound = server
        .http()
        .get(server.url("/status"))
        .header("host", "attacker.example")
        .send()
        .await
        .expect("it answers");
    assert_eq!(rebound.status(), 403);
    // `/mcp` is still the MCP endpoint.
    let discover = server.rpc("server/discover", json!({})).await;
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "page",
        "{discover}"
    );
}
