//! Each function's execution policy, as the template grants it, and its evaluation.
//!
//! A function's permissions are those of its execution role: the role's inline `Policies`,
//! customer managed policies (`AWS::IAM::ManagedPolicy`) attached through `ManagedPolicyArns` or
//! the policy's own `Roles`, and `AWS::IAM::Policy` resources naming the role. AWS managed
//! policies (`arn:aws:iam::aws:policy/…`) have no document in the template; they are listed, and
//! the deploy check allows only those that grant nothing on the table, the queues or the secret
//! (logs and X-Ray), so leaving them out of the evaluation cannot hide a grant.
//!
//! Evaluation is iam-rs's (explicit deny wins, then allow, else implicit deny), on the actions
//! and resource ARNs each call names.

use serde_json::Value;

use crate::error::TemplateError;
use crate::physical::{PhysicalIds, text};
use crate::stack::Stack;

/// A policy document and where it comes from (for messages).
#[derive(Debug, Clone)]
pub struct PolicyDocument {
    pub source: String,
    pub document: Value,
}

#[derive(Debug, Clone)]
pub struct ExecutionPolicy {
    pub function: String,
    pub role: String,
    pub documents: Vec<PolicyDocument>,
    /// ARNs of AWS managed policies attached to the role.
    pub aws_managed: Vec<String>,
}

/// One `Allow` statement's actions and resources, for listing what is granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub source: String,
    pub actions: Vec<String>,
    pub resources: Vec<String>,
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().filter_map(text).collect(),
        other => text(other).into_iter().collect(),
    }
}

impl ExecutionPolicy {
    /// Every `Allow` statement.
    pub fn grants(&self) -> Vec<Grant> {
        let mut grants = Vec::new();
        for document in &self.documents {
            for statement in statements(&document.document) {
                if statement["Effect"] == "Allow" {
                    grants.push(Grant {
                        source: document.source.clone(),
                        actions: strings(&statement["Action"]),
                        resources: strings(&statement["Resource"]),
                    });
                }
            }
        }
        grants
    }

    /// An evaluator over every document of the policy.
    pub fn authorizer(&self) -> Result<Authorizer, TemplateError> {
        let mut policies = Vec::new();
        for document in &self.documents {
            let mut document = document.document.clone();
            // iam-rs wants the policy language version; CloudFormation's default is the current one.
            if document.get("Version").is_none()
                && let Some(object) = document.as_object_mut()
            {
                object.insert("Version".into(), Value::String("2012-10-17".into()));
            }
            let policy = iam_rs::IAMPolicy::from_json(&document.to_string()).map_err(|e| {
                TemplateError::model(
                    &self.role,
                    format!("policy {} does not parse: {e}", self.function),
                )
            })?;
            policies.push(policy);
        }
        Ok(Authorizer {
            evaluator: iam_rs::PolicyEvaluator::with_policies(policies),
            role: self.role.clone(),
        })
    }
}

fn statements(document: &Value) -> Vec<&Value> {
    match &document["Statement"] {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        one => vec![one],
    }
}

/// Decides calls for one execution role.
#[derive(Debug, Clone)]
pub struct Authorizer {
    evaluator: iam_rs::PolicyEvaluator,
    role: String,
}

impl Authorizer {
    /// Whether the role may call `action` (e.g. `dynamodb:PutItem`) on `resource` (an ARN).
    pub fn allows(&self, action: &str, resource: &str) -> bool {
        let Ok(arn) = iam_rs::Arn::parse(resource) else {
            return false;
        };
        let principal = iam_rs::Principal::Aws(iam_rs::PrincipalId::String(format!(
            "arn:aws:iam::{}:role/{}",
            crate::ACCOUNT_ID,
            self.role
        )));
        let request = iam_rs::IAMRequest::new(principal, action, arn);
        self.evaluator
            .evaluate(&request)
            .is_ok_and(|result| result.decision == iam_rs::Decision::Allow)
    }
}

impl Stack {
    /// The execution policy of every function, keyed by the function's logical id.
    pub fn execution_policies(
        &self,
        ids: &PhysicalIds,
    ) -> Result<Vec<ExecutionPolicy>, TemplateError> {
        let mut policies = Vec::new();
        for function in self.functions(ids)? {
            let Some(role) = function.role.clone() else {
                return Err(TemplateError::model(
                    &function.logical_id,
                    "its Role is not a role of this template",
                ));
            };
            let role_properties = self.properties(ids, &role)?;
            let mut documents = Vec::new();
            let mut aws_managed = Vec::new();
            for (index, inline) in role_properties["Policies"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let name = text(&inline["PolicyName"]).unwrap_or_else(|| format!("inline {index}"));
                documents.push(PolicyDocument {
                    source: format!("{role}/{name}"),
                    document: inline["PolicyDocument"].clone(),
                });
            }
            for arn in strings(&role_properties["ManagedPolicyArns"]) {
                match ids.logical_id_of(&arn) {
                    Some(logical)
                        if self
                            .resources
                            .get(logical)
                            .is_some_and(|r| r.kind == "AWS::IAM::ManagedPolicy") =>
                    {
                        let document = self.properties(ids, logical)?["PolicyDocument"].clone();
                        documents.push(PolicyDocument {
                            source: logical.to_string(),
                            document,
                        });
                    }
                    _ => aws_managed.push(arn),
                }
            }
            let role_name = ids.reference(&role).unwrap_or_default();
            for resource in self.resources.values() {
                if !matches!(
                    resource.kind.as_str(),
                    "AWS::IAM::Policy" | "AWS::IAM::ManagedPolicy" | "AWS::IAM::RolePolicy"
                ) {
                    continue;
                }
                let properties = self.properties(ids, &resource.logical_id)?;
                let mut roles = strings(&properties["Roles"]);
                roles.extend(text(&properties["RoleName"]));
                if roles.contains(&role_name)
                    && !documents.iter().any(|d| d.source == resource.logical_id)
                {
                    documents.push(PolicyDocument {
                        source: resource.logical_id.clone(),
                        document: properties["PolicyDocument"].clone(),
                    });
                }
            }
            policies.push(ExecutionPolicy {
                function: function.logical_id,
                role,
                documents,
                aws_managed,
            });
        }
        Ok(policies)
    }
}
