//! The offline deploy check: what CloudFormation, API Gateway, Lambda, SQS, DynamoDB, IAM,
//! EventBridge and CloudWatch would refuse in the translated template, and the production
//! pieces this project requires, each rule with the document its limit comes from.
//!
//! Rules run once on the template (the dependency graph, CloudFormation's quotas) and once per
//! topology (a parameter set such as "front door A: custom domain" or "front door B: HTTP API"),
//! on the stack those parameters make: conditions evaluated, intrinsic functions resolved with
//! the physical ids CloudFormation would generate.
//!
//! What stays unverified without an account is said in `shared/relevo/docs/deploy-check.md`.

mod graph_rules;
mod iam_rules;
mod lambda_rules;
mod managed_instances_rules;
mod metrics_rules;
mod operations;
mod queue_rules;
mod routing_rules;
mod url_rules;

use std::collections::BTreeMap;

use crate::physical::PhysicalIds;
use crate::stack::{Stack, Template};

/// One rule: its id, what it refuses, and the document the limit comes from.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    pub refuses: &'static str,
    pub source: &'static str,
}

/// One thing a deploy would trip on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub topology: String,
    pub resource: String,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = RULES
            .iter()
            .find(|r| r.id == self.rule)
            .map_or("", |r| r.source);
        write!(
            f,
            "[{}] {} ({}): {} — {}",
            self.rule, self.resource, self.topology, self.message, source
        )
    }
}

/// A named parameter set to evaluate the template with.
#[derive(Debug, Clone)]
pub struct Topology {
    pub name: String,
    pub parameters: BTreeMap<String, String>,
}

impl Topology {
    /// `NAME:KEY=VALUE,KEY=VALUE` (values may not contain commas).
    pub fn parse(spec: &str) -> Result<Topology, String> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let mut parameters = BTreeMap::new();
        for pair in rest.split(',').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?} is not KEY=VALUE"))?;
            parameters.insert(key.to_string(), value.to_string());
        }
        Ok(Topology {
            name: name.to_string(),
            parameters,
        })
    }
}

/// The two front doors a deployment chooses between, with example values for the parameters
/// that have no default: A, a custom domain with routing rules and a Route 53 zone; B, the HTTP
/// API (its audience is the URL clients use).
pub fn front_doors() -> Vec<Topology> {
    let spec = [
        (
            "front-door-a",
            vec![
                ("DomainName", "mcp.example.com"),
                (
                    "CertificateArn",
                    "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-0123456789ab",
                ),
                ("HostedZoneId", "Z0123456789ABCDEFGHIJ"),
                ("AuthIssuer", "https://auth.example.com"),
                ("AuthAudience", "https://mcp.example.com/mcp"),
            ],
        ),
        (
            "front-door-b",
            vec![
                ("AuthIssuer", "https://auth.example.com"),
                (
                    "AuthAudience",
                    "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/mcp",
                ),
            ],
        ),
        (
            // The same stack as B's (no domain: B and C both), its audience C's URL.
            "front-door-c",
            vec![
                ("AuthIssuer", "https://auth.example.com"),
                (
                    "AuthAudience",
                    "https://abcdefghijklmnopqrstuvwxyz234567.lambda-url.us-east-1.on.aws/mcp",
                ),
            ],
        ),
    ];
    spec.into_iter()
        .map(|(name, pairs)| Topology {
            name: name.to_string(),
            parameters: pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
        .collect()
}

/// Example values for the Managed Instances parameters (no defaults: a deploy names its own).
const MANAGED_INSTANCES_EXAMPLES: [(&str, &str); 2] = [
    (
        "CapacityProviderSubnetIds",
        "subnet-0a1b2c3d4e5f60718,subnet-0b1c2d3e4f5a60719",
    ),
    ("CapacityProviderSecurityGroupIds", "sg-0a1b2c3d4e5f60718"),
];

/// The front doors `template` has (front door A's parameters exist only in a template with that
/// door), each with example values for the other parameters it declares without a default
/// (the Managed Instances subnets and security groups).
pub fn topologies_for(template: &Template) -> Vec<Topology> {
    let parameters = &template.json()["Parameters"];
    let has_domain = parameters.get("DomainName").is_some();
    front_doors()
        .into_iter()
        .filter(|topology| has_domain || !topology.parameters.contains_key("DomainName"))
        .map(|mut topology| {
            for (name, value) in MANAGED_INSTANCES_EXAMPLES {
                if parameters.get(name).is_some() {
                    topology.parameters.insert(name.into(), value.into());
                }
            }
            topology
        })
        .collect()
}

/// What a rule sees: one stack, and the physical ids it resolves with.
pub(crate) struct Context<'a> {
    pub stack: &'a Stack,
    pub ids: &'a PhysicalIds,
    pub topology: &'a str,
    pub findings: Vec<Finding>,
}

impl Context<'_> {
    pub(crate) fn refuse(
        &mut self,
        rule: &'static str,
        resource: &str,
        message: impl Into<String>,
    ) {
        debug_assert!(
            RULES.iter().any(|r| r.id == rule),
            "rule {rule} is not in RULES"
        );
        self.findings.push(Finding {
            rule,
            topology: self.topology.to_string(),
            resource: resource.to_string(),
            message: message.into(),
        });
    }
}

/// Every rule of the check.
pub const RULES: &[Rule] = &[
    Rule {
        id: "cycle",
        refuses: "circular dependencies between resources (Ref, Fn::GetAtt, Fn::Sub, DependsOn), in any branch",
        source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/troubleshooting.html#troubleshooting-errors-dependency-error",
    },
    Rule {
        id: "references",
        refuses: "a Ref or Fn::GetAtt (in a resource or an output) to a resource the stack does not create, or one that does not resolve",
        source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/conditions-section-structure.html",
    },
    Rule {
        id: "cfn-quotas",
        refuses: "more than 500 resources, 200 parameters or 200 outputs; a logical id that is not alphanumeric or over 255 characters; a template over 1 MB",
        source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html",
    },
    Rule {
        id: "routing-glob",
        refuses: "a header name or ValueGlob outside a-zA-Z0-9 *?-!#$%&'.^_`|~, a name of 40 or more or a glob of 128 or more characters, a wildcard that is not a prefix, suffix or infix match",
        source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-apigatewayv2-routingrule-matchheadervalue.html",
    },
    Rule {
        id: "routing-conditions",
        refuses: "more than two header conditions or one base path condition in a rule, or an unknown condition",
        source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-routing-rules.html",
    },
    Rule {
        id: "routing-priority",
        refuses: "a priority outside 1–1,000,000, or two rules of a domain with one priority",
        source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-routing-rules.html",
    },
    Rule {
        id: "routing-quota",
        refuses: "more than 50 routing rules on one domain name (the default quota)",
        source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-execution-service-limits-table.html",
    },
    Rule {
        id: "routing-target",
        refuses: "a rule whose action is not one InvokeApi of a REST API stage this stack creates, or that does not DependsOn that stage",
        source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-routing-rules.html",
    },
    Rule {
        id: "routing-methods",
        refuses: "rules under which a 2026-07-28 method's first match is not its own function, or a request without Mcp-Method or of an older protocol version does not reach the catch-all",
        source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-routing-rules-examples.html",
    },
    Rule {
        id: "integration-timeout",
        refuses: "a function timeout beyond its integration's (REST buffered 29 s, REST streamed 15 min, HTTP API 30 s), or an integration timeout beyond those",
        source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-execution-service-limits-table.html",
    },
    Rule {
        id: "streaming",
        refuses: "a streaming function behind a buffered integration or the reverse, a streamed integration without the response-streaming URI, a stream that can idle 5 minutes or outlive its function",
        source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode.html",
    },
    Rule {
        id: "function-url-permissions",
        refuses: "an AuthType NONE Function URL without both public grants: lambda:InvokeFunctionUrl (FunctionUrlAuthType NONE) and, since October 2025, lambda:InvokeFunction with InvokedViaFunctionUrl true",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html",
    },
    Rule {
        id: "function-url-streaming",
        refuses: "a Function URL whose InvokeMode (BUFFERED by default) does not match how its function answers (RELEVO_RESPONSE_STREAMING)",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/config-rs-invoke-furls.html",
    },
    Rule {
        id: "function-url-cors",
        refuses: "a Function URL whose CORS allows credentials from any origin",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/urls-configuration.html",
    },
    Rule {
        id: "function-url-concurrency",
        refuses: "a public (AuthType NONE) Function URL whose function has no reserved concurrency (nothing else throttles it)",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html",
    },
    Rule {
        id: "lambda-limits",
        refuses: "a timeout outside 1–900 s, memory outside 128–10,240 MB, a description over 256 characters",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
    },
    Rule {
        id: "lambda-environment",
        refuses: "environment variables over 4 KB in total, a reserved variable, a name that is not [a-zA-Z][a-zA-Z0-9_]*",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html",
    },
    Rule {
        id: "lambda-logging",
        refuses: "a LogFormat other than Text or JSON, log levels without LogFormat JSON or outside Lambda's lists, an ApplicationLogLevel above INFO (Lambda would drop the INFO EMF lines the alarms read)",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html",
    },
    Rule {
        id: "managed-instances",
        refuses: "a function on Managed Instances whose CapacityProviderConfig names no capacity provider of this stack, with memory below 2,048 MB, concurrency outside 1–1,600 or memory per vCPU outside 2–8 GiB, a minimum of execution environments above its maximum, an architecture its provider's instances lack, its own VpcConfig, or AWS_LAMBDA_MAX_CONCURRENCY set by the template",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-best-practices.html",
    },
    Rule {
        id: "capacity-provider",
        refuses: "a capacity provider without subnets, or whose operator role is not a role of this stack that lambda.amazonaws.com may assume and that carries AWSLambdaManagedEC2ResourceOperator",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-operator-role.html",
    },
    Rule {
        id: "sqs-visibility",
        refuses: "a queue's visibility timeout below six times the timeout of the function it feeds",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html",
    },
    Rule {
        id: "sqs-limits",
        refuses: "visibility outside 0–43,200 s, retention outside 60–1,209,600 s, maxReceiveCount outside 1–1,000 (below 5 for a Lambda source), a dead-letter queue that keeps messages shorter than its source",
        source: "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html",
    },
    Rule {
        id: "event-source",
        refuses: "an SQS mapping with BatchSize outside 1–10,000 (over 10 without a batching window), MaximumConcurrency outside 2–1,000, or without ReportBatchItemFailures (the worker reports partial failures)",
        source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-lambda-eventsourcemapping.html",
    },
    Rule {
        id: "schedule",
        refuses: "a schedule expression that is not rate(1 minute|hour|day), rate(N minutes|hours|days) with N > 1, or a six-field cron(...)",
        source: "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html",
    },
    Rule {
        id: "logs",
        refuses: "a log retention CloudWatch does not offer, a function without its /aws/lambda log group with retention",
        source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-logs-loggroup.html",
    },
    Rule {
        id: "alarms",
        refuses: "an alarm period other than 10, 30 or a multiple of 60 s, more than 10 metrics in one alarm, or a function, API or dead-letter queue without its alarm",
        source: "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html",
    },
    Rule {
        id: "metrics",
        refuses: "a function that publishes no EMF metrics, an alarm or dashboard metric in a custom namespace no function publishes to or that the code never writes, a dashboard body that is not a JSON object with widgets",
        source: "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutDashboard.html",
    },
    Rule {
        id: "tracing",
        refuses: "a function without active X-Ray tracing, a REST stage without TracingEnabled",
        source: "https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html",
    },
    Rule {
        id: "stage-settings",
        refuses: "an API stage without throttling or access logs, REST access logs without the account's CloudWatch role (AWS::ApiGateway::Account) in the stack",
        source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html",
    },
    Rule {
        id: "execute-api-endpoint",
        refuses: "a REST API behind the custom domain whose default execute-api endpoint stays enabled",
        source: "https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-disable-default-endpoint.html",
    },
    Rule {
        id: "dynamodb",
        refuses: "AttributeDefinitions that are not exactly the key attributes, more than 20 global secondary indexes, a table without DeletionPolicy Retain and deletion protection",
        source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-dynamodb-table.html",
    },
    Rule {
        id: "retain",
        refuses: "a secret (the requestState keys) without DeletionPolicy and UpdateReplacePolicy Retain",
        source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html",
    },
    Rule {
        id: "iam-limits",
        refuses: "inline policies over 10,240 characters per role, more than 10 managed policies per role, a managed policy over 6,144 characters",
        source: "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html",
    },
    Rule {
        id: "least-privilege",
        refuses: "a wildcard action or resource in a policy of this template, an AWS managed policy other than the logs and X-Ray ones (and AWSLambdaManagedEC2ResourceOperator on a capacity provider's operator role)",
        source: "https://docs.aws.amazon.com/IAM/latest/UserGuide/best-practices.html#grant-least-privilege",
    },
];

/// Runs every rule: the template-wide ones once, the others for each topology.
pub fn check(template: &Template, topologies: &[Topology]) -> Vec<Finding> {
    let mut findings = graph_rules::template_rules(template);
    for topology in topologies {
        let stack = match template.instantiate("relevo", &topology.parameters) {
            Ok(stack) => stack,
            Err(error) => {
                findings.push(Finding {
                    rule: "references",
                    topology: topology.name.clone(),
                    resource: "Parameters".into(),
                    message: error.to_string(),
                });
                continue;
            }
        };
        let ids = PhysicalIds::synthetic(&stack);
        let mut context = Context {
            stack: &stack,
            ids: &ids,
            topology: &topology.name,
            findings: Vec::new(),
        };
        graph_rules::stack_rules(&mut context);
        routing_rules::run(&mut context);
        lambda_rules::run(&mut context);
        url_rules::run(&mut context);
        queue_rules::run(&mut context);
        operations::run(&mut context);
        metrics_rules::run(&mut context);
        managed_instances_rules::run(&mut context);
        iam_rules::run(&mut context);
        findings.extend(context.findings);
    }
    findings.dedup();
    findings
}
