//! Skills extension (`io.modelcontextprotocol/skills`, SEP-2640), "Listing Skills" and
//! "Capability Negotiation": "A server that declares this extension **MUST** implement
//! `skills/list`", whose result carries `skills` (each a complete `Skill` entry: `uri`,
//! `frontmatter`, `resources`), and "Pagination mirrors the base protocol's list methods […]
//! An entry is atomic, and a skill's `resources` set is never split across pages". A server
//! declaring the extension "**MUST** also declare the `resources` capability".

mod skills_common;

use serde_json::{Value, json};
use skills_common::*;

#[tokio::test]
async fn discover_declares_the_extension_with_directory_read_and_resources() {
    let server = server(app(), 100, true);
    let (_, reply) = call(&server, "", "server/discover", json!({})).await;
    let capabilities = &reply["result"]["capabilities"];
    assert_eq!(
        capabilities["extensions"]["io.modelcontextprotocol/skills"],
        json!({ "directoryRead": true })
    );
    assert!(capabilities["resources"].is_object(), "{capabilities}");
}

#[tokio::test]
async fn skills_list_answers_every_skill_with_its_frontmatter_verbatim() {
    let server = server(app(), 100, true);
    let (status, reply) = call(&server, "", "skills/list", json!({})).await;
    assert_eq!(status, 200, "{reply}");
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete");
    let skills = result["skills"].as_array().expect("skills");
    let uris: Vec<&str> = skills.iter().filter_map(|s| s["uri"].as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://pdf-processing/SKILL.md"
        ]
    );
    assert_eq!(
        skills[1]["frontmatter"],
        json!({ "name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0", "metadata": { "version": "2.1.0", "pages": 3 } })
    );
    let files: Vec<&str> = skills[1]["resources"]
        .as_array()
        .expect("a manifest")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(
        files,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references/FORMS.md",
            "skill://pdf-processing/templates/invoice.md",
            "skill://pdf-processing/templates/regional/eu-invoice.md",
        ]
    );
}

#[tokio::test]
async fn skills_list_pages_with_signed_cursors_one_whole_entry_at_a_time() {
    let server = server(app(), 1, true);
    let (_, first) = call(&server, "", "skills/list", json!({})).await;
    let page = first["result"]["skills"].as_array().expect("a page");
    assert_eq!(page.len(), 1);
    assert_eq!(page[0]["resources"].as_array().map(Vec::len), Some(1));
    let cursor = first["result"]["nextCursor"].as_str().expect("a next page");
    let (_, second) = call(&server, "", "skills/list", json!({ "cursor": cursor })).await;
    let page = second["result"]["skills"].as_array().expect("a page");
    assert_eq!(page[0]["uri"], "skill://pdf-processing/SKILL.md");
    assert_eq!(page[0]["resources"].as_array().map(Vec::len), Some(4));
    assert_eq!(second["result"].get("nextCursor"), None);
    let (_, forged) = call(&server, "", "skills/list", json!({ "cursor": "AAAA" })).await;
    assert_eq!(forged["error"]["code"], -32602, "{forged}");
}

#[tokio::test]
async fn an_app_without_skills_neither_declares_nor_serves_the_extension() {
    let server = server(relevo_protocol::App::new("none", "1"), 100, true);
    let (_, reply) = call(&server, "", "server/discover", json!({})).await;
    assert_eq!(
        reply["result"]["capabilities"].get("extensions"),
        None::<&Value>
    );
    let (_, reply) = call(&server, "", "skills/list", json!({})).await;
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
}
