//! Where requests land on front door A, read from the translated template: the routing rules by
//! priority with API Gateway's glob semantics, then the REST API's routes, then the function.

#![allow(clippy::unwrap_used)]

mod common;

use relevo_protocol::Method;
use relevo_template::check::front_doors;
use relevo_template::{PhysicalIds, Stack, Template, routing};

fn front_door_a() -> Stack {
    let topology = front_doors()
        .into_iter()
        .find(|t| t.name == "front-door-a")
        .unwrap();
    Template::from_value(common::translated())
        .instantiate("relevo", &topology.parameters)
        .unwrap()
}

/// The binary of the function a POST to `path` with `headers` reaches, and the rule that sent it.
fn landing(stack: &Stack, headers: &[(&str, &str)], path: &str) -> (String, String) {
    let ids = PhysicalIds::synthetic(stack);
    let rules = stack.routing_rules(&ids).unwrap();
    let apis = stack.apis(&ids).unwrap();
    let functions = stack.functions(&ids).unwrap();
    let rule = routing::first_match(&rules, headers, path).expect("a rule matches");
    let action = &rule.actions[0];
    let api = apis.iter().find(|a| a.logical_id == action.api).unwrap();
    let route = api
        .route("POST", &routing::forwarded_path(rule, action, path))
        .expect("the API has a route");
    let function = functions
        .iter()
        .find(|f| f.logical_id == route.function)
        .unwrap();
    (function.binary.clone(), rule.logical_id.clone())
}

#[test]
fn every_2026_method_reaches_its_own_function_through_the_translated_rules() {
    let stack = front_door_a();
    for method in Method::ALL {
        let headers = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method.as_str()),
        ];
        let (binary, rule) = landing(&stack, &headers, "/mcp");
        assert_eq!(
            binary,
            method.function_name(),
            "{} went through {rule}",
            method.as_str()
        );
    }
}

#[test]
fn header_names_match_in_any_case_and_values_exactly() {
    let stack = front_door_a();
    let (binary, _) = landing(
        &stack,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("MCP-METHOD", "tools/call"),
        ],
        "/mcp",
    );
    assert_eq!(binary, "tools-call");
    // Values are case-sensitive: `Tools/Call` is no method, and no per-method glob takes it.
    let (binary, rule) = landing(
        &stack,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "TOOLS/CALL"),
        ],
        "/mcp",
    );
    assert_eq!((binary.as_str(), rule.as_str()), ("mcp", "CatchAllRule"));
}

#[test]
fn older_clients_and_requests_without_the_headers_reach_the_catch_all() {
    let stack = front_door_a();
    let cases: [&[(&str, &str)]; 5] = [
        &[],
        &[("MCP-Protocol-Version", "2026-07-28")],
        &[
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Mcp-Method", "tools/call"),
        ],
        &[("Mcp-Method", "tools/list")],
        &[
            ("MCP-Protocol-Version", "2025-06-18"),
            ("Mcp-Method", "initialize"),
        ],
    ];
    for headers in cases {
        assert_eq!(landing(&stack, headers, "/mcp").0, "mcp", "{headers:?}");
    }
}

#[test]
fn the_metadata_and_approval_pages_reach_their_functions_through_the_catch_all() {
    let stack = front_door_a();
    assert_eq!(
        landing(&stack, &[], "/.well-known/oauth-protected-resource/mcp").0,
        "mcp"
    );
    assert_eq!(landing(&stack, &[], "/approvals/login").0, "pages");
    assert_eq!(landing(&stack, &[], "/approvals/op_123").0, "pages");
}

#[test]
fn a_glob_also_takes_unknown_neighbours_to_a_function_that_refuses_them() {
    // API Gateway's globs cannot say "exactly tools/list" (no `/`), so `tools*` also matches an
    // unknown `tools/foo`: it reaches tools-list, whose ladder answers 404 -32601 exactly as the
    // catch-all would (tests/tests/ladder.rs: a function refuses every method but its own).
    let stack = front_door_a();
    let (binary, rule) = landing(
        &stack,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/foo"),
        ],
        "/mcp",
    );
    assert_eq!(
        (binary.as_str(), rule.as_str()),
        ("tools-list", "ToolsListRule")
    );
}

#[test]
fn the_function_list_of_the_scripts_is_the_templates() {
    let output = std::process::Command::new(common::root().join("infra/scripts/functions.sh"))
        .output()
        .unwrap();
    let listed: std::collections::BTreeSet<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let mut deployed = std::collections::BTreeSet::new();
    for topology in front_doors() {
        let stack = Template::from_value(common::translated())
            .instantiate("relevo", &topology.parameters)
            .unwrap();
        deployed.extend(
            stack
                .functions(&PhysicalIds::synthetic(&stack))
                .unwrap()
                .into_iter()
                .map(|f| f.binary),
        );
    }
    assert_eq!(listed, deployed);
    let mains: std::collections::BTreeSet<String> =
        std::fs::read_dir(common::root().join("functions/src/bin"))
            .unwrap()
            .map(|entry| {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                name.strip_suffix(".rs").unwrap().to_string()
            })
            .collect();
    assert_eq!(
        mains, deployed,
        "every function main is deployed, and every deployed binary has a main"
    );
    let manifest = std::fs::read_to_string(common::root().join("functions/Cargo.toml")).unwrap();
    for binary in &deployed {
        assert!(
            manifest.contains(&format!(
                "[[bin]]\nname = \"{binary}\"\npath = \"src/bin/{binary}.rs\"\n"
            )),
            "functions/Cargo.toml has no [[bin]] {binary}"
        );
    }
    assert_eq!(
        manifest.matches("\n[[bin]]\n").count(),
        deployed.len(),
        "{manifest}"
    );
}

/// The server card and its catalogs reach a function that serves them: on front door A the
/// catch-all (the all-methods function answers them as `well-known` does), on front door B the
/// HTTP API's own routes to `well-known`.
#[test]
fn the_server_card_and_the_catalogs_reach_the_function_that_serves_them_on_both_front_doors() {
    const PATHS: [&str; 3] = [
        "/mcp/server-card",
        "/.well-known/ai-catalog.json",
        "/.well-known/mcp/catalog.json",
    ];
    let door_a = front_door_a();
    for path in PATHS {
        assert_eq!(landing(&door_a, &[], path).0, "mcp", "{path}");
    }
    let topology = front_doors()
        .into_iter()
        .find(|t| t.name == "front-door-b")
        .unwrap();
    let door_b = Template::from_value(common::translated())
        .instantiate("relevo", &topology.parameters)
        .unwrap();
    let ids = PhysicalIds::synthetic(&door_b);
    let apis = door_b.apis(&ids).unwrap();
    let functions = door_b.functions(&ids).unwrap();
    for path in PATHS {
        let route = apis
            .iter()
            .find_map(|api| api.route("GET", path))
            .unwrap_or_else(|| panic!("no route for {path}"));
        let function = functions
            .iter()
            .find(|f| f.logical_id == route.function)
            .unwrap();
        assert_eq!(function.binary, "well-known", "{path}");
    }
}
