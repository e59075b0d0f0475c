//! An app: its identity and its registries of tools, resources, templates, prompts and job kinds.

use std::collections::BTreeMap;
use std::sync::Arc;

use relevo_state::{Engine, JobRunner, Worker};

use crate::author::JobKind;
use crate::pages::Pages;
use crate::tasks::{TOOL_TASK_KIND, ToolTaskRunner};

use serde_json::{Value, json};

use super::rules::{self, Refused, refuse};
use super::skill::{self, RegisteredSkill, Skill};
use super::{
    Outcome, Prompt, Resource, ResourceTemplate, Tool, handler, insert_icons, insert_some,
};
use crate::wire::Icon;

/// Refused when `held` already has `key`.
fn unique<T>(kind: &'static str, held: &BTreeMap<String, T>, key: &str) -> Result<(), Refused> {
    if held.contains_key(key) {
        Err(Refused::Duplicate {
            kind,
            key: key.into(),
        })
    } else {
        Ok(())
    }
}

/// Who may reach the jobs of one kind through `tasks/get` (`read`) and `tasks/update` /
/// `tasks/cancel` (`write`), beside being their owner (a task is only ever its owner's).
///
/// A job started as a task ([`crate::author::ToolContext::start_task`]) is reachable by its
/// owner under [`TaskAccess::owner`] unless [`App::task_kind`] declares more for its kind; a kind
/// declared here makes its jobs reachable however they were started.
///
/// ```
/// use relevo_protocol::TaskAccess;
/// let access = TaskAccess::owner()
///     .read_scopes(["exports:read"])
///     .write_scopes(["exports:write"]);
/// assert_eq!(access.read, ["exports:read"]);
/// assert_eq!(TaskAccess::owner().write, Vec::<String>::new());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskAccess {
    /// Scopes for `tasks/get`.
    pub read: Vec<String>,
    /// Scopes for `tasks/update` and `tasks/cancel`.
    pub write: Vec<String>,
}

impl TaskAccess {
    /// The owner, holding no particular scope, reads and writes their own tasks.
    pub fn owner() -> Self {
        TaskAccess::default()
    }

    /// `tasks/get` also needs every one of `scopes`.
    pub fn read_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.read = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// `tasks/update` and `tasks/cancel` also need every one of `scopes`.
    pub fn write_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.write = scopes.into_iter().map(Into::into).collect();
        self
    }
}

/// An app: its identity and its registries, each kept sorted by its unique key so every list
/// and every page is deterministic.
///
/// Every runner takes an app as a function `fn(&Ports) -> App` ([`crate::AppBuilder`]): the
/// runner chooses the backends, the app what to build on them.
///
/// ```
/// use relevo_protocol::author::{NoArgs, ToolContext, ToolError};
/// use relevo_protocol::wire::ResourceContents;
/// use relevo_protocol::{App, Ports, Resource, Tool};
/// use serde_json::json;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Pong {
///     pong: bool,
/// }
///
/// async fn ping(_: NoArgs, _: ToolContext) -> Result<Pong, ToolError> {
///     Ok(Pong { pong: true })
/// }
///
/// fn app(_: &Ports) -> App {
///     App::new("pinger", "1.0.0")
///         .instructions("Answers pings.")
///         .tool(Tool::typed("ping", "Answers.", ping))
///         .resource(Resource::typed("pinger://about", "about", "text/plain", |_| async {
///             Ok(vec![ResourceContents::text("A pinger.", "pinger://about")])
///         }))
///         .with_manifest()
/// }
///
/// let app = app(&Ports::new(None));
/// let ping = app.find_tool("ping").expect("registered");
/// assert_eq!(ping.output_schema().expect("an object result")["properties"]["pong"]["type"], "boolean");
/// assert!(app.find_resource("relevo://manifest").is_some(), "with_manifest adds it");
/// assert_eq!(app.capabilities()["tools"], json!({}));
/// assert_eq!(app.capabilities().get("prompts"), None, "no prompt, no capability");
/// ```
#[derive(Clone)]
pub struct App {
    /// The server's name in `serverInfo`.
    pub name: String,
    /// The server's version in `serverInfo`.
    pub version: String,
    /// The server's human-readable title in `serverInfo`.
    pub title: Option<String>,
    /// What the server does, in `serverInfo`.
    pub description: Option<String>,
    /// The server's website, in `serverInfo` (`websiteUrl`).
    pub website_url: Option<String>,
    /// The server's icons in `serverInfo` (`https:` or `data:` sources, checked by
    /// [`App::icon`]).
    pub icons: Vec<Icon>,
    /// Instructions for the model, announced by `server/discover`.
    pub instructions: Option<String>,
    tools: BTreeMap<String, Tool>,
    resources: BTreeMap<String, Resource>,
    templates: BTreeMap<String, ResourceTemplate>,
    prompts: BTreeMap<String, Prompt>,
    skills: BTreeMap<String, RegisteredSkill>,
    task_kinds: BTreeMap<String, TaskAccess>,
    job_runners: BTreeMap<String, Arc<dyn JobRunner>>,
    pages: Option<Arc<dyn Pages>>,
}

impl App {
    /// An app with nothing registered yet.
    pub fn new(name: &str, version: &str) -> Self {
        App {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            website_url: None,
            icons: Vec::new(),
            instructions: None,
            tools: BTreeMap::new(),
            resources: BTreeMap::new(),
            templates: BTreeMap::new(),
            prompts: BTreeMap::new(),
            skills: BTreeMap::new(),
            task_kinds: BTreeMap::new(),
            job_runners: BTreeMap::new(),
            pages: None,
        }
    }

    /// Sets the instructions for the model.
    pub fn instructions(mut self, text: &str) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Sets the server's human-readable title, shown by clients in place of its name
    /// (`serverInfo.title`).
    ///
    /// ```
    /// use relevo_protocol::App;
    ///
    /// let app = App::new("weather", "1.0.0").title("Weather Service");
    /// assert_eq!(app.server_info()["title"], "Weather Service");
    /// ```
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets what the server does, for the people choosing it (`serverInfo.description`; the
    /// model's guidance goes in [`App::instructions`]).
    ///
    /// ```
    /// use relevo_protocol::App;
    ///
    /// let app = App::new("weather", "1.0.0").description("Forecasts and alerts.");
    /// assert_eq!(app.server_info()["description"], "Forecasts and alerts.");
    /// ```
    pub fn description(mut self, text: &str) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Sets the server's website (`serverInfo.websiteUrl`).
    ///
    /// ```
    /// use relevo_protocol::App;
    ///
    /// let app = App::new("weather", "1.0.0").website_url("https://weather.example.com");
    /// assert_eq!(app.server_info()["websiteUrl"], "https://weather.example.com");
    /// ```
    pub fn website_url(mut self, url: &str) -> Self {
        self.website_url = Some(url.into());
        self
    }

    /// Adds an icon of the server (`serverInfo.icons`, in order).
    ///
    /// # Panics
    ///
    /// When the icon's `src` is not an `https:` URL (with a host, without credentials) or a
    /// `data:` URI ([`rules::valid_icon_source`]): clients reject every other scheme.
    ///
    /// ```
    /// use relevo_protocol::App;
    /// use relevo_protocol::wire::Icon;
    ///
    /// let icon = Icon::new("https://weather.example.com/icon.png").with_sizes(vec!["48x48".into()]);
    /// let app = App::new("weather", "1.0.0").icon(icon);
    /// assert_eq!(app.server_info()["icons"][0]["sizes"], serde_json::json!(["48x48"]));
    /// ```
    #[track_caller]
    pub fn icon(mut self, icon: Icon) -> Self {
        refuse(rules::icons(
            "server",
            &self.name,
            std::slice::from_ref(&icon),
        ));
        self.icons.push(icon);
        self
    }

    /// The server's `Implementation` as `server/discover` (in `_meta`) and a 2025-11-25
    /// `initialize` (`serverInfo`) show it: name and version, and the title, description,
    /// website and icons when declared (absent, never `null`, when not).
    ///
    /// ```
    /// use relevo_protocol::App;
    /// use serde_json::json;
    ///
    /// let app = App::new("weather", "1.0.0");
    /// assert_eq!(app.server_info(), json!({ "name": "weather", "version": "1.0.0" }));
    /// ```
    pub fn server_info(&self) -> serde_json::Value {
        let mut info = json!({ "name": self.name, "version": self.version });
        insert_some(&mut info, "title", &self.title);
        insert_some(&mut info, "description", &self.description);
        insert_some(&mut info, "websiteUrl", &self.website_url);
        insert_icons(&mut info, &self.icons);
        info
    }

    /// Registers a tool.
    ///
    /// # Panics
    ///
    /// When the tool's name is not 1–128 characters of `[A-Za-z0-9_.-]`, when a tool of the
    /// same name is already registered, when a schema given as JSON declares a `$schema`
    /// other than JSON Schema 2020-12, when an `x-mcp-header` annotation of the input schema
    /// is not a unique RFC 9110 token on a statically reachable integer, string or boolean
    /// property, when an icon's `src` is neither `https:` nor `data:`, or when a `_meta` key is
    /// malformed or reserved for MCP ([`rules`](super::rules)): the message names the tool and
    /// the rule. Like a conflicting axum route, it is a bug of the app, seen when the app is
    /// built.
    #[track_caller]
    pub fn tool(mut self, tool: Tool) -> Self {
        refuse(rules::tool_name(&tool.name));
        refuse(unique("tool", &self.tools, &tool.name));
        refuse(rules::icons("tool", &tool.name, &tool.icons));
        refuse(rules::meta("tool", &tool.name, &tool.meta));
        refuse(rules::apps_tool(&tool.name, &tool.meta));
        if let Some(schema) = tool.input.known() {
            refuse(rules::dialect(&tool.name, "inputSchema", schema));
            refuse(rules::headers(&tool.name, schema));
        }
        if let Some(schema) = tool.output.known() {
            refuse(rules::dialect(&tool.name, "outputSchema", schema));
        }
        self.tools.insert(tool.name.clone(), tool);
        self
    }

    /// Registers a resource under its URI.
    ///
    /// # Panics
    ///
    /// When a resource of the same URI is already registered, when an icon's `src` is neither
    /// `https:` nor `data:`, or when a `_meta` key is malformed or reserved for MCP
    /// ([`rules`](super::rules)); the message names the resource and the rule.
    #[track_caller]
    pub fn resource(mut self, resource: Resource) -> Self {
        refuse(unique("resource", &self.resources, &resource.uri));
        refuse(rules::icons("resource", &resource.uri, &resource.icons));
        refuse(rules::meta("resource", &resource.uri, &resource.meta));
        refuse(rules::apps_resource(
            &resource.uri,
            resource.mime_type.as_deref(),
        ));
        self.resources.insert(resource.uri.clone(), resource);
        self
    }

    /// Registers a resource template under its URI template.
    ///
    /// # Panics
    ///
    /// When a template of the same URI template is already registered, when the URI matcher
    /// cannot honour the template (a prefix modifier, an exploded variable before another, a
    /// variable named twice, two adjacent expressions of ambiguous boundary, a malformed
    /// expression: [`ResourceTemplate::match_uri`]), when an icon's `src` is neither `https:`
    /// nor `data:`, or when a `_meta` key is malformed or reserved for MCP
    /// ([`rules`](super::rules)); the message names the template and the rule.
    #[track_caller]
    pub fn template(mut self, template: ResourceTemplate) -> Self {
        let key = &template.uri_template;
        refuse(rules::uri_template(key));
        refuse(unique("resource template", &self.templates, key));
        refuse(rules::icons("resource template", key, &template.icons));
        refuse(rules::meta("resource template", key, &template.meta));
        self.templates
            .insert(template.uri_template.clone(), template);
        self
    }

    /// Registers a prompt under its name.
    ///
    /// # Panics
    ///
    /// When a prompt of the same name is already registered, when an icon's `src` is neither
    /// `https:` nor `data:`, or when a `_meta` key is malformed or reserved for MCP
    /// ([`rules`](super::rules)); the message names the prompt and the rule.
    #[track_caller]
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        refuse(unique("prompt", &self.prompts, &prompt.name));
        refuse(rules::icons("prompt", &prompt.name, &prompt.icons));
        refuse(rules::meta("prompt", &prompt.name, &prompt.meta));
        self.prompts.insert(prompt.name.clone(), prompt);
        self
    }

    /// Registers a skill (the Skills extension): its entry for `skills/list` and `skills/get`,
    /// and each of its files as a `skill://` resource readable through `resources/read`, all
    /// gated by the skill's scopes. The frontmatter is parsed and every file's digest and size
    /// computed here, once.
    ///
    /// # Panics
    ///
    /// When the skill breaks the format ([`rules::skill`]: no `SKILL.md`, no frontmatter, a
    /// missing `name` or `description`, a name against the Agent Skills naming rules or unequal
    /// to the path's final segment, a bad file path, over the limits), when a skill at the same
    /// path is already registered, or when one of its file URIs is already a resource: the
    /// message names the skill and the rule.
    #[track_caller]
    pub fn skill(mut self, declared: Skill) -> Self {
        let frontmatter = match rules::skill(&declared) {
            Ok(frontmatter) => frontmatter,
            Err(refused) => {
                refuse(Err(refused));
                return self;
            }
        };
        let registered = RegisteredSkill::new(&declared, frontmatter);
        refuse(unique("skill", &self.skills, &registered.uri));
        for file in &registered.files {
            refuse(unique("resource", &self.resources, &file.uri));
        }
        for file in &registered.files {
            let (name, description) = if file.uri == registered.uri {
                (
                    registered.name().to_string(),
                    Some(registered.description()),
                )
            } else {
                let name = file.uri.rsplit('/').next().unwrap_or_default().to_string();
                (name, None)
            };
            let (uri, bytes) = (file.uri.clone(), file.bytes);
            let read = handler(move |_| {
                let contents = skill::contents(&uri, bytes);
                async move {
                    let mut result = crate::wire::JsonObject::new();
                    result.insert("contents".into(), json!([contents]));
                    Ok(Outcome::Complete(result))
                }
            });
            let mut resource = Resource::new(&file.uri, &name, skill::mime_type(&file.uri), read);
            if let Some(description) = description {
                resource = resource.description(description);
            }
            resource.scopes = registered.scopes.clone();
            self.resources.insert(file.uri.clone(), resource);
        }
        self.skills.insert(registered.uri.clone(), registered);
        self
    }

    /// Every skill, by the URI of its `SKILL.md`.
    pub fn skills(&self) -> impl Iterator<Item = &RegisteredSkill> {
        self.skills.values()
    }

    /// The skill whose `SKILL.md` is at `uri`.
    pub fn find_skill(&self, uri: &str) -> Option<&RegisteredSkill> {
        self.skills.get(uri)
    }

    /// Derives every schema a tool takes from a Rust type (those are derived lazily, at their
    /// first use, so that a Lambda cold start derives only what its request needs) and checks
    /// it as registration checks a schema given as JSON: its dialect, and the `x-mcp-header`
    /// rules of an input schema. The local server and the testkit's `TestServer` call it once
    /// at start, so a bad annotation on a typed tool fails `make run` and the app's tests,
    /// not a deployed call.
    ///
    /// # Panics
    ///
    /// As [`App::tool`] does, naming the tool and the rule.
    ///
    /// ```should_panic
    /// use relevo_protocol::author::{ToolContext, ToolError};
    /// use relevo_protocol::{App, Tool};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Args {
    ///     /// Mirrored into a header, but `number` may not be.
    ///     #[schemars(extend("x-mcp-header" = "Amount"))]
    ///     amount: f64,
    /// }
    ///
    /// async fn pay(args: Args, _: ToolContext) -> Result<String, ToolError> {
    ///     Ok(format!("{}", args.amount))
    /// }
    ///
    /// // Registration cannot see the derived schema; verifying derives it and refuses it.
    /// App::new("shop", "1").tool(Tool::typed("pay", "Pays.", pay)).verify_schemas();
    /// ```
    #[track_caller]
    pub fn verify_schemas(&self) {
        for tool in self.tools.values() {
            if tool.input.known().is_none()
                && let Some(schema) = tool.input.get()
            {
                refuse(rules::dialect(&tool.name, "inputSchema", schema));
                refuse(rules::headers(&tool.name, schema));
            }
            if tool.output.known().is_none()
                && let Some(schema) = tool.output.get()
            {
                refuse(rules::dialect(&tool.name, "outputSchema", schema));
            }
        }
    }

    /// Every tool, by name.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.tools.values()
    }

    /// The tool named `name`.
    pub fn find_tool(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name)
    }

    /// Every resource, by URI.
    pub fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.resources.values()
    }

    /// The resource at `uri` (not a template's).
    pub fn find_resource(&self, uri: &str) -> Option<&Resource> {
        self.resources.get(uri)
    }

    /// Every resource template, by URI template.
    pub fn templates(&self) -> impl Iterator<Item = &ResourceTemplate> {
        self.templates.values()
    }

    /// Makes every job of `kind` reachable as a task by its owner, under `access`
    /// ([`TaskAccess`]: scopes named, not positional). A job a tool starts with
    /// [`crate::author::ToolContext::start_task`] is reachable without this; declare the kind to
    /// ask for scopes, or to reach jobs started otherwise. Tool tasks are declared by their tool.
    ///
    /// ```
    /// use relevo_protocol::author::JobKind;
    /// use relevo_protocol::{App, TaskAccess};
    /// const EXPORT: JobKind<String, u64> = JobKind::new("export");
    /// let app = App::new("exports", "1.0.0").task_kind(
    ///     &EXPORT,
    ///     TaskAccess::owner().read_scopes(["exports:read"]).write_scopes(["exports:write"]),
    /// );
    /// assert_eq!(app.task_kinds().count(), 1);
    /// ```
    pub fn task_kind<I, O>(mut self, kind: &JobKind<I, O>, access: TaskAccess) -> Self {
        self.task_kinds.insert(kind.name().into(), access);
        self
    }

    /// The job engine as this app's tools reach it: `engine`, starting only the kinds the app
    /// runs (its [`App::job`] / [`App::job_runner`] kinds, and its tools' tasks).
    pub fn jobs(&self, engine: Arc<Engine>) -> crate::author::Jobs {
        let kinds = self
            .job_runners
            .keys()
            .cloned()
            .chain([TOOL_TASK_KIND.to_string()]);
        crate::author::Jobs::new(engine, kinds)
    }

    /// Runs the app's jobs of `kind` (started by its tools through `Ports::jobs`) in the worker
    /// with an untyped runner, which sees the raw job. A typed job is registered with
    /// [`App::job`] instead ([`crate::author::JobKind`]).
    pub fn job_runner(mut self, kind: &str, runner: Arc<dyn JobRunner>) -> Self {
        self.job_runners.insert(kind.into(), runner);
        self
    }

    /// The app's pages beside `/mcp`, served by the local gateway and the `pages` function.
    pub fn pages(mut self, pages: Arc<dyn Pages>) -> Self {
        self.pages = Some(pages);
        self
    }

    /// The app's pages, if it has any.
    pub fn find_pages(&self) -> Option<&Arc<dyn Pages>> {
        self.pages.as_ref()
    }

    /// Adds the manifest resource (`relevo://manifest`, [`crate::manifest`]) describing the app
    /// as it stands, filtered by each reader's scopes: call it last.
    pub fn with_manifest(self) -> App {
        crate::manifest::with_manifest(self)
    }

    /// The worker of this app: the runner of each job kind it declared, and the runner of its
    /// tools' tasks. Built after the app, so nothing is bound later.
    pub fn worker(self: &Arc<Self>, engine: Arc<Engine>) -> Worker {
        let tools = ToolTaskRunner::new(self.clone(), self.jobs(engine.clone()));
        let worker = Worker::new(engine).runner(TOOL_TASK_KIND, Arc::new(tools));
        self.job_runners
            .iter()
            .fold(worker, |worker, (kind, runner)| {
                worker.runner(kind, runner.clone())
            })
    }

    /// The declared task kinds and who may reach them.
    pub fn task_kinds(&self) -> impl Iterator<Item = (&String, &TaskAccess)> {
        self.task_kinds.iter()
    }

    /// Every prompt, by name.
    pub fn prompts(&self) -> impl Iterator<Item = &Prompt> {
        self.prompts.values()
    }

    /// The prompt named `name`.
    pub fn find_prompt(&self, name: &str) -> Option<&Prompt> {
        self.prompts.get(name)
    }

    /// True when the app serves an MCP Apps view (a `ui://` resource).
    pub fn has_views(&self) -> bool {
        self.resources
            .keys()
            .any(|uri| uri.starts_with(super::apps::SCHEME))
    }

    /// The tools whose MCP Apps `resourceUri` names no resource of the app, with that URI: a
    /// server refuses to be built while there is one (the spec's "Resource MUST exist on the
    /// server"). Checked once the app is whole, so tools and views register in any order.
    pub fn unresolved_views(&self) -> Vec<(String, String)> {
        self.tools
            .values()
            .filter_map(|tool| {
                let uri = super::apps::resource_uri(&tool.meta)?;
                (!self.resources.contains_key(uri)).then(|| (tool.name.clone(), uri.to_string()))
            })
            .collect()
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
        if !self.skills.is_empty() {
            // Skill files are resources (so `resources` is declared above), and every
            // directory of the skill namespace answers `resources/directory/read`.
            capabilities["extensions"] = json!({ skill::EXTENSION: { "directoryRead": true } });
        }
        if !self.prompts.is_empty() {
            capabilities["prompts"] = json!({});
        }
        if self.tools.values().any(|t| t.streams) {
            capabilities["logging"] = json!({});
        }
        capabilities["completions"] = json!({});
        if self.has_views() {
            capabilities["extensions"] = json!({
                super::apps::EXTENSION: { "mimeTypes": [super::apps::MIME_TYPE] }
            });
        }
        capabilities
    }
}
