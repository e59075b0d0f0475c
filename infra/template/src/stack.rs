//! A translated template, and the stack one parameter set makes of it.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::error::TemplateError;
use crate::intrinsics::Resolver;
use crate::physical::PhysicalIds;

/// The CloudFormation template `sam deploy` would submit (the SAM translation), as JSON.
#[derive(Debug, Clone)]
pub struct Template {
    root: Value,
}

/// One resource as the template declares it (properties unresolved).
#[derive(Debug, Clone)]
pub struct Resource {
    pub logical_id: String,
    pub kind: String,
    pub properties: Value,
    pub metadata: Value,
    pub depends_on: Vec<String>,
    pub condition: Option<String>,
    pub deletion_policy: Option<String>,
    pub update_replace_policy: Option<String>,
}

impl Resource {
    fn read(logical_id: &str, value: &Value) -> Result<Resource, TemplateError> {
        let kind = value["Type"]
            .as_str()
            .ok_or_else(|| TemplateError::model(logical_id, "no Type"))?;
        let depends_on = match &value["DependsOn"] {
            Value::String(one) => vec![one.clone()],
            Value::Array(many) => many
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            _ => Vec::new(),
        };
        let text = |key: &str| value[key].as_str().map(String::from);
        Ok(Resource {
            logical_id: logical_id.to_string(),
            kind: kind.to_string(),
            properties: value
                .get("Properties")
                .cloned()
                .unwrap_or(Value::Object(Default::default())),
            metadata: value.get("Metadata").cloned().unwrap_or(Value::Null),
            depends_on,
            condition: text("Condition"),
            deletion_policy: text("DeletionPolicy"),
            update_replace_policy: text("UpdateReplacePolicy"),
        })
    }

    /// A property as written (unresolved), or `Null`.
    pub fn property(&self, name: &str) -> &Value {
        self.properties.get(name).unwrap_or(&Value::Null)
    }
}

impl Template {
    pub fn load(path: &Path) -> Result<Template, TemplateError> {
        let text = std::fs::read_to_string(path).map_err(|source| TemplateError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let root = serde_json::from_str(&text).map_err(|source| TemplateError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Template { root })
    }

    pub fn from_value(root: Value) -> Template {
        Template { root }
    }

    pub fn json(&self) -> &Value {
        &self.root
    }

    /// Every resource the template declares, whatever its condition.
    pub fn resources(&self) -> Result<BTreeMap<String, Resource>, TemplateError> {
        let mut resources = BTreeMap::new();
        for (logical_id, value) in self.root["Resources"].as_object().into_iter().flatten() {
            resources.insert(logical_id.clone(), Resource::read(logical_id, value)?);
        }
        Ok(resources)
    }

    /// The stack `overrides` make: parameter values (defaults for the rest), conditions, and the
    /// resources whose condition holds. A parameter without a default must be given.
    pub fn instantiate(
        &self,
        stack_name: &str,
        overrides: &BTreeMap<String, String>,
    ) -> Result<Stack, TemplateError> {
        let declared = self.root["Parameters"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        if let Some(unknown) = overrides.keys().find(|name| !declared.contains_key(*name)) {
            return Err(TemplateError::UnknownParameter(unknown.clone()));
        }
        let mut parameters = BTreeMap::new();
        for (name, declaration) in &declared {
            let given = overrides
                .get(name)
                .cloned()
                .or_else(|| scalar_text(&declaration["Default"]));
            let value = given.ok_or_else(|| TemplateError::MissingParameter(name.clone()))?;
            if let Some(allowed) = declaration["AllowedValues"].as_array()
                && !allowed.iter().filter_map(scalar_text).any(|a| a == value)
            {
                return Err(TemplateError::NotAllowed {
                    name: name.clone(),
                    value,
                });
            }
            let value = match declaration["Type"].as_str() {
                Some(kind) if kind == "CommaDelimitedList" || kind.starts_with("List<") => {
                    Value::Array(
                        value
                            .split(',')
                            .map(|v| Value::String(v.trim().to_string()))
                            .collect(),
                    )
                }
                _ => Value::String(value),
            };
            parameters.insert(name.clone(), value);
        }
        let mut stack = Stack {
            name: stack_name.to_string(),
            parameters,
            conditions: BTreeMap::new(),
            resources: BTreeMap::new(),
            declared: self.resources()?,
            mappings: self.root["Mappings"].clone(),
            outputs: self.root["Outputs"]
                .as_object()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .collect(),
            template: self.root.clone(),
        };
        let declared_conditions = self.root["Conditions"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for name in declared_conditions.keys() {
            let holds = Resolver::for_conditions(&stack, &declared_conditions).condition(name)?;
            stack.conditions.insert(name.clone(), holds);
        }
        for (logical_id, resource) in &stack.declared {
            let live = match &resource.condition {
                Some(condition) => stack.condition(condition)?,
                None => true,
            };
            if live {
                stack.resources.insert(logical_id.clone(), resource.clone());
            }
        }
        Ok(stack)
    }
}

/// A scalar parameter or property as CloudFormation passes it on: text.
pub(crate) fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// The template evaluated for one parameter set.
#[derive(Debug, Clone)]
pub struct Stack {
    pub name: String,
    pub parameters: BTreeMap<String, Value>,
    conditions: BTreeMap<String, bool>,
    /// The resources this stack creates (their condition holds).
    pub resources: BTreeMap<String, Resource>,
    /// Every resource the template declares.
    pub declared: BTreeMap<String, Resource>,
    mappings: Value,
    pub outputs: BTreeMap<String, Value>,
    template: Value,
}

impl Stack {
    pub fn condition(&self, name: &str) -> Result<bool, TemplateError> {
        self.conditions
            .get(name)
            .copied()
            .ok_or_else(|| TemplateError::UnknownCondition(name.to_string()))
    }

    pub(crate) fn mappings(&self) -> &Value {
        &self.mappings
    }

    /// The translated template this stack was made from.
    pub fn template(&self) -> &Value {
        &self.template
    }

    /// `value` with every intrinsic function resolved; `None` when it is `AWS::NoValue`.
    pub fn resolve(
        &self,
        at: &str,
        value: &Value,
        ids: &PhysicalIds,
    ) -> Result<Option<Value>, TemplateError> {
        Resolver::new(self, ids).resolve(at, value)
    }

    /// A property of a live resource, resolved (`None`: absent or `AWS::NoValue`).
    pub fn property(
        &self,
        ids: &PhysicalIds,
        logical_id: &str,
        name: &str,
    ) -> Result<Option<Value>, TemplateError> {
        let resource = self
            .resources
            .get(logical_id)
            .ok_or_else(|| TemplateError::model(logical_id, "not in stack"))?;
        match resource.properties.get(name) {
            Some(value) => self.resolve(&format!("{logical_id}.{name}"), value, ids),
            None => Ok(None),
        }
    }

    /// Every resolved property of a live resource.
    pub fn properties(&self, ids: &PhysicalIds, logical_id: &str) -> Result<Value, TemplateError> {
        let resource = self
            .resources
            .get(logical_id)
            .ok_or_else(|| TemplateError::model(logical_id, "not in stack"))?;
        Ok(self
            .resolve(logical_id, &resource.properties, ids)?
            .unwrap_or(Value::Null))
    }

    /// The live resources of one type, in logical-id order.
    pub fn of_type<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Resource> + 'a {
        self.resources.values().filter(move |r| r.kind == kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> Template {
        Template::from_value(json!({
            "Parameters": {
                "DomainName": { "Type": "String", "Default": "" },
                "Size": { "Type": "Number", "Default": 3, "AllowedValues": [1, 3] }
            },
            "Conditions": {
                "HasDomain": { "Fn::Not": [{ "Fn::Equals": [{ "Ref": "DomainName" }, ""] }] },
                "NoDomain": { "Fn::Not": [{ "Condition": "HasDomain" }] }
            },
            "Resources": {
                "Queue": { "Type": "AWS::SQS::Queue", "Properties": {
                    "Tags": [{ "Key": "k", "Value": { "Fn::If": ["HasDomain", { "Ref": "DomainName" }, { "Ref": "AWS::NoValue" }] } }],
                    "VisibilityTimeout": { "Ref": "Size" }
                } },
                "Domain": { "Type": "AWS::ApiGatewayV2::DomainName", "Condition": "HasDomain", "Properties": { "DomainName": { "Ref": "DomainName" } } },
                "Fn": { "Type": "AWS::Lambda::Function", "Properties": {
                    "Description": { "Fn::Sub": "${AWS::Region} ${Queue.QueueName} ${!Literal} ${x}", },
                    "Other": { "Fn::Sub": ["${x}-${Size}", { "x": { "Fn::Join": ["-", ["a", "b"]] } }] }
                } }
            }
        }))
    }

    #[test]
    fn conditions_decide_which_resources_a_stack_creates() {
        let without = template().instantiate("s", &BTreeMap::new()).unwrap();
        assert!(
            !without.resources.contains_key("Domain") && without.condition("NoDomain").unwrap()
        );
        let with = template()
            .instantiate(
                "s",
                &BTreeMap::from([("DomainName".into(), "a.example".into())]),
            )
            .unwrap();
        assert!(with.resources.contains_key("Domain") && !with.condition("NoDomain").unwrap());
    }

    #[test]
    fn a_list_parameter_of_any_aws_type_is_a_list() {
        let template = Template::from_value(json!({
            "Parameters": {
                "Subnets": { "Type": "List<AWS::EC2::Subnet::Id>" },
                "Names": { "Type": "CommaDelimitedList", "Default": "a,b" }
            },
            "Resources": {}
        }));
        let stack = template
            .instantiate(
                "s",
                &BTreeMap::from([("Subnets".into(), "subnet-1, subnet-2".into())]),
            )
            .unwrap();
        assert_eq!(stack.parameters["Subnets"], json!(["subnet-1", "subnet-2"]));
        assert_eq!(stack.parameters["Names"], json!(["a", "b"]));
    }

    #[test]
    fn parameters_are_checked_against_their_allowed_values_and_declarations() {
        let bad = BTreeMap::from([("Size".to_string(), "2".to_string())]);
        assert!(matches!(
            template().instantiate("s", &bad),
            Err(TemplateError::NotAllowed { .. })
        ));
        let unknown = BTreeMap::from([("Nope".to_string(), "1".to_string())]);
        assert!(matches!(
            template().instantiate("s", &unknown),
            Err(TemplateError::UnknownParameter(_))
        ));
    }

    #[test]
    fn intrinsics_resolve_and_no_value_removes_what_it_stands_for() {
        let stack = template().instantiate("s", &BTreeMap::new()).unwrap();
        let ids = PhysicalIds::synthetic(&stack);
        let queue = stack.properties(&ids, "Queue").unwrap();
        assert_eq!(
            queue["Tags"],
            json!([{ "Key": "k" }]),
            "Fn::If to AWS::NoValue drops the key"
        );
        assert_eq!(
            queue["VisibilityTimeout"],
            json!("3"),
            "a Number parameter is passed on as text"
        );
        let name = ids.attribute("Queue", "QueueName").unwrap();
        let function = stack.properties(&ids, "Fn");
        let error = function.unwrap_err().to_string();
        assert!(
            error.contains("Ref x"),
            "an unknown ${{x}} is an error: {error}"
        );
        let mut fixed = stack.clone();
        fixed.resources.get_mut("Fn").unwrap().properties["Description"] =
            json!({ "Fn::Sub": "${AWS::Region} ${Queue.QueueName} ${!Literal}" });
        let function = fixed.properties(&ids, "Fn").unwrap();
        assert_eq!(
            function["Description"],
            json!(format!("us-east-1 {name} ${{Literal}}"))
        );
        assert_eq!(function["Other"], json!("a-b-3"));
    }

    #[test]
    fn a_reference_to_a_resource_the_stack_does_not_create_is_an_error() {
        let mut value = template().json().clone();
        value["Resources"]["Queue"]["Properties"]["Tags"] =
            json!([{ "Key": "d", "Value": { "Ref": "Domain" } }]);
        let stack = Template::from_value(value)
            .instantiate("s", &BTreeMap::new())
            .unwrap();
        let error = stack
            .properties(&PhysicalIds::synthetic(&stack), "Queue")
            .unwrap_err()
            .to_string();
        assert!(error.contains("condition is false"), "{error}");
    }
}
