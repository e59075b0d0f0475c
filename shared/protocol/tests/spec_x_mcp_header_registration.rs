//! MCP 2026-07-28, "Tools" → Data Types → Tool → x-mcp-header, and "Transports" → Streamable
//! HTTP → Custom Headers from Tool Parameters → Schema Extension. Constraints on `x-mcp-header`
//! values: they "**MUST NOT** be empty", "**MUST** match HTTP field-name token syntax
//! (`1*tchar`, RFC 9110 Section 5.1)", "**MUST NOT** contain control characters, including
//! carriage return (CR, `\r`) or line feed (LF, `\n`)", "**MUST** be case-insensitively unique
//! among all `x-mcp-header` values in the `inputSchema`", "**MUST** only be applied to
//! parameters with primitive types (integer, string, boolean). Parameters with type `number`
//! are not permitted", and "**MUST** only be applied to properties that are _statically
//! reachable_ from the schema root: reachable via a chain consisting solely of `properties`
//! keys. The chain **MUST NOT** pass through `items` (or any other array keyword), composition
//! keywords (`oneOf`, `anyOf`, `allOf`, `not`), conditional keywords (`if`/`then`/`else`), or
//! `$ref`." Clients "**MUST** reject tool definitions where any `x-mcp-header` value violates
//! these constraints".
//!
//! Checked at registration: `App::tool` refuses (panics, naming the tool, where the annotation
//! is and the rule) a tool whose `inputSchema` breaks one of them, so the server never lists a
//! tool every conforming client drops. A schema that keeps them registers. A schema derived
//! from a Rust type is derived lazily, after registration; `App::verify_schemas`, which the local
//! server and the testkit call at start, derives it and refuses it the same way.

use relevo_protocol::registry::rules::{HeaderFault, Refused, header_params};
use relevo_protocol::{App, Handler, Tool, handler};
use serde_json::{Value, json};

fn never() -> Handler {
    handler(|_| async { unreachable!("never called") })
}

fn with_input(schema: Value) -> Tool {
    Tool::new("mirror", "A tool.", schema, never())
}

/// A schema with one property `p` of `property`.
fn one(property: Value) -> Value {
    json!({ "type": "object", "properties": { "p": property } })
}

/// The panic message of `build`, which must panic.
fn refusal(build: impl FnOnce() -> App + std::panic::UnwindSafe) -> String {
    let Err(panic) = std::panic::catch_unwind(build) else {
        panic!("the registration was accepted");
    };
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Registers `schema`, which must be refused, and returns the fault and the message.
fn refused(schema: Value) -> (HeaderFault, String) {
    let fault = match header_params("mirror", schema.as_object().expect("a schema object")) {
        Err(Refused::Header { fault, .. }) => fault,
        other => panic!("{schema}: expected a header refusal, got {other:?}"),
    };
    let message = refusal(move || App::new("h", "1").tool(with_input(schema)));
    assert!(
        message.contains("\"mirror\"") && message.contains("x-mcp-header"),
        "the message names the tool and the annotation: {message}"
    );
    (fault, message)
}

#[test]
fn valid_annotations_register_nested_ones_included() {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "priority": { "type": "integer", "x-mcp-header": "Priority" },
            "dry_run": { "type": "boolean", "x-mcp-header": "Dry-Run" },
            "tenant": { "type": ["string", "null"], "x-mcp-header": "Tenant" },
            "odd": { "type": "string", "x-mcp-header": "A1!#$%&'*+-.^_`|~z" },
            "target": {
                "type": "object",
                "properties": {
                    "shard": {
                        "type": "object",
                        "properties": { "id": { "type": "integer", "x-mcp-header": "Shard" } }
                    }
                }
            },
            "data": {
                "type": "object",
                "default": { "x-mcp-header": "not an annotation" },
                "examples": [{ "x-mcp-header": "" }],
                "const": { "x-mcp-header": 7 }
            },
            "query": { "type": "string" }
        },
        "required": ["region"]
    });
    let app = App::new("h", "1").tool(with_input(schema));
    let params = app
        .find_tool("mirror")
        .expect("registered")
        .header_params()
        .expect("valid");
    let mut found: Vec<(String, String)> = params
        .iter()
        .map(|p| (p.header.clone(), p.dotted()))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("A1!#$%&'*+-.^_`|~z", "odd"),
            ("Dry-Run", "dry_run"),
            ("Priority", "priority"),
            ("Region", "region"),
            ("Shard", "target.shard.id"),
            ("Tenant", "tenant"),
        ]
        .map(|(h, p)| (h.to_string(), p.to_string()))
    );
}

#[test]
fn an_empty_value_is_refused() {
    let (fault, _) = refused(one(json!({ "type": "string", "x-mcp-header": "" })));
    assert_eq!(fault, HeaderFault::Empty);
}

#[test]
fn a_value_that_is_not_a_string_is_refused() {
    for value in [json!(7), json!(null), json!(["Region"]), json!(true)] {
        let (fault, _) = refused(one(json!({ "type": "string", "x-mcp-header": value })));
        assert!(matches!(fault, HeaderFault::NotAString(_)), "{value}");
    }
}

#[test]
fn a_value_that_is_not_an_rfc_9110_token_is_refused() {
    for bad in [
        "Bad Header",
        "X\r\nInjected: 1",
        "Tab\there",
        "Nul\u{0}",
        "Del\u{7f}",
        "Région",
        "a:b",
        "a/b",
        "(x)",
        "a,b",
        "a;b",
        "\"q\"",
        "a=b",
        "{x}",
        "a@b",
        "a?b",
        "[x]",
        "a\\b",
        " Lead",
    ] {
        let (fault, message) = refused(one(json!({ "type": "string", "x-mcp-header": bad })));
        assert_eq!(fault, HeaderFault::NotAToken(bad.into()), "{bad:?}");
        assert!(message.contains("RFC 9110"), "{message}");
    }
}

#[test]
fn a_value_used_twice_ignoring_case_is_refused() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": { "type": "string", "x-mcp-header": "Region" },
            "b": { "type": "object", "properties": {
                "c": { "type": "string", "x-mcp-header": "REGION" }
            } }
        }
    });
    let (fault, message) = refused(schema);
    assert!(matches!(fault, HeaderFault::Duplicate(_)), "{fault:?}");
    assert!(message.contains("unique"), "{message}");
}

#[test]
fn a_property_not_of_type_integer_string_or_boolean_is_refused() {
    for kind in [
        json!("number"),
        json!(["number", "null"]),
        json!(["string", "integer"]),
        json!("object"),
        json!("array"),
        json!("null"),
    ] {
        let (fault, message) = refused(one(json!({ "type": kind, "x-mcp-header": "P" })));
        assert!(matches!(fault, HeaderFault::Type(_)), "{kind}: {fault:?}");
        assert!(message.contains("never number"), "{message}");
    }
    let (fault, _) = refused(one(json!({ "x-mcp-header": "P" })));
    assert!(matches!(fault, HeaderFault::Type(_)), "an undeclared type");
}

#[test]
fn an_annotation_not_reached_through_properties_alone_is_refused() {
    let annotated = json!({ "type": "string", "x-mcp-header": "Deep" });
    let object = |inner: Value| json!({ "type": "object", "properties": { "x": inner } });
    let cases: Vec<(&str, Value)> = vec![
        ("items", one(json!({ "type": "array", "items": annotated }))),
        (
            "items",
            one(json!({ "type": "array", "items": object(annotated.clone()) })),
        ),
        (
            "prefixItems",
            one(json!({ "type": "array", "prefixItems": [annotated] })),
        ),
        (
            "contains",
            one(json!({ "type": "array", "contains": annotated })),
        ),
        ("anyOf", one(json!({ "anyOf": [annotated] }))),
        (
            "oneOf",
            one(json!({ "oneOf": [annotated, { "type": "integer" }] })),
        ),
        ("allOf", one(json!({ "allOf": [annotated] }))),
        ("not", one(json!({ "not": annotated }))),
        ("if", one(json!({ "if": annotated }))),
        (
            "then",
            one(json!({ "if": { "type": "string" }, "then": annotated })),
        ),
        (
            "else",
            one(json!({ "if": { "type": "string" }, "else": annotated })),
        ),
        (
            "$defs",
            json!({ "type": "object", "properties": { "p": { "$ref": "#/$defs/d" } },
                     "$defs": { "d": annotated } }),
        ),
        (
            "additionalProperties",
            json!({ "type": "object", "additionalProperties": annotated }),
        ),
        (
            "patternProperties",
            json!({ "type": "object", "patternProperties": { "^x": annotated } }),
        ),
        (
            "dependentSchemas",
            json!({ "type": "object", "dependentSchemas": { "p": object(annotated.clone()) } }),
        ),
        ("anyOf", json!({ "anyOf": [object(annotated.clone())] })),
        (
            "schema root",
            json!({ "type": "string", "x-mcp-header": "Root" }),
        ),
    ];
    for (keyword, schema) in cases {
        let (fault, message) = refused(schema.clone());
        let HeaderFault::Unreachable(via) = fault else {
            panic!("{schema}: expected unreachable, got {fault:?}");
        };
        assert!(via.contains(keyword), "{schema}: {via}");
        assert!(message.contains("statically reachable"), "{message}");
    }
}

/// Typed tools whose schema is derived from a Rust type, one annotation each.
mod typed {
    use relevo_protocol::author::{ToolContext, ToolError};
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Deserialize, JsonSchema)]
    pub struct Good {
        #[schemars(extend("x-mcp-header" = "Region"))]
        pub region: String,
    }

    #[derive(Deserialize, JsonSchema)]
    pub struct Bad {
        /// `number` may not be mirrored into a header.
        #[schemars(extend("x-mcp-header" = "Amount"))]
        pub amount: f64,
    }

    pub async fn good(args: Good, _: ToolContext) -> Result<String, ToolError> {
        Ok(args.region)
    }

    pub async fn bad(args: Bad, _: ToolContext) -> Result<String, ToolError> {
        Ok(args.amount.to_string())
    }
}

#[test]
fn a_derived_schema_is_checked_when_the_app_verifies_its_schemas() {
    let good = App::new("h", "1").tool(Tool::typed("mirror", "A tool.", typed::good));
    good.verify_schemas();

    // Registration alone accepts it (the schema is not derived yet); verifying refuses it.
    let _registered = App::new("h", "1").tool(Tool::typed("mirror", "A tool.", typed::bad));
    let message = refusal(|| {
        let bad = App::new("h", "1").tool(Tool::typed("mirror", "A tool.", typed::bad));
        bad.verify_schemas();
        bad
    });
    assert!(
        message.contains("\"mirror\"")
            && message.contains("x-mcp-header")
            && message.contains("number"),
        "the message names the tool, the annotation and the rule: {message}"
    );
}
