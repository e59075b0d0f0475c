//! `cargo relevo`: the command a Relevo project's author installs once.
//!
//! - `cargo relevo new DIR [--name NAME]`: a project that stands alone (see [`new`]): its own
//!   app, tests, functions, local server, Makefile, README and generated `template.yaml`, on the
//!   one crate `relevo`.
//! - `cargo relevo dev [--port N] [...]`: the project's local server on 127.0.0.1 (see [`dev`]).
//! - `cargo relevo template [--check] [--manifest-path PATH] [--output PATH]` writes the project's
//!   `template.yaml` from `[workspace.metadata.relevo]` (see [`config`] and [`render`]); `--check`
//!   writes nothing and fails, naming the first differing line, when the file is not what the
//!   table gives.
//! - `cargo relevo validate [TEMPLATE] [--tools DIR] [--out PATH]`: the offline deploy check of
//!   any template (see [`validate`]).
//! - `cargo relevo server-json [--url URL] [--namespace NS] [--check] [--output PATH]`: the
//!   project's `server.json` for the MCP Registry, from the app itself (see [`server_json`]).
//! - `cargo relevo token [--tenant T] [--sub S] [--scopes "a b"] [--ttl SECS]`: a token from the
//!   dev issuer of a running local server.
//!
//! Threat model: every verb runs on the operator's machine over the operator's own files; no
//! request from a client reaches it. The template writer writes only the file it names, whole
//! (a temporary file renamed over it), and never reads the environment into its output. The
//! token verb prints a token, never the issuer's private key.

mod config;
mod dev;
mod new;
mod ops;
mod render;
mod server_json;
mod validate;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use relevo_auth::dev_token::{self, TokenRequest};

/// What can stop a verb (usage errors excepted, which exit 2).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("cannot run {what}: {source}")]
    Spawn {
        what: String,
        source: std::io::Error,
    },
    #[error("cargo metadata failed: {0}")]
    Metadata(String),
    #[error("{0} has no [workspace.metadata.relevo] (nor [package.metadata.relevo]) table")]
    NoTable(String),
    #[error("the [workspace.metadata.relevo] table of {0} is wrong: {1}")]
    BadTable(String, serde_json::Error),
    #[error("the [workspace.metadata.relevo] table of {0} is wrong: {1}")]
    BadSetting(String, String),
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("{0} is stale: {1}; run `cargo relevo template`")]
    Stale(String, String),
    #[error("{0} is stale: {1}; run `cargo relevo server-json`")]
    StaleServerJson(String, String),
    #[error("{step} failed ({status})")]
    Step {
        step: String,
        status: std::process::ExitStatus,
    },
    #[error("the deploy check refused {0} finding(s)")]
    Refused(usize),
    #[error("the translated template {path} cannot be read: {source}")]
    Translated {
        path: String,
        source: relevo_template::TemplateError,
    },
    #[error(transparent)]
    Token(#[from] dev_token::TokenError),
    #[error(transparent)]
    New(#[from] new::NewError),
}

const USAGE: &str = "usage: cargo relevo new DIR [--name NAME] [--published]
       cargo relevo dev [--port N] [--routing per-method|single]
       cargo relevo template [--check] [--manifest-path PATH] [--output PATH]
       cargo relevo validate [TEMPLATE] [--tools DIR] [--out PATH]
       cargo relevo server-json [--url URL] [--namespace NS] [--check] [--output PATH]
       cargo relevo token [--tenant T] [--sub S] [--scopes \"a b\"] [--ttl SECS]
       cargo relevo ops [BACKEND] COMMAND [OPTIONS] [--json]   (cargo relevo ops --help)";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo relevo ...` runs `cargo-relevo relevo ...`.
    if args.first().map(String::as_str) == Some("relevo") {
        args.remove(0);
    }
    let Some(verb) = args.first().cloned() else {
        return usage("a verb is required");
    };
    let rest = args.split_off(1);
    let result = match verb.as_str() {
        "new" if rest.iter().any(|a| a == "--help" || a == "-h") => {
            println!("{}", new::HELP);
            Ok(())
        }
        "new" => match new::Args::parse(rest) {
            Ok(args) => new::run(&args),
            Err(problem) => return usage(&problem),
        },
        "dev" => dev::run(rest),
        "template" => match TemplateArgs::parse(rest) {
            Ok(args) => template(&args),
            Err(problem) => return usage(&problem),
        },
        "server-json" => match server_json::Args::parse(rest) {
            Ok(args) => server_json::run(&args),
            Err(problem) => return usage(&problem),
        },
        "validate" => match validate::Args::parse(rest) {
            Ok(args) => validate::run(&args),
            Err(problem) => return usage(&problem),
        },
        "token" => TokenRequest::parse(rest)
            .and_then(|request| request.mint())
            .map_err(CliError::from)
            .map(|token| {
                println!("{token}");
            }),
        "ops" => return ops::run(rest),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => return usage(&format!("unknown verb {other:?}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cargo relevo {verb}: {error}");
            ExitCode::FAILURE
        }
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("cargo relevo: {problem}\n{USAGE}");
    ExitCode::from(2)
}

struct TemplateArgs {
    check: bool,
    manifest: Option<PathBuf>,
    output: Option<PathBuf>,
}

impl TemplateArgs {
    fn parse(args: Vec<String>) -> Result<Self, String> {
        let mut parsed = TemplateArgs {
            check: false,
            manifest: None,
            output: None,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = || {
                args.next()
                    .map(PathBuf::from)
                    .ok_or_else(|| format!("{arg} needs a value"))
            };
            match arg.as_str() {
                "--check" => parsed.check = true,
                "--manifest-path" => parsed.manifest = Some(value()?),
                "--output" => parsed.output = Some(value()?),
                other => return Err(format!("unexpected argument {other:?}")),
            }
        }
        Ok(parsed)
    }
}

/// `cargo relevo template`: writes (or checks) the project's template.
fn template(args: &TemplateArgs) -> Result<(), CliError> {
    let project = config::Project::load(args.manifest.as_deref())?;
    let text = render::render(&project.config);
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| project.root.join("template.yaml"));
    if args.check {
        let current = std::fs::read_to_string(&path).map_err(|source| CliError::Io {
            what: "read",
            path: path.display().to_string(),
            source,
        })?;
        if let Some(difference) = first_difference(&current, &text) {
            return Err(CliError::Stale(path.display().to_string(), difference));
        }
        println!(
            "template: {} is what [workspace.metadata.relevo] gives",
            path.display()
        );
        return Ok(());
    }
    write_whole(&path, &text)?;
    println!(
        "template: wrote {} ({} lines)",
        path.display(),
        text.lines().count()
    );
    Ok(())
}

/// The first line where `current` and `wanted` differ, described; None when they are equal.
fn first_difference(current: &str, wanted: &str) -> Option<String> {
    if current == wanted {
        return None;
    }
    let (mut old, mut new) = (current.lines(), wanted.lines());
    for number in 1.. {
        match (old.next(), new.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) => {
                return Some(format!("line {number} is {a:?}, the table gives {b:?}"));
            }
            (Some(a), None) => {
                return Some(format!(
                    "line {number} ({a:?}) is past the end of what the table gives"
                ));
            }
            (None, Some(b)) => {
                return Some(format!("line {number} is missing; the table gives {b:?}"));
            }
            (None, None) => break,
        }
    }
    Some("the line endings differ".into())
}

/// Writes `text` to `path` through a temporary file renamed over it: readers never see half a file.
fn write_whole(path: &Path, text: &str) -> Result<(), CliError> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let io = |what, source| CliError::Io {
        what,
        path: path.display().to_string(),
        source,
    };
    std::fs::write(&temporary, text).map_err(|source| io("write", source))?;
    std::fs::rename(&temporary, path).map_err(|source| {
        let _ = std::fs::remove_file(&temporary);
        io("replace", source)
    })
}
