//! The inventory approval as an MCP App: `inventory_propose` points at the `ui://` approval view
//! (and keeps the approval page's URL in its text for clients without the extension), and the
//! view decides with the app-only `inventory_decide`, on the same durable ledger as the page and
//! under the caller's own principal: an approval authorizes, a decline is recorded as
//! `rejected`, a replayed decision has no second effect, and a principal who may not decide
//! (another tenant, no `inventory:approve`, the proposer) is refused.
//!
//! The tools' handlers are called directly, over the embedded store, as the server calls them
//! once its guard has passed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use relevo_embedded::SqliteStore;
use relevo_protocol::{App, Call, ClientContext, Notifier, Outcome, Ports, Principal};
use serde_json::{Value, json};

const VIEW: &str = "ui://relevo-shop/inventory-approval";

fn shop() -> App {
    let store = Arc::new(SqliteStore::in_memory().expect("an in-memory store"));
    relevo_app::features(&Ports::new(Some(store)).with_pages_base("https://shop.example"))
}

fn agent() -> Principal {
    Principal::new("acme", "agent", ["inventory:read", "inventory:write"])
}

fn approver() -> Principal {
    Principal::new("acme", "ada", ["inventory:read", "inventory:approve"])
}

/// Calls tool `name` of `app` as `who`; the result (`Err` with the error's text when refused).
async fn call(app: &App, who: Principal, name: &str, arguments: Value) -> Result<Value, String> {
    let tool = app.find_tool(name).expect("the tool");
    let call = Call {
        arguments: arguments.as_object().cloned().unwrap_or_default(),
        uri: None,
        input_responses: Default::default(),
        state: None,
        client: ClientContext::default(),
        principal: who,
        notifier: Notifier::silent(),
        answers: None,
        jobs: None,
    };
    match (tool.handler)(call).await {
        Ok(Outcome::Complete(result)) if result.get("isError") != Some(&json!(true)) => {
            Ok(Value::Object(result))
        }
        Ok(Outcome::Complete(result)) => Err(result["content"][0]["text"].to_string()),
        Ok(_) => Err("asked for input".into()),
        Err(error) => Err(error.to_string()),
    }
}

/// A proposal that needs a person (another warehouse, a large change): its structured result.
async fn proposed(app: &App) -> Value {
    let result = call(
        app,
        agent(),
        "inventory_propose",
        json!({ "warehouse": "east", "sku": "MUG-1", "to": 500, "expectedVersion": 0 }),
    )
    .await
    .expect("a proposal");
    assert_eq!(
        result["structuredContent"]["status"], "waiting_for_person",
        "{result}"
    );
    result["structuredContent"].clone()
}

fn decision(op: &Value, decision: &str) -> Value {
    json!({ "operationId": op["operationId"], "digest": op["digest"], "decision": decision })
}

async fn status(app: &App, id: &Value) -> Value {
    let result = call(
        app,
        approver(),
        "inventory_operation",
        json!({ "operationId": id }),
    )
    .await
    .expect("the operation");
    result["structuredContent"]["status"].clone()
}

#[test]
fn the_propose_tool_points_at_the_approval_view_and_the_decision_is_app_only() {
    let app = shop();
    let propose = app.find_tool("inventory_propose").unwrap().to_wire();
    assert_eq!(propose["_meta"]["ui"]["resourceUri"], VIEW);
    let decide = app.find_tool("inventory_decide").unwrap().to_wire();
    assert_eq!(
        decide["_meta"]["ui"],
        json!({ "resourceUri": VIEW, "visibility": ["app"] })
    );
    let view = app
        .resources()
        .find(|r| r.uri == VIEW)
        .expect("the view")
        .to_wire();
    assert_eq!(view["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(
        view["_meta"]["ui"].get("csp"),
        None,
        "no external origin at all"
    );
}

#[tokio::test]
async fn the_view_reads_as_self_contained_html_speaking_the_bridge() {
    let app = shop();
    let view = app.resources().find(|r| r.uri == VIEW).expect("the view");
    let call = Call {
        arguments: Default::default(),
        uri: Some(VIEW.into()),
        input_responses: Default::default(),
        state: None,
        client: ClientContext::default(),
        principal: approver(),
        notifier: Notifier::silent(),
        answers: None,
        jobs: None,
    };
    let Ok(Outcome::Complete(read)) = (view.handler)(call).await else {
        panic!("the contents")
    };
    let html = read["contents"][0]["text"].as_str().unwrap();
    for needed in [
        "ui/initialize",
        "ui/notifications/initialized",
        "tools/call",
        "inventory_decide",
    ] {
        assert!(html.contains(needed), "{needed}");
    }
    for external in ["http://", "https://", "src=\"//"] {
        assert!(!html.contains(external), "{external}");
    }
}

#[tokio::test]
async fn the_text_fallback_keeps_the_approval_page_url() {
    let app = shop();
    let result = call(
        &app,
        agent(),
        "inventory_propose",
        json!({ "warehouse": "east", "sku": "MUG-1", "to": 500, "expectedVersion": 0 }),
    )
    .await
    .expect("a proposal");
    let id = result["structuredContent"]["operationId"].as_str().unwrap();
    let url = format!("https://shop.example/approvals/{id}");
    let text = result["content"][0]["text"].as_str().expect("a text block");
    assert!(text.contains(&url), "{text}");
}

#[tokio::test]
async fn an_approval_from_the_view_authorizes_the_operation() {
    let app = shop();
    let op = proposed(&app).await;
    let decided = call(
        &app,
        approver(),
        "inventory_decide",
        decision(&op, "approve"),
    )
    .await;
    assert_eq!(
        decided.unwrap()["structuredContent"]["status"],
        "authorized"
    );
    assert_eq!(status(&app, &op["operationId"]).await, "authorized");
}

#[tokio::test]
async fn a_decline_from_the_view_is_recorded_as_rejected() {
    let app = shop();
    let op = proposed(&app).await;
    let decided = call(
        &app,
        approver(),
        "inventory_decide",
        decision(&op, "decline"),
    )
    .await;
    assert_eq!(decided.unwrap()["structuredContent"]["status"], "rejected");
    assert_eq!(status(&app, &op["operationId"]).await, "rejected");
}

#[tokio::test]
async fn a_replayed_decision_is_refused_and_changes_nothing() {
    let app = shop();
    let op = proposed(&app).await;
    call(
        &app,
        approver(),
        "inventory_decide",
        decision(&op, "decline"),
    )
    .await
    .unwrap();
    for replay in ["decline", "approve"] {
        let again = call(&app, approver(), "inventory_decide", decision(&op, replay)).await;
        assert!(again.is_err(), "{replay}: {again:?}");
    }
    assert_eq!(status(&app, &op["operationId"]).await, "rejected");
}

#[tokio::test]
async fn a_principal_who_may_not_decide_is_refused_and_the_operation_waits() {
    let app = shop();
    let op = proposed(&app).await;
    let foreign = [
        Principal::new("globex", "ada", ["inventory:read", "inventory:approve"]),
        Principal::new("acme", "bob", ["inventory:read", "inventory:write"]),
        Principal::new("acme", "agent", ["inventory:write", "inventory:approve"]),
    ];
    for who in foreign {
        let subject = format!("{}/{}", who.tenant, who.subject);
        let refused = call(&app, who, "inventory_decide", decision(&op, "approve")).await;
        assert!(refused.is_err(), "{subject}: {refused:?}");
    }
    let mut tampered = decision(&op, "approve");
    tampered["digest"] = json!("0".repeat(64));
    assert!(
        call(&app, approver(), "inventory_decide", tampered)
            .await
            .is_err()
    );
    assert_eq!(status(&app, &op["operationId"]).await, "proposed");
}
