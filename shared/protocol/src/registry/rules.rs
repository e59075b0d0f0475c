//! What registration refuses: the rules a name or a schema must meet before an [`App`] holds
//! it, so that a mistake in an app shows when the app is built (at the first cold start, in
//! the app's tests) rather than as an error a client sees at call time.
//!
//! Invariants, each checked once per registration:
//! - A tool name is 1–128 characters of `[A-Za-z0-9_.-]` (MCP 2026-07-28, "Tools", tool
//!   names), so every client can name it in `tools/call` and every log line can print it.
//! - Tool names, prompt names, resource URIs and resource-template URI templates are unique
//!   per app: a second registration under a key already held is refused, not a silent
//!   replacement of the first.
//! - A resource template is one the matcher honours (RFC 6570 without prefix modifiers, an
//!   exploded variable only last in its expression, each variable once, no two adjacent
//!   expressions whose boundary is a guess): otherwise a read would bind the wrong values.
//! - A schema the app gives as JSON (input or output) declares no `$schema` but JSON Schema
//!   2020-12, the dialect the spec names and the one the validator is built for. A schema
//!   derived from a Rust type never declares one (it is derived without it).
//! - Every `x-mcp-header` annotation in a tool's `inputSchema` (MCP 2026-07-28, "Tools" →
//!   x-mcp-header; "Streamable HTTP" → Custom Headers from Tool Parameters) is a string that is
//!   an RFC 9110 token (`1*tchar`: never empty, no space, control character or separator),
//!   case-insensitively unique within the schema, on a property whose `type` is `integer`,
//!   `string` or `boolean` (never `number`; `null` may join it, as a null argument sends no
//!   header), and statically reachable: reached from the root through `properties` keys only,
//!   never through `items`, `anyOf`/`oneOf`/`allOf`/`not`, `if`/`then`/`else`, `$ref`/`$defs`,
//!   `additionalProperties`, `patternProperties` or any other keyword. Clients drop a tool that
//!   breaks one of these, so a server must never list one. The same walk ([`header_params`])
//!   yields the header parameters the ladder checks, nested ones included.
//! - What registration cannot see: the spec's "integer values MUST be within the safe range"
//!   (−2^53+1 to 2^53−1) is about the values a call carries, so the ladder enforces it at
//!   call time ([`JS_SAFE_INTEGER`]); a schema derived from a Rust type is derived at its first
//!   use, after registration, so its annotations are checked by the ladder then (an invalid
//!   one is answered `-32603`, as a bug of the app).
//! - Every icon (of the server, a tool, a prompt, a resource or a template) has an `https:` URL
//!   with a host and no credentials, or a `data:` URI, and nothing outside printable ASCII
//!   (MCP 2026-07-28, basic/index "General fields" → `icons`: consumers ensure "that the icon
//!   URI is either a HTTPS or `data:` URI" and MUST reject other schemes; an icon of another
//!   scheme would never show, and an `http:` one would travel in clear).
//! - Every `_meta` key an item declares follows the spec's key format (an optional prefix of
//!   dot-separated labels and a `/`, then a name) and is neither a key the spec reserves
//!   (`progressToken`, `traceparent`, `tracestate`, `baggage`) nor under a prefix reserved for
//!   MCP (second label `modelcontextprotocol` or `mcp`; basic/index "General fields" → `_meta`),
//!   save the keys an official extension defines for servers to declare
//!   ([`EXTENSION_META_KEYS`], none today). MCP Apps' own `ui` and `ui/resourceUri` keys are
//!   ordinary keys; `io.modelcontextprotocol/ui` is its capability's name, not a `_meta` key.
//! - MCP Apps (SEP-1865; [`super::apps`]): a `ui://` resource has the MIME type
//!   `text/html;profile=mcp-app` (the spec's "MUST"); a tool's `_meta.ui` is an object whose
//!   `resourceUri` is a `ui://` URI and whose `visibility` is a non-empty list of `model` and
//!   `app`; the resource it names is one the app registers (checked when the server is built,
//!   since registration order is free: [`super::App::unresolved_views`]). What registration
//!   cannot see: that an app-only or view-backed tool's result keeps meaningful text content
//!   (the spec's "Tools MUST return meaningful content array"), which is the handler's.
//!
//! - A skill (the Skills extension, SEP-2640, and the Agent Skills format it delegates to) has
//!   a `SKILL.md` at its root that begins with YAML frontmatter (a mapping whose `name` and
//!   `description` are non-empty strings, every field renderable as JSON); its `name` is 1–64
//!   characters of lowercase letters, digits and hyphens, neither starting nor ending with a
//!   hyphen and with no two in a row, and equals the final segment of the skill's path; every
//!   path segment and file path is non-empty, relative, `/`-separated, without `.` or `..`;
//!   a file appears once; the skill stays within the extension's limits (512 files, 16 MiB).
//!
//! The refusal is a panic in the builder, as axum refuses conflicting routes: an app is code,
//! and a registration mistake is a bug of that code, not a run-time condition to recover from.
//!
//! [`App`]: super::App

use thiserror::Error;

use serde_json::Value;

use crate::wire::{Icon, JsonObject};

/// The longest tool name the spec allows.
pub const MAX_TOOL_NAME: usize = 128;

/// The one JSON Schema dialect a tool schema may declare in `$schema` (2020-12, the default).
pub const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The largest integer an `x-mcp-header` integer parameter may carry (2^53 − 1, JavaScript's
/// `Number.MAX_SAFE_INTEGER`); the smallest is its negation.
pub const JS_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The `_meta` keys under a reserved prefix that an app may declare: those an official
/// extension defines for servers to declare. None today: MCP Apps (SEP-1865, stable
/// 2026-01-26) names its capability `io.modelcontextprotocol/ui` but its `_meta` key is the
/// unprefixed `ui` (and the deprecated flat `ui/resourceUri`), ordinary keys.
pub const EXTENSION_META_KEYS: &[&str] = &[];

/// The `_meta` keys without a prefix that the spec reserves for its own use (progress and
/// OpenTelemetry trace context): an app may not declare them.
pub const RESERVED_META_KEYS: &[&str] = &["progressToken", "traceparent", "tracestate", "baggage"];

/// Why a registration is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Refused {
    /// A `ui://` resource is not served as `text/html;profile=mcp-app`.
    #[error(
        "resource {uri:?} is a ui:// resource of type {mime_type}: a ui:// resource MUST be \
         text/html;profile=mcp-app (MCP Apps, \"UI Resource Format\")"
    )]
    View {
        /// The resource's URI.
        uri: String,
        /// Its declared MIME type (`none` when it declares none).
        mime_type: String,
    },
    /// A tool's `_meta.ui` is malformed or names no view of the app.
    #[error(
        "tool {tool:?} has an invalid MCP Apps _meta.ui: {fault} (MCP Apps, \"Resource Discovery\")"
    )]
    ToolView {
        /// The tool's name.
        tool: String,
        /// What is wrong.
        fault: String,
    },
    /// The tool name is empty, too long, or has a character outside `[A-Za-z0-9_.-]`.
    #[error(
        "tool name {0:?} is invalid: a tool name is 1 to {MAX_TOOL_NAME} characters of \
         [A-Za-z0-9_.-] (MCP \"Tools\", tool names)"
    )]
    ToolName(String),
    /// Something of this kind is already registered under this key.
    #[error("{kind} {key:?} is registered twice: {kind}s are unique per server")]
    Duplicate {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The name, URI or URI template registered twice.
        key: String,
    },
    /// A tool schema declares a JSON Schema dialect other than 2020-12.
    #[error(
        "the {which} of tool {tool:?} declares the JSON Schema dialect {dialect}: only \
         {SCHEMA_DIALECT} (the default when $schema is absent) is supported"
    )]
    Dialect {
        /// The tool's name.
        tool: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// The `$schema` it declares, as JSON.
        dialect: String,
    },
    /// An `x-mcp-header` annotation breaks one of the spec's constraints.
    #[error(
        "the inputSchema of tool {tool:?} has an invalid x-mcp-header at {at}: {fault} \
         (MCP \"Tools\", x-mcp-header)"
    )]
    Header {
        /// The tool's name.
        tool: String,
        /// Where the annotation is, as a JSON Pointer into the `inputSchema`.
        at: String,
        /// Which constraint it breaks.
        fault: HeaderFault,
    },
    /// An icon's `src` is not an `https:` URL (with a host, without credentials) or a `data:`
    /// URI.
    #[error(
        "{kind} {key:?} declares an icon at {src:?}: an icon src is an https: URL (with a host \
         and no credentials) or a data: URI, the only schemes clients accept (MCP \"General \
         fields\", icons)"
    )]
    IconSource {
        /// `server`, `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The server's, tool's or prompt's name, the resource's URI or the URI template.
        key: String,
        /// The refused `src`.
        src: String,
    },
    /// A `_meta` key does not follow the spec's key format.
    #[error(
        "{kind} {key:?} declares the _meta key {meta_key:?}, which is not a valid key: an \
         optional prefix of dot-separated labels (each a letter, then letters, digits or \
         hyphens, ending in a letter or digit) and a `/`, then a name that starts and ends \
         alphanumeric with only alphanumerics, `-`, `_` or `.` between (MCP \"General \
         fields\", _meta)"
    )]
    MetaKey {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The tool's or prompt's name, the resource's URI or the URI template.
        key: String,
        /// The refused `_meta` key.
        meta_key: String,
    },
    /// A `_meta` key is reserved for MCP: a key the spec defines, or under a prefix whose second
    /// label is `modelcontextprotocol` or `mcp` and not a key an extension defines.
    #[error(
        "{kind} {key:?} declares the _meta key {meta_key:?}, which is reserved for MCP: \
         progressToken, traceparent, tracestate, baggage and every prefix whose second label is \
         modelcontextprotocol or mcp are the protocol's, and no official extension defines one \
         for servers to declare (MCP Apps' key is the unprefixed `ui`) (MCP \"General fields\", \
         _meta)"
    )]
    ReservedMetaKey {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The tool's or prompt's name, the resource's URI or the URI template.
        key: String,
        /// The refused `_meta` key.
        meta_key: String,
    },
    /// A resource template the URI matcher cannot honour.
    #[error(
        "resource template {template:?} cannot be matched: {reason} (RFC 6570; see \
         ResourceTemplate::match_uri)"
    )]
    UriTemplate {
        /// The URI template.
        template: String,
        /// Why the matcher cannot honour it.
        reason: String,
    },
    /// A skill breaks the Skills extension's format.
    #[error("skill {path:?} is invalid: {fault} (Skills extension, \"Skill Format\")")]
    Skill {
        /// The skill's path.
        path: String,
        /// What it breaks.
        fault: SkillFault,
    },
}

/// The Skills extension's limit on a skill's files.
pub const MAX_SKILL_FILES: usize = 512;

/// The Skills extension's limit on the summed size of a skill's files (16 MiB).
pub const MAX_SKILL_BYTES: usize = 16 * 1024 * 1024;

/// Why a skill is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SkillFault {
    /// No `SKILL.md` at the skill's root.
    #[error("it has no SKILL.md at its root")]
    NoSkillMd,
    /// `SKILL.md` does not begin with a `---` fenced YAML block.
    #[error("its SKILL.md does not begin with YAML frontmatter between --- lines")]
    NoFrontmatter,
    /// The frontmatter is not a YAML mapping renderable as JSON.
    #[error("its frontmatter is not a YAML mapping renderable as JSON: {0}")]
    Frontmatter(String),
    /// A required frontmatter field is missing, empty or not a string.
    #[error("its frontmatter has no non-empty string {0:?}")]
    Missing(&'static str),
    /// The name breaks the Agent Skills naming rules.
    #[error(
        "its name {0:?} is invalid: 1 to 64 characters of lowercase letters, digits and \
         hyphens, not starting or ending with a hyphen, no two hyphens in a row (Agent Skills, \
         name field)"
    )]
    Name(String),
    /// The final segment of the skill path is not the name.
    #[error("its path ends in {segment:?} but its name is {name:?}: they must be equal")]
    PathName {
        /// The final path segment.
        segment: String,
        /// The frontmatter's name.
        name: String,
    },
    /// A path (the skill's or a file's) is empty, absolute, or has an empty, `.` or `..` segment.
    #[error("the path {0:?} is not relative with non-empty segments other than . and ..")]
    Path(String),
    /// A file is given twice.
    #[error("the file {0:?} is given twice")]
    DuplicateFile(String),
    /// Over the extension's limits.
    #[error(
        "it has {files} files of {bytes} bytes in all: at most {MAX_SKILL_FILES} files and \
         {MAX_SKILL_BYTES} bytes"
    )]
    Limits {
        /// How many files.
        files: usize,
        /// Their summed size.
        bytes: usize,
    },
}

/// The `x-mcp-header` constraint an annotation breaks.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HeaderFault {
    /// The value is not a string.
    #[error("the value {0} is not a string")]
    NotAString(String),
    /// The value is empty.
    #[error("the value is empty")]
    Empty,
    /// The value is not an RFC 9110 token.
    #[error(
        "the value {0:?} is not an RFC 9110 token (1*tchar: letters, digits and \
         !#$%&'*+-.^_`|~ only; no space, control character or separator)"
    )]
    NotAToken(String),
    /// Another annotation of the schema has the same value, ignoring case.
    #[error("the value {0:?} is used twice (case-insensitively): each must be unique")]
    Duplicate(String),
    /// The annotated property's `type` is not integer, string or boolean.
    #[error(
        "it annotates a property of type {0}: only integer, string or boolean may be \
         mirrored (never number)"
    )]
    Type(String),
    /// The annotation is not reached from the root through `properties` keys only.
    #[error(
        "it is not statically reachable: only a property reached from the root through \
         `properties` keys alone may carry it (not through {0})"
    )]
    Unreachable(String),
}

/// The JSON type an `x-mcp-header` parameter is declared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderKind {
    /// `integer`: compared exactly, by value (`42` equals `42.0`), and within ±(2^53 − 1).
    Integer,
    /// `string`: compared byte for byte.
    String,
    /// `boolean`: `true` or `false`.
    Boolean,
}

/// One argument a `tools/call` mirrors into an `Mcp-Param-{header}` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `{Name}` of `Mcp-Param-{Name}`, as the schema spells it.
    pub header: String,
    /// The chain of `properties` keys from the arguments' root to the value.
    pub path: Vec<String>,
    /// The declared type.
    pub kind: HeaderKind,
}

impl HeaderParam {
    /// The path written with dots (`a.b`), for messages.
    pub fn dotted(&self) -> String {
        self.path.join(".")
    }
}

/// Whether `value` is an RFC 9110 token (`1*tchar`).
pub fn is_token(value: &str) -> bool {
    !value.is_empty()
        && value.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

/// Keywords whose values are instances, not schemas: an `x-mcp-header` key inside them is data.
const INSTANCE_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];

/// Keywords whose value maps names (or patterns) to subschemas.
const SCHEMA_MAPS: [&str; 6] = [
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
];

/// Every `x-mcp-header` parameter of tool `tool`'s `inputSchema`, in schema order, or the first
/// constraint one of them breaks.
pub fn header_params(tool: &str, schema: &JsonObject) -> Result<Vec<HeaderParam>, Refused> {
    let mut walk = Walk {
        found: Vec::new(),
        fault: None,
    };
    walk.schema(schema, Some(&[]), "");
    if let Some((at, fault)) = walk.fault {
        return Err(Refused::Header {
            tool: tool.into(),
            at: if at.is_empty() { "/".into() } else { at },
            fault,
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for (param, at) in &walk.found {
        if !seen.insert(param.header.to_ascii_lowercase()) {
            return Err(Refused::Header {
                tool: tool.into(),
                at: at.clone(),
                fault: HeaderFault::Duplicate(param.header.clone()),
            });
        }
    }
    Ok(walk.found.into_iter().map(|(param, _)| param).collect())
}

/// Checks every `x-mcp-header` annotation of tool `tool`'s `inputSchema`.
pub fn headers(tool: &str, schema: &JsonObject) -> Result<(), Refused> {
    header_params(tool, schema).map(drop)
}

/// The walk over one schema: the parameters found (with their pointers) and the first fault.
struct Walk {
    found: Vec<(HeaderParam, String)>,
    fault: Option<(String, HeaderFault)>,
}

impl Walk {
    fn fail(&mut self, at: String, fault: HeaderFault) {
        if self.fault.is_none() {
            self.fault = Some((at, fault));
        }
    }

    /// A subschema at JSON Pointer `at`; `path` is its `properties` chain from the root, or
    /// `None` when some other keyword leads to it. The root itself is no property (`Some([])`).
    fn schema(&mut self, schema: &JsonObject, path: Option<&[String]>, at: &str) {
        for (key, value) in schema {
            let here = format!("{at}/{}", pointer_escape(key));
            match key.as_str() {
                "x-mcp-header" => self.annotation(schema, value, path, &here),
                "properties" => {
                    let Some(properties) = value.as_object() else {
                        continue;
                    };
                    for (name, sub) in properties {
                        let child = path.map(|p| [p, std::slice::from_ref(name)].concat());
                        let sub_at = format!("{here}/{}", pointer_escape(name));
                        self.any(sub, child.as_deref(), &sub_at);
                    }
                }
                k if INSTANCE_KEYWORDS.contains(&k) => {}
                k if SCHEMA_MAPS.contains(&k) => {
                    if let Some(map) = value.as_object() {
                        for (name, sub) in map {
                            let sub_at = format!("{here}/{}", pointer_escape(name));
                            self.any(sub, None, &sub_at);
                        }
                    }
                }
                _ => self.any(value, None, &here),
            }
        }
    }

    /// Any value: objects are walked as schemas, arrays element by element.
    fn any(&mut self, value: &Value, path: Option<&[String]>, at: &str) {
        match value {
            Value::Object(schema) => self.schema(schema, path, at),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.any(item, None, &format!("{at}/{i}"));
                }
            }
            _ => {}
        }
    }

    fn annotation(
        &mut self,
        schema: &JsonObject,
        value: &Value,
        path: Option<&[String]>,
        at: &str,
    ) {
        let path = match path {
            Some(path) if !path.is_empty() => path,
            Some(_) => {
                return self.fail(
                    at.into(),
                    HeaderFault::Unreachable("the schema root, which is no property".into()),
                );
            }
            None => return self.fail(at.into(), HeaderFault::Unreachable(first_keyword(at))),
        };
        let Value::String(header) = value else {
            return self.fail(at.into(), HeaderFault::NotAString(value.to_string()));
        };
        if header.is_empty() {
            return self.fail(at.into(), HeaderFault::Empty);
        }
        if !is_token(header) {
            return self.fail(at.into(), HeaderFault::NotAToken(header.clone()));
        }
        let Some(kind) = header_kind(schema.get("type")) else {
            let declared = schema
                .get("type")
                .map_or_else(|| "(none declared)".to_string(), Value::to_string);
            return self.fail(at.into(), HeaderFault::Type(declared));
        };
        self.found.push((
            HeaderParam {
                header: header.clone(),
                path: path.to_vec(),
                kind,
            },
            at.into(),
        ));
    }
}

/// The kind a `type` keyword allows: one of integer, string, boolean, optionally with `null`.
fn header_kind(declared: Option<&Value>) -> Option<HeaderKind> {
    let kind = |name: &str| match name {
        "integer" => Some(HeaderKind::Integer),
        "string" => Some(HeaderKind::String),
        "boolean" => Some(HeaderKind::Boolean),
        _ => None,
    };
    match declared? {
        Value::String(name) => kind(name),
        Value::Array(names) => {
            let mut names = names.iter().filter(|n| n.as_str() != Some("null"));
            let only = names.next()?.as_str()?;
            if names.next().is_some() {
                return None;
            }
            kind(only)
        }
        _ => None,
    }
}

/// The first keyword of pointer `at` that is not a `properties` step: what made it unreachable.
fn first_keyword(at: &str) -> String {
    let mut steps = at.split('/').skip(1);
    while let Some(step) = steps.next() {
        if step == "properties" {
            steps.next();
        } else {
            return format!("`{}`", step.replace("~1", "/").replace("~0", "~"));
        }
    }
    "an unknown keyword".into()
}

/// `key` escaped for a JSON Pointer (RFC 6901).
fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Whether `name` is a valid tool name.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Checks the name of tool `name`.
pub fn tool_name(name: &str) -> Result<(), Refused> {
    if valid_tool_name(name) {
        Ok(())
    } else {
        Err(Refused::ToolName(name.into()))
    }
}

/// Whether `name` meets the Agent Skills naming rules: 1–64 characters of `[a-z0-9-]`, not
/// starting or ending with `-`, no `--`.
pub fn valid_skill_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn relative_path(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

/// Checks a skill and returns its frontmatter rendered as JSON.
pub fn skill(skill: &super::Skill) -> Result<JsonObject, Refused> {
    use super::skill::{SKILL_MD, frontmatter_block, frontmatter_json};
    let refused = |fault| Refused::Skill {
        path: skill.path.clone(),
        fault,
    };
    if !relative_path(&skill.path) {
        return Err(refused(SkillFault::Path(skill.path.clone())));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (path, _) in &skill.files {
        if !relative_path(path) {
            return Err(refused(SkillFault::Path(path.clone())));
        }
        if !seen.insert(path.as_str()) {
            return Err(refused(SkillFault::DuplicateFile(path.clone())));
        }
    }
    let bytes: usize = skill.files.iter().map(|(_, b)| b.len()).sum();
    if skill.files.len() > MAX_SKILL_FILES || bytes > MAX_SKILL_BYTES {
        return Err(refused(SkillFault::Limits {
            files: skill.files.len(),
            bytes,
        }));
    }
    let (_, skill_md) = skill
        .files
        .iter()
        .find(|(path, _)| path == SKILL_MD)
        .ok_or_else(|| refused(SkillFault::NoSkillMd))?;
    let text = std::str::from_utf8(skill_md).map_err(|_| refused(SkillFault::NoFrontmatter))?;
    let block = frontmatter_block(text).ok_or_else(|| refused(SkillFault::NoFrontmatter))?;
    let frontmatter = frontmatter_json(block).map_err(|e| refused(SkillFault::Frontmatter(e)))?;
    let field = |key: &'static str| match frontmatter.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(refused(SkillFault::Missing(key))),
    };
    let name = field("name")?;
    field("description")?;
    if !valid_skill_name(&name) {
        return Err(refused(SkillFault::Name(name)));
    }
    let segment = skill.path.rsplit('/').next().unwrap_or_default();
    if segment != name {
        return Err(refused(SkillFault::PathName {
            segment: segment.into(),
            name,
        }));
    }
    Ok(frontmatter)
}

/// Checks the `$schema` of the `which` schema (`inputSchema`, `outputSchema`) of tool `tool`:
/// absent, or 2020-12 (with or without an empty fragment).
pub fn dialect(tool: &str, which: &'static str, schema: &JsonObject) -> Result<(), Refused> {
    match schema.get("$schema") {
        None => Ok(()),
        Some(serde_json::Value::String(uri))
            if uri.strip_suffix('#').unwrap_or(uri) == SCHEMA_DIALECT =>
        {
            Ok(())
        }
        Some(other) => Err(Refused::Dialect {
            tool: tool.into(),
            which,
            dialect: other.to_string(),
        }),
    }
}

/// Whether `src` may be an icon's source: an `https:` URL with a host and no user information,
/// or a `data:` URI (`data:[<mediatype>][;base64],<data>`), in printable ASCII without spaces.
/// Schemes compare case-insensitively.
///
/// ```
/// use relevo_protocol::registry::rules::valid_icon_source;
///
/// assert!(valid_icon_source("https://example.com/icon.png"));
/// assert!(valid_icon_source("data:image/png;base64,iVBORw0KGgo="));
/// assert!(!valid_icon_source("http://example.com/icon.png"), "clear text");
/// assert!(!valid_icon_source("javascript:alert(1)"));
/// assert!(!valid_icon_source("https://user:secret@example.com/icon.png"), "credentials");
/// ```
pub fn valid_icon_source(src: &str) -> bool {
    if !src.bytes().all(|b| b.is_ascii_graphic()) {
        return false;
    }
    let Some((scheme, rest)) = src.split_once(':') else {
        return false;
    };
    if scheme.eq_ignore_ascii_case("data") {
        return rest.contains(',');
    }
    if !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let Some(rest) = rest.strip_prefix("//") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(authority, |(host, _)| host);
    !host.is_empty() && !authority.contains('@')
}

/// Checks the icons of the `kind` (`server`, `tool`, …) keyed `key`: each `src` is
/// [`valid_icon_source`].
///
/// ```
/// use relevo_protocol::registry::rules::{Refused, icons};
/// use relevo_protocol::wire::Icon;
///
/// assert_eq!(icons("tool", "t", &[Icon::new("https://example.com/t.png")]), Ok(()));
/// assert!(matches!(
///     icons("tool", "t", &[Icon::new("file:///etc/icon.png")]),
///     Err(Refused::IconSource { .. })
/// ));
/// ```
pub fn icons(kind: &'static str, key: &str, icons: &[Icon]) -> Result<(), Refused> {
    match icons.iter().find(|icon| !valid_icon_source(&icon.src)) {
        None => Ok(()),
        Some(icon) => Err(Refused::IconSource {
            kind,
            key: key.into(),
            src: icon.src.clone(),
        }),
    }
}

/// Whether `label` is a `_meta` prefix label: a letter, then letters, digits or hyphens,
/// ending in a letter or digit.
fn valid_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        }
        _ => false,
    }
}

/// Whether `name` is a `_meta` key name: empty, or starting and ending alphanumeric with only
/// alphanumerics, `-`, `_` or `.` between.
fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => true,
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
    }
}

/// Whether `key` follows the spec's `_meta` key format: an optional prefix (dot-separated
/// labels followed by `/`) and a name.
///
/// ```
/// use relevo_protocol::registry::rules::valid_meta_key;
///
/// assert!(valid_meta_key("com.example/ticket-id"));
/// assert!(valid_meta_key("ui"));
/// assert!(valid_meta_key("ui/resourceUri"));
/// assert!(!valid_meta_key("com..example/x"), "an empty label");
/// assert!(!valid_meta_key("1com.example/x"), "a label starts with a letter");
/// assert!(!valid_meta_key("a/b/c"), "one prefix, then a name without `/`");
/// assert!(!valid_meta_key("-name"));
/// ```
pub fn valid_meta_key(key: &str) -> bool {
    match key.split_once('/') {
        None => valid_name(key),
        Some((prefix, name)) => prefix.split('.').all(valid_label) && valid_name(name),
    }
}

/// Whether `key` is reserved for MCP: a key the spec reserves ([`RESERVED_META_KEYS`]), or a
/// key whose prefix's second label is `modelcontextprotocol` or `mcp` (compared without case).
/// The keys extensions define ([`EXTENSION_META_KEYS`]) are reserved too; [`meta`] lets an app
/// declare those.
///
/// ```
/// use relevo_protocol::registry::rules::reserved_meta_key;
///
/// assert!(reserved_meta_key("io.modelcontextprotocol/serverInfo"));
/// assert!(reserved_meta_key("dev.mcp/anything"));
/// assert!(reserved_meta_key("progressToken"));
/// assert!(!reserved_meta_key("com.example.mcp/x"), "the second label is `example`");
/// ```
pub fn reserved_meta_key(key: &str) -> bool {
    if RESERVED_META_KEYS.contains(&key) {
        return true;
    }
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    prefix.split('.').nth(1).is_some_and(|second| {
        second.eq_ignore_ascii_case("modelcontextprotocol") || second.eq_ignore_ascii_case("mcp")
    })
}

/// Checks the `_meta` keys of the `kind` (`tool`, …) keyed `key`: each is
/// [`valid_meta_key`], and not [`reserved_meta_key`] unless an extension defines it
/// ([`EXTENSION_META_KEYS`]).
///
/// ```
/// use relevo_protocol::registry::rules::{Refused, meta};
/// use serde_json::json;
///
/// let declared = json!({ "com.example/owner": "billing", "ui": {} });
/// assert_eq!(meta("tool", "t", declared.as_object().unwrap()), Ok(()));
///
/// let reserved = json!({ "io.modelcontextprotocol/serverInfo": {} });
/// assert!(matches!(
///     meta("tool", "t", reserved.as_object().unwrap()),
///     Err(Refused::ReservedMetaKey { .. })
/// ));
/// ```
pub fn meta(kind: &'static str, key: &str, meta: &JsonObject) -> Result<(), Refused> {
    for meta_key in meta.keys() {
        if !valid_meta_key(meta_key) {
            return Err(Refused::MetaKey {
                kind,
                key: key.into(),
                meta_key: meta_key.clone(),
            });
        }
        if reserved_meta_key(meta_key) && !EXTENSION_META_KEYS.contains(&meta_key.as_str()) {
            return Err(Refused::ReservedMetaKey {
                kind,
                key: key.into(),
                meta_key: meta_key.clone(),
            });
        }
    }
    Ok(())
}

/// Checks a resource against MCP Apps: a `ui://` resource is served as
/// `text/html;profile=mcp-app`.
///
/// ```
/// use relevo_protocol::registry::rules::{Refused, apps_resource};
///
/// assert_eq!(apps_resource("ui://shop/approval", Some("text/html;profile=mcp-app")), Ok(()));
/// assert_eq!(apps_resource("app://about", Some("text/plain")), Ok(()));
/// assert!(matches!(apps_resource("ui://shop/a", Some("text/html")), Err(Refused::View { .. })));
/// ```
pub fn apps_resource(uri: &str, mime_type: Option<&str>) -> Result<(), Refused> {
    if uri.starts_with(super::apps::SCHEME) && mime_type != Some(super::apps::MIME_TYPE) {
        return Err(Refused::View {
            uri: uri.into(),
            mime_type: mime_type.unwrap_or("none").into(),
        });
    }
    Ok(())
}

/// Checks a tool's `_meta.ui` against MCP Apps: an object, whose `resourceUri` (if any) is a
/// `ui://` URI and whose `visibility` (if any) is a non-empty list of `model` and `app`.
///
/// ```
/// use relevo_protocol::registry::rules::{Refused, apps_tool};
/// use serde_json::json;
///
/// let ok = json!({ "ui": { "resourceUri": "ui://shop/approval", "visibility": ["app"] } });
/// assert_eq!(apps_tool("decide", ok.as_object().unwrap()), Ok(()));
/// let web = json!({ "ui": { "resourceUri": "https://shop.example/approval" } });
/// assert!(matches!(apps_tool("decide", web.as_object().unwrap()), Err(Refused::ToolView { .. })));
/// ```
pub fn apps_tool(tool: &str, meta: &JsonObject) -> Result<(), Refused> {
    let fail = |fault: &str| {
        Err(Refused::ToolView {
            tool: tool.into(),
            fault: fault.into(),
        })
    };
    if let Some(flat) = meta.get(super::apps::FLAT_META_KEY)
        && !flat
            .as_str()
            .is_some_and(|u| u.starts_with(super::apps::SCHEME))
    {
        return fail("_meta[\"ui/resourceUri\"] is not a ui:// URI");
    }
    let Some(ui) = meta.get(super::apps::META_KEY) else {
        return Ok(());
    };
    let Some(ui) = ui.as_object() else {
        return fail("_meta.ui is not an object");
    };
    if let Some(uri) = ui.get("resourceUri")
        && !uri
            .as_str()
            .is_some_and(|u| u.starts_with(super::apps::SCHEME))
    {
        return fail("_meta.ui.resourceUri is not a ui:// URI");
    }
    if let Some(visibility) = ui.get("visibility") {
        let valid = visibility
            .as_array()
            .is_some_and(|v| !v.is_empty() && v.iter().all(|v| v == "model" || v == "app"));
        if !valid {
            return fail("_meta.ui.visibility is not a non-empty list of \"model\" and \"app\"");
        }
    }
    Ok(())
}

/// Checks that the matcher honours the URI template `template`.
pub fn uri_template(template: &str) -> Result<(), Refused> {
    super::uri_template::check(template).map_err(|reason| Refused::UriTemplate {
        template: template.into(),
        reason,
    })
}

/// Panics with `refused`: the one way the builder refuses a registration.
#[track_caller]
pub(super) fn refuse(refused: Result<(), Refused>) {
    if let Err(refused) = refused {
        panic!("App refuses a registration: {refused}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_one_to_128_of_the_allowed_characters() {
        assert!(valid_tool_name("get_user.v2-beta"));
        assert!(valid_tool_name(&"a".repeat(MAX_TOOL_NAME)));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name(&"a".repeat(MAX_TOOL_NAME + 1)));
        assert!(!valid_tool_name("get user"));
        assert!(!valid_tool_name("café"));
        assert!(!valid_tool_name("a/b"));
    }
}
