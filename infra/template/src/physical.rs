//! Physical ids: what `Ref` and `Fn::GetAtt` of a resource return.
//!
//! [`PhysicalIds::synthetic`] names every resource the way CloudFormation names resources it
//! creates without an explicit name (`<stack>-<logicalId>-<RANDOM>`, truncated to the service's
//! limit), with ARNs in [`REGION`] and [`ACCOUNT_ID`]; the deploy check measures with these.
//! Local Lambda mode replaces the entries of what it really creates on the emulator (tables,
//! queues, secrets) with the emulator's names, URLs and ARNs.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::stack::{Resource, Stack};

pub const REGION: &str = "us-east-1";
/// The account moto answers for, so the ARNs the emulator returns are those policies name.
pub const ACCOUNT_ID: &str = "123456789012";
pub const PARTITION: &str = "aws";
pub const URL_SUFFIX: &str = "amazonaws.com";

#[derive(Debug, Clone, Default)]
struct Physical {
    reference: String,
    attributes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default)]
pub struct PhysicalIds {
    entries: BTreeMap<String, Physical>,
}

impl PhysicalIds {
    /// A physical id for every resource the template declares, as CloudFormation would make it.
    pub fn synthetic(stack: &Stack) -> PhysicalIds {
        let mut ids = PhysicalIds::default();
        for resource in stack.declared.values() {
            let (reference, attributes) = synthesize(&stack.name, resource);
            ids.entries.insert(
                resource.logical_id.clone(),
                Physical {
                    reference,
                    attributes,
                },
            );
        }
        ids
    }

    /// Records what the emulator created for `logical_id`.
    pub fn set(&mut self, logical_id: &str, reference: &str, attributes: &[(&str, &str)]) {
        let entry = self.entries.entry(logical_id.to_string()).or_default();
        entry.reference = reference.to_string();
        for (name, value) in attributes {
            entry.attributes.insert(name.to_string(), value.to_string());
        }
    }

    pub fn reference(&self, logical_id: &str) -> Option<String> {
        self.entries.get(logical_id).map(|p| p.reference.clone())
    }

    pub fn attribute(&self, logical_id: &str, attribute: &str) -> Option<String> {
        self.entries
            .get(logical_id)?
            .attributes
            .get(attribute)
            .cloned()
    }

    /// The resource whose `Ref` or `Arn` is `value`, if any (e.g. the function an integration
    /// URI or an event source mapping names).
    pub fn logical_id_of(&self, value: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(_, p)| {
                p.reference == value || p.attributes.get("Arn").is_some_and(|arn| arn == value)
            })
            .map(|(logical, _)| logical.as_str())
    }
}

/// A stable stand-in for CloudFormation's random suffix.
fn suffix(logical_id: &str) -> String {
    const DIGITS: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in logical_id.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    (0..12)
        .map(|_| {
            let digit = DIGITS[(hash % 36) as usize];
            hash /= 36;
            char::from(digit)
        })
        .collect()
}

/// `<stack>-<logicalId>-<SUFFIX>`, cut to `max` characters as CloudFormation cuts generated names.
fn generated_name(stack: &str, logical_id: &str, max: usize) -> String {
    let suffix = suffix(logical_id);
    let room = max.saturating_sub(suffix.len() + 2);
    let mut head = format!("{stack}-{logical_id}");
    head.truncate(room);
    format!("{head}-{suffix}")
}

fn explicit_name(resource: &Resource, property: &str) -> Option<String> {
    resource.property(property).as_str().map(String::from)
}

fn synthesize(stack: &str, resource: &Resource) -> (String, BTreeMap<String, String>) {
    let id = resource.logical_id.as_str();
    let name = |property: &str, max: usize| {
        explicit_name(resource, property).unwrap_or_else(|| generated_name(stack, id, max))
    };
    let short_id = suffix(id).to_ascii_lowercase()[..10].to_string();
    let attributes =
        |pairs: Vec<(&str, String)>| pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    match resource.kind.as_str() {
        "AWS::DynamoDB::Table" => {
            let table = name("TableName", 255);
            let arn = format!("arn:aws:dynamodb:{REGION}:{ACCOUNT_ID}:table/{table}");
            let stream = format!("{arn}/stream/2026-01-01T00:00:00.000");
            (table, attributes(vec![("Arn", arn), ("StreamArn", stream)]))
        }
        "AWS::SQS::Queue" => {
            let queue = name("QueueName", 80);
            let url = format!("https://sqs.{REGION}.{URL_SUFFIX}/{ACCOUNT_ID}/{queue}");
            let arn = format!("arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{queue}");
            (
                url.clone(),
                attributes(vec![("Arn", arn), ("QueueName", queue), ("QueueUrl", url)]),
            )
        }
        "AWS::SecretsManager::Secret" => {
            let secret =
                explicit_name(resource, "Name").unwrap_or_else(|| format!("{id}-{}", suffix(id)));
            let arn =
                format!("arn:aws:secretsmanager:{REGION}:{ACCOUNT_ID}:secret:{secret}-AbCdEf");
            (arn.clone(), attributes(vec![("Id", arn)]))
        }
        "AWS::Lambda::Function" => {
            let function = name("FunctionName", 64);
            let arn = format!("arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{function}");
            (function, attributes(vec![("Arn", arn)]))
        }
        "AWS::Lambda::CapacityProvider" => {
            let provider = name("CapacityProviderName", 140);
            let arn = format!("arn:aws:lambda:{REGION}:{ACCOUNT_ID}:capacity-provider:{provider}");
            (provider, attributes(vec![("Arn", arn)]))
        }
        "AWS::IAM::Role" => {
            let role = name("RoleName", 64);
            let arn = format!("arn:aws:iam::{ACCOUNT_ID}:role/{role}");
            (
                role,
                attributes(vec![
                    ("Arn", arn),
                    ("RoleId", format!("AROA{}", suffix(id))),
                ]),
            )
        }
        "AWS::IAM::ManagedPolicy" => {
            let arn = format!(
                "arn:aws:iam::{ACCOUNT_ID}:policy/{}",
                name("ManagedPolicyName", 128)
            );
            (arn.clone(), attributes(vec![("PolicyArn", arn)]))
        }
        "AWS::ApiGateway::RestApi" => (
            short_id.clone(),
            attributes(vec![("RootResourceId", format!("{short_id}r"))]),
        ),
        "AWS::ApiGateway::Stage" | "AWS::ApiGatewayV2::Stage" => (
            explicit_name(resource, "StageName").unwrap_or_else(|| id.to_string()),
            BTreeMap::new(),
        ),
        "AWS::ApiGatewayV2::Api" => {
            let endpoint = format!("https://{short_id}.execute-api.{REGION}.{URL_SUFFIX}");
            (
                short_id,
                attributes(vec![("ApiEndpoint", endpoint), ("ApiId", suffix(id))]),
            )
        }
        "AWS::ApiGatewayV2::DomainName" => {
            let domain = explicit_name(resource, "DomainName")
                .unwrap_or_else(|| format!("{short_id}.example.com"));
            attributes_of_domain(domain, &short_id)
        }
        "AWS::Lambda::Url" => {
            // `https://<url-id>.lambda-url.<region>.on.aws/`, the id 32 lower-case letters and
            // digits; `Ref` gives the function's ARN
            // (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-lambda-url.html).
            let url_id: String = format!("{short_id}{}", suffix(id).to_ascii_lowercase())
                .chars()
                .cycle()
                .take(32)
                .collect();
            let url = format!("https://{url_id}.lambda-url.{REGION}.on.aws/");
            let arn = format!("arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{id}");
            (
                arn.clone(),
                attributes(vec![("FunctionArn", arn), ("FunctionUrl", url)]),
            )
        }
        "AWS::Logs::LogGroup" => {
            let group = name("LogGroupName", 512);
            let arn = format!("arn:aws:logs:{REGION}:{ACCOUNT_ID}:log-group:{group}:*");
            (group, attributes(vec![("Arn", arn)]))
        }
        "AWS::Events::Rule" => {
            let rule = name("Name", 64);
            let arn = format!("arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{rule}");
            (rule, attributes(vec![("Arn", arn)]))
        }
        kind => {
            let service = kind
                .split("::")
                .nth(1)
                .unwrap_or("unknown")
                .to_ascii_lowercase();
            let arn = format!("arn:aws:{service}:{REGION}:{ACCOUNT_ID}:{id}");
            (
                generated_name(stack, id, 128),
                attributes(vec![("Arn", arn)]),
            )
        }
    }
}

fn attributes_of_domain(domain: String, short_id: &str) -> (String, BTreeMap<String, String>) {
    let pairs = [
        (
            "DomainNameArn",
            format!("arn:aws:apigateway:{REGION}::/domainnames/{domain}"),
        ),
        (
            "RegionalDomainName",
            format!("d-{short_id}.execute-api.{REGION}.{URL_SUFFIX}"),
        ),
        // API Gateway's regional hosted zone in us-east-1.
        ("RegionalHostedZoneId", "Z1UJRXOUMOOFQ8".to_string()),
        ("DomainNameId", short_id.to_string()),
    ];
    (
        domain,
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
    )
}

/// The value of a resolved property as text, whatever JSON scalar carried it.
pub(crate) fn text(value: &Value) -> Option<String> {
    crate::stack::scalar_text(value)
}
