//! What an app may use of the outside world, handed to the app's builder by every runner (the
//! per-method functions, the worker, the reconciler, the local gateway). An app is a function
//! `fn(&Ports) -> App`: the runner chooses the backends, the app chooses what to build on them.
//!
//! A feature whose port is missing is left out of the app (a deployment without a store serves
//! no record-backed tools) rather than failing at call time.

use std::sync::Arc;

use relevo_state::{Engine, Ids, RandomIds, RecordStore};

use crate::auth::{Authenticator, NoAuth};
use crate::clock::{Clock, SystemClock};
use crate::ladder::OriginPolicy;
use crate::registry::App;
use crate::seal::KeyRing;

#[derive(Clone)]
/// The backends and security settings a runner hands to the app's builder; a feature whose
/// port is `None` is left out of the app.
pub struct Ports {
    /// The record store, for record-backed tools and resources; `None` when the deployment has
    /// none.
    pub records: Option<Arc<dyn RecordStore>>,
    /// Durable jobs (store + queue): start, get, cancel. The runners live in the worker.
    pub jobs: Option<Arc<Engine>>,
    /// Makes unique ids.
    pub ids: Arc<dyn Ids>,
    /// The time source.
    pub clock: Arc<dyn Clock>,
    /// Where the app's pages are reached from outside, without their prefix: what is beside the
    /// MCP endpoint, such as `https://mcp.example.com` (see [`Ports::pages_beside`]); empty for
    /// links relative to the host. A page's address is [`Ports::page_url`] of its own prefix
    /// ([`crate::Pages::prefix`]): the framework names no page.
    pub pages_base: String,
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
    /// No backend: a random key ring for this process, no authentication, pages relative to the
    /// host.
    pub fn new(records: Option<Arc<dyn RecordStore>>) -> Self {
        Ports {
            records,
            jobs: None,
            ids: Arc::new(RandomIds),
            clock: Arc::new(SystemClock),
            pages_base: String::new(),
            auth: Arc::new(NoAuth),
            keys: KeyRing::ephemeral(),
            origins: OriginPolicy::localhost(),
        }
    }

    /// Pages reached under `url` (their prefixes follow it), such as `https://mcp.example.com`.
    pub fn with_pages_base(mut self, url: &str) -> Self {
        self.pages_base = url.trim_end_matches('/').to_string();
        self
    }

    /// Where the pages under `prefix` (a [`crate::Pages::prefix`], such as
    /// [`crate::pages::DEFAULT_PREFIX`]) are reached from outside.
    pub fn page_url(&self, prefix: &str) -> String {
        format!("{}/{}", self.pages_base, prefix.trim_start_matches('/'))
    }

    /// Durable jobs on `engine` ([`Ports::jobs`]).
    pub fn with_jobs(mut self, engine: Arc<Engine>) -> Self {
        self.jobs = Some(engine);
        self
    }

    /// The server's authentication, signing keys and Host/Origin allow-list, for the pages.
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

    /// Where the pages hang beside the MCP endpoint `resource` (the server's canonical URI, the
    /// token audience): `https://mcp.example.com/mcp` → `https://mcp.example.com`, the
    /// [`Ports::pages_base`] each page's prefix follows. Both front doors serve the pages on the
    /// host clients already use, so the URL is known without naming the API that serves it (a
    /// function naming its API would be a dependency cycle).
    pub fn pages_beside(resource: &str) -> String {
        let resource = resource.trim_end_matches('/');
        resource
            .strip_suffix("/mcp")
            .unwrap_or(resource)
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::Ports;

    #[test]
    fn the_pages_hang_beside_the_mcp_endpoint() {
        assert_eq!(
            Ports::pages_beside("https://mcp.example.com/mcp"),
            "https://mcp.example.com"
        );
        assert_eq!(
            Ports::pages_beside("https://abc.execute-api.us-east-1.amazonaws.com/mcp/"),
            "https://abc.execute-api.us-east-1.amazonaws.com"
        );
        assert_eq!(
            Ports::pages_beside("https://example.com/tenant-a"),
            "https://example.com/tenant-a"
        );
    }

    #[test]
    fn a_page_url_is_the_base_and_the_app_s_own_prefix() {
        let ports = Ports::new(None);
        assert_eq!(ports.page_url(crate::pages::DEFAULT_PREFIX), "/pages");
        let ports = ports.with_pages_base("https://mcp.example.com/");
        assert_eq!(ports.page_url("/status"), "https://mcp.example.com/status");
        assert_eq!(
            Ports::new(None)
                .with_pages_base(&Ports::pages_beside("https://mcp.example.com/mcp"))
                .page_url("/pages"),
            "https://mcp.example.com/pages"
        );
    }
}
