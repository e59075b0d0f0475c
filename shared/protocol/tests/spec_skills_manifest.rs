//! Skills extension (SEP-2640), "Resources" and "Integrity and Verification": every entry's
//! `resources` "**MUST** be complete", listing `SKILL.md` and every supporting file once, each
//! with "SHA-256 digest of the file's raw bytes, formatted as `sha256:{hex}`" and `size`, "the
//! length in bytes of the file's raw content (the same bytes that `digest` covers)"; "Skill
//! files are read via the standard `resources/read` method", and for the `SKILL.md` resource
//! "`mimeType` **SHOULD** be `text/markdown`", its `name` and `description` "**SHOULD** be set
//! from" the frontmatter.

mod skills_common;

use serde_json::{Value, json};
use skills_common::*;

#[tokio::test]
async fn every_file_carries_the_digest_and_size_of_the_bytes_resources_read_serves() {
    let server = server(app(), 100, true);
    let (_, got) = call(
        &server,
        "",
        "skills/get",
        json!({ "uri": "skill://pdf-processing/SKILL.md" }),
    )
    .await;
    let manifest = got["result"]["skill"]["resources"]
        .as_array()
        .expect("a manifest");
    let expected = [
        ("skill://pdf-processing/SKILL.md", PDF_SKILL_MD),
        ("skill://pdf-processing/references/FORMS.md", FORMS_MD),
        ("skill://pdf-processing/templates/invoice.md", INVOICE_MD),
        (
            "skill://pdf-processing/templates/regional/eu-invoice.md",
            EU_INVOICE_MD,
        ),
    ];
    assert_eq!(manifest.len(), expected.len());
    for (entry, (uri, bytes)) in manifest.iter().zip(expected) {
        assert_eq!(entry["uri"], uri);
        assert_eq!(entry["digest"], sha256(bytes), "{uri}");
        assert_eq!(entry["size"], bytes.len(), "{uri}");
        let (status, read) = call(&server, "", "resources/read", json!({ "uri": uri })).await;
        assert_eq!(status, 200, "{read}");
        let text = read["result"]["contents"][0]["text"]
            .as_str()
            .expect("text");
        assert_eq!(text.as_bytes(), bytes, "{uri}");
        assert_eq!(read["result"]["contents"][0]["mimeType"], "text/markdown");
    }
}

#[tokio::test]
async fn the_skill_md_resource_is_named_and_described_by_its_frontmatter() {
    let server = server(app(), 100, true);
    let (_, listed) = call(&server, "", "resources/list", json!({})).await;
    let resources = listed["result"]["resources"].as_array().expect("resources");
    let skill_md = resources
        .iter()
        .find(|r| r["uri"] == "skill://pdf-processing/SKILL.md")
        .expect("listed");
    assert_eq!(skill_md["name"], "pdf-processing");
    assert_eq!(
        skill_md["description"],
        "Extract, fill, and assemble PDF documents"
    );
    assert_eq!(skill_md["mimeType"], "text/markdown");
    assert!(
        resources
            .iter()
            .any(|r| r["uri"] == "skill://pdf-processing/references/FORMS.md"),
        "every skill file is a resource"
    );
}

#[test]
fn digests_are_computed_once_at_registration() {
    let app = app();
    let skill = app
        .find_skill("skill://pdf-processing/SKILL.md")
        .expect("registered");
    let first = skill.entry() as *const Value;
    let cloned = app.clone();
    let again = cloned
        .find_skill("skill://pdf-processing/SKILL.md")
        .expect("registered");
    assert_eq!(
        first,
        again.entry() as *const Value,
        "the entry is built once and shared"
    );
    assert_eq!(skill.files[0].digest, sha256(PDF_SKILL_MD));
}
