//! Skills extension (SEP-2640) under the project's one authorization rule (issue 27, "Skills
//! served from the app […] filtered by the caller's scopes like every other surface"): a skill
//! gated by scopes is left out of `skills/list` for a caller without them, and `skills/get`,
//! `resources/read` of its files and `resources/directory/read` of its directories refuse that
//! caller as a gated resource is refused (403 `insufficient_scope`). The extension's own text:
//! "The server answers `skills/get` for a skill it serves" ("Resource Mapping").

mod skills_common;

use serde_json::json;
use skills_common::*;

const GATED: &str = "skill://acme/billing/refunds/SKILL.md";

#[tokio::test]
async fn a_caller_without_the_scope_does_not_see_the_gated_skill() {
    let server = server(app(), 100, false);
    let (_, without) = call(&server, "", "skills/list", json!({})).await;
    let uris: Vec<_> = without["result"]["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .map(|s| s["uri"].clone())
        .collect();
    assert_eq!(uris, [json!("skill://pdf-processing/SKILL.md")]);
    let (_, listed) = call(&server, "", "resources/list", json!({})).await;
    assert!(
        !listed.to_string().contains("acme/billing"),
        "its files are not listed either: {listed}"
    );
    let (_, with) = call(&server, "billing", "skills/list", json!({})).await;
    assert_eq!(with["result"]["skills"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn get_read_and_directory_read_refuse_a_caller_without_the_scope() {
    let server = server(app(), 100, false);
    let probes = [
        ("skills/get", GATED),
        ("resources/read", GATED),
        ("resources/directory/read", "skill://acme/billing/refunds"),
        ("resources/directory/read", "skill://acme"),
    ];
    for (method, uri) in probes {
        let (status, reply) = call(&server, "", method, json!({ "uri": uri })).await;
        assert_eq!(status, 403, "{method} {uri}: {reply}");
        let (status, reply) = call(&server, "billing", method, json!({ "uri": uri })).await;
        assert_eq!(status, 200, "{method} {uri}: {reply}");
    }
}
