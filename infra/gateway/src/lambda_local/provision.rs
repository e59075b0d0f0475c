//! Creates the template's tables, queues and secrets on the emulator, from their resolved
//! properties, in the order CloudFormation would (a queue after its dead-letter queue); records
//! their real names, URLs and ARNs so every `Ref` and `Fn::GetAtt` resolves to them.
//!
//! A key schema, index, redrive policy or visibility timeout that is wrong in the template is
//! wrong here too. What the emulator does not model (point-in-time recovery, encryption at rest,
//! deletion protection) is read and left out.

use aws_config::SdkConfig;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;
use relevo_template::{PhysicalIds, Stack, TemplateError, graph};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("{resource}: the emulator refused it: {message}")]
    Emulator { resource: String, message: String },
    #[error("{resource}: {message}")]
    Property { resource: String, message: String },
    #[error("the template's resources depend on each other in a cycle")]
    Cycle,
}

fn refused(resource: &str, error: impl std::fmt::Display) -> ProvisionError {
    ProvisionError::Emulator {
        resource: resource.to_string(),
        message: error.to_string(),
    }
}

fn bad(resource: &str, message: impl Into<String>) -> ProvisionError {
    ProvisionError::Property {
        resource: resource.to_string(),
        message: message.into(),
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Creates what the stack stores data in; `suffix` keeps the names of this run apart from other
/// runs on the same emulator.
pub async fn provision(
    stack: &Stack,
    config: &SdkConfig,
    suffix: &str,
) -> Result<PhysicalIds, ProvisionError> {
    let mut ids = PhysicalIds::synthetic(stack);
    let order = graph::creation_order(&stack.resources).ok_or(ProvisionError::Cycle)?;
    let dynamodb = aws_sdk_dynamodb::Client::new(config);
    let sqs = aws_sdk_sqs::Client::new(config);
    let secrets = aws_sdk_secretsmanager::Client::new(config);
    for logical_id in order {
        let kind = stack.resources[&logical_id].kind.as_str();
        let name = format!("{}-{logical_id}-{suffix}", stack.name);
        match kind {
            "AWS::DynamoDB::Table" => {
                let properties = stack.properties(&ids, &logical_id)?;
                let arn = create_table(&dynamodb, &logical_id, &name, &properties).await?;
                ids.set(&logical_id, &name, &[("Arn", &arn)]);
            }
            "AWS::SQS::Queue" => {
                let properties = stack.properties(&ids, &logical_id)?;
                let (url, arn) = create_queue(&sqs, &logical_id, &name, &properties).await?;
                ids.set(
                    &logical_id,
                    &url,
                    &[("Arn", &arn), ("QueueName", &name), ("QueueUrl", &url)],
                );
            }
            "AWS::SecretsManager::Secret" => {
                let properties = stack.properties(&ids, &logical_id)?;
                let value = secret_value(&logical_id, &properties)?;
                let created = secrets
                    .create_secret()
                    .name(&name)
                    .secret_string(value)
                    .send()
                    .await
                    .map_err(|e| refused(&logical_id, e.into_service_error()))?;
                let arn = created
                    .arn()
                    .ok_or_else(|| refused(&logical_id, "no ARN"))?
                    .to_string();
                ids.set(&logical_id, &arn, &[("Id", &arn)]);
            }
            _ => {}
        }
    }
    Ok(ids)
}

async fn create_table(
    client: &aws_sdk_dynamodb::Client,
    id: &str,
    name: &str,
    properties: &Value,
) -> Result<String, ProvisionError> {
    let key_schema = |value: &Value| -> Result<Vec<KeySchemaElement>, ProvisionError> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .map(|key| {
                KeySchemaElement::builder()
                    .attribute_name(text(&key["AttributeName"]).unwrap_or_default())
                    .key_type(KeyType::from(
                        text(&key["KeyType"]).unwrap_or_default().as_str(),
                    ))
                    .build()
                    .map_err(|e| bad(id, e.to_string()))
            })
            .collect()
    };
    let mut request = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::from(
            text(&properties["BillingMode"])
                .unwrap_or("PROVISIONED".into())
                .as_str(),
        ))
        .set_key_schema(Some(key_schema(&properties["KeySchema"])?));
    for attribute in properties["AttributeDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        request = request.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(text(&attribute["AttributeName"]).unwrap_or_default())
                .attribute_type(ScalarAttributeType::from(
                    text(&attribute["AttributeType"])
                        .unwrap_or_default()
                        .as_str(),
                ))
                .build()
                .map_err(|e| bad(id, e.to_string()))?,
        );
    }
    for index in properties["GlobalSecondaryIndexes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let projection = &index["Projection"];
        let projection = Projection::builder()
            .projection_type(ProjectionType::from(
                text(&projection["ProjectionType"])
                    .unwrap_or("ALL".into())
                    .as_str(),
            ))
            .set_non_key_attributes(
                projection["NonKeyAttributes"]
                    .as_array()
                    .map(|names| names.iter().filter_map(text).collect()),
            )
            .build();
        request = request.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(text(&index["IndexName"]).unwrap_or_default())
                .set_key_schema(Some(key_schema(&index["KeySchema"])?))
                .projection(projection)
                .build()
                .map_err(|e| bad(id, e.to_string()))?,
        );
    }
    let created = request
        .send()
        .await
        .map_err(|e| refused(id, e.into_service_error()))?;
    let arn = created
        .table_description()
        .and_then(|d| d.table_arn())
        .ok_or_else(|| refused(id, "no table ARN"))?
        .to_string();
    let ttl = &properties["TimeToLiveSpecification"];
    if ttl["Enabled"].as_bool() == Some(true) {
        let specification = TimeToLiveSpecification::builder()
            .attribute_name(text(&ttl["AttributeName"]).unwrap_or_default())
            .enabled(true)
            .build()
            .map_err(|e| bad(id, e.to_string()))?;
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(specification)
            .send()
            .await
            .map_err(|e| refused(id, e.into_service_error()))?;
    }
    Ok(arn)
}

async fn create_queue(
    client: &aws_sdk_sqs::Client,
    id: &str,
    name: &str,
    properties: &Value,
) -> Result<(String, String), ProvisionError> {
    let mut request = client.create_queue().queue_name(name);
    for (property, attribute) in [
        ("VisibilityTimeout", QueueAttributeName::VisibilityTimeout),
        (
            "MessageRetentionPeriod",
            QueueAttributeName::MessageRetentionPeriod,
        ),
        ("DelaySeconds", QueueAttributeName::DelaySeconds),
        ("MaximumMessageSize", QueueAttributeName::MaximumMessageSize),
        (
            "ReceiveMessageWaitTimeSeconds",
            QueueAttributeName::ReceiveMessageWaitTimeSeconds,
        ),
    ] {
        if let Some(value) = text(&properties[property]) {
            request = request.attributes(attribute, value);
        }
    }
    let redrive = &properties["RedrivePolicy"];
    if redrive.is_object() {
        let max: u64 = text(&redrive["maxReceiveCount"])
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| bad(id, "maxReceiveCount"))?;
        let policy = serde_json::json!({ "deadLetterTargetArn": redrive["deadLetterTargetArn"], "maxReceiveCount": max });
        request = request.attributes(QueueAttributeName::RedrivePolicy, policy.to_string());
    }
    let url = request
        .send()
        .await
        .map_err(|e| refused(id, e.into_service_error()))?
        .queue_url
        .ok_or_else(|| refused(id, "no queue URL"))?;
    let arn = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| refused(id, e.into_service_error()))?
        .attributes
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .ok_or_else(|| refused(id, "no queue ARN"))?;
    Ok((url, arn))
}

/// What `GenerateSecretString` makes: `SecretStringTemplate` with `GenerateStringKey` set to a
/// random `PasswordLength`-character string (letters and digits when `ExcludePunctuation`).
fn secret_value(id: &str, properties: &Value) -> Result<String, ProvisionError> {
    if let Some(value) = text(&properties["SecretString"]) {
        return Ok(value);
    }
    let generate = &properties["GenerateSecretString"];
    let length: usize = text(&generate["PasswordLength"])
        .and_then(|l| l.parse().ok())
        .unwrap_or(32);
    let mut alphabet: Vec<u8> = (b'a'..=b'z')
        .chain(b'A'..=b'Z')
        .chain(b'0'..=b'9')
        .collect();
    if generate["ExcludePunctuation"].as_bool() != Some(true) {
        alphabet.extend_from_slice(b"!#$%&()*+,-./:;<=>?@[]^_`{|}~");
    }
    let excluded = text(&generate["ExcludeCharacters"]).unwrap_or_default();
    alphabet.retain(|c| !excluded.as_bytes().contains(c));
    let mut random = vec![0u8; length];
    getrandom::fill(&mut random).map_err(|e| bad(id, e.to_string()))?;
    let password: String = random
        .iter()
        .map(|b| char::from(alphabet[usize::from(*b) % alphabet.len()]))
        .collect();
    match (
        text(&generate["SecretStringTemplate"]),
        text(&generate["GenerateStringKey"]),
    ) {
        (Some(template), Some(key)) => {
            let mut value: Value = serde_json::from_str(&template)
                .map_err(|e| bad(id, format!("SecretStringTemplate: {e}")))?;
            value[key] = Value::String(password);
            Ok(value.to_string())
        }
        _ => Ok(password),
    }
}
