//! The typed authoring API end to end, through the real server: derived schemas, validation
//! before the handler, `?` with the caller's and our faults, typed MRTR elicitation with its
//! state, and one-call jobs.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use relevo_protocol::author::{Elicited, JobContext, JobError, JobKind, ToolContext, ToolError};
use relevo_protocol::{App, Ports, Tool};
use relevo_testkit::{TestServer, accept, decline};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Transfer {
    /// Whole units to move
    #[schemars(range(min = 1, max = 100))]
    amount: u32,
    to: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Receipt {
    moved: u32,
    to: String,
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Move it
    confirm: bool,
}

#[derive(Serialize, Deserialize)]
struct Quote {
    fee: u32,
}

async fn transfer(args: Transfer, cx: ToolContext) -> Result<Receipt, ToolError> {
    if args.to == "nobody" {
        return Err(ToolError::caller("no account named nobody"));
    }
    let quote = cx.state::<Quote>().unwrap_or(Quote {
        fee: args.amount / 10,
    });
    let question = format!(
        "Move {} to {} for a fee of {}?",
        args.amount, args.to, quote.fee
    );
    match cx.elicit_with::<Confirm, _>("confirm", &question, &quote)? {
        Elicited::Accept(Confirm { confirm: true }) => Ok(Receipt {
            moved: args.amount - quote.fee,
            to: args.to,
        }),
        _ => Err(ToolError::caller("not confirmed")),
    }
}

#[derive(Deserialize, JsonSchema)]
struct JobId {
    id: String,
}

#[derive(Serialize, JsonSchema)]
struct JobResult {
    status: String,
    result: Option<u64>,
}

/// Reads the caller's `tally` job back, typed: a plain `async fn`, the engine reached through
/// the context.
async fn read_job(args: JobId, cx: ToolContext) -> Result<JobResult, ToolError> {
    let view = cx
        .find_job(&TALLY, &args.id)
        .await?
        .ok_or_else(|| ToolError::caller("no such job"))?;
    Ok(JobResult {
        status: view.status().into(),
        result: view.state.output().map(|tallied| tallied.tally),
    })
}

/// Starts the one `tally` job.
async fn start(_: relevo_protocol::author::NoArgs, cx: ToolContext) -> Result<Receipt, ToolError> {
    let job = cx
        .start_job(&TALLY, Some("once"), &TallyInput { n: 3 })
        .await?;
    Ok(Receipt {
        moved: 0,
        to: job.job.id,
    })
}

fn app(_: &Ports) -> App {
    App::new("typed", "1")
        .tool(Tool::typed("job", "Reads a job.", read_job))
        .tool(Tool::typed(
            "transfer",
            "Moves units after a confirmation.",
            transfer,
        ))
        .tool(Tool::typed("start", "Starts a job.", start))
        .job(&TALLY, tally)
}

#[derive(Serialize, Deserialize)]
struct TallyInput {
    n: u64,
}

#[derive(Serialize, Deserialize)]
struct Tallied {
    tally: u64,
}

const TALLY: JobKind<TallyInput, Tallied> = JobKind::new("tally");

async fn tally(input: TallyInput, _: JobContext) -> Result<Tallied, JobError> {
    Ok(Tallied { tally: input.n * 2 })
}

#[tokio::test]
async fn schemas_are_derived_and_arguments_are_checked_before_the_handler() {
    let server = TestServer::new(app);
    let listed = server.rpc("tools/list", json!({})).await;
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "transfer")
        .unwrap()
        .clone();
    assert_eq!(tool["inputSchema"]["properties"]["amount"]["maximum"], 100);
    assert_eq!(tool["inputSchema"]["additionalProperties"], false);
    assert_eq!(tool["outputSchema"]["required"], json!(["moved", "to"]));
    let refused = server
        .call_tool("transfer", json!({ "amount": 500, "to": "bob" }))
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("amount"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_caller_error_is_a_tool_error_the_model_can_read() {
    let server = TestServer::new(app);
    let refused = server
        .call_tool("transfer", json!({ "amount": 5, "to": "nobody" }))
        .await;
    assert_eq!(
        (
            refused["isError"].as_bool(),
            refused["content"][0]["text"].as_str()
        ),
        (Some(true), Some("no account named nobody"))
    );
}

#[tokio::test]
async fn elicitation_asks_once_then_completes_with_the_state_of_the_first_round() {
    let server = TestServer::new(app);
    let first = server
        .call_tool("transfer", json!({ "amount": 50, "to": "bob" }))
        .await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    let form = &first["inputRequests"]["confirm"]["params"];
    assert_eq!(form["message"], "Move 50 to bob for a fee of 5?");
    assert_eq!(
        form["requestedSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    let done = server
        .call_tool_answering("transfer", json!({ "amount": 50, "to": "bob" }), |_, _| {
            accept(json!({ "confirm": true }))
        })
        .await;
    assert_eq!(
        done["structuredContent"],
        json!({ "moved": 45, "to": "bob" }),
        "{done}"
    );
    let declined = server
        .call_tool_answering("transfer", json!({ "amount": 50, "to": "bob" }), |_, _| {
            decline()
        })
        .await;
    assert_eq!(declined["isError"], true, "{declined}");
}

#[tokio::test]
async fn an_answer_sent_without_the_question_is_not_taken() {
    let server = TestServer::new(app);
    let forged = json!({ "name": "transfer", "arguments": { "amount": 50, "to": "bob" },
        "inputResponses": { "confirm": { "action": "accept", "content": { "confirm": true } } } });
    let reply = server.rpc("tools/call", forged).await;
    assert_eq!(
        reply["result"]["resultType"], "input_required",
        "the question is asked first: {reply}"
    );
}

#[tokio::test]
async fn a_job_started_in_one_call_runs_once_in_the_worker() {
    let server = TestServer::new(app);
    let first = server.call_tool("start", json!({})).await;
    let again = server.call_tool("start", json!({})).await;
    let id = first["structuredContent"]["to"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        again["structuredContent"]["to"],
        Value::String(id.clone()),
        "one job per operation key"
    );
    let queued = server.call_tool("job", json!({ "id": id })).await;
    assert_eq!(queued["structuredContent"]["status"], "queued", "{queued}");
    server.run_jobs().await;
    let done = server.call_tool("job", json!({ "id": id })).await;
    assert_eq!(
        done["structuredContent"],
        json!({ "status": "succeeded", "result": 6 }),
        "{done}"
    );
}
