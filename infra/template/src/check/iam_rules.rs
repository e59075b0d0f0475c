//! IAM's size quotas, and least privilege in the policies this template writes.

use serde_json::Value;

use super::Context;
use crate::physical::text;

const MAX_ROLE_INLINE_CHARS: usize = 10_240;
const MAX_MANAGED_POLICIES_PER_ROLE: usize = 10;
const MAX_MANAGED_POLICY_CHARS: usize = 6_144;

/// AWS managed policies a role here may carry: they grant logs and X-Ray only, nothing on the
/// table, the queues or the secret (SAM attaches the first two to every function it makes).
pub const ALLOWED_AWS_MANAGED: [&str; 4] = [
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
    "arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess",
    "arn:aws:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs",
];

/// IAM does not count white space in a policy's size.
fn policy_chars(document: &Value) -> usize {
    document
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .count()
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().filter_map(text).collect(),
        other => text(other).into_iter().collect(),
    }
}

pub(super) fn run(context: &mut Context) {
    let operators = super::managed_instances_rules::operator_roles(context);
    let roles: Vec<String> = context
        .stack
        .of_type("AWS::IAM::Role")
        .map(|r| r.logical_id.clone())
        .collect();
    for role in roles {
        let Ok(properties) = context.stack.properties(context.ids, &role) else {
            continue;
        };
        let inline: usize = properties["Policies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| policy_chars(&p["PolicyDocument"]))
            .sum();
        if inline > MAX_ROLE_INLINE_CHARS {
            context.refuse(
                "iam-limits",
                &role,
                format!(
                    "inline policies take {inline} characters (at most {MAX_ROLE_INLINE_CHARS})"
                ),
            );
        }
        let managed = strings(&properties["ManagedPolicyArns"]);
        if managed.len() > MAX_MANAGED_POLICIES_PER_ROLE {
            context.refuse(
                "iam-limits",
                &role,
                format!(
                    "{} managed policies (at most {MAX_MANAGED_POLICIES_PER_ROLE} by default)",
                    managed.len()
                ),
            );
        }
        for arn in managed
            .iter()
            .filter(|arn| arn.starts_with("arn:aws:iam::aws:policy/"))
        {
            // AWS documents its operator policy as the least a capacity provider's role needs.
            let operator =
                operators.contains(&role) && arn == super::managed_instances_rules::OPERATOR_POLICY;
            if !ALLOWED_AWS_MANAGED.contains(&arn.as_str()) && !operator {
                context.refuse(
                    "least-privilege",
                    &role,
                    format!("AWS managed policy {arn} grants more than logs and X-Ray"),
                );
            }
        }
        for (index, policy) in properties["Policies"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            statements(
                context,
                &format!("{role} inline {index}"),
                &policy["PolicyDocument"],
            );
        }
    }
    let managed: Vec<String> = context
        .stack
        .of_type("AWS::IAM::ManagedPolicy")
        .map(|r| r.logical_id.clone())
        .collect();
    for policy in managed {
        let Ok(properties) = context.stack.properties(context.ids, &policy) else {
            continue;
        };
        let size = policy_chars(&properties["PolicyDocument"]);
        if size > MAX_MANAGED_POLICY_CHARS {
            context.refuse(
                "iam-limits",
                &policy,
                format!("{size} characters (at most {MAX_MANAGED_POLICY_CHARS})"),
            );
        }
        statements(context, &policy, &properties["PolicyDocument"]);
    }
}

fn statements(context: &mut Context, at: &str, document: &Value) {
    let statements: Vec<&Value> = match &document["Statement"] {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        one => vec![one],
    };
    for statement in statements.into_iter().filter(|s| s["Effect"] == "Allow") {
        if !statement["NotAction"].is_null() || !statement["NotResource"].is_null() {
            context.refuse(
                "least-privilege",
                at,
                "an Allow with NotAction or NotResource grants everything else",
            );
        }
        for action in strings(&statement["Action"])
            .into_iter()
            .filter(|a| a.contains('*'))
        {
            context.refuse("least-privilege", at, format!("wildcard action {action:?}"));
        }
        for resource in strings(&statement["Resource"])
            .into_iter()
            .filter(|r| r.contains('*'))
        {
            context.refuse(
                "least-privilege",
                at,
                format!("wildcard resource {resource:?}"),
            );
        }
    }
}
