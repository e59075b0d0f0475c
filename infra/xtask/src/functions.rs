//! `functions TEMPLATE`: the function binaries a SAM template deploys (the
//! `Metadata.BuildProperties.Binary` of each `AWS::Serverless::Function`), sorted, each once.
//! The Makefile (`cargo lambda build --bin …`), the benchmark and the scripts read this list.
//!
//! The template is the one `cargo relevo template` writes: block-style YAML whose resources sit
//! two spaces under `Resources:`, each with its `Type:` and `Metadata:` four spaces in. The
//! reader walks that structure (sections, resources, their keys) rather than grepping every
//! `Binary:` in the file, and a function without a binary is an error, not a silent gap.
//! `Metadata` may be a flow mapping on one line (as generated) or a block under the key.

use std::collections::BTreeSet;
use std::path::Path;

use crate::XtaskError;

/// One resource of the `Resources:` section, as far as this reader needs it.
#[derive(Debug, Default)]
struct Resource {
    name: String,
    kind: Option<String>,
    binary: Option<String>,
}

/// The binaries of the template at `path`, sorted and deduplicated.
pub fn function_binaries(path: &Path) -> Result<Vec<String>, XtaskError> {
    let text = std::fs::read_to_string(path).map_err(|source| XtaskError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    binaries_of(&text).map_err(|resource| XtaskError::FunctionWithoutBinary {
        path: path.to_path_buf(),
        resource,
    })
}

/// The binaries of a template's text; `Err(resource)` names a function that has none.
pub fn binaries_of(text: &str) -> Result<Vec<String>, String> {
    let mut binaries = BTreeSet::new();
    for resource in resources(text) {
        if resource.kind.as_deref() != Some("AWS::Serverless::Function") {
            continue;
        }
        match resource.binary {
            Some(binary) => binaries.insert(binary),
            None => return Err(resource.name),
        };
    }
    Ok(binaries.into_iter().collect())
}

/// The resources under the top-level `Resources:` key, in order.
fn resources(text: &str) -> Vec<Resource> {
    let mut out: Vec<Resource> = Vec::new();
    let mut in_resources = false;
    // Inside the current resource's `Metadata:` block (block style), at this indent or deeper.
    let mut in_metadata = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        if indent == 0 {
            in_resources = trimmed.trim_end() == "Resources:";
            in_metadata = false;
            continue;
        }
        if !in_resources {
            continue;
        }
        if indent == 2 {
            if let Some(name) = trimmed.trim_end().strip_suffix(':') {
                out.push(Resource {
                    name: name.to_string(),
                    ..Resource::default()
                });
            }
            in_metadata = false;
            continue;
        }
        let Some(resource) = out.last_mut() else {
            continue;
        };
        if indent == 4 {
            in_metadata = false;
            if let Some(kind) = trimmed.strip_prefix("Type:") {
                resource.kind = Some(unquote(kind.trim()).to_string());
            } else if let Some(metadata) = trimmed.strip_prefix("Metadata:") {
                if metadata.trim().is_empty() {
                    in_metadata = true;
                } else if let Some(binary) = binary_in(metadata) {
                    resource.binary = Some(binary);
                }
            }
        } else if in_metadata && let Some(binary) = binary_in(trimmed) {
            resource.binary = Some(binary);
        }
    }
    out
}

/// The value after `Binary:` in a line (flow or block style), without quotes.
fn binary_in(text: &str) -> Option<String> {
    let (_, rest) = text.split_once("Binary:")?;
    let value = rest.trim_start();
    let end = value
        .find(|c: char| c == ',' || c == '}' || c.is_whitespace())
        .unwrap_or(value.len());
    let value = unquote(&value[..end]);
    (!value.is_empty()).then(|| value.to_string())
}

fn unquote(value: &str) -> &str {
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "\
Description: >
  Binary: not-a-function
Resources:
  # a comment
  WorkerFunction:
    Type: AWS::Serverless::Function
    Metadata: { BuildMethod: rust-cargolambda, BuildProperties: { Binary: worker } }
    Properties:
      CodeUri: .
  McpFunction:
    Type: AWS::Serverless::Function
    Metadata:
      BuildMethod: rust-cargolambda
      BuildProperties:
        Binary: \"mcp\"
  OtherMcpFunction:
    Type: AWS::Serverless::Function
    Metadata: { BuildMethod: rust-cargolambda, BuildProperties: { Binary: mcp } }
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      Binary: not-a-function-either
Outputs:
  Binary: nor-this
";

    #[test]
    fn functions_are_the_binaries_of_serverless_functions_sorted_once() {
        assert_eq!(binaries_of(TEMPLATE).unwrap(), ["mcp", "worker"]);
    }

    #[test]
    fn function_without_binary_is_named() {
        let template = "Resources:\n  Lone:\n    Type: AWS::Serverless::Function\n    Properties:\n      CodeUri: .\n";
        assert_eq!(binaries_of(template).unwrap_err(), "Lone");
    }

    #[test]
    fn checked_in_template_lists_every_function() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml");
        let binaries = function_binaries(&path).unwrap();
        assert!(binaries.iter().any(|b| b == "mcp"));
        assert!(binaries.iter().any(|b| b == "tools-call"));
        assert!(binaries.windows(2).all(|w| w[0] < w[1]));
    }
}
