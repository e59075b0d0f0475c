//! The Managed Instances switch (`managed-instances` in `[workspace.metadata.relevo]`): absent,
//! the template has no trace of it; present, the real SAM translation (the pinned translator, as
//! `make validate` runs it) puts every function on the stack's capacity provider with what AWS
//! documents, the deploy check passes it, and refuses it once any required piece is missing.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use relevo_template::Template;
use relevo_template::check::{check, topologies_for};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn relevo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-relevo"))
        .arg("relevo")
        .args(args)
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A one-package project whose `[package.metadata.relevo]` is `table`, in a scratch folder.
fn project(name: &str, table: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("relevo-mi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"scratch\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[package.metadata.relevo]\n{table}"),
    )
    .unwrap();
    dir
}

/// `cargo relevo template` on `table`: the output and, when it succeeded, the template.
fn generate(name: &str, table: &str) -> (Output, Option<String>) {
    let dir = project(name, table);
    let output = relevo(&[
        "template",
        "--manifest-path",
        dir.join("Cargo.toml").to_str().unwrap(),
    ]);
    let template = std::fs::read_to_string(dir.join("template.yaml")).ok();
    let _ = std::fs::remove_dir_all(&dir);
    (output, template)
}

const MANAGED: &str = "name = \"Desk\"\ndescription = \"a desk.\"\nmanaged-instances = { max-concurrency = 16, memory-gib-per-vcpu = 4, memory = 4096, min-execution-environments = 1, max-execution-environments = 20 }\n";

/// The SAM translation of the Managed Instances template of [`MANAGED`] (all parts on).
fn translated() -> Value {
    static LOCK: std::sync::Mutex<Option<Value>> = std::sync::Mutex::new(None);
    let mut cached = LOCK.lock().unwrap();
    if let Some(value) = cached.as_ref() {
        return value.clone();
    }
    let (output, template) = generate("translate", MANAGED);
    let template = template.unwrap_or_else(|| panic!("{}", text(&output)));
    let dir = std::env::temp_dir().join(format!("relevo-mi-sam-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (source, out) = (dir.join("template.yaml"), dir.join("template.json"));
    std::fs::write(&source, template).unwrap();
    let translate = Command::new(root().join("infra/scripts/translate.sh"))
        .arg(&source)
        .arg(&out)
        .output()
        .unwrap();
    assert!(translate.status.success(), "{}", text(&translate));
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    *cached = Some(value.clone());
    value
}

/// The rules that refuse `template` for its front doors.
fn refused(template: Value) -> BTreeSet<&'static str> {
    let template = Template::from_value(template);
    check(&template, &topologies_for(&template))
        .iter()
        .map(|finding| finding.rule)
        .collect()
}

fn of_type(template: &Value, kind: &str) -> Vec<String> {
    template["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"] == kind)
        .map(|(id, _)| id.clone())
        .collect()
}

fn properties<'a>(template: &'a mut Value, id: &str) -> &'a mut Value {
    let found = &mut template["Resources"][id]["Properties"];
    assert!(found.is_object(), "the translation has no {id}");
    found
}

#[test]
fn without_the_switch_the_template_has_no_trace_of_managed_instances() {
    let checked_in = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    let (output, plain) = generate("plain", "name = \"Desk\"\ndescription = \"a desk.\"\n");
    let plain = plain.unwrap_or_else(|| panic!("{}", text(&output)));
    for template in [&checked_in, &plain] {
        for absent in [
            "CapacityProvider",
            "AWS_LAMBDA_MAX_CONCURRENCY",
            "Managed Instances",
            "List<AWS::EC2",
        ] {
            assert!(!template.contains(absent), "{absent} without the switch");
        }
    }
    assert!(plain.contains("    MemorySize: 256\n") && plain.contains("      MemorySize: 128\n"));
}

#[test]
fn managed_instances_settings_aws_refuses_are_refused_and_nothing_is_written() {
    for (setting, named) in [
        ("max-concurrency = 0", "max-concurrency"),
        ("max-concurrency = 1601", "max-concurrency"),
        ("memory-gib-per-vcpu = 1", "memory-gib-per-vcpu"),
        ("memory-gib-per-vcpu = 9", "memory-gib-per-vcpu"),
        ("memory = 1024", "managed-instances.memory"),
        (
            "max-execution-environments = 15001",
            "max-execution-environments",
        ),
        (
            "min-execution-environments = 3, max-execution-environments = 2",
            "min-execution-environments",
        ),
        ("max-concurency = 8", "max-concurency"),
    ] {
        let (output, template) = generate(
            "refused",
            &format!(
                "name = \"Desk\"\ndescription = \"a desk.\"\nmanaged-instances = {{ {setting} }}\n"
            ),
        );
        let said = text(&output);
        assert_eq!(output.status.code(), Some(1), "{setting}: {said}");
        assert!(said.contains(named), "{setting}: {said}");
        assert!(template.is_none(), "{setting}: nothing written");
    }
}

#[test]
fn the_switch_puts_every_function_on_the_stack_s_capacity_provider() {
    let template = translated();
    let resources = &template["Resources"];
    let providers = of_type(&template, "AWS::Lambda::CapacityProvider");
    assert_eq!(providers, ["CapacityProvider"]);
    let provider = &resources["CapacityProvider"]["Properties"];
    assert_eq!(
        provider["VpcConfig"],
        json!({
            "SubnetIds": { "Ref": "CapacityProviderSubnetIds" },
            "SecurityGroupIds": { "Ref": "CapacityProviderSecurityGroupIds" },
        })
    );
    assert_eq!(
        provider["PermissionsConfig"]["CapacityProviderOperatorRoleArn"],
        json!({ "Fn::GetAtt": ["CapacityProviderOperatorRole", "Arn"] })
    );
    assert_eq!(
        provider["InstanceRequirements"]["Architectures"],
        json!([{ "Ref": "Architecture" }])
    );
    let role = &resources["CapacityProviderOperatorRole"]["Properties"];
    assert_eq!(
        role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"],
        json!({ "Service": "lambda.amazonaws.com" })
    );
    assert!(
        role["Policies"].is_null(),
        "no permission beyond AWS's policy"
    );
    for kind in [
        "List<AWS::EC2::Subnet::Id>",
        "List<AWS::EC2::SecurityGroup::Id>",
    ] {
        assert!(
            template["Parameters"]
                .as_object()
                .unwrap()
                .values()
                .any(|p| p["Type"] == kind),
            "a {kind} parameter"
        );
    }
    let functions = of_type(&template, "AWS::Lambda::Function");
    assert!(functions.len() > 10, "{functions:?}");
    for function in &functions {
        let properties = &resources[function]["Properties"];
        assert_eq!(
            properties["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"],
            json!({
                "CapacityProviderArn": { "Fn::GetAtt": ["CapacityProvider", "Arn"] },
                "PerExecutionEnvironmentMaxConcurrency": 16,
                "ExecutionEnvironmentMemoryGiBPerVCpu": 4,
            }),
            "{function}"
        );
        assert_eq!(properties["MemorySize"], 4096, "{function}");
        assert_eq!(
            properties["FunctionScalingConfig"],
            json!({ "MinExecutionEnvironments": 1, "MaxExecutionEnvironments": 20 }),
            "{function}"
        );
        assert!(properties["VpcConfig"].is_null(), "{function}");
        assert_eq!(properties["PublishToLatestPublished"], true, "{function}");
        assert_eq!(
            properties["Architectures"],
            json!([{ "Ref": "Architecture" }]),
            "{function}"
        );
        assert!(
            properties["Environment"]["Variables"]["AWS_LAMBDA_MAX_CONCURRENCY"].is_null(),
            "{function}: Lambda sets it"
        );
    }
    let model = Template::from_value(template.clone());
    let topology = &topologies_for(&model)[0];
    let stack = model.instantiate("relevo", &topology.parameters).unwrap();
    let ids = relevo_template::PhysicalIds::synthetic(&stack);
    for function in stack.functions(&ids).unwrap() {
        assert_eq!(
            function.max_concurrency,
            Some(16),
            "{}",
            function.logical_id
        );
    }
    assert_eq!(refused(template), BTreeSet::new());
}

/// A change to the translated template.
type Mutation<'a> = Box<dyn Fn(&mut Value) + 'a>;

#[test]
fn the_deploy_check_refuses_a_managed_instances_template_missing_a_piece() {
    let base = translated();
    let function = of_type(&base, "AWS::Lambda::Function")
        .into_iter()
        .find(|id| id.starts_with("ToolsCall"))
        .unwrap();
    let mutations: Vec<(&str, Mutation<'_>)> = vec![
        (
            "managed-instances",
            Box::new(|t| properties(t, &function)["MemorySize"] = json!(1024)),
        ),
        (
            "managed-instances",
            Box::new(|t| {
                properties(t, &function)
                    .as_object_mut()
                    .unwrap()
                    .remove("MemorySize");
            }),
        ),
        (
            "managed-instances",
            Box::new(|t| {
                properties(t, &function)["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"]
                    ["CapacityProviderArn"] =
                    json!("arn:aws:lambda:us-east-1:210987654321:capacity-provider:shared")
            }),
        ),
        (
            "managed-instances",
            Box::new(|t| {
                properties(t, &function)["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"]
                    ["PerExecutionEnvironmentMaxConcurrency"] = json!(1601)
            }),
        ),
        (
            "managed-instances",
            Box::new(|t| {
                properties(t, &function)["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"]
                    ["ExecutionEnvironmentMemoryGiBPerVCpu"] = json!(1)
            }),
        ),
        (
            "managed-instances",
            Box::new(|t| {
                properties(t, &function)["FunctionScalingConfig"]["MinExecutionEnvironments"] =
                    json!(21)
            }),
        ),
        (
            "managed-instances",
            Box::new(|t| {
                properties(t, "CapacityProvider")["InstanceRequirements"]["Architectures"] =
                    json!(["x86_64"])
            }),
        ),
        (
            "managed-instances",
            Box::new(|t| {
                properties(t, "CapacityProvider")
                    .as_object_mut()
                    .unwrap()
                    .remove("InstanceRequirements");
            }),
        ),
        (
            "managed-instances",
            Box::new(|t| {
                properties(t, &function)["VpcConfig"] =
                    json!({ "SubnetIds": ["subnet-1"], "SecurityGroupIds": ["sg-1"] })
            }),
        ),
        (
            "managed-instances",
            Box::new(|t| {
                properties(t, &function)["Environment"]["Variables"]["AWS_LAMBDA_MAX_CONCURRENCY"] =
                    json!("8")
            }),
        ),
        (
            "capacity-provider",
            Box::new(|t| properties(t, "CapacityProvider")["VpcConfig"]["SubnetIds"] = json!([])),
        ),
        (
            "capacity-provider",
            Box::new(|t| {
                properties(t, "CapacityProvider")["PermissionsConfig"]["CapacityProviderOperatorRoleArn"] =
                    json!("arn:aws:iam::123456789012:role/elsewhere")
            }),
        ),
        (
            "capacity-provider",
            Box::new(|t| {
                properties(t, "CapacityProviderOperatorRole")["ManagedPolicyArns"] = json!([])
            }),
        ),
        (
            "capacity-provider",
            Box::new(|t| {
                properties(t, "CapacityProviderOperatorRole")["AssumeRolePolicyDocument"]["Statement"]
                    [0]["Principal"] = json!({ "Service": "ec2.amazonaws.com" })
            }),
        ),
        (
            "least-privilege",
            Box::new(|t| {
                properties(t, "CapacityProviderOperatorRole")["ManagedPolicyArns"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!("arn:aws:iam::aws:policy/AmazonEC2FullAccess"))
            }),
        ),
        (
            "least-privilege",
            Box::new(|t| {
                let role = of_type(t, "AWS::IAM::Role")
                    .into_iter()
                    .find(|id| id.starts_with("ToolsCall"))
                    .unwrap();
                properties(t, &role)["ManagedPolicyArns"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!(
                        "arn:aws:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator"
                    ))
            }),
        ),
    ];
    for (index, (rule, mutate)) in mutations.iter().enumerate() {
        let mut template = base.clone();
        mutate(&mut template);
        let rules = refused(template);
        assert!(
            rules.contains(rule),
            "mutation {index}: {rule} not among {rules:?}"
        );
    }
}
