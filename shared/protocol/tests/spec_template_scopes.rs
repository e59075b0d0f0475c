//! `resources/read` of a template's URI under the one authorization rule, and what a read costs
//! a caller who may not read the template (issue 37, "no caller text buys super-linear work").
//!
//! A URI is the first template's (in the app's order) that matches it, the same for every
//! caller: a caller without its scopes is refused (403 `insufficient_scope`, naming them). A
//! caller pays for matching only the templates it may read: one it may not read costs it a
//! comparison with the template's leading literal, so a caller that may read no template is
//! refused for any URI under that literal, matching or not, before any matching, and learns
//! only that a template it may not read lives there. A URI under no template's leading literal
//! is "Resource not found" for everyone.

mod skills_common;

use relevo_protocol::wire::ResourceContents;
use relevo_protocol::{App, Call, Handler, Outcome, ResourceTemplate, handler};
use serde_json::{Value, json};
use skills_common::{call, server};

/// A handler that answers which template served the read and its bound variables.
fn echo(which: &'static str) -> Handler {
    handler(move |call: Call| async move {
        let text = json!({ "template": which, "arguments": call.arguments }).to_string();
        Ok(Outcome::contents(vec![ResourceContents::text(
            text,
            call.uri.unwrap_or_default(),
        )]))
    })
}

fn template(uri_template: &str, which: &'static str, scopes: &[&str]) -> ResourceTemplate {
    ResourceTemplate::new(uri_template, which, "application/json", echo(which)).scopes(scopes)
}

/// What a read of `uri` by a caller holding `scopes` answered: the status, and the served
/// template's name and variables or the error.
async fn read(app: &App, scopes: &str, uri: &str) -> (u16, Value) {
    let server = server(app.clone(), 100, false);
    let (status, reply) = call(&server, scopes, "resources/read", json!({ "uri": uri })).await;
    let served = reply["result"]["contents"][0]["text"]
        .as_str()
        .map(|text| serde_json::from_str(text).expect("the echoed read"));
    (status.as_u16(), served.unwrap_or(reply["error"].clone()))
}

#[tokio::test]
async fn a_caller_that_may_read_no_template_is_refused_under_its_literal_whatever_the_uri() {
    let app =
        App::new("notes", "1").template(template("notes://{noteId}", "note", &["notes:read"]));
    let long = format!("notes://{}!", "a".repeat(8100));
    for uri in ["notes://n1", "notes://n1/more", long.as_str()] {
        let (status, _) = read(&app, "", uri).await;
        assert_eq!(status, 403, "{uri}: refused, matching or not");
    }
    let (_, error) = read(&app, "", "other://n1").await;
    assert_eq!(error["code"], -32602);
    assert_eq!(error["message"], "Resource not found");

    let (status, read_by_owner) = read(&app, "notes:read", "notes://n1").await;
    assert_eq!(status, 200);
    assert_eq!(
        read_by_owner,
        json!({ "template": "note", "arguments": { "noteId": "n1" } })
    );
    let (_, error) = read(&app, "notes:read", &long).await;
    assert_eq!(
        error["message"], "Resource not found",
        "a caller who may read it matches it"
    );
}

#[tokio::test]
async fn the_first_matching_template_decides_for_every_caller() {
    // "files://{+path}" comes before "files://{name}.txt" in the app's order.
    let app = App::new("files", "1")
        .template(template("files://{+path}", "private", &["admin"]))
        .template(template("files://{name}.txt", "public", &[]));
    let (status, _) = read(&app, "", "files://readme.txt").await;
    assert_eq!(
        status, 403,
        "the URI is the private template's, for everyone"
    );
    let (_, served) = read(&app, "admin", "files://readme.txt").await;
    assert_eq!(served["template"], "private");

    // A caller who may read a later template is served by it when an earlier one it may not
    // read does not match.
    let app = App::new("notes", "1")
        .template(template("notes://{noteId}", "note", &["notes:read"]))
        .template(template(
            "notes://{noteId}/history",
            "history",
            &["notes:history"],
        ));
    let (status, served) = read(&app, "notes:history", "notes://n1/history").await;
    assert_eq!(status, 200);
    assert_eq!(
        served,
        json!({ "template": "history", "arguments": { "noteId": "n1" } })
    );
    let (status, _) = read(&app, "notes:history", "notes://n1").await;
    assert_eq!(status, 403, "the note's URI is refused without notes:read");
}
