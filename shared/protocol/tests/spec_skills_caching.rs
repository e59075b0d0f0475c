//! Skills extension (SEP-2640), "Listing Skills" and "Getting a Skill": `ListSkillsResult` and
//! `GetSkillResult` extend `CacheableResult`, "so `ttlMs` and `cacheScope` are **REQUIRED** […]
//! and carry the same semantics" (MCP 2026-07-28, "Caching": `public` may be shared across
//! callers, `private` may not). Relevo says `public` only when nothing in the result depends on
//! the caller: an open deployment, or no skill in it gated by scopes.

mod skills_common;

use serde_json::json;
use skills_common::*;

#[tokio::test]
async fn an_open_deployment_answers_public_hints() {
    let server = server(app(), 100, true);
    let (_, list) = call(&server, "", "skills/list", json!({})).await;
    assert_eq!(list["result"]["cacheScope"], "public");
    assert!(list["result"]["ttlMs"].is_u64(), "{list}");
    let (_, get) = call(
        &server,
        "",
        "skills/get",
        json!({ "uri": "skill://pdf-processing/SKILL.md" }),
    )
    .await;
    assert_eq!(get["result"]["cacheScope"], "public");
    assert!(get["result"]["ttlMs"].is_u64(), "{get}");
}

#[tokio::test]
async fn results_that_depend_on_the_callers_scopes_are_private() {
    let server = server(app(), 100, false);
    let (_, list) = call(&server, "billing", "skills/list", json!({})).await;
    assert_eq!(list["result"]["cacheScope"], "private", "{list}");
    let (_, gated) = call(
        &server,
        "billing",
        "skills/get",
        json!({ "uri": "skill://acme/billing/refunds/SKILL.md" }),
    )
    .await;
    assert_eq!(gated["result"]["cacheScope"], "private", "{gated}");
    let (_, public) = call(
        &server,
        "",
        "skills/get",
        json!({ "uri": "skill://pdf-processing/SKILL.md" }),
    )
    .await;
    assert_eq!(
        public["result"]["cacheScope"], "public",
        "an ungated skill: {public}"
    );
}

#[tokio::test]
async fn a_listing_without_gated_skills_is_public_even_with_authentication() {
    let app = relevo_protocol::App::new("skills", "1").skill(pdf_skill());
    let server = server(app, 100, false);
    let (_, list) = call(&server, "", "skills/list", json!({})).await;
    assert_eq!(list["result"]["cacheScope"], "public", "{list}");
}
