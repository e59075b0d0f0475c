//! `cargo relevo ops` runs the framework's operator CLI in any project, with no app hooks: a
//! command over an empty SQLite store succeeds, and `ops reconcile`, which needs the app's hook,
//! fails naming it and writes nothing.

use std::path::PathBuf;
use std::process::{Command, Output};

fn relevo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-relevo"))
        .arg("relevo")
        .args(args)
        .env_remove("RELEVO_TABLE")
        .env_remove("RELEVO_STORE")
        .output()
        .expect("cargo-relevo runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// An empty store, as `make run` creates it, in a folder of its own.
fn empty_store(name: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("relevo-cli-ops-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let path = dir.join("store.db");
    relevo_embedded::SqliteStore::open(&path).expect("an empty store");
    let text = path.to_str().expect("utf-8 path").to_string();
    (dir, text)
}

#[test]
fn ledger_report_over_an_empty_store_succeeds() {
    let (dir, db) = empty_store("report");
    let report = relevo(&["ops", "--sqlite", &db, "ledger", "report"]);
    assert!(report.status.success(), "{}", stderr(&report));
    assert!(
        stdout(&report).contains("Ledger: 0 operations"),
        "{}",
        stdout(&report)
    );
    let json = relevo(&["ops", "--sqlite", &db, "ledger", "report", "--json"]);
    assert!(json.status.success(), "{}", stderr(&json));
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
    assert_eq!(value["operations"], 0, "{value:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reconcile_without_the_app_s_hook_fails_naming_it() {
    let (dir, db) = empty_store("reconcile");
    let before = std::fs::read(&db).expect("the store");
    let refused = relevo(&["ops", "--sqlite", &db, "reconcile", "X", "--tenant", "t"]);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "`reconcile` alone is no command: {}",
        stderr(&refused)
    );
    let refused = relevo(&[
        "ops",
        "--sqlite",
        &db,
        "ops",
        "reconcile",
        "X",
        "--tenant",
        "t",
    ]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused)
            .starts_with("cargo relevo ops: error: this operator CLI has no reconcile hook"),
        "{}",
        stderr(&refused)
    );
    assert!(
        stderr(&refused).contains("run the app's own ops binary"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(stdout(&refused), "", "nothing printed");
    assert_eq!(
        std::fs::read(&db).expect("the store"),
        before,
        "nothing written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ops_help_names_cargo_relevo_ops() {
    let help = relevo(&["ops", "--help"]);
    assert!(help.status.success(), "{}", stderr(&help));
    assert!(
        stdout(&help).contains("\n  cargo relevo ops [BACKEND] COMMAND"),
        "{}",
        stdout(&help)
    );
    let usage = relevo(&["help"]);
    assert!(
        stdout(&usage).contains("cargo relevo ops"),
        "{}",
        stdout(&usage)
    );
}
