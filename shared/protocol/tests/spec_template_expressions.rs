//! MCP 2026-07-28, "Resources" → "Resource Templates": "Resource templates allow servers to
//! expose parameterized resources using URI templates" (RFC 6570). A `resources/read` of a URI
//! that a declared `uriTemplate` expands to reaches that template, whatever the template's level.
//!
//! RFC 6570 defines expansion; the server matches its inverse. Checked here, through
//! `resources/read`: level 2 (`{+var}`, `{#var}`), level 3 (several variables per expression;
//! `{.var}`, `{/var}`, `{;var}`, `{?var}`, `{&var}`) and level 4 (explode `*` as a list), a
//! named variable the URI leaves out is absent, a URI with an undeclared query parameter does
//! not match; and `App::template` refuses, naming the template and the reason, a template the
//! matcher cannot honour (a prefix modifier, a variable named twice, an exploded variable
//! before another, adjacent expressions of ambiguous boundary).

mod support;

use relevo_protocol::wire::ResourceContents;
use relevo_protocol::{App, Call, Handler, McpServer, Outcome, ResourceTemplate, handler};
use serde_json::{Value, json};
use support::{modern_as, serve};

/// A handler that answers its bound variables as JSON text.
fn echo() -> Handler {
    handler(|call: Call| async move {
        let text = Value::Object(call.arguments.clone()).to_string();
        Ok(Outcome::contents(vec![ResourceContents::text(
            text,
            call.uri.unwrap_or_default(),
        )]))
    })
}

fn template(uri_template: &str) -> ResourceTemplate {
    ResourceTemplate::new(uri_template, "t", "application/json", echo())
}

/// The variables a read of `uri` bound, or the error it answered.
async fn read(server: &McpServer, uri: &str) -> Result<Value, Value> {
    let reply = modern_as(server, json!({}), "resources/read", json!({ "uri": uri })).await;
    match reply["result"]["contents"][0]["text"].as_str() {
        Some(text) => Ok(serde_json::from_str(text).expect("the echoed variables")),
        None => Err(reply["error"].clone()),
    }
}

#[tokio::test]
async fn level_two_reserved_and_fragment_expansions_match() {
    let server = serve(
        App::new("expressions", "1")
            .template(template("files:///{+path}{#section}"))
            .template(template("docs://{id}")),
    );
    assert_eq!(
        read(&server, "files:///src/lib.rs#layout").await,
        Ok(json!({ "path": "src/lib.rs", "section": "layout" }))
    );
    assert_eq!(
        read(&server, "files:///README.md").await,
        Ok(json!({ "path": "README.md" })),
        "a fragment the URI leaves out is absent"
    );
    assert_eq!(
        read(&server, "docs://a,b").await,
        Ok(json!({ "id": "a,b" })),
        "a list value of one variable is kept whole"
    );
}

#[tokio::test]
async fn level_three_expressions_with_several_variables_match() {
    let server = serve(
        App::new("expressions", "1")
            .template(template("maps://{x,y}/tile{.format}"))
            .template(template(
                "repos://{owner}{/repo,branch}{;rev}{?q,page}{&lang}",
            )),
    );
    assert_eq!(
        read(&server, "maps://1024,768/tile.png").await,
        Ok(json!({ "x": "1024", "y": "768", "format": "png" }))
    );
    assert_eq!(
        read(
            &server,
            "repos://ada/relevo/main;rev=42?page=2&q=lambda&lang=en"
        )
        .await,
        Ok(json!({
            "owner": "ada", "repo": "relevo", "branch": "main", "rev": "42",
            "q": "lambda", "page": "2", "lang": "en"
        })),
        "named variables bind in any order"
    );
    assert_eq!(
        read(&server, "repos://ada/relevo?q=x").await,
        Ok(json!({ "owner": "ada", "repo": "relevo", "q": "x" })),
        "variables the URI leaves out are absent"
    );
    let error = read(&server, "repos://ada/relevo?q=x&debug=1")
        .await
        .expect_err("an undeclared query parameter matches nothing");
    assert_eq!(error["code"], -32602);
    assert_eq!(error["data"]["uri"], "repos://ada/relevo?q=x&debug=1");
}

#[tokio::test]
async fn level_four_explode_binds_a_list() {
    let server = serve(
        App::new("expressions", "1")
            .template(template("tree://root{/path*}"))
            .template(template("search://items{?tag*}")),
    );
    assert_eq!(
        read(&server, "tree://root/a/b/c").await,
        Ok(json!({ "path": ["a", "b", "c"] }))
    );
    assert_eq!(
        read(&server, "search://items?tag=red&tag=blue").await,
        Ok(json!({ "tag": ["red", "blue"] }))
    );
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
fn a_template_the_matcher_cannot_honour_is_refused_with_the_template_and_the_reason() {
    for (uri_template, reason) in [
        ("notes://{id:3}", "prefix modifier"),
        ("notes://{id}/{id}", "twice"),
        ("notes://{path*,rev}", "last variable"),
        ("notes://{a}{b}", "ambiguous"),
        ("notes://{+dir}{/file}", "ambiguous"),
        ("notes://{|id}", "reserved"),
        ("notes://{id", "never closed"),
    ] {
        let message = refusal(|| App::new("refuse", "1").template(template(uri_template)));
        assert!(
            message.contains(&format!("{uri_template:?}")) && message.contains(reason),
            "{uri_template}: {message}"
        );
    }
}
