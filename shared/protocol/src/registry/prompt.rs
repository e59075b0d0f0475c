//! A prompt and its arguments.

use std::future::Future;

use serde_json::{Value, json};

use super::{Candidates, CompleteFn, Completion, CompletionRequest, Handler, completer};
use super::{insert_icons, insert_meta, insert_some, owned};
use crate::author::ToolError;
use crate::wire::{Icon, JsonObject};

/// One argument of a prompt.
#[derive(Clone)]
pub struct PromptArgument {
    /// Its name in `prompts/get`'s `arguments`.
    pub name: String,
    /// What it is, for the user.
    pub description: Option<String>,
    /// Whether `prompts/get` needs it.
    pub required: bool,
    /// Completion candidates offered by `completion/complete`, filtered by prefix.
    pub completions: Vec<String>,
    /// A completion function, which answers instead of `completions` when set.
    pub completer: Option<CompleteFn>,
}

impl std::fmt::Debug for PromptArgument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptArgument")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("required", &self.required)
            .field("completions", &self.completions)
            .field("completer", &self.completer.as_ref().map(|_| "fn"))
            .finish()
    }
}

impl PromptArgument {
    /// A required argument.
    pub fn required(name: &str, description: &str) -> Self {
        PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required: true,
            completions: Vec::new(),
            completer: None,
        }
    }

    /// An optional argument.
    pub fn optional(name: &str, description: &str) -> Self {
        PromptArgument {
            required: false,
            ..PromptArgument::required(name, description)
        }
    }

    /// Values `completion/complete` offers for it.
    pub fn completions(mut self, values: &[&str]) -> Self {
        self.completions = values.iter().map(|v| v.to_string()).collect();
        self
    }

    /// Completes it with a function of the typed value and the arguments already resolved
    /// ([`Prompt::complete_with`] shows one).
    pub fn complete_with<F, Fut, C>(mut self, complete: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<C, ToolError>> + Send + 'static,
        C: Into<Completion>,
    {
        self.completer = Some(completer(complete));
        self
    }

    /// Where its completion candidates come from.
    pub(crate) fn candidates(&self) -> Candidates {
        match &self.completer {
            Some(complete) => Candidates::Function(complete.clone()),
            None => Candidates::List(self.completions.clone()),
        }
    }
}

/// A prompt: its arguments are listed, its handler runs on `prompts/get`.
///
/// [`Prompt::typed`] derives the arguments from a struct's fields (doc comments describe them,
/// `Option` fields are optional) and runs an async function returning the messages.
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
/// use relevo_protocol::wire::{GetPromptResult, PromptMessage, Role};
/// use relevo_protocol::Prompt;
/// use serde_json::json;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct ExplainArgs {
///     /// What to explain
///     topic: String,
///     /// For whom (optional)
///     audience: Option<String>,
/// }
///
/// async fn explain(args: ExplainArgs, _: ToolContext) -> Result<GetPromptResult, ToolError> {
///     let audience = args.audience.unwrap_or_else(|| "anyone".into());
///     let text = format!("Explain {} to {audience} in three short sentences.", args.topic);
///     Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]))
/// }
///
/// let prompt = Prompt::typed("explain", "Asks the model to explain a topic simply.", explain);
/// let arguments = &prompt.to_wire()["arguments"];
/// assert_eq!(arguments[0]["name"], "audience");
/// assert_eq!(arguments[0]["required"], false);
/// assert_eq!(arguments[1]["name"], "topic");
/// assert_eq!(arguments[1]["description"], "What to explain");
///
/// let Ok(Outcome::Complete(got)) = (prompt.handler)(call(json!({ "topic": "TLS" }), None)).await
/// else {
///     panic!("the messages")
/// };
/// assert_eq!(
///     got["messages"][0]["content"]["text"],
///     "Explain TLS to anyone in three short sentences."
/// );
/// # }
/// ```
#[derive(Clone)]
pub struct Prompt {
    /// The unique name `prompts/get` names it by.
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// Icons a client may show beside it (`https:` or `data:` sources, checked at registration).
    pub icons: Vec<Icon>,
    /// Its `_meta` object, listed as declared (keys checked at registration).
    pub meta: JsonObject,
    /// What it is for.
    pub description: Option<String>,
    /// Its arguments, as `prompts/list` shows them.
    pub arguments: Vec<PromptArgument>,
    /// OAuth scopes a caller must hold to get, list or complete it.
    pub scopes: Vec<String>,
    /// Runs on `prompts/get`.
    pub handler: Handler,
}

impl Prompt {
    /// A prompt with an untyped handler; [`Prompt::typed`] derives the arguments from a struct.
    pub fn new(
        name: &str,
        description: &str,
        arguments: Vec<PromptArgument>,
        handler: Handler,
    ) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            icons: Vec::new(),
            meta: JsonObject::new(),
            description: Some(description.into()),
            arguments,
            scopes: Vec::new(),
            handler,
        }
    }

    /// Sets the human-readable title (`prompts/list` shows it in place of the name).
    ///
    /// ```
    /// # use relevo_protocol::{Prompt, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// let prompt = Prompt::new("review", "Reviews code.", vec![], run).title("Code review");
    /// assert_eq!(prompt.to_wire()["title"], "Code review");
    /// ```
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an icon a client may show beside the prompt (`prompts/list` lists them in order).
    ///
    /// Its `src` must be an `https:` URL or a `data:` URI: [`crate::App::prompt`] refuses any
    /// other ([`super::rules::valid_icon_source`]).
    ///
    /// ```
    /// # use relevo_protocol::{Prompt, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// use relevo_protocol::wire::Icon;
    ///
    /// let prompt = Prompt::new("review", "Reviews code.", vec![], run)
    ///     .icon(Icon::new("https://example.com/review.svg").with_sizes(vec!["any".into()]));
    /// assert_eq!(prompt.to_wire()["icons"][0]["sizes"], serde_json::json!(["any"]));
    /// ```
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets the key `key` of the prompt's `_meta` object to `value` (`prompts/list` lists it).
    ///
    /// The key must follow the spec's `_meta` key format and may not be reserved for MCP, save
    /// the keys an extension defines: [`crate::App::prompt`] refuses it otherwise
    /// ([`super::rules::meta`]).
    ///
    /// ```
    /// # use relevo_protocol::{Prompt, handler, Outcome};
    /// # let run = handler(|_| async { Ok(Outcome::Complete(Default::default())) });
    /// use serde_json::json;
    ///
    /// let prompt = Prompt::new("review", "Reviews code.", vec![], run)
    ///     .meta("com.example/team", json!("platform"));
    /// assert_eq!(prompt.to_wire()["_meta"], json!({ "com.example/team": "platform" }));
    /// ```
    pub fn meta(mut self, key: &str, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// OAuth scopes a caller must hold to see, get or complete it.
    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = owned(scopes);
        self
    }

    /// Offers `values` as the completions of the argument `argument` (`completion/complete`
    /// answers those that start with what the user typed). A name the prompt has no argument
    /// of changes nothing.
    pub fn complete(mut self, argument: &str, values: &[&str]) -> Self {
        for known in self.arguments.iter_mut().filter(|a| a.name == argument) {
            known.completions = owned(values);
        }
        self
    }

    /// Completes the argument `argument` with a function that receives what the user typed and
    /// the arguments already resolved (`context.arguments`), and answers the candidates, best
    /// first (the server sends at most 100 and says `hasMore`). A name the prompt has no
    /// argument of changes nothing.
    ///
    /// ```
    /// use relevo_protocol::author::{ToolContext, ToolError};
    /// use relevo_protocol::registry::CompletionRequest;
    /// use relevo_protocol::wire::{GetPromptResult, PromptMessage, Role};
    /// use relevo_protocol::Prompt;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct ReviewArgs {
    ///     /// The language
    ///     language: String,
    ///     /// The framework
    ///     framework: String,
    /// }
    ///
    /// async fn review(args: ReviewArgs, _: ToolContext) -> Result<GetPromptResult, ToolError> {
    ///     let text = format!("Review this {} code using {}.", args.language, args.framework);
    ///     Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]))
    /// }
    ///
    /// async fn frameworks(request: CompletionRequest) -> Result<Vec<String>, ToolError> {
    ///     let known: &[&str] = match request.context.get("language").map(String::as_str) {
    ///         Some("python") => &["flask", "fastapi", "django"],
    ///         Some("rust") => &["axum", "actix-web"],
    ///         _ => &[],
    ///     };
    ///     Ok(known
    ///         .iter()
    ///         .filter(|f| f.starts_with(&request.value))
    ///         .map(|f| f.to_string())
    ///         .collect())
    /// }
    ///
    /// let prompt = Prompt::typed("code_review", "Asks for a code review.", review)
    ///     .complete("language", &["python", "rust"])
    ///     .complete_with("framework", frameworks);
    /// assert!(prompt.arguments.iter().any(|a| a.name == "framework" && a.completer.is_some()));
    /// ```
    pub fn complete_with<F, Fut, C>(mut self, argument: &str, complete: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<C, ToolError>> + Send + 'static,
        C: Into<Completion>,
    {
        let complete = completer(complete);
        for known in self.arguments.iter_mut().filter(|a| a.name == argument) {
            known.completer = Some(complete.clone());
        }
        self
    }

    /// The prompt as `prompts/list` shows it.
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
        insert_icons(&mut prompt, &self.icons);
        insert_meta(&mut prompt, &self.meta);
        prompt
    }
}
