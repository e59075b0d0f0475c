//! Intrinsic functions, evaluated as CloudFormation evaluates them for one stack.
//!
//! Supported: `Ref` (parameters, pseudo parameters, resources), `Fn::GetAtt`, `Fn::Sub` (both
//! forms, `${!Literal}`), `Fn::If`, `Fn::Join`, `Fn::Select`, `Fn::Split`, `Fn::FindInMap`,
//! `Fn::Base64`, and in conditions `Fn::Equals`, `Fn::Not`, `Fn::And`, `Fn::Or`, `Condition`.
//! `AWS::NoValue` removes the key or list element it stands for. Anything else (`Fn::ImportValue`,
//! `Fn::GetAZs`, …) is refused: this project's template does not use it, and a guess would be a
//! lenient stand-in.

use serde_json::{Map, Value};

use crate::error::TemplateError;
use crate::physical::{ACCOUNT_ID, PARTITION, PhysicalIds, REGION, URL_SUFFIX};
use crate::stack::{Stack, scalar_text};

const INTRINSICS: [&str; 15] = [
    "Ref",
    "Fn::GetAtt",
    "Fn::Sub",
    "Fn::If",
    "Fn::Join",
    "Fn::Select",
    "Fn::Split",
    "Fn::FindInMap",
    "Fn::Base64",
    "Fn::Equals",
    "Fn::Not",
    "Fn::And",
    "Fn::Or",
    "Condition",
    "Fn::GetAZs",
];

pub(crate) struct Resolver<'a> {
    stack: &'a Stack,
    ids: Option<&'a PhysicalIds>,
    /// While the stack's conditions are being evaluated: their declarations.
    declarations: Option<&'a Map<String, Value>>,
    depth: usize,
}

/// Whether `value` is a one-key object naming an intrinsic function (or `Condition`).
pub(crate) fn intrinsic(value: &Value) -> Option<(&str, &Value)> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    let (name, argument) = object.iter().next()?;
    (INTRINSICS.contains(&name.as_str()) || name.starts_with("Fn::"))
        .then_some((name.as_str(), argument))
}

impl<'a> Resolver<'a> {
    pub(crate) fn new(stack: &'a Stack, ids: &'a PhysicalIds) -> Self {
        Resolver {
            stack,
            ids: Some(ids),
            declarations: None,
            depth: 0,
        }
    }

    pub(crate) fn for_conditions(stack: &'a Stack, declarations: &'a Map<String, Value>) -> Self {
        Resolver {
            stack,
            ids: None,
            declarations: Some(declarations),
            depth: 0,
        }
    }

    /// The value of condition `name`.
    pub(crate) fn condition(&mut self, name: &str) -> Result<bool, TemplateError> {
        let Some(declarations) = self.declarations else {
            return self.stack.condition(name);
        };
        let declaration = declarations
            .get(name)
            .ok_or_else(|| TemplateError::UnknownCondition(name.to_string()))?;
        self.depth += 1;
        if self.depth > 64 {
            return Err(TemplateError::intrinsic(
                name,
                "conditions refer to each other in a loop",
            ));
        }
        let holds = self.boolean(&format!("Conditions.{name}"), declaration);
        self.depth -= 1;
        holds
    }

    fn boolean(&mut self, at: &str, value: &Value) -> Result<bool, TemplateError> {
        match intrinsic(value) {
            Some(("Condition", Value::String(name))) => self.condition(name),
            Some(("Fn::Equals", Value::Array(pair))) if pair.len() == 2 => {
                let left = self.resolve(at, &pair[0])?;
                let right = self.resolve(at, &pair[1])?;
                Ok(left.as_ref().and_then(scalar_text) == right.as_ref().and_then(scalar_text))
            }
            Some(("Fn::Not", Value::Array(one))) if one.len() == 1 => {
                Ok(!self.boolean(at, &one[0])?)
            }
            Some(("Fn::And", Value::Array(all))) => {
                let mut holds = true;
                for condition in all {
                    holds &= self.boolean(at, condition)?;
                }
                Ok(holds)
            }
            Some(("Fn::Or", Value::Array(any))) => {
                let mut holds = false;
                for condition in any {
                    holds |= self.boolean(at, condition)?;
                }
                Ok(holds)
            }
            _ => Err(TemplateError::intrinsic(
                at,
                format!("not a condition: {value}"),
            )),
        }
    }

    /// `value` resolved; `None` for `AWS::NoValue`.
    pub(crate) fn resolve(
        &mut self,
        at: &str,
        value: &Value,
    ) -> Result<Option<Value>, TemplateError> {
        if let Some((name, argument)) = intrinsic(value) {
            return self.function(at, name, argument);
        }
        match value {
            Value::Object(object) => {
                let mut resolved = Map::new();
                for (key, value) in object {
                    if let Some(value) = self.resolve(&format!("{at}.{key}"), value)? {
                        resolved.insert(key.clone(), value);
                    }
                }
                Ok(Some(Value::Object(resolved)))
            }
            Value::Array(items) => {
                let mut resolved = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    if let Some(item) = self.resolve(&format!("{at}[{index}]"), item)? {
                        resolved.push(item);
                    }
                }
                Ok(Some(Value::Array(resolved)))
            }
            scalar => Ok(Some(scalar.clone())),
        }
    }

    fn text(&mut self, at: &str, value: &Value) -> Result<String, TemplateError> {
        let resolved = self.resolve(at, value)?.unwrap_or(Value::Null);
        scalar_text(&resolved)
            .ok_or_else(|| TemplateError::intrinsic(at, format!("expected text, got {resolved}")))
    }

    fn function(
        &mut self,
        at: &str,
        name: &str,
        argument: &Value,
    ) -> Result<Option<Value>, TemplateError> {
        let bad = |what: &str| TemplateError::intrinsic(at, format!("{name}: {what}: {argument}"));
        match (name, argument) {
            ("Ref", Value::String(target)) => self.reference(at, target),
            ("Fn::GetAtt", Value::Array(pair)) if pair.len() == 2 => {
                let logical = self.text(at, &pair[0])?;
                let attribute = self.text(at, &pair[1])?;
                self.attribute(at, &logical, &attribute)
                    .map(|v| Some(Value::String(v)))
            }
            ("Fn::GetAtt", Value::String(dotted)) => {
                let (logical, attribute) = dotted
                    .split_once('.')
                    .ok_or_else(|| bad("expected Resource.Attribute"))?;
                self.attribute(at, logical, attribute)
                    .map(|v| Some(Value::String(v)))
            }
            ("Fn::Sub", Value::String(text)) => self
                .substitute(at, text, &Map::new())
                .map(|v| Some(Value::String(v))),
            ("Fn::Sub", Value::Array(pair)) if pair.len() == 2 => {
                let text = pair[0]
                    .as_str()
                    .ok_or_else(|| bad("the first element must be text"))?;
                let variables = pair[1]
                    .as_object()
                    .ok_or_else(|| bad("the second element must be a map"))?;
                self.substitute(at, text, variables)
                    .map(|v| Some(Value::String(v)))
            }
            ("Fn::If", Value::Array(branches)) if branches.len() == 3 => {
                let condition = branches[0]
                    .as_str()
                    .ok_or_else(|| bad("the condition must be a name"))?;
                let branch = if self.condition(condition)? {
                    &branches[1]
                } else {
                    &branches[2]
                };
                self.resolve(at, branch)
            }
            ("Fn::Join", Value::Array(pair)) if pair.len() == 2 => {
                let delimiter = pair[0]
                    .as_str()
                    .ok_or_else(|| bad("the delimiter must be text"))?;
                let items = self
                    .resolve(at, &pair[1])?
                    .unwrap_or(Value::Array(Vec::new()));
                let items = items
                    .as_array()
                    .ok_or_else(|| bad("the second element must be a list"))?;
                let parts: Option<Vec<String>> = items.iter().map(scalar_text).collect();
                Ok(Some(Value::String(
                    parts
                        .ok_or_else(|| bad("list of text expected"))?
                        .join(delimiter),
                )))
            }
            ("Fn::Select", Value::Array(pair)) if pair.len() == 2 => {
                let index: usize = self
                    .text(at, &pair[0])?
                    .parse()
                    .map_err(|_| bad("index must be a number"))?;
                let items = self.resolve(at, &pair[1])?.unwrap_or(Value::Null);
                let item = items
                    .as_array()
                    .and_then(|items| items.get(index))
                    .ok_or_else(|| bad("index out of range"))?;
                Ok(Some(item.clone()))
            }
            ("Fn::Split", Value::Array(pair)) if pair.len() == 2 => {
                let delimiter = pair[0]
                    .as_str()
                    .ok_or_else(|| bad("the delimiter must be text"))?;
                let text = self.text(at, &pair[1])?;
                Ok(Some(Value::Array(
                    text.split(delimiter)
                        .map(|p| Value::String(p.to_string()))
                        .collect(),
                )))
            }
            ("Fn::FindInMap", Value::Array(keys)) if keys.len() == 3 => {
                let (map, first, second) = (
                    self.text(at, &keys[0])?,
                    self.text(at, &keys[1])?,
                    self.text(at, &keys[2])?,
                );
                let found = &self.stack.mappings()[&map][&first][&second];
                if found.is_null() {
                    return Err(bad("no such mapping entry"));
                }
                Ok(Some(found.clone()))
            }
            ("Fn::Base64", value) => {
                let text = self.text(at, value)?;
                use base64::Engine;
                Ok(Some(Value::String(
                    base64::engine::general_purpose::STANDARD.encode(text),
                )))
            }
            ("Condition", _)
            | ("Fn::Equals", _)
            | ("Fn::Not", _)
            | ("Fn::And", _)
            | ("Fn::Or", _) => self
                .boolean(
                    at,
                    &Value::Object(Map::from_iter([(name.to_string(), argument.clone())])),
                )
                .map(|b| Some(Value::Bool(b))),
            _ => Err(bad("not supported here")),
        }
    }

    fn reference(&mut self, at: &str, target: &str) -> Result<Option<Value>, TemplateError> {
        let pseudo = match target {
            "AWS::NoValue" => return Ok(None),
            "AWS::Region" => Some(REGION.to_string()),
            "AWS::AccountId" => Some(ACCOUNT_ID.to_string()),
            "AWS::Partition" => Some(PARTITION.to_string()),
            "AWS::URLSuffix" => Some(URL_SUFFIX.to_string()),
            "AWS::StackName" => Some(self.stack.name.clone()),
            "AWS::StackId" => Some(format!(
                "arn:aws:cloudformation:{REGION}:{ACCOUNT_ID}:stack/{}/00000000-0000",
                self.stack.name
            )),
            "AWS::NotificationARNs" => return Ok(Some(Value::Array(Vec::new()))),
            _ => None,
        };
        if let Some(value) = pseudo {
            return Ok(Some(Value::String(value)));
        }
        if let Some(value) = self.stack.parameters.get(target) {
            return Ok(Some(value.clone()));
        }
        let ids = self.ids.ok_or_else(|| {
            TemplateError::intrinsic(at, format!("a condition cannot Ref {target}"))
        })?;
        self.live(at, target)?;
        ids.reference(target)
            .map(|v| Some(Value::String(v)))
            .ok_or_else(|| {
                TemplateError::intrinsic(at, format!("Ref {target}: no such parameter or resource"))
            })
    }

    fn attribute(
        &mut self,
        at: &str,
        logical: &str,
        attribute: &str,
    ) -> Result<String, TemplateError> {
        let ids = self
            .ids
            .ok_or_else(|| TemplateError::intrinsic(at, "a condition cannot use Fn::GetAtt"))?;
        self.live(at, logical)?;
        ids.attribute(logical, attribute).ok_or_else(|| {
            TemplateError::intrinsic(
                at,
                format!("Fn::GetAtt {logical}.{attribute}: unknown attribute"),
            )
        })
    }

    /// A reference to a resource this stack does not create is a deploy error.
    fn live(&self, at: &str, logical: &str) -> Result<(), TemplateError> {
        if self.stack.declared.contains_key(logical) && !self.stack.resources.contains_key(logical)
        {
            return Err(TemplateError::intrinsic(
                at,
                format!("refers to {logical}, whose condition is false"),
            ));
        }
        Ok(())
    }

    fn substitute(
        &mut self,
        at: &str,
        text: &str,
        variables: &Map<String, Value>,
    ) -> Result<String, TemplateError> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| TemplateError::intrinsic(at, format!("unclosed ${{ in {text}")))?;
            let name = &after[..end];
            if let Some(literal) = name.strip_prefix('!') {
                out.push_str("${");
                out.push_str(literal);
                out.push('}');
            } else if let Some(value) = variables.get(name) {
                let value = self.text(at, value)?;
                out.push_str(&value);
            } else if let Some((logical, attribute)) = name.split_once('.')
                && !name.starts_with("AWS::")
            {
                out.push_str(&self.attribute(at, logical, attribute)?);
            } else {
                let value = self.reference(at, name)?.unwrap_or(Value::Null);
                out.push_str(
                    &scalar_text(&value)
                        .ok_or_else(|| TemplateError::intrinsic(at, format!("${{{name}}}")))?,
                );
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}
