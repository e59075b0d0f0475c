//! Functions, queues, event source mappings and schedules, resolved for one stack.

use std::collections::BTreeMap;

use crate::error::TemplateError;
use crate::logging::Logging;
use crate::physical::{PhysicalIds, text};
use crate::stack::Stack;

/// Lambda's defaults when the template leaves a value out.
pub const DEFAULT_TIMEOUT_SECS: u64 = 3;
pub const DEFAULT_MEMORY_MB: u64 = 128;

#[derive(Debug, Clone)]
pub struct Function {
    pub logical_id: String,
    /// `Metadata.BuildProperties.Binary`: the workspace binary `sam build` puts in the zip.
    pub binary: String,
    pub environment: BTreeMap<String, String>,
    pub memory_mb: u64,
    pub timeout_secs: u64,
    /// The logical id of the execution role.
    pub role: Option<String>,
    /// `TracingConfig.Mode`.
    pub tracing: Option<String>,
    pub description: Option<String>,
    /// On Lambda Managed Instances, `PerExecutionEnvironmentMaxConcurrency`: the invocations one
    /// execution environment serves at once, which Lambda passes the runtime as
    /// `AWS_LAMBDA_MAX_CONCURRENCY` (local Lambda mode can do the same). `None`: one at a time
    /// (or, on a capacity provider that leaves it out, Lambda's default of 8 per vCPU for Rust).
    pub max_concurrency: Option<u64>,
    /// `LoggingConfig`: how Lambda formats and filters the function's logs.
    pub logging: Logging,
}

impl Function {
    /// Whether the function answers with Lambda response streaming (`RELEVO_RESPONSE_STREAMING`).
    pub fn streams(&self) -> bool {
        self.environment
            .get("RELEVO_RESPONSE_STREAMING")
            .is_some_and(|v| v == "true" || v == "1")
    }
}

/// A Lambda Function URL (`AWS::Lambda::Url`): the function it invokes and how.
#[derive(Debug, Clone)]
pub struct FunctionUrl {
    pub logical_id: String,
    /// The logical id of the function it invokes (`TargetFunctionArn`); `None` when that names
    /// no function of the stack.
    pub function: Option<String>,
    /// `AuthType`: `NONE` or `AWS_IAM`.
    pub auth_type: String,
    /// `InvokeMode: RESPONSE_STREAM` (else `BUFFERED`, the default).
    pub streaming: bool,
    /// The resolved properties, for what the fields above leave out (`Cors`).
    pub properties: serde_json::Value,
}

#[derive(Debug, Clone)]
pub struct Queue {
    pub logical_id: String,
    pub visibility_secs: u64,
    pub retention_secs: u64,
    /// The dead-letter queue's logical id and `maxReceiveCount`.
    pub dead_letter: Option<(String, u64)>,
}

#[derive(Debug, Clone)]
pub struct EventSourceMapping {
    pub logical_id: String,
    pub function: String,
    /// The logical id of the source (an SQS queue here).
    pub source: String,
    pub batch_size: u64,
    pub batching_window_secs: u64,
    pub report_batch_item_failures: bool,
    pub maximum_concurrency: Option<u64>,
    pub enabled: bool,
}

#[derive(Debug, Clone)]
pub struct Schedule {
    pub logical_id: String,
    pub expression: String,
    /// The logical ids of the functions it targets.
    pub targets: Vec<String>,
    pub enabled: bool,
}

fn number(value: &serde_json::Value) -> Option<u64> {
    text(value).and_then(|t| t.parse().ok())
}

impl Stack {
    pub fn functions(&self, ids: &PhysicalIds) -> Result<Vec<Function>, TemplateError> {
        let mut functions = Vec::new();
        for resource in self.of_type("AWS::Lambda::Function") {
            let id = &resource.logical_id;
            let properties = self.properties(ids, id)?;
            let binary = resource.metadata["BuildProperties"]["Binary"]
                .as_str()
                .ok_or_else(|| TemplateError::model(id, "no Metadata.BuildProperties.Binary"))?;
            let mut environment = BTreeMap::new();
            for (name, value) in properties["Environment"]["Variables"]
                .as_object()
                .into_iter()
                .flatten()
            {
                let value = text(value)
                    .ok_or_else(|| TemplateError::model(id, format!("{name} is not text")))?;
                environment.insert(name.clone(), value);
            }
            let role =
                text(&properties["Role"]).and_then(|arn| ids.logical_id_of(&arn).map(String::from));
            functions.push(Function {
                logical_id: id.clone(),
                binary: binary.to_string(),
                environment,
                memory_mb: number(&properties["MemorySize"]).unwrap_or(DEFAULT_MEMORY_MB),
                timeout_secs: number(&properties["Timeout"]).unwrap_or(DEFAULT_TIMEOUT_SECS),
                role,
                tracing: text(&properties["TracingConfig"]["Mode"]),
                description: text(&properties["Description"]),
                max_concurrency: number(
                    &properties["CapacityProviderConfig"]
                        ["LambdaManagedInstancesCapacityProviderConfig"]
                        ["PerExecutionEnvironmentMaxConcurrency"],
                ),
                logging: Logging::from_property(&properties["LoggingConfig"]),
            });
        }
        Ok(functions)
    }

    /// Every Function URL of the stack.
    pub fn function_urls(&self, ids: &PhysicalIds) -> Result<Vec<FunctionUrl>, TemplateError> {
        let mut urls = Vec::new();
        for resource in self.of_type("AWS::Lambda::Url") {
            let properties = self.properties(ids, &resource.logical_id)?;
            let function = text(&properties["TargetFunctionArn"])
                .and_then(|arn| ids.logical_id_of(&arn).map(String::from));
            urls.push(FunctionUrl {
                logical_id: resource.logical_id.clone(),
                function,
                auth_type: text(&properties["AuthType"]).unwrap_or_default(),
                streaming: text(&properties["InvokeMode"]).as_deref() == Some("RESPONSE_STREAM"),
                properties,
            });
        }
        Ok(urls)
    }

    pub fn queues(&self, ids: &PhysicalIds) -> Result<Vec<Queue>, TemplateError> {
        let mut queues = Vec::new();
        for resource in self.of_type("AWS::SQS::Queue") {
            let properties = self.properties(ids, &resource.logical_id)?;
            let redrive = &properties["RedrivePolicy"];
            let dead_letter = text(&redrive["deadLetterTargetArn"]).map(|arn| {
                let logical = ids.logical_id_of(&arn).map(String::from).unwrap_or(arn);
                (logical, number(&redrive["maxReceiveCount"]).unwrap_or(0))
            });
            queues.push(Queue {
                logical_id: resource.logical_id.clone(),
                // SQS's defaults: 30 s visibility, 4 days' retention.
                visibility_secs: number(&properties["VisibilityTimeout"]).unwrap_or(30),
                retention_secs: number(&properties["MessageRetentionPeriod"]).unwrap_or(345_600),
                dead_letter,
            });
        }
        Ok(queues)
    }

    pub fn event_source_mappings(
        &self,
        ids: &PhysicalIds,
    ) -> Result<Vec<EventSourceMapping>, TemplateError> {
        let mut mappings = Vec::new();
        for resource in self.of_type("AWS::Lambda::EventSourceMapping") {
            let id = &resource.logical_id;
            let properties = self.properties(ids, id)?;
            let function = text(&properties["FunctionName"]).unwrap_or_default();
            let function = ids
                .logical_id_of(&function)
                .map(String::from)
                .unwrap_or(function);
            let source = text(&properties["EventSourceArn"]).unwrap_or_default();
            let source = ids
                .logical_id_of(&source)
                .map(String::from)
                .unwrap_or(source);
            let response_types = properties["FunctionResponseTypes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            mappings.push(EventSourceMapping {
                logical_id: id.clone(),
                function,
                source,
                // Lambda's default batch size for SQS.
                batch_size: number(&properties["BatchSize"]).unwrap_or(10),
                batching_window_secs: number(&properties["MaximumBatchingWindowInSeconds"])
                    .unwrap_or(0),
                report_batch_item_failures: response_types
                    .iter()
                    .any(|t| t == "ReportBatchItemFailures"),
                maximum_concurrency: number(&properties["ScalingConfig"]["MaximumConcurrency"]),
                enabled: properties["Enabled"].as_bool().unwrap_or(true),
            });
        }
        Ok(mappings)
    }

    pub fn schedules(&self, ids: &PhysicalIds) -> Result<Vec<Schedule>, TemplateError> {
        let mut schedules = Vec::new();
        for resource in self.of_type("AWS::Events::Rule") {
            let properties = self.properties(ids, &resource.logical_id)?;
            let Some(expression) = text(&properties["ScheduleExpression"]) else {
                continue;
            };
            let targets = properties["Targets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|target| text(&target["Arn"]))
                .map(|arn| ids.logical_id_of(&arn).map(String::from).unwrap_or(arn))
                .collect();
            schedules.push(Schedule {
                logical_id: resource.logical_id.clone(),
                expression,
                targets,
                enabled: properties["State"].as_str().is_none_or(|s| s == "ENABLED"),
            });
        }
        Ok(schedules)
    }
}

/// The period of an EventBridge `rate(...)` expression, if it is one (and well formed).
pub fn rate_period_secs(expression: &str) -> Option<u64> {
    let inner = expression.strip_prefix("rate(")?.strip_suffix(')')?;
    let (value, unit) = inner.split_once(' ')?;
    let value: u64 = value.parse().ok().filter(|v| *v > 0)?;
    let seconds = match (value, unit) {
        (1, "minute") => 60,
        (1, "hour") => 3_600,
        (1, "day") => 86_400,
        (v, "minutes") if v > 1 => v * 60,
        (v, "hours") if v > 1 => v * 3_600,
        (v, "days") if v > 1 => v * 86_400,
        _ => return None,
    };
    Some(seconds)
}
