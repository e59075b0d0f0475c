//! MCP 2026-07-28, "Transports" → Streamable HTTP → Server Validation: "When validating
//! integer parameter values, servers **SHOULD** compare the header value and the body value
//! numerically rather than as strings (e.g., `42.0` and `42` are considered equal)", and a
//! header that does not match its body value **MUST** be rejected with `400 Bad Request` and
//! `-32020` (`HeaderMismatch`). Schema Extension (and "Tools" → x-mcp-header): an annotation
//! "**MUST** only be applied to parameters with primitive types (integer, string, boolean) …
//! Integer values **MUST** be within the safe range for JavaScript (−2^53+1 to 2^53−1)".
//!
//! Checked through the validation ladder (`Ladder::validate`, rung 5) with an annotated
//! integer argument. Numerically means exactly: the values are compared as integers, never
//! rounded through a double, so `9007199254740990.9999999999` does not equal
//! `9007199254740991`, while `42.0` and `4.2e1` equal `42`. The safe range is about values, so
//! it is enforced at call time: an integer argument outside ±(2^53 − 1) is refused 400 / -32020
//! whatever its header says (a JavaScript client cannot mirror it faithfully, so a header and
//! the body could disagree unseen).

use bytes::Bytes;
use relevo_protocol::ladder::{Ladder, Validated};
use relevo_protocol::{App, Handler, OriginPolicy, Route, Tool, handler};
use serde_json::{Value, json};

fn never() -> Handler {
    handler(|_| async { unreachable!("never called") })
}

/// Runs a `tools/call` whose integer argument `n` (mirrored into `Mcp-Param-N`) is the JSON
/// text `n`, with `header` as that header: `Ok` when the ladder lets it through, else the
/// status and the JSON-RPC code.
fn call(n: &str, header: &str) -> Result<(), (u16, i32, String)> {
    let app = App::new("integers", "1").tool(Tool::new(
        "count",
        "Counts.",
        json!({
            "type": "object",
            "properties": { "n": { "type": "integer", "x-mcp-header": "N" } }
        }),
        never(),
    ));
    let policy = OriginPolicy::localhost();
    let ladder = Ladder {
        policy: &policy,
        max_body_bytes: 1 << 20,
        app: &app,
        route: Route::All,
        legacy: false,
    };
    // Written by hand so the number's text reaches the server exactly as given.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"count","arguments":{{"n":{n}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    assert!(serde_json::from_str::<Value>(&body).is_ok(), "{body}");
    let request = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "count")
        .header("mcp-param-n", header)
        .body(Bytes::from(body))
        .expect("a request");
    match ladder.validate(&request) {
        Ok(Validated::Request(_)) => Ok(()),
        Ok(other) => panic!("not a request: {other:?}"),
        Err(rejection) => Err((
            rejection.error.status().as_u16(),
            rejection.error.code(),
            rejection.error.to_string(),
        )),
    }
}

fn assert_mismatch(n: &str, header: &str) {
    let Err((status, code, message)) = call(n, header) else {
        panic!("body {n}, header {header}: the ladder let it through");
    };
    assert_eq!(
        (status, code),
        (400, -32020),
        "body {n}, header {header}: {message}"
    );
}

#[test]
fn equal_integers_match_whatever_their_spelling() {
    for (n, header) in [
        ("42", "42"),
        ("42", "42.0"),
        ("42.0", "42"),
        ("42", "4.2e1"),
        ("-7", "-7"),
        ("0", "-0"),
        ("9007199254740991", "9007199254740991"),
        ("-9007199254740991", "-9007199254740991.000"),
    ] {
        assert_eq!(call(n, header), Ok(()), "body {n}, header {header}");
    }
}

#[test]
fn integers_a_double_cannot_tell_apart_still_differ() {
    assert_mismatch("9007199254740991", "9007199254740990.9999999999");
    assert_mismatch("9007199254740990", "9007199254740989.9999999999");
    assert_mismatch("-9007199254740991", "-9007199254740991.00000000001");
    assert_mismatch("42", "42.5");
    assert_mismatch("42", "forty-two");
}

#[test]
fn integers_outside_the_js_safe_range_are_refused() {
    // The issue's pair: a double rounds both to 2^53, so they used to compare equal.
    assert_mismatch("9007199254740992", "9007199254740993");
    assert_mismatch("9007199254740993", "9007199254740993");
    assert_mismatch("9007199254740992", "9007199254740992");
    assert_mismatch("-9007199254740992", "-9007199254740992");
    assert_mismatch("18446744073709551615", "18446744073709551615");
    assert_mismatch("1e300", "1e300");
}
