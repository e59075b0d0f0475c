//! `cargo relevo new`: the project it writes stands alone (one dependency on `relevo` by
//! version, no path of this machine but the unpublished crate's patch in `.cargo/config.toml`,
//! a template that is what its own table gives and names its app, not the shop), and a refused
//! call writes nothing. Building and running the project from an installed `cargo-relevo` is
//! `make starter` (infra/scripts/starter.sh).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn relevo(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-relevo"))
        .current_dir(cwd)
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
    let dir = std::env::temp_dir().join(format!("relevo-new-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            out.extend(files(&path))
        } else {
            out.push(path)
        }
    }
    out.sort();
    out
}

#[test]
fn a_new_project_depends_on_relevo_by_version_and_names_no_path_of_this_machine() {
    let work = scratch("standalone");
    let output = relevo(&work, &["new", "my-tools", "--published"]);
    assert!(output.status.success(), "{}", text(&output));
    let project = work.join("my-tools");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).expect("Cargo.toml");
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        manifest.contains(&format!(
            "relevo = {{ version = \"{version}\", default-features = false }}"
        )),
        "{manifest}"
    );
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the checkout");
    for file in files(&project) {
        let body = std::fs::read_to_string(&file).expect("text");
        assert!(
            !body.contains(checkout.to_str().expect("utf-8")),
            "{} names the checkout",
            file.display()
        );
        assert!(
            !body.contains(work.to_str().expect("utf-8")),
            "{} names where it was made",
            file.display()
        );
        assert!(
            !body.contains("{{"),
            "{} keeps a placeholder",
            file.display()
        );
        assert!(
            !body.contains("path = \"/") && !body.contains("path = \".."),
            "{}: a path dependency",
            file.display()
        );
    }
    for member in ["app/Cargo.toml", "local/Cargo.toml", "functions/Cargo.toml"] {
        let text = std::fs::read_to_string(project.join(member)).expect("a member manifest");
        assert!(text.contains("relevo"), "{member} depends on relevo");
        assert!(
            !text.contains("relevo-"),
            "{member} names an internal crate:\n{text}"
        );
    }
    let app = std::fs::read_to_string(project.join("app/src/lib.rs")).expect("lib.rs");
    assert!(
        app.contains("App::new(\"my-tools\"") && app.contains("JobKind::new(\"confirm\")"),
        "{app}"
    );
    let tests = std::fs::read_to_string(project.join("app/tests/tools.rs")).expect("tests");
    assert!(tests.contains("my_tools::app"), "{tests}");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn while_relevo_is_unpublished_a_new_project_builds_it_from_this_checkout_and_git_ignores_the_patch()
 {
    let work = scratch("unpublished");
    let output = relevo(&work, &["new", "my-tools"]);
    assert!(output.status.success(), "{}", text(&output));
    let project = work.join("my-tools");
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the checkout");
    let config = std::fs::read_to_string(project.join(".cargo/config.toml")).expect("the patch");
    let patched = format!(
        "[patch.crates-io]\nrelevo = {{ path = \"{}\" }}\n",
        checkout.join("shared/relevo").display()
    );
    assert!(config.contains(&patched), "{config}");
    assert!(
        text(&output).contains("not on crates.io yet"),
        "{}",
        text(&output)
    );
    let lock = std::fs::read_to_string(project.join("Cargo.lock")).expect("the checkout's lock");
    let ours = std::fs::read_to_string(checkout.join("Cargo.lock")).expect("Cargo.lock");
    assert_eq!(lock, ours, "the versions this checkout was tested with");
    let ignored = std::fs::read_to_string(project.join(".gitignore")).expect(".gitignore");
    assert!(
        ignored.lines().any(|l| l == "/.cargo/config.toml"),
        "{ignored}"
    );
    for file in files(&project) {
        if file.ends_with(".cargo/config.toml") {
            continue;
        }
        let body = std::fs::read_to_string(&file).expect("text");
        assert!(
            !body.contains(checkout.to_str().expect("utf-8")),
            "{} names the checkout",
            file.display()
        );
    }
    // `make watch` checks tokens against the `make run` on the same PORT, not a fixed one.
    let makefile = std::fs::read_to_string(project.join("Makefile")).expect("Makefile");
    assert!(
        makefile.contains("--env-var RELEVO_AUTH_ISSUER=http://127.0.0.1:$(PORT) ")
            && makefile.contains("--env-var RELEVO_AUTH_AUDIENCE=http://127.0.0.1:$(PORT)/mcp"),
        "{makefile}"
    );
    let published = relevo(&work, &["new", "on-crates-io", "--published"]);
    assert!(published.status.success(), "{}", text(&published));
    assert!(!work.join("on-crates-io/.cargo").exists());
    assert!(!work.join("on-crates-io/Cargo.lock").exists());
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn new_help_says_what_it_makes_and_each_flag() {
    let output = relevo(&scratch("help"), &["new", "--help"]);
    assert!(output.status.success(), "{}", text(&output));
    let help = text(&output);
    for said in ["usage: cargo relevo new DIR", "--name NAME", "--published"] {
        assert!(help.contains(said), "{help}");
    }
}

#[test]
fn its_template_is_what_its_table_gives_and_names_nothing_of_the_shop() {
    let work = scratch("template");
    let output = relevo(&work, &["new", "tables", "--name", "table-desk"]);
    assert!(output.status.success(), "{}", text(&output));
    let project = work.join("tables");
    let check = relevo(&project, &["template", "--check"]);
    assert!(check.status.success(), "{}", text(&check));
    let template = std::fs::read_to_string(project.join("template.yaml")).expect("template.yaml");
    assert!(template.starts_with("# Generated by `cargo relevo template`"));
    assert!(
        template.contains("Description: >-\n  table-desk: ") || template.contains("table-desk:"),
        "the app's name"
    );
    // One log line per request there too: Lambda's START/END/REPORT lines are not ingested.
    assert!(
        template.contains(
            "    LoggingConfig:\n      LogFormat: JSON\n      ApplicationLogLevel: INFO\n      SystemLogLevel: WARN\n"
        ),
        "every function's LoggingConfig"
    );
    for shop in ["cart_checkout", "inventory", "Approvals"] {
        assert!(
            !template.contains(shop),
            "the template names the shop's {shop:?}"
        );
    }
    // Each function the template deploys has its main, and only those.
    let functions = std::fs::read_to_string(project.join("functions/Cargo.toml"))
        .expect("functions/Cargo.toml");
    for line in template
        .lines()
        .filter_map(|line| line.split("Binary: ").nth(1))
    {
        let binary = line.trim_end_matches([' ', '}']);
        assert!(
            functions.contains(&format!("name = \"{binary}\"")),
            "no [[bin]] {binary}"
        );
        assert!(
            project
                .join(format!("functions/src/bin/{binary}.rs"))
                .is_file(),
            "no main for {binary}"
        );
    }
    assert!(
        functions.contains("[package.metadata.lambda.env]"),
        "cargo lambda watch's environment"
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn a_folder_that_is_not_empty_is_refused_and_left_as_it_was() {
    let work = scratch("occupied");
    let occupied = work.join("mine");
    std::fs::create_dir_all(&occupied).expect("folder");
    std::fs::write(occupied.join("notes.txt"), "keep me").expect("a file");
    let output = relevo(&work, &["new", "mine"]);
    assert!(!output.status.success());
    assert!(text(&output).contains("is not empty"), "{}", text(&output));
    assert_eq!(files(&occupied), vec![occupied.join("notes.txt")]);
    assert_eq!(
        std::fs::read_to_string(occupied.join("notes.txt")).expect("kept"),
        "keep me"
    );
    assert_eq!(
        std::fs::read_dir(&work).expect("work").count(),
        1,
        "no staging folder left behind"
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn a_name_that_is_no_package_name_is_refused_and_nothing_is_written() {
    let work = scratch("badname");
    for (dir, name) in [
        ("My Tools", None),
        ("ok", Some("local")),
        ("ok", Some("a\"b")),
        ("ok", Some("Caps")),
    ] {
        let mut args = vec!["new", dir];
        if let Some(name) = name {
            args.extend(["--name", name]);
        }
        let output = relevo(&work, &args);
        assert!(!output.status.success(), "{args:?}");
        assert!(
            text(&output).contains("is not a package name"),
            "{args:?}: {}",
            text(&output)
        );
    }
    assert_eq!(
        std::fs::read_dir(&work).expect("work").count(),
        0,
        "nothing written"
    );
    let _ = std::fs::remove_dir_all(&work);
}
