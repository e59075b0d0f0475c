//! The functions' own metrics (EMF lines, `relevo_state::emf`) and what reads them: an alarm or a
//! dashboard on a namespace no function publishes to, or on a metric the code never writes,
//! deploys fine and never fires — CloudWatch accepts alarms on metrics that do not exist. So
//! every function must publish (`RELEVO_METRICS=emf`), every custom-namespace alarm and dashboard
//! metric must name a published namespace and a metric in [`relevo_state::emf::PUBLISHED`], and
//! a dashboard body must be the JSON object with `widgets` that PutDashboard accepts.

use std::collections::BTreeSet;

use relevo_state::emf::{DEFAULT_NAMESPACE, PUBLISHED};
use serde_json::Value;

use super::Context;
use crate::physical::text;

pub(super) fn run(context: &mut Context) {
    let namespaces = published(context);
    alarms(context, &namespaces);
    dashboards(context, &namespaces);
}

/// The namespaces the functions publish to; refuses a function that publishes nothing.
fn published(context: &mut Context) -> BTreeSet<String> {
    let mut namespaces = BTreeSet::new();
    let Ok(functions) = context.stack.functions(context.ids) else {
        return namespaces;
    };
    for function in functions {
        if function
            .environment
            .get("RELEVO_METRICS")
            .map(String::as_str)
            != Some("emf")
        {
            context.refuse(
                "metrics",
                &function.logical_id,
                "no RELEVO_METRICS=emf: its requests reach no metric or alarm",
            );
            continue;
        }
        let namespace = function
            .environment
            .get("RELEVO_METRICS_NAMESPACE")
            .cloned();
        namespaces.insert(namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_string()));
    }
    namespaces
}

/// A custom (non-`AWS/`) namespace and metric read somewhere: refused unless published.
fn check_read(
    context: &mut Context,
    resource: &str,
    namespace: &str,
    metric: &str,
    namespaces: &BTreeSet<String>,
) {
    if namespace.starts_with("AWS/") {
        return;
    }
    if !namespaces.contains(namespace) {
        context.refuse(
            "metrics",
            resource,
            format!("namespace {namespace:?} is not one the functions publish to ({namespaces:?})"),
        );
    } else if !metric.is_empty() && !PUBLISHED.contains(&metric) {
        context.refuse(
            "metrics",
            resource,
            format!("metric {metric:?} is not one the functions write"),
        );
    }
}

fn alarms(context: &mut Context, namespaces: &BTreeSet<String>) {
    for alarm in context
        .stack
        .of_type("AWS::CloudWatch::Alarm")
        .map(|a| a.logical_id.clone())
        .collect::<Vec<_>>()
    {
        let Ok(properties) = context.stack.properties(context.ids, &alarm) else {
            continue;
        };
        let mut read: Vec<(String, String)> = Vec::new();
        if let (Some(namespace), Some(metric)) = (
            text(&properties["Namespace"]),
            text(&properties["MetricName"]),
        ) {
            read.push((namespace, metric));
        }
        for metric in properties["Metrics"].as_array().into_iter().flatten() {
            let stat = &metric["MetricStat"]["Metric"];
            if let (Some(namespace), Some(name)) =
                (text(&stat["Namespace"]), text(&stat["MetricName"]))
            {
                read.push((namespace, name));
            }
        }
        for (namespace, metric) in read {
            check_read(context, &alarm, &namespace, &metric, namespaces);
        }
    }
}

fn dashboards(context: &mut Context, namespaces: &BTreeSet<String>) {
    for dashboard in context
        .stack
        .of_type("AWS::CloudWatch::Dashboard")
        .map(|d| d.logical_id.clone())
        .collect::<Vec<_>>()
    {
        let Ok(properties) = context.stack.properties(context.ids, &dashboard) else {
            continue;
        };
        let body = text(&properties["DashboardBody"]).unwrap_or_default();
        let widgets = match serde_json::from_str::<Value>(&body) {
            Ok(Value::Object(body)) => match body.get("widgets") {
                Some(Value::Array(widgets)) => widgets.clone(),
                _ => {
                    context.refuse(
                        "metrics",
                        &dashboard,
                        "DashboardBody has no \"widgets\" array",
                    );
                    continue;
                }
            },
            Ok(_) => {
                context.refuse("metrics", &dashboard, "DashboardBody is not a JSON object");
                continue;
            }
            Err(error) => {
                context.refuse(
                    "metrics",
                    &dashboard,
                    format!("DashboardBody is not JSON: {error}"),
                );
                continue;
            }
        };
        for widget in widgets {
            let (mut namespace, mut metric) = (String::new(), String::new());
            for row in widget["properties"]["metrics"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let Some(row) = row.as_array() else { continue };
                if let Some(expression) = row.first().and_then(|r| r["expression"].as_str()) {
                    for searched in search_namespaces(expression) {
                        check_read(context, &dashboard, &searched, "", namespaces);
                    }
                    continue;
                }
                let field = |at: usize, previous: &str| match row.get(at).and_then(Value::as_str) {
                    Some(".") | None => previous.to_string(),
                    Some(value) => value.to_string(),
                };
                (namespace, metric) = (field(0, &namespace), field(1, &metric));
                check_read(context, &dashboard, &namespace, &metric, namespaces);
            }
        }
    }
}

/// The namespaces a `SEARCH('{Namespace,Dim,...} ...')` expression reads.
fn search_namespaces(expression: &str) -> Vec<String> {
    expression
        .split('{')
        .skip(1)
        .filter_map(|schema| schema.split_once('}').map(|(inside, _)| inside))
        .filter_map(|inside| inside.split(',').next())
        .map(|namespace| namespace.trim().trim_matches('"').to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_expression_names_its_namespaces() {
        let expression = "SEARCH('{Relevo/s,Function,Method} MetricName=\"Latency\"', 'p99', 300)";
        assert_eq!(search_namespaces(expression), ["Relevo/s"]);
        assert!(search_namespaces("METRICS()").is_empty());
    }
}
