//! Lambda Managed Instances: what AWS documents for a function on a capacity provider and for
//! the provider itself, checked here because cfn-lint and the SAM translator check each property
//! alone (its type and range) and none of the links between them.
//!
//! A function with `CapacityProviderConfig` must name a capacity provider this stack creates,
//! have at least 2,048 MB, keep its concurrency (1–1,600) and memory per vCPU (2–8 GiB) in range,
//! run on an architecture the provider's instances have (x86_64 when the provider names none),
//! keep no more execution environments than it allows (`FunctionScalingConfig`), have no
//! `VpcConfig` of its own (the provider's VPC is the function's), and leave
//! `AWS_LAMBDA_MAX_CONCURRENCY` to Lambda, which sets it from the concurrency. The provider must
//! have subnets and an operator role of this stack that Lambda may assume and that carries
//! AWS's `AWSLambdaManagedEC2ResourceOperator` policy (AWS documents it as the minimum).
//!
//! Threat model: the capacity provider is the trust boundary between functions (containers on
//! one instance are not isolation); a provider of another stack would mix tenants' code, so a
//! function may only name this stack's.

use serde_json::Value;

use super::Context;
use crate::physical::text;

/// The smallest function on Managed Instances: 2 GB and 1 vCPU.
pub const MIN_MEMORY_MB: u64 = 2048;
const MAX_CONCURRENCY: std::ops::RangeInclusive<u64> = 1..=1600;
const MEMORY_GIB_PER_VCPU: std::ops::RangeInclusive<f64> = 2.0..=8.0;
/// The variable Lambda sets from `PerExecutionEnvironmentMaxConcurrency`.
pub const MAX_CONCURRENCY_VARIABLE: &str = "AWS_LAMBDA_MAX_CONCURRENCY";
/// The AWS managed policy AWS documents as the operator role's minimum.
pub const OPERATOR_POLICY: &str = "arn:aws:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator";

fn number(value: &Value) -> Option<f64> {
    value
        .as_f64()
        .or_else(|| text(value).and_then(|t| t.parse().ok()))
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().filter_map(text).collect(),
        other => text(other).into_iter().collect(),
    }
}

/// The logical ids of the roles some capacity provider of the stack operates with.
pub(super) fn operator_roles(context: &Context) -> Vec<String> {
    let providers: Vec<String> = context
        .stack
        .of_type("AWS::Lambda::CapacityProvider")
        .map(|r| r.logical_id.clone())
        .collect();
    providers
        .iter()
        .filter_map(|provider| context.stack.properties(context.ids, provider).ok())
        .filter_map(|p| text(&p["PermissionsConfig"]["CapacityProviderOperatorRoleArn"]))
        .filter_map(|arn| context.ids.logical_id_of(&arn).map(String::from))
        .collect()
}

pub(super) fn run(context: &mut Context) {
    let providers: Vec<String> = context
        .stack
        .of_type("AWS::Lambda::CapacityProvider")
        .map(|r| r.logical_id.clone())
        .collect();
    for provider in &providers {
        capacity_provider(context, provider);
    }
    let functions: Vec<String> = context
        .stack
        .of_type("AWS::Lambda::Function")
        .map(|r| r.logical_id.clone())
        .collect();
    for function in functions {
        let Ok(properties) = context.stack.properties(context.ids, &function) else {
            continue;
        };
        let config = &properties["CapacityProviderConfig"];
        if config.is_null() {
            continue;
        }
        on_capacity_provider(context, &function, &properties, config);
    }
}

fn on_capacity_provider(context: &mut Context, function: &str, properties: &Value, config: &Value) {
    let refuse = |context: &mut Context, message: String| {
        context.refuse("managed-instances", function, message);
    };
    let managed = &config["LambdaManagedInstancesCapacityProviderConfig"];
    let provider = text(&managed["CapacityProviderArn"])
        .and_then(|arn| context.ids.logical_id_of(&arn).map(String::from))
        .filter(|id| {
            context
                .stack
                .of_type("AWS::Lambda::CapacityProvider")
                .any(|r| &r.logical_id == id)
        });
    let Some(provider) = provider else {
        return refuse(
            context,
            "CapacityProviderConfig names no capacity provider of this stack".into(),
        );
    };
    // Lambda's default memory is 128 MB, below the Managed Instances minimum.
    let memory = number(&properties["MemorySize"]).unwrap_or(128.0);
    if memory < MIN_MEMORY_MB as f64 {
        refuse(
            context,
            format!(
                "MemorySize {memory} MB is below the {MIN_MEMORY_MB} MB of the smallest Managed Instances function"
            ),
        );
    }
    if let Some(concurrency) = number(&managed["PerExecutionEnvironmentMaxConcurrency"])
        && !(concurrency.fract() == 0.0 && MAX_CONCURRENCY.contains(&(concurrency as u64)))
    {
        refuse(
            context,
            format!("PerExecutionEnvironmentMaxConcurrency {concurrency} is outside 1–1600"),
        );
    }
    if let Some(ratio) = number(&managed["ExecutionEnvironmentMemoryGiBPerVCpu"])
        && !MEMORY_GIB_PER_VCPU.contains(&ratio)
    {
        refuse(
            context,
            format!("ExecutionEnvironmentMemoryGiBPerVCpu {ratio} is outside 2–8"),
        );
    }
    let scaling = &properties["FunctionScalingConfig"];
    if let (Some(min), Some(max)) = (
        number(&scaling["MinExecutionEnvironments"]),
        number(&scaling["MaxExecutionEnvironments"]),
    ) && min > max
    {
        refuse(
            context,
            format!(
                "FunctionScalingConfig keeps at least {min} execution environments but allows at most {max}"
            ),
        );
    }
    if !properties["VpcConfig"].is_null() {
        refuse(
            context,
            "a function on a capacity provider has no VpcConfig of its own (the provider's VPC is its)".into(),
        );
    }
    if !properties["Environment"]["Variables"][MAX_CONCURRENCY_VARIABLE].is_null() {
        refuse(
            context,
            format!(
                "{MAX_CONCURRENCY_VARIABLE} is Lambda's to set (from PerExecutionEnvironmentMaxConcurrency)"
            ),
        );
    }
    let Ok(provider_properties) = context.stack.properties(context.ids, &provider) else {
        return;
    };
    let mut offered = strings(&provider_properties["InstanceRequirements"]["Architectures"]);
    if offered.is_empty() {
        offered.push("x86_64".into());
    }
    let mut wanted = strings(&properties["Architectures"]);
    if wanted.is_empty() {
        wanted.push("x86_64".into());
    }
    for architecture in wanted {
        if !offered.contains(&architecture) {
            refuse(
                context,
                format!(
                    "runs on {architecture} but {provider}'s instances are {}",
                    offered.join(", ")
                ),
            );
        }
    }
}

fn capacity_provider(context: &mut Context, provider: &str) {
    let Ok(properties) = context.stack.properties(context.ids, provider) else {
        return;
    };
    let refuse = |context: &mut Context, message: &str| {
        context.refuse("capacity-provider", provider, message.to_string());
    };
    if strings(&properties["VpcConfig"]["SubnetIds"]).is_empty() {
        refuse(context, "no VpcConfig.SubnetIds to launch instances in");
    }
    let role = text(&properties["PermissionsConfig"]["CapacityProviderOperatorRoleArn"])
        .and_then(|arn| context.ids.logical_id_of(&arn).map(String::from))
        .filter(|id| {
            context
                .stack
                .of_type("AWS::IAM::Role")
                .any(|r| &r.logical_id == id)
        });
    let Some(role) = role else {
        return refuse(
            context,
            "PermissionsConfig.CapacityProviderOperatorRoleArn names no role of this stack",
        );
    };
    let Ok(role_properties) = context.stack.properties(context.ids, &role) else {
        return;
    };
    let statements: Vec<&Value> = match &role_properties["AssumeRolePolicyDocument"]["Statement"] {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        one => vec![one],
    };
    let lambda_assumes = statements.iter().any(|statement| {
        statement["Effect"] == "Allow"
            && strings(&statement["Action"])
                .iter()
                .any(|a| a == "sts:AssumeRole")
            && strings(&statement["Principal"]["Service"])
                .iter()
                .any(|s| s == "lambda.amazonaws.com")
    });
    if !lambda_assumes {
        refuse(
            context,
            "the operator role's trust policy does not let lambda.amazonaws.com assume it",
        );
    }
    if !strings(&role_properties["ManagedPolicyArns"])
        .iter()
        .any(|arn| arn == OPERATOR_POLICY)
    {
        refuse(
            context,
            "the operator role lacks AWSLambdaManagedEC2ResourceOperator, the permissions AWS documents as its minimum",
        );
    }
}
