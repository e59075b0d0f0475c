//! What running it in production needs: logs with retention, alarms, tracing, stage throttling
//! and access logs, no second door around the custom domain, state that survives the stack.

use std::collections::BTreeSet;

use serde_json::Value;

use super::Context;
use crate::apis::ApiKind;
use crate::physical::text;

/// CloudWatch Logs retention values (`AWS::Logs::LogGroup` `RetentionInDays`).
pub const RETENTION_DAYS: [u64; 22] = [
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
    3288, 3653,
];
const MAX_GLOBAL_INDEXES: usize = 20;

pub(super) fn run(context: &mut Context) {
    logs(context);
    alarms(context);
    tracing(context);
    stages(context);
    execute_api(context);
    tables(context);
    secrets(context);
}

fn resolved(context: &mut Context, logical_id: &str) -> Value {
    match context.stack.properties(context.ids, logical_id) {
        Ok(properties) => properties,
        Err(error) => {
            context.refuse("references", logical_id, error.to_string());
            Value::Null
        }
    }
}

fn number(value: &Value) -> Option<u64> {
    text(value).and_then(|t| t.parse().ok())
}

fn logs(context: &mut Context) {
    let mut groups = BTreeSet::new();
    for group in context
        .stack
        .of_type("AWS::Logs::LogGroup")
        .map(|g| g.logical_id.clone())
        .collect::<Vec<_>>()
    {
        let properties = resolved(context, &group);
        match number(&properties["RetentionInDays"]) {
            None => context.refuse(
                "logs",
                &group,
                "no RetentionInDays: its logs would be kept forever",
            ),
            Some(days) if !RETENTION_DAYS.contains(&days) => {
                context.refuse(
                    "logs",
                    &group,
                    format!("RetentionInDays {days} is not a CloudWatch Logs retention"),
                );
            }
            Some(_) => {
                groups.extend(text(&properties["LogGroupName"]));
            }
        }
    }
    let Ok(functions) = context.stack.functions(context.ids) else {
        return;
    };
    for function in functions {
        let name = context
            .ids
            .reference(&function.logical_id)
            .unwrap_or_default();
        if !groups.contains(&format!("/aws/lambda/{name}")) {
            context.refuse(
                "logs",
                &function.logical_id,
                format!("no /aws/lambda/{name} log group with retention"),
            );
        }
    }
}

/// The (dimension name, value) pairs an alarm watches, through its metric or its metric math.
fn watched(alarm: &Value) -> Vec<(String, String)> {
    let mut dimensions: Vec<&Value> = alarm["Dimensions"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    for metric in alarm["Metrics"].as_array().into_iter().flatten() {
        dimensions.extend(
            metric["MetricStat"]["Metric"]["Dimensions"]
                .as_array()
                .into_iter()
                .flatten(),
        );
    }
    dimensions
        .into_iter()
        .filter_map(|d| Some((text(&d["Name"])?, text(&d["Value"])?)))
        .collect()
}

fn period_ok(period: u64) -> bool {
    matches!(period, 10 | 20 | 30) || (period >= 60 && period.is_multiple_of(60))
}

fn alarms(context: &mut Context) {
    let mut watching = Vec::new();
    for alarm in context
        .stack
        .of_type("AWS::CloudWatch::Alarm")
        .map(|a| a.logical_id.clone())
        .collect::<Vec<_>>()
    {
        let properties = resolved(context, &alarm);
        let mut periods: Vec<u64> = number(&properties["Period"]).into_iter().collect();
        periods.extend(
            properties["Metrics"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| number(&m["MetricStat"]["Period"])),
        );
        for period in periods.into_iter().filter(|p| !period_ok(*p)) {
            context.refuse(
                "alarms",
                &alarm,
                format!("Period {period} s: only 10, 20, 30 or a multiple of 60"),
            );
        }
        watching.extend(watched(&properties));
    }
    let watches = |name: &str, value: &str| watching.iter().any(|(n, v)| n == name && v == value);
    let mut missing = Vec::new();
    if let Ok(functions) = context.stack.functions(context.ids) {
        for function in functions {
            let name = context
                .ids
                .reference(&function.logical_id)
                .unwrap_or_default();
            if !watches("FunctionName", &name) {
                missing.push((
                    function.logical_id,
                    "no alarm on its errors and throttles".to_string(),
                ));
            }
        }
    }
    if let Ok(queues) = context.stack.queues(context.ids) {
        for (dead_letters, _) in queues.iter().filter_map(|q| q.dead_letter.clone()) {
            let name = context
                .ids
                .attribute(&dead_letters, "QueueName")
                .unwrap_or_default();
            if !watches("QueueName", &name) {
                missing.push((
                    dead_letters,
                    "a dead-letter queue without an alarm on its depth".to_string(),
                ));
            }
        }
    }
    if let Ok(apis) = context.stack.apis(context.ids) {
        for api in apis {
            let watched = match api.kind {
                ApiKind::Rest => {
                    let name = context
                        .stack
                        .property(context.ids, &api.logical_id, "Name")
                        .ok()
                        .flatten();
                    name.and_then(|n| text(&n))
                        .is_some_and(|n| watches("ApiName", &n))
                }
                ApiKind::Http => watches(
                    "ApiId",
                    &context.ids.reference(&api.logical_id).unwrap_or_default(),
                ),
            };
            if !watched {
                missing.push((
                    api.logical_id,
                    "no alarm on its 5XX answers (REST: an explicit Name for ApiName)".to_string(),
                ));
            }
        }
    }
    for (resource, message) in missing {
        context.refuse("alarms", &resource, message);
    }
}

fn tracing(context: &mut Context) {
    if let Ok(functions) = context.stack.functions(context.ids) {
        for function in functions
            .into_iter()
            .filter(|f| f.tracing.as_deref() != Some("Active"))
        {
            context.refuse(
                "tracing",
                &function.logical_id,
                "TracingConfig Mode is not Active",
            );
        }
    }
    for stage in context
        .stack
        .of_type("AWS::ApiGateway::Stage")
        .map(|s| s.logical_id.clone())
        .collect::<Vec<_>>()
    {
        if resolved(context, &stage)["TracingEnabled"].as_bool() != Some(true) {
            context.refuse("tracing", &stage, "a REST stage without TracingEnabled");
        }
    }
}

fn throttled(settings: &Value) -> bool {
    number(&settings["ThrottlingRateLimit"]).is_some()
        && number(&settings["ThrottlingBurstLimit"]).is_some()
}

fn stages(context: &mut Context) {
    let has_account = context
        .stack
        .of_type("AWS::ApiGateway::Account")
        .any(|a| !a.property("CloudWatchRoleArn").is_null());
    for stage in context
        .stack
        .of_type("AWS::ApiGateway::Stage")
        .map(|s| s.logical_id.clone())
        .collect::<Vec<_>>()
    {
        let properties = resolved(context, &stage);
        let all_methods = properties["MethodSettings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["ResourcePath"] == "/*" && m["HttpMethod"] == "*" && throttled(m));
        if !all_methods {
            context.refuse(
                "stage-settings",
                &stage,
                "no throttling for every method (MethodSettings /* *)",
            );
        }
        let logs = !properties["AccessLogSetting"]["DestinationArn"].is_null();
        if !logs {
            context.refuse(
                "stage-settings",
                &stage,
                "no access logs (AccessLogSetting)",
            );
        }
        let execution_logs = properties["MethodSettings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| !m["LoggingLevel"].is_null());
        if (logs || execution_logs) && !has_account {
            context.refuse(
                "stage-settings",
                &stage,
                "REST logs need the account's CloudWatch role: no AWS::ApiGateway::Account with CloudWatchRoleArn",
            );
        }
    }
    for stage in context
        .stack
        .of_type("AWS::ApiGatewayV2::Stage")
        .map(|s| s.logical_id.clone())
        .collect::<Vec<_>>()
    {
        let properties = resolved(context, &stage);
        if !throttled(&properties["DefaultRouteSettings"]) {
            context.refuse(
                "stage-settings",
                &stage,
                "no DefaultRouteSettings throttling",
            );
        }
        if properties["AccessLogSettings"]["DestinationArn"].is_null() {
            context.refuse(
                "stage-settings",
                &stage,
                "no access logs (AccessLogSettings)",
            );
        }
    }
}

fn execute_api(context: &mut Context) {
    let Ok(rules) = context.stack.routing_rules(context.ids) else {
        return;
    };
    let targets: BTreeSet<String> = rules
        .iter()
        .flat_map(|r| r.actions.iter().map(|a| a.api.clone()))
        .collect();
    let Ok(apis) = context.stack.apis(context.ids) else {
        return;
    };
    for api in apis
        .into_iter()
        .filter(|a| targets.contains(&a.logical_id) && !a.disable_execute_api_endpoint)
    {
        context.refuse(
            "execute-api-endpoint",
            &api.logical_id,
            "behind the custom domain, but its execute-api endpoint is still open (DisableExecuteApiEndpoint)",
        );
    }
}

fn names(items: &Value) -> BTreeSet<String> {
    items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| text(&k["AttributeName"]))
        .collect()
}

fn tables(context: &mut Context) {
    let tables: Vec<_> = context
        .stack
        .of_type("AWS::DynamoDB::Table")
        .cloned()
        .collect();
    for table in tables {
        let id = &table.logical_id;
        let properties = resolved(context, id);
        let mut keys = names(&properties["KeySchema"]);
        let indexes: Vec<&Value> = ["GlobalSecondaryIndexes", "LocalSecondaryIndexes"]
            .iter()
            .flat_map(|kind| properties[*kind].as_array().into_iter().flatten())
            .collect();
        for index in &indexes {
            keys.extend(names(&index["KeySchema"]));
        }
        let defined = names(&properties["AttributeDefinitions"]);
        if defined != keys {
            context.refuse(
                "dynamodb",
                id,
                format!("AttributeDefinitions {defined:?} must be exactly the key attributes of the table and its indexes {keys:?}"),
            );
        }
        let global = properties["GlobalSecondaryIndexes"]
            .as_array()
            .map_or(0, Vec::len);
        if global > MAX_GLOBAL_INDEXES {
            context.refuse(
                "dynamodb",
                id,
                format!("{global} global secondary indexes (at most {MAX_GLOBAL_INDEXES})"),
            );
        }
        if table.deletion_policy.as_deref() != Some("Retain")
            || table.update_replace_policy.as_deref() != Some("Retain")
        {
            context.refuse("dynamodb", id, "DeletionPolicy and UpdateReplacePolicy must be Retain: deleting or replacing the stack would delete every record");
        }
        if properties["DeletionProtectionEnabled"].as_bool() != Some(true) {
            context.refuse("dynamodb", id, "DeletionProtectionEnabled is not true");
        }
    }
}

fn secrets(context: &mut Context) {
    let secrets: Vec<_> = context
        .stack
        .of_type("AWS::SecretsManager::Secret")
        .cloned()
        .collect();
    for secret in secrets {
        if secret.deletion_policy.as_deref() != Some("Retain")
            || secret.update_replace_policy.as_deref() != Some("Retain")
        {
            context.refuse(
                "retain",
                &secret.logical_id,
                "DeletionPolicy and UpdateReplacePolicy must be Retain: a new key would make every outstanding requestState and cursor invalid",
            );
        }
    }
}
