//! The template as a whole: its dependency graph, its references, CloudFormation's quotas.

use super::{Context, Finding};
use crate::graph;
use crate::stack::Template;

const MAX_RESOURCES: usize = 500;
const MAX_PARAMETERS: usize = 200;
const MAX_OUTPUTS: usize = 200;
/// `sam deploy` uploads the template to S3; the limit there is 1 MB.
const MAX_TEMPLATE_BYTES: usize = 1_000_000;

pub(super) fn template_rules(template: &Template) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut refuse = |rule: &'static str, resource: &str, message: String| {
        findings.push(Finding {
            rule,
            topology: "template".into(),
            resource: resource.into(),
            message,
        });
    };
    let resources = match template.resources() {
        Ok(resources) => resources,
        Err(error) => {
            refuse("references", "Resources", error.to_string());
            return findings;
        }
    };
    for (members, path) in graph::cycles(&resources) {
        let members: Vec<&str> = members.iter().map(String::as_str).collect();
        refuse(
            "cycle",
            &path[0],
            format!(
                "circular dependency between [{}], e.g. {}",
                members.join(", "),
                path.join(" -> ")
            ),
        );
    }
    let json = template.json();
    let count = |key: &str| json[key].as_object().map_or(0, |o| o.len());
    for (key, max) in [
        ("Resources", MAX_RESOURCES),
        ("Parameters", MAX_PARAMETERS),
        ("Outputs", MAX_OUTPUTS),
    ] {
        if count(key) > max {
            refuse(
                "cfn-quotas",
                key,
                format!("{} {key} (at most {max})", count(key)),
            );
        }
    }
    let size = json.to_string().len();
    if size > MAX_TEMPLATE_BYTES {
        refuse(
            "cfn-quotas",
            "template",
            format!("{size} bytes (at most {MAX_TEMPLATE_BYTES} through S3)"),
        );
    }
    for key in ["Resources", "Parameters", "Outputs", "Conditions"] {
        for name in json[key]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, _)| name)
        {
            if name.is_empty()
                || name.len() > 255
                || !name.chars().all(|c| c.is_ascii_alphanumeric())
            {
                refuse(
                    "cfn-quotas",
                    name,
                    format!("{key} logical id must be 1–255 alphanumeric characters"),
                );
            }
        }
    }
    findings
}

/// Every live resource and output resolves: no reference to a resource the stack does not
/// create (`Unresolved resource dependencies`), no unknown attribute.
pub(super) fn stack_rules(context: &mut Context) {
    let stack = context.stack;
    for logical_id in stack.resources.keys() {
        if let Err(error) = stack.properties(context.ids, logical_id) {
            context.refuse("references", logical_id, error.to_string());
        }
    }
    for (name, output) in &stack.outputs {
        if let Some(condition) = output["Condition"].as_str()
            && !stack.condition(condition).unwrap_or(false)
        {
            continue;
        }
        if let Err(error) = stack.resolve(&format!("Outputs.{name}"), &output["Value"], context.ids)
        {
            context.refuse("references", &format!("Outputs.{name}"), error.to_string());
        }
    }
}
