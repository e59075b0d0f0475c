//! The custom domain's routing rules: what API Gateway accepts, and where each method lands.

use std::collections::{BTreeMap, BTreeSet};

use relevo_protocol::Method;

use super::Context;
use crate::apis::Api;
use crate::functions::Function;
use crate::routing::{self, RoutingRule};

const MAX_RULES_PER_DOMAIN: usize = 50;
const MAX_HEADER_CONDITIONS: usize = 2;
const MAX_BASE_PATH_CONDITIONS: usize = 1;
const PRIORITIES: std::ops::RangeInclusive<i64> = 1..=1_000_000;

/// Methods of older clients (and notifications) that only the all-methods function serves.
const OTHER_METHODS: [&str; 8] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/roots/list_changed",
];

/// The binary that serves every method (the catch-all's).
pub const ALL_METHODS_BINARY: &str = "mcp";

pub(super) fn run(context: &mut Context) {
    let rules = match context.stack.routing_rules(context.ids) {
        Ok(rules) => rules,
        Err(error) => return context.refuse("references", "RoutingRules", error.to_string()),
    };
    if rules.is_empty() {
        return;
    }
    let (apis, functions, stages) = match (
        context.stack.apis(context.ids),
        context.stack.functions(context.ids),
        context.stack.stages(context.ids),
    ) {
        (Ok(a), Ok(f), Ok(s)) => (a, f, s),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            return context.refuse("references", "APIs", e.to_string());
        }
    };
    for rule in &rules {
        shape(context, rule);
        target(context, rule, &apis, &stages);
    }
    let mut by_domain: BTreeMap<&str, Vec<&RoutingRule>> = BTreeMap::new();
    for rule in &rules {
        by_domain
            .entry(rule.domain_name_arn.as_str())
            .or_default()
            .push(rule);
    }
    for (domain, rules) in &by_domain {
        if rules.len() > MAX_RULES_PER_DOMAIN {
            context.refuse(
                "routing-quota",
                domain,
                format!(
                    "{} rules (the default quota is {MAX_RULES_PER_DOMAIN})",
                    rules.len()
                ),
            );
        }
        let mut seen = BTreeMap::new();
        for rule in rules {
            if let Some(other) = seen.insert(rule.priority, &rule.logical_id) {
                context.refuse(
                    "routing-priority",
                    &rule.logical_id,
                    format!("priority {} is also {other}'s", rule.priority),
                );
            }
        }
        let owned: Vec<RoutingRule> = rules.iter().map(|r| (*r).clone()).collect();
        methods(context, &owned, &apis, &functions);
    }
}

fn shape(context: &mut Context, rule: &RoutingRule) {
    let id = &rule.logical_id;
    if !PRIORITIES.contains(&rule.priority) {
        context.refuse(
            "routing-priority",
            id,
            format!("priority {} is outside 1–1,000,000", rule.priority),
        );
    }
    if rule.header_conditions() > MAX_HEADER_CONDITIONS {
        context.refuse(
            "routing-conditions",
            id,
            format!(
                "{} header conditions (at most {MAX_HEADER_CONDITIONS})",
                rule.header_conditions()
            ),
        );
    }
    if rule.base_path_conditions() > MAX_BASE_PATH_CONDITIONS {
        context.refuse(
            "routing-conditions",
            id,
            format!(
                "{} base path conditions (at most one)",
                rule.base_path_conditions()
            ),
        );
    }
    for condition in &rule.conditions {
        match condition {
            routing::Condition::Unknown(what) => {
                context.refuse(
                    "routing-conditions",
                    id,
                    format!("not a MatchHeaders or MatchBasePaths condition: {what}"),
                );
            }
            routing::Condition::Headers(any_of) => {
                if any_of.len() != 1 {
                    context.refuse(
                        "routing-conditions",
                        id,
                        format!(
                            "a MatchHeaders AnyOf holds {} entries (exactly one)",
                            any_of.len()
                        ),
                    );
                }
                for entry in any_of {
                    if routing::unsupported_condition_header(&entry.header) {
                        context.refuse(
                            "routing-conditions",
                            id,
                            format!("{} cannot be a routing condition", entry.header),
                        );
                    }
                    if entry.header.is_empty()
                        || entry.header.chars().count() >= 40
                        || !entry.header.chars().all(routing::allowed_in_glob)
                    {
                        context.refuse(
                            "routing-glob",
                            id,
                            format!(
                                "header name {:?}: less than 40 of a-zA-Z0-9 *?-!#$%&'.^_`|~",
                                entry.header
                            ),
                        );
                    }
                    for problem in routing::glob_problems(&entry.glob) {
                        context.refuse(
                            "routing-glob",
                            id,
                            format!("ValueGlob {:?} {problem}", entry.glob),
                        );
                    }
                }
            }
            routing::Condition::BasePaths(any_of) => {
                for base in any_of {
                    let allowed = |c: char| c.is_ascii_alphanumeric() || "$-_.+!*'()/".contains(c);
                    if base.is_empty() || base.chars().count() >= 128 || !base.chars().all(allowed)
                    {
                        context.refuse(
                            "routing-conditions",
                            id,
                            format!("base path {base:?}: less than 128 of letters, digits and $-_.+!*'()/"),
                        );
                    }
                }
            }
        }
    }
}

fn target(
    context: &mut Context,
    rule: &RoutingRule,
    apis: &[Api],
    stages: &[(String, String, String)],
) {
    let id = &rule.logical_id;
    let [action] = rule.actions.as_slice() else {
        return context.refuse(
            "routing-target",
            id,
            format!("{} actions (a rule has exactly one)", rule.actions.len()),
        );
    };
    if !apis
        .iter()
        .any(|api| api.logical_id == action.api && api.kind == crate::apis::ApiKind::Rest)
    {
        return context.refuse(
            "routing-target",
            id,
            format!(
                "{} is not a REST API of this stack (only REST API stages can be targets)",
                action.api
            ),
        );
    }
    match stages.iter().find(|(api, stage, _)| *api == action.api && *stage == action.stage) {
        None => context.refuse("routing-target", id, format!("{} has no stage {:?}", action.api, action.stage)),
        Some((_, _, stage)) if !rule.depends_on.contains(stage) => context.refuse(
            "routing-target",
            id,
            format!("does not DependsOn {stage}: CloudFormation may create the rule before the stage exists"),
        ),
        Some(_) => {}
    }
}

/// Where a request with `headers` to `/mcp` lands: the binary of the function, or why none.
fn landing(
    rules: &[RoutingRule],
    apis: &[Api],
    functions: &[Function],
    headers: &[(&str, &str)],
) -> Result<String, String> {
    let rule = routing::first_match(rules, headers, "/mcp").ok_or("no rule matches")?;
    let action = rule
        .actions
        .first()
        .ok_or_else(|| format!("{} has no action", rule.logical_id))?;
    let api = apis
        .iter()
        .find(|a| a.logical_id == action.api)
        .ok_or_else(|| format!("{} is not an API", action.api))?;
    let path = routing::forwarded_path(rule, action, "/mcp");
    let route = api
        .route("POST", &path)
        .ok_or_else(|| format!("{} has no route for POST {path}", api.logical_id))?;
    let function = functions
        .iter()
        .find(|f| f.logical_id == route.function)
        .ok_or_else(|| format!("{} is not a function", route.function))?;
    Ok(function.binary.clone())
}

fn methods(context: &mut Context, rules: &[RoutingRule], apis: &[Api], functions: &[Function]) {
    let Some(catch_all) = rules.iter().find(|r| r.conditions.is_empty()) else {
        return context.refuse(
            "routing-methods",
            "RoutingRules",
            "no rule without conditions: requests no rule claims would be refused",
        );
    };
    let catch_all = catch_all.logical_id.clone();
    let modern = [("MCP-Protocol-Version", "2026-07-28")];
    for method in Method::ALL {
        let headers = [modern[0], ("Mcp-Method", method.as_str())];
        match landing(rules, apis, functions, &headers) {
            Ok(binary) if binary == method.function_name() => {}
            Ok(binary) => context.refuse(
                "routing-methods",
                &catch_all,
                format!(
                    "{} reaches {binary}, not {}",
                    method.as_str(),
                    method.function_name()
                ),
            ),
            Err(why) => context.refuse(
                "routing-methods",
                &catch_all,
                format!("{}: {why}", method.as_str()),
            ),
        }
    }
    let names: BTreeSet<&str> = Method::ALL
        .iter()
        .map(|m| m.as_str())
        .chain(OTHER_METHODS)
        .collect();
    let mut older: Vec<Vec<(&str, &str)>> = vec![vec![], vec![modern[0]]];
    for version in ["2025-11-25", "2025-06-18", ""] {
        for name in &names {
            let mut headers = vec![("Mcp-Method", *name)];
            if !version.is_empty() {
                headers.push(("MCP-Protocol-Version", version));
            }
            older.push(headers);
        }
    }
    for headers in older {
        // A method that exists only from 2026-07-28 on may reach its own function whatever the
        // version says: no older client names it (skills/get's rule has no version condition).
        let own = headers
            .iter()
            .find(|(name, _)| *name == "Mcp-Method")
            .and_then(|(_, method)| Method::from_wire(method))
            .filter(|m| m.since_2026())
            .map(|m| m.function_name());
        match landing(rules, apis, functions, &headers) {
            Ok(binary) if binary == ALL_METHODS_BINARY => {}
            Ok(binary) if Some(binary.as_str()) == own => {}
            Ok(binary) => context.refuse(
                "routing-methods",
                &catch_all,
                format!(
                    "a request with {headers:?} reaches {binary}, not the all-methods function"
                ),
            ),
            Err(why) => context.refuse(
                "routing-methods",
                &catch_all,
                format!("a request with {headers:?}: {why}"),
            ),
        }
    }
}
