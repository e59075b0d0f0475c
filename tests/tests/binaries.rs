//! What the built function binaries link: the app the deployment names (the example shop here),
//! never the conformance fixtures, which only `relevo-conformance-function` and
//! `relevo-conformance-gateway` carry. Reads the debug binaries `infra/scripts/bins.sh`
//! makes (`make unit` builds them first); a missing binary fails rather than passes.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::PathBuf;

/// Names only the conformance fixtures use, and one only the shop uses.
const FIXTURE_MARKERS: &[&str] = &[
    "test_simple_text",
    "test_elicitation_sep1034_defaults",
    "test://static-binary",
];
const SHOP_MARKER: &str = "Checks out your cart: asks you to confirm the exact total";

fn binary(name: &str) -> Vec<u8> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let path = target.join("debug").join(name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run `infra/scripts/bins.sh` first)",
            path.display()
        )
    })
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    memchr::memmem::find(haystack, needle.as_bytes()).is_some()
}

/// The function binaries: one main per `functions/src/bin/NAME.rs` (the template's binaries,
/// `infra/template/tests/routing.rs` checks).
fn functions() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names: Vec<String> = std::fs::read_dir(root.join("functions/src/bin"))
        .unwrap()
        .map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".rs").unwrap().to_string()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn no_production_function_links_the_conformance_fixtures() {
    let functions = functions();
    assert!(functions.len() >= 18, "{functions:?}");
    for function in &functions {
        let bytes = binary(function);
        for marker in FIXTURE_MARKERS {
            assert!(
                !contains(&bytes, marker),
                "{function} links the conformance fixtures ({marker})"
            );
        }
    }
}

#[test]
fn the_conformance_binaries_carry_the_fixtures_and_not_the_shop() {
    for name in ["relevo-conformance-function", "relevo-conformance-gateway"] {
        let bytes = binary(name);
        assert!(
            FIXTURE_MARKERS
                .iter()
                .all(|marker| contains(&bytes, marker)),
            "{name} lacks the fixtures"
        );
        assert!(!contains(&bytes, SHOP_MARKER), "{name} links the shop");
    }
}

#[test]
fn the_method_functions_serve_the_app_the_workspace_names() {
    for function in ["tools-call", "tools-list", "worker", "mcp"] {
        assert!(
            contains(&binary(function), SHOP_MARKER),
            "{function} does not serve the shop"
        );
    }
}
