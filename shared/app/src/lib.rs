//! The apps a Relevo server can serve, chosen by name at start (`APP=conformance make run`).
//!
//! Apps are plain registries of tools, resources and prompts over `relevo-protocol`; they know
//! nothing of HTTP, Lambda or AWS.

pub mod approvals;
pub mod conformance;
pub mod create_once;
pub mod demo;
pub mod export;
pub mod inventory;
pub mod inventory_tools;
pub mod notes;
pub mod shop;

use std::sync::Arc;

use relevo_protocol::{App, Clock, SystemClock, ToolTaskRunner};
use relevo_state::{Engine, EngineConfig, Ids, InFlightLimits, JobStore, Queue, RandomIds, RecordStore};

/// What apps may use of the outside world. A feature whose port is missing is left out of the
/// app (a deployment without a store serves no notes) rather than failing at call time.
#[derive(Clone)]
pub struct Ports {
    pub records: Option<Arc<dyn RecordStore>>,
    /// Durable jobs (store + queue), from [`jobs`].
    pub jobs: Option<Arc<Engine>>,
    pub ids: Arc<dyn Ids>,
    pub clock: Arc<dyn Clock>,
    /// Where people open approval pages (`{approvals_url}/{operation id}`).
    pub approvals_url: String,
}

impl Ports {
    pub fn new(records: Option<Arc<dyn RecordStore>>) -> Self {
        Ports {
            records,
            jobs: None,
            ids: Arc::new(RandomIds),
            clock: Arc::new(SystemClock),
            approvals_url: "/approvals".into(),
        }
    }

    pub fn with_approvals_url(mut self, url: &str) -> Self {
        self.approvals_url = url.trim_end_matches('/').to_string();
        self
    }

    /// The approval page beside the MCP endpoint `resource` (the server's canonical URI, the
    /// token audience): `https://mcp.example.com/mcp` → `https://mcp.example.com/approvals`. Both
    /// front doors serve the page on the host clients already use, so the URL is known without
    /// naming the API that serves it (a function naming its API would be a dependency cycle).
    pub fn approvals_beside(resource: &str) -> String {
        let resource = resource.trim_end_matches('/');
        let base = resource.strip_suffix("/mcp").unwrap_or(resource);
        format!("{base}/approvals")
    }

    /// The inventory service over these ports, with the simulated warehouse API downstream
    /// (idempotency window: one day). `None` without a record store.
    pub fn inventory(&self) -> Option<inventory::Inventory> {
        let records = self.records.clone()?;
        let downstream = inventory::SimulatedWarehouse {
            records: records.clone(),
            clock: self.clock.clone(),
            ids: self.ids.clone(),
            window_secs: 24 * 3600,
        };
        Some(inventory::Inventory {
            records,
            downstream: Arc::new(downstream),
            clock: self.clock.clone(),
            ids: self.ids.clone(),
            config: inventory::InventoryConfig { approvals_url: self.approvals_url.clone(), ..Default::default() },
            settler: self.jobs.clone(),
        })
    }

    pub fn with_jobs(mut self, engine: Arc<Engine>) -> Self {
        self.jobs = Some(engine);
        self
    }
}

/// The durable-work engine with a runner for every job kind: the apps' jobs (the export) and
/// tool calls run as tasks. Give `engine` to [`Ports::with_jobs`] and both to
/// `McpServer::with_tasks`.
pub struct Jobs {
    pub engine: Arc<Engine>,
    pub tool_runner: Arc<ToolTaskRunner>,
    /// Bind it to [`Ports::inventory`] where jobs run (worker, local gateway).
    pub settle_runner: Arc<inventory::SettleRunner>,
}

/// Builds [`Jobs`]. `window_delay` paces the export's reads (the stand-in for a slow source;
/// `RELEVO_EXPORT_WINDOW_MS`).
pub fn jobs(
    store: Arc<dyn JobStore>,
    queue: Arc<dyn Queue>,
    config: EngineConfig,
    window_delay: std::time::Duration,
) -> Jobs {
    jobs_with(store, queue, config, window_delay, None)
}

/// [`jobs`], with the jobs in flight bounded per principal and per tenant (counted in `records`).
pub fn jobs_with(
    store: Arc<dyn JobStore>,
    queue: Arc<dyn Queue>,
    config: EngineConfig,
    window_delay: std::time::Duration,
    admission: Option<(Arc<dyn RecordStore>, InFlightLimits)>,
) -> Jobs {
    let tool_runner = Arc::new(ToolTaskRunner::default());
    let settle_runner = Arc::new(inventory::SettleRunner::default());
    let mut engine = Engine::new(store, queue, Arc::new(SystemClock), Arc::new(RandomIds), config)
        .runner(export::KIND, Arc::new(export::ExportRunner { window_delay }))
        .runner(relevo_protocol::tasks::TOOL_TASK_KIND, tool_runner.clone())
        .runner(inventory::SETTLE_KIND, settle_runner.clone());
    if let Some((records, limits)) = admission {
        engine = engine.with_admission(records, limits);
    }
    Jobs { engine: Arc::new(engine), tool_runner, settle_runner }
}

/// The limits on jobs in flight from `RELEVO_MAX_JOBS_PER_PRINCIPAL` and `RELEVO_MAX_JOBS_PER_TENANT`.
pub fn in_flight_limits_from_env() -> InFlightLimits {
    let number = |name: &str, default: usize| {
        std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(default)
    };
    let defaults = InFlightLimits::default();
    InFlightLimits {
        per_principal: number("RELEVO_MAX_JOBS_PER_PRINCIPAL", defaults.per_principal),
        per_tenant: number("RELEVO_MAX_JOBS_PER_TENANT", defaults.per_tenant),
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown app {0:?}: expected one of {APP_NAMES:?}")]
pub struct UnknownApp(pub String);

pub const APP_NAMES: &[&str] = &["shop", "conformance"];

/// The app called `name`.
pub fn build(name: &str, ports: &Ports) -> Result<App, UnknownApp> {
    match name {
        "shop" | "demo" => Ok(demo::app(ports)),
        "conformance" => Ok(conformance::app()),
        other => Err(UnknownApp(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::Ports;

    #[test]
    fn the_approval_page_is_beside_the_mcp_endpoint() {
        assert_eq!(Ports::approvals_beside("https://mcp.example.com/mcp"), "https://mcp.example.com/approvals");
        assert_eq!(
            Ports::approvals_beside("https://abc.execute-api.us-east-1.amazonaws.com/mcp/"),
            "https://abc.execute-api.us-east-1.amazonaws.com/approvals"
        );
        assert_eq!(Ports::approvals_beside("https://example.com/tenant-a"), "https://example.com/tenant-a/approvals");
    }
}
