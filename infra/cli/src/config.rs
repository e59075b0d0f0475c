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
    /// The path prefix the app's pages own (its `Pages::prefix`), routed to the pages function
    /// when `parts.pages` is on.
    #[serde(default = "default_pages_prefix", deserialize_with = "pages_prefix")]
    pub pages_prefix: String,
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
    /// Lambda Managed Instances: every function on a capacity provider of this stack, several
    /// invocations in flight per execution environment. Absent (the default): plain Lambda, and
    /// the template has no trace of it.
    #[serde(default)]
    pub managed_instances: Option<ManagedInstances>,
}

/// `managed-instances = { ... }`: the functions run on EC2 instances a capacity provider manages
/// (AWS Lambda Managed Instances). The binaries must be built with relevo's `managed-instances`
/// feature to serve the invocations Lambda hands them at once.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ManagedInstances {
    /// Invocations in flight per execution environment (`PerExecutionEnvironmentMaxConcurrency`,
    /// 1–1,600; Lambda passes it to the runtime as `AWS_LAMBDA_MAX_CONCURRENCY`).
    pub max_concurrency: u32,
    /// Memory per vCPU of an execution environment, GiB (`ExecutionEnvironmentMemoryGiBPerVCpu`,
    /// 2–8).
    pub memory_gib_per_vcpu: u32,
    /// Every function's memory, MB (at least 2,048: the smallest Managed Instances function is
    /// 2 GB and 1 vCPU).
    pub memory: u32,
    /// Execution environments each function keeps at least / at most (`FunctionScalingConfig`,
    /// 0–15,000); absent: Lambda's defaults.
    pub min_execution_environments: Option<u32>,
    pub max_execution_environments: Option<u32>,
}

/// The smallest memory of a Managed Instances function, MB.
pub const MANAGED_INSTANCES_MIN_MEMORY: u32 = 2048;

impl Default for ManagedInstances {
    fn default() -> Self {
        ManagedInstances {
            max_concurrency: 8,
            memory_gib_per_vcpu: 2,
            memory: MANAGED_INSTANCES_MIN_MEMORY,
            min_execution_environments: None,
            max_execution_environments: None,
        }
    }
}

impl ManagedInstances {
    /// What AWS would refuse in these settings, if anything.
    pub fn problem(&self) -> Option<String> {
        if !(1..=1600).contains(&self.max_concurrency) {
            return Some(format!(
                "managed-instances.max-concurrency {} is outside 1–1600",
                self.max_concurrency
            ));
        }
        if !(2..=8).contains(&self.memory_gib_per_vcpu) {
            return Some(format!(
                "managed-instances.memory-gib-per-vcpu {} is outside 2–8",
                self.memory_gib_per_vcpu
            ));
        }
        if !(MANAGED_INSTANCES_MIN_MEMORY..=32768).contains(&self.memory) {
            return Some(format!(
                "managed-instances.memory {} is outside 2048–32768 MB",
                self.memory
            ));
        }
        for (key, value) in [
            (
                "min-execution-environments",
                self.min_execution_environments,
            ),
            (
                "max-execution-environments",
                self.max_execution_environments,
            ),
        ] {
            if let Some(value) = value.filter(|value| *value > 15_000) {
                return Some(format!(
                    "managed-instances.{key} {value} is outside 0–15000"
                ));
            }
        }
        if let (Some(min), Some(max)) = (
            self.min_execution_environments,
            self.max_execution_environments,
        ) && min > max
        {
            return Some(format!(
                "managed-instances.min-execution-environments {min} is above max-execution-environments {max}"
            ));
        }
        None
    }
}

/// `relevo_protocol::pages::DEFAULT_PREFIX`: an app's pages unless it chose another prefix.
fn default_pages_prefix() -> String {
    "/pages".into()
}

/// A pages prefix is a path the template can hold as written: `/` and one or more segments of
/// letters, digits, `-` and `_`, without a trailing `/`, and not `/mcp` or under it.
fn pages_prefix<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let prefix = String::deserialize(deserializer)?;
    let well_formed = prefix.strip_prefix('/').is_some_and(|path| {
        path.split('/').all(|segment| {
            !segment.is_empty()
                && segment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
    });
    let taken = prefix == "/mcp" || prefix.starts_with("/mcp/");
    if well_formed && !taken {
        Ok(prefix)
    } else {
        Err(serde::de::Error::custom(format!(
            "pages-prefix {prefix:?} is not a path like \"/pages\" (segments of letters, digits, - and _; not /mcp)"
        )))
    }
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
    /// The app's pages beside `/mcp` (the `pages` function), under `pages-prefix`.
    pub pages: bool,
    /// Front door A: a custom domain whose routing rules send each method to its own function.
    pub per_method_front_door: bool,
    /// Front door C: the all-methods function's own Lambda Function URL, streamed (no API
    /// Gateway, no domain), beside front door B where there is no domain.
    pub function_url: bool,
}

impl Default for Parts {
    fn default() -> Self {
        Parts {
            jobs: true,
            pages: true,
            per_method_front_door: true,
            function_url: true,
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
    let config: Config = serde_json::from_value(table)
        .map_err(|error| CliError::BadTable(manifest.display().to_string(), error))?;
    if let Some(problem) = config
        .managed_instances
        .as_ref()
        .and_then(ManagedInstances::problem)
    {
        return Err(CliError::BadSetting(
            manifest.display().to_string(),
            problem,
        ));
    }
    Ok(config)
}
