//! The app's tools, called as an MCP client calls them, through the real server in-process
//! (`relevo::testkit::TestServer`: the embedded store in memory, the worker on demand).

use relevo::prelude::*;
use relevo::testkit::{TestServer, accept, decline};

fn book_args() -> Value {
    json!({ "day": "2027-01-15", "guests": 4 })
}

#[relevo::tokio::test(crate = "relevo::tokio")]
async fn hello_greets_by_name() {
    let server = TestServer::new({{crate}}::app);
    let reply = server.call_tool("hello", json!({ "name": "Ada" })).await;
    assert_eq!(
        reply["structuredContent"]["greeting"], "Hello, Ada!",
        "{reply}"
    );
}

#[relevo::tokio::test(crate = "relevo::tokio")]
async fn book_asks_first_then_the_job_confirms_the_booking() {
    let server = TestServer::new({{crate}}::app);
    let first = server.call_tool("book", book_args()).await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    let booked = server
        .call_tool_answering("book", book_args(), |_, _| {
            accept(json!({ "confirm": true }))
        })
        .await;
    assert_eq!(
        booked["structuredContent"]["depositCents"], 2000,
        "{booked}"
    );
    let id = booked["structuredContent"]["bookingId"].clone();

    let pending = server
        .call_tool("booking", json!({ "bookingId": id }))
        .await;
    assert_eq!(
        pending["structuredContent"]["status"], "queued",
        "{pending}"
    );
    server.run_jobs().await;
    let done = server
        .call_tool("booking", json!({ "bookingId": id }))
        .await;
    assert_eq!(done["structuredContent"]["status"], "succeeded", "{done}");
    assert_eq!(
        done["structuredContent"]["confirmation"]["code"], "T20270115-4",
        "{done}"
    );
}

#[relevo::tokio::test(crate = "relevo::tokio")]
async fn a_confirmed_answer_sent_twice_is_one_booking() {
    let server = TestServer::new({{crate}}::app);
    let asked = server.call_tool("book", book_args()).await;
    let answered = json!({
        "name": "book",
        "arguments": book_args(),
        "inputResponses": { "confirm": accept(json!({ "confirm": true })) },
        "requestState": asked["requestState"],
    });
    let once = server.rpc("tools/call", answered.clone()).await;
    let twice = server.rpc("tools/call", answered).await;
    let id = &once["result"]["structuredContent"]["bookingId"];
    assert!(id.is_string(), "{once}");
    assert_eq!(
        &twice["result"]["structuredContent"]["bookingId"], id,
        "{twice}"
    );
}

#[relevo::tokio::test(crate = "relevo::tokio")]
async fn a_declined_booking_books_nothing() {
    let server = TestServer::new({{crate}}::app);
    let declined = server
        .call_tool_answering("book", book_args(), |_, _| decline())
        .await;
    assert_eq!(declined["isError"], true, "{declined}");
    let unknown = server
        .call_tool("booking", json!({ "bookingId": "no-such-booking" }))
        .await;
    assert_eq!(unknown["isError"], true, "{unknown}");
}

#[relevo::tokio::test(crate = "relevo::tokio")]
async fn arguments_outside_the_schema_never_reach_the_tool() {
    let server = TestServer::new({{crate}}::app);
    let refused = server
        .call_tool("book", json!({ "day": "2027-01-15", "guests": 40 }))
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
}
