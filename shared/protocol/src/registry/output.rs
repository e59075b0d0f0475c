//! A tool's results checked against its declared `outputSchema` before they leave.
//!
//! The spec: a tool that declares an `outputSchema` MUST return `structuredContent` conforming
//! to it. A result that does not (a field of the wrong type, a number JSON cannot carry that
//! became `null`, no `structuredContent` at all) is the server's bug, not the caller's: it is
//! answered as a JSON-RPC internal error (`-32603`, [`McpError::ResultBrokeOutputSchema`]) and
//! logged at error with the tool's name and the failing locations, never as a success a client
//! would trust. Tool execution errors (`isError: true`) carry no structured result and are not
//! checked.
//!
//! Invariants: the validator is the one arguments go through, compiled by the same function
//! (`schema::CompiledSchema`: `boon`, JSON Schema 2020-12 unless the schema names another
//! draft, no `$ref` loaded from anywhere); the schema is compiled once per tool, on its first
//! checked result, and shared by the tool's clones. Neither
//! the error nor the log line carries result content (it may be a caller's data).

use serde_json::Value;

use crate::error::McpError;
use crate::schema::{Compiled, CompiledSchema};
use crate::wire::JsonObject;

const LOCATION: &str = "mem:///output-schema.json";
/// The most failing locations a log line names.
const MAX_LOGGED: usize = 10;

/// A tool's compiled output schema, shared by the tool's clones.
#[derive(Clone, Default)]
pub struct OutputCheck(CompiledSchema);

impl OutputCheck {
    fn compiled(&self, schema: &JsonObject) -> &Compiled {
        self.0.get(LOCATION, schema)
    }

    /// Checks a successful result of tool `tool` against its `schema`: `Ok` when it conforms
    /// (or is a tool execution error), the server's error otherwise, logged.
    pub fn check(
        &self,
        tool: &str,
        schema: &JsonObject,
        result: &JsonObject,
    ) -> Result<(), McpError> {
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        let Some(structured) = result.get("structuredContent") else {
            tracing::error!(%tool, "the tool declares an outputSchema but its result has no structuredContent");
            return Err(McpError::ResultBrokeOutputSchema);
        };
        let (schemas, index) = match self.compiled(schema) {
            Ok(compiled) => compiled,
            Err(why) => {
                tracing::error!(%tool, %why, "the tool's outputSchema does not compile; its result is refused");
                return Err(McpError::ResultBrokeOutputSchema);
            }
        };
        let Err(invalid) = schemas.validate(structured, *index) else {
            return Ok(());
        };
        let mut failures = Vec::new();
        locations(&invalid, &mut failures);
        failures.truncate(MAX_LOGGED);
        tracing::error!(%tool, failures = %failures.join("; "), "the tool's result broke its outputSchema");
        Err(McpError::ResultBrokeOutputSchema)
    }
}

/// The innermost failures: each a location in the result and the schema location that refused
/// it (no instance values: those are result content).
fn locations(error: &boon::ValidationError<'_, '_>, out: &mut Vec<String>) {
    if error.causes.is_empty() {
        let at = error.instance_location.to_string();
        // The keyword's place in the schema: the fragment of the name it was compiled under.
        let schema = error
            .schema_url
            .find('#')
            .map_or(error.schema_url, |at| &error.schema_url[at..]);
        out.push(format!(
            "{} (schema {schema})",
            if at.is_empty() { "/" } else { &at }
        ));
    }
    for cause in &error.causes {
        locations(cause, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn only_a_conforming_structured_result_passes() {
        let schema = object(
            json!({ "type": "object", "properties": { "sum": { "type": "number" } }, "required": ["sum"] }),
        );
        let check = OutputCheck::default();
        assert_eq!(
            check.check(
                "add",
                &schema,
                &object(json!({ "structuredContent": { "sum": 3.5 } }))
            ),
            Ok(())
        );
        for broken in [
            json!({ "structuredContent": { "sum": null } }),
            json!({ "structuredContent": {} }),
            json!({}),
        ] {
            assert_eq!(
                check.check("add", &schema, &object(broken)),
                Err(McpError::ResultBrokeOutputSchema)
            );
        }
        let tool_error = object(json!({ "isError": true, "content": [] }));
        assert_eq!(check.check("add", &schema, &tool_error), Ok(()));
    }
}
