//! Typed constructors: a tool, prompt, resource or template whose handler is an async function
//! over Rust types, with its schemas derived from them.
//!
//! Invariants: a retry's answers are recorded (one per round) before the handler runs
//! ([`super::rounds`]); the schema a client sees is the one the arguments are validated against (before
//! the handler runs, by the server) and deserialized by, since both come from the same type; a
//! tool's `outputSchema` is its result type's, and its `structuredContent` that type serialized.
//! A result holding a non-finite number is refused as the server's error (`-32603`, "broke its
//! outputSchema") rather than sent with `null` in its place; the server then checks every
//! structured result against the schema ([`crate::registry::OutputCheck`]).

use std::future::Future;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::ToolContext;
use super::error::ToolError;
use super::schema::tool_schema;
use crate::registry::{
    Call, Outcome, Prompt, PromptArgument, Resource, ResourceTemplate, Schema, Tool, handler,
};
use crate::wire::{CallToolResult, ContentBlock, GetPromptResult, JsonObject, ResourceContents};

/// Arguments of a tool that takes none: `{"type": "object", "additionalProperties": false}`.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

impl Tool {
    /// A tool whose handler takes typed arguments `A` and returns a typed result `R`. An object
    /// result is the tool's `structuredContent` (and its schema the `outputSchema`); any other
    /// result is its text.
    ///
    /// Both schemas are derived from the types (doc comments become descriptions). The server
    /// checks the arguments against the input schema before the handler runs; arguments that
    /// still do not deserialize, and a [`ToolError::caller`], are tool execution errors
    /// (`isError: true`) the model can read.
    ///
    /// ```
    /// # use relevo_protocol::{Call, ClientContext, Notifier, Outcome, Principal};
    /// # fn call(arguments: serde_json::Value) -> Call {
    /// #     Call {
    /// #         arguments: arguments.as_object().cloned().unwrap_or_default(),
    /// #         uri: None,
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
    /// use relevo_protocol::Tool;
    /// use relevo_protocol::author::{ToolContext, ToolError};
    /// use serde_json::json;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct AddArgs {
    ///     /// The first addend
    ///     a: i64,
    ///     /// The second addend
    ///     b: i64,
    /// }
    ///
    /// #[derive(serde::Serialize, schemars::JsonSchema)]
    /// struct Sum {
    ///     sum: i64,
    /// }
    ///
    /// async fn add(args: AddArgs, _: ToolContext) -> Result<Sum, ToolError> {
    ///     let sum = args.a.checked_add(args.b).ok_or_else(|| ToolError::caller("the sum overflows"))?;
    ///     Ok(Sum { sum })
    /// }
    ///
    /// let tool = Tool::typed("add", "Adds two numbers.", add);
    /// assert_eq!(tool.input_schema()["required"], json!(["a", "b"]));
    /// assert_eq!(tool.input_schema()["properties"]["a"]["description"], "The first addend");
    /// assert_eq!(tool.output_schema().expect("an object result")["properties"]["sum"]["type"], "integer");
    ///
    /// let Ok(Outcome::Complete(result)) = (tool.handler)(call(json!({ "a": 2, "b": 3 }))).await else {
    ///     panic!("a complete result")
    /// };
    /// assert_eq!(result["structuredContent"], json!({ "sum": 5 }));
    ///
    /// let Ok(Outcome::Complete(result)) = (tool.handler)(call(json!({ "a": i64::MAX, "b": 1 }))).await else {
    ///     panic!("a tool execution error is a complete result")
    /// };
    /// assert_eq!(result["isError"], true);
    /// # }
    /// ```
    pub fn typed<A, R, F, Fut>(name: &str, description: &str, run: F) -> Tool
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: Serialize + JsonSchema + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let tool_name = name.to_string();
        let run = std::sync::Arc::new(run);
        // Derived on first use: a cold start pays only for the schemas its request needs.
        let output = Schema::derived(|| {
            Some(tool_schema::<R>())
                .filter(|schema| schema.get("type").is_some_and(|t| t == "object"))
        });
        let structured = output.clone();
        let mut tool = Tool::new(
            name,
            description,
            Value::Null,
            handler(move |call: Call| {
                let (run, tool_name, structured) =
                    (run.clone(), tool_name.clone(), structured.clone());
                async move {
                    let args = match parse::<A>(&call.arguments) {
                        Ok(args) => args,
                        Err(error) => {
                            return Ok(Outcome::tool_error(format!("Invalid arguments: {error}")));
                        }
                    };
                    let cx = ToolContext::new(call);
                    if let Err(error) = cx.settle_answers().await {
                        return error.into_tool_outcome(&tool_name);
                    }
                    match run(args, cx).await {
                        Ok(result) => tool_result(&tool_name, &result, structured.get().is_some()),
                        Err(error) => error.into_tool_outcome(&tool_name),
                    }
                }
            }),
        );
        tool.input = Schema::derived(|| Some(tool_schema::<A>()));
        tool.output = output;
        tool
    }
}

impl Prompt {
    /// A prompt whose arguments are the string fields of `A` (their doc comments describe them,
    /// `Option` fields are optional), returning its messages.
    pub fn typed<A, F, Fut>(name: &str, description: &str, run: F) -> Prompt
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ToolError>> + Send + 'static,
    {
        let schema = tool_schema::<A>();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let arguments = schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(name, property)| {
                let description = property
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if required.contains(&name.as_str()) {
                    PromptArgument::required(name, description)
                } else {
                    PromptArgument::optional(name, description)
                }
            })
            .collect();
        let target = name.to_string();
        let run = std::sync::Arc::new(run);
        Prompt::new(
            name,
            description,
            arguments,
            handler(move |call: Call| {
                let (run, target) = (run.clone(), target.clone());
                async move {
                    let args = parse::<A>(&call.arguments)
                        .map_err(|error| ToolError::caller(format!("Invalid arguments: {error}")));
                    let result = match args {
                        Ok(args) => {
                            let cx = ToolContext::new(call);
                            match cx.settle_answers().await {
                                Ok(()) => run(args, cx).await,
                                Err(error) => Err(error),
                            }
                        }
                        Err(error) => Err(error),
                    };
                    result
                        .map(Outcome::prompt)
                        .or_else(|error| error.into_outcome(&target))
                }
            }),
        )
    }
}

impl Resource {
    /// A resource whose handler returns its contents.
    pub fn typed<F, Fut>(uri: &str, name: &str, mime_type: &str, read: F) -> Resource
    where
        F: Fn(ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ToolError>> + Send + 'static,
    {
        let (target, read) = (uri.to_string(), std::sync::Arc::new(read));
        Resource::new(
            uri,
            name,
            mime_type,
            handler(move |call: Call| {
                let (read, target) = (read.clone(), target.clone());
                async move {
                    let cx = ToolContext::new(call);
                    let result = match cx.settle_answers().await {
                        Ok(()) => read(cx).await,
                        Err(error) => Err(error),
                    };
                    result
                        .map(Outcome::contents)
                        .or_else(|e| e.into_outcome(&target))
                }
            }),
        )
    }
}

impl ResourceTemplate {
    /// A template whose handler takes the URI's variables as a typed `V`.
    pub fn typed<V, F, Fut>(
        uri_template: &str,
        name: &str,
        mime_type: &str,
        read: F,
    ) -> ResourceTemplate
    where
        V: DeserializeOwned + Send + 'static,
        F: Fn(V, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ToolError>> + Send + 'static,
    {
        let (target, read) = (uri_template.to_string(), std::sync::Arc::new(read));
        ResourceTemplate::new(
            uri_template,
            name,
            mime_type,
            handler(move |call: Call| {
                let (read, target) = (read.clone(), target.clone());
                async move {
                    let uri = call.uri.clone().unwrap_or_default();
                    let variables = match parse::<V>(&call.arguments) {
                        Ok(variables) => variables,
                        Err(_) => return Err(crate::error::McpError::resource_not_found(&uri)),
                    };
                    let cx = ToolContext::new(call);
                    let result = match cx.settle_answers().await {
                        Ok(()) => read(variables, cx).await,
                        Err(error) => Err(error),
                    };
                    result
                        .map(Outcome::contents)
                        .or_else(|e| e.into_outcome(&target))
                }
            }),
        )
    }
}

fn parse<A: DeserializeOwned>(arguments: &JsonObject) -> Result<A, serde_json::Error> {
    serde_json::from_value(Value::Object(arguments.clone()))
}

/// A typed result as the tool's outcome. A result holding a NaN or an infinite number (which
/// JSON would carry as `null`) is the server's error, logged, never a success.
fn tool_result<R: Serialize>(
    tool: &str,
    result: &R,
    structured: bool,
) -> Result<Outcome, crate::error::McpError> {
    if super::finite::has_non_finite(result) {
        tracing::error!(%tool, "the tool's result holds a non-finite number: it broke its outputSchema");
        return Err(crate::error::McpError::ResultBrokeOutputSchema);
    }
    let value = serde_json::to_value(result).map_err(|error| {
        tracing::error!(%tool, %error, "a tool result does not serialize");
        crate::error::McpError::Internal
    })?;
    Ok(Outcome::tool(match value {
        value if structured => CallToolResult::structured(value),
        Value::String(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        other => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
    }))
}

/// A tool result built as JSON rather than as a Rust type: `structuredContent` under the
/// schema `{"type": "object"}`. Prefer a typed result, whose schema says more.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Structured(pub Value);

impl JsonSchema for Structured {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Structured".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, JsonSchema)]
    struct Maybe {
        ratio: Option<f64>,
    }

    #[test]
    fn a_non_finite_number_is_refused_even_where_null_would_conform() {
        let refused = tool_result(
            "ratio",
            &Maybe {
                ratio: Some(f64::NAN),
            },
            true,
        );
        assert_eq!(
            refused.err(),
            Some(crate::error::McpError::ResultBrokeOutputSchema)
        );
        let kept =
            tool_result("ratio", &Maybe { ratio: None }, true).expect("null is a value here");
        let Outcome::Complete(result) = kept else {
            panic!("complete")
        };
        assert_eq!(
            result["structuredContent"],
            serde_json::json!({ "ratio": null })
        );
    }
}
