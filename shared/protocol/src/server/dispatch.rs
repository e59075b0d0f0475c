//! One validated request to its method: the match that picks what serves each method, and the
//! methods answered here (`server/discover`, the lists, `completion/complete`, `tasks/*`).
//! Handler-running methods go on to `call`, `subscriptions/listen` to `listen`.
//!
//! Both wires come through here: a 2026-07-28 request from [`McpServer::handle`], and a
//! 2025-11-25 session's request of a shared method from [`crate::legacy`], so a method
//! behaves the same whichever revision asked.
//!
//! Invariants:
//! - Every request is admitted by `guard` (the deployment's request-rate quotas) before its
//!   method runs, on both wires.
//! - Every surface is reached through `guard`: lists leave out what the caller may not
//!   reach, and a list that depends on the caller's scopes is never shared across tokens
//!   (`cacheScope: private` unless the deployment is open).
//! - Every list leaves out what the client cannot use: without the MCP Apps extension, no
//!   app-only tool, no view, no `_meta.ui` ([`apps`]); a list that depends on the client is
//!   `cacheScope: private` even on an open deployment.
//! - List positions leave sealed in cursors ([`crate::cursor`]); nothing is kept between pages.
//! - `tasks/*` reach the caller's own tasks only: another principal's task id, or a job kind not
//!   reachable as a task, answers "Unknown task". Without the Tasks extension they are not found.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::guard::{self, TaskUse};
use super::reply::cacheable;
use super::{McpServer, Reply};
use crate::auth::Principal;
use crate::cursor;
use crate::error::McpError;
use crate::ladder::ValidRequest;
use crate::method::Method;
use crate::registry::{Candidates, Completion, CompletionRequest, apps};
use crate::tasks;
use crate::wire::JsonObject;
use relevo_state::JobRef;

impl McpServer {
    pub(crate) async fn dispatch(
        &self,
        request: ValidRequest,
        principal: Principal,
    ) -> Result<Reply, McpError> {
        self.admit(&request, &principal).await?;
        let now = self.clock.now_unix();
        let cursor = || -> Result<Option<String>, McpError> {
            match request.params.get("cursor") {
                None => Ok(None),
                Some(Value::String(c)) => Ok(Some(c.clone())),
                Some(_) => Err(McpError::invalid_params("Invalid cursor")),
            }
        };
        let list_named =
            |list: &str, key: &str, items: Vec<Value>| -> Result<JsonObject, McpError> {
                let (page, next) = cursor::page(
                    &self.keys,
                    list,
                    items,
                    cursor()?.as_deref(),
                    self.config.page_size,
                    now,
                )?;
                let mut result = JsonObject::new();
                result.insert(key.into(), Value::Array(page));
                if let Some(next) = next {
                    result.insert("nextCursor".into(), json!(next));
                }
                Ok(result)
            };
        let list = |key: &str, items: Vec<Value>| list_named(key, key, items);
        let app = &self.app;
        let result = match request.method {
            Method::Discover => {
                let mut result = JsonObject::new();
                result.insert("supportedVersions".into(), json!(self.supported_versions()));
                let mut capabilities = app.capabilities();
                if self.honours_subscriptions() && capabilities.get("resources").is_some() {
                    // `subscriptions/listen` watches any readable resource while its stream
                    // is open.
                    capabilities["resources"]["subscribe"] = json!(true);
                }
                if self.tasks.is_some() {
                    capabilities["extensions"][tasks::EXTENSION] = json!({});
                }
                result.insert("capabilities".into(), capabilities);
                if let Some(instructions) = &app.instructions {
                    result.insert("instructions".into(), json!(instructions));
                }
                cacheable(result, self.config.list_ttl_ms)
            }
            Method::ToolsList => {
                // MCP Apps: a client without the extension gets each tool's text-only variant
                // and no app-only tool.
                let apps = apps::client_supports(&request.client);
                let items = app
                    .tools()
                    .filter(|t| guard::visible(&principal, &t.scopes))
                    .filter(|t| apps || !apps::app_only(&t.meta))
                    .map(|t| for_client(apps, t.to_wire()));
                let mut result = self.per_caller(list("tools", items.collect())?);
                if app.tools().any(|t| apps::depends_on_client(&t.meta)) {
                    // The list differs with the client's capabilities: never shared.
                    result.insert("cacheScope".into(), json!("private"));
                }
                result
            }
            Method::ResourcesList => {
                // MCP Apps: a client without the extension is shown no view.
                let apps = apps::client_supports(&request.client);
                let items = app
                    .resources()
                    .filter(|r| guard::visible(&principal, &r.scopes))
                    .filter(|r| apps || !apps::app_only_resource(&r.uri, r.mime_type.as_deref()))
                    .map(|r| for_client(apps, r.to_wire()));
                let mut result = self.per_caller(list("resources", items.collect())?);
                if app.resources().any(|r| {
                    apps::app_only_resource(&r.uri, r.mime_type.as_deref())
                        || apps::depends_on_client(&r.meta)
                }) {
                    result.insert("cacheScope".into(), json!("private"));
                }
                result
            }
            Method::ResourcesTemplatesList => {
                let apps = apps::client_supports(&request.client);
                let items = app
                    .templates()
                    .filter(|t| guard::visible(&principal, &t.scopes))
                    .filter(|t| {
                        apps || !apps::app_only_resource(&t.uri_template, t.mime_type.as_deref())
                    })
                    .map(|t| for_client(apps, t.to_wire()));
                let mut result = self.per_caller(list("resourceTemplates", items.collect())?);
                if app.templates().any(|t| {
                    apps::app_only_resource(&t.uri_template, t.mime_type.as_deref())
                        || apps::depends_on_client(&t.meta)
                }) {
                    result.insert("cacheScope".into(), json!("private"));
                }
                result
            }
            Method::PromptsList => {
                let items = app
                    .prompts()
                    .filter(|p| guard::visible(&principal, &p.scopes))
                    .map(|p| p.to_wire());
                self.per_caller(list("prompts", items.collect())?)
            }
            Method::SkillsList => {
                let items = self
                    .visible_skills(&principal, request.method)?
                    .map(|s| s.entry().clone());
                let mut result = list("skills", items.collect())?;
                result.extend(self.skill_caching(app.skills(), self.config.list_ttl_ms));
                result
            }
            Method::SkillsGet => {
                let skill =
                    self.gettable_skill(&principal, string_param(&request.params, "uri")?)?;
                let mut result = JsonObject::new();
                result.insert("skill".into(), skill.entry().clone());
                result.extend(self.skill_caching([skill], self.config.read_ttl_ms));
                result
            }
            Method::ResourcesDirectoryRead => {
                let uri = string_param(&request.params, "uri")?;
                let children = self.directory(&principal, uri)?;
                list_named(
                    &format!("resources/directory/read {uri}"),
                    "resources",
                    children,
                )?
            }
            Method::Complete => {
                let apps = apps::client_supports(&request.client);
                self.complete(&request.params, &principal, apps).await?
            }
            Method::SubscriptionsListen => return self.listen(&request, &principal).await,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead => {
                return self.call(request, principal, now).await;
            }
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => {
                return self.task_method(&request, &principal).await;
            }
        };
        Ok(self.result_reply(&request, result, "complete"))
    }

    /// A list result for this caller: cacheable, but never shared across tokens when the list
    /// depends on the caller's scopes.
    fn per_caller(&self, result: JsonObject) -> JsonObject {
        let mut result = cacheable(result, self.config.list_ttl_ms);
        if !self.auth.is_open() {
            result.insert("cacheScope".into(), json!("private"));
        }
        result
    }

    /// The caching hints of a skills result over `skills`: `public` only when nothing in it
    /// depends on the caller (an open deployment, or no skill gated by scopes).
    fn skill_caching<'a>(
        &self,
        skills: impl IntoIterator<Item = &'a crate::registry::RegisteredSkill>,
        ttl_ms: u64,
    ) -> JsonObject {
        let mut result = cacheable(JsonObject::new(), ttl_ms);
        let gated = skills.into_iter().any(|s| !s.scopes.is_empty());
        if gated && !self.auth.is_open() {
            result.insert("cacheScope".into(), json!("private"));
        }
        result
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`: the caller's own tasks only; another
    /// principal's task id is an unknown task.
    async fn task_method(
        &self,
        request: &ValidRequest,
        principal: &Principal,
    ) -> Result<Reply, McpError> {
        let Some(engine) = &self.tasks else {
            return Err(McpError::MethodNotFound(request.method.as_str().into()));
        };
        if !request.client.declares_tasks() {
            return Err(tasks::tasks_required());
        }
        let task_id = string_param(&request.params, "taskId")?;
        let job = JobRef {
            tenant: principal.tenant.clone(),
            subject: principal.subject.clone(),
            id: task_id.into(),
        };
        let unknown =
            || McpError::invalid_params_with("Unknown task", json!({ "taskId": task_id }));
        let store_failure = crate::error::store_failure("task");
        let usage = if request.method == Method::TasksGet {
            TaskUse::Read
        } else {
            TaskUse::Write
        };
        let found = engine
            .store
            .get_job(&job)
            .await
            .map_err(&store_failure)?
            .ok_or_else(unknown)?;
        if !self.reachable_task(principal, &found, usage)? {
            return Err(unknown());
        }
        let result = match request.method {
            Method::TasksGet => tasks::detailed_task(&found),
            Method::TasksUpdate => {
                let Some(Value::Object(responses)) = request.params.get("inputResponses") else {
                    return Err(McpError::invalid_params(
                        "params.inputResponses must be an object",
                    ));
                };
                engine
                    .provide_input(&job, responses)
                    .await
                    .map_err(&store_failure)?
                    .ok_or_else(unknown)?;
                JsonObject::new()
            }
            _ => {
                engine
                    .cancel(&job)
                    .await
                    .map_err(&store_failure)?
                    .ok_or_else(unknown)?;
                JsonObject::new()
            }
        };
        Ok(self.result_reply(request, result, "complete"))
    }

    async fn complete(
        &self,
        params: &JsonObject,
        principal: &Principal,
        apps: bool,
    ) -> Result<JsonObject, McpError> {
        let reference = params
            .get("ref")
            .and_then(Value::as_object)
            .ok_or_else(|| McpError::invalid_params("params.ref is required"))?;
        let argument = params
            .get("argument")
            .and_then(Value::as_object)
            .ok_or_else(|| McpError::invalid_params("params.argument is required"))?;
        let (Some(arg_name), Some(prefix)) = (
            argument.get("name").and_then(Value::as_str),
            argument.get("value").and_then(Value::as_str),
        ) else {
            return Err(McpError::invalid_params(
                "argument.name and argument.value must be strings",
            ));
        };
        let context = resolved_arguments(params)?;
        let completion = match self.completable(principal, reference, arg_name, apps)? {
            Candidates::List(candidates) => Completion::prefixed(&candidates, prefix),
            Candidates::Function(complete) => {
                complete(CompletionRequest {
                    argument: arg_name.into(),
                    value: prefix.into(),
                    context,
                    principal: principal.clone(),
                })
                .await?
            }
        };
        let mut result = JsonObject::new();
        result.insert("completion".into(), completion.to_wire());
        Ok(result)
    }
}

/// `params.context.arguments` of `completion/complete`: the values already resolved, each a
/// string (`CompleteRequest.context.arguments: {[key: string]: string}`).
fn resolved_arguments(params: &JsonObject) -> Result<BTreeMap<String, String>, McpError> {
    let invalid = || McpError::invalid_params("context.arguments must map names to strings");
    let Some(context) = params.get("context") else {
        return Ok(BTreeMap::new());
    };
    let context = context
        .as_object()
        .ok_or_else(|| McpError::invalid_params("params.context must be an object"))?;
    match context.get("arguments") {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(arguments)) => arguments
            .iter()
            .map(|(name, value)| Ok((name.clone(), value.as_str().ok_or_else(invalid)?.into())))
            .collect(),
        Some(_) => Err(invalid()),
    }
}

/// A listed surface as this client sees it: as declared with the MCP Apps extension, its
/// text-only variant without ([`apps::text_only`]).
fn for_client(apps: bool, listed: Value) -> Value {
    if apps {
        listed
    } else {
        apps::text_only(listed)
    }
}

pub(crate) fn string_param<'a>(params: &'a JsonObject, key: &str) -> Result<&'a str, McpError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::invalid_params(format!("params.{key} must be a string")))
}
