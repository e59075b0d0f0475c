//! A resource template (RFC 6570, levels 1–4 for matching) and its completions.
//!
//! Matching and its refusals are described on [`ResourceTemplate::match_uri`]: a
//! `resources/read` URI binds the template's variables percent-decoded, and a value that could
//! walk out of a path (`..`, an encoded `/..`), is not UTF-8 or holds a NUL makes the URI match
//! nothing, so no handler runs.

use std::collections::BTreeMap;
use std::future::Future;

use serde_json::{Value, json};

use super::watch::{WatchRecord, Who};
use super::{Candidates, CompleteFn, Completion, CompletionRequest, Handler, completer};
use super::{insert_icons, insert_meta, insert_some, owned, uri_template};
use crate::author::ToolError;
use crate::wire::{Icon, JsonObject};
use relevo_state::RecordKey;
use serde::de::DeserializeOwned;

/// A family of resources named by an RFC 6570 template such as `test://template/{id}/data` or
/// `files://{root}{/path*}{?rev}`.
///
/// [`ResourceTemplate::typed`] takes the URI's variables as a typed struct (decoded; an exploded
/// variable as a list); `.scopes(..)` gates reading, listing, completion and subscribing;
/// `.complete(..)` and `.complete_with(..)` give a variable's completions. What matches, and the
/// templates [`App::template`](super::App::template) refuses, are described in
/// [`ResourceTemplate::match_uri`].
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
/// use relevo_protocol::ResourceTemplate;
/// use serde_json::json;
///
/// /// The URI's variables, typed: `notes://{noteId}`.
/// #[derive(serde::Deserialize)]
/// struct NoteUri {
///     #[serde(rename = "noteId")]
///     note_id: String,
/// }
///
/// async fn read_note(uri: NoteUri, cx: ToolContext) -> Result<Vec<ResourceContents>, ToolError> {
///     let address = cx.call().uri.clone().unwrap_or_default();
///     match uri.note_id.as_str() {
///         "n1" => Ok(vec![ResourceContents::text("Buy milk.", address)]),
///         _ => Err(ToolError::caller("no such note")),
///     }
/// }
///
/// let notes = ResourceTemplate::typed("notes://{noteId}", "note", "text/plain", read_note)
///     .scopes(&["notes:read"])
///     .private();
///
/// // The server matches a URI against the template and passes its variables as arguments.
/// let variables = notes.match_uri("notes://n1").expect("the URI matches");
/// assert_eq!(variables["noteId"], "n1");
/// assert_eq!(notes.match_uri("notes://n1/more"), None, "a variable never spans a `/`");
/// assert_eq!(notes.match_uri("notes://n%201").expect("matches")["noteId"], "n 1", "decoded");
/// assert_eq!(notes.match_uri("notes://%2e%2e"), None, "`..` is refused, encoded or not");
///
/// let Ok(Outcome::Complete(read)) =
///     (notes.handler)(call(json!(variables), Some("notes://n1"))).await
/// else {
///     panic!("the note")
/// };
/// assert_eq!(read["contents"][0]["text"], "Buy milk.");
/// # }
/// ```
#[derive(Clone)]
pub struct ResourceTemplate {
    /// The RFC 6570 template, such as `notes://{noteId}`.
    pub uri_template: String,
    /// A short name.
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// Icons a client may show beside it (`https:` or `data:` sources, checked at registration).
    pub icons: Vec<Icon>,
    /// Its `_meta` object, listed as declared (keys checked at registration).
    pub meta: JsonObject,
    /// What its resources hold.
    pub description: Option<String>,
    /// The contents' media type.
    pub mime_type: Option<String>,
    /// Completion candidates per template variable, filtered by prefix.
    pub completions: BTreeMap<String, Vec<String>>,
    /// Completion functions per template variable; one answers instead of `completions`.
    pub completers: BTreeMap<String, CompleteFn>,
    /// Per-caller content: reads carry `cacheScope: private` (so do reads gated by scopes).
    pub private: bool,
    /// OAuth scopes a caller must hold to read, list, complete or subscribe to its resources.
    pub scopes: Vec<String>,
    /// Runs on `resources/read` of a matching URI, with its variables as arguments.
    pub handler: Handler,
    /// The record each resource's content is read from, if declared ([`ResourceTemplate::watch`]).
    pub watch: Option<WatchRecord>,
}

impl ResourceTemplate {
    /// A template with an untyped handler; [`ResourceTemplate::typed`] takes the variables typed.
    pub fn new(uri_template: &str, name: &str, mime_type: &str, handler: Handler) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            icons: Vec::new(),
            meta: JsonObject::new(),
            description: None,
            mime_type: Some(mime_type.into()),
            completions: BTreeMap::new(),
            completers: BTreeMap::new(),
            private: false,
            scopes: Vec::new(),
            handler,
            watch: None,
        }
    }

    /// Declares the record each resource's content is read from, for the caller `who` (its
    /// tenant and subject only) and the URI's variables as `V` (the template's typed URI
    /// struct): listen streams poll it in one batch with their other declared records instead
    /// of running the handler ([`crate::registry::WatchRecord`]).
    pub fn watch<V, F>(mut self, key: F) -> Self
    where
        V: DeserializeOwned + 'static,
        F: Fn(&Who<'_>, V) -> RecordKey + Send + Sync + 'static,
    {
        self.watch = Some(WatchRecord::typed(key));
        self
    }

    /// OAuth scopes a caller must hold to read, list, complete or subscribe to its resources.
    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = owned(scopes);
        self
    }

    /// Sets the human-readable title (`resources/templates/list` shows it in place of the name).
    ///
    /// ```
    /// # use relevo_protocol::{ResourceTemplate, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// let template = ResourceTemplate::new("notes://{id}", "note", "text/plain", run);
    /// let template = template.title("Note");
    /// assert_eq!(template.to_wire()["title"], "Note");
    /// ```
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an icon a client may show beside the template (`resources/templates/list` lists
    /// them in order).
    ///
    /// Its `src` must be an `https:` URL or a `data:` URI: [`crate::App::template`] refuses
    /// any other ([`super::rules::valid_icon_source`]).
    ///
    /// ```
    /// # use relevo_protocol::{ResourceTemplate, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// use relevo_protocol::wire::Icon;
    ///
    /// let template = ResourceTemplate::new("notes://{id}", "note", "text/plain", run)
    ///     .icon(Icon::new("data:image/png;base64,iVBORw0KGgo=").with_mime_type("image/png"));
    /// assert_eq!(template.to_wire()["icons"][0]["mimeType"], "image/png");
    /// ```
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets the key `key` of the template's `_meta` object to `value`
    /// (`resources/templates/list` lists it).
    ///
    /// The key must follow the spec's `_meta` key format and may not be reserved for MCP, save
    /// the keys an extension defines: [`crate::App::template`] refuses it otherwise
    /// ([`super::rules::meta`]).
    ///
    /// ```
    /// # use relevo_protocol::{ResourceTemplate, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// use serde_json::json;
    ///
    /// let template = ResourceTemplate::new("notes://{id}", "note", "text/plain", run)
    ///     .meta("com.example/source", json!({ "system": "wiki" }));
    /// assert_eq!(template.to_wire()["_meta"]["com.example/source"]["system"], "wiki");
    /// ```
    pub fn meta(mut self, key: &str, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Sets what its resources hold.
    pub fn description(mut self, text: &str) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Marks the content as per-caller: reads carry `cacheScope: private`.
    pub fn private(mut self) -> Self {
        self.private = true;
        self
    }

    /// Offers `values` as the completions of the variable `variable` (`completion/complete`
    /// answers those that start with what the user typed).
    pub fn complete(mut self, variable: &str, values: &[&str]) -> Self {
        self.completions.insert(variable.into(), owned(values));
        self
    }

    /// Completes the variable `variable` with a function that receives what the user typed and
    /// the variables already resolved (`context.arguments`), and answers the candidates, best
    /// first (the server sends at most 100 and says `hasMore`).
    ///
    /// ```
    /// use relevo_protocol::author::ToolError;
    /// use relevo_protocol::registry::CompletionRequest;
    /// use relevo_protocol::{Handler, ResourceTemplate, handler};
    /// # fn read() -> Handler { handler(|_| async { unreachable!() }) }
    ///
    /// // `repos://{owner}/{repo}`: the repositories of the owner already chosen.
    /// let repos = ResourceTemplate::new("repos://{owner}/{repo}", "repo", "text/plain", read())
    ///     .complete("owner", &["ada", "grace"])
    ///     .complete_with("repo", |request: CompletionRequest| async move {
    ///         let owner = request.context.get("owner").cloned().unwrap_or_default();
    ///         Ok::<_, ToolError>(vec![format!("{owner}-notes"), format!("{owner}-site")])
    ///     });
    /// assert!(repos.completers.contains_key("repo"));
    /// ```
    pub fn complete_with<F, Fut, C>(mut self, variable: &str, complete: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<C, ToolError>> + Send + 'static,
        C: Into<Completion>,
    {
        self.completers.insert(variable.into(), completer(complete));
        self
    }

    /// Where the completion candidates of `variable` come from.
    pub(crate) fn candidates(&self, variable: &str) -> Candidates {
        match self.completers.get(variable) {
            Some(complete) => Candidates::Function(complete.clone()),
            None => Candidates::List(self.completions.get(variable).cloned().unwrap_or_default()),
        }
    }

    /// Variables bound by matching `uri` against the template, percent-decoded, or `None` if it
    /// does not match or a value is refused.
    ///
    /// Matched (RFC 6570 levels 1–4): every operator (`{var}`, `{+var}`, `{#var}`, `{.var}`,
    /// `{/var}`, `{;var}`, `{?var}`, `{&var}`), several variables per expression (one the URI
    /// leaves out is absent), named ones in any order, and `*` on the last variable of an
    /// expression as a list (`{/path*}` binds `["a","b"]`). A `{var}` value is unreserved
    /// characters and `%XX` escapes, one or more (never a `/`); `{+var}` also takes reserved
    /// characters but `?` and `#`. Refused: a value not UTF-8 once decoded, holding a NUL, or
    /// with a `.` or `..` segment (raw or encoded as `%2e%2e`, split at `/` and `\`). A template
    /// with prefix modifiers (`{var:3}`), an exploded variable before another, a variable named
    /// twice or adjacent expressions of ambiguous boundary (`{a}{b}`) is refused at
    /// registration ([`rules::uri_template`](super::rules::uri_template)). A URI longer than
    /// 8 KiB matches nothing. The split is decided by the URI's structure (the earliest
    /// expression takes the longest span the rest of the template can follow), then its values
    /// are checked: a refused value matches nothing, and no other split is tried. Matching takes
    /// steps linear in the URI's length, whatever it holds.
    pub fn match_uri(&self, uri: &str) -> Option<JsonObject> {
        uri_template::match_uri(&self.uri_template, uri)
    }

    /// Whether a read's content may differ between callers, so no shared cache may keep it
    /// (`cacheScope: private`): marked [`Self::private`], or gated by scopes (a cache shared by
    /// callers with and without them would hand it to one without).
    pub fn per_caller(&self) -> bool {
        self.private || !self.scopes.is_empty()
    }

    /// The template as `resources/templates/list` shows it.
    pub fn to_wire(&self) -> Value {
        let mut template = json!({ "uriTemplate": self.uri_template, "name": self.name });
        insert_some(&mut template, "title", &self.title);
        insert_some(&mut template, "description", &self.description);
        insert_some(&mut template, "mimeType", &self.mime_type);
        insert_icons(&mut template, &self.icons);
        insert_meta(&mut template, &self.meta);
        template
    }
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
    fn template_binds_variables_and_rejects_other_uris() {
        let template =
            ResourceTemplate::new("test://template/{id}/data", "t", "application/json", noop());
        assert_eq!(
            template.match_uri("test://template/42/data"),
            Some(json!({"id": "42"}).as_object().cloned().unwrap())
        );
        assert_eq!(template.match_uri("test://template//data"), None);
        assert_eq!(template.match_uri("test://template/4/2/data"), None);
        assert_eq!(template.match_uri("test://template/42/datum"), None);
        let trailing = ResourceTemplate::new("file:///{path}", "t", "text/plain", noop());
        assert_eq!(
            trailing.match_uri("file:///a.txt"),
            Some(json!({"path": "a.txt"}).as_object().cloned().unwrap())
        );
    }
}
