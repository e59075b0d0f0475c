//! Every event is read as lambda_http 1.3 reads it (its reader is the oracle), and what it
//! refuses or panics on is an error here.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use super::*;
use lambda_http::request::RequestContext;
use lambda_http::{Body, RequestExt};

const REST: &str = include_str!("../../tests/fixtures/apigw-rest-tools-list.json");
const HTTP_API: &str = include_str!("../../tests/fixtures/apigw-http-tools-call.json");

/// A Lambda Function URL's event (payload 2.0, `requestContext` as Lambda documents it).
const FUNCTION_URL: &str = r#"{
  "version": "2.0", "routeKey": "$default", "rawPath": "/mcp", "rawQueryString": "a=1&b=two%20words",
  "cookies": ["c1=v1", "c2=v2"],
  "headers": {"host": "abcdefg.lambda-url.us-east-1.on.aws", "content-type": "application/json",
              "x-forwarded-proto": "https", "accept": "application/json, text/event-stream"},
  "queryStringParameters": {"a": "1", "b": "two words"},
  "requestContext": {"accountId": "anonymous", "apiId": "abcdefg", "domainName": "abcdefg.lambda-url.us-east-1.on.aws",
    "domainPrefix": "abcdefg", "http": {"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1",
    "sourceIp": "203.0.113.10", "userAgent": "agent"}, "requestId": "id-1", "routeKey": "$default",
    "stage": "$default", "time": "07/Dec/2026:03:00:00 +0000", "timeEpoch": 1796612400000},
  "body": "eyJqc29ucnBjIjoiMi4wIn0=", "isBase64Encoded": true
}"#;

/// REST with several values per header and query name, and `headers` disagreeing with
/// `multiValueHeaders` (the single value wins, as lambda_http merges them).
const REST_MULTI: &str = r#"{
  "resource": "/pages/{proxy+}", "path": "/pages/approve", "httpMethod": "GET",
  "headers": {"Host": "api.example.com", "Accept": "text/html", "X-Two": "second"},
  "multiValueHeaders": {"Host": ["api.example.com"], "Accept": ["text/html"], "X-Two": ["first", "second"],
                        "X-Many": ["a", "b"]},
  "queryStringParameters": {"token": "x y", "n": "2"},
  "multiValueQueryStringParameters": {"token": ["x y"], "n": ["1", "2"]},
  "requestContext": {"requestId": "r-2", "stage": "v1", "domainName": "api.example.com", "httpMethod": "GET"},
  "body": null, "isBase64Encoded": false
}"#;

fn ignore_stage() -> bool {
    std::env::var_os("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH").is_some()
}

fn ours(event: &str) -> Result<ProxyRequest, EventError> {
    read(&Bytes::copy_from_slice(event.as_bytes()), ignore_stage())
}

/// The query's pairs in order-free form (lambda_http's come out of a hash map).
fn pairs(uri: &Uri) -> Vec<(String, String)> {
    let mut pairs: Vec<_> = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    pairs.sort();
    pairs
}

fn read_as_lambda_http_does(event: &str) {
    let ours = ours(event).unwrap();
    let theirs = lambda_http::request::from_str(event).unwrap();
    let (request, theirs_uri) = (&ours.request, theirs.uri());
    assert_eq!(request.method(), theirs.method());
    assert_eq!(request.uri().scheme(), theirs_uri.scheme());
    assert_eq!(
        request
            .uri()
            .authority()
            .map(|a| a.as_str().to_ascii_lowercase()),
        theirs_uri.authority().map(|a| a.as_str().to_owned())
    );
    assert_eq!(request.uri().path(), theirs_uri.path());
    assert_eq!(pairs(request.uri()), pairs(theirs_uri));
    assert_eq!(request.headers(), theirs.headers());
    let body = match theirs.body() {
        Body::Empty => Vec::new(),
        Body::Text(text) => text.as_bytes().to_vec(),
        Body::Binary(bytes) => bytes.clone(),
        _ => unreachable!("lambda_http's bodies are these three"),
    };
    assert_eq!(request.body().as_ref(), body.as_slice());
    let (origin, id) = match theirs.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(c)) => (Origin::Rest, c.request_id.clone()),
        Some(RequestContext::ApiGatewayV2(c)) => (Origin::HttpApi, c.request_id.clone()),
        _ => unreachable!("only the two API Gateway payloads are enabled"),
    };
    assert_eq!(ours.origin, origin);
    assert_eq!(ours.request_id, id);
}

#[test]
fn a_rest_event_is_read_as_lambda_http_reads_it() {
    read_as_lambda_http_does(REST);
}

#[test]
fn an_http_api_event_is_read_as_lambda_http_reads_it() {
    read_as_lambda_http_does(HTTP_API);
}

#[test]
fn a_function_url_event_with_cookies_a_query_and_a_base64_body_is_read_as_lambda_http_reads_it() {
    read_as_lambda_http_does(FUNCTION_URL);
    let read = ours(FUNCTION_URL).unwrap();
    assert_eq!(read.request.headers()["cookie"], "c1=v1; c2=v2");
    assert_eq!(read.request.body().as_ref(), br#"{"jsonrpc":"2.0"}"#);
}

#[test]
fn rest_headers_and_queries_with_several_values_are_merged_as_lambda_http_merges_them() {
    read_as_lambda_http_does(REST_MULTI);
    let read = ours(REST_MULTI).unwrap();
    let two: Vec<_> = read.request.headers().get_all("x-two").iter().collect();
    assert_eq!(two, ["second"], "`headers` replaces the name's values");
    assert_eq!(read.request.headers().get_all("x-many").iter().count(), 2);
}

#[test]
fn a_stage_prefixes_the_path_unless_it_is_default_or_told_not_to() {
    let read = read(&Bytes::from_static(REST.as_bytes()), false).unwrap();
    assert_eq!(read.request.uri().path(), "/prod/mcp");
    let read = super::read(&Bytes::from_static(REST.as_bytes()), true).unwrap();
    assert_eq!(read.request.uri().path(), "/mcp");
    let read = super::read(&Bytes::from_static(HTTP_API.as_bytes()), false).unwrap();
    assert_eq!(read.request.uri().path(), "/mcp", "`$default` adds nothing");
}

#[test]
fn dot_segments_and_unusual_bytes_in_a_path_are_normalized_as_a_url_parser_does() {
    for path in [
        "/a/../mcp",
        "/a/%2e%2E/mcp",
        "/x/./y",
        "/with space",
        "/{braces}",
        "/caf\u{e9}",
    ] {
        let event = HTTP_API.replace(r#""rawPath": "/mcp""#, &format!(r#""rawPath": "{path}""#));
        read_as_lambda_http_does(&event);
    }
}

#[test]
fn a_host_no_uri_can_carry_leaves_the_target_relative_for_the_allow_list_to_refuse() {
    let event = HTTP_API.replace(
        "xyz789.execute-api.us-east-1.amazonaws.com\",\n    \"mcp-protocol",
        "bad host\",\n    \"mcp-protocol",
    );
    let read = ours(&event).unwrap();
    assert_eq!(read.request.uri().authority(), None);
    assert_eq!(read.request.uri().path(), "/mcp");
    assert_eq!(read.request.headers()["host"], "bad host");
}

#[test]
fn header_values_and_an_unescaped_body_share_the_events_buffer() {
    let within = |event: &Bytes, bytes: &[u8]| event.as_ptr_range().contains(&bytes.as_ptr());
    let (start, end) = (
        HTTP_API.find(r#""body": "#).unwrap(),
        HTTP_API.find(r#""isBase64Encoded""#).unwrap(),
    );
    let plain = format!(
        r#"{}"body": "plain text", {}"#,
        &HTTP_API[..start],
        &HTTP_API[end..]
    );
    let plain = Bytes::from(plain);
    let read = read(&plain, false).unwrap();
    assert!(within(
        &plain,
        read.request.headers()["content-type"].as_bytes()
    ));
    assert_eq!(read.request.body().as_ref(), b"plain text");
    assert!(within(&plain, read.request.body()));
    let escaped = Bytes::from_static(HTTP_API.as_bytes());
    let read = super::read(&escaped, false).unwrap();
    assert!(
        !within(&escaped, read.request.body()),
        "an escaped body is unescaped into its own"
    );
}

#[test]
fn what_lambda_http_refuses_or_panics_on_is_an_error_not_a_panic() {
    let flagged = HTTP_API.replace(r#""isBase64Encoded": false"#, r#""isBase64Encoded": true"#);
    assert!(matches!(ours(&flagged), Err(EventError::Base64(_))));
    let methodless = HTTP_API.replace(r#""method": "POST","#, "");
    assert!(matches!(ours(&methodless), Err(EventError::Shape(_))));
    let unknown = HTTP_API.replace(r#""method": "POST","#, r#""method": "NOT A METHOD","#);
    assert!(matches!(ours(&unknown), Err(EventError::Method)));
    let bad_header = HTTP_API.replace(r#""mcp-name": "greet""#, r#""mcp-name": "a\u0000b""#);
    assert!(matches!(ours(&bad_header), Err(EventError::Header(name)) if name == "mcp-name"));
    assert!(matches!(ours("[1, 2]"), Err(EventError::Shape(_))));
    assert!(matches!(ours("{}"), Err(EventError::Method)));
}
