//! API Gateway routing rules (`AWS::ApiGatewayV2::RoutingRule`) with API Gateway's semantics.
//!
//! From the developer guide ("Routing rules to connect API stages to a custom domain name for
//! REST APIs", <https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-routing-rules.html>)
//! and the CloudFormation reference (`MatchHeaderValue`,
//! <https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-apigatewayv2-routingrule-matchheadervalue.html>):
//! rules are evaluated in priority order, lowest first, and the first whose conditions all hold
//! wins; a rule without conditions always matches (the catch-all); up to two header conditions
//! and one base-path condition, all of which must hold; a header condition holds when any of its
//! `AnyOf` entries matches; header names match case-insensitively, glob values case-sensitively
//! against the entire header value; a glob is a literal or uses `*` as a prefix match (`abc*`), a
//! suffix match (`*abc`) or an infix match (`*abc*`). `?` is one of the allowed characters and is
//! treated as a literal: the documents name no single-character wildcard.

use serde_json::Value;

use crate::error::TemplateError;
use crate::physical::{PhysicalIds, text};
use crate::stack::Stack;

/// One header condition entry: a header name and a glob for its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderGlob {
    pub header: String,
    pub glob: String,
}

/// One element of a rule's `Conditions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// `MatchHeaders.AnyOf`: holds when any entry matches.
    Headers(Vec<HeaderGlob>),
    /// `MatchBasePaths.AnyOf`: holds when the path's base path is one of them.
    BasePaths(Vec<String>),
    /// Something else (a typo or a newer condition type): never holds, and the check refuses it.
    Unknown(String),
}

/// The rule's action: invoke a stage of a REST API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvokeApi {
    /// The logical id of the API the action names.
    pub api: String,
    pub stage: String,
    pub strip_base_path: bool,
}

#[derive(Debug, Clone)]
pub struct RoutingRule {
    pub logical_id: String,
    pub domain_name_arn: String,
    pub priority: i64,
    pub conditions: Vec<Condition>,
    pub actions: Vec<InvokeApi>,
    pub depends_on: Vec<String>,
}

/// Whether `glob` matches the entire `value`, as a routing rule compares them.
pub fn glob_matches(glob: &str, value: &str) -> bool {
    match (glob.strip_prefix('*'), glob.strip_suffix('*')) {
        (Some(_), Some(_)) if glob.len() >= 2 => value.contains(&glob[1..glob.len() - 1]),
        (Some(suffix), _) => value.ends_with(suffix),
        (_, Some(prefix)) => value.starts_with(prefix),
        (None, None) => glob == value,
    }
}

/// The characters a header name or value glob may contain (CloudFormation reference).
pub fn allowed_in_glob(c: char) -> bool {
    c.is_ascii_alphanumeric() || "*?-!#$%&'.^_`|~".contains(c)
}

/// What is wrong with `glob` as a `ValueGlob`, if anything.
pub fn glob_problems(glob: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if glob.is_empty() {
        problems.push("is empty".into());
    }
    if glob.chars().count() >= 128 {
        problems.push(format!(
            "has {} characters (must be less than 128)",
            glob.chars().count()
        ));
    }
    let bad: String = glob.chars().filter(|c| !allowed_in_glob(*c)).collect();
    if !bad.is_empty() {
        problems.push(format!(
            "contains {bad:?}: only a-z A-Z 0-9 and *?-!#$%&'.^_`|~ are allowed"
        ));
    }
    let inner = glob.trim_start_matches('*').trim_end_matches('*');
    let leading = glob.len() - glob.trim_start_matches('*').len();
    let trailing = glob.len() - glob.trim_end_matches('*').len();
    if inner.contains('*') || leading > 1 || trailing > 1 || (inner.is_empty() && !glob.is_empty())
    {
        problems.push(
            "wildcards may only make a prefix (abc*), suffix (*abc) or infix (*abc*) match".into(),
        );
    }
    if leading == 1 && trailing == 1 && glob.chars().count() >= 40 {
        problems.push("is an infix match of 40 or more characters (must be less than 40)".into());
    }
    problems
}

/// Headers a routing rule may not match on (developer guide, "Restrictions").
pub fn unsupported_condition_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    const EXACT: [&str; 19] = [
        "authorization",
        "connection",
        "content-encoding",
        "content-length",
        "content-location",
        "forwarded",
        "keep-alive",
        "origin",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "x-apigw-api-id",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-forwarded-proto",
        "via",
    ];
    const PREFIXES: [&str; 4] = ["access-control-", "apigw-", "x-amz-", "x-amzn-"];
    EXACT.contains(&name.as_str())
        || name == "x-restapi"
        || PREFIXES.iter().any(|p| name.starts_with(p))
}

impl RoutingRule {
    /// Whether every condition holds for a request with `headers` (name, value) at `path`.
    pub fn matches(&self, headers: &[(&str, &str)], path: &str) -> bool {
        self.conditions.iter().all(|condition| match condition {
            Condition::Headers(any_of) => any_of.iter().any(|entry| {
                let mut values = headers
                    .iter()
                    .filter(|(name, _)| name.eq_ignore_ascii_case(&entry.header));
                // A header sent twice has no single value to compare: no match.
                match (values.next(), values.next()) {
                    (Some((_, value)), None) => glob_matches(&entry.glob, value),
                    _ => false,
                }
            }),
            Condition::BasePaths(any_of) => any_of.iter().any(|base| base_path_matches(base, path)),
            Condition::Unknown(_) => false,
        })
    }

    pub fn header_conditions(&self) -> usize {
        self.conditions
            .iter()
            .filter(|c| matches!(c, Condition::Headers(_)))
            .count()
    }

    pub fn base_path_conditions(&self) -> usize {
        self.conditions
            .iter()
            .filter(|c| matches!(c, Condition::BasePaths(_)))
            .count()
    }
}

/// A base path is the leading path segment(s): `orders` matches `/orders` and `/orders/7`.
pub fn base_path_matches(base: &str, path: &str) -> bool {
    let base = base.trim_matches('/');
    let path = path.trim_start_matches('/');
    path == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The path the target API sees: without the base path when the action strips it.
pub fn forwarded_path<'a>(
    rule: &RoutingRule,
    action: &InvokeApi,
    path: &'a str,
) -> std::borrow::Cow<'a, str> {
    if !action.strip_base_path {
        return path.into();
    }
    for condition in &rule.conditions {
        if let Condition::BasePaths(any_of) = condition
            && let Some(base) = any_of.iter().find(|base| base_path_matches(base, path))
        {
            let rest = path.trim_start_matches('/')[base.trim_matches('/').len()..].to_string();
            return if rest.is_empty() {
                "/".to_string().into()
            } else {
                rest.into()
            };
        }
    }
    path.into()
}

/// The first rule (by priority) whose conditions hold: the one API Gateway applies.
pub fn first_match<'a>(
    rules: &'a [RoutingRule],
    headers: &[(&str, &str)],
    path: &str,
) -> Option<&'a RoutingRule> {
    let mut ordered: Vec<&RoutingRule> = rules.iter().collect();
    ordered.sort_by_key(|rule| rule.priority);
    ordered.into_iter().find(|rule| rule.matches(headers, path))
}

impl Stack {
    /// The routing rules of the stack, resolved.
    pub fn routing_rules(&self, ids: &PhysicalIds) -> Result<Vec<RoutingRule>, TemplateError> {
        let mut rules = Vec::new();
        for resource in self.of_type("AWS::ApiGatewayV2::RoutingRule") {
            let id = &resource.logical_id;
            let properties = self.properties(ids, id)?;
            let priority = text(&properties["Priority"])
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| TemplateError::model(id, "Priority is not a number"))?;
            let conditions = properties["Conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(condition)
                .collect();
            let mut actions = Vec::new();
            for action in properties["Actions"].as_array().into_iter().flatten() {
                let invoke = &action["InvokeApi"];
                let api_id = text(&invoke["ApiId"]).unwrap_or_default();
                let api = ids
                    .logical_id_of(&api_id)
                    .map(String::from)
                    .unwrap_or(api_id);
                actions.push(InvokeApi {
                    api,
                    stage: text(&invoke["Stage"]).unwrap_or_default(),
                    strip_base_path: invoke["StripBasePath"].as_bool().unwrap_or(false),
                });
            }
            rules.push(RoutingRule {
                logical_id: id.clone(),
                domain_name_arn: text(&properties["DomainNameArn"]).unwrap_or_default(),
                priority,
                conditions,
                actions,
                depends_on: resource.depends_on.clone(),
            });
        }
        Ok(rules)
    }
}

fn condition(value: &Value) -> Condition {
    let object = value.as_object().cloned().unwrap_or_default();
    let any_of = |key: &str| {
        object
            .get(key)
            .map(|v| v["AnyOf"].as_array().cloned().unwrap_or_default())
    };
    match (
        any_of("MatchHeaders"),
        any_of("MatchBasePaths"),
        object.len(),
    ) {
        (Some(entries), None, 1) => Condition::Headers(
            entries
                .iter()
                .map(|e| HeaderGlob {
                    header: text(&e["Header"]).unwrap_or_default(),
                    glob: text(&e["ValueGlob"]).unwrap_or_default(),
                })
                .collect(),
        ),
        (None, Some(entries), 1) => Condition::BasePaths(entries.iter().filter_map(text).collect()),
        _ => Condition::Unknown(value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_the_whole_value_as_prefix_suffix_infix_or_literal() {
        assert!(glob_matches("tools*", "tools/list") && glob_matches("tools*", "tools/call"));
        assert!(glob_matches("*call", "tools/call") && !glob_matches("*call", "tools/callx"));
        assert!(glob_matches("*templates*", "resources/templates/list"));
        assert!(
            glob_matches("2026-07-28", "2026-07-28") && !glob_matches("2026-07-28", "2026-07-28x")
        );
        assert!(
            !glob_matches("Tools*", "tools/list"),
            "values are case-sensitive"
        );
    }

    #[test]
    fn globs_outside_the_documented_forms_are_problems() {
        assert!(glob_problems("*call").is_empty() && glob_problems("tasks*").is_empty());
        assert!(!glob_problems("tools/call").is_empty(), "no slash");
        assert!(
            !glob_problems("tools*call").is_empty(),
            "no wildcard inside"
        );
        assert!(!glob_problems("**x").is_empty() && !glob_problems("*").is_empty());
        assert!(!glob_problems(&"a".repeat(128)).is_empty());
        assert!(
            !glob_problems(&format!("*{}*", "a".repeat(38))).is_empty(),
            "an infix of 40"
        );
    }

    #[test]
    fn a_base_path_is_whole_leading_segments() {
        assert!(
            base_path_matches("approvals", "/approvals/login")
                && base_path_matches("approvals", "/approvals")
        );
        assert!(
            !base_path_matches("approvals", "/approvalsx")
                && !base_path_matches("Approvals", "/approvals")
        );
    }

    fn rule(id: &str, priority: i64, conditions: Vec<Condition>) -> RoutingRule {
        let action = InvokeApi {
            api: format!("{id}Api"),
            stage: "live".into(),
            strip_base_path: false,
        };
        RoutingRule {
            logical_id: id.into(),
            domain_name_arn: "d".into(),
            priority,
            conditions,
            actions: vec![action],
            depends_on: vec![],
        }
    }

    fn header(name: &str, glob: &str) -> Condition {
        Condition::Headers(vec![HeaderGlob {
            header: name.into(),
            glob: glob.into(),
        }])
    }

    #[test]
    fn the_lowest_priority_that_matches_wins_and_a_rule_without_conditions_catches_all() {
        let rules = vec![
            rule("Catch", 1000, vec![]),
            rule("List", 20, vec![header("Mcp-Method", "tools*")]),
            rule("Call", 10, vec![header("Mcp-Method", "*call")]),
        ];
        let pick = |headers: &[(&str, &str)]| {
            first_match(&rules, headers, "/mcp").map(|r| r.logical_id.clone())
        };
        assert_eq!(
            pick(&[("mcp-method", "tools/call")]).as_deref(),
            Some("Call")
        );
        assert_eq!(
            pick(&[("MCP-METHOD", "tools/list")]).as_deref(),
            Some("List"),
            "names match in any case"
        );
        assert_eq!(pick(&[]).as_deref(), Some("Catch"));
        assert_eq!(
            pick(&[("Mcp-Method", "tools/call"), ("Mcp-Method", "tools/list")]).as_deref(),
            Some("Catch"),
            "a repeated header matches no glob"
        );
    }

    #[test]
    fn stripping_a_base_path_forwards_the_rest() {
        let mut stripping = rule(
            "Pages",
            1,
            vec![Condition::BasePaths(vec!["approvals".into()])],
        );
        stripping.actions[0].strip_base_path = true;
        let action = stripping.actions[0].clone();
        assert_eq!(
            forwarded_path(&stripping, &action, "/approvals/login"),
            "/login"
        );
        assert_eq!(forwarded_path(&stripping, &action, "/approvals"), "/");
        stripping.actions[0].strip_base_path = false;
        let keeping = stripping.actions[0].clone();
        assert_eq!(
            forwarded_path(&stripping, &keeping, "/approvals/login"),
            "/approvals/login"
        );
    }
}
