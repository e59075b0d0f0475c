//! The deploy check on the translated `template.yaml`: nothing refused for either front door, and
//! each rule refusing a template broken the way a deploy would trip on it.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use relevo_template::Template;
use relevo_template::check::{Finding, RULES, Topology, check, front_doors};
use serde_json::{Value, json};

fn findings(template: Value, topologies: &[Topology]) -> Vec<Finding> {
    check(&Template::from_value(template), topologies)
}

/// The rules that refuse the translated template once `mutate` has changed it.
fn refused(mutate: impl FnOnce(&mut Value)) -> BTreeSet<&'static str> {
    let mut template = common::translated();
    mutate(&mut template);
    findings(template, &front_doors())
        .iter()
        .map(|f| f.rule)
        .collect()
}

/// The rules that refuse the template deployed with `overrides` on top of the front doors'.
fn refused_with(overrides: &[(&str, &str)]) -> BTreeSet<&'static str> {
    let topologies: Vec<Topology> = front_doors()
        .into_iter()
        .map(|mut t| {
            t.parameters.extend(
                overrides
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            );
            t
        })
        .collect();
    findings(common::translated(), &topologies)
        .iter()
        .map(|f| f.rule)
        .collect()
}

fn resource<'a>(template: &'a mut Value, id: &str) -> &'a mut Value {
    let found = &mut template["Resources"][id];
    assert!(found.is_object(), "the translated template has no {id}");
    found
}

fn properties<'a>(template: &'a mut Value, id: &str) -> &'a mut Value {
    &mut resource(template, id)["Properties"]
}

fn header_glob<'a>(template: &'a mut Value, rule: &str) -> &'a mut Value {
    &mut properties(template, rule)["Conditions"][1]["MatchHeaders"]["AnyOf"][0]["ValueGlob"]
}

#[test]
fn the_template_passes_for_both_front_doors() {
    let found = findings(common::translated(), &front_doors());
    assert!(
        found.is_empty(),
        "{}",
        found
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_rule_cites_a_document() {
    for rule in RULES {
        assert!(
            rule.source.starts_with("https://docs.aws.amazon.com/"),
            "{} cites {}",
            rule.id,
            rule.source
        );
    }
}

#[test]
fn the_old_globals_cycle_is_refused_after_translation() {
    // What the template did before: every function's environment named the HTTP API, whose
    // generated body names the functions.
    let sam = r#"
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Environment:
      Variables:
        RELEVO_PAGES_URL: !Sub "https://${McpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"
Resources:
  McpApi:
    Type: AWS::Serverless::HttpApi
  McpFunction:
    Type: AWS::Serverless::Function
    Metadata: { BuildMethod: rust-cargolambda, BuildProperties: { Binary: mcp } }
    Properties:
      CodeUri: .
      Runtime: provided.al2023
      Handler: bootstrap
      Events:
        Mcp: { Type: HttpApi, Properties: { ApiId: !Ref McpApi, Method: ANY, Path: /mcp } }
"#;
    let translated = common::translate_text("cycle", sam).unwrap();
    let found = findings(
        translated,
        &[Topology {
            name: "defaults".into(),
            parameters: Default::default(),
        }],
    );
    let cycle = found
        .iter()
        .find(|f| f.rule == "cycle")
        .expect("the cycle is refused");
    assert!(
        cycle.message.contains("McpApi") && cycle.message.contains("McpFunction"),
        "{cycle}"
    );
}

#[test]
fn a_resource_naming_its_dependent_is_a_cycle() {
    let rules = refused(|t| {
        properties(t, "WorkQueue")["Tags"] =
            json!([{ "Key": "worker", "Value": { "Ref": "WorkerFunction" } }]);
    });
    assert!(rules.contains("cycle"), "{rules:?}");
}

#[test]
fn an_output_naming_a_resource_of_the_other_front_door_is_refused() {
    let rules = refused(|t| t["Outputs"]["Domain"] = json!({ "Value": { "Ref": "Domain" } }));
    assert!(rules.contains("references"), "{rules:?}");
}

#[test]
fn quotas_of_cloudformation_are_refused() {
    let rules = refused(|t| {
        for i in 0..400 {
            t["Resources"][format!("Topic{i}")] = json!({ "Type": "AWS::SNS::Topic" });
        }
    });
    assert!(rules.contains("cfn-quotas"), "{rules:?}");
    let rules = refused(|t| t["Resources"]["Bad-Id"] = json!({ "Type": "AWS::SNS::Topic" }));
    assert!(rules.contains("cfn-quotas"), "{rules:?}");
}

#[test]
fn a_slash_in_a_routing_glob_is_refused() {
    let rules = refused(|t| *header_glob(t, "ToolsCallRule") = json!("tools/call"));
    assert!(rules.contains("routing-glob"), "{rules:?}");
}

#[test]
fn a_wildcard_inside_a_routing_glob_is_refused() {
    let rules = refused(|t| *header_glob(t, "ToolsCallRule") = json!("tools*call"));
    assert!(rules.contains("routing-glob"), "{rules:?}");
    let rules =
        refused(|t| *header_glob(t, "ToolsCallRule") = json!(format!("*{}*", "c".repeat(40))));
    assert!(
        rules.contains("routing-glob"),
        "an infix glob of 42 characters: {rules:?}"
    );
}

#[test]
fn a_long_header_name_is_refused() {
    let rules = refused(|t| {
        properties(t, "ToolsCallRule")["Conditions"][1]["MatchHeaders"]["AnyOf"][0]["Header"] =
            json!("X".repeat(40));
    });
    assert!(rules.contains("routing-glob"), "{rules:?}");
}

#[test]
fn a_third_header_condition_or_a_second_entry_is_refused() {
    let extra =
        json!({ "MatchHeaders": { "AnyOf": [{ "Header": "Mcp-Name", "ValueGlob": "greet" }] } });
    let rules = refused(|t| {
        properties(t, "ToolsCallRule")["Conditions"]
            .as_array_mut()
            .unwrap()
            .push(extra)
    });
    assert!(rules.contains("routing-conditions"), "{rules:?}");
    let rules = refused(|t| {
        let any_of = &mut properties(t, "ToolsCallRule")["Conditions"][1]["MatchHeaders"]["AnyOf"];
        any_of
            .as_array_mut()
            .unwrap()
            .push(json!({ "Header": "Mcp-Method", "ValueGlob": "tools*" }));
    });
    assert!(rules.contains("routing-conditions"), "{rules:?}");
    let rules = refused(|t| {
        properties(t, "ToolsCallRule")["Conditions"][1]["MatchHeaders"]["AnyOf"][0]["Header"] =
            json!("Authorization");
    });
    assert!(
        rules.contains("routing-conditions"),
        "Authorization cannot be matched: {rules:?}"
    );
}

#[test]
fn a_shared_or_out_of_range_priority_is_refused() {
    let rules = refused(|t| {
        properties(t, "ToolsListRule")["Priority"] =
            properties(t, "ToolsCallRule")["Priority"].clone()
    });
    assert!(rules.contains("routing-priority"), "{rules:?}");
    let rules = refused(|t| properties(t, "ToolsListRule")["Priority"] = json!(0));
    assert!(rules.contains("routing-priority"), "{rules:?}");
}

#[test]
fn more_than_fifty_rules_on_a_domain_are_refused() {
    let rules = refused(|t| {
        let rule = resource(t, "PromptsListRule").clone();
        for i in 0..40 {
            let mut copy = rule.clone();
            copy["Properties"]["Priority"] = json!(500_000 + i);
            t["Resources"][format!("ExtraRule{i}")] = copy;
        }
    });
    assert!(rules.contains("routing-quota"), "{rules:?}");
}

#[test]
fn a_rule_created_before_its_stage_is_refused() {
    let rules = refused(|t| {
        resource(t, "ToolsCallRule")
            .as_object_mut()
            .unwrap()
            .remove("DependsOn");
    });
    assert!(rules.contains("routing-target"), "{rules:?}");
    let rules = refused(|t| {
        properties(t, "ToolsCallRule")["Actions"][0]["InvokeApi"]["Stage"] = json!("prod")
    });
    assert!(rules.contains("routing-target"), "{rules:?}");
}

#[test]
fn a_prefix_rule_before_the_suffix_rule_sends_tools_call_to_tools_list() {
    // `tools*` also matches `tools/call`: with a lower priority than `*call`, it wins.
    let rules = refused(|t| properties(t, "ToolsListRule")["Priority"] = json!(1));
    assert!(rules.contains("routing-methods"), "{rules:?}");
}

#[test]
fn a_rule_without_the_version_condition_takes_older_clients_from_the_catch_all() {
    let rules = refused(|t| {
        properties(t, "ToolsCallRule")["Conditions"]
            .as_array_mut()
            .unwrap()
            .remove(0);
    });
    assert!(rules.contains("routing-methods"), "{rules:?}");
}

#[test]
fn a_function_outliving_its_integration_is_refused() {
    let rules = refused(|t| properties(t, "ToolsListFunction")["Timeout"] = json!(60));
    assert!(
        rules.contains("integration-timeout"),
        "REST buffered 29 s: {rules:?}"
    );
    let rules = refused(|t| properties(t, "McpFunction")["Timeout"] = json!(31));
    assert!(
        rules.contains("integration-timeout"),
        "HTTP API 30 s: {rules:?}"
    );
    let rules = refused(|t| {
        let integration = &mut properties(t, "ToolsListApi")["Body"]["paths"]["/mcp"]["Fn::If"][1]
            ["x-amazon-apigateway-any-method"]["Fn::If"][1]["x-amazon-apigateway-integration"];
        integration["timeoutInMillis"] = json!(60_000);
    });
    assert!(
        rules.contains("integration-timeout"),
        "a buffered REST integration of 60 s: {rules:?}"
    );
}

#[test]
fn a_streaming_mismatch_or_an_unbounded_stream_is_refused() {
    let rules = refused(|t| {
        properties(t, "ToolsCallFunction")["Environment"]["Variables"]
            .as_object_mut()
            .unwrap()
            .remove("RELEVO_RESPONSE_STREAMING");
    });
    assert!(rules.contains("streaming"), "{rules:?}");
    let rules = refused(|t| {
        properties(t, "SubscriptionsListenFunction")["Environment"]["Variables"]["RELEVO_LISTEN_MAX_SECS"] =
            json!("300")
    });
    assert!(
        rules.contains("streaming"),
        "a listen stream as long as the timeout: {rules:?}"
    );
    let rules = refused(|t| {
        properties(t, "CatchAllFunction")["Environment"]["Variables"]["RELEVO_SSE_KEEPALIVE_SECS"] =
            json!("300")
    });
    assert!(
        rules.contains("streaming"),
        "a keep-alive at the idle limit: {rules:?}"
    );
    let rules = refused(|t| {
        properties(t, "CatchAllFunction")["Environment"]["Variables"]
            .as_object_mut()
            .unwrap()
            .remove("RELEVO_LEGACY_INPUT_WAIT_SECS");
    });
    assert!(
        rules.contains("streaming"),
        "a 2025-11-25 wait of 300 s in a 300 s function: {rules:?}"
    );
}

#[test]
fn lambda_limits_are_refused() {
    assert!(
        refused(|t| properties(t, "WorkerFunction")["MemorySize"] = json!(64))
            .contains("lambda-limits")
    );
    assert!(
        refused(|t| properties(t, "WorkerFunction")["Timeout"] = json!(901))
            .contains("lambda-limits")
    );
    assert!(
        refused(|t| properties(t, "WorkerFunction")["Description"] = json!("x".repeat(257)))
            .contains("lambda-limits")
    );
}

#[test]
fn an_environment_over_four_kilobytes_or_a_reserved_variable_is_refused() {
    let rules = refused(|t| {
        properties(t, "WorkerFunction")["Environment"]["Variables"]["BIG"] = json!("x".repeat(4000))
    });
    assert!(rules.contains("lambda-environment"), "{rules:?}");
    let rules = refused(|t| {
        properties(t, "WorkerFunction")["Environment"]["Variables"]["AWS_REGION"] =
            json!("eu-west-1")
    });
    assert!(rules.contains("lambda-environment"), "{rules:?}");
    let rules =
        refused(|t| properties(t, "WorkerFunction")["Environment"]["Variables"]["1X"] = json!("x"));
    assert!(rules.contains("lambda-environment"), "{rules:?}");
}

#[test]
fn log_levels_lambda_refuses_or_that_drop_the_emf_lines_are_refused() {
    fn logging(t: &mut Value) -> &mut Value {
        &mut properties(t, "WorkerFunction")["LoggingConfig"]
    }
    // The template's, from Globals: JSON, system logs at WARN (no START/END/REPORT lines).
    assert_eq!(
        logging(&mut common::translated()),
        &json!({ "LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "WARN" }),
    );
    // Above INFO, Lambda drops the EMF lines the alarms read.
    let rules = refused(|t| logging(t)["ApplicationLogLevel"] = json!("WARN"));
    assert!(rules.contains("lambda-logging"), "{rules:?}");
    // Levels need the JSON format (CloudFormation refuses them with Text), from Lambda's lists.
    let rules = refused(|t| logging(t)["LogFormat"] = json!("Text"));
    assert!(rules.contains("lambda-logging"), "{rules:?}");
    let rules = refused(|t| logging(t)["SystemLogLevel"] = json!("ERROR"));
    assert!(rules.contains("lambda-logging"), "{rules:?}");
    // The system log level is the operator's: INFO brings REPORT back, and is accepted.
    let rules = refused(|t| logging(t)["SystemLogLevel"] = json!("INFO"));
    assert!(!rules.contains("lambda-logging"), "{rules:?}");
}

#[test]
fn a_visibility_below_six_worker_timeouts_is_refused() {
    let rules = refused_with(&[("WorkQueueVisibility", "600")]);
    assert!(rules.contains("sqs-visibility"), "600 < 6 × 120: {rules:?}");
}

#[test]
fn queue_limits_are_refused() {
    let rules = refused(|t| properties(t, "DeadLetterQueue")["MessageRetentionPeriod"] = json!(60));
    assert!(
        rules.contains("sqs-limits"),
        "dead letters kept shorter than the source: {rules:?}"
    );
    let rules =
        refused(|t| properties(t, "WorkQueue")["RedrivePolicy"]["maxReceiveCount"] = json!(2));
    assert!(
        rules.contains("sqs-limits"),
        "fewer than 5 receives before the dead letters: {rules:?}"
    );
    let rules = refused_with(&[("WorkQueueVisibility", "50000")]);
    assert!(
        rules.contains("sqs-limits"),
        "visibility over 12 hours: {rules:?}"
    );
}

#[test]
fn an_event_source_without_partial_failures_or_out_of_range_is_refused() {
    let rules = refused(|t| {
        properties(t, "WorkerEventSourceMapping")
            .as_object_mut()
            .unwrap()
            .remove("FunctionResponseTypes");
    });
    assert!(rules.contains("event-source"), "{rules:?}");
    assert!(
        refused(|t| properties(t, "WorkerEventSourceMapping")["BatchSize"] = json!(100))
            .contains("event-source")
    );
    let rules = refused(|t| {
        properties(t, "WorkerEventSourceMapping")["ScalingConfig"]["MaximumConcurrency"] = json!(1)
    });
    assert!(rules.contains("event-source"), "{rules:?}");
}

#[test]
fn a_malformed_schedule_is_refused() {
    for expression in [
        "rate(1 minutes)",
        "rate(5 minute)",
        "rate(30 seconds)",
        "cron(0 * * * *)",
        "every 5 minutes",
    ] {
        let rules = refused_with(&[("ReconcileSchedule", expression)]);
        assert!(rules.contains("schedule"), "{expression}: {rules:?}");
    }
    assert!(!refused_with(&[("ReconcileSchedule", "cron(0/5 * * * ? *)")]).contains("schedule"));
}

#[test]
fn a_function_without_its_log_group_or_a_bad_retention_is_refused() {
    assert!(
        refused(|t| drop(
            t["Resources"]
                .as_object_mut()
                .unwrap()
                .remove("WorkerLogGroup")
        ))
        .contains("logs")
    );
    assert!(
        refused(|t| properties(t, "WorkerLogGroup")["RetentionInDays"] = json!(2)).contains("logs")
    );
}

#[test]
fn a_missing_alarm_or_a_bad_period_is_refused() {
    for alarm in [
        "DeadLetterQueueAlarm",
        "WorkerErrorsAlarm",
        "ToolsCall5xxAlarm",
        "Mcp5xxAlarm",
    ] {
        let rules = refused(|t| drop(t["Resources"].as_object_mut().unwrap().remove(alarm)));
        assert!(rules.contains("alarms"), "without {alarm}: {rules:?}");
    }
    assert!(
        refused(|t| properties(t, "DeadLetterQueueAlarm")["Period"] = json!(45)).contains("alarms")
    );
}

#[test]
fn a_function_or_stage_without_tracing_is_refused() {
    assert!(
        refused(|t| drop(
            properties(t, "WorkerFunction")
                .as_object_mut()
                .unwrap()
                .remove("TracingConfig")
        ))
        .contains("tracing")
    );
    assert!(
        refused(|t| properties(t, "ToolsCallApiliveStage")["TracingEnabled"] = json!(false))
            .contains("tracing")
    );
}

#[test]
fn a_stage_without_throttling_or_access_logs_is_refused() {
    let rules = refused(|t| {
        drop(
            properties(t, "ToolsCallApiliveStage")
                .as_object_mut()
                .unwrap()
                .remove("MethodSettings"),
        )
    });
    assert!(rules.contains("stage-settings"), "{rules:?}");
    let rules = refused(|t| {
        drop(
            properties(t, "McpApiApiGatewayDefaultStage")
                .as_object_mut()
                .unwrap()
                .remove("AccessLogSettings"),
        )
    });
    assert!(rules.contains("stage-settings"), "{rules:?}");
    let rules = refused(|t| {
        let resources = t["Resources"].as_object_mut().unwrap();
        resources.remove("ApiGatewayAccount");
        for resource in resources.values_mut() {
            if resource["DependsOn"] == "ApiGatewayAccount" {
                resource.as_object_mut().unwrap().remove("DependsOn");
            }
        }
    });
    assert!(
        rules.contains("stage-settings"),
        "REST access logs without the account's role: {rules:?}"
    );
}

#[test]
fn an_open_execute_api_endpoint_behind_the_domain_is_refused() {
    let rules = refused(|t| {
        properties(t, "ToolsCallApi")["Body"]["x-amazon-apigateway-endpoint-configuration"]["disableExecuteApiEndpoint"] =
            json!(false);
    });
    assert!(rules.contains("execute-api-endpoint"), "{rules:?}");
    assert!(
        refused(|t| properties(t, "ToolsCallApi")["DisableExecuteApiEndpoint"] = json!(false))
            .contains("execute-api-endpoint")
    );
}

#[test]
fn table_definitions_a_deploy_refuses_or_a_deletable_table_are_refused() {
    let rules = refused(|t| {
        properties(t, "Table")["AttributeDefinitions"]
            .as_array_mut()
            .unwrap()
            .push(json!({ "AttributeName": "tenant", "AttributeType": "S" }));
    });
    assert!(
        rules.contains("dynamodb"),
        "an attribute no key uses: {rules:?}"
    );
    assert!(
        refused(|t| drop(
            resource(t, "Table")
                .as_object_mut()
                .unwrap()
                .remove("DeletionPolicy")
        ))
        .contains("dynamodb")
    );
    assert!(
        refused(|t| properties(t, "Table")["DeletionProtectionEnabled"] = json!(false))
            .contains("dynamodb")
    );
}

#[test]
fn a_deletable_key_secret_is_refused() {
    assert!(
        refused(|t| drop(
            resource(t, "StateKeysSecret")
                .as_object_mut()
                .unwrap()
                .remove("UpdateReplacePolicy")
        ))
        .contains("retain")
    );
}

#[test]
fn iam_quotas_are_refused() {
    let rules = refused(|t| {
        properties(t, "WorkerFunctionRole")["Policies"] = json!([{ "PolicyName": "big", "PolicyDocument": {
            "Statement": [{ "Effect": "Allow", "Action": ["sqs:SendMessage"], "Resource": "x".repeat(11_000) }] } }]);
    });
    assert!(rules.contains("iam-limits"), "{rules:?}");
    let rules = refused(|t| {
        let arns = &mut properties(t, "WorkerFunctionRole")["ManagedPolicyArns"];
        for i in 0..8 {
            arns.as_array_mut()
                .unwrap()
                .push(json!(format!("arn:aws:iam::123456789012:policy/extra{i}")));
        }
    });
    assert!(rules.contains("iam-limits"), "{rules:?}");
}

#[test]
fn wildcards_and_broad_managed_policies_are_refused() {
    let rules = refused(|t| {
        properties(t, "RecordsReadPolicy")["PolicyDocument"]["Statement"][0]["Action"] =
            json!(["dynamodb:*"])
    });
    assert!(rules.contains("least-privilege"), "{rules:?}");
    let rules = refused(|t| {
        properties(t, "RecordsReadPolicy")["PolicyDocument"]["Statement"][0]["Resource"] =
            json!("*")
    });
    assert!(rules.contains("least-privilege"), "{rules:?}");
    let rules = refused(|t| {
        properties(t, "WorkerFunctionRole")["ManagedPolicyArns"]
            .as_array_mut()
            .unwrap()
            .push(json!("arn:aws:iam::aws:policy/AmazonDynamoDBFullAccess"));
    });
    assert!(rules.contains("least-privilege"), "{rules:?}");
}

#[test]
fn an_alarm_or_dashboard_on_a_metric_nobody_publishes_is_refused() {
    assert!(
        refused(|t| properties(t, "ServerErrorsAlarm")["MetricName"] = json!("ServerError"))
            .contains("metrics")
    );
    assert!(
        refused(|t| properties(t, "LatencyAlarm")["Namespace"] = json!("Relevo"))
            .contains("metrics")
    );
    let unpublished = refused(|t| {
        let variables = properties(t, "ToolsCallFunction")["Environment"]["Variables"]
            .as_object_mut()
            .unwrap();
        variables.remove("RELEVO_METRICS");
    });
    assert!(
        unpublished.contains("metrics"),
        "a function that publishes nothing: {unpublished:?}"
    );
    let body = |t: &mut Value| -> String {
        serde_json::to_string(&properties(t, "OperationsDashboard")["DashboardBody"]).unwrap()
    };
    assert!(
        refused(
            |t| properties(t, "OperationsDashboard")["DashboardBody"] = json!("{\"widgets\": [")
        )
        .contains("metrics")
    );
    let renamed = refused(|t| {
        let broken = body(t).replace("OperationsEnteredUnknown", "OperationsUnknown");
        properties(t, "OperationsDashboard")["DashboardBody"] =
            serde_json::from_str(&broken).unwrap();
    });
    assert!(
        renamed.contains("metrics"),
        "a dashboard metric the code never writes: {renamed:?}"
    );
    let searched = refused(|t| {
        let broken = body(t).replace("{Relevo/", "{Other/");
        properties(t, "OperationsDashboard")["DashboardBody"] =
            serde_json::from_str(&broken).unwrap();
    });
    assert!(
        searched.contains("metrics"),
        "a SEARCH of a namespace nobody publishes to: {searched:?}"
    );
}

/// The translated template moved onto Lambda Managed Instances the way `managed-instances` in
/// the table does it (`infra/cli/tests/managed_instances.rs` checks the generated one): the
/// subnet and security group parameters, a capacity provider of the functions' architecture with
/// its operator role, every function on it with 2 GB.
fn on_managed_instances(template: &mut Value) {
    template["Parameters"]["CapacityProviderSubnetIds"] =
        json!({ "Type": "List<AWS::EC2::Subnet::Id>" });
    template["Parameters"]["CapacityProviderSecurityGroupIds"] =
        json!({ "Type": "List<AWS::EC2::SecurityGroup::Id>" });
    template["Resources"]["CapacityProviderOperatorRole"] = json!({
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": { "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow",
                "Principal": { "Service": "lambda.amazonaws.com" },
                "Action": "sts:AssumeRole",
            }]},
            "ManagedPolicyArns": [{ "Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator" }],
        },
    });
    template["Resources"]["CapacityProvider"] = json!({
        "Type": "AWS::Lambda::CapacityProvider",
        "Properties": {
            "VpcConfig": {
                "SubnetIds": { "Ref": "CapacityProviderSubnetIds" },
                "SecurityGroupIds": { "Ref": "CapacityProviderSecurityGroupIds" },
            },
            "InstanceRequirements": { "Architectures": [{ "Ref": "Architecture" }] },
            "PermissionsConfig": {
                "CapacityProviderOperatorRoleArn": { "Fn::GetAtt": ["CapacityProviderOperatorRole", "Arn"] },
            },
        },
    });
    for resource in template["Resources"].as_object_mut().unwrap().values_mut() {
        if resource["Type"] == "AWS::Lambda::Function" {
            resource["Properties"]["MemorySize"] = json!(2048);
            resource["Properties"]["CapacityProviderConfig"] = json!({
                "LambdaManagedInstancesCapacityProviderConfig": {
                    "CapacityProviderArn": { "Fn::GetAtt": ["CapacityProvider", "Arn"] },
                    "PerExecutionEnvironmentMaxConcurrency": 8,
                    "ExecutionEnvironmentMemoryGiBPerVCpu": 2,
                },
            });
        }
    }
}

/// The rules that refuse the Managed Instances template once `mutate` has changed it.
fn refused_on_managed_instances(mutate: impl FnOnce(&mut Value)) -> BTreeSet<&'static str> {
    let mut template = common::translated();
    on_managed_instances(&mut template);
    mutate(&mut template);
    let template = Template::from_value(template);
    check(
        &template,
        &relevo_template::check::topologies_for(&template),
    )
    .iter()
    .map(|f| f.rule)
    .collect()
}

#[test]
fn a_template_on_managed_instances_passes_with_every_piece_aws_documents() {
    assert_eq!(refused_on_managed_instances(|_| {}), BTreeSet::new());
}

#[test]
fn a_function_serves_one_invocation_at_a_time_unless_on_managed_instances() {
    let concurrency = |template: Value| -> Vec<Option<u64>> {
        let template = Template::from_value(template);
        let topologies = relevo_template::check::topologies_for(&template);
        let stack = template
            .instantiate("relevo", &topologies[0].parameters)
            .unwrap();
        let ids = relevo_template::PhysicalIds::synthetic(&stack);
        let functions = stack.functions(&ids).unwrap();
        assert!(!functions.is_empty());
        functions.iter().map(|f| f.max_concurrency).collect()
    };
    assert!(
        concurrency(common::translated())
            .iter()
            .all(Option::is_none)
    );
    let mut managed = common::translated();
    on_managed_instances(&mut managed);
    assert!(concurrency(managed).iter().all(|c| *c == Some(8)));
}

#[test]
fn a_managed_instances_function_without_what_aws_documents_is_refused() {
    fn config(t: &mut Value) -> &mut Value {
        &mut properties(t, "ToolsCallFunction")["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"]
    }
    for (what, mutate) in [
        (
            "1 GB",
            Box::new(|t: &mut Value| properties(t, "ToolsCallFunction")["MemorySize"] = json!(1024))
                as Box<dyn Fn(&mut Value)>,
        ),
        (
            "another stack's provider",
            Box::new(|t: &mut Value| {
                config(t)["CapacityProviderArn"] =
                    json!("arn:aws:lambda:us-east-1:210987654321:capacity-provider:shared")
            }),
        ),
        (
            "1,601 in flight",
            Box::new(|t: &mut Value| {
                config(t)["PerExecutionEnvironmentMaxConcurrency"] = json!(1601)
            }),
        ),
        (
            "9 GiB per vCPU",
            Box::new(|t: &mut Value| config(t)["ExecutionEnvironmentMemoryGiBPerVCpu"] = json!(9)),
        ),
        (
            "an arm64 function on x86_64 instances",
            Box::new(|t: &mut Value| {
                properties(t, "CapacityProvider")["InstanceRequirements"]["Architectures"] =
                    json!(["x86_64"])
            }),
        ),
        (
            "its own VpcConfig",
            Box::new(|t: &mut Value| {
                properties(t, "ToolsCallFunction")["VpcConfig"] =
                    json!({ "SubnetIds": ["subnet-1"], "SecurityGroupIds": ["sg-1"] })
            }),
        ),
        (
            "AWS_LAMBDA_MAX_CONCURRENCY set by the template",
            Box::new(|t: &mut Value| {
                properties(t, "ToolsCallFunction")["Environment"]["Variables"]["AWS_LAMBDA_MAX_CONCURRENCY"] =
                    json!("8")
            }),
        ),
    ] {
        let rules = refused_on_managed_instances(mutate);
        assert!(rules.contains("managed-instances"), "{what}: {rules:?}");
    }
}

#[test]
fn a_capacity_provider_without_subnets_or_its_operator_role_is_refused() {
    fn role(t: &mut Value) -> &mut Value {
        properties(t, "CapacityProviderOperatorRole")
    }
    for (what, mutate) in [
        (
            "no subnets",
            Box::new(|t: &mut Value| {
                properties(t, "CapacityProvider")["VpcConfig"]["SubnetIds"] = json!([])
            }) as Box<dyn Fn(&mut Value)>,
        ),
        (
            "a role of another stack",
            Box::new(|t: &mut Value| {
                properties(t, "CapacityProvider")["PermissionsConfig"]["CapacityProviderOperatorRoleArn"] =
                    json!("arn:aws:iam::123456789012:role/elsewhere")
            }),
        ),
        (
            "a role Lambda cannot assume",
            Box::new(|t: &mut Value| {
                role(t)["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] =
                    json!({ "Service": "ec2.amazonaws.com" })
            }),
        ),
        (
            "a role without AWS's operator policy",
            Box::new(|t: &mut Value| role(t)["ManagedPolicyArns"] = json!([])),
        ),
    ] {
        let rules = refused_on_managed_instances(mutate);
        assert!(rules.contains("capacity-provider"), "{what}: {rules:?}");
    }
}

#[test]
fn the_operator_policy_is_allowed_on_the_operator_role_only() {
    let elsewhere = refused_on_managed_instances(|t| {
        properties(t, "WorkerFunctionRole")["ManagedPolicyArns"]
            .as_array_mut()
            .unwrap()
            .push(json!(
                "arn:aws:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator"
            ));
    });
    assert!(elsewhere.contains("least-privilege"), "{elsewhere:?}");
    let broader = refused_on_managed_instances(|t| {
        properties(t, "CapacityProviderOperatorRole")["ManagedPolicyArns"]
            .as_array_mut()
            .unwrap()
            .push(json!("arn:aws:iam::aws:policy/AmazonEC2FullAccess"));
    });
    assert!(broader.contains("least-privilege"), "{broader:?}");
}

/// The rules that refuse the translated template once `mutate` has changed it, and only those
/// (so a test of one rule cannot pass on another's finding).
fn only(mutate: impl FnOnce(&mut Value)) -> BTreeSet<&'static str> {
    let rules = refused(mutate);
    assert!(rules.len() <= 1, "one rule refuses it: {rules:?}");
    rules
}

#[test]
fn a_public_function_url_without_either_permission_is_refused() {
    for permission in [
        "McpUrlFunctionUrlPublicPermissions",
        "McpUrlFunctionURLInvokeAllowPublicAccess",
    ] {
        let rules = only(|t| {
            t["Resources"].as_object_mut().unwrap().remove(permission);
        });
        assert_eq!(
            rules,
            BTreeSet::from(["function-url-permissions"]),
            "without {permission}"
        );
    }
    // lambda:InvokeFunction for anyone, not only through the URL, is not the grant AWS asks for.
    let rules = only(|t| {
        properties(t, "McpUrlFunctionURLInvokeAllowPublicAccess")
            .as_object_mut()
            .unwrap()
            .remove("InvokedViaFunctionUrl");
    });
    assert_eq!(rules, BTreeSet::from(["function-url-permissions"]));
}

#[test]
fn a_buffered_url_for_a_streaming_function_or_the_reverse_is_refused() {
    let rules = only(|t| {
        properties(t, "McpUrlFunctionUrl")
            .as_object_mut()
            .unwrap()
            .remove("InvokeMode");
    });
    assert_eq!(
        rules,
        BTreeSet::from(["function-url-streaming"]),
        "BUFFERED by default"
    );
    let rules = refused(|t| {
        properties(t, "McpUrlFunction")["Environment"]["Variables"]
            .as_object_mut()
            .unwrap()
            .remove("RELEVO_RESPONSE_STREAMING");
    });
    assert!(rules.contains("function-url-streaming"), "{rules:?}");
}

#[test]
fn cors_with_credentials_from_any_origin_is_refused() {
    let rules = only(|t| {
        properties(t, "McpUrlFunctionUrl")["Cors"] =
            json!({ "AllowOrigins": ["*"], "AllowCredentials": true });
    });
    assert_eq!(rules, BTreeSet::from(["function-url-cors"]));
    let rules = refused(|t| {
        properties(t, "McpUrlFunctionUrl")["Cors"] =
            json!({ "AllowOrigins": ["https://app.example"], "AllowCredentials": true });
    });
    assert!(rules.is_empty(), "one named origin may: {rules:?}");
}

#[test]
fn a_public_url_without_reserved_concurrency_is_refused() {
    let rules = only(|t| {
        properties(t, "McpUrlFunction")
            .as_object_mut()
            .unwrap()
            .remove("ReservedConcurrentExecutions");
    });
    assert_eq!(rules, BTreeSet::from(["function-url-concurrency"]));
    let rules = refused_with(&[("UrlReservedConcurrency", "0")]);
    assert!(rules.contains("function-url-concurrency"), "{rules:?}");
}
