//! The one authorization decision. Every surface a request can reach declares the OAuth scopes
//! it needs next to its definition — tools, resources, resource templates and prompts by
//! `.scopes(…)`, task kinds by `App::task_kind` — and every method reaches its surface only
//! through this module, which refuses a caller without them before any handler runs.
//!
//! Threat model: an authenticated caller of the right tenant whose token was narrowed (an
//! agent's, a subtask's) must not reach through one method what another refuses it. So the
//! scopes of a resource hold for `resources/read`, `resources/list`, `completion/complete`,
//! `subscriptions/listen` and `resources/subscribe` alike; the scopes of a tool for
//! `tools/call`, `tools/list` and the tasks it started; a prompt's for `prompts/get`, its
//! listing and its completions.
//!
//! Work linear in the input: a resource URI costs a lookup among static resources, then
//! matching linear in its length against each template the caller may read (and, only once one
//! matched, against the templates before it the caller may not read, whose URI it would be);
//! a template the caller may not read otherwise costs a comparison with its leading literal, so
//! a caller that may read no template pays for no matching ([`McpServer::readable`]). A
//! completion reference is compared once with each prompt name or URI template; a directory URI
//! once with each skill file's URI.
//!
//! Invariants:
//! - A surface without scopes is public. Which ones are is kept explicit by the enumeration test
//!   (`tests/tests/surfaces.rs`), which fails for any surface added later without a decision.
//! - A skill's scopes (`Skill::scopes`) gate its entry in `skills/list` and `skills/get`, each
//!   of its files (registered as resources with the same scopes) and the directories that hold
//!   them in `resources/directory/read`.
//! - Task kinds are deny by default: a job kind the app did not declare (an internal job) is not
//!   reachable through `tasks/*` at all, and answers "Unknown task" like another principal's.
//! - Refusals are `insufficient_scope` (403 with the scopes needed, so a client can step up);
//!   lists leave out what the caller may not reach.
//! - Admission ([`McpServer::admit`], [`McpServer::admit_surface`], [`admit_tenant`]): every
//!   [`Surface`] — every way an authenticated caller makes the deployment work: a method of
//!   either wire, a 2025-11-25 session's own verbs (`initialize`, `ping`, `logging/setLevel`,
//!   `resources/subscribe`/`unsubscribe`, an answer, an unknown method), its GET stream and
//!   DELETE, each poll of a listen stream, the app's pages and their sign-in — is counted
//!   against its tenant's request-rate quota ([`crate::quota`]) before it reads or writes
//!   anything else, tenant from the verified principal; a spent quota is a 429 with
//!   `Retry-After` (a listen stream ends instead). Units are spent from the server's leases
//!   ([`relevo_state::rate::Leases`]), so most admissions make no store call. [`Surface::admission`] is the decision, an
//!   exhaustive match, and `tests/tests/surfaces.rs` probes every entry of [`Surface::ALL`]:
//!   a surface added without a decision fails to compile or fails that test. With no quota
//!   configured, admission touches nothing.

use std::sync::Once;

use serde_json::Value;

use super::McpServer;
use crate::auth::Principal;
use crate::error::{McpError, store_failure};
use crate::ladder::ValidRequest;
use crate::method::Method;
use crate::quota::{QuotaScope, Quotas, Rate};
use crate::registry::skill::{DIRECTORY_MIME, SCHEME};
use crate::registry::uri_template::leading_literal;
use crate::registry::{
    Candidates, Handler, Prompt, RegisteredSkill, TaskAccess, Tool, WatchRecord, apps,
};
use crate::tasks::TOOL_TASK_KIND;
use crate::wire::JsonObject;
use relevo_state::Job;
use relevo_state::RecordStore;
use relevo_state::rate::{Admission, Leases, RateError};

/// Quotas configured on a server without a store are off; said once per process.
static QUOTAS_WITHOUT_STORE: Once = Once::new();

/// Every way an authenticated caller makes a deployment do work, for admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// A method of the 2026-07-28 wire, or one a 2025-11-25 session shares with it.
    Method(Method),
    /// 2025-11-25 `initialize` (creates a session record).
    LegacyInitialize,
    /// 2025-11-25 `ping` (reads the session).
    LegacyPing,
    /// 2025-11-25 `logging/setLevel` (writes the session).
    LegacySetLevel,
    /// 2025-11-25 `resources/subscribe` (writes the session).
    LegacySubscribe,
    /// 2025-11-25 `resources/unsubscribe` (writes the session).
    LegacyUnsubscribe,
    /// A 2025-11-25 client's answer to a server-to-client request (writes the pending record).
    LegacyAnswer,
    /// A method no wire serves, named in a session (reads the session before it is refused).
    LegacyUnknown,
    /// GET of a session's notification stream (holds a stream slot, reads the session).
    SessionStream,
    /// DELETE of a session (removes its record).
    SessionDelete,
    /// One poll of an open `subscriptions/listen` stream: one unit, and one more per watched
    /// resource read through its handler (declared records are read in one batch).
    ListenPoll,
    /// A request to the app's pages that acts as someone (their sign-in included).
    Page,
}

/// What admission does for a [`Surface`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Counted against the tenant's request-rate quota before any other store call.
    Counted,
    /// Not counted, for the reason given.
    Exempt(&'static str),
}

impl Surface {
    /// Every surface but the methods (see [`Surface::all`]).
    pub const ALL: [Surface; 11] = [
        Surface::LegacyInitialize,
        Surface::LegacyPing,
        Surface::LegacySetLevel,
        Surface::LegacySubscribe,
        Surface::LegacyUnsubscribe,
        Surface::LegacyAnswer,
        Surface::LegacyUnknown,
        Surface::SessionStream,
        Surface::SessionDelete,
        Surface::ListenPoll,
        Surface::Page,
    ];

    /// Every surface: each method of [`Method::ALL`], then [`Surface::ALL`].
    pub fn all() -> Vec<Surface> {
        Method::ALL
            .into_iter()
            .map(Surface::Method)
            .chain(Surface::ALL)
            .collect()
    }

    /// The surface of a 2025-11-25 request named `method` that is not a shared method.
    pub fn legacy(method: &str) -> Surface {
        match method {
            "initialize" => Surface::LegacyInitialize,
            "ping" => Surface::LegacyPing,
            "logging/setLevel" => Surface::LegacySetLevel,
            "resources/subscribe" => Surface::LegacySubscribe,
            "resources/unsubscribe" => Surface::LegacyUnsubscribe,
            _ => Surface::LegacyUnknown,
        }
    }

    /// A stable name, as the enumeration test and the logs say it.
    pub fn name(self) -> String {
        match self {
            Surface::Method(method) => format!("method {}", method.as_str()),
            Surface::LegacyInitialize => "legacy initialize".into(),
            Surface::LegacyPing => "legacy ping".into(),
            Surface::LegacySetLevel => "legacy logging/setLevel".into(),
            Surface::LegacySubscribe => "legacy resources/subscribe".into(),
            Surface::LegacyUnsubscribe => "legacy resources/unsubscribe".into(),
            Surface::LegacyAnswer => "legacy answer".into(),
            Surface::LegacyUnknown => "legacy unknown method".into(),
            Surface::SessionStream => "legacy GET stream".into(),
            Surface::SessionDelete => "legacy DELETE".into(),
            Surface::ListenPoll => "listen poll".into(),
            Surface::Page => "page".into(),
        }
    }

    /// The admission decision of every surface (an exhaustive match: a new surface must decide).
    pub fn admission(self) -> Decision {
        match self {
            Surface::Method(_)
            | Surface::LegacyInitialize
            | Surface::LegacyPing
            | Surface::LegacySetLevel
            | Surface::LegacySubscribe
            | Surface::LegacyUnsubscribe
            | Surface::LegacyAnswer
            | Surface::LegacyUnknown
            | Surface::SessionStream
            | Surface::SessionDelete
            | Surface::ListenPoll
            | Surface::Page => Decision::Counted,
        }
    }
}

/// What a caller wants to do with a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskUse {
    /// `tasks/get`.
    Read,
    /// `tasks/update`, `tasks/cancel`.
    Write,
}

/// A readable resource the caller may read: its handler, the template variables it binds,
/// whether its content is private, and the record it declared to be read from, if any.
pub(crate) struct Readable {
    pub handler: Handler,
    pub arguments: JsonObject,
    pub private: bool,
    pub watch: Option<WatchRecord>,
}

pub(crate) fn require(principal: &Principal, scopes: &[String]) -> Result<(), McpError> {
    if principal.holds(scopes) {
        Ok(())
    } else {
        Err(McpError::InsufficientScope(scopes.to_vec()))
    }
}

impl McpServer {
    /// Counts `request` against the deployment's quotas: the quota of the tool it calls (a tool
    /// that exists and that the caller may call), then its tenant's. A spent quota refuses it
    /// with [`McpError::RateLimited`]; a store that fails or keeps losing races, with a
    /// retryable error (the request is not served uncounted).
    pub(crate) async fn admit(
        &self,
        request: &ValidRequest,
        principal: &Principal,
    ) -> Result<(), McpError> {
        let quotas = &self.config.quotas;
        if quotas.is_off() {
            return Ok(());
        }
        let Some(store) = quota_store(self.store.as_deref()) else {
            return Ok(());
        };
        let now = self.clock.now_millis();
        let tenant = principal.tenant.as_str();
        if request.method == Method::ToolsCall
            && let Some(tool) = request
                .target()
                .and_then(|name| self.callable_tool(principal, name).ok())
            && let Some(quota) = quotas.for_tool(&tool.name)
        {
            spend(
                store,
                &self.leases,
                tenant,
                QuotaScope::Tool,
                Some(&tool.name),
                quota,
                1,
                now,
            )
            .await?;
        }
        admit_tenant(quotas, Some(store), &self.leases, tenant, now).await
    }

    /// This server's quota leases (what its environment holds and has spent, for its operator
    /// and its tests).
    pub fn leases(&self) -> std::sync::Arc<Leases> {
        self.leases.clone()
    }

    /// What the app's pages are admitted against ([`crate::pages::serve`]): this server's
    /// quotas, store and clock.
    pub fn page_gate(&self) -> crate::pages::PageGate {
        crate::pages::PageGate {
            quotas: self.config.quotas.clone(),
            store: self.store.clone(),
            clock: self.clock.clone(),
            leases: self.leases.clone(),
        }
    }

    /// Counts `surface` (not a method: those go through [`McpServer::admit`]) against the
    /// caller's tenant's quota, as [`Surface::admission`] decides.
    pub(crate) async fn admit_surface(
        &self,
        surface: Surface,
        principal: &Principal,
    ) -> Result<(), McpError> {
        self.admit_surface_units(surface, principal, 1).await
    }

    /// [`McpServer::admit_surface`] for a request that costs `units` (at least 1): all of them
    /// counted in one conditional write, or none (a refusal spends nothing).
    pub(crate) async fn admit_surface_units(
        &self,
        surface: Surface,
        principal: &Principal,
        units: u32,
    ) -> Result<(), McpError> {
        match surface.admission() {
            Decision::Counted => {
                let (quotas, store, now) = (
                    &self.config.quotas,
                    self.store.as_deref(),
                    self.clock.now_millis(),
                );
                admit_tenant_units(quotas, store, &self.leases, &principal.tenant, units, now).await
            }
            Decision::Exempt(_) => Ok(()),
        }
    }

    pub(crate) fn callable_tool(
        &self,
        principal: &Principal,
        name: &str,
    ) -> Result<&Tool, McpError> {
        let tool = self
            .app
            .find_tool(name)
            .ok_or_else(|| McpError::invalid_params(format!("Unknown tool: {name}")))?;
        require(principal, &tool.scopes)?;
        Ok(tool)
    }

    pub(crate) fn gettable_prompt(
        &self,
        principal: &Principal,
        name: &str,
    ) -> Result<&Prompt, McpError> {
        let prompt = self
            .app
            .find_prompt(name)
            .ok_or_else(|| McpError::invalid_params(format!("Unknown prompt: {name}")))?;
        require(principal, &prompt.scopes)?;
        Ok(prompt)
    }

    /// The resource `uri` names (a resource's URI, or a template's match), if the caller may read it.
    ///
    /// A URI is the first template's (in the app's order) that matches it, the same for every
    /// caller. The caller pays for matching only templates it may read (linear in the URI's
    /// length each, [`crate::registry::uri_template`]); a template it may not read costs it a
    /// comparison with the template's leading literal (`notes://` of `notes://{noteId}`):
    /// - a template it may read matches: served, unless a template before it that the caller
    ///   may not read matches too (matched only then, for a caller that already matched one):
    ///   refused with that template's scopes, as the URI is that template's;
    /// - none it may read matches, and the URI starts with the leading literal of one it may
    ///   not read: refused (`insufficient_scope`, 403) with the first such template's scopes,
    ///   whether or not the URI matches it. So a caller holding no template's scopes is
    ///   refused before any matching, and learns only that a template it may not read lives
    ///   under that prefix (not which URIs it matches, nor whether a resource exists there);
    /// - otherwise "Resource not found" (-32602): the same answer for a URI of no template as
    ///   for a template's URI whose handler finds nothing.
    pub(crate) fn readable(&self, principal: &Principal, uri: &str) -> Result<Readable, McpError> {
        if let Some(resource) = self.app.find_resource(uri) {
            require(principal, &resource.scopes)?;
            let (handler, watch) = (resource.handler.clone(), resource.watch.clone());
            return Ok(Readable {
                handler,
                arguments: JsonObject::new(),
                private: resource.per_caller(),
                watch,
            });
        }
        // The templates the caller may not read whose leading literal the URI starts with.
        let mut unreadable = Vec::new();
        for template in self.app.templates() {
            if !principal.holds(&template.scopes) {
                if uri.starts_with(leading_literal(&template.uri_template)) {
                    unreadable.push(template);
                }
                continue;
            }
            let Some(arguments) = template.match_uri(uri) else {
                continue;
            };
            if let Some(before) = unreadable.iter().find(|t| t.match_uri(uri).is_some()) {
                return Err(McpError::InsufficientScope(before.scopes.clone()));
            }
            let (handler, watch) = (template.handler.clone(), template.watch.clone());
            return Ok(Readable {
                handler,
                arguments,
                private: template.per_caller(),
                watch,
            });
        }
        match unreadable.first() {
            Some(template) => Err(McpError::InsufficientScope(template.scopes.clone())),
            None => Err(McpError::resource_not_found(uri)),
        }
    }

    /// The skills the caller may see, when the app serves any (the extension is declared only
    /// then; otherwise the method is not found).
    pub(crate) fn visible_skills<'a>(
        &'a self,
        principal: &'a Principal,
        method: Method,
    ) -> Result<impl Iterator<Item = &'a RegisteredSkill> + 'a, McpError> {
        if self.app.skills().next().is_none() {
            return Err(McpError::MethodNotFound(method.as_str().into()));
        }
        Ok(self
            .app
            .skills()
            .filter(move |s| visible(principal, &s.scopes)))
    }

    /// The skill whose `SKILL.md` is at `uri`, if the caller may reach it: an unknown URI is
    /// `-32602`, a skill gated by scopes the caller lacks is refused like its files.
    pub(crate) fn gettable_skill(
        &self,
        principal: &Principal,
        uri: &str,
    ) -> Result<&RegisteredSkill, McpError> {
        let _served = self.visible_skills(principal, Method::SkillsGet)?;
        let skill = self.app.find_skill(uri).ok_or_else(|| {
            McpError::invalid_params_with(
                format!("No skill is served at {uri}"),
                serde_json::json!({ "uri": uri }),
            )
        })?;
        require(principal, &skill.scopes)?;
        Ok(skill)
    }

    /// The direct children of the directory resource `uri` within the skill namespace, as the
    /// caller may see them: files with their resource metadata, subdirectories as
    /// `inode/directory`. A URI that is no directory (a file, or nothing) is `-32602`; a
    /// directory holding only files the caller may not read is refused like those files.
    pub(crate) fn directory(
        &self,
        principal: &Principal,
        uri: &str,
    ) -> Result<Vec<Value>, McpError> {
        let skills: Vec<&RegisteredSkill> = self
            .visible_skills(principal, Method::ResourcesDirectoryRead)?
            .collect();
        let prefix = format!("{uri}/");
        let not_a_directory = || {
            McpError::invalid_params_with(
                format!("{uri} is not a directory resource"),
                serde_json::json!({ "uri": uri }),
            )
        };
        if uri.ends_with('/') || !uri.starts_with(SCHEME) {
            return Err(not_a_directory());
        }
        let mut children = std::collections::BTreeMap::new();
        for skill in &skills {
            for file in &skill.files {
                let Some(rest) = file.uri.strip_prefix(&prefix) else {
                    continue;
                };
                let child = match rest.split_once('/') {
                    None => match self.app.find_resource(&file.uri) {
                        Some(resource) => resource.to_wire(),
                        None => continue,
                    },
                    Some((dir, _)) => serde_json::json!({
                        "uri": format!("{prefix}{dir}"),
                        "name": dir,
                        "mimeType": DIRECTORY_MIME,
                    }),
                };
                let key = child["uri"].as_str().unwrap_or_default().to_string();
                children.entry(key).or_insert(child);
            }
        }
        if children.is_empty() {
            // A directory of skills the caller may not see answers as their files do.
            if let Some(hidden) = self
                .app
                .skills()
                .find(|s| s.files.iter().any(|f| f.uri.starts_with(&prefix)))
            {
                require(principal, &hidden.scopes)?;
            }
            return Err(not_a_directory());
        }
        Ok(children.into_values().collect())
    }

    /// Where the completion candidates of `reference`'s argument `argument` come from, if the
    /// caller may reach the prompt or template it names.
    pub(crate) fn completable(
        &self,
        principal: &Principal,
        reference: &JsonObject,
        argument: &str,
        apps: bool,
    ) -> Result<Candidates, McpError> {
        match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let prompt = self.gettable_prompt(
                    principal,
                    reference.get("name").and_then(Value::as_str).unwrap_or(""),
                )?;
                Ok(prompt
                    .arguments
                    .iter()
                    .find(|a| a.name == argument)
                    .map_or(Candidates::List(Vec::new()), |a| a.candidates()))
            }
            Some("ref/resource") => {
                let uri = reference
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let template = self
                    .app
                    .templates()
                    .find(|t| t.uri_template == uri)
                    // A view's template is unknown to a client without MCP Apps.
                    .filter(|t| {
                        apps || !apps::app_only_resource(&t.uri_template, t.mime_type.as_deref())
                    })
                    .ok_or_else(|| {
                        McpError::invalid_params(format!("Unknown resource template: {uri}"))
                    })?;
                require(principal, &template.scopes)?;
                Ok(template.candidates(argument))
            }
            _ => Err(McpError::invalid_params(
                "ref.type must be ref/prompt or ref/resource",
            )),
        }
    }

    /// Whether the caller may reach `job` as a task for `usage`: `Ok(false)` when the job's kind
    /// is not reachable as a task at all (it then answers as an unknown task).
    pub(crate) fn reachable_task(
        &self,
        principal: &Principal,
        job: &Job,
        usage: TaskUse,
    ) -> Result<bool, McpError> {
        let scopes = if job.kind == TOOL_TASK_KIND {
            let name = job
                .input
                .get("tool")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match self.app.find_tool(name) {
                Some(tool) => tool.scopes.clone(),
                None => return Ok(false),
            }
        } else {
            // A declared kind's scopes; a job started as a task and of no declared kind is its
            // owner's to follow with no particular scope (`TaskAccess::owner`).
            let access = match self.app.task_kinds().find(|(kind, _)| **kind == job.kind) {
                Some((_, access)) => access.clone(),
                None if job.task => TaskAccess::owner(),
                None => return Ok(false),
            };
            match usage {
                TaskUse::Read => access.read,
                TaskUse::Write => access.write,
            }
        };
        require(principal, &scopes)?;
        Ok(true)
    }
}

/// Whether a list shows an item with `scopes` to `principal`.
pub(crate) fn visible(principal: &Principal, scopes: &[String]) -> bool {
    principal.holds(scopes)
}

/// The store quotas are counted in; `None` (quotas off, said once) without one.
fn quota_store(store: Option<&dyn RecordStore>) -> Option<&dyn RecordStore> {
    if store.is_none() {
        QUOTAS_WITHOUT_STORE.call_once(|| {
            tracing::warn!(
                "request-rate quotas are configured but this server has no store: they are off"
            );
        });
    }
    store
}

/// One unit of `tenant`'s request-rate quota (nothing when none is configured), spent from
/// `leases` at `now_ms`: the admission of every surface, and of the pages served beside `/mcp`
/// ([`crate::pages::serve`]).
pub async fn admit_tenant(
    quotas: &Quotas,
    store: Option<&dyn RecordStore>,
    leases: &Leases,
    tenant: &str,
    now_ms: u64,
) -> Result<(), McpError> {
    admit_tenant_units(quotas, store, leases, tenant, 1, now_ms).await
}

/// `units` of `tenant`'s request-rate quota at once, all or none.
pub(crate) async fn admit_tenant_units(
    quotas: &Quotas,
    store: Option<&dyn RecordStore>,
    leases: &Leases,
    tenant: &str,
    units: u32,
    now_ms: u64,
) -> Result<(), McpError> {
    let Some(quota) = quotas.per_tenant else {
        return Ok(());
    };
    let Some(store) = quota_store(store) else {
        return Ok(());
    };
    spend(
        store,
        leases,
        tenant,
        QuotaScope::Tenant,
        None,
        quota,
        units,
        now_ms,
    )
    .await
}

/// `units` of `quota` for `tenant` from this environment's lease (taking one when it holds too
/// few), or the refusal that says when the next window starts (and then none is spent).
#[allow(clippy::too_many_arguments)]
async fn spend(
    store: &dyn RecordStore,
    leases: &Leases,
    tenant: &str,
    scope: QuotaScope,
    tool: Option<&str>,
    quota: Rate,
    units: u32,
    now_ms: u64,
) -> Result<(), McpError> {
    let key = match tool {
        Some(tool) => format!("tool:{tool}"),
        None => scope.as_str().to_string(),
    };
    match leases
        .admit(store, tenant, &key, quota, units, now_ms)
        .await
    {
        Ok(Admission::Allowed { .. }) => Ok(()),
        Ok(Admission::Limited { retry_after_secs }) => Err(McpError::RateLimited {
            scope,
            tool: tool.map(String::from),
            limit: quota.limit,
            window_secs: quota.window_secs,
            retry_after_secs,
        }),
        Err(RateError::Store { source, .. }) => Err(store_failure("rate quota")(source)),
    }
}
