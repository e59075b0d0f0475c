//! The package check against a scratch workspace it must pass, then against that workspace with one
//! thing crates.io needs taken away at a time; and against this repository's own workspace.

use std::fs;
use std::path::{Path, PathBuf};

use relevo_package_check::{Finding, Problem, check, load, publishable};

/// Two publishable crates (`core` builds on `util`) and one tool marked `publish = false` that
/// `core` names only as an unversioned dev-dependency, which cargo drops from the package.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("package-check")
            .join(name);
        let _ = fs::remove_dir_all(&root);
        let scratch = Scratch { root };
        scratch.write(
            "Cargo.toml",
            r#"[workspace]
resolver = "3"
members = ["core", "util", "tool"]

[workspace.package]
version = "0.1.0"
edition = "2024"
rust-version = "1.94"
license = "Apache-2.0"
repository = "https://example.invalid/scratch"
readme = "README.md"
keywords = ["mcp", "lambda"]
categories = ["web-programming::http-server"]

[workspace.dependencies]
util = { path = "util", version = "0.1.0" }
tool = { path = "tool" }
"#,
        );
        for name in ["core", "util"] {
            let deps = if name == "core" {
                "[dependencies]\nutil.workspace = true\n\n[dev-dependencies]\ntool.workspace = true\n"
            } else {
                ""
            };
            scratch.write(
                &format!("{name}/Cargo.toml"),
                &format!(
                    "[package]\nname = \"{name}\"\ndescription = \"The {name} crate.\"\nversion.workspace = true\nedition.workspace = true\n\
                     rust-version.workspace = true\nlicense.workspace = true\nrepository.workspace = true\nreadme.workspace = true\n\
                     keywords.workspace = true\ncategories.workspace = true\n\n{deps}"
                ),
            );
            scratch.write(&format!("{name}/src/lib.rs"), "");
        }
        scratch.write(
            "tool/Cargo.toml",
            "[package]\nname = \"tool\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n",
        );
        scratch.write("tool/src/lib.rs", "");
        scratch.write("LICENSE", "Apache License\nVersion 2.0, January 2004\n");
        scratch.write("README.md", "# scratch\n");
        scratch
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.root.join(path);
        fs::create_dir_all(path.parent().expect("a file has a folder")).expect("scratch folder");
        fs::write(path, text).expect("scratch file");
    }

    fn edit(&self, path: &str, from: &str, to: &str) {
        let text = fs::read_to_string(self.root.join(path)).expect("scratch file");
        assert!(text.contains(from), "{path} has no {from:?}");
        self.write(path, &text.replacen(from, to, 1));
    }

    fn problems(&self) -> Vec<(String, Finding)> {
        let metadata =
            load(&self.root.join("Cargo.toml")).expect("cargo metadata of the scratch workspace");
        check(&metadata)
            .into_iter()
            .map(|Problem { package, finding }| (package, finding))
            .collect()
    }
}

fn found(package: &str, finding: Finding) -> (String, Finding) {
    (package.to_string(), finding)
}

#[test]
fn a_complete_workspace_passes_and_only_crates_not_marked_publish_false_are_checked() {
    let scratch = Scratch::new("complete");
    assert_eq!(scratch.problems(), []);
    let metadata = load(&scratch.root.join("Cargo.toml")).expect("metadata");
    let names: Vec<&str> = publishable(&metadata)
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["core", "util"]);
}

#[test]
fn a_crate_without_a_description_is_named() {
    let scratch = Scratch::new("description");
    scratch.edit("util/Cargo.toml", "description = \"The util crate.\"\n", "");
    assert_eq!(scratch.problems(), [found("util", Finding::NoDescription)]);
}

#[test]
fn a_category_crates_io_does_not_list_is_refused() {
    let scratch = Scratch::new("category");
    scratch.edit(
        "Cargo.toml",
        "categories = [\"web-programming::http-server\"]",
        "categories = [\"mcp-servers\"]",
    );
    let bad = || Finding::UnknownCategory("mcp-servers".into());
    assert_eq!(
        scratch.problems(),
        [found("core", bad()), found("util", bad())]
    );
}

#[test]
fn a_workspace_without_a_license_file_is_refused() {
    let scratch = Scratch::new("license");
    fs::remove_file(scratch.root.join("LICENSE")).expect("remove LICENSE");
    assert_eq!(
        scratch.problems(),
        [found(
            "workspace",
            Finding::NoLicenseFile(scratch.root.join("LICENSE"))
        )]
    );
}

#[test]
fn a_path_dependency_without_a_version_is_refused() {
    let scratch = Scratch::new("version");
    scratch.edit(
        "Cargo.toml",
        "util = { path = \"util\", version = \"0.1.0\" }",
        "util = { path = \"util\" }",
    );
    assert_eq!(
        scratch.problems(),
        [found(
            "core",
            Finding::DependencyWithoutVersion("util".into())
        )]
    );
}

#[test]
fn a_dependency_on_a_crate_marked_publish_false_is_refused_even_with_a_version() {
    let scratch = Scratch::new("unpublishable");
    scratch.edit(
        "Cargo.toml",
        "tool = { path = \"tool\" }",
        "tool = { path = \"tool\", version = \"0.1.0\" }",
    );
    // Kept as a versioned dev-dependency, it would be in the packaged manifest with nothing to resolve to.
    assert_eq!(
        scratch.problems(),
        [found(
            "core",
            Finding::DependencyNotPublishable("tool".into())
        )]
    );
    scratch.edit(
        "core/Cargo.toml",
        "[dev-dependencies]",
        "[build-dependencies]",
    );
    assert_eq!(
        scratch.problems(),
        [found(
            "core",
            Finding::DependencyNotPublishable("tool".into())
        )]
    );
}

#[test]
fn keywords_are_held_to_crates_io_count_and_form() {
    let scratch = Scratch::new("keywords");
    scratch.edit(
        "Cargo.toml",
        "keywords = [\"mcp\", \"lambda\"]",
        "keywords = [\"a\", \"b\", \"c\", \"d\", \"e\", \"model context\"]",
    );
    let problems = scratch.problems();
    assert!(
        problems.contains(&found("util", Finding::KeywordCount(6))),
        "{problems:?}"
    );
    assert!(
        problems.contains(&found("util", Finding::BadKeyword("model context".into()))),
        "{problems:?}"
    );
}

#[test]
fn a_readme_that_does_not_exist_and_a_missing_repository_are_refused() {
    let scratch = Scratch::new("readme");
    fs::remove_file(scratch.root.join("README.md")).expect("remove README");
    scratch.edit("util/Cargo.toml", "repository.workspace = true\n", "");
    let problems = scratch.problems();
    assert!(
        problems.contains(&found("util", Finding::NoRepository)),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|(p, f)| p == "core"
            && matches!(f, Finding::ReadmeMissing(path) if path.ends_with("README.md"))),
        "{problems:?}"
    );
}

/// The crates a user's project compiles are publishable and ready; this repository's own tools are not
/// published.
#[test]
fn this_workspace_passes_and_publishes_the_user_facing_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let metadata = load(&root.join("Cargo.toml")).expect("cargo metadata of this workspace");
    let problems: Vec<String> = check(&metadata).iter().map(ToString::to_string).collect();
    assert_eq!(problems, Vec::<String>::new());
    let names: Vec<&str> = publishable(&metadata)
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    for name in [
        "relevo-protocol",
        "relevo-state",
        "relevo-auth",
        "relevo-embedded",
        "relevo-aws",
        "relevo-lambda",
    ] {
        assert!(
            names.contains(&name),
            "{name} is not publishable: {names:?}"
        );
    }
    for name in [
        "relevo-app",
        "relevo-bench",
        "relevo-conformance",
        "relevo-tests",
        "relevo-package-check",
        "mcp",
        "tools-call",
    ] {
        assert!(
            !names.contains(&name),
            "{name} is a tool of this repository, yet publishable"
        );
    }
}
