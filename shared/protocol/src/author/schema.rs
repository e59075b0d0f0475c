//! JSON Schemas derived from Rust types (`schemars`, 2020-12), in the shape MCP clients read
//! best: no `$schema` or root `title`, subschemas inline, and a nullable value written as
//! `anyOf: [{…}, {"type": "null"}]` rather than a type list (`"type": ["integer", "null"]` is
//! valid 2020-12, but linters such as the MCP Inspector's strict mode warn on it). The one
//! exception is a property annotated with `x-mcp-header`: it keeps `"type": [T, "null"]`, since
//! the spec wants the annotated property itself typed integer, string or boolean and `anyOf`
//! would carry the annotation where it may not be ([`crate::registry::rules`]).
//!
//! Elicitation forms are stricter still (the spec allows a flat object of primitive properties):
//! an optional field is just not required, so its type is the plain type.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::wire::JsonObject;

/// The schema of `T` as a tool's `inputSchema` or `outputSchema`.
pub fn tool_schema<T: JsonSchema>() -> JsonObject {
    let mut schema = derived::<T>();
    nullable_as_any_of(&mut schema);
    object(schema)
}

/// The schema of `T` as an elicitation's `requestedSchema`.
pub fn form_schema<T: JsonSchema>() -> JsonObject {
    let mut schema = derived::<T>();
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for property in properties.values_mut() {
            drop_null_type(property);
        }
    }
    object(schema)
}

fn derived<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
    }
    schema
}

fn object(schema: Value) -> JsonObject {
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// `{"type": [T, "null"], …constraints}` → `{"anyOf": [{"type": T, …constraints}, {"type": "null"}]}`,
/// everywhere in the schema.
fn nullable_as_any_of(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for value in map.values_mut() {
                nullable_as_any_of(value);
            }
            let Some(Value::Array(types)) = map.get("type") else {
                return;
            };
            if map.contains_key("x-mcp-header") {
                return;
            }
            let (nulls, others): (Vec<&Value>, Vec<&Value>) =
                types.iter().partition(|t| *t == "null");
            let others: Vec<Value> = others.into_iter().cloned().collect();
            let has_null = !nulls.is_empty();
            map.remove("type");
            let annotations = take_annotations(map);
            let mut branches: Vec<Value> = others
                .into_iter()
                .map(|kind| {
                    let mut branch = map.clone();
                    branch.insert("type".into(), kind);
                    Value::Object(branch)
                })
                .collect();
            if has_null {
                branches.push(json!({ "type": "null" }));
            }
            *map = annotations;
            map.insert("anyOf".into(), Value::Array(branches));
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_as_any_of),
        _ => {}
    }
}

/// The keywords that describe a value rather than constrain it stay beside `anyOf`.
fn take_annotations(map: &mut Map<String, Value>) -> Map<String, Value> {
    [
        "description",
        "title",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    ]
    .into_iter()
    .filter_map(|key| map.remove(key).map(|value| (key.to_string(), value)))
    .collect()
}

fn drop_null_type(property: &mut Value) {
    if let Some(types) = property.get("type").and_then(Value::as_array) {
        let kinds: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kinds.len() == 1 {
            property["type"] = kinds[0].clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Order {
        /// How many
        #[schemars(range(min = 1, max = 99))]
        quantity: u32,
        /// When it expires, if ever
        expires_at: Option<u64>,
        note: Option<String>,
    }

    #[test]
    fn a_nullable_field_becomes_any_of_with_its_constraints_inside() {
        let schema = tool_schema::<Order>();
        assert_eq!(schema.get("type"), Some(&json!("object")));
        assert!(!schema.contains_key("$schema") && !schema.contains_key("title"));
        let expires = &schema["properties"]["expires_at"];
        assert_eq!(expires["description"], "When it expires, if ever");
        assert_eq!(expires["anyOf"][0]["type"], "integer");
        assert_eq!(expires["anyOf"][0]["minimum"], 0);
        assert_eq!(expires["anyOf"][1], json!({ "type": "null" }));
        assert_eq!(schema["properties"]["quantity"]["maximum"], 99);
        assert_eq!(schema["required"], json!(["quantity"]));
        assert!(
            !serde_json::to_string(&schema)
                .unwrap()
                .contains("[\"integer\",\"null\"]")
        );
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Routed {
        #[schemars(extend("x-mcp-header" = "Region"))]
        region: Option<String>,
        target: Target,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Target {
        #[schemars(extend("x-mcp-header" = "Shard"))]
        shard: u32,
    }

    #[test]
    fn header_annotations_on_derived_schemas_keep_to_the_header_rules() {
        let schema = tool_schema::<Routed>();
        assert_eq!(
            schema["properties"]["region"]["type"],
            json!(["string", "null"]),
            "an annotated nullable property keeps its type beside the annotation"
        );
        let params = crate::registry::rules::header_params("routed", &schema).expect("valid");
        let found: Vec<(&str, String)> = params
            .iter()
            .map(|p| (p.header.as_str(), p.dotted()))
            .collect();
        assert_eq!(
            found,
            vec![
                ("Region", "region".into()),
                ("Shard", "target.shard".into())
            ]
        );
    }

    #[test]
    fn a_form_keeps_optional_fields_plain_and_unrequired() {
        let form = form_schema::<Order>();
        assert_eq!(form["properties"]["note"]["type"], "string");
        assert_eq!(form["properties"]["expires_at"]["type"], "integer");
        assert_eq!(form["required"], json!(["quantity"]));
    }
}
