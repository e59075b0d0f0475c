//! Tool arguments checked against the tool's declared `inputSchema` (JSON Schema 2020-12, by
//! `boon`: `App::tool` refuses a schema declaring another `$schema`, see
//! [`crate::registry::rules`]) before its handler runs, and bounded in size and depth.
//!
//! Invariants: a handler never sees arguments its schema refuses. The refusal is a tool
//! execution error (`isError: true`), as the spec files input-validation problems, so the model
//! can correct itself: its text names each failing location and why, in the validator's own
//! words (`errors` keeps them as `[{path, message}]` for the caller). Arguments over the
//! size or depth bound are refused as `-32602` before they are even validated.
//! Schemas are the app's, compiled once per tool on first use; they may not load anything: no
//! `$ref` reaches a file or the network. A schema that does not compile is the app's bug: the tool
//! answers `-32603` and the log says why, rather than run unchecked.
//!
//! The one validator: tool results go through it against `outputSchema`
//! ([`crate::registry::OutputCheck`]) and accepted elicitation answers against the
//! `requestedSchema` they answer ([`crate::author::ToolContext::elicit`], with `format` asserted).

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::error::McpError;
use crate::wire::JsonObject;

/// The deepest nesting of arrays and objects accepted in arguments.
pub const MAX_ARGUMENT_DEPTH: usize = 32;
/// The most validation errors reported back.
const MAX_REPORTED: usize = 10;
const LOCATION: &str = "mem:///input-schema.json";

/// Why arguments were refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Over a bound: a protocol error.
    Bound(McpError),
    /// The schema refuses them: a tool execution error with this text and these errors.
    Invalid {
        /// One line naming the tool and every violation (`path: message`).
        message: String,
        /// The violations as `{path, message}` objects, at most a bounded number.
        errors: Vec<Value>,
    },
}

/// A schema compiled by `boon`, or why it does not compile.
pub(crate) type Compiled = Result<(boon::Schemas, boon::SchemaIndex), String>;

/// One tool schema (input or output), compiled once on first use and shared by the tool's
/// clones: JSON Schema 2020-12 unless the schema names another draft, and no `$ref` loaded from
/// anywhere (no scheme is registered, so nothing outside the schema itself can be fetched).
#[derive(Clone, Default)]
pub(crate) struct CompiledSchema(Arc<OnceLock<Compiled>>);

impl CompiledSchema {
    /// `schema` compiled under the name `location` (the first call compiles; later calls,
    /// whatever they pass, get that first result).
    pub(crate) fn get(&self, location: &str, schema: &JsonObject) -> &Compiled {
        self.0.get_or_init(|| compile(location, schema, false))
    }
}

/// Readies the validator on a thread of its own: `boon` checks every schema it compiles against
/// its draft's metaschema, and parses and compiles all five drafts' metaschemas (about 112 KB of
/// JSON) at the first schema it compiles in a process, whichever the draft. A function that
/// validates tool arguments calls this at init, so that work overlaps its init's waits (the keys
/// secret, the Runtime API's first event, the issuer's JWKS) instead of lengthening its first
/// `tools/call`; a call that comes first waits for the thread's compile, never repeats it.
/// Without a thread (the system refuses one), the first compile does it as before.
pub fn prepare_validator() {
    let spawned = std::thread::Builder::new()
        .name("relevo-schemas".into())
        .spawn(|| {
            let _ = compile("mem:///prepare.json", &JsonObject::new(), false);
        });
    if let Err(error) = spawned {
        tracing::debug!(%error, "no thread to prepare the schema validator; the first call will");
    }
}

/// `schema` compiled under the name `location`: JSON Schema 2020-12 unless it names another
/// draft, no `$ref` loaded from anywhere; `formats` makes `format` an assertion (2020-12 makes it
/// an annotation by default).
pub(crate) fn compile(location: &str, schema: &JsonObject, formats: bool) -> Compiled {
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    compiler.use_loader(Box::new(boon::SchemeUrlLoader::new()));
    if formats {
        compiler.enable_format_assertions();
    }
    let mut schemas = boon::Schemas::new();
    compiler
        .add_resource(location, Value::Object(schema.clone()))
        .map_err(|error| format!("{error:#}"))?;
    let index = compiler
        .compile(location, &mut schemas)
        .map_err(|error| format!("{error:#}"))?;
    Ok((schemas, index))
}

/// The locations in `instance` that `compiled` refuses, each with the validator's reason (at
/// most a bounded number); empty when it conforms.
pub(crate) fn failures(
    compiled: &(boon::Schemas, boon::SchemaIndex),
    instance: &Value,
) -> Vec<Value> {
    let (schemas, index) = compiled;
    let Err(invalid) = schemas.validate(instance, *index) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    leaves(&invalid, &mut errors);
    errors.truncate(MAX_REPORTED);
    errors
}

/// A tool's compiled input schema, shared by the tool's clones.
#[derive(Clone, Default)]
pub struct InputSchema(CompiledSchema);

impl InputSchema {
    fn compiled(&self, schema: &JsonObject) -> &Compiled {
        self.0.get(LOCATION, schema)
    }

    /// Why `schema` does not compile, if it does not (for tests over a whole app).
    pub fn problem(&self, schema: &JsonObject) -> Option<String> {
        self.compiled(schema).as_ref().err().cloned()
    }

    /// Checks `arguments` of tool `tool` against `schema`.
    pub fn check(
        &self,
        tool: &str,
        schema: &JsonObject,
        arguments: &JsonObject,
        max_bytes: usize,
    ) -> Result<(), Refusal> {
        let size = serde_json::to_vec(arguments).map_or(usize::MAX, |bytes| bytes.len());
        if size > max_bytes {
            return Err(Refusal::Bound(McpError::invalid_params(format!(
                "arguments of {tool} exceed {max_bytes} bytes"
            ))));
        }
        let instance = Value::Object(arguments.clone());
        if depth(&instance) > MAX_ARGUMENT_DEPTH {
            return Err(Refusal::Bound(McpError::invalid_params(format!(
                "arguments of {tool} nest deeper than {MAX_ARGUMENT_DEPTH} levels"
            ))));
        }
        let (schemas, index) = match self.compiled(schema) {
            Ok(compiled) => compiled,
            Err(why) => {
                tracing::error!(%tool, %why, "the tool's inputSchema does not compile; the call is refused");
                return Err(Refusal::Bound(McpError::Internal));
            }
        };
        let Err(invalid) = schemas.validate(&instance, *index) else {
            return Ok(());
        };
        let mut errors = Vec::new();
        leaves(&invalid, &mut errors);
        let summary: Vec<String> = errors
            .iter()
            .map(|e| {
                format!(
                    "{}: {}",
                    e["path"].as_str().unwrap_or(""),
                    e["message"].as_str().unwrap_or("")
                )
            })
            .collect();
        errors.truncate(MAX_REPORTED);
        Err(Refusal::Invalid {
            message: format!("Invalid arguments for tool {tool}: {}", summary.join("; ")),
            errors,
        })
    }
}

/// The innermost errors: each names one location and one reason.
fn leaves(error: &boon::ValidationError<'_, '_>, out: &mut Vec<Value>) {
    if error.causes.is_empty() {
        let path = error.instance_location.to_string();
        out.push(
            json!({ "path": if path.is_empty() { "/".to_string() } else { path }, "message": error.kind.to_string() }),
        );
    }
    for cause in &error.causes {
        leaves(cause, out);
    }
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn arguments_the_schema_refuses_are_named_by_location_and_reason() {
        let schema = object(
            json!({ "type": "object", "properties": { "name": { "type": "string", "maxLength": 3 } },
            "required": ["name"], "additionalProperties": false }),
        );
        let checked = InputSchema::default();
        assert_eq!(
            checked.check("greet", &schema, &object(json!({ "name": "Ada" })), 1024),
            Ok(())
        );
        let Err(Refusal::Invalid { message, errors }) = checked.check(
            "greet",
            &schema,
            &object(json!({ "name": "Adaaa", "extra": 1 })),
            1024,
        ) else {
            panic!("refused");
        };
        assert!(
            message.contains("/name") && message.contains("extra"),
            "{message}"
        );
        assert_eq!(errors.len(), 2, "{errors:?}");
        let missing = checked.check("greet", &schema, &JsonObject::new(), 1024);
        assert!(
            matches!(missing, Err(Refusal::Invalid { message, .. }) if message.contains("name"))
        );
    }

    #[test]
    fn arguments_are_bounded_in_size_and_depth() {
        let schema = object(json!({ "type": "object" }));
        let checked = InputSchema::default();
        let big = object(json!({ "text": "x".repeat(2000) }));
        assert!(matches!(
            checked.check("t", &schema, &big, 1000),
            Err(Refusal::Bound(McpError::InvalidParams { .. }))
        ));
        let mut deep = json!(1);
        for _ in 0..40 {
            deep = json!([deep]);
        }
        let nested = object(json!({ "a": deep }));
        let refused = checked.check("t", &schema, &nested, 1 << 20);
        assert!(
            matches!(refused, Err(Refusal::Bound(McpError::InvalidParams { message, .. })) if message.contains("deeper"))
        );
    }

    #[test]
    fn a_schema_may_not_reach_outside_itself() {
        let schema = object(
            json!({ "type": "object", "properties": { "a": { "$ref": "file:///etc/passwd" } } }),
        );
        let checked = InputSchema::default();
        assert_eq!(
            checked.check("t", &schema, &object(json!({ "a": 1 })), 1024),
            Err(Refusal::Bound(McpError::Internal))
        );
    }
}
