//! `cargo relevo template` against this repository: the checked-in `template.yaml` is what the
//! table in `Cargo.toml` gives, `--check` refuses a stale one naming the line, and a project's
//! own table gives a template of that project (none of the shop's words, only the parts it asked
//! for). Plus `cargo relevo token` against a dev issuer file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

fn relevo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-relevo"))
        .arg("relevo")
        .args(args)
        .output()
        .expect("cargo-relevo runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("relevo-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).expect("scratch folder");
    dir
}

/// A one-package project whose `[package.metadata.relevo]` is `table`.
fn project(name: &str, table: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::write(dir.join("src/lib.rs"), "").expect("lib.rs");
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"scratch\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[package.metadata.relevo]\n{table}"),
    )
    .expect("Cargo.toml");
    dir
}

#[test]
fn the_checked_in_template_is_what_the_table_gives() {
    let manifest = root().join("Cargo.toml");
    let output = relevo(&[
        "template",
        "--check",
        "--manifest-path",
        manifest.to_str().expect("utf-8 path"),
    ]);
    assert!(
        output.status.success(),
        "template.yaml is stale; run `cargo relevo template`:\n{}",
        text(&output)
    );
}

#[test]
fn check_fails_on_a_changed_value_and_names_the_line() {
    let dir = scratch("stale");
    let checked_in = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    assert!(
        checked_in.contains("    MemorySize: 256\n"),
        "the Globals memory moved; update this test"
    );
    let stale = dir.join("template.yaml");
    std::fs::write(
        &stale,
        checked_in.replacen("    MemorySize: 256\n", "    MemorySize: 192\n", 1),
    )
    .expect("write");
    let manifest = root().join("Cargo.toml");
    let output = relevo(&[
        "template",
        "--check",
        "--manifest-path",
        manifest.to_str().expect("utf-8 path"),
        "--output",
        stale.to_str().expect("utf-8 path"),
    ]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    let line = checked_in
        .lines()
        .position(|line| line == "    MemorySize: 256")
        .expect("the line")
        + 1;
    assert!(
        said.contains(&format!("line {line} is \"    MemorySize: 192\"")),
        "{said}"
    );
    assert!(said.contains("\"    MemorySize: 256\""), "{said}");
    assert!(
        std::fs::read_to_string(&stale)
            .expect("still there")
            .contains("MemorySize: 192"),
        "--check writes nothing"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_project_s_table_gives_its_own_template_with_only_the_parts_it_uses() {
    let dir = project(
        "minimal",
        "name = \"Notes\"\ndescription = \"\"\"\nan MCP server for notes.\"\"\"\nparts = { jobs = false, pages = false, per-method-front-door = false }\nmemory = { default = 512 }\n",
    );
    let output = relevo(&[
        "template",
        "--manifest-path",
        dir.join("Cargo.toml").to_str().expect("utf-8 path"),
    ]);
    assert!(output.status.success(), "{}", text(&output));
    let template = std::fs::read_to_string(dir.join("template.yaml")).expect("written");
    assert!(
        template.contains("  Notes: an MCP server for notes.\n"),
        "{template}"
    );
    assert!(template.contains("    MemorySize: 512\n"));
    for absent in [
        "inventory",
        "cart_",
        "WorkQueue",
        "Worker",
        "Approvals",
        "PagesFunction",
        "HasDomain",
        "Rule:",
    ] {
        assert!(
            !template.contains(absent),
            "{absent} in a template that did not ask for it"
        );
    }
    assert!(template.contains("  McpFunction:") && template.contains("  WellKnownFunction:"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_table_with_an_unknown_key_is_refused_and_nothing_is_written() {
    let dir = project(
        "typo",
        "name = \"Notes\"\ndescription = \"notes\"\nmemroy = { default = 512 }\n",
    );
    let output = relevo(&[
        "template",
        "--manifest-path",
        dir.join("Cargo.toml").to_str().expect("utf-8 path"),
    ]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("memroy"), "the error names the key: {said}");
    assert!(!dir.join("template.yaml").exists(), "nothing written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn validate_pins_the_tools_the_repository_installs() {
    let cli =
        std::fs::read_to_string(root().join("infra/cli/src/validate.rs")).expect("validate.rs");
    let scripts =
        std::fs::read_to_string(root().join("infra/scripts/sam-tools.sh")).expect("sam-tools.sh");
    let pins: Vec<&str> = cli
        .split('"')
        .filter(|part| part.contains("==") && !part.contains(' ') && !part.contains('\''))
        .collect();
    assert_eq!(pins.len(), 2, "{pins:?}");
    for pin in pins {
        assert!(scripts.contains(pin), "sam-tools.sh does not pin {pin}");
    }
}

#[test]
fn token_prints_a_token_signed_by_the_dev_issuer() {
    let dir = scratch("token");
    let file = dir.join(".relevo/dev-issuer.json");
    relevo_auth::DevIssuer::generate("http://127.0.0.1:9", "http://127.0.0.1:9/mcp")
        .save(&file)
        .expect("issuer saved");
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-relevo"))
        .args([
            "relevo",
            "token",
            "--tenant",
            "acme",
            "--scopes",
            "notes:read",
        ])
        .env("RELEVO_DEV_ISSUER_FILE", &file)
        .output()
        .expect("runs");
    assert!(output.status.success(), "{}", text(&output));
    let token = String::from_utf8_lossy(&output.stdout).trim().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWS: {token}");
    let missing = Command::new(env!("CARGO_BIN_EXE_cargo-relevo"))
        .args(["relevo", "token"])
        .env("RELEVO_DEV_ISSUER_FILE", dir.join("absent.json"))
        .output()
        .expect("runs");
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing).contains("start the local server first"),
        "{}",
        text(&missing)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
