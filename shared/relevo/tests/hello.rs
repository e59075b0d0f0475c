//! `examples/hello.rs` as a user runs it: built by cargo, started as its own process on
//! 127.0.0.1 with the local runner, and called over HTTP as an MCP client calls it.

mod common;

use serde_json::json;

#[tokio::test]
async fn the_hello_example_serves_its_two_tools_on_loopback() {
    let binaries = common::build_examples(&["hello"]);
    let server = common::start(&binaries["hello"]);

    let sum = server.call("add", json!({ "a": 2, "b": 40 })).await;
    assert_eq!(sum["result"]["structuredContent"]["sum"], 42, "{sum}");
    let greeting = server.call("greet", json!({ "name": "Ada" })).await;
    assert_eq!(
        greeting["result"]["structuredContent"]["greeting"], "Hello, Ada!",
        "{greeting}"
    );
    // The schema derived from the example's types is enforced before the tool runs.
    let refused = server.call("add", json!({ "a": 2 })).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
}
