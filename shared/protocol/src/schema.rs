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

/// Readies the validator on a thread of its own: the first schema compiled in a process waits for
/// the 2020-12 metaschema's compile (see `compile`), about 2 ms. A function that validates tool
/// arguments calls this at init, so that work overlaps its init's waits (the keys secret, the
/// Runtime API's first event, the issuer's JWKS) instead of lengthening its first `tools/call`;
/// a call that comes first waits for the thread's compile, never repeats it. Without a thread
/// (the system refuses one), the first compile does it as before.
pub fn prepare_validator() {
    let spawned = std::thread::Builder::new()
        .name("relevo-schemas".into())
        .spawn(|| {
            let _ = metaschema();
        });
    if let Err(error) = spawned {
        tracing::debug!(%error, "no thread to prepare the schema validator; the first call will");
    }
}

/// The dialect every tool schema is written in (`registry::rules` refuses any other `$schema`).
const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The 2020-12 metaschema (and its vocabularies), compiled once per process from `boon`'s bundled
/// copies: nothing is fetched.
fn metaschema() -> &'static Compiled {
    static METASCHEMA: OnceLock<Compiled> = OnceLock::new();
    METASCHEMA.get_or_init(|| {
        let mut compiler = boon::Compiler::new();
        compiler.use_loader(Box::new(boon::SchemeUrlLoader::new()));
        // As `boon` checks schemas against metaschemas: `format` asserted (a `pattern` must be
        // a regular expression).
        compiler.enable_format_assertions();
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile(DIALECT, &mut schemas)
            .map_err(|error| format!("{error:#}"))?;
        Ok((schemas, index))
    })
}

/// `schema` compiled under the name `location`: JSON Schema 2020-12 unless it names another
/// draft, no `$ref` loaded from anywhere; `formats` makes `format` an assertion (2020-12 makes it
/// an annotation by default). A schema the metaschema of its draft refuses does not compile.
///
/// How that check stays cheap: `boon` 0.6 checks each schema it compiles against its draft's
/// metaschema, and to do so compiles the metaschemas of all five drafts it knows at the first
/// compile in a process (about 4 ms, most of a cold start's extra over a bare function); it skips
/// the check only for documents named under `json-schema.org`, its own metaschemas. A 2020-12
/// schema (every tool schema) is therefore checked here against the 2020-12 metaschema alone
/// (compiled once, [`metaschema`]), then compiled under a `json-schema.org` name of its own so that
/// `boon` does not check it again. The check is the same one: a schema the metaschema refuses
/// still does not compile (`schema::tests` enumerates the kinds). Any other draft goes through
/// `boon`'s own check.
pub(crate) fn compile(location: &str, schema: &JsonObject, formats: bool) -> Compiled {
    let dialect = schema.get("$schema");
    let name = if dialect.is_none() || dialect == Some(&Value::from(DIALECT)) {
        let (metaschema, index) = metaschema().as_ref().map_err(Clone::clone)?;
        let document = Value::Object(schema.clone());
        if let Err(error) = metaschema.validate(&document, *index) {
            return Err(format!(
                "{location} is not valid against metaschema: {error:#}"
            ));
        }
        checked_name(location)
    } else {
        location.to_string()
    };
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    compiler.use_loader(Box::new(boon::SchemeUrlLoader::new()));
    if formats {
        compiler.enable_format_assertions();
    }
    let mut schemas = boon::Schemas::new();
    compiler
        .add_resource(&name, Value::Object(schema.clone()))
        .map_err(|error| format!("{error:#}"))?;
    let index = compiler
        .compile(&name, &mut schemas)
        .map_err(|error| format!("{error:#}"))?;
    Ok((schemas, index))
}

/// The name a schema already checked against its metaschema is compiled under: `location`'s path
/// under `json-schema.org` (no such document exists there, and nothing is loaded from it: the
/// schema is added as a resource under this name, and no loader is registered for `https`).
pub(crate) fn checked_name(location: &str) -> String {
    let path = location
        .split_once(":///")
        .map_or(location, |(_, path)| path);
    format!("https://json-schema.org/relevo-checked/{path}")
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

    /// Schemas the 2020-12 metaschema refuses, one of each kind of fault: `boon` would compile
    /// every one of them (ignoring the faulty keyword, so arguments would go unchecked) were they
    /// not checked against the metaschema first.
    const REFUSED_BY_THE_METASCHEMA: &[&str] = &[
        r#"{"required":"name"}"#,
        r#"{"type":5}"#,
        r#"{"type":"strin"}"#,
        r#"{"minLength":"x"}"#,
        r#"{"maxLength":-1}"#,
        r#"{"minimum":"3"}"#,
        r#"{"properties":[]}"#,
        r#"{"properties":{"a":5}}"#,
        r#"{"enum":5}"#,
        r#"{"pattern":"("}"#,
        r#"{"items":"x"}"#,
        r#"{"additionalProperties":"no"}"#,
        r#"{"$defs":{"a":3}}"#,
        r#"{"allOf":{}}"#,
        r#"{"format":7}"#,
        r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","required":"name"}"#,
    ];

    #[test]
    fn a_schema_its_metaschema_refuses_does_not_compile_and_the_tool_does_not_run() {
        for text in REFUSED_BY_THE_METASCHEMA {
            let schema: JsonObject = serde_json::from_str(text).unwrap();
            let problem = InputSchema::default().problem(&schema);
            assert!(
                problem
                    .as_deref()
                    .is_some_and(|why| why.contains("not valid against metaschema")),
                "{text}: {problem:?}"
            );
            assert_eq!(
                InputSchema::default().check("t", &schema, &JsonObject::new(), 1024),
                Err(Refusal::Bound(McpError::Internal)),
                "{text}"
            );
        }
    }

    #[test]
    fn a_schema_of_another_draft_is_checked_against_that_drafts_metaschema() {
        let draft7 = |body: Value| {
            let mut schema = object(body);
            schema.insert(
                "$schema".into(),
                json!("http://json-schema.org/draft-07/schema#"),
            );
            compile("mem:///draft7.json", &schema, false)
        };
        let refused = draft7(json!({ "required": "name" }));
        assert!(
            refused
                .as_ref()
                .is_err_and(|why| why.contains("not valid against metaschema")),
            "{:?}",
            refused.err()
        );
        // Draft 7's `items` may be an array (2020-12's may not): the draft's own metaschema judged it.
        let Ok((schemas, index)) = draft7(json!({ "items": [{ "type": "string" }] })) else {
            panic!("a valid draft-07 schema compiles");
        };
        assert!(schemas.validate(&json!(["a"]), index).is_ok());
        assert!(schemas.validate(&json!([1]), index).is_err());
    }

    #[test]
    fn a_checked_schema_is_named_apart_and_its_own_refs_still_resolve() {
        assert_eq!(
            checked_name("mem:///input-schema.json"),
            "https://json-schema.org/relevo-checked/input-schema.json"
        );
        let schema = object(json!({
            "$defs": { "name": { "type": "string", "minLength": 1 } },
            "type": "object",
            "properties": { "name": { "$ref": "#/$defs/name" } },
            "required": ["name"]
        }));
        let checked = InputSchema::default();
        assert_eq!(checked.problem(&schema), None);
        assert_eq!(
            checked.check("t", &schema, &object(json!({ "name": "Ada" })), 1024),
            Ok(())
        );
        assert!(matches!(
            checked.check("t", &schema, &object(json!({ "name": "" })), 1024),
            Err(Refusal::Invalid { .. })
        ));
    }
}
