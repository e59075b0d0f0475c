//! A tool: the spec `tools/list` shows verbatim, its declared policy, and its handler.

use std::sync::{Arc, LazyLock, OnceLock};

use serde_json::{Value, json};

use super::rules::{self, HeaderParam, Refused};
use super::{Handler, insert_icons, insert_meta, owned};
use crate::wire::{Icon, JsonObject, ToolAnnotations};

type Derive = Arc<dyn Fn() -> Option<JsonObject> + Send + Sync>;

/// A tool's schema: given as JSON, or derived from a Rust type the first time it is needed, so a
/// cold start derives only the schemas its request uses (one for a `tools/call`, none for a
/// `resources/read`). Clones share the derived schema.
#[derive(Clone)]
pub struct Schema {
    cell: Arc<OnceLock<Option<JsonObject>>>,
    derive: Option<Derive>,
    /// The `x-mcp-header` parameters of the schema, found once ([`Tool::header_params`]): every
    /// `tools/call` checks them, and walking the schema each time cost more than the check.
    headers: Arc<OnceLock<Result<Arc<[HeaderParam]>, Refused>>>,
}

impl Schema {
    /// A schema given as JSON (`None`: no schema).
    pub fn given(schema: Option<JsonObject>) -> Self {
        Schema {
            cell: Arc::new(OnceLock::from(schema)),
            derive: None,
            headers: Arc::default(),
        }
    }

    /// A schema derived by `derive` the first time it is read.
    pub fn derived(derive: impl Fn() -> Option<JsonObject> + Send + Sync + 'static) -> Self {
        Schema {
            cell: Arc::new(OnceLock::new()),
            derive: Some(Arc::new(derive)),
            headers: Arc::default(),
        }
    }

    /// The schema if it is known without deriving it: given, or derived already.
    pub fn known(&self) -> Option<&JsonObject> {
        self.cell.get().and_then(Option::as_ref)
    }

    /// The schema, derived now if it has not been yet.
    pub fn get(&self) -> Option<&JsonObject> {
        self.cell
            .get_or_init(|| self.derive.as_ref().and_then(|derive| derive()))
            .as_ref()
    }
}

static NO_SCHEMA: LazyLock<JsonObject> = LazyLock::new(JsonObject::new);

/// A tool: its spec is listed verbatim; its handler runs on `tools/call`.
#[derive(Clone)]
pub struct Tool {
    /// The unique name `tools/call` names it by.
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// Icons a client may show beside it (`https:` or `data:` sources, checked at registration).
    pub icons: Vec<Icon>,
    /// Its `_meta` object, listed as declared (keys checked at registration).
    pub meta: JsonObject,
    /// What the tool does, for the model.
    pub description: String,
    /// Kept verbatim: every JSON Schema 2020-12 keyword survives listing.
    pub input: Schema,
    /// The `outputSchema`, if the result is structured.
    pub output: Schema,
    /// Hints for the client (read-only, destructive, idempotent, open-world).
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
    /// The compiled `output_schema` every successful result is checked against.
    pub output_check: super::OutputCheck,
    /// Runs on `tools/call`.
    pub handler: Handler,
}

impl Tool {
    /// A tool with a JSON input schema and an untyped handler; [`Tool::typed`] derives both from
    /// Rust types instead.
    pub fn new(name: &str, description: &str, input_schema: Value, handler: Handler) -> Self {
        Tool {
            name: name.into(),
            title: None,
            icons: Vec::new(),
            meta: JsonObject::new(),
            description: description.into(),
            input: Schema::given(Some(input_schema.as_object().cloned().unwrap_or_default())),
            output: Schema::given(None),
            annotations: None,
            required_capabilities: None,
            scopes: Vec::new(),
            streams: false,
            cache: CachePolicy::Unstated,
            invalidates: Vec::new(),
            task_support: crate::tasks::TaskSupport::Forbidden,
            gather: None,
            input_check: crate::schema::InputSchema::default(),
            output_check: super::OutputCheck::default(),
            handler,
        }
    }

    /// Sets the human-readable title.
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an icon a client may show beside the tool (`tools/list` lists them in order).
    ///
    /// Its `src` must be an `https:` URL or a `data:` URI: [`crate::App::tool`] refuses any
    /// other ([`super::rules::valid_icon_source`]).
    ///
    /// ```
    /// # use relevo_protocol::{Tool, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// use relevo_protocol::wire::{Icon, IconTheme};
    /// use serde_json::json;
    ///
    /// let tool = Tool::new("forecast", "Forecasts.", json!({ "type": "object" }), run)
    ///     .title("Weather forecast")
    ///     .icon(Icon::new("https://example.com/sun.png").with_mime_type("image/png"))
    ///     .icon(Icon::new("https://example.com/moon.svg").with_theme(IconTheme::Dark));
    /// let listed = tool.to_wire();
    /// assert_eq!(listed["title"], "Weather forecast");
    /// let sun = json!({ "src": "https://example.com/sun.png", "mimeType": "image/png" });
    /// assert_eq!(listed["icons"][0], sun);
    /// assert_eq!(listed["icons"][1]["theme"], "dark");
    /// ```
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets the key `key` of the tool's `_meta` object to `value` (`tools/list` lists it).
    ///
    /// The key must follow the spec's `_meta` key format and may not be reserved for MCP, save
    /// the keys an extension defines: [`crate::App::tool`] refuses it otherwise
    /// ([`super::rules::meta`]).
    ///
    /// ```
    /// # use relevo_protocol::{Tool, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// use serde_json::json;
    ///
    /// let tool = Tool::new("refund", "Refunds an order.", json!({ "type": "object" }), run)
    ///     .meta("com.example/owner", json!("billing"))
    ///     .meta("ui", json!({ "resourceUri": "ui://refund/form.html" }));
    /// assert_eq!(
    ///     tool.to_wire()["_meta"],
    ///     json!({
    ///         "com.example/owner": "billing",
    ///         "ui": { "resourceUri": "ui://refund/form.html" },
    ///     })
    /// );
    /// ```
    pub fn meta(mut self, key: &str, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Points the tool at a view (MCP Apps): `_meta.ui.resourceUri`, a `ui://` resource of the
    /// app (checked when the server is built). A host with the extension renders the tool's
    /// results in that view; every other client still reads the tool's text content, so the
    /// result keeps a meaningful text fallback ([`super::apps`]).
    ///
    /// ```
    /// # use relevo_protocol::{Tool, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// use relevo_protocol::registry::apps::Visibility;
    /// use serde_json::json;
    ///
    /// let tool = Tool::new("decide", "Decides.", json!({ "type": "object" }), run)
    ///     .view("ui://shop/approval")
    ///     .visibility(&[Visibility::App]);
    /// assert_eq!(
    ///     tool.to_wire()["_meta"]["ui"],
    ///     json!({ "resourceUri": "ui://shop/approval", "visibility": ["app"] })
    /// );
    /// ```
    pub fn view(self, resource_uri: &str) -> Self {
        self.ui_field("resourceUri", json!(resource_uri))
    }

    /// Says who may call the tool (MCP Apps `_meta.ui.visibility`; both when not declared). An
    /// app-only tool (`[App]`) is hidden from, and refused to, clients without the extension.
    pub fn visibility(self, visibility: &[super::apps::Visibility]) -> Self {
        let names: Vec<&str> = visibility.iter().map(|v| v.as_str()).collect();
        self.ui_field("visibility", json!(names))
    }

    fn ui_field(mut self, key: &str, value: Value) -> Self {
        let ui = self
            .meta
            .entry(super::apps::META_KEY)
            .or_insert_with(|| json!({}));
        if !ui.is_object() {
            *ui = json!({});
        }
        ui[key] = value;
        self
    }

    /// The declared `outputSchema`: a successful result's `structuredContent` conforms to it.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output = Schema::given(schema.as_object().cloned());
        self.output_check = super::OutputCheck::default();
        self
    }

    /// The `inputSchema` (an empty object when none was given).
    pub fn input_schema(&self) -> &JsonObject {
        self.input.get().unwrap_or(&NO_SCHEMA)
    }

    /// The `outputSchema`, if any.
    pub fn output_schema(&self) -> Option<&JsonObject> {
        self.output.get()
    }

    /// Sets the tool's annotations.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Client capabilities a call needs (`-32021` when the client did not declare them).
    pub fn requires(mut self, capabilities: Value) -> Self {
        self.required_capabilities = Some(capabilities);
        self
    }

    /// OAuth scopes a caller must hold to see and call the tool.
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

    /// Read domains (dot-glob patterns, such as `cart.*`) a successful call invalidates.
    pub fn invalidates(mut self, domains: &[&str]) -> Self {
        self.invalidates = domains.iter().map(|d| d.to_string()).collect();
        self
    }

    /// Whether calls may, must or must not run as tasks (Tasks extension).
    pub fn tasks(mut self, support: crate::tasks::TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// For a task tool: a handler run before the task is created, to gather its input by MRTR.
    pub fn gather_before_task(mut self, gather: Handler) -> Self {
        self.gather = Some(gather);
        self
    }

    /// The tool sends progress or log notifications: its answer may be an SSE stream.
    pub fn streaming(mut self) -> Self {
        self.streams = true;
        self
    }

    /// The arguments a call mirrors into `Mcp-Param-*` headers: every property of the
    /// `inputSchema` annotated with `x-mcp-header`, nested ones included, or the constraint an
    /// annotation breaks ([`rules::header_params`]).
    /// Found once per schema and kept.
    pub fn header_params(&self) -> Result<Arc<[HeaderParam]>, Refused> {
        self.input
            .headers
            .get_or_init(|| rules::header_params(&self.name, self.input_schema()).map(Arc::from))
            .clone()
    }

    /// The tool as `tools/list` shows it (the cache policy stated in the description).
    pub fn to_wire(&self) -> Value {
        let description = match self.cache {
            CachePolicy::Unstated => self.description.clone(),
            CachePolicy::Immutable => format!("{} [Cache-Control: immutable]", self.description),
            CachePolicy::NoStore => format!("{} [Cache-Control: no-store]", self.description),
        };
        let mut tool = json!({
            "name": self.name,
            "description": description,
            "inputSchema": self.input_schema(),
        });
        if let Some(title) = &self.title {
            tool["title"] = json!(title);
        }
        insert_icons(&mut tool, &self.icons);
        if let Some(schema) = self.output_schema() {
            tool["outputSchema"] = json!(schema);
        }
        if let Some(annotations) = &self.annotations {
            tool["annotations"] = serde_json::to_value(annotations).unwrap_or(Value::Null);
        }
        insert_meta(&mut tool, &self.meta);
        tool
    }
}

/// A tool's declared cache policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CachePolicy {
    /// Nothing is said.
    #[default]
    Unstated,
    /// Results never change: `[Cache-Control: immutable]`.
    Immutable,
    /// Results are per call: `[Cache-Control: no-store]`.
    NoStore,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Outcome, handler};
    use serde_json::json;

    fn noop() -> Handler {
        handler(|_| async { Ok(Outcome::Complete(JsonObject::new())) })
    }

    #[test]
    fn header_params_follow_properties_chains_to_nested_arguments() {
        let tool = Tool::new(
            "t",
            "d",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "nested": {"type": "object", "properties": {"x": {"type": "integer", "x-mcp-header": "X"}}}
            }}),
            noop(),
        );
        let params = tool.header_params().expect("valid annotations");
        let found: Vec<(&str, String, rules::HeaderKind)> = params
            .iter()
            .map(|p| (p.header.as_str(), p.dotted(), p.kind))
            .collect();
        assert_eq!(
            found,
            vec![
                ("X", "nested.x".to_string(), rules::HeaderKind::Integer),
                ("Region", "region".to_string(), rules::HeaderKind::String),
            ]
        );
    }
}
