//! REST APIs (`AWS::ApiGateway::RestApi`) and HTTP APIs (`AWS::ApiGatewayV2::Api`) as their
//! OpenAPI bodies (written by the SAM translator from the functions' events) declare them: which
//! path and method reach which function, buffered or streamed, with which integration timeout.
//!
//! Path matching follows API Gateway: a literal segment beats a `{parameter}`, which beats a
//! greedy `{proxy+}` (REST: "Set up a proxy integration with a proxy resource"; HTTP APIs:
//! "Working with routes for HTTP APIs", most specific match first).

use crate::error::TemplateError;
use crate::physical::{PhysicalIds, text};
use crate::stack::Stack;

/// REST (payload 1.0 events, may stream) or HTTP API (payload 2.0 events, never streams).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
    Rest,
    Http,
}

/// A REST integration's default and largest buffered timeout, and the largest streamed one.
pub const REST_DEFAULT_TIMEOUT_MS: u64 = 29_000;
pub const REST_STREAMED_MAX_TIMEOUT_MS: u64 = 900_000;
/// An HTTP API integration's default and largest timeout.
pub const HTTP_MAX_TIMEOUT_MS: u64 = 30_000;

/// One path and method of an API and the Lambda integration behind it.
#[derive(Debug, Clone)]
pub struct Route {
    /// The path template, e.g. `/mcp`, `/pages/{proxy+}`, `/{proxy+}`.
    pub path: String,
    /// `ANY` or an HTTP method in upper case.
    pub method: String,
    /// The logical id of the function the integration invokes.
    pub function: String,
    /// `responseTransferMode: STREAM` (REST only).
    pub streaming: bool,
    /// `timeoutInMillis`, or the kind's default.
    pub timeout_ms: u64,
    /// Whether the integration invokes through the response-streaming URI.
    pub streaming_uri: bool,
    /// The `payloadFormatVersion` of an HTTP API integration.
    pub payload_format: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Api {
    pub logical_id: String,
    pub kind: ApiKind,
    pub routes: Vec<Route>,
    pub disable_execute_api_endpoint: bool,
}

impl Api {
    /// The route API Gateway would pick for `method` `path`, if any.
    pub fn route(&self, method: &str, path: &str) -> Option<&Route> {
        self.routes
            .iter()
            .filter(|route| route.method == "ANY" || route.method.eq_ignore_ascii_case(method))
            .filter_map(|route| path_specificity(&route.path, path).map(|score| (score, route)))
            .max_by(|(a, _), (b, _)| a.cmp(b))
            .map(|(_, route)| route)
    }
}

/// How specifically `template` matches `path` (higher wins), or `None`.
fn path_specificity(template: &str, path: &str) -> Option<Vec<u8>> {
    let template: Vec<&str> = template
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let path: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let mut score = Vec::new();
    for (index, segment) in template.iter().enumerate() {
        if segment.starts_with('{') && segment.ends_with("+}") {
            // Greedy: the rest of the path, at least one segment.
            return (path.len() > index && index + 1 == template.len()).then(|| {
                score.push(1);
                score
            });
        }
        let actual = path.get(index)?;
        if segment.starts_with('{') && segment.ends_with('}') {
            score.push(2);
        } else if segment == actual {
            score.push(3);
        } else {
            return None;
        }
    }
    (template.len() == path.len()).then_some(score)
}

/// The function ARN inside a Lambda integration URI, and whether it is the streaming one
/// (`…/2021-11-15/functions/ARN/response-streaming-invocations`).
fn function_of_uri(uri: &str) -> Option<(&str, bool)> {
    let after = uri.split("/functions/").nth(1)?;
    if let Some(arn) = after.strip_suffix("/response-streaming-invocations") {
        return Some((arn, true));
    }
    after.strip_suffix("/invocations").map(|arn| (arn, false))
}

impl Stack {
    /// Every REST and HTTP API of the stack with its routes.
    pub fn apis(&self, ids: &PhysicalIds) -> Result<Vec<Api>, TemplateError> {
        let mut apis = Vec::new();
        for resource in self.resources.values() {
            let kind = match resource.kind.as_str() {
                "AWS::ApiGateway::RestApi" => ApiKind::Rest,
                "AWS::ApiGatewayV2::Api" => ApiKind::Http,
                _ => continue,
            };
            let id = &resource.logical_id;
            let properties = self.properties(ids, id)?;
            let mut routes = Vec::new();
            for (path, methods) in properties["Body"]["paths"]
                .as_object()
                .into_iter()
                .flatten()
            {
                for (method, operation) in methods.as_object().into_iter().flatten() {
                    let method = match method.as_str() {
                        "x-amazon-apigateway-any-method" => "ANY".to_string(),
                        "parameters" => continue,
                        other => other.to_ascii_uppercase(),
                    };
                    let integration = &operation["x-amazon-apigateway-integration"];
                    let uri = text(&integration["uri"]).unwrap_or_default();
                    let (arn, streaming_uri) = function_of_uri(&uri).ok_or_else(|| {
                        TemplateError::model(
                            id,
                            format!("{method} {path}: not a Lambda integration: {uri}"),
                        )
                    })?;
                    let function = ids.logical_id_of(arn).ok_or_else(|| {
                        TemplateError::model(id, format!("{method} {path}: unknown function {arn}"))
                    })?;
                    let default_timeout = match kind {
                        ApiKind::Rest => REST_DEFAULT_TIMEOUT_MS,
                        ApiKind::Http => HTTP_MAX_TIMEOUT_MS,
                    };
                    routes.push(Route {
                        path: path.clone(),
                        method,
                        function: function.to_string(),
                        streaming: integration["responseTransferMode"].as_str() == Some("STREAM"),
                        timeout_ms: text(&integration["timeoutInMillis"])
                            .and_then(|t| t.parse().ok())
                            .unwrap_or(default_timeout),
                        streaming_uri,
                        payload_format: text(&integration["payloadFormatVersion"]),
                    });
                }
            }
            // The property when set, else the OpenAPI extension SAM writes it as.
            let disabled = properties["DisableExecuteApiEndpoint"]
                .as_bool()
                .or_else(|| {
                    properties["Body"]["x-amazon-apigateway-endpoint-configuration"]["disableExecuteApiEndpoint"]
                        .as_bool()
                })
                .unwrap_or(false);
            apis.push(Api {
                logical_id: id.clone(),
                kind,
                routes,
                disable_execute_api_endpoint: disabled,
            });
        }
        Ok(apis)
    }

    /// The stages of REST and HTTP APIs: (API logical id, stage name, stage logical id).
    pub fn stages(
        &self,
        ids: &PhysicalIds,
    ) -> Result<Vec<(String, String, String)>, TemplateError> {
        let mut stages = Vec::new();
        for resource in self.resources.values() {
            let api_key = match resource.kind.as_str() {
                "AWS::ApiGateway::Stage" => "RestApiId",
                "AWS::ApiGatewayV2::Stage" => "ApiId",
                _ => continue,
            };
            let properties = self.properties(ids, &resource.logical_id)?;
            let api = text(&properties[api_key]).unwrap_or_default();
            let api = ids.logical_id_of(&api).map(String::from).unwrap_or(api);
            stages.push((
                api,
                text(&properties["StageName"]).unwrap_or_default(),
                resource.logical_id.clone(),
            ));
        }
        Ok(stages)
    }
}
