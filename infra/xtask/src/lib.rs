//! `relevo-xtask`: what the shell scripts under `infra/scripts/` compute, in Rust.
//!
//! The scripts start servers, run suites and move files; the small computations between those
//! steps (a free port, a fresh state key, the template's function binaries, the conformance
//! verdict, a package's version, which packaged crates are stale, an example tool's lines, a
//! document's curl transcript replayed) live here, one module each,
//! each a pure function over its input where it can be, so they are unit-tested. What must run
//! inside SAM's or moto's Python (`infra/cli/src/sam_translate.py`, `infra/scripts/moto_serial.py`)
//! stays Python, in files of its own.
//!
//! This crate is a developer tool of this repository (`publish = false`): it never ships in a
//! function or a published crate, and it reads only this checkout (the template, the suite's
//! output, `cargo metadata`).

pub mod checks;
pub mod functions;
pub mod metadata;
pub mod port;
pub mod state_key;
pub mod tool_lines;
pub mod transcript;
pub mod verdict;

use std::path::PathBuf;

/// What a verb could not do.
#[derive(Debug, thiserror::Error)]
pub enum XtaskError {
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not bind a port on 127.0.0.1: {0}")]
    Bind(std::io::Error),
    #[error("the operating system's random source failed: {0}")]
    Random(getrandom::Error),
    #[error("could not run cargo metadata: {0}")]
    CargoMetadataRun(std::io::Error),
    #[error("cargo metadata failed: {0}")]
    CargoMetadataFailed(String),
    #[error("cargo metadata printed what this tool cannot read: {0}")]
    CargoMetadataParse(serde_json::Error),
    #[error("no package named {0} in this workspace")]
    NoSuchPackage(String),
    #[error(
        "template {path}: resource {resource} is an AWS::Serverless::Function without a Metadata BuildProperties Binary"
    )]
    FunctionWithoutBinary { path: PathBuf, resource: String },
}
