//! A concrete resource with a fixed URI.

use serde_json::{Value, json};

use super::watch::{WatchRecord, Who};
use super::{Handler, insert_icons, insert_meta, insert_some, owned};
use crate::wire::{Icon, JsonObject};
use relevo_state::RecordKey;

/// A concrete resource with a fixed URI.
///
/// [`Resource::typed`] takes the handler as an async function of the [`crate::author::ToolContext`]
/// (the verified caller, the client) returning the contents; `.scopes(..)` gates reading, listing
/// and subscribing; `.private()` marks per-caller content (`cacheScope: private`).
///
/// ```
/// # use relevo_protocol::{Call, ClientContext, Notifier, Outcome, Principal};
/// # fn call(arguments: serde_json::Value, uri: Option<&str>) -> Call {
/// #     Call {
/// #         arguments: arguments.as_object().cloned().unwrap_or_default(),
/// #         uri: uri.map(String::from),
/// #         input_responses: Default::default(),
/// #         state: None,
/// #         client: ClientContext::default(),
/// #         principal: Principal::new("acme", "ada", ["notes:read"]),
/// #         notifier: Notifier::silent(),
/// #         answers: None,
/// #         jobs: None,
/// #     }
/// # }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use relevo_protocol::author::{ToolContext, ToolError};
/// use relevo_protocol::wire::ResourceContents;
/// use relevo_protocol::Resource;
/// use serde_json::json;
///
/// async fn whoami(cx: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
///     let who = format!("{} of {}", cx.principal().subject, cx.principal().tenant);
///     Ok(vec![ResourceContents::text(who, "acme://whoami")])
/// }
///
/// let resource = Resource::typed("acme://whoami", "whoami", "text/plain", whoami)
///     .description("Who is asking")
///     .private();
/// assert_eq!(resource.to_wire()["mimeType"], "text/plain");
///
/// let Ok(Outcome::Complete(read)) = (resource.handler)(call(json!({}), Some("acme://whoami"))).await
/// else {
///     panic!("the contents")
/// };
/// assert_eq!(read["contents"][0]["text"], "ada of acme");
/// # }
/// ```
#[derive(Clone)]
pub struct Resource {
    /// Its URI, which `resources/read` names.
    pub uri: String,
    /// A short name.
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// Icons a client may show beside it (`https:` or `data:` sources, checked at registration).
    pub icons: Vec<Icon>,
    /// Its `_meta` object, listed as declared (keys checked at registration).
    pub meta: JsonObject,
    /// What it holds.
    pub description: Option<String>,
    /// The contents' media type.
    pub mime_type: Option<String>,
    /// Per-caller content: reads carry `cacheScope: private` (so do reads gated by scopes).
    pub private: bool,
    /// OAuth scopes a caller must hold to read it, list it, or subscribe to it.
    pub scopes: Vec<String>,
    /// Runs on `resources/read`.
    pub handler: Handler,
    /// The record its content is read from, if declared ([`Resource::watch`]).
    pub watch: Option<WatchRecord>,
}

impl Resource {
    /// A resource with an untyped handler; [`Resource::typed`] takes an async function instead.
    pub fn new(uri: &str, name: &str, mime_type: &str, handler: Handler) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            icons: Vec::new(),
            meta: JsonObject::new(),
            description: None,
            mime_type: Some(mime_type.into()),
            private: false,
            scopes: Vec::new(),
            handler,
            watch: None,
        }
    }

    /// Sets the human-readable title (`resources/list` shows it in place of the name).
    ///
    /// ```
    /// # use relevo_protocol::{Resource, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// let resource = Resource::new("app://about", "about", "text/plain", run).title("About");
    /// assert_eq!(resource.to_wire()["title"], "About");
    /// ```
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an icon a client may show beside the resource (`resources/list` lists them in
    /// order).
    ///
    /// Its `src` must be an `https:` URL or a `data:` URI: [`crate::App::resource`] refuses
    /// any other ([`super::rules::valid_icon_source`]).
    ///
    /// ```
    /// # use relevo_protocol::{Resource, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// use relevo_protocol::wire::Icon;
    ///
    /// let resource = Resource::new("app://about", "about", "text/plain", run)
    ///     .icon(Icon::new("data:image/png;base64,iVBORw0KGgo=").with_mime_type("image/png"));
    /// assert_eq!(resource.to_wire()["icons"][0]["mimeType"], "image/png");
    /// ```
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets the key `key` of the resource's `_meta` object to `value` (`resources/list` lists it).
    ///
    /// The key must follow the spec's `_meta` key format and may not be reserved for MCP, save
    /// the keys an extension defines: [`crate::App::resource`] refuses it otherwise
    /// ([`super::rules::meta`]).
    ///
    /// ```
    /// # use relevo_protocol::{Resource, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// use serde_json::json;
    ///
    /// let resource = Resource::new("app://about", "about", "text/plain", run)
    ///     .meta("com.example/source", json!({ "system": "wiki" }));
    /// assert_eq!(resource.to_wire()["_meta"]["com.example/source"]["system"], "wiki");
    /// ```
    pub fn meta(mut self, key: &str, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Sets what it holds.
    pub fn description(mut self, text: &str) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Marks the content as per-caller: reads carry `cacheScope: private`.
    pub fn private(mut self) -> Self {
        self.private = true;
        self
    }

    /// Declares the record the content is read from, for the caller `who` (its tenant and
    /// subject only): listen streams poll it in one batch with their other declared records
    /// instead of running the handler ([`crate::registry::WatchRecord`]).
    pub fn watch<F>(mut self, key: F) -> Self
    where
        F: Fn(&Who<'_>) -> RecordKey + Send + Sync + 'static,
    {
        self.watch = Some(WatchRecord::fixed(key));
        self
    }

    /// OAuth scopes a caller must hold to read, list or subscribe to it.
    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = owned(scopes);
        self
    }

    /// Whether a read's content may differ between callers, so no shared cache may keep it
    /// (`cacheScope: private`): marked [`Self::private`], or gated by scopes (a cache shared by
    /// callers with and without them would hand it to one without).
    pub fn per_caller(&self) -> bool {
        self.private || !self.scopes.is_empty()
    }

    /// The resource as `resources/list` shows it.
    pub fn to_wire(&self) -> Value {
        let mut resource = json!({ "uri": self.uri, "name": self.name });
        insert_some(&mut resource, "title", &self.title);
        insert_some(&mut resource, "description", &self.description);
        insert_some(&mut resource, "mimeType", &self.mime_type);
        insert_icons(&mut resource, &self.icons);
        insert_meta(&mut resource, &self.meta);
        resource
    }
}
