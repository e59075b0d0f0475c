//! The README's "Your first tool" shows the code of `docs/first-tool.md`, and only that document's
//! copy is compiled (as a doctest of this crate). This test keeps the two copies equal: the README
//! cannot show code that does not compile.
//!
//! Invariant: the first ```` ```rust ```` block of the README and of `docs/first-tool.md` are the same
//! text, line for line.

use std::path::{Path, PathBuf};

/// The first fenced block whose info string is exactly `rust`, without its fences.
fn first_rust_block(markdown: &str) -> Option<String> {
    let mut lines = markdown.lines();
    lines.by_ref().find(|line| line.trim_end() == "```rust")?;
    let mut block = String::new();
    for line in lines {
        if line.trim_end() == "```" {
            return Some(block);
        }
        block.push_str(line);
        block.push('\n');
    }
    None
}

/// The README: the repository's (two folders up), or the copy `cargo package` puts beside the
/// manifest of a packaged crate.
fn readme() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let packaged = manifest.join("README.md");
    if packaged.exists() {
        packaged
    } else {
        manifest.join("../../README.md")
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[test]
fn readme_first_tool_is_the_compiled_block_of_the_first_tool_document() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/first-tool.md");
    let readme_path = readme();
    let doc = first_rust_block(&read(&doc_path)).expect("docs/first-tool.md has a ```rust block");
    let shown = first_rust_block(&read(&readme_path))
        .expect("the README has a ```rust block (Your first tool)");
    assert!(
        doc == shown,
        "the README's first-tool code differs from docs/first-tool.md (the compiled copy); \
         make them equal.\n--- docs/first-tool.md\n{doc}\n--- README.md\n{shown}"
    );
}

#[test]
fn first_rust_block_is_found_between_its_fences() {
    let markdown = "text\n```sh\nmake run\n```\n```rust\nfn a() {}\n```\n```rust\nfn b() {}\n```\n";
    assert_eq!(first_rust_block(markdown).as_deref(), Some("fn a() {}\n"));
    assert_eq!(first_rust_block("```rust\nfn unclosed() {}\n"), None);
    assert_eq!(first_rust_block("```rust,ignore\nx\n```\n"), None);
}
