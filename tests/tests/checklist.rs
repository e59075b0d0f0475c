//! The specification checklist (`shared/relevo/docs/specification.md`) names every `spec_*.rs`
//! test file of the repository, and every file it names exists.
//!
//! The pack reads as a checklist only while the table and the files agree: a requirement whose
//! test is added without a row would be checked but not listed, and a row whose file was removed
//! would claim a check that no longer runs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The folders that hold `spec_*.rs` files, relative to the repository root.
const SPEC_FOLDERS: [&str; 2] = ["shared/protocol/tests", "tests/tests"];

const CHECKLIST: &str = "shared/relevo/docs/specification.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `spec_*.rs` file under the spec folders, as a repository-relative path.
fn spec_files(root: &Path) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    for folder in SPEC_FOLDERS {
        let entries = std::fs::read_dir(root.join(folder)).expect("a spec folder exists");
        for entry in entries {
            let name = entry.expect("a readable folder entry").file_name();
            let name = name.to_string_lossy();
            if name.starts_with("spec_") && name.ends_with(".rs") {
                files.insert(format!("{folder}/{name}"));
            }
        }
    }
    files
}

/// Every `spec_*.rs` path the checklist's table names in a code span.
fn listed_files(checklist: &str) -> BTreeSet<String> {
    checklist
        .lines()
        .filter(|line| line.starts_with('|'))
        .flat_map(|line| line.split('`').skip(1).step_by(2))
        .filter(|span| span.ends_with(".rs") && span.contains("/spec_"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_checklist_lists_every_spec_test_file_and_nothing_else() {
    let root = root();
    let checklist = std::fs::read_to_string(root.join(CHECKLIST)).expect("the checklist exists");
    let on_disk = spec_files(&root);
    let listed = listed_files(&checklist);
    assert!(
        !on_disk.is_empty(),
        "no spec_*.rs file found under {SPEC_FOLDERS:?}"
    );
    let unlisted: Vec<_> = on_disk.difference(&listed).collect();
    let missing: Vec<_> = listed.difference(&on_disk).collect();
    assert!(
        unlisted.is_empty(),
        "spec test files without a row in {CHECKLIST}: {unlisted:?}"
    );
    assert!(
        missing.is_empty(),
        "rows of {CHECKLIST} whose test file does not exist: {missing:?}"
    );
}

#[test]
fn the_table_reader_finds_paths_in_code_spans_only() {
    let table = "| a | b | `tests/tests/spec_x.rs` |\n\
                 | c | d | `shared/protocol/tests/spec_y.rs`, `spec_z.rs` |\n\
                 text `tests/tests/spec_w.rs` outside the table\n";
    let listed = listed_files(table);
    let expected: BTreeSet<String> = ["tests/tests/spec_x.rs", "shared/protocol/tests/spec_y.rs"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(listed, expected);
}
