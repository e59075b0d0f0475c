//! What a project's debug build links: the facade's default features, the local server and the
//! testkit compile no AWS SDK, no example app, no deployment-template code and no Lambda emulator.

use std::process::Command;

/// Crate names that must not be in the normal dependency tree of a user's local build.
const FORBIDDEN: &[&str] = &[
    "aws-",
    "relevo-app",
    "relevo-template",
    "relevo-gateway",
    "relevo-lambda",
];

fn tree(package: &str, features: &[&str]) -> String {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            package,
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .args(features.iter().flat_map(|feature| ["--features", feature]))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn assert_links_none_of_the_forbidden(package: &str) {
    let tree = tree(package, &[]);
    assert!(
        tree.lines()
            .next()
            .is_some_and(|root| root.starts_with(package)),
        "{tree}"
    );
    let found: Vec<&str> = tree
        .lines()
        .filter(|line| FORBIDDEN.iter().any(|name| line.starts_with(name)))
        .collect();
    assert!(found.is_empty(), "{package} links {found:?}");
}

#[test]
fn the_facade_with_default_features_links_no_aws_sdk_and_no_example_app() {
    assert_links_none_of_the_forbidden("relevo");
}

#[test]
fn the_local_server_links_no_aws_sdk_and_no_example_app() {
    assert_links_none_of_the_forbidden("relevo-local");
}

#[test]
fn the_testkit_links_no_aws_sdk_and_no_example_app() {
    assert_links_none_of_the_forbidden("relevo-testkit");
}

#[test]
fn the_lambda_feature_is_what_brings_the_aws_sdk_in() {
    let tree = tree("relevo", &["lambda"]);
    assert!(
        tree.lines()
            .any(|line| line.starts_with("aws-sdk-dynamodb ")),
        "{tree}"
    );
    assert!(
        tree.lines().any(|line| line.starts_with("relevo-lambda ")),
        "{tree}"
    );
}
