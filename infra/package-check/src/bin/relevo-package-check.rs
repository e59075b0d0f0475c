//! `relevo-package-check [--manifest-path Cargo.toml] [--list]`
//!
//! Checks every workspace crate not marked `publish = false` for what crates.io needs (see
//! `relevo_package_check`). Exit status 1 with one line per finding on stderr; 0 when nothing is
//! missing. With `--list`, a passing check prints the publishable crates' names, one per line, for
//! `cargo package -p …` (`infra/scripts/package.sh`).

use std::path::PathBuf;
use std::process::ExitCode;

use relevo_package_check::{check, load, publishable};

fn main() -> ExitCode {
    let mut manifest = PathBuf::from("Cargo.toml");
    let mut list = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--list" => list = true,
            "--manifest-path" => match args.next() {
                Some(path) => manifest = PathBuf::from(path),
                None => return usage("--manifest-path needs a path"),
            },
            other => return usage(&format!("unexpected argument {other:?}")),
        }
    }
    let metadata = match load(&manifest) {
        Ok(metadata) => metadata,
        Err(error) => {
            eprintln!("package check: {error}");
            return ExitCode::FAILURE;
        }
    };
    let problems = check(&metadata);
    for problem in &problems {
        eprintln!("package check: {problem}");
    }
    let names: Vec<&str> = publishable(&metadata)
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    if !problems.is_empty() {
        eprintln!(
            "package check: {} finding(s) over {} publishable crate(s)",
            problems.len(),
            names.len()
        );
        return ExitCode::FAILURE;
    }
    if list {
        for name in &names {
            println!("{name}");
        }
    } else {
        println!(
            "package check: {} publishable crates ready: {}",
            names.len(),
            names.join(", ")
        );
    }
    ExitCode::SUCCESS
}

fn usage(problem: &str) -> ExitCode {
    eprintln!(
        "relevo-package-check: {problem}\nusage: relevo-package-check [--manifest-path Cargo.toml] [--list]"
    );
    ExitCode::from(2)
}
