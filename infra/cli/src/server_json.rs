//! `cargo relevo server-json [--url URL] [--namespace NS] [--check] [--output PATH]`: the
//! project's `server.json` for the MCP Registry, written beside `template.yaml` (or `--check`ed
//! against it, failing on the first differing line).
//!
//! The document is the app's own: the verb runs the table's `local-server` binary with
//! `--server-json`, which builds the app as it would to serve it and prints
//! [`relevo_protocol::card::server_json`] — the identity `server/discover` announces and the
//! server card publishes, never a second copy kept by hand. `--url` (the public MCP endpoint,
//! `RELEVO_PUBLIC_URL`) and `--namespace` (`RELEVO_SERVER_NAMESPACE`, such as `io.github.you`)
//! are passed to it in its environment; without `--url` the environment's value is used.
//!
//! Threat model: runs the project's own binary on the operator's machine; the document holds
//! the app's public identity and the URL given, nothing from the rest of the environment.

use std::process::{Command, Stdio};

use crate::config::Project;
use crate::{CliError, first_difference, write_whole};

/// The verb's arguments.
pub struct Args {
    url: Option<String>,
    namespace: Option<String>,
    check: bool,
    output: Option<std::path::PathBuf>,
}

impl Args {
    pub fn parse(args: Vec<String>) -> Result<Self, String> {
        let mut parsed = Args {
            url: None,
            namespace: None,
            check: false,
            output: None,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--check" => parsed.check = true,
                "--url" => parsed.url = Some(value()?),
                "--namespace" => parsed.namespace = Some(value()?),
                "--output" => parsed.output = Some(value()?.into()),
                other => return Err(format!("unexpected argument {other:?}")),
            }
        }
        Ok(parsed)
    }
}

/// Writes (or checks) the project's `server.json`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let project = Project::load(None)?;
    let server = &project.config.local_server;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&project.root)
        .args([
            "run",
            "--quiet",
            "-p",
            &server.package,
            "--bin",
            &server.bin,
            "--",
            "--server-json",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(url) = &args.url {
        command.env("RELEVO_PUBLIC_URL", url);
    }
    if let Some(namespace) = &args.namespace {
        command.env("RELEVO_SERVER_NAMESPACE", namespace);
    }
    let output = command.output().map_err(|source| CliError::Spawn {
        what: "cargo run".into(),
        source,
    })?;
    if !output.status.success() {
        return Err(CliError::Step {
            step: format!("{} --server-json", server.bin),
            status: output.status,
        });
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| project.root.join("server.json"));
    if args.check {
        let current = std::fs::read_to_string(&path).map_err(|source| CliError::Io {
            what: "read",
            path: path.display().to_string(),
            source,
        })?;
        if let Some(difference) = first_difference(&current, &text) {
            return Err(CliError::StaleServerJson(
                path.display().to_string(),
                difference,
            ));
        }
        println!("server-json: {} is what the app gives", path.display());
        return Ok(());
    }
    write_whole(&path, &text)?;
    println!("server-json: wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_and_unknown_ones_are_refused() {
        let args = Args::parse(
            [
                "--url",
                "https://h.example/mcp",
                "--namespace",
                "io.github.me",
                "--check",
            ]
            .map(String::from)
            .to_vec(),
        )
        .unwrap_or_else(|problem| panic!("{problem}"));
        assert_eq!(args.url.as_deref(), Some("https://h.example/mcp"));
        assert_eq!(args.namespace.as_deref(), Some("io.github.me"));
        assert!(args.check && args.output.is_none());
        assert!(Args::parse(vec!["--url".into()]).is_err());
        assert!(Args::parse(vec!["--bogus".into()]).is_err());
    }
}
