//! Skills extension (SEP-2640), "Reading Directories": a server that declares `directoryRead:
//! true` "**MUST** implement `resources/directory/read`" and "**MUST** support the method for
//! every directory within the skill namespaces it serves as individual files"; "The result
//! contains every direct child of the directory. Files carry their ordinary `Resource` metadata
//! and subdirectories are listed as directory resources (`mimeType: \"inode/directory\"`)";
//! "If the URI does not exist, or exists but is not a directory resource, the server **MUST**
//! return error `-32602`"; "Pagination mirrors `resources/list`".

mod skills_common;

use serde_json::{Value, json};
use skills_common::*;

fn uris(reply: &Value) -> Vec<(String, String)> {
    reply["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            (
                r["uri"].as_str().unwrap_or_default().to_string(),
                r["mimeType"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_skill_root_lists_its_direct_children_with_subdirectories_as_directories() {
    let server = server(app(), 100, true);
    let (status, reply) = call(
        &server,
        "",
        "resources/directory/read",
        json!({ "uri": "skill://pdf-processing" }),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["resultType"], "complete");
    let dir = "inode/directory".to_string();
    let md = "text/markdown".to_string();
    assert_eq!(
        uris(&reply),
        [
            ("skill://pdf-processing/SKILL.md".to_string(), md.clone()),
            ("skill://pdf-processing/references".to_string(), dir.clone()),
            ("skill://pdf-processing/templates".to_string(), dir.clone()),
        ]
    );
    let (_, nested) = call(
        &server,
        "",
        "resources/directory/read",
        json!({ "uri": "skill://pdf-processing/templates" }),
    )
    .await;
    assert_eq!(
        uris(&nested),
        [
            (
                "skill://pdf-processing/templates/invoice.md".to_string(),
                md
            ),
            ("skill://pdf-processing/templates/regional".to_string(), dir),
        ]
    );
}

#[tokio::test]
async fn a_file_or_an_unknown_uri_is_not_a_directory() {
    let server = server(app(), 100, true);
    for uri in [
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/nowhere",
        "skill://pdf-processing/",
        "https://example.com/pdf-processing",
    ] {
        let (_, reply) = call(
            &server,
            "",
            "resources/directory/read",
            json!({ "uri": uri }),
        )
        .await;
        assert_eq!(reply["error"]["code"], -32602, "{uri}: {reply}");
    }
}

#[tokio::test]
async fn a_directory_pages_like_resources_list() {
    let server = server(app(), 2, true);
    let params = json!({ "uri": "skill://pdf-processing" });
    let (_, first) = call(&server, "", "resources/directory/read", params.clone()).await;
    assert_eq!(uris(&first).len(), 2);
    let cursor = first["result"]["nextCursor"].as_str().expect("a next page");
    let (_, second) = call(
        &server,
        "",
        "resources/directory/read",
        json!({ "uri": "skill://pdf-processing", "cursor": cursor }),
    )
    .await;
    assert_eq!(uris(&second).len(), 1);
    let (_, other) = call(
        &server,
        "",
        "resources/directory/read",
        json!({ "uri": "skill://pdf-processing/templates", "cursor": cursor }),
    )
    .await;
    assert_eq!(
        other["error"]["code"], -32602,
        "a cursor is bound to its directory: {other}"
    );
}
