//! The table `cargo relevo template` reads: `[workspace.metadata.relevo]` of the workspace's root
//! `Cargo.toml` (or `[package.metadata.relevo]` of a single-package project), read through
//! `cargo metadata`, so TOML is parsed by the cargo the user already runs.
//!
//! Every key but `name` and `description` has a default (the values this repository deploys);
//! an unknown key is refused, so a typo is an error, not a silently ignored setting.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::CliError;

/// The whole table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    /// The app's name: the first word of the template's Description.
    pub name: String,
    /// The rest of the Description; its line breaks are kept.
    pub description: String,
    #[serde(default)]
    pub parts: Parts,
    #[serde(default)]
    pub wording: Wording,
    #[serde(default)]
    pub memory: Memory,
    #[serde(default)]
    pub timeouts: Timeouts,
    #[serde(default)]
    pub quotas: Quotas,
    #[serde(default)]
    pub alarms: Alarms,
    /// What `cargo relevo dev` runs (`cargo run -p PACKAGE --bin BIN`).
    #[serde(default)]
    pub local_server: LocalServer,
}

/// The project's local server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LocalServer {
    pub package: String,
    pub bin: String,
}

impl Default for LocalServer {
    fn default() -> Self {
        LocalServer {
            package: "local".into(),
            bin: "local".into(),
        }
    }
}

/// Which optional parts the stack has.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Parts {
    /// Durable jobs: the work queue, its dead-letter queue, the worker and the reconciler.
    pub jobs: bool,
    /// The app's pages beside `/mcp` (the `pages` function).
    pub pages: bool,
    /// Front door A: a custom domain whose routing rules send each method to its own function.
    pub per_method_front_door: bool,
}

impl Default for Parts {
    fn default() -> Self {
        Parts {
            jobs: true,
            pages: true,
            per_method_front_door: true,
        }
    }
}

/// The app's own words in the template.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Wording {
    /// The pages function's Description.
    pub pages: String,
    /// The example in the RatePerTool parameter's Description (`NAME:LIMIT/SECS,...`).
    pub rate_per_tool_example: String,
}

impl Default for Wording {
    fn default() -> Self {
        Wording {
            pages: "The app's pages beside /mcp.".into(),
            rate_per_tool_example: "my_tool:30/60,*:120/60".into(),
        }
    }
}

/// Function memory, MB.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Memory {
    /// Every function's (Globals).
    pub default: u32,
    /// The functions that only serve small documents (well-known, pages).
    pub small: u32,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            default: 256,
            small: 128,
        }
    }
}

/// Timeouts, seconds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Timeouts {
    /// Buffered functions (under the integrations' 29/30 s).
    pub buffered: u32,
    /// The streamed tools/call function (and its REST integration).
    pub tools_call: u32,
    /// The other streamed functions: subscriptions/listen and the catch-all.
    pub streaming: u32,
    /// How long one listen stream stays open (under `streaming`).
    pub listen_max: u32,
    /// How long a 2025-11-25 confirmation may wait (under `streaming`).
    pub legacy_input_wait: u32,
    /// The worker (the WorkerTimeout parameter's default).
    pub worker: u32,
    /// The work queue's visibility (WorkQueueVisibility's default; at least 6 × worker).
    pub queue_visibility: u32,
    /// The reconciler.
    pub reconciler: u32,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            buffered: 25,
            tools_call: 120,
            streaming: 300,
            listen_max: 270,
            legacy_input_wait: 240,
            worker: 120,
            queue_visibility: 720,
            reconciler: 60,
        }
    }
}

/// Quota and throttle defaults (parameters a deploy may override).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Quotas {
    pub rate_per_tenant: String,
    pub rate_per_tool: String,
    pub throttling_rate: u32,
    pub throttling_burst: u32,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            rate_per_tenant: "1200/60".into(),
            rate_per_tool: String::new(),
            throttling_rate: 100,
            throttling_burst: 200,
        }
    }
}

/// Alarm thresholds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Alarms {
    /// 5xx answers per 5 minutes.
    pub server_errors: u32,
    /// p99 latency, ms, for 15 minutes.
    pub latency_p99_ms: u32,
    /// Quota refusals per 5 minutes.
    pub throttled: u32,
    /// Seconds a job may wait between queued and claimed.
    pub job_queue_lag_secs: u32,
}

impl Default for Alarms {
    fn default() -> Self {
        Alarms {
            server_errors: 5,
            latency_p99_ms: 5000,
            throttled: 100,
            job_queue_lag_secs: 300,
        }
    }
}

/// The project: where its root is and its table.
#[derive(Debug)]
pub struct Project {
    pub root: PathBuf,
    pub config: Config,
}

impl Project {
    /// Reads the table of the project whose manifest is `manifest` (the nearest `Cargo.toml`
    /// upwards from the current folder when `None`, as cargo finds it).
    pub fn load(manifest: Option<&Path>) -> Result<Project, CliError> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command.args(["metadata", "--no-deps", "--format-version", "1"]);
        if let Some(manifest) = manifest {
            command.arg("--manifest-path").arg(manifest);
        }
        let output = command.output().map_err(|source| CliError::Spawn {
            what: "cargo metadata".into(),
            source,
        })?;
        if !output.status.success() {
            return Err(CliError::Metadata(
                String::from_utf8_lossy(&output.stderr).trim().to_string(),
            ));
        }
        let metadata: serde_json::Value =
            serde_json::from_slice(&output.stdout).map_err(|error| {
                CliError::Metadata(format!("cargo metadata printed no JSON: {error}"))
            })?;
        let root = metadata["workspace_root"]
            .as_str()
            .map(PathBuf::from)
            .ok_or_else(|| CliError::Metadata("cargo metadata names no workspace_root".into()))?;
        Ok(Project {
            config: table(&metadata, &root)?,
            root,
        })
    }
}

/// `[workspace.metadata.relevo]`, else the root package's `[package.metadata.relevo]`.
fn table(metadata: &serde_json::Value, root: &Path) -> Result<Config, CliError> {
    let manifest = root.join("Cargo.toml");
    let from_package = || {
        metadata["packages"]
            .as_array()?
            .iter()
            .find(|package| {
                package["manifest_path"].as_str().map(Path::new) == Some(manifest.as_path())
            })
            .map(|package| package["metadata"]["relevo"].clone())
            .filter(|table| !table.is_null())
    };
    let table = Some(metadata["metadata"]["relevo"].clone())
        .filter(|table| !table.is_null())
        .or_else(from_package);
    let table = table.ok_or_else(|| CliError::NoTable(manifest.display().to_string()))?;
    serde_json::from_value(table)
        .map_err(|error| CliError::BadTable(manifest.display().to_string(), error))
}
