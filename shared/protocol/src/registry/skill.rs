//! Skills (the `io.modelcontextprotocol/skills` extension, SEP-2640): a skill is a directory of
//! files, minimally a `SKILL.md` whose YAML frontmatter names and describes it, served over the
//! Resources primitive as `skill://<skill-path>/<file-path>` resources, and described by an
//! entry (`skills/list`, `skills/get`) that carries the frontmatter verbatim (as JSON) and a
//! complete manifest of its files with their SHA-256 digests and sizes.
//!
//! An app declares a skill beside its tools with [`Skill`] — its files embedded in the binary at
//! build time with [`crate::skill!`] (`include_bytes!` of each listed file) or given as bytes —
//! and registers it with [`crate::App::skill`]. Registration refuses a skill that breaks the
//! format ([`crate::registry::rules`]), then computes everything a request needs once: the
//! parsed frontmatter, each file's digest and size, the entry, and one resource per file.
//!
//! Invariants:
//! - The bytes served by `resources/read` are the bytes the digest and size were computed
//!   over: both come from the same embedded `&'static [u8]`, hashed once at registration.
//! - The manifest is complete: every file of the skill, `SKILL.md` included, each once, in path
//!   order.
//! - A skill's scopes gate its entry, its files and its directories alike, through the one guard
//!   ([`crate::server`]'s `guard`), as a resource's scopes gate that resource.
//!
//! Threat model: skill content is instructions a host may hand to a model. The server only
//! publishes what the app embedded at build time — nothing is read from disk or from a caller at
//! run time — so a request cannot make it serve another file; a file path with `..`, an empty
//! segment or a leading `/` is refused at registration.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::owned;
use crate::wire::JsonObject;

/// The extension's identifier, the key of its capability under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The URI scheme skills are served under.
pub const SCHEME: &str = "skill://";

/// The file at the root of every skill.
pub const SKILL_MD: &str = "SKILL.md";

/// The media type of a directory resource (`resources/directory/read`).
pub const DIRECTORY_MIME: &str = "inode/directory";

/// A skill as an app declares it: its path in the server's skill namespace, its files, and the
/// scopes a caller needs to see or read it.
///
/// ```
/// use relevo_protocol::{App, Skill};
///
/// let skill = Skill::new("acme/refunds")
///     .file("SKILL.md", b"---\nname: refunds\ndescription: Refund per policy.\n---\n# Refunds\n")
///     .file("examples/email.md", b"Dear customer,\n")
///     .scopes(&["support"]);
/// let app = App::new("shop", "1").skill(skill);
/// let entry = app.skills().next().expect("registered");
/// assert_eq!(entry.uri, "skill://acme/refunds/SKILL.md");
/// assert_eq!(entry.frontmatter["name"], "refunds");
/// assert!(app.find_resource("skill://acme/refunds/examples/email.md").is_some());
/// ```
#[derive(Debug, Clone)]
pub struct Skill {
    /// The `/`-separated path of the skill directory (`git-workflow`, `acme/billing/refunds`);
    /// its final segment is the skill's name.
    pub path: String,
    /// Each file: its path relative to the skill directory, and its bytes.
    pub files: Vec<(String, &'static [u8])>,
    /// OAuth scopes a caller must hold to list, get or read the skill and its files.
    pub scopes: Vec<String>,
}

impl Skill {
    /// A skill at `path` with no files yet.
    pub fn new(path: &str) -> Self {
        Skill {
            path: path.into(),
            files: Vec::new(),
            scopes: Vec::new(),
        }
    }

    /// Adds a file at `path` (relative to the skill directory, `/`-separated).
    pub fn file(mut self, path: &str, bytes: &'static [u8]) -> Self {
        self.files.push((path.into(), bytes));
        self
    }

    /// OAuth scopes a caller must hold to list, get or read the skill.
    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = owned(scopes);
        self
    }
}

/// Declares a [`Skill`] whose files are embedded at build time from a folder of the crate:
/// `skill!("skills", "acme/refunds", ["SKILL.md", "examples/email.md"])` embeds
/// `<crate>/skills/acme/refunds/SKILL.md` and `.../examples/email.md` (`include_bytes!`, so
/// cargo rebuilds when one changes, and a listed file that is missing fails the build).
#[macro_export]
macro_rules! skill {
    ($folder:literal, $path:literal, [$($file:literal),+ $(,)?]) => {
        $crate::Skill::new($path)
            $(.file($file, include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/", $folder, "/", $path, "/", $file
            ))))+
    };
}

/// One file of a registered skill, with the digest and size computed at registration.
#[derive(Debug, Clone)]
pub struct SkillFile {
    /// Its resource URI (`skill://<skill-path>/<file-path>`).
    pub uri: String,
    /// Its bytes, as served.
    pub bytes: &'static [u8],
    /// `sha256:` and 64 lowercase hex digits of the bytes.
    pub digest: String,
}

/// A registered skill: what `skills/list` and `skills/get` answer, computed once.
#[derive(Debug, Clone)]
pub struct RegisteredSkill {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// The skill directory's URI (`skill://<skill-path>`, no trailing slash).
    pub root: String,
    /// The `SKILL.md` frontmatter as JSON, every field the author wrote.
    pub frontmatter: JsonObject,
    /// Its files in path order, `SKILL.md` included.
    pub files: Vec<SkillFile>,
    /// OAuth scopes a caller must hold to reach it.
    pub scopes: Vec<String>,
    entry: Arc<Value>,
}

impl RegisteredSkill {
    pub(crate) fn new(skill: &Skill, frontmatter: JsonObject) -> Self {
        let root = format!("{SCHEME}{}", skill.path);
        let mut files: Vec<SkillFile> = skill
            .files
            .iter()
            .map(|(path, bytes)| SkillFile {
                uri: format!("{root}/{path}"),
                bytes,
                digest: digest(bytes),
            })
            .collect();
        files.sort_by(|a, b| a.uri.cmp(&b.uri));
        let uri = format!("{root}/{SKILL_MD}");
        let resources: Vec<Value> = files
            .iter()
            .map(|f| json!({ "uri": f.uri, "digest": f.digest, "size": f.bytes.len() }))
            .collect();
        let entry = json!({ "uri": uri, "frontmatter": frontmatter, "resources": resources });
        RegisteredSkill {
            uri,
            root,
            frontmatter,
            files,
            scopes: skill.scopes.clone(),
            entry: Arc::new(entry),
        }
    }

    /// The skill's entry (`Skill` of the extension's schema), as `skills/list` and `skills/get`
    /// show it.
    pub fn entry(&self) -> &Value {
        &self.entry
    }

    /// The frontmatter's `name`.
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The frontmatter's `description`.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// `sha256:{hex}` of `bytes`, hex lowercase.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(bytes);
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for byte in hash.iter() {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

/// The media type of a skill file, from its extension.
pub fn mime_type(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map(|(_, e)| e).unwrap_or_default();
    match extension.to_ascii_lowercase().as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" => "text/javascript",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// The `resources/read` contents of a skill file: text when the bytes are UTF-8, else a blob.
pub(crate) fn contents(uri: &str, bytes: &[u8]) -> Value {
    let mime = mime_type(uri);
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({ "uri": uri, "mimeType": mime, "text": text }),
        Err(_) => json!({ "uri": uri, "mimeType": mime, "blob": STANDARD.encode(bytes) }),
    }
}

/// The frontmatter text of a `SKILL.md`: what lies between a first line `---` and the next line
/// `---`, or `None` when the file does not begin with one.
pub(crate) fn frontmatter_block(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line
            .trim_end_matches(['\n', '\r'])
            .trim_end_matches([' ', '\t'])
            == "---"
        {
            return Some(&rest[..offset]);
        }
        offset += line.len();
    }
    None
}

/// Parses YAML frontmatter into JSON: a mapping of string keys; scalars keep their YAML 1.2
/// types. `Err` says why it cannot be rendered as JSON.
pub(crate) fn frontmatter_json(yaml: &str) -> Result<JsonObject, String> {
    use yaml_rust2::YamlLoader;
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| e.to_string())?;
    let doc = match docs.as_slice() {
        [doc] => doc,
        [] => return Err("the frontmatter is empty".into()),
        _ => return Err("the frontmatter holds more than one YAML document".into()),
    };
    match yaml_to_json(doc)? {
        Value::Object(map) => Ok(map),
        _ => Err("the frontmatter is not a mapping".into()),
    }
}

fn yaml_to_json(yaml: &yaml_rust2::Yaml) -> Result<Value, String> {
    use yaml_rust2::Yaml;
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => json!(b),
        Yaml::Integer(i) => json!(i),
        Yaml::Real(text) => {
            let number: f64 = text
                .parse()
                .map_err(|_| format!("the number {text} cannot be rendered as JSON"))?;
            serde_json::Number::from_f64(number)
                .map(Value::Number)
                .ok_or_else(|| format!("the number {text} cannot be rendered as JSON"))?
        }
        Yaml::String(s) => json!(s),
        Yaml::Array(items) => {
            Value::Array(items.iter().map(yaml_to_json).collect::<Result<_, _>>()?)
        }
        Yaml::Hash(map) => {
            let mut object = JsonObject::new();
            for (key, value) in map {
                let Yaml::String(key) = key else {
                    return Err(format!("the key {key:?} is not a string"));
                };
                object.insert(key.clone(), yaml_to_json(value)?);
            }
            Value::Object(object)
        }
        Yaml::Alias(_) | Yaml::BadValue => return Err("an alias or a bad value".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_sha256_in_lowercase_hex() {
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn frontmatter_is_the_block_between_the_first_two_fences() {
        let text = "---\nname: a\ndescription: b\n---\n# A\n---\n";
        assert_eq!(frontmatter_block(text), Some("name: a\ndescription: b\n"));
        assert_eq!(frontmatter_block("# no frontmatter\n"), None);
        assert_eq!(frontmatter_block("---\nname: a\n"), None);
    }

    #[test]
    fn frontmatter_keeps_every_field_with_its_type() {
        let yaml = "name: a\ndescription: b\nlicense: MIT\nmetadata:\n  version: \"2.1\"\n  \
                    level: 3\n  ok: true\ntags: [x, y]\n";
        let json = frontmatter_json(yaml).expect("valid");
        assert_eq!(
            Value::Object(json),
            json!({ "name": "a", "description": "b", "license": "MIT",
                    "metadata": { "version": "2.1", "level": 3, "ok": true }, "tags": ["x", "y"] })
        );
        assert!(frontmatter_json("- a\n- b\n").is_err());
        assert!(frontmatter_json("1: a\n").is_err());
    }
}
