//! `package-version NAME` and `stale-packages NAME...`: what `infra/scripts/starter.sh` reads
//! from `cargo metadata --no-deps` (run in the current directory, the workspace root).
//!
//! A package is stale when its tarball (`target/package/NAME-VERSION.crate`, relative to the
//! current directory) is missing or older than any file under the package's folder, folders
//! named `target` left out; symbolic links to files count by their target's time, links to
//! folders are not followed. Stale packages are printed in `cargo metadata`'s order.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use serde::Deserialize;

use crate::XtaskError;

/// One workspace package, as far as these verbs need it.
#[derive(Debug, Deserialize)]
pub struct Package {
    pub name: String,
    pub version: String,
    pub manifest_path: PathBuf,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
}

/// The workspace's packages, from `cargo metadata --no-deps --format-version 1`.
pub fn load() -> Result<Vec<Package>, XtaskError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .map_err(XtaskError::CargoMetadataRun)?;
    if !output.status.success() {
        return Err(XtaskError::CargoMetadataFailed(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ));
    }
    parse(&output.stdout)
}

/// The packages of `cargo metadata`'s JSON.
pub fn parse(json: &[u8]) -> Result<Vec<Package>, XtaskError> {
    let metadata: Metadata =
        serde_json::from_slice(json).map_err(XtaskError::CargoMetadataParse)?;
    Ok(metadata.packages)
}

/// The version of the package named `name`.
pub fn version_of<'a>(packages: &'a [Package], name: &str) -> Result<&'a str, XtaskError> {
    packages
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.version.as_str())
        .ok_or_else(|| XtaskError::NoSuchPackage(name.to_string()))
}

/// The packages among `wanted` whose tarball under `package_dir` is missing or older than a
/// file of theirs, in `packages`' order.
pub fn stale<'a>(packages: &'a [Package], wanted: &[String], package_dir: &Path) -> Vec<&'a str> {
    packages
        .iter()
        .filter(|p| wanted.contains(&p.name))
        .filter(|p| {
            let tarball = package_dir.join(format!("{}-{}.crate", p.name, p.version));
            let built = modified(&tarball).unwrap_or(SystemTime::UNIX_EPOCH);
            p.manifest_path
                .parent()
                .is_some_and(|folder| newer_file(folder, built))
        })
        .map(|p| p.name.as_str())
        .collect()
}

/// Whether a file under `folder` (not under a folder named `target`) changed after `built`.
fn newer_file(folder: &Path, built: SystemTime) -> bool {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return false;
    };
    let mut subfolders = Vec::new();
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            if entry.file_name() != "target" {
                subfolders.push(path);
            }
        } else if path.is_dir() {
            // A link to a folder: listed, not walked.
        } else if modified(&path).is_some_and(|time| time > built) {
            return true;
        }
    }
    subfolders.into_iter().any(|sub| newer_file(&sub, built))
}

/// A file's modification time, following links; `None` when it cannot be read.
fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const METADATA: &str = r#"{"packages":[
        {"name":"relevo","version":"0.1.0","manifest_path":"/x/shared/relevo/Cargo.toml","id":"a"},
        {"name":"relevo-app","version":"0.2.0","manifest_path":"/x/shared/app/Cargo.toml"}
    ],"workspace_root":"/x"}"#;

    #[test]
    fn package_version_reads_the_named_package() {
        let packages = parse(METADATA.as_bytes()).unwrap();
        assert_eq!(version_of(&packages, "relevo-app").unwrap(), "0.2.0");
        assert!(matches!(
            version_of(&packages, "nope"),
            Err(XtaskError::NoSuchPackage(_))
        ));
    }

    /// A scratch folder under the target directory, emptied first.
    fn scratch(name: &str) -> PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/xtask-tests")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn package(dir: &Path, name: &str) -> Package {
        let folder = dir.join(name);
        std::fs::create_dir_all(folder.join("src")).unwrap();
        std::fs::write(folder.join("Cargo.toml"), "").unwrap();
        std::fs::write(folder.join("src/lib.rs"), "").unwrap();
        Package {
            name: name.to_string(),
            version: "1.0.0".to_string(),
            manifest_path: folder.join("Cargo.toml"),
        }
    }

    fn set_time(path: &Path, time: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(time)
            .unwrap();
    }

    #[test]
    fn stale_packages_are_those_without_a_tarball_or_with_newer_files() {
        let dir = scratch("stale");
        let tarballs = dir.join("package");
        std::fs::create_dir_all(&tarballs).unwrap();
        let fresh = package(&dir, "fresh");
        let edited = package(&dir, "edited");
        let unpackaged = package(&dir, "unpackaged");
        let unwanted = package(&dir, "unwanted");
        let past = SystemTime::now() - Duration::from_secs(3600);
        for p in [&fresh, &edited] {
            let folder = p.manifest_path.parent().unwrap();
            set_time(&folder.join("Cargo.toml"), past);
            set_time(&folder.join("src/lib.rs"), past);
            std::fs::write(tarballs.join(format!("{}-1.0.0.crate", p.name)), "").unwrap();
        }
        // Only a file under `target` is newer in `fresh`; `edited` has a newer source file.
        let build = fresh.manifest_path.parent().unwrap().join("target");
        std::fs::create_dir_all(&build).unwrap();
        std::fs::write(build.join("out"), "").unwrap();
        set_time(
            &edited.manifest_path.parent().unwrap().join("src/lib.rs"),
            SystemTime::now() + Duration::from_secs(60),
        );
        let packages = [fresh, edited, unpackaged, unwanted];
        let wanted = ["fresh", "edited", "unpackaged"].map(String::from);
        assert_eq!(
            stale(&packages, &wanted, &tarballs),
            ["edited", "unpackaged"]
        );
    }
}
