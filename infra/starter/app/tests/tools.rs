//! The app's tools, called as an MCP client calls them, through the real server in-process.

use relevo_testkit::{TestServer, accept, decline};
use serde_json::json;

#[tokio::test]
async fn hello_greets_by_name() {
    let server = TestServer::new(__CRATE__::app);
    let reply = server.call_tool("hello", json!({ "name": "Ada" })).await;
    assert_eq!(reply["structuredContent"]["greeting"], "Hello, Ada!", "{reply}");
}

#[tokio::test]
async fn book_asks_before_it_books() {
    let server = TestServer::new(__CRATE__::app);
    let first = server.call_tool("book", json!({ "day": "2027-01-15", "guests": 4 })).await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    let booked = server
        .call_tool_answering("book", json!({ "day": "2027-01-15", "guests": 4 }), |_, _| {
            accept(json!({ "confirm": true }))
        })
        .await;
    assert_eq!(booked["structuredContent"]["deposit_cents"], 2000, "{booked}");
    let declined =
        server.call_tool_answering("book", json!({ "day": "2027-01-15", "guests": 4 }), |_, _| decline()).await;
    assert_eq!(declined["isError"], true, "{declined}");
}

#[tokio::test]
async fn arguments_outside_the_schema_never_reach_the_tool() {
    let server = TestServer::new(__CRATE__::app);
    let refused = server.call_tool("book", json!({ "day": "2027-01-15", "guests": 40 })).await;
    assert_eq!(refused["isError"], true, "{refused}");
}
