//! What an app may use of the outside world, handed to the app's builder by every runner (the
//! per-method functions, the worker, the reconciler, the local gateway). An app is a function
//! `fn(&Ports) -> App`: the runner chooses the backends, the app chooses what to build on them.
//!
//! A feature whose port is missing is left out of the app (a deployment without a store serves
//! no notes) rather than failing at call time.

use std::sync::Arc;

use relevo_state::{Engine, Ids, RandomIds, RecordStore};

use crate::auth::{Authenticator, NoAuth};
use crate::clock::{Clock, SystemClock};
use crate::ladder::OriginPolicy;
use crate::registry::App;
use crate::seal::KeyRing;

#[derive(Clone)]
pub struct Ports {
    pub records: Option<Arc<dyn RecordStore>>,
    /// Durable jobs (store + queue): start, get, cancel. The runners live in the worker.
    pub jobs: Option<Arc<Engine>>,
    pub ids: Arc<dyn Ids>,
    pub clock: Arc<dyn Clock>,
    /// Where the app's pages are reached from outside, such as `https://mcp.example.com/approvals`.
    pub pages_url: String,
    /// The server's bearer-token verification, for pages that sign people in.
    pub auth: Arc<dyn Authenticator>,
    /// The server's signing keys, for pages that seal their own tokens (CSRF).
    pub keys: KeyRing,
    /// The server's Host/Origin allow-list.
    pub origins: OriginPolicy,
}

/// How a runner builds the user's app. Any `fn(&Ports) -> App` is one.
pub trait AppBuilder: Fn(&Ports) -> App + Send + Sync + 'static {}
impl<F: Fn(&Ports) -> App + Send + Sync + 'static> AppBuilder for F {}

impl Ports {
    /// No backend: a random key ring for this process, no authentication, the default pages URL.
    pub fn new(records: Option<Arc<dyn RecordStore>>) -> Self {
        Ports {
            records,
            jobs: None,
            ids: Arc::new(RandomIds),
            clock: Arc::new(SystemClock),
            pages_url: "/approvals".into(),
            auth: Arc::new(NoAuth),
            keys: KeyRing::ephemeral(),
            origins: OriginPolicy::localhost(),
        }
    }

    pub fn with_pages_url(mut self, url: &str) -> Self {
        self.pages_url = url.trim_end_matches('/').to_string();
        self
    }

    pub fn with_jobs(mut self, engine: Arc<Engine>) -> Self {
        self.jobs = Some(engine);
        self
    }

    pub fn with_security(
        mut self,
        auth: Arc<dyn Authenticator>,
        keys: KeyRing,
        origins: OriginPolicy,
    ) -> Self {
        self.auth = auth;
        self.keys = keys;
        self.origins = origins;
        self
    }

    /// The pages beside the MCP endpoint `resource` (the server's canonical URI, the token
    /// audience): `https://mcp.example.com/mcp` → `https://mcp.example.com/approvals`. Both front
    /// doors serve the pages on the host clients already use, so the URL is known without naming
    /// the API that serves it (a function naming its API would be a dependency cycle).
    pub fn approvals_beside(resource: &str) -> String {
        let resource = resource.trim_end_matches('/');
        let base = resource.strip_suffix("/mcp").unwrap_or(resource);
        format!("{base}/approvals")
    }
}

#[cfg(test)]
mod tests {
    use super::Ports;

    #[test]
    fn the_approval_page_is_beside_the_mcp_endpoint() {
        assert_eq!(
            Ports::approvals_beside("https://mcp.example.com/mcp"),
            "https://mcp.example.com/approvals"
        );
        assert_eq!(
            Ports::approvals_beside("https://abc.execute-api.us-east-1.amazonaws.com/mcp/"),
            "https://abc.execute-api.us-east-1.amazonaws.com/approvals"
        );
        assert_eq!(
            Ports::approvals_beside("https://example.com/tenant-a"),
            "https://example.com/tenant-a/approvals"
        );
    }
}
