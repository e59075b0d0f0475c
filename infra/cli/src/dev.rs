//! `cargo relevo dev [ARGS…]`: the project's local server (`cargo run` of the table's
//! `local-server` package and binary, `local` by default) on 127.0.0.1, with the embedded store
//! and the dev issuer, and the quotas of the project's table unless the environment sets them.
//! `ARGS` go to the server: `--port N`, `--routing per-method|single`, `--inject-dev-token …`.
//!
//! On Unix the command becomes `cargo run` (exec), which becomes the server: one process to stop,
//! and Ctrl-C or SIGTERM reach the server itself.
//!
//! Threat model: the server it starts binds loopback only and its dev issuer's key stays in
//! `.relevo/` (mode 0700); this verb passes no secret of its own.

use std::process::Command;

use crate::CliError;
use crate::config::Project;

pub fn run(args: Vec<String>) -> Result<(), CliError> {
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
        ])
        .args(args);
    let quotas = &project.config.quotas;
    for (variable, value) in [
        ("RELEVO_RATE_PER_TENANT", &quotas.rate_per_tenant),
        ("RELEVO_RATE_PER_TOOL", &quotas.rate_per_tool),
    ] {
        if std::env::var_os(variable).is_none() && !value.is_empty() {
            command.env(variable, value);
        }
    }
    exec(command)
}

#[cfg(unix)]
fn exec(mut command: Command) -> Result<(), CliError> {
    use std::os::unix::process::CommandExt;
    // Returns only when the exec failed.
    let source = command.exec();
    Err(CliError::Spawn {
        what: "cargo run".into(),
        source,
    })
}

#[cfg(not(unix))]
fn exec(mut command: Command) -> Result<(), CliError> {
    let status = command.status().map_err(|source| CliError::Spawn {
        what: "cargo run".into(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(CliError::Step {
            step: "the local server".into(),
            status,
        })
    }
}
