//! Skills extension (SEP-2640), "Getting a Skill": "A server declaring this extension **MUST**
//! implement the `skills/get` method, which returns the entry for a single skill named by the
//! URI of its `SKILL.md`"; "If the URI does not identify a skill the server serves, the server
//! **MUST** return error `-32602` (Invalid params)"; "The result carries no pagination cursor";
//! the `skill` object is "identical in shape and meaning to an entry of `skills/list`".

mod skills_common;

use serde_json::json;
use skills_common::*;

#[tokio::test]
async fn skills_get_answers_the_same_entry_as_the_listing() {
    let server = server(app(), 100, true);
    let uri = "skill://pdf-processing/SKILL.md";
    let (status, got) = call(&server, "", "skills/get", json!({ "uri": uri })).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["result"]["resultType"], "complete");
    assert_eq!(got["result"].get("nextCursor"), None);
    let (_, listed) = call(&server, "", "skills/list", json!({})).await;
    let entry = listed["result"]["skills"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["uri"] == uri))
        .expect("listed");
    assert_eq!(&got["result"]["skill"], entry);
}

#[tokio::test]
async fn skills_get_of_an_unserved_uri_is_invalid_params() {
    let server = server(app(), 100, true);
    for uri in [
        "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md",
        "skill://pdf-processing/references/FORMS.md",
        "skill://pdf-processing",
    ] {
        let (_, reply) = call(&server, "", "skills/get", json!({ "uri": uri })).await;
        assert_eq!(reply["error"]["code"], -32602, "{uri}: {reply}");
    }
    let (_, reply) = call(&server, "", "skills/get", json!({})).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}
