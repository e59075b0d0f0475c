//! What an app author writes: tools, resources, resource templates and prompts, each a spec
//! plus a handler. Listing needs only the specs; calling runs the handler with a [`Call`].
//!
//! Handlers know nothing of HTTP or AWS. They return an [`Outcome`]: a complete result, or an
//! `input_required` asking the client for input (MRTR) with optional state that the server seals
//! before it leaves the process. Everything a handler needs across rounds comes back in
//! [`Call::state`], verified; nothing is kept in memory between requests.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::error::McpError;
use crate::notify::Notifier;
use crate::wire::{self, CallToolResult, GetPromptResult, JsonObject, ResourceContents, ToolAnnotations};

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
pub type Handler = Arc<dyn Fn(Call) -> BoxFuture<Result<Outcome, McpError>> + Send + Sync>;

/// Wraps an async closure as a [`Handler`].
pub fn handler<F, Fut>(f: F) -> Handler
where
    F: Fn(Call) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Outcome, McpError>> + Send + 'static,
{
    Arc::new(move |call| Box::pin(f(call)))
}

/// What the client declared on this request.
#[derive(Debug, Clone, Default)]
pub struct ClientContext {
    pub protocol_version: String,
    pub capabilities: JsonObject,
    pub info: Option<Value>,
}

impl ClientContext {
    /// True when the client declared the capability (a top-level key such as `sampling`).
    pub fn declares(&self, capability: &str) -> bool {
        self.capabilities.get(capability).is_some_and(Value::is_object)
    }

    /// True when the client can answer this input request on this request.
    pub fn can_answer(&self, request: &InputRequest) -> bool {
        match request {
            InputRequest::Elicit { url: false, .. } => self
                .capabilities
                .get("elicitation")
                .and_then(Value::as_object)
                .is_some_and(|e| e.contains_key("form") || !e.contains_key("url")),
            InputRequest::Elicit { url: true, .. } => {
                self.capabilities.get("elicitation").and_then(Value::as_object).is_some_and(|e| e.contains_key("url"))
            }
            InputRequest::Sample(_) => self.declares("sampling"),
            InputRequest::ListRoots => self.declares("roots"),
        }
    }
}

/// One request a server may put in `inputRequests`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`; `url` selects URL mode (else form mode).
    Elicit { params: Value, url: bool },
    /// `sampling/createMessage` (deprecated in 2026-07-28, still allowed).
    Sample(Value),
    /// `roots/list` (deprecated in 2026-07-28, still allowed).
    ListRoots,
}

impl InputRequest {
    /// A form-mode elicitation: a message and a flat object schema.
    pub fn form(message: &str, requested_schema: Value) -> Self {
        InputRequest::Elicit {
            params: json!({ "mode": "form", "message": message, "requestedSchema": requested_schema }),
            url: false,
        }
    }

    /// A URL-mode elicitation.
    pub fn url(message: &str, url: &str) -> Self {
        InputRequest::Elicit { params: json!({ "mode": "url", "message": message, "url": url }), url: true }
    }

    /// A sampling request with one user text message.
    pub fn sample_text(prompt: &str, max_tokens: u32) -> Self {
        InputRequest::Sample(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": max_tokens
        }))
    }

    /// The capability object a client must declare for this request, for `-32021`.
    pub fn required_capability(&self) -> Value {
        match self {
            InputRequest::Elicit { url: false, .. } => json!({ "elicitation": {} }),
            InputRequest::Elicit { url: true, .. } => json!({ "elicitation": { "url": {} } }),
            InputRequest::Sample(_) => json!({ "sampling": {} }),
            InputRequest::ListRoots => json!({ "roots": {} }),
        }
    }

    pub fn to_wire(&self) -> Value {
        match self {
            InputRequest::Elicit { params, .. } => json!({ "method": "elicitation/create", "params": params }),
            InputRequest::Sample(params) => json!({ "method": "sampling/createMessage", "params": params }),
            InputRequest::ListRoots => json!({ "method": "roots/list", "params": {} }),
        }
    }
}

/// A client's answer to an elicitation, as it arrived in `inputResponses`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ElicitAnswer {
    pub action: ElicitAction,
    #[serde(default)]
    pub content: Option<JsonObject>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

/// What a handler returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The method's result object, without `resultType` (the server adds it).
    Complete(JsonObject),
    /// Ask the client for input; `state` is sealed into `requestState` and comes back verified.
    InputRequired { requests: BTreeMap<String, InputRequest>, state: Option<Value> },
    /// The work continues as a task (only for `tools/call`, only when the client declared the
    /// Tasks extension): the job is already durably created.
    TaskCreated(Box<relevo_state::Job>),
}

impl Outcome {
    pub fn tool(result: CallToolResult) -> Self {
        let mut object = wire::to_object(&result);
        object.remove("resultType");
        Outcome::Complete(object)
    }

    /// A tool execution error (`isError: true`) with one text block: input validation and
    /// business failures, as the spec asks, not JSON-RPC errors.
    pub fn tool_error(message: impl Into<String>) -> Self {
        Outcome::tool(CallToolResult::error(vec![wire::ContentBlock::text(message.into())]))
    }

    pub fn prompt(result: GetPromptResult) -> Self {
        let mut object = wire::to_object(&result);
        object.remove("resultType");
        Outcome::Complete(object)
    }

    pub fn contents(contents: Vec<ResourceContents>) -> Self {
        let mut object = JsonObject::new();
        object.insert("contents".into(), serde_json::to_value(contents).unwrap_or(Value::Null));
        Outcome::Complete(object)
    }

    /// Asks for one input, optionally carrying state to the next round.
    pub fn ask(key: &str, request: InputRequest, state: Option<Value>) -> Self {
        Outcome::InputRequired { requests: BTreeMap::from([(key.to_string(), request)]), state }
    }
}

/// Everything a handler gets for one call.
#[derive(Debug, Clone)]
pub struct Call {
    /// Tool arguments, or prompt arguments (string values); empty for resources.
    pub arguments: JsonObject,
    /// The resource URI for `resources/read`.
    pub uri: Option<String>,
    /// `inputResponses` of a retry, empty on the first round.
    pub input_responses: JsonObject,
    /// The verified payload of `requestState`, if the client echoed one.
    pub state: Option<Value>,
    pub client: ClientContext,
    /// The verified caller: key every record by its tenant (and subject, if personal).
    pub principal: Principal,
    pub notifier: Notifier,
}

impl Call {
    /// Deserializes the arguments; a mismatch is a tool execution error the model can read.
    pub fn args<T: serde::de::DeserializeOwned>(&self) -> Result<T, Outcome> {
        serde_json::from_value(Value::Object(self.arguments.clone()))
            .map_err(|e| Outcome::tool_error(format!("Invalid arguments: {e}")))
    }

    /// The answer to elicitation `key`, if present and well-formed.
    pub fn elicitation(&self, key: &str) -> Option<ElicitAnswer> {
        self.input_responses.get(key).and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// The raw answer under `key`, if present.
    pub fn input(&self, key: &str) -> Option<&Value> {
        self.input_responses.get(key)
    }
}

/// A tool: its spec is listed verbatim; its handler runs on `tools/call`.
#[derive(Clone)]
pub struct Tool {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    /// Kept verbatim: every JSON Schema 2020-12 keyword survives listing.
    pub input_schema: JsonObject,
    pub output_schema: Option<JsonObject>,
    pub annotations: Option<ToolAnnotations>,
    /// Client capabilities the tool cannot run without (`-32021` when missing).
    pub required_capabilities: Option<Value>,
    /// OAuth scopes a caller must hold to call the tool (403 `insufficient_scope` otherwise);
    /// callers without them do not see it in `tools/list`.
    pub scopes: Vec<String>,
    /// The tool sends progress or log notifications, so the response may be an SSE stream.
    pub streams: bool,
    /// How clients may cache this tool's results (stated in the description `tools/list` shows).
    pub cache: CachePolicy,
    /// Read domains (dot-glob patterns) a successful call invalidates; announced in a
    /// `<cache_invalidation …/>` tag as the first content block of the result.
    pub invalidates: Vec<String>,
    /// Whether calls run as tasks (Tasks extension).
    pub task_support: crate::tasks::TaskSupport,
    /// For task tools: runs synchronously before the task is created, so any input the task needs
    /// is gathered by MRTR first; its `Complete` outcome lets the task start.
    pub gather: Option<Handler>,
    /// The compiled `input_schema` every call's arguments are checked against.
    pub input_check: crate::schema::InputSchema,
    pub handler: Handler,
}

impl Tool {
    pub fn new(name: &str, description: &str, input_schema: Value, handler: Handler) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: input_schema.as_object().cloned().unwrap_or_default(),
            output_schema: None,
            annotations: None,
            required_capabilities: None,
            scopes: Vec::new(),
            streams: false,
            cache: CachePolicy::Unstated,
            invalidates: Vec::new(),
            task_support: crate::tasks::TaskSupport::Forbidden,
            gather: None,
            input_check: crate::schema::InputSchema::default(),
            handler,
        }
    }

    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.into());
        self
    }

    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = schema.as_object().cloned();
        self
    }

    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    pub fn requires(mut self, capabilities: Value) -> Self {
        self.required_capabilities = Some(capabilities);
        self
    }

    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = owned(scopes);
        self
    }

    /// Results never change (a catalog): `[Cache-Control: immutable]`.
    pub fn cache_immutable(mut self) -> Self {
        self.cache = CachePolicy::Immutable;
        self
    }

    /// Results are per-call and must not be reused: `[Cache-Control: no-store]`.
    pub fn cache_no_store(mut self) -> Self {
        self.cache = CachePolicy::NoStore;
        self
    }

    pub fn invalidates(mut self, domains: &[&str]) -> Self {
        self.invalidates = domains.iter().map(|d| d.to_string()).collect();
        self
    }

    pub fn tasks(mut self, support: crate::tasks::TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    pub fn gather_before_task(mut self, gather: Handler) -> Self {
        self.gather = Some(gather);
        self
    }

    pub fn streaming(mut self) -> Self {
        self.streams = true;
        self
    }

    /// `x-mcp-header` names declared on top-level properties: (header name, argument name, type).
    pub fn header_params(&self) -> Vec<(String, String, String)> {
        let Some(properties) = self.input_schema.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        properties
            .iter()
            .filter_map(|(arg, schema)| {
                let header = schema.get("x-mcp-header")?.as_str()?;
                let kind = schema.get("type").and_then(Value::as_str).unwrap_or("string");
                Some((header.to_string(), arg.clone(), kind.to_string()))
            })
            .collect()
    }

    pub fn to_wire(&self) -> Value {
        let description = match self.cache {
            CachePolicy::Unstated => self.description.clone(),
            CachePolicy::Immutable => format!("{} [Cache-Control: immutable]", self.description),
            CachePolicy::NoStore => format!("{} [Cache-Control: no-store]", self.description),
        };
        let mut tool = json!({
            "name": self.name,
            "description": description,
            "inputSchema": self.input_schema,
        });
        if let Some(title) = &self.title {
            tool["title"] = json!(title);
        }
        if let Some(schema) = &self.output_schema {
            tool["outputSchema"] = json!(schema);
        }
        if let Some(annotations) = &self.annotations {
            tool["annotations"] = serde_json::to_value(annotations).unwrap_or(Value::Null);
        }
        tool
    }
}

/// A tool's declared cache policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CachePolicy {
    #[default]
    Unstated,
    Immutable,
    NoStore,
}

/// A concrete resource with a fixed URI.
#[derive(Clone)]
pub struct Resource {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    /// Per-caller content: reads carry `cacheScope: private`.
    pub private: bool,
    /// OAuth scopes a caller must hold to read it, list it, or subscribe to it.
    pub scopes: Vec<String>,
    pub handler: Handler,
}

impl Resource {
    pub fn new(uri: &str, name: &str, mime_type: &str, handler: Handler) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: Some(mime_type.into()),
            private: false,
            scopes: Vec::new(),
            handler,
        }
    }

    pub fn description(mut self, text: &str) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Marks the content as per-caller: reads carry `cacheScope: private`.
    pub fn private(mut self) -> Self {
        self.private = true;
        self
    }

    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = owned(scopes);
        self
    }

    pub fn to_wire(&self) -> Value {
        let mut resource = json!({ "uri": self.uri, "name": self.name });
        insert_some(&mut resource, "title", &self.title);
        insert_some(&mut resource, "description", &self.description);
        insert_some(&mut resource, "mimeType", &self.mime_type);
        resource
    }
}

/// A family of resources named by an RFC 6570 level-1 template such as `test://template/{id}/data`.
#[derive(Clone)]
pub struct ResourceTemplate {
    pub uri_template: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    /// Completion candidates per template variable.
    pub completions: BTreeMap<String, Vec<String>>,
    /// Per-caller content: reads carry `cacheScope: private`.
    pub private: bool,
    /// OAuth scopes a caller must hold to read, list, complete or subscribe to its resources.
    pub scopes: Vec<String>,
    pub handler: Handler,
}

impl ResourceTemplate {
    pub fn new(uri_template: &str, name: &str, mime_type: &str, handler: Handler) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: Some(mime_type.into()),
            completions: BTreeMap::new(),
            private: false,
            scopes: Vec::new(),
            handler,
        }
    }

    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = owned(scopes);
        self
    }

    pub fn description(mut self, text: &str) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Marks the content as per-caller: reads carry `cacheScope: private`.
    pub fn private(mut self) -> Self {
        self.private = true;
        self
    }

    /// Variables bound by matching `uri` against the template, or `None` if it does not match.
    /// A variable matches one or more characters other than `/`.
    pub fn match_uri(&self, uri: &str) -> Option<JsonObject> {
        let mut variables = JsonObject::new();
        let mut rest = uri;
        let mut template = self.uri_template.as_str();
        while !template.is_empty() {
            if let Some(after_brace) = template.strip_prefix('{') {
                let (name, after) = after_brace.split_once('}')?;
                let literal_end = after.find('{').unwrap_or(after.len());
                let next_literal = &after[..literal_end];
                let end = if next_literal.is_empty() { rest.len() } else { rest.find(next_literal)? };
                let value = &rest[..end];
                if value.is_empty() || value.contains('/') {
                    return None;
                }
                variables.insert(name.to_string(), json!(value));
                rest = &rest[end..];
                template = after;
            } else {
                let literal_end = template.find('{').unwrap_or(template.len());
                rest = rest.strip_prefix(&template[..literal_end])?;
                template = &template[literal_end..];
            }
        }
        rest.is_empty().then_some(variables)
    }

    pub fn to_wire(&self) -> Value {
        let mut template = json!({ "uriTemplate": self.uri_template, "name": self.name });
        insert_some(&mut template, "title", &self.title);
        insert_some(&mut template, "description", &self.description);
        insert_some(&mut template, "mimeType", &self.mime_type);
        template
    }
}

#[derive(Clone, Debug)]
pub struct PromptArgument {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
    /// Completion candidates offered by `completion/complete`.
    pub completions: Vec<String>,
}

impl PromptArgument {
    pub fn required(name: &str, description: &str) -> Self {
        PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required: true,
            completions: Vec::new(),
        }
    }

    pub fn optional(name: &str, description: &str) -> Self {
        PromptArgument { required: false, ..PromptArgument::required(name, description) }
    }

    pub fn completions(mut self, values: &[&str]) -> Self {
        self.completions = values.iter().map(|v| v.to_string()).collect();
        self
    }
}

#[derive(Clone)]
pub struct Prompt {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<PromptArgument>,
    /// OAuth scopes a caller must hold to get, list or complete it.
    pub scopes: Vec<String>,
    pub handler: Handler,
}

impl Prompt {
    pub fn new(name: &str, description: &str, arguments: Vec<PromptArgument>, handler: Handler) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            arguments,
            scopes: Vec::new(),
            handler,
        }
    }

    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = owned(scopes);
        self
    }

    pub fn to_wire(&self) -> Value {
        let mut prompt = json!({ "name": self.name });
        insert_some(&mut prompt, "title", &self.title);
        insert_some(&mut prompt, "description", &self.description);
        if !self.arguments.is_empty() {
            let arguments: Vec<Value> = self
                .arguments
                .iter()
                .map(|a| {
                    let mut argument = json!({ "name": a.name, "required": a.required });
                    insert_some(&mut argument, "description", &a.description);
                    argument
                })
                .collect();
            prompt["arguments"] = json!(arguments);
        }
        prompt
    }
}

fn owned(scopes: &[&str]) -> Vec<String> {
    scopes.iter().map(|s| s.to_string()).collect()
}

/// Who may reach the jobs of one kind through `tasks/get` (`read`) and `tasks/update` /
/// `tasks/cancel` (`write`). A kind the app does not declare is not reachable through them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskAccess {
    pub read: Vec<String>,
    pub write: Vec<String>,
}

fn insert_some(target: &mut Value, key: &str, value: &Option<String>) {
    if let Some(value) = value {
        target[key] = json!(value);
    }
}

/// An app: its identity and its registries, each kept sorted by its unique key so every list
/// and every page is deterministic.
#[derive(Clone)]
pub struct App {
    pub name: String,
    pub version: String,
    pub instructions: Option<String>,
    tools: BTreeMap<String, Tool>,
    resources: BTreeMap<String, Resource>,
    templates: BTreeMap<String, ResourceTemplate>,
    prompts: BTreeMap<String, Prompt>,
    task_kinds: BTreeMap<String, TaskAccess>,
}

impl App {
    pub fn new(name: &str, version: &str) -> Self {
        App {
            name: name.into(),
            version: version.into(),
            instructions: None,
            tools: BTreeMap::new(),
            resources: BTreeMap::new(),
            templates: BTreeMap::new(),
            prompts: BTreeMap::new(),
            task_kinds: BTreeMap::new(),
        }
    }

    pub fn instructions(mut self, text: &str) -> Self {
        self.instructions = Some(text.into());
        self
    }

    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.insert(tool.name.clone(), tool);
        self
    }

    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.insert(resource.uri.clone(), resource);
        self
    }

    pub fn template(mut self, template: ResourceTemplate) -> Self {
        self.templates.insert(template.uri_template.clone(), template);
        self
    }

    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.insert(prompt.name.clone(), prompt);
        self
    }

    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.tools.values()
    }

    pub fn find_tool(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name)
    }

    pub fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.resources.values()
    }

    pub fn find_resource(&self, uri: &str) -> Option<&Resource> {
        self.resources.get(uri)
    }

    pub fn templates(&self) -> impl Iterator<Item = &ResourceTemplate> {
        self.templates.values()
    }

    /// Makes jobs of `kind` (started by the app's own tools) reachable as tasks, for callers
    /// holding `read` (get) or `write` (update, cancel). Tool tasks are declared by their tool.
    pub fn task_kind(mut self, kind: &str, read: &[&str], write: &[&str]) -> Self {
        self.task_kinds.insert(kind.into(), TaskAccess { read: owned(read), write: owned(write) });
        self
    }

    /// The declared task kinds and who may reach them.
    pub fn task_kinds(&self) -> impl Iterator<Item = (&String, &TaskAccess)> {
        self.task_kinds.iter()
    }

    pub fn prompts(&self) -> impl Iterator<Item = &Prompt> {
        self.prompts.values()
    }

    pub fn find_prompt(&self, name: &str) -> Option<&Prompt> {
        self.prompts.get(name)
    }

    /// The server capabilities this app can honour, as `server/discover` advertises them.
    pub fn capabilities(&self) -> Value {
        let mut capabilities = json!({});
        if !self.tools.is_empty() {
            capabilities["tools"] = json!({});
        }
        if !self.resources.is_empty() || !self.templates.is_empty() {
            capabilities["resources"] = json!({});
        }
        if !self.prompts.is_empty() {
            capabilities["prompts"] = json!({});
        }
        if self.tools.values().any(|t| t.streams) {
            capabilities["logging"] = json!({});
        }
        capabilities["completions"] = json!({});
        capabilities
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop() -> Handler {
        handler(|_| async { Ok(Outcome::Complete(JsonObject::new())) })
    }

    #[test]
    fn template_binds_variables_and_rejects_other_uris() {
        let template = ResourceTemplate::new("test://template/{id}/data", "t", "application/json", noop());
        assert_eq!(
            template.match_uri("test://template/42/data"),
            Some(json!({"id": "42"}).as_object().cloned().unwrap())
        );
        assert_eq!(template.match_uri("test://template//data"), None);
        assert_eq!(template.match_uri("test://template/4/2/data"), None);
        assert_eq!(template.match_uri("test://template/42/datum"), None);
        let trailing = ResourceTemplate::new("file:///{path}", "t", "text/plain", noop());
        assert_eq!(trailing.match_uri("file:///a.txt"), Some(json!({"path": "a.txt"}).as_object().cloned().unwrap()));
    }

    #[test]
    fn header_params_come_from_top_level_properties_only() {
        let tool = Tool::new(
            "t",
            "d",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "nested": {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "X"}}}
            }}),
            noop(),
        );
        assert_eq!(tool.header_params(), vec![("Region".into(), "region".into(), "string".into())]);
    }

    #[test]
    fn form_elicitation_needs_form_capability_and_url_needs_url() {
        let form = InputRequest::form("name?", json!({"type": "object"}));
        let url = InputRequest::url("pay", "https://example.com/pay");
        let client =
            |caps: Value| ClientContext { capabilities: caps.as_object().cloned().unwrap(), ..Default::default() };
        assert!(client(json!({"elicitation": {}})).can_answer(&form));
        assert!(!client(json!({"elicitation": {}})).can_answer(&url));
        assert!(!client(json!({"elicitation": {"url": {}}})).can_answer(&form));
        assert!(client(json!({"elicitation": {"url": {}, "form": {}}})).can_answer(&url));
        assert!(!client(json!({})).can_answer(&InputRequest::ListRoots));
    }
}
