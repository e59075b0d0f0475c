//! The metadata half of `make package`: every workspace crate not marked `publish = false` carries
//! what crates.io needs, so that `cargo package` (the other half, `infra/scripts/package.sh`) and a
//! later `cargo publish` do not stop on a missing field one crate at a time.
//!
//! Data-driven: the crates come from `cargo metadata --no-deps`, so a crate added to the workspace
//! is checked the day it is added, and stops being checked only by saying `publish = false`.
//!
//! Invariants, per publishable crate (a [`Finding`] for each one broken):
//! - a non-empty description, a license (SPDX `license` or a `license-file`), an `https://`
//!   repository, a readme that exists, 1–5 keywords in crates.io's form, at least one category and
//!   each from [`CATEGORIES`] (the crates.io slugs this project may use), a rust-version, and a
//!   version other than `0.0.0`;
//! - every path dependency it builds with (normal or build) also carries a version and is itself
//!   publishable; a path dev-dependency either has no version (cargo drops it from the package) or
//!   points to a publishable crate (else the packaged manifest names a crate no registry has);
//! - the workspace root holds `LICENSE`.
//!
//! Threat model: the input is this repository's own manifests, as cargo reads them; nothing here
//! reads a secret or the network (`cargo metadata --no-deps --offline`), and the output names only
//! crates, fields and paths of the workspace.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

/// The crates.io category slugs this project's crates may name (a checked subset of
/// <https://crates.io/category_slugs>; add a slug here only after finding it on that list).
pub const CATEGORIES: &[&str] = &[
    "api-bindings",
    "asynchronous",
    "authentication",
    "command-line-utilities",
    "database",
    "development-tools",
    "development-tools::cargo-plugins",
    "development-tools::testing",
    "network-programming",
    "web-programming",
    "web-programming::http-server",
];

/// The subset of `cargo metadata --format-version 1` this check reads.
#[derive(Debug, Deserialize)]
pub struct Metadata {
    pub packages: Vec<Package>,
    pub workspace_members: Vec<String>,
    pub workspace_root: PathBuf,
}

#[derive(Debug, Deserialize)]
pub struct Package {
    pub name: String,
    pub id: String,
    pub version: String,
    pub description: Option<String>,
    pub license: Option<String>,
    pub license_file: Option<String>,
    pub repository: Option<String>,
    pub readme: Option<String>,
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub categories: Vec<String>,
    pub rust_version: Option<String>,
    /// `None`: any registry; `Some([])`: `publish = false`.
    pub publish: Option<Vec<String>>,
    pub manifest_path: PathBuf,
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
}

#[derive(Debug, Deserialize)]
pub struct Dependency {
    pub name: String,
    pub req: String,
    /// `None` for a normal dependency, `"dev"` or `"build"`.
    pub kind: Option<String>,
    pub path: Option<PathBuf>,
}

impl Package {
    pub fn is_publishable(&self) -> bool {
        self.publish
            .as_ref()
            .is_none_or(|registries| !registries.is_empty())
    }

    fn dir(&self) -> &Path {
        self.manifest_path.parent().unwrap_or(Path::new("."))
    }
}

/// What a publishable crate lacks; its `Display` is the line `make package` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    NoDescription,
    NoLicense,
    NoRepository,
    NoReadme,
    ReadmeMissing(PathBuf),
    KeywordCount(usize),
    BadKeyword(String),
    NoCategory,
    UnknownCategory(String),
    NoRustVersion,
    PlaceholderVersion,
    DependencyWithoutVersion(String),
    DependencyNotPublishable(String),
    /// Only for the workspace itself: no `LICENSE` at its root.
    NoLicenseFile(PathBuf),
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::NoDescription => write!(f, "no description"),
            Finding::NoLicense => write!(f, "no license (license.workspace = true)"),
            Finding::NoRepository => {
                write!(f, "no https:// repository (repository.workspace = true)")
            }
            Finding::NoReadme => write!(f, "no readme (readme.workspace = true)"),
            Finding::ReadmeMissing(path) => write!(f, "readme {} does not exist", path.display()),
            Finding::KeywordCount(n) => write!(f, "{n} keywords; crates.io takes 1 to 5"),
            Finding::BadKeyword(word) => {
                write!(
                    f,
                    "keyword {word:?}: crates.io takes up to 20 ASCII letters, digits, '-', '_' or '+', first a letter"
                )
            }
            Finding::NoCategory => write!(f, "no category (categories.workspace = true)"),
            Finding::UnknownCategory(slug) => {
                write!(
                    f,
                    "category {slug:?} is not one of the crates.io slugs in relevo_package_check::CATEGORIES"
                )
            }
            Finding::NoRustVersion => write!(f, "no rust-version (rust-version.workspace = true)"),
            Finding::PlaceholderVersion => {
                write!(f, "version 0.0.0 is a placeholder, not a release")
            }
            Finding::DependencyWithoutVersion(dep) => {
                write!(
                    f,
                    "path dependency {dep} has no version (give it one beside `path` in [workspace.dependencies])"
                )
            }
            Finding::DependencyNotPublishable(dep) => {
                write!(
                    f,
                    "depends on {dep}, which is publish = false, so its package could never build from crates.io"
                )
            }
            Finding::NoLicenseFile(path) => write!(f, "{} does not exist", path.display()),
        }
    }
}

/// One finding about one crate (or, for [`Finding::NoLicenseFile`], about the workspace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub package: String,
    pub finding: Finding,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.package, self.finding)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("could not run cargo metadata")]
    Spawn(#[source] std::io::Error),
    #[error("cargo metadata failed: {stderr}")]
    Failed { stderr: String },
    #[error("cargo metadata printed what this check cannot read")]
    Parse(#[source] serde_json::Error),
}

/// `cargo metadata --no-deps --offline` of the workspace whose root manifest is `manifest`.
pub fn load(manifest: &Path) -> Result<Metadata, LoadError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .map_err(LoadError::Spawn)?;
    if !output.status.success() {
        return Err(LoadError::Failed {
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    serde_json::from_slice(&output.stdout).map_err(LoadError::Parse)
}

/// The workspace members not marked `publish = false`, in name order.
pub fn publishable(metadata: &Metadata) -> Vec<&Package> {
    let mut packages: Vec<&Package> = members(metadata).filter(|p| p.is_publishable()).collect();
    packages.sort_by(|a, b| a.name.cmp(&b.name));
    packages
}

fn members(metadata: &Metadata) -> impl Iterator<Item = &Package> {
    let ids: BTreeSet<&str> = metadata
        .workspace_members
        .iter()
        .map(String::as_str)
        .collect();
    metadata
        .packages
        .iter()
        .filter(move |p| ids.contains(p.id.as_str()))
}

/// Every finding, crate by crate in name order; empty when the workspace is ready to package.
pub fn check(metadata: &Metadata) -> Vec<Problem> {
    let mut problems = Vec::new();
    let license = metadata.workspace_root.join("LICENSE");
    if !license.is_file() {
        problems.push(Problem {
            package: "workspace".into(),
            finding: Finding::NoLicenseFile(license),
        });
    }
    for package in publishable(metadata) {
        for finding in check_package(metadata, package) {
            problems.push(Problem {
                package: package.name.clone(),
                finding,
            });
        }
    }
    problems
}

fn check_package(metadata: &Metadata, package: &Package) -> Vec<Finding> {
    let mut findings = Vec::new();
    if package
        .description
        .as_deref()
        .is_none_or(|d| d.trim().is_empty())
    {
        findings.push(Finding::NoDescription);
    }
    if package
        .license
        .as_deref()
        .is_none_or(|l| l.trim().is_empty())
        && package.license_file.is_none()
    {
        findings.push(Finding::NoLicense);
    }
    if !package
        .repository
        .as_deref()
        .is_some_and(|r| r.starts_with("https://"))
    {
        findings.push(Finding::NoRepository);
    }
    match &package.readme {
        None => findings.push(Finding::NoReadme),
        Some(readme) => {
            let path = package.dir().join(readme);
            if !path.is_file() {
                findings.push(Finding::ReadmeMissing(path));
            }
        }
    }
    if !(1..=5).contains(&package.keywords.len()) {
        findings.push(Finding::KeywordCount(package.keywords.len()));
    }
    for keyword in package.keywords.iter().filter(|k| !is_keyword(k)) {
        findings.push(Finding::BadKeyword(keyword.clone()));
    }
    if package.categories.is_empty() {
        findings.push(Finding::NoCategory);
    }
    for slug in package
        .categories
        .iter()
        .filter(|c| !CATEGORIES.contains(&c.as_str()))
    {
        findings.push(Finding::UnknownCategory(slug.clone()));
    }
    if package.rust_version.is_none() {
        findings.push(Finding::NoRustVersion);
    }
    if package.version == "0.0.0" {
        findings.push(Finding::PlaceholderVersion);
    }
    for dependency in &package.dependencies {
        let Some(path) = &dependency.path else {
            continue;
        };
        let versioned = dependency.req != "*";
        let dev = dependency.kind.as_deref() == Some("dev");
        if !versioned && !dev {
            findings.push(Finding::DependencyWithoutVersion(dependency.name.clone()));
        }
        // An unversioned dev-dependency is dropped from the package, so only a kept one must resolve.
        let target = members(metadata).find(|p| p.dir() == path.as_path());
        if (versioned || !dev) && target.is_none_or(|t| !t.is_publishable()) {
            findings.push(Finding::DependencyNotPublishable(dependency.name.clone()));
        }
    }
    findings
}

/// crates.io's keyword form: at most 20 characters, ASCII letters, digits, `-`, `_` or `+`,
/// starting with a letter.
fn is_keyword(keyword: &str) -> bool {
    keyword.len() <= 20
        && keyword.starts_with(|c: char| c.is_ascii_alphabetic())
        && keyword
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+'))
}
