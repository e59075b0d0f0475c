//! The dependency graph CloudFormation builds: an edge from a resource to every resource it
//! names with `Ref`, `Fn::GetAtt`, `Fn::Sub` (`${X}`, `${X.Attr}`) or `DependsOn`.
//!
//! CloudFormation refuses a template whose graph has a cycle ("Circular dependency between
//! resources") when it creates the change set. [`cycles`] reads every branch of every `Fn::If`
//! and every resource whatever its condition: stricter than CloudFormation where a branch is never
//! taken, never more lenient.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::intrinsics::intrinsic;
use crate::stack::Resource;

/// The resources `resource` depends on (only names in `known`).
pub fn dependencies(resource: &Resource, known: &BTreeMap<String, Resource>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    collect(&resource.properties, &mut found);
    found.extend(resource.depends_on.iter().cloned());
    found.retain(|name| known.contains_key(name) && *name != resource.logical_id);
    found
}

fn collect(value: &Value, found: &mut BTreeSet<String>) {
    match intrinsic(value) {
        Some(("Ref", Value::String(target))) => {
            found.insert(target.clone());
        }
        Some(("Fn::GetAtt", Value::Array(pair))) => match pair.first() {
            Some(Value::String(target)) => {
                found.insert(target.clone());
            }
            _ => pair.iter().for_each(|v| collect(v, found)),
        },
        Some(("Fn::GetAtt", Value::String(dotted))) => {
            found.insert(dotted.split('.').next().unwrap_or_default().to_string());
        }
        Some(("Fn::Sub", argument)) => {
            let (text, variables) = match argument {
                Value::String(text) => (text.as_str(), None),
                Value::Array(pair) => (
                    pair.first().and_then(Value::as_str).unwrap_or_default(),
                    pair.get(1),
                ),
                _ => ("", None),
            };
            let local: BTreeSet<&str> = variables
                .and_then(Value::as_object)
                .map(|m| m.keys().map(String::as_str).collect())
                .unwrap_or_default();
            for name in text
                .split("${")
                .skip(1)
                .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            {
                if name.starts_with('!') || local.contains(name) {
                    continue;
                }
                found.insert(name.split('.').next().unwrap_or_default().to_string());
            }
            if let Some(variables) = variables {
                collect(variables, found);
            }
        }
        _ => match value {
            Value::Object(object) => object.values().for_each(|v| collect(v, found)),
            Value::Array(items) => items.iter().for_each(|v| collect(v, found)),
            _ => {}
        },
    }
}

/// Every cycle of the graph over `resources`: each strongly connected component with more than
/// one member, with one closed path through it (`[A, B, A]`).
pub fn cycles(resources: &BTreeMap<String, Resource>) -> Vec<(BTreeSet<String>, Vec<String>)> {
    let edges: BTreeMap<&str, BTreeSet<String>> = resources
        .iter()
        .map(|(name, resource)| (name.as_str(), dependencies(resource, resources)))
        .collect();
    let mut tarjan = Tarjan {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for name in edges.keys() {
        if !tarjan.index.contains_key(name) {
            tarjan.visit(name);
        }
    }
    tarjan
        .components
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let path = closed_path(&component, &edges);
            (component, path)
        })
        .collect()
}

/// The shortest path through `component` from its first member back to it, for the message.
fn closed_path(
    component: &BTreeSet<String>,
    edges: &BTreeMap<&str, BTreeSet<String>>,
) -> Vec<String> {
    let start = component.iter().next().cloned().unwrap_or_default();
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.clone()]);
    while let Some(current) = queue.pop_front() {
        for next in edges[current.as_str()]
            .iter()
            .filter(|n| component.contains(*n))
        {
            if *next == start {
                let mut path = vec![start.clone(), current.clone()];
                let mut at = current.clone();
                while let Some(previous) = came_from.get(&at) {
                    path.push(previous.clone());
                    at = previous.clone();
                }
                path.reverse();
                return path;
            }
            if next != &start && !came_from.contains_key(next) {
                came_from.insert(next.clone(), current.clone());
                queue.push_back(next.clone());
            }
        }
    }
    vec![start]
}

struct Tarjan<'a> {
    edges: &'a BTreeMap<&'a str, BTreeSet<String>>,
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    next: usize,
    components: Vec<BTreeSet<String>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, node: &'a str) {
        self.index.insert(node, self.next);
        self.low.insert(node, self.next);
        self.next += 1;
        self.stack.push(node);
        let edges = self.edges;
        for target in &edges[node] {
            let Some((target, _)) = edges.get_key_value(target.as_str()) else {
                continue;
            };
            if !self.index.contains_key(target) {
                self.visit(target);
                let low = self.low[node].min(self.low[target]);
                self.low.insert(node, low);
            } else if self.stack.contains(target) {
                let low = self.low[node].min(self.index[target]);
                self.low.insert(node, low);
            }
        }
        if self.low[node] == self.index[node] {
            let mut component = BTreeSet::new();
            while let Some(member) = self.stack.pop() {
                component.insert(member.to_string());
                if member == node {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// `resources` ordered so that each comes after everything it depends on (the order
/// CloudFormation creates them in); `None` when there is a cycle.
pub fn creation_order(resources: &BTreeMap<String, Resource>) -> Option<Vec<String>> {
    let mut remaining: BTreeMap<&str, BTreeSet<String>> = resources
        .iter()
        .map(|(name, resource)| (name.as_str(), dependencies(resource, resources)))
        .collect();
    let mut order = Vec::with_capacity(remaining.len());
    while !remaining.is_empty() {
        let ready: Vec<&str> = remaining
            .iter()
            .filter(|(_, deps)| deps.is_empty())
            .map(|(name, _)| *name)
            .collect();
        if ready.is_empty() {
            return None;
        }
        for name in ready {
            remaining.remove(name);
            for deps in remaining.values_mut() {
                deps.remove(name);
            }
            order.push(name.to_string());
        }
    }
    Some(order)
}
